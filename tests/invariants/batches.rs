//! 2-D copies, batches, device memory.

use super::*;

/// 2-D copies of interleaved column blocks (see `two_d_scenario`).
#[test]
fn two_d_column_blocks() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(2)).gpus(2).streams(3).build().unwrap();
        two_d_scenario(&sched, Clocks::SIM);
    });
}

/// Two batches on one scheduler: each report covers its own batch only, and ids may be
/// reused once their tasks have ended.
#[test]
fn batches_are_reported_separately_and_ids_are_reusable() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(2)).gpus(2).streams(2).build().unwrap();
        for batch in 0..3u64 {
            let w = Workload::new(&sched, plan(50 + batch, 1, 20, 1500, SIM_RECIPES)).unwrap();
            w.submit_all(&sched).unwrap();
            let report = sched.synchronize().unwrap();
            check(&report, &w.specs(), &Limits::of(&sched), Clocks::SIM);
            w.verify(&report);
        }
        // Nothing submitted: an empty report.
        let empty = sched.synchronize().unwrap();
        assert_eq!((empty.tasks, empty.records.len()), (0, 0));
    });
}

/// Device memory: D·S physical copies per buffer, kept while a submitted task names the
/// buffer (even after the user dropped it), returned at the next synchronize. A buffer
/// dropped while no task is in flight returns its memory at once; one dropped while a
/// task runs (one that does not name it) at the next synchronize.
#[test]
fn device_memory_returns_after_synchronize() {
    with_timeout(DEADLINE_S, || {
        let (d, s, n) = (2usize, 3usize, 1000usize);
        let sched = Scheduler::builder().backend(instant(2)).gpus(d).streams(s).build().unwrap();
        let used = |sched: &Scheduler| (0..d).map(|g| sched.device_memory_in_use(g).unwrap()).collect::<Vec<_>>();
        assert_eq!(used(&sched), vec![0; d]);
        assert_eq!(sched.device_memory_in_use(d), None, "no GPU {d}");
        let mut host = sched.alloc_host::<u32>(n).unwrap();
        host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
        let dev = sched.alloc::<u32>(n).unwrap();
        let other = sched.alloc::<u64>(10).unwrap();
        let per_gpu = (s * (n * 4 + 10 * 8)) as u64;
        assert_eq!(used(&sched), vec![per_gpu; d]);
        other.free();
        assert_eq!(used(&sched), vec![(s * n * 4) as u64; d], "nothing in flight: returned at once");
        sched.synchronize().unwrap();
        assert_eq!(used(&sched), vec![(s * n * 4) as u64; d]);

        // A task that names `dev` is held at a gate; the user drops `dev` meanwhile.
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        sched
            .task(1, n as u64)
            .callback(Resource::Cpu, move |_| {
                gate_rx.recv()?;
                Ok(())
            })
            .download(&dev, 0, &host, ..)
            .readback(&host, .., &dev, 0)
            .submit()
            .unwrap();
        let unnamed = sched.alloc::<u64>(10).unwrap();
        drop(dev);
        unnamed.free();
        assert_eq!(
            used(&sched),
            vec![(s * (n * 4 + 10 * 8)) as u64; d],
            "the task still holds the buffer, and the one no task names waits for the synchronize"
        );
        gate_tx.send(()).unwrap();
        sched.synchronize().unwrap();
        assert_eq!(used(&sched), vec![0; d]);
        assert!(host.read().iter().enumerate().all(|(i, &x)| x == i as u32));
    });
}
