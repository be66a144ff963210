//! The report's bounds on arbitrary measurements: `LowerBound::from_times` (the paper's
//! T_LB) and `HardwareBound::one_gpu` must give a number for any times, sizes and rates
//! (no overflow panic, no NaN cast), and T_LB is the smaller of T1 and T2.
//!
//! `known_bug` skips inputs that reach a bug already reported (an ignored test in
//! tests/bad_input.rs); remove it once the bug is fixed.

#![no_main]

use arbitrary::Arbitrary;
use chariot::{HardwareBound, LinkRates, LowerBound, TaskWork};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    times: Vec<(u64, u64, u64, u64)>,
    gpus: usize,
    buses: usize,
    work: Vec<(u64, u64, u64)>,
    rates: (f64, f64, f64),
}

/// `bounds_saturate_instead_of_overflowing`: sums of times, or a task's bytes, past u64
/// panic in debug builds.
fn known_bug(input: &Input) -> bool {
    let total: u128 = input.times.iter().map(|t| t.1 as u128 + t.2 as u128 + t.3 as u128).sum();
    total > u64::MAX as u128 || input.work.iter().any(|w| w.0.checked_add(w.2).is_none())
}

fuzz_target!(|input: Input| {
    if known_bug(&input) {
        return;
    }
    let b = LowerBound::from_times(&input.times, input.gpus, input.buses);
    assert_eq!(b.t_lb_ns, b.t1_ns.min(b.t2_ns), "{b:?}");
    if input.times.is_empty() {
        assert_eq!(b, LowerBound::default());
    }
    let work: Vec<TaskWork> = input
        .work
        .iter()
        .map(|&(up_bytes, kernel_ns, down_bytes)| TaskWork { up_bytes, kernel_ns, down_bytes })
        .collect();
    let (up, down, both) = input.rates;
    let h = HardwareBound::one_gpu(&work, LinkRates { up, down, both });
    if work.is_empty() || !(up > 0.0 && down > 0.0 && both > 0.0) {
        assert_eq!(h, HardwareBound::default());
    }
});
