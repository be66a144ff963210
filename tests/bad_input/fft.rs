//! FFT: shape mistakes fail the task.

use super::*;

#[test]
fn fft_shape_mistakes_fail_the_task() {
    use chariot::fft::{FftPlans, FftShape};
    use num_complex::Complex32;
    with_timeout(DEADLINE_S, || {
        let s = sched(1, 1);
        let plans = FftPlans::new(&s).unwrap();
        let info = chariot::callback::CallInfo { task: TaskId(0), gpu: 0, stream: 0 };
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
