//! The scheduler's own protocol: task ids per batch, waiting in a callback, the last
//! handle dropped in a callback; a kernel's waves per launch shape.

use super::*;
use crate::backend::SimProfile;
use crate::callback::Resource;
use crate::Backend;
use std::sync::mpsc;
use std::time::Duration;

fn sim(streams: usize) -> Scheduler {
    Scheduler::builder().backend(Backend::SimWith(SimProfile::instant())).streams(streams).build().unwrap()
}

/// Runs `body` on its own thread; a body still running after 30 s has hung.
fn within_30s(body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        body();
        // The receiver is gone only after a timeout, which has failed the test.
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung"),
        _ => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p)
            }
        }
    }
}

#[test]
fn an_id_is_taken_until_synchronize() {
    within_30s(|| {
        let s = sim(1);
        s.task(1, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
        while s.shared.batch.lock().outstanding > 0 {
            std::thread::yield_now();
        }
        let e = s.task(1, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap_err();
        assert!(matches!(e, Error::DuplicateTask { task: TaskId(1) }), "{e:?}");
        assert!(e.to_string().contains("already submitted in this batch"), "{e}");
        assert_eq!(s.synchronize().unwrap().tasks, 1);
        s.task(1, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
        assert_eq!(s.synchronize().unwrap().tasks, 1);
    });
}

#[test]
fn wake_for_batch_wakes_once_a_batch() {
    within_30s(|| {
        let s = sim(1);
        let epoch = || s.shared.signals[0].epoch();
        let e0 = epoch();
        s.wake_for_batch();
        assert_eq!(epoch(), e0 + 1, "the first call of a batch rings the dispatcher");
        s.wake_for_batch();
        assert_eq!(epoch(), e0 + 1, "later calls in the batch do not");
        s.task(1, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
        s.synchronize().unwrap();
        // The batch's own notifications may still land after it closed: the flag says
        // whether the next call rings.
        assert!(!s.shared.woken_for_batch.load(Ordering::SeqCst), "synchronize opens the next batch");
        let e1 = epoch();
        s.wake_for_batch();
        assert!(epoch() > e1, "the next batch's first call rings again");
        assert!(s.shared.woken_for_batch.load(Ordering::SeqCst));
    });
}

#[test]
fn waiting_for_the_batch_in_its_own_callback_is_refused() {
    within_30s(|| {
        let s = Arc::new(sim(2));
        let other = Arc::new(sim(1));
        let (tx, rx) = mpsc::channel();
        let (a, b, o, tx2) = (s.clone(), s.clone(), other.clone(), tx.clone());
        s.task(1, 1)
            .callback(Resource::Cpu, move |_| {
                // Test channels: the receiver outlives the tasks; the count is checked.
                let _ = tx.send(("cpu synchronize", a.synchronize().map(|_| ()).map_err(|e| e.to_string())));
                let _ = tx.send(("cpu shutdown", a.shutdown().map(|_| ()).map_err(|e| e.to_string())));
                // Another scheduler's batch is not this task's: that wait is fine.
                let _ = tx.send(("other", o.synchronize().map(|_| ()).map_err(|e| e.to_string())));
                Ok(())
            })
            .submit()
            .unwrap();
        s.task(2, 1)
            .gpu_callback(move |_| {
                // As above.
                let _ = tx2.send(("gpu synchronize", b.synchronize().map(|_| ()).map_err(|e| e.to_string())));
                Ok(())
            })
            .submit()
            .unwrap();
        assert_eq!(s.synchronize().unwrap().tasks, 2);
        let got: Vec<_> = rx.try_iter().collect();
        assert_eq!(got.len(), 4, "{got:?}");
        for (what, r) in got {
            if what == "other" {
                assert_eq!(r, Ok(()));
                continue;
            }
            let m = r.unwrap_err();
            assert!(m.contains("callback") && m.contains("Scheduler::"), "{what}: {m}");
        }
        // The refused shutdown changed nothing.
        s.task(3, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
        assert_eq!(s.synchronize().unwrap().tasks, 1);
    });
}

#[test]
fn the_last_handle_dropped_in_a_callback_shuts_down_behind_it() {
    within_30s(|| {
        let s = Arc::new(sim(1));
        let (open, wait) = mpsc::channel::<()>();
        let (done, finished) = mpsc::channel();
        let inner = s.clone();
        s.task(1, 1)
            .callback(Resource::Cpu, move |_| {
                // Test channels: a gone peer means the test has failed already.
                let _ = wait.recv();
                drop(inner);
                let _ = done.send(());
                Ok(())
            })
            .submit()
            .unwrap();
        drop(s);
        open.send(()).unwrap();
        finished.recv_timeout(Duration::from_secs(10)).expect("the drop returned");
    });
}

/// A 2-D copy into a resident buffer with gaps between its rows writes a piece that lies
/// in a gap not at all: every piece its span touches counts as written in part, so it is
/// fetched first and keeps the bytes the copy leaves.
#[test]
#[cfg(feature = "resident")]
fn a_2d_write_with_gaps_reads_the_pieces_of_its_span() {
    use crate::ext::resident::admit::{resident_uses, ResidentRange};
    let s = Scheduler::builder().backend(crate::Backend::Sim).build().unwrap();
    let r = s.alloc_resident_pieces::<u32>(16, 4).unwrap();
    let buf = r.inner().clone();
    // Rows of 4 elements 8 apart: elements 0..4 and 8..12; piece 1 (4..8) is a gap.
    let gaps = ResidentRange { buf: buf.clone(), bytes: 0..48, read: false, write: true, dense: false };
    let mut preds = crate::ids::Preds::new();
    let uses = resident_uses(&s.shared, TaskId(1), vec![gaps], &mut preds);
    assert_eq!((uses[0].read.clone(), uses[0].write.clone()), (vec![0, 1, 2], vec![0, 1, 2]));
    // A dense write of whole pieces reads none of them.
    let dense = ResidentRange { buf, bytes: 0..32, read: false, write: true, dense: true };
    let uses = resident_uses(&s.shared, TaskId(2), vec![dense], &mut preds);
    assert_eq!((uses[0].read.clone(), uses[0].write.clone()), (vec![], vec![0, 1]));
}

/// `device_timing(true)` is refused, by name, where the driver cannot time a pair of
/// events (no driver here lacks the function, so the scheduler's build cannot be shown
/// refusing it); asked for nowhere else, or not asked for, it passes.
#[test]
fn device_timing_is_refused_where_events_cannot_be_timed() {
    let Err(Error::InvalidConfig { name, value, allowed }) = device_timing_here(true, true) else {
        panic!("refused where events cannot be timed")
    };
    assert_eq!((name, value.as_str()), ("device_timing", "true"));
    assert!(allowed.contains("cuEventElapsedTime_v2"), "{allowed}");
    assert!(device_timing_here(true, false).is_ok());
    assert!(device_timing_here(false, true).is_ok());
    // The sim times every window, so it never refuses.
    let timed = Scheduler::builder().backend(Backend::SimWith(SimProfile::instant())).device_timing(true).build();
    assert!(timed.is_ok(), "{:?}", timed.err());
}

#[test]
fn a_kernels_waves_are_those_of_the_shape_asked_whichever_was_asked_first() {
    // The first shape asked is read without a lock; every other from the list.
    let s = sim(1);
    let k = s.register_kernel(crate::Kernel::new("k", "").cpu_twin(|_| Ok(()))).unwrap();
    let fresh = |threads: u32, shared: u32| s.machine().waves(&k.inner.functions, threads, shared);
    let shapes = [(256, 0), (1024, 0), (256, 0), (128, 48 * 1024), (1024, 0), (256, 0)];
    assert_ne!(fresh(256, 0), fresh(1024, 0), "the shapes must differ for this to test anything");
    for (threads, shared) in shapes {
        let kept = k.inner.waves(s.machine(), threads, shared);
        assert_eq!(kept.0, fresh(threads, shared), "waves of {threads} threads, {shared} bytes");
    }
}
