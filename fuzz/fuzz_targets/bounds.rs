//! The report's bounds on arbitrary measurements: `LowerBound::from_times` (the paper's
//! T_LB), `HardwareBound::one_gpu` and `HardwareBound::multi_gpu` must give a number for
//! any times, sizes, counts and rates (no overflow panic, no NaN cast).
//!
//! T_LB is checked against the paper's formula taken exactly (in u128 here): each of T1
//! and T2 is its exact value, or `u64::MAX` where that is larger, and T_LB is the smaller
//! of the two. The hardware bounds are at least one of their own candidates, computed
//! here as they are (the kernels' sum for `one_gpu`, the longest task for `multi_gpu`),
//! so a bound whose candidate passes `u64::MAX` ns is `u64::MAX`.

#![no_main]

use arbitrary::Arbitrary;
use chariot::report::{HardwareBound, LinkRates, LowerBound, TaskWork};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    times: Vec<(u64, u64, u64, u64)>,
    gpus: usize,
    buses: usize,
    work: Vec<(u64, u64, u64)>,
    rates: (f64, f64, f64),
    host: (f64, f64, f64),
}

/// T1 and T2 of Appendix C, exactly: (Σd + Σr)/B and the ⌈D/B⌉ smallest downloads + Σk/D
/// + the smallest task's readback, tasks in ascending order, D and B at least 1.
fn exact(times: &[(u64, u64, u64, u64)], gpus: usize, buses: usize) -> (u128, u128) {
    let mut t = times.to_vec();
    t.sort_unstable();
    let (d, b) = (gpus.max(1) as u128, buses.max(1) as u128);
    let transfers: u128 = t.iter().map(|x| x.1 as u128 + x.3 as u128).sum();
    let head_n = d.div_ceil(b);
    let head: u128 = t.iter().take(usize::try_from(head_n).unwrap_or(usize::MAX)).map(|x| x.1 as u128).sum();
    let body = t.iter().map(|x| x.2 as u128).sum::<u128>() / d;
    (transfers / b, head + body + t[0].3 as u128)
}

fn saturated(ns: u128) -> u64 {
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// What `x.ceil() as u64` gives: `as` saturates, NaN is 0.
fn ns(x: f64) -> u64 {
    x.ceil() as u64
}

fuzz_target!(|input: Input| {
    let b = LowerBound::from_times(&input.times, input.gpus, input.buses);
    assert_eq!(b.t_lb_ns, b.t1_ns.min(b.t2_ns), "{b:?}");
    if input.times.is_empty() {
        assert_eq!(b, LowerBound::default());
    } else {
        let (t1, t2) = exact(&input.times, input.gpus, input.buses);
        assert_eq!((b.t1_ns, b.t2_ns), (saturated(t1), saturated(t2)), "exact T1 = {t1}, T2 = {t2}");
    }

    let work: Vec<TaskWork> = input
        .work
        .iter()
        .map(|&(up_bytes, kernel_ns, down_bytes)| TaskWork { up_bytes, kernel_ns, down_bytes })
        .collect();
    let rates = |(up, down, both): (f64, f64, f64)| LinkRates { up, down, both };
    let positive = |r: &LinkRates| r.up > 0.0 && r.down > 0.0 && r.both > 0.0;
    let (link, host) = (rates(input.rates), rates(input.host));

    let h = HardwareBound::one_gpu(&work, link);
    if work.is_empty() || !positive(&link) {
        assert_eq!(h, HardwareBound::default());
    } else {
        // The compute engine's candidate, d_min + Σk + r_min, is at least Σk.
        let kernels: f64 = work.iter().map(|w| w.kernel_ns as f64).sum();
        assert!(h.t_ns >= ns(kernels), "{h:?} below Σk = {kernels}");
    }

    let m = HardwareBound::multi_gpu(&work, input.gpus, link, host);
    if work.is_empty() || !positive(&link) || !positive(&host) {
        assert_eq!(m, HardwareBound::default());
    } else {
        // The `task` candidate: the longest chain d_i + k_i + r_i.
        let chain = work
            .iter()
            .map(|w| w.up_bytes as f64 / link.up + w.kernel_ns as f64 + w.down_bytes as f64 / link.down)
            .fold(0.0, f64::max);
        assert!(m.t_ns >= ns(chain), "{m:?} below the longest task, {chain}");
    }
});
