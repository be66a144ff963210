//! Guards, and waiting in a callback.

use super::*;

#[test]
fn guard_ranges_outside_their_buffer_are_invalid_length() {
    let s = sched(1, 1);
    let mut host = s.alloc_host::<u32>(10).unwrap();
    let e = host.write_range(5..11).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 10, elem_size: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("5..11"), "{e}");
    let e = host.read_range(5..11).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 10, elem_size: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("5..11"), "{e}");
    let e = host.read_range(..=usize::MAX).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
    #[allow(clippy::reversed_empty_ranges)]
    let e = host.write_range(7..3).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { .. }), "{e:?}");
    // An empty range inside the buffer is a valid, empty guard.
    assert!(host.read_range(4..4).unwrap().is_empty());
}

/// `HostBuffer::read` must wait while an in-flight task will still write the range: a
/// task holds its readback region from submit until it ends. Task 1 is held at a gate
/// (its first command), then fills the device buffer with 7s and reads them back. The
/// reader thread, started after the submit, must see the 7s and the gate opened.
#[test]
fn host_read_waits_for_an_in_flight_readback() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let mut host = s.alloc_host::<u32>(1024).unwrap();
        host.write().fill(1);
        let d = s.alloc::<u32>(512).unwrap();
        let (started_tx, started_rx) = mpsc::channel();
        let (open, wait) = gate();
        let d2 = d.clone();
        s.task(1, 512)
            .callback(Resource::Cpu, move |info| {
                started_tx.send(()).map_err(|e| e.to_string())?;
                wait(info)
            })
            .gpu_callback(move |call| gpu_fill(call, &d2, 512, 7))
            .readback(&host, 0..512, &d, 0)
            .submit()
            .unwrap();
        started_rx.recv_timeout(Duration::from_secs(20)).expect("task 1 started");
        let opened = AtomicBool::new(false);
        std::thread::scope(|sc| {
            let reader = sc.spawn(|| {
                let g = host.read();
                let was_open = opened.load(Ordering::SeqCst);
                (was_open, g[..512].iter().all(|&x| x == 7), g[512..].iter().all(|&x| x == 1))
            });
            // The untouched half can be read while the task is in flight (it would
            // hang here, and hit the deadline, if guards waited for unrelated regions).
            assert!(host.read_range(512..).unwrap().iter().all(|&x| x == 1));
            // Give the reader time to reach `read` (no timing is asserted: if `read`
            // did not wait, the reader would finish before `opened` is set).
            std::thread::sleep(Duration::from_millis(100));
            assert!(!reader.is_finished(), "HostBuffer::read returned while a task was to write the range");
            opened.store(true, Ordering::SeqCst);
            open.send(()).unwrap();
            let (was_open, sevens, ones) = reader.join().unwrap();
            assert!(was_open, "HostBuffer::read returned before the writing task ended");
            assert!(sevens, "the reader saw the range before the readback wrote it");
            assert!(ones);
        });
        s.synchronize().unwrap();
    });
}

/// `HostBuffer::write` waits for an in-flight task that reads the range (a download).
#[test]
fn host_write_waits_for_an_in_flight_download() {
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let mut host = s.alloc_host::<u32>(256).unwrap();
        let mut out = s.alloc_host::<u32>(256).unwrap();
        host.write().fill(3);
        out.write().fill(0);
        let d = s.alloc::<u32>(256).unwrap();
        let (started_tx, started_rx) = mpsc::channel();
        let (open, wait) = gate();
        s.task(1, 256)
            .callback(Resource::Cpu, move |info| {
                started_tx.send(()).map_err(|e| e.to_string())?;
                wait(info)
            })
            .download(&d, 0, &host, ..)
            .readback(&out, .., &d, 0)
            .submit()
            .unwrap();
        started_rx.recv_timeout(Duration::from_secs(20)).expect("task 1 started");
        let opened = AtomicBool::new(false);
        std::thread::scope(|sc| {
            let writer = sc.spawn(|| {
                let mut g = host.write();
                let was_open = opened.load(Ordering::SeqCst);
                g.fill(9);
                was_open
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(!writer.is_finished(), "HostBuffer::write returned while a task was to read the range");
            opened.store(true, Ordering::SeqCst);
            open.send(()).unwrap();
            assert!(writer.join().unwrap(), "HostBuffer::write returned before the reading task ended");
        });
        s.synchronize().unwrap();
        assert!(out.read().iter().all(|&x| x == 3), "the download saw the write made after it");
        assert!(host.read().iter().all(|&x| x == 9));
    });
}

/// A CPU callback that reads, through a guard, a range its own task writes waits for
/// its own task to end: the guard should refuse (the callback then fails its task with
/// a message naming the guard) instead of waiting forever.
#[test]
fn a_guard_in_a_callback_of_its_own_writing_task_fails_the_task() {
    with_timeout(HANG_S, || {
        let s = sched(1, 1);
        let host = s.alloc_host::<u32>(64).unwrap();
        let dev = s.alloc::<u32>(64).unwrap();
        s.task(1, 1)
            .readback(&host, .., &dev, 0)
            .callback(Resource::Cpu, move |_| {
                let sum: u32 = host.read().iter().sum();
                Err(format!("the guard was granted (sum {sum})").into())
            })
            .submit()
            .unwrap();
        let Err(Error::TasksFailed { failures, .. }) = s.synchronize() else { panic!("expected TasksFailed") };
        assert_eq!((failures[0].task, failures[0].command, failures[0].stage), (TaskId(1), 1, Stage::Cpu));
        assert!(failures[0].message.contains("guard"), "{}", failures[0].message);
    });
}

/// `synchronize` from a callback waits for the callback's own task: it should return an
/// error at once.
#[test]
fn synchronize_in_a_callback_is_an_error() {
    with_timeout(HANG_S, || {
        let s = Arc::new(sched(1, 1));
        let inner = s.clone();
        let (tx, rx) = mpsc::channel();
        s.task(1, 1)
            .callback(Resource::Cpu, move |_| {
                tx.send(inner.synchronize().map(|r| r.tasks).map_err(|e| e.to_string())).map_err(|e| e.to_string())?;
                Ok(())
            })
            .submit()
            .unwrap();
        assert_eq!(s.synchronize().unwrap().tasks, 1);
        let inner = rx.recv().unwrap();
        assert!(inner.as_ref().is_err_and(|m| m.contains("callback")), "{inner:?}");
    });
}
