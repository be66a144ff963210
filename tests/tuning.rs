//! The hardware-aware defaults and the online adaptation on the sim backend:
//! what `build` chooses for simulated GPUs with one, two and three copy engines, with
//! and without concurrent kernels; kernels admitted by their fill; tasks kept in the
//! task buffer until a GPU can start them; and an adaptation that converges when the
//! bottleneck moves halfway through a run.

mod common;

use chariot::report::Adapted;
use chariot::sim::SimProfile;
use chariot::{Arg, Backend, Kernel, Order, Param, Scheduler, Stage};
use common::*;
use std::time::Duration;

const DEADLINE_S: u64 = 120;

/// The tests that judge modeled time take turns: run side by side on a small machine,
/// each would slow the others' simulated engines.
static TIMED: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn timed_turn() -> std::sync::MutexGuard<'static, ()> {
    TIMED.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn profile(copy_engines: u32, concurrent_kernels: bool) -> SimProfile {
    let mut p = SimProfile::h100().with_gpus(2).with_copy_engines(copy_engines).with_time_scale(10.0);
    p.concurrent_kernels = concurrent_kernels;
    p
}

#[test]
fn the_defaults_follow_the_simulated_engines() {
    with_timeout(DEADLINE_S, || {
        let _turn = timed_turn();
        for engines in [1u32, 2, 3] {
            for concurrent in [false, true] {
                let sched = Scheduler::builder()
                    .backend(Backend::SimWith(profile(engines, concurrent)))
                    .cpu_cores(4)
                    .build()
                    .unwrap();
                let t = sched.tuning().clone();
                let case = format!("{engines} copy engine(s), concurrent kernels {concurrent}: {t:?}");
                let depth = if engines >= 2 { 2 } else { 1 };
                let copy_slots = if engines >= 2 { 2 * depth } else { depth };
                let streams = 4usize.max(copy_slots + if concurrent { 4 } else { 1 });
                assert_eq!((t.stage_depth, t.streams, t.copy_limit), (depth, streams, depth), "{case}");
                assert_eq!(t.kernel_fills, concurrent.then_some(2.0 * depth as f64), "{case}");
                let kernels = if concurrent { streams } else { depth };
                assert_eq!(t.thresholds.local, [4, copy_slots, kernels, copy_slots], "{case}");
                assert!(t.adapt, "{case}");
                assert_eq!(sched.streams(), streams, "{case}");
                // Every choice says why, and how to make it by hand.
                assert!(t.choices.iter().all(|c| !c.why.is_empty() && c.call.starts_with('.')), "{case}");
                // ...with the value itself, so the call can be pasted (no placeholder).
                assert!(t.choices.iter().all(|c| c.call.ends_with(')') && !c.call.contains("(n)")), "{case}");
                if concurrent {
                    let fills = format!(".kernel_fills({})", 2 * depth);
                    assert!(t.choices.iter().any(|c| c.call == fills), "{case}");
                }
                assert!(t.choices.iter().any(|c| c.what == format!("stage depth {depth}")), "{case}");
                // One copy engine: downloads and readbacks never overlap.
                let m = sched.overlap_matrix(0).unwrap();
                assert_eq!(m.allows(Stage::Download, Stage::Readback), engines >= 2, "{case}");
                // And the pipeline holds every invariant under them, outputs exact.
                let w = Workload::new(&sched, plan(engines as u64 * 2 + concurrent as u64, 1, 40, 3000, SIM_RECIPES))
                    .unwrap();
                w.submit_all(&sched).unwrap();
                let report = sched.synchronize().unwrap();
                check(&report, &w.specs(), &Limits::of(&sched), Clocks::SIM);
                w.verify(&report);
                // The report says what was chosen.
                let text = report.to_string();
                assert!(text.contains(&format!("chosen: streams {streams}: ")), "{case}: {text}");
                assert!(text.contains("chosen: kernel concurrency"), "{case}: {text}");
            }
        }
    });
}

/// A kernel that does nothing on the CPU and costs `cost` alone on the sim, with a
/// share of the SMs set where `share` is given.
fn idle_kernel(name: &str, cost: Duration, share: Option<f64>) -> Kernel {
    let k = Kernel::new(name, "").params([Param::U32]).cpu_twin(|_| Ok(())).sim_cost(move |_, _| cost);
    match share {
        Some(s) => k.sim_sm_share(s),
        None => k,
    }
}

#[test]
fn kernels_are_admitted_by_their_fill() {
    with_timeout(DEADLINE_S, || {
        let _turn = timed_turn();
        let p = SimProfile::h100().with_gpus(1).with_time_scale(5.0).timing_only();
        let sched = Scheduler::builder().backend(Backend::SimWith(p)).cpu_cores(16).adapt(false).build().unwrap();
        let t = sched.tuning().clone();
        assert_eq!((t.streams, t.kernel_fills), (16, Some(4.0)));
        let wave = sched.gpu_info()[0].sm_count * sched.gpu_info()[0].blocks_per_sm(256, 0);
        assert_eq!(wave, 1056);
        let k = sched.register_kernel(idle_kernel("idle", Duration::from_micros(400), None)).unwrap();
        let fill = |grid: u32| (grid as f64 / wave as f64).min(1.0);
        // Runs `grids` in turn over 120 tasks; returns the most kernels in flight at
        // once, having checked that at every dispatch the fills in flight (this one's
        // included) stay within 4 GPU-fills, or the kernel ran alone.
        let run = |grids: &[u32]| {
            let mut fills = std::collections::HashMap::new();
            for i in 0..120u64 {
                let grid = grids[(i % 7) as usize % grids.len()];
                fills.insert(i, fill(grid));
                sched.task(i, 1).launch(&k, grid, 256, 0, &[Arg::u32(0)]).submit().unwrap();
            }
            let report = sched.synchronize().unwrap();
            let spans: Vec<(u64, u64, f64)> =
                report.records.iter().map(|r| (r.dispatched_ns, r.end_ns, fills[&r.task.0])).collect();
            let mut most = 0;
            for &(at, _, _) in &spans {
                let live: Vec<f64> = spans.iter().filter(|s| s.0 <= at && at < s.1).map(|s| s.2).collect();
                let load: f64 = live.iter().sum();
                assert!(live.len() == 1 || load <= 4.0 + 1e-9, "{} kernels fill {load} GPUs at {at} ns", live.len());
                most = most.max(live.len());
            }
            (most, report)
        };
        // Grids of two waves (fill 1), half a wave and an eighth of one.
        let (_, report) = run(&[2 * wave, wave / 2, wave / 8]);
        // Kernels of two waves: four at once, as counting by depth would allow.
        assert_eq!(run(&[2 * wave]).0, 4);
        // An eighth of a wave: one per slot, beyond what counting would have allowed.
        let (most, _) = run(&[wave / 8]);
        assert!(most >= 12, "at most {most} small kernels at once");
        let text = report.to_string();
        // Launches that run 4 to 16 at once: the call that reproduces it admits by fill.
        assert!(
            text.contains("kernel concurrency 4-16: idle fills ") && text.contains("at most S = 16 [.kernel_fills(4)]"),
            "{text}"
        );
    });
}

#[test]
fn tasks_stay_in_the_buffer_until_a_gpu_can_start_them() {
    with_timeout(DEADLINE_S, || {
        let _turn = timed_turn();
        // One copy at a time: task 0's long download holds the stage while the others
        // are submitted. A GPU takes one task that cannot start yet and leaves the rest
        // in the buffer, so they start by the ordering rule (largest first), not in the
        // order they came, although 7 of the 8 slots are free.
        let p = SimProfile::h100().with_gpus(1).with_time_scale(40.0);
        let sched = Scheduler::builder()
            .backend(Backend::SimWith(p))
            .streams(8)
            .stage_depth(1)
            .order(Order::LargestFirst)
            .build()
            .unwrap();
        let (big, small) = (4usize << 20, 1024usize);
        let host = sched.alloc_host::<u32>(big).unwrap();
        let (d_big, d_small) = (sched.alloc::<u32>(big).unwrap(), sched.alloc::<u32>(small).unwrap());
        // Task 0 is the largest: whenever the GPU first looks, it takes task 0 first.
        sched.task(0, u64::MAX).download(&d_big, 0, &host, ..).submit().unwrap();
        let grains: Vec<u64> = (1..=24u64).map(|i| (i * 37) % 24 + 1).collect();
        for (i, &g) in grains.iter().enumerate() {
            sched.task(i as u64 + 1, g).download(&d_small, 0, &host, 0..small).submit().unwrap();
        }
        let report = sched.synchronize().unwrap();
        let starts = first_starts(&report);
        let mut ids: Vec<u64> = (1..=24).collect();
        ids.sort_by_key(|id| starts[id]);
        assert!(ids.iter().all(|id| starts[id] >= starts[&0]), "task 0 first");
        // The first may have been taken before the others came; the rest go largest first.
        let rest: Vec<u64> = ids[1..].iter().map(|&id| grains[id as usize - 1]).collect();
        let mut sorted = rest.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(rest, sorted, "start order by granularity (task 1 aside)");
    });
}

/// The kernel stage's limit in force after `log` (from `start`).
fn kernel_limit(log: &[Adapted], start: f64) -> f64 {
    log.iter()
        .filter(|a| a.stage == Stage::Kernel)
        .fold(start, |_, a| if a.verdict == "undone" { a.from } else { a.to })
}

#[test]
fn the_adaptation_converges_when_the_bottleneck_moves() {
    with_timeout(DEADLINE_S, || {
        let _turn = timed_turn();
        let p = SimProfile::h100().with_gpus(1).with_time_scale(100.0).timing_only();
        let sched = Scheduler::builder().backend(Backend::SimWith(p)).cpu_cores(16).build().unwrap();
        assert_eq!((sched.streams(), sched.tuning().kernel_fills), (16, Some(4.0)));
        // First half: kernels that fill the GPU by their grid but keep 15% of the SMs
        // busy (long tails), so 4 GPU-fills of them use 60% of it; tiny copies.
        let tails = sched.register_kernel(idle_kernel("tails", Duration::from_millis(1), Some(0.15))).unwrap();
        // Second half: 2 MiB uploads (36 µs each at 55 GB/s) and tiny kernels.
        let tiny = sched.register_kernel(idle_kernel("tiny", Duration::from_micros(5), None)).unwrap();
        let (big, small) = (512usize << 10, 1024usize);
        let host = sched.alloc_host::<u32>(big).unwrap();
        let out = sched.alloc_host::<u32>(small * 200).unwrap();
        let (d_big, d_small) = (sched.alloc::<u32>(big).unwrap(), sched.alloc::<u32>(small).unwrap());
        // Granularity is the work: the tails kernel's SM-time, the upload's time, in µs.
        // The halves are two batches, as a program's phases are (seti's column and row
        // phases): a window of the first half's stragglers beside the second half's
        // work would measure neither (the unit tests cover trials across such a change).
        let half = 96u64;
        let mut reports = Vec::new();
        for second in [false, true] {
            for i in (0..half).map(|i| i + second as u64 * half) {
                let (t, kernel, grid, up) = if second {
                    (sched.task(i, 36), &tiny, 16, big)
                } else {
                    (sched.task(i, 150), &tails, 2112, small)
                };
                let r = i as usize * small..(i as usize + 1) * small;
                t.download(&d_big, 0, &host, 0..up)
                    .launch(kernel, grid, 256, 0, &[Arg::u32(0)])
                    .readback(&out, r, &d_small, 0)
                    .submit()
                    .unwrap();
            }
            reports.push(sched.synchronize().unwrap());
        }
        let log: Vec<Adapted> = reports.iter().flat_map(|r| r.adaptations.clone()).collect();
        let text: Vec<String> = log.iter().map(|a| a.to_string()).collect();
        let kernel: Vec<&Adapted> = log.iter().filter(|a| a.stage == Stage::Kernel).collect();
        // The first half raised the kernel stage and kept it: 4 → 8 pays 1.67×.
        assert!(
            kernel.iter().any(|a| a.verdict == "kept" && a.from == 4.0 && a.to == 8.0),
            "no kept raise of the kernel stage: {text:#?}"
        );
        // The second half lowered it again, at no cost, and it stayed there.
        assert_eq!(kernel_limit(&log, 4.0), 4.0, "{text:#?}");
        // No oscillation: each trial once (a void one may be tried again), and few.
        let void: Vec<(Stage, u64, u64)> =
            log.iter().filter(|a| a.verdict == "void").map(|a| (a.stage, a.from.to_bits(), a.to.to_bits())).collect();
        let trials: Vec<(Stage, u64, u64)> = log
            .iter()
            .filter(|a| a.verdict == "trial" && !void.contains(&(a.stage, a.from.to_bits(), a.to.to_bits())))
            .map(|a| (a.stage, a.from.to_bits(), a.to.to_bits()))
            .collect();
        let mut unique = trials.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), trials.len(), "a trial was repeated: {text:#?}");
        assert!(trials.len() <= 6, "{} trials: {text:#?}", trials.len());
        // The report lists them, and each kernel's line gives the capacity in force at
        // the batch's end (the adaptation's, not the start's).
        let first = &reports[0];
        assert!(first.to_string().contains("adapted: GPU 0 kernel stage 4 -> 8 GPU-fills: kept"), "{first}");
        let in_force = kernel_limit(&first.adaptations, 4.0);
        let line = first.tuning.iter().find(|l| l.contains("tails fills")).expect("a line for the tails kernel");
        assert!(line.contains(&format!(" {in_force} GPU-fills at once")), "{line} ({in_force} in force)");
    });
}

/// The report's kernel lines follow the launches batch by batch (they are made again
/// only when the kernels launched, or the capacity in force, changed since the last
/// report): a kernel's range of grids widens with a larger launch, stays in a batch
/// without launches, and a new kernel gets its line.
#[test]
fn kernel_lines_follow_the_launches_batch_by_batch() {
    with_timeout(DEADLINE_S, || {
        let p = SimProfile::h100().with_gpus(1).timing_only();
        let sched = Scheduler::builder().backend(Backend::SimWith(p)).adapt(false).build().unwrap();
        let a = sched.register_kernel(idle_kernel("first", Duration::from_micros(5), None)).unwrap();
        let b = sched.register_kernel(idle_kernel("second", Duration::from_micros(5), None)).unwrap();
        let line = |report: &chariot::report::Report, name: &str| {
            report.tuning.iter().find(|l| l.contains(&format!(": {name} fills"))).cloned()
        };
        let launch = |id: u64, k: &chariot::kernel::KernelHandle, grid: u32| {
            sched.task(id, 1).launch(k, grid, 256, 0, &[Arg::u32(0)]).submit().unwrap();
        };
        launch(0, &a, 8);
        let first = sched.synchronize().unwrap();
        let one = line(&first, "first").expect("a line for the kernel launched");
        assert!(one.contains("(8 blocks;"), "{one}");
        assert_eq!(line(&first, "second"), None, "{:?}", first.tuning);
        launch(1, &a, 64);
        let wider = line(&sched.synchronize().unwrap(), "first").expect("still listed");
        assert!(wider.contains("(8-64 blocks;"), "{wider}");
        // No launch: the lines stay as they were.
        sched.task(2, 1).callback(chariot::callback::Resource::Cpu, |_| Ok(())).submit().unwrap();
        let idle = sched.synchronize().unwrap();
        assert_eq!(line(&idle, "first").as_deref(), Some(wider.as_str()));
        launch(3, &b, 8);
        let both = sched.synchronize().unwrap();
        assert_eq!(line(&both, "first").as_deref(), Some(wider.as_str()));
        assert!(line(&both, "second").is_some_and(|l| l.contains("(8 blocks;")), "{:?}", both.tuning);
    });
}
