//! Bounds: no work, and work whose times overflow.

use super::*;

#[test]
fn bounds_of_no_work_are_zero() {
    assert_eq!(LowerBound::from_times(&[], 0, 0), LowerBound::default());
    // Zero GPUs or buses count as one.
    assert_eq!(LowerBound::from_times(&[(1, 10, 30, 10)], 0, 0), LowerBound::from_times(&[(1, 10, 30, 10)], 1, 1));
    let work = [TaskWork { up_bytes: 100, kernel_ns: 100, down_bytes: 100 }];
    for rates in [(0.0, 1.0, 1.0), (1.0, f64::NAN, 1.0), (1.0, 1.0, -2.0)] {
        let b = HardwareBound::one_gpu(&work, LinkRates { up: rates.0, down: rates.1, both: rates.2 });
        assert_eq!(b, HardwareBound::default(), "{rates:?}");
    }
    let link = LinkRates { up: 1.0, down: 1.0, both: 2.0 };
    assert_eq!(HardwareBound::one_gpu(&[], link), HardwareBound::default());
    assert_eq!(HardwareBound::multi_gpu(&[], 2, link, link), HardwareBound::default());
    let dead = LinkRates { up: 0.0, ..link };
    assert_eq!(HardwareBound::multi_gpu(&work, 0, link, dead), HardwareBound::default());
    // Zero GPUs count as one.
    assert_eq!(HardwareBound::multi_gpu(&work, 0, link, link), HardwareBound::multi_gpu(&work, 1, link, link));
}

#[test]
fn bounds_saturate_instead_of_overflowing() {
    let b = LowerBound::from_times(&[(1, u64::MAX, 1, 1), (2, 1, u64::MAX, 1)], 1, 1);
    assert_eq!((b.t1_ns, b.t2_ns, b.t_lb_ns), (u64::MAX, u64::MAX, u64::MAX));
    let huge = TaskWork { up_bytes: u64::MAX, kernel_ns: 1, down_bytes: u64::MAX };
    let link = LinkRates { up: 1.0, down: 1.0, both: 2.0 };
    assert!(HardwareBound::one_gpu(&[huge, huge], link).t_ns > 0);
    assert!(HardwareBound::multi_gpu(&[huge, huge, huge], 2, link, link.times(2.0)).t_ns > 0);
}
