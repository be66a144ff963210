//! Tests of the bounds: [`HardwareBound`] against itself (one GPU as D = 1, more GPUs,
//! shared buses, sums past u64), and against makespans the sim backend measures.

use super::*;
use crate::backend::SimProfile;
use crate::{Arg, Backend, Kernel, Order, Param, Scheduler};
use std::time::Duration;

const LINK: LinkRates = LinkRates { up: 1.0, down: 1.0, both: 2.0 };

fn next(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn random_work(seed: u64, n: usize) -> Vec<TaskWork> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| TaskWork {
            up_bytes: 1 + next(&mut s) % 1000,
            kernel_ns: next(&mut s) % 2000,
            down_bytes: 1 + next(&mut s) % 1000,
        })
        .collect()
}

#[test]
fn one_gpu_is_multi_gpu_with_one() {
    let link = LinkRates { up: 0.9, down: 1.1, both: 1.7 };
    for seed in 1..50 {
        let t = random_work(seed, 1 + seed as usize % 9);
        let one = HardwareBound::one_gpu(&t, link);
        let chain = t
            .iter()
            .map(|w| w.up_bytes as f64 / link.up + w.kernel_ns as f64 + w.down_bytes as f64 / link.down)
            .fold(0.0, f64::max)
            .ceil() as u64;
        assert_eq!(HardwareBound::multi_gpu(&t, 1, link, link).t_ns, one.t_ns.max(chain), "seed {seed}");
    }
}

#[test]
fn equal_tasks_on_own_links_take_n_over_d_plus_two_stages() {
    let t = vec![TaskWork { up_bytes: 100, kernel_ns: 100, down_bytes: 100 }; 48];
    for d in [1usize, 2, 4, 8] {
        let b = HardwareBound::multi_gpu(&t, d, LINK, LINK.times(d as f64));
        assert_eq!(b.t_ns, (48 / d as u64 + 2) * 100, "D = {d}");
    }
}

#[test]
fn one_shared_bus_is_no_faster_than_one_gpu() {
    // Copy-bound tasks: only the kernels could spread over the GPUs, and the copies
    // all cross the one bus.
    for seed in 1..20 {
        let mut t = random_work(seed, 40);
        t.iter_mut().for_each(|w| w.kernel_ns /= 10);
        let one = HardwareBound::one_gpu(&t, LINK);
        assert_ne!(one.limit, "compute");
        for d in [2usize, 4, 8] {
            let b = HardwareBound::multi_gpu(&t, d, LINK, LINK);
            assert_eq!(b.t_ns, one.t_ns, "seed {seed}, D = {d}");
            assert!(b.limit.starts_with("host"), "seed {seed}, D = {d}: {b:?}");
            assert!(HardwareBound::multi_gpu(&t, d, LINK, LINK.times(d as f64)).t_ns < b.t_ns);
        }
    }
}

#[test]
fn few_tasks_on_many_gpus_allow_one_task_per_gpu() {
    // Two tasks, two GPUs: each runs alone, in d + k + r = 300 ns. The one-GPU link
    // argument (two tasks on a link) would claim 400.
    let two = vec![TaskWork { up_bytes: 100, kernel_ns: 100, down_bytes: 100 }; 2];
    assert_eq!(HardwareBound::multi_gpu(&two, 2, LINK, LINK.times(2.0)).t_ns, 300);
    // Three tasks: one GPU runs two (400 ns at best), and the bound says so.
    let three = vec![TaskWork { up_bytes: 100, kernel_ns: 100, down_bytes: 100 }; 3];
    assert_eq!(HardwareBound::multi_gpu(&three, 2, LINK, LINK.times(2.0)).t_ns, 400);
}

#[test]
fn more_gpus_on_own_links_never_raise_the_bound() {
    for seed in 1..30 {
        let t = random_work(seed, 2 + seed as usize % 30);
        let mut last = u64::MAX;
        for d in 1..=8usize {
            let b = HardwareBound::multi_gpu(&t, d, LINK, LINK.times(d as f64)).t_ns;
            assert!(b <= last, "seed {seed}, D = {d}: {b} > {last}");
            last = b;
        }
    }
}

#[test]
fn sums_past_u64_are_exact_or_saturate() {
    // Σ(d + r) = 2^65 − 2 over four buses: exact, below u64::MAX.
    let b = LowerBound::from_times(&[(1, u64::MAX, 0, u64::MAX)], 1, 4);
    assert_eq!(b.t1_ns, ((u64::MAX as u128 * 2) / 4) as u64);
    let b = LowerBound::from_times(&[(1, u64::MAX, u64::MAX, u64::MAX); 3], usize::MAX, 1);
    assert_eq!((b.t1_ns, b.t2_ns), (u64::MAX, u64::MAX));
    let huge = TaskWork { up_bytes: u64::MAX, kernel_ns: u64::MAX, down_bytes: u64::MAX };
    assert_eq!(HardwareBound::one_gpu(&[huge; 3], LINK).t_ns, u64::MAX);
    assert_eq!(HardwareBound::multi_gpu(&[huge; 3], 2, LINK, LINK).t_ns, u64::MAX);
    let tiny = LinkRates { up: f64::MIN_POSITIVE, down: f64::MIN_POSITIVE, both: f64::MIN_POSITIVE };
    assert_eq!(HardwareBound::multi_gpu(&[huge; 3], 2, tiny, tiny).t_ns, u64::MAX);
}

#[test]
fn no_work_or_no_rate_gives_no_bound() {
    let t = random_work(3, 5);
    assert_eq!(HardwareBound::multi_gpu(&[], 2, LINK, LINK), HardwareBound::default());
    let zero = LinkRates { up: 0.0, ..LINK };
    assert_eq!(HardwareBound::multi_gpu(&t, 2, zero, LINK), HardwareBound::default());
    assert_eq!(HardwareBound::multi_gpu(&t, 2, LINK, zero), HardwareBound::default());
}

/// Threads per block of [`costed_kernel`]'s launches.
const BLOCK: u32 = 256;

/// A kernel of the demo's shift kernel's parameters (`out`, `in`, `n`, `iters`) and
/// simulated cost, `b_ns`·`iters` ns an element. The runs are timing-only, so its twin
/// (which sim registration asks for) never runs.
fn costed_kernel(b_ns: f64) -> Kernel {
    Kernel::new("shift", "")
        .params([Param::Buffer, Param::Buffer, Param::U32, Param::U32])
        .cpu_twin(|_| Ok(()))
        .sim_cost(move |_, s| {
            let (n, iters) = (s.u32(2).unwrap_or(0) as f64, s.u32(3).unwrap_or(0) as f64);
            Duration::from_nanos((n * (b_ns * iters)).max(0.0) as u64)
        })
}

/// The host rates of `d` GPUs of a sim `profile`, from its fluid model: each GPU its
/// own link, or GPU g on bus g mod B.
fn sim_host(p: &SimProfile, link: LinkRates, d: usize) -> LinkRates {
    match p.buses {
        None => link.times(d as f64),
        Some(b) => {
            let k = b.min(d) as f64;
            LinkRates {
                up: k * p.bus_bytes_per_s / 1e9,
                down: k * p.bus_bytes_per_s / 1e9,
                both: k * p.bus_duplex_bytes_per_s / 1e9,
            }
        }
    }
}

/// Runs chunks of `sizes` elements through the shift kernel (costing `b`·iters ns an
/// element) on `d` simulated GPUs and returns the makespan and each task's work.
fn sim_run(
    p: SimProfile,
    d: usize,
    s: usize,
    depth: usize,
    order: Order,
    sizes: &[usize],
    iters: u32,
) -> (u64, Vec<TaskWork>) {
    let b = 1e-4;
    let sched = Scheduler::builder()
        .backend(Backend::SimWith(p.timing_only()))
        .gpus(d)
        .streams(s)
        .stage_depth(depth)
        .order(order)
        .cpu_cores(4)
        .build()
        .unwrap();
    let total: usize = sizes.iter().sum();
    let max = *sizes.iter().max().unwrap();
    let input = sched.alloc_host::<u32>(total).unwrap();
    let output = sched.alloc_host::<u32>(total).unwrap();
    let k = sched.register_kernel(costed_kernel(b)).unwrap();
    let (d_in, d_out) = (sched.alloc::<u32>(max).unwrap(), sched.alloc::<u32>(max).unwrap());
    let mut at = 0;
    let mut work = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let r = at..at + n;
        at += n;
        sched
            .task(i as u64, n as u64)
            .download(&d_in, 0, &input, r.clone())
            .launch(
                &k,
                (n as u32).div_ceil(BLOCK),
                BLOCK,
                0,
                &[Arg::buffer(&d_out), Arg::buffer(&d_in), Arg::u32(n as u32), Arg::u32(iters)],
            )
            .readback(&output, r, &d_out, 0)
            .submit()
            .unwrap();
        // The sim charges n·b·iters ns, truncated, as `costed_kernel` does,
        // on the share of the SMs its grid fills (kernels of small chunks run side by
        // side): the bound takes its SM-time.
        let wave = sched.gpu_info()[0].sm_count as f64 * sched.gpu_info()[0].blocks_per_sm(BLOCK, 0) as f64;
        let share = ((n as u32).div_ceil(BLOCK) as f64 / wave).min(1.0);
        work.push(TaskWork {
            up_bytes: 4 * n as u64,
            kernel_ns: (n as f64 * b * iters as f64 * share) as u64,
            down_bytes: 4 * n as u64,
        });
    }
    (sched.synchronize().unwrap().makespan_ns, work)
}

/// One run of the sim test below.
struct Case {
    profile: SimProfile,
    gpus: usize,
    streams: usize,
    depth: usize,
    order: Order,
    iters: u32,
}

/// On the sim backend, whose rates are known exactly, no makespan falls below the
/// bound: one GPU, GPUs on their own links, and GPUs sharing buses, on chunks of
/// random sizes, copy-bound and kernel-bound.
#[test]
fn sim_makespans_never_fall_below_the_multi_gpu_bound() {
    let own = SimProfile::h100;
    let slow_duplex = || SimProfile::h100().with_link(20.0, 30.0, 35.0);
    let case = |profile, gpus, streams, depth, order, iters| Case { profile, gpus, streams, depth, order, iters };
    let cases = [
        case(own(), 1, 4, 2, Order::Fcfs, 200),
        case(own(), 2, 4, 2, Order::LargestFirst, 200),
        case(own(), 2, 2, 1, Order::Fcfs, 3000),
        case(own().with_buses(1), 2, 4, 2, Order::Fcfs, 200),
        case(own().with_buses(1), 2, 4, 1, Order::SmallestFirst, 1000),
        case(own(), 4, 4, 2, Order::LargestFirst, 200),
        case(own().with_buses(2), 4, 2, 2, Order::Fcfs, 200),
        case(slow_duplex().with_buses(1), 2, 4, 2, Order::LargestFirst, 100),
        case(slow_duplex(), 4, 3, 2, Order::Fcfs, 1500),
    ];
    for (i, c) in cases.into_iter().enumerate() {
        let (p, d) = (c.profile, c.gpus);
        let link =
            LinkRates { up: p.h2d_bytes_per_s / 1e9, down: p.d2h_bytes_per_s / 1e9, both: p.duplex_bytes_per_s / 1e9 };
        let host = sim_host(&p, link, d);
        let mut seed = 0x5eed + i as u64;
        let sizes: Vec<usize> = (0..24).map(|_| 64 * 1024 + (next(&mut seed) % (960 * 1024)) as usize).collect();
        let buses = p.buses;
        let (makespan, work) = sim_run(p, d, c.streams, c.depth, c.order, &sizes, c.iters);
        let bound = HardwareBound::multi_gpu(&work, d, link, host);
        assert!(bound.t_ns > 0, "case {i}: {bound:?}");
        assert!(
            makespan >= bound.t_ns,
            "case {i} (D = {d}, buses {buses:?}): makespan {makespan} ns below the bound {bound:?}"
        );
    }
}

/// The paper's T_LB is shown as an estimate, never as a bound.
#[test]
fn the_papers_lower_bound_displays_as_an_estimate() {
    let b = LowerBound { t1_ns: 2_000_000, t2_ns: 3_000_000, t_lb_ns: 2_000_000 };
    assert_eq!(b.to_string(), "the paper's estimate T_LB = 2.000 ms (T1 2.000, T2 3.000; not a bound)");
}

/// The paper's T_LB from Appendix C as written: every task sorted by size, the head
/// the first ⌈D/B⌉ tasks' downloads, the tail the first task's readback.
fn paper_in_full(tasks: &[(u64, u64, u64, u64)], gpus: usize, buses: usize) -> LowerBound {
    let mut t = tasks.to_vec();
    t.sort_unstable();
    let (d, b) = (gpus as u128, buses as u128);
    let t1 = t.iter().map(|x| x.1 as u128 + x.3 as u128).sum::<u128>() / b;
    let head: u128 = t.iter().take(gpus.div_ceil(buses)).map(|x| x.1 as u128).sum();
    let t2 = head + t.iter().map(|x| x.2 as u128).sum::<u128>() / d + t[0].3 as u128;
    let (t1, t2) = (t1 as u64, t2 as u64);
    LowerBound { t1_ns: t1, t2_ns: t2, t_lb_ns: t1.min(t2) }
}

/// Sorting only the head gives the bound a full sort gives, sizes tied or not, with
/// more GPUs than tasks too.
#[test]
fn the_papers_estimate_sorts_only_what_it_reads() {
    let mut s = 7u64;
    for n in [1usize, 2, 3, 17, 1000] {
        for (gpus, buses) in [(1, 1), (2, 1), (4, 1), (4, 2), (8, 3), (2000, 1)] {
            let tasks: Vec<_> = (0..n)
                .map(|_| (1 + next(&mut s) % 4, next(&mut s) % 1000, next(&mut s) % 5000, next(&mut s) % 1000))
                .collect();
            assert_eq!(
                LowerBound::from_times(&tasks, gpus, buses),
                paper_in_full(&tasks, gpus, buses),
                "{n} {gpus} {buses}"
            );
        }
    }
}
