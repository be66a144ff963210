//! Bad input to the FFT plans on the sim backend: shape mistakes are refused where they
//! are given (`prepare`) or fail their task alone (`forward`), naming the value. The
//! row of docs/bad-input.md's table for `FftPlans` points here.

use chariot::callback::CallInfo;
use chariot::sim::SimProfile;
use chariot::{Backend, Error, Scheduler, TaskId};
use chariot_fft::{FftPlans, FftShape};
use num_complex::Complex32;
use std::sync::mpsc;
use std::time::Duration;

/// Runs `body` on its own thread and fails if it takes longer than a minute, so that a
/// hang is a failure rather than a stuck run.
fn with_timeout(body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let child = std::thread::spawn(move || {
        body();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => child.join().unwrap(),
        // The body panicked: join to pass its panic on.
        Err(mpsc::RecvTimeoutError::Disconnected) => std::panic::resume_unwind(child.join().unwrap_err()),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("timed out after 60 s"),
    }
}

#[test]
fn fft_shape_mistakes_fail_the_task() {
    with_timeout(|| {
        let s = Scheduler::builder().backend(Backend::SimWith(SimProfile::instant())).streams(1).build().unwrap();
        let plans = FftPlans::new(&s).unwrap();
        let info = CallInfo { task: TaskId(0), gpu: 0, stream: 0 };
        for empty in [FftShape::Rows { len: 0, batch: 4 }, FftShape::TwoD { rows: 4, cols: 0 }] {
            let e = plans.prepare(&info, empty).unwrap_err();
            assert!(e.to_string().contains("empty FFT shape"), "{e}");
        }
        let d = s.alloc::<Complex32>(32).unwrap();
        for (id, shape) in
            [(1, FftShape::Rows { len: 16, batch: 4 }), (2, FftShape::Rows { len: usize::MAX, batch: 2 })]
        {
            let (p, d2) = (plans.clone(), d.clone());
            s.task(id, 1).gpu_callback(move |call| p.forward(call, &d2, shape)).submit().unwrap();
        }
        let Err(Error::TasksFailed { mut failures, .. }) = s.synchronize() else { panic!("expected TasksFailed") };
        failures.sort_by_key(|f| f.task);
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].message.contains("FFT of 64 elements on a buffer of 32"), "{}", failures[0].message);
        assert!(failures[1].message.contains("on a buffer of 32"), "{}", failures[1].message);
    });
}
