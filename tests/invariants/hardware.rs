//! Hardware shapes: one copy engine, shared buses, stage depth 2, host claims, 10,000 tasks.

use super::*;

/// One DMA engine: copies of 16 KiB at 6 GB/s and kernels of a fixed modeled time,
/// stretched 20x, so downloads and readbacks of different tasks want the engine at the
/// same time and an overlap would show in the timeline.
fn single_copy_engine(d: usize, s: usize, buses: Option<usize>) {
    with_timeout(DEADLINE_S, move || {
        let profile = SimProfile::single_copy_engine().with_gpus(d).with_time_scale(20.0);
        let mut b = Scheduler::builder().backend(Backend::SimWith(profile)).gpus(d).streams(s).cpu_cores(4);
        if let Some(n) = buses {
            b = b.buses(n);
        }
        let sched = b.build().unwrap();
        for g in 0..d {
            let m = sched.overlap_matrix(g).expect("a matrix per GPU");
            assert!(!m.allows(Stage::Download, Stage::Readback), "one copy engine: M forbids download with readback");
            assert!(m.allows(Stage::Download, Stage::Kernel) && m.allows(Stage::Kernel, Stage::Readback));
        }
        let cost = Some(Duration::from_micros(2));
        let w = Workload::with_kernel_cost(&sched, plan(11 + d as u64, 1, 40, 4096, SIM_RECIPES), cost).unwrap();
        w.submit_all(&sched).unwrap();
        let report = sched.synchronize().unwrap();
        check(&report, &w.specs(), &Limits::of(&sched), Clocks::SIM);
        w.verify(&report);
    });
}

#[test]
fn one_copy_engine_never_overlaps_download_and_readback() {
    single_copy_engine(1, 4, None);
}

#[test]
fn one_copy_engine_two_gpus() {
    single_copy_engine(2, 3, None);
}

/// Two GPUs with one copy engine each on one shared bus (G_download = G_readback = 1):
/// GPUs queue for the bus in P_k while M makes them withdraw and re-request.
#[test]
fn one_copy_engine_two_gpus_one_bus() {
    single_copy_engine(2, 3, Some(1));
}

/// Regression for lost wake-ups in the stage queues P_k: with one copy engine (M makes
/// GPUs withdraw from P_download while their readback runs) and one bus shared by four
/// or eight GPUs (G_download = G_readback = 1), a GPU left at the head of P_k must be
/// woken when the GPU before it withdraws or is granted. Before that, one run in 10 to
/// 20 parked every dispatcher with a free slot and work queued (a hang); many short
/// runs make the race likely to show.
#[test]
fn no_lost_wakeup_when_gpus_queue_for_one_bus() {
    for (d, s, runs) in [(4usize, 2usize, 60u64), (4, 3, 30), (8, 2, 30)] {
        for run in 0..runs {
            with_timeout(DEADLINE_S / 2, move || {
                let profile = SimProfile::single_copy_engine().with_gpus(d).with_time_scale(0.0);
                let sched = Scheduler::builder()
                    .backend(Backend::SimWith(profile))
                    .gpus(d)
                    .streams(s)
                    .cpu_cores(4)
                    .buses(1)
                    .build()
                    .unwrap();
                let cost = Some(Duration::from_micros(2));
                let w = Workload::with_kernel_cost(&sched, plan(run, 1, 60, 4096, &[Recipe::Plain]), cost).unwrap();
                w.submit_all(&sched).unwrap();
                let report = sched.synchronize().unwrap();
                check(&report, &w.specs(), &Limits::of(&sched), Clocks::SIM);
                w.verify(&report);
            });
        }
    }
}

/// Host-region claims against a brute-force model: random 1-D and 2-D regions of one
/// 64 x 64 matrix are read (download) or written (readback) by tasks held in flight;
/// a submit that refuses conflicts must be refused with HostConflict exactly when its region shares an element
/// with a region an accepted task writes, or writes an element an accepted task reads.
#[test]
fn host_claims_match_a_brute_force_model() {
    use rand::{Rng, SeedableRng};
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(instant(1)).gpus(1).streams(1).build().unwrap();
        let (cols, rows) = (64usize, 64usize);
        let host = sched.alloc_host::<u32>(cols * rows).unwrap();
        let dev = sched.alloc::<u32>(cols * rows).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(99);
        let (mut refused, mut accepted, mut id) = (0, 0, 0u64);
        for _round in 0..40 {
            // Task `id` holds the only slot; every task of the round stays in flight.
            let (open, wait) = gate();
            id += 1;
            sched.task(id, 1).callback(Resource::Cpu, wait).submit().unwrap();
            let mut taken: Vec<(Vec<bool>, bool)> = Vec::new();
            for _ in 0..12 {
                let width = rng.random_range(1..=24usize);
                let height = rng.random_range(1..=6usize);
                let pitch = width + rng.random_range(0..=40usize);
                let max_start = cols * rows - ((height - 1) * pitch + width);
                let start = rng.random_range(0..=max_start);
                let write = rng.random_bool(0.5);
                let mut cells = vec![false; cols * rows];
                for r in 0..height {
                    cells[start + r * pitch..start + r * pitch + width].iter_mut().for_each(|c| *c = true);
                }
                let clash =
                    taken.iter().any(|(other, w)| (write || *w) && cells.iter().zip(other).any(|(a, b)| *a && *b));
                let shape = chariot::Copy2d {
                    host_offset: start,
                    host_pitch: pitch,
                    dev_offset: 0,
                    dev_pitch: width,
                    width,
                    height,
                };
                id += 1;
                let t = sched.task(id, 1);
                let t = if write { t.readback_2d(&host, &dev, shape) } else { t.download_2d(&dev, &host, shape) };
                match t.refuse_conflicts().submit() {
                    Ok(_) => {
                        assert!(!clash, "task #{id} ({shape:?}, write {write}) was accepted over a conflicting region");
                        taken.push((cells, write));
                        accepted += 1;
                    }
                    Err(chariot::Error::HostConflict { task, .. }) => {
                        assert_eq!(task, TaskId(id));
                        assert!(clash, "task #{id} ({shape:?}, write {write}) was refused without a conflict");
                        refused += 1;
                    }
                    Err(e) => panic!("task #{id}: {e}"),
                }
            }
            open.send(()).unwrap();
            sched.synchronize().unwrap();
        }
        // Both outcomes were exercised.
        assert!(refused > 20 && accepted > 100, "refused {refused}, accepted {accepted}");
    });
}

#[test]
fn stage_depth_two_respects_doubled_thresholds() {
    with_timeout(DEADLINE_S, || {
        let paper = || Scheduler::builder().backend(timed(2)).gpus(2).streams(4).cpu_cores(4).paper_thresholds();
        let base = paper().build().unwrap();
        let sched = paper().stage_depth(2).build().unwrap();
        assert_eq!(base.thresholds(), Thresholds::paper(4, 4, 2, 2));
        assert_eq!(sched.thresholds(), Thresholds::paper(4, 4, 2, 2).with_depth(2));
        assert_eq!(sched.thresholds().local, [4, 2, 2, 2]);
        assert_eq!(sched.thresholds().global, [4, 4, 4, 4]);
        drop(base);
        let w = Workload::with_kernel_cost(&sched, plan(21, 1, 64, 2048, SIM_RECIPES), Some(Duration::from_micros(5)))
            .unwrap();
        w.submit_all(&sched).unwrap();
        let report = sched.synchronize().unwrap();
        check(&report, &w.specs(), &Limits::of(&sched), Clocks::SIM);
        w.verify(&report);
    });
}

#[test]
fn shared_buses_respect_global_thresholds() {
    with_timeout(DEADLINE_S, || {
        let profile = SimProfile::h100().with_gpus(4).with_buses(2).with_time_scale(20.0);
        let sched = Scheduler::builder()
            .backend(Backend::SimWith(profile))
            .gpus(4)
            .streams(2)
            .buses(2)
            .cpu_cores(4)
            .paper_thresholds()
            .build()
            .unwrap();
        assert_eq!(sched.buses(), 2);
        let t = sched.thresholds();
        assert_eq!((t.global[Stage::Download.index()], t.global[Stage::Readback.index()]), (2, 2));
        assert_eq!(t.global[Stage::Kernel.index()], 4);
        // Large chunks: copies dominate, so all four GPUs want the two buses at once.
        let w = Workload::with_kernel_cost(&sched, plan(31, 1, 48, 65_536, &[Recipe::Plain, Recipe::CpuAround]), None)
            .unwrap();
        w.submit_all(&sched).unwrap();
        let report = sched.synchronize().unwrap();
        check(&report, &w.specs(), &Limits::of(&sched), Clocks::SIM);
        w.verify(&report);
    });
}

/// A sim profile with buses but no `.buses()` on the builder takes B from the profile.
#[test]
fn buses_default_to_the_profile() {
    let profile = SimProfile::h100().with_gpus(4).with_buses(2);
    let sched = Scheduler::builder().backend(Backend::SimWith(profile)).gpus(4).build().unwrap();
    assert_eq!(sched.buses(), 2);
    // Depth 2 (three copy engines) on each of the two buses.
    assert_eq!(sched.thresholds().global[Stage::Download.index()], 4);
}

#[test]
fn ten_thousand_small_tasks_finish() {
    with_timeout(DEADLINE_S * 2, || {
        let sched = Scheduler::builder().backend(instant(2)).gpus(2).streams(4).build().unwrap();
        let w = Workload::new(&sched, plan(41, 1, 10_000, 4, &[Recipe::Plain])).unwrap();
        w.submit_all(&sched).unwrap();
        let report = sched.synchronize().unwrap();
        assert_eq!(report.tasks, 10_000);
        assert_eq!(report.records.len(), 30_000);
        check(&report, &w.specs(), &Limits::of(&sched), Clocks::SIM);
        w.verify(&report);
    });
}
