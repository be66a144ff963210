//! The invariant suite on the sim backend: for D GPUs x S streams x every ordering rule,
//! pipelines of downloads, kernels, readbacks and CPU/GPU callbacks must run every task
//! exactly once, in order on one slot, within the thresholds and the overlap matrix,
//! and produce exactly the CPU reference's output. Plus the ordering rules themselves,
//! one copy engine, stage depth 2, shared buses, 10,000 tasks, 2-D copies, batches and
//! device memory, and tests of the checker itself.

mod common;

use chariot::{
    Backend, CommandRecord, DispatchStats, LowerBound, Order, OverlapMatrix, Report, Resource, Scheduler, SimProfile,
    Stage, TaskId, Thresholds,
};
use common::*;
use std::sync::mpsc;
use std::time::Duration;

const DEADLINE_S: u64 = 60;

/// H100-like engines and links, with modeled time stretched 10x so that commands last
/// tens to hundreds of microseconds and really overlap.
fn timed(gpus: usize) -> Backend {
    Backend::SimWith(SimProfile::h100().with_gpus(gpus).with_time_scale(10.0))
}

fn instant(gpus: usize) -> Backend {
    Backend::SimWith(SimProfile::instant().with_gpus(gpus))
}

fn order_seed(order: Order) -> u64 {
    match order {
        Order::Fcfs => 1,
        Order::LargestFirst => 2,
        Order::SmallestFirst => 3,
    }
}

/// D x S x order: 48 tasks of every recipe with random chunk sizes.
fn pipeline(d: usize, s: usize, order: Order) {
    with_timeout(DEADLINE_S, move || {
        let sched =
            Scheduler::builder().backend(timed(8)).gpus(d).streams(s).order(order).cpu_cores(4).build().unwrap();
        assert_eq!((sched.gpu_count(), sched.streams(), sched.backend_name()), (d, s, "sim"));
        let seed = (d * 100 + s * 10) as u64 + order_seed(order);
        run_workload(&sched, plan(seed, 1000, 48, 2500, SIM_RECIPES), Clocks::SIM);
    });
}

macro_rules! pipeline_tests {
    ($($name:ident: $d:expr, $s:expr, $order:expr;)*) => {
        $(
            #[test]
            fn $name() {
                pipeline($d, $s, $order);
            }
        )*
    };
}

pipeline_tests! {
    d1_s1_fcfs: 1, 1, Order::Fcfs;
    d1_s1_lf: 1, 1, Order::LargestFirst;
    d1_s1_sf: 1, 1, Order::SmallestFirst;
    d1_s2_fcfs: 1, 2, Order::Fcfs;
    d1_s2_lf: 1, 2, Order::LargestFirst;
    d1_s2_sf: 1, 2, Order::SmallestFirst;
    d1_s4_fcfs: 1, 4, Order::Fcfs;
    d1_s4_lf: 1, 4, Order::LargestFirst;
    d1_s4_sf: 1, 4, Order::SmallestFirst;
    d2_s1_fcfs: 2, 1, Order::Fcfs;
    d2_s1_lf: 2, 1, Order::LargestFirst;
    d2_s1_sf: 2, 1, Order::SmallestFirst;
    d2_s2_fcfs: 2, 2, Order::Fcfs;
    d2_s2_lf: 2, 2, Order::LargestFirst;
    d2_s2_sf: 2, 2, Order::SmallestFirst;
    d2_s4_fcfs: 2, 4, Order::Fcfs;
    d2_s4_lf: 2, 4, Order::LargestFirst;
    d2_s4_sf: 2, 4, Order::SmallestFirst;
    d4_s1_fcfs: 4, 1, Order::Fcfs;
    d4_s1_lf: 4, 1, Order::LargestFirst;
    d4_s1_sf: 4, 1, Order::SmallestFirst;
    d4_s2_fcfs: 4, 2, Order::Fcfs;
    d4_s2_lf: 4, 2, Order::LargestFirst;
    d4_s2_sf: 4, 2, Order::SmallestFirst;
    d4_s4_fcfs: 4, 4, Order::Fcfs;
    d4_s4_lf: 4, 4, Order::LargestFirst;
    d4_s4_sf: 4, 4, Order::SmallestFirst;
}

// ---------------------------------------------------------------------------------------
// Ordering rules
// ---------------------------------------------------------------------------------------

/// D = 1, S = 1: the order in which waiting tasks start is the rule's pop order (see
/// `pop_order_scenario`).
fn pop_order(order: Order) {
    with_timeout(DEADLINE_S, move || {
        let sched = Scheduler::builder().backend(instant(1)).gpus(1).streams(1).order(order).build().unwrap();
        pop_order_scenario(&sched, order, Clocks::SIM);
    });
}

#[test]
fn fcfs_pops_the_oldest_task() {
    pop_order(Order::Fcfs);
}

#[test]
fn largest_first_pops_the_largest_task() {
    pop_order(Order::LargestFirst);
}

#[test]
fn smallest_first_pops_the_smallest_task() {
    pop_order(Order::SmallestFirst);
}

// ---------------------------------------------------------------------------------------
// Hardware shapes
// ---------------------------------------------------------------------------------------

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
/// a submit must be refused with HostConflict exactly when its region shares an element
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
                match t.submit() {
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

// ---------------------------------------------------------------------------------------
// 2-D copies, batches, memory
// ---------------------------------------------------------------------------------------

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
/// buffer (even after the user dropped it), returned at the next synchronize.
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
        drop(dev);
        assert_eq!(used(&sched), vec![(s * n * 4) as u64; d], "the task still holds the buffer");
        gate_tx.send(()).unwrap();
        sched.synchronize().unwrap();
        assert_eq!(used(&sched), vec![0; d]);
        assert!(host.read().iter().enumerate().all(|(i, &x)| x == i as u32));
    });
}

// ---------------------------------------------------------------------------------------
// The checker itself
// ---------------------------------------------------------------------------------------

fn rec(task: u64, command: u32, stage: Stage, gpu: u16, stream: u16, start: u64, end: u64) -> CommandRecord {
    CommandRecord {
        task: TaskId(task),
        granularity: 1,
        command,
        stage,
        gpu,
        stream,
        dispatched_ns: start,
        start_ns: start,
        end_ns: end,
        bytes: 0,
        failed: false,
    }
}

/// A report over `records` (two GPUs, two streams) whose summary agrees with them.
fn fake_report(records: Vec<CommandRecord>) -> Report {
    let tasks = records.iter().map(|r| r.task).collect::<std::collections::HashSet<_>>().len();
    let start_ns = records.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let end_ns = records.iter().map(|r| r.end_ns).max().unwrap_or(0);
    let tasks_per_gpu = (0..2u16)
        .map(|g| records.iter().filter(|r| r.gpu == g).map(|r| r.task).collect::<std::collections::HashSet<_>>().len())
        .collect();
    let busy_ns = (0..2u16)
        .map(|g| {
            Stage::ALL.map(|k| {
                union_ns(records.iter().filter(|r| r.gpu == g && r.stage == k).map(|r| (r.start_ns, r.end_ns)))
            })
        })
        .collect();
    Report {
        backend: "fake".into(),
        gpus: vec!["a".into(), "b".into()],
        streams: 2,
        buses: 1,
        records,
        tasks,
        start_ns,
        end_ns,
        makespan_ns: end_ns - start_ns,
        busy_ns,
        tasks_per_gpu,
        lower_bound: LowerBound::default(),
        epsilon: None,
        dispatch: DispatchStats::default(),
        failures: vec![],
        moved: vec![],
        lost_gpus: vec![],
        tuning: vec![],
        adaptations: vec![],
        cleanup: vec![],
    }
}

fn fake_limits(matrix: OverlapMatrix) -> Limits {
    Limits {
        gpus: 2,
        streams: 2,
        thresholds: Thresholds { local: [2, 1, 1, 1], global: [2, 1, 2, 1] },
        matrices: vec![Some(matrix); 2],
    }
}

const DKR: [Stage; 3] = [Stage::Download, Stage::Kernel, Stage::Readback];

/// Two tasks, one per GPU, that satisfy every invariant.
fn good_records() -> Vec<CommandRecord> {
    vec![
        rec(1, 0, Stage::Download, 0, 0, 0, 10),
        rec(1, 1, Stage::Kernel, 0, 0, 10, 20),
        rec(1, 2, Stage::Readback, 0, 0, 25, 30),
        rec(2, 0, Stage::Download, 1, 1, 10, 20),
        rec(2, 1, Stage::Kernel, 1, 1, 20, 30),
        rec(2, 2, Stage::Readback, 1, 1, 30, 40),
    ]
}

fn good_specs() -> Vec<TaskSpec> {
    vec![TaskSpec::new(1, 1, &DKR), TaskSpec::new(2, 1, &DKR)]
}

fn violations_of(records: Vec<CommandRecord>, specs: &[TaskSpec], matrix: OverlapMatrix) -> Vec<String> {
    violations(&fake_report(records), specs, &fake_limits(matrix), Clocks::SIM)
}

fn assert_caught(records: Vec<CommandRecord>, specs: &[TaskSpec], matrix: OverlapMatrix, needle: &str) {
    let v = violations_of(records, specs, matrix);
    assert!(v.iter().any(|m| m.contains(needle)), "expected a violation containing {needle:?}, got {v:#?}");
}

#[test]
fn checker_accepts_a_valid_timeline() {
    let v = violations_of(good_records(), &good_specs(), OverlapMatrix::from_hardware(1, true));
    assert!(v.is_empty(), "{v:#?}");
}

#[test]
fn checker_catches_missing_and_duplicate_commands() {
    let all = OverlapMatrix::all();
    let mut r = good_records();
    r.remove(1);
    assert_caught(r, &good_specs(), all, "task #1 command 1 recorded 0 time(s)");
    let mut r = good_records();
    r.push(rec(2, 2, Stage::Readback, 1, 1, 40, 45));
    assert_caught(r, &good_specs(), all, "task #2 command 2 recorded 2 time(s)");
    let r: Vec<_> = good_records().into_iter().filter(|r| r.task.0 == 1).collect();
    assert_caught(r, &good_specs(), all, "task #2 never ran");
    let mut r = good_records();
    r.push(rec(9, 0, Stage::Cpu, 0, 1, 0, 1));
    assert_caught(r, &good_specs(), all, "task #9 was not submitted");
    let mut r = good_records();
    r[1].stage = Stage::Cpu;
    assert_caught(r, &good_specs(), all, "recorded at stage cpu, expected kernel");
    let mut r = good_records();
    r[2].failed = true;
    assert_caught(r, &good_specs(), all, "failed = true, expected false");
    // A task expected to fail at command 1 has no record of command 2.
    let specs = vec![TaskSpec::new(1, 1, &DKR).failing_at(1), TaskSpec::new(2, 1, &DKR)];
    let mut r = good_records();
    r[1].failed = true;
    assert_caught(r.clone(), &specs, all, "has a record for command 2");
    r.remove(2);
    // ...and its report lists the failure.
    let mut report = fake_report(r);
    let limits = fake_limits(all);
    assert!(violations(&report, &specs, &limits, Clocks::SIM).iter().any(|m| m.contains("failures name []")));
    report.failures.push(chariot::TaskFailure {
        task: TaskId(1),
        command: 1,
        stage: Stage::Kernel,
        gpu: 0,
        stream: 0,
        message: "x".into(),
        driver: None,
    });
    let v = violations(&report, &specs, &limits, Clocks::SIM);
    assert!(v.is_empty(), "{v:#?}");
}

#[test]
fn checker_catches_order_and_slot_violations() {
    let all = OverlapMatrix::all();
    let mut r = good_records();
    r[1].start_ns = 5; // kernel starts before the download ends
    assert_caught(r, &good_specs(), all, "task #1 commands overlap or run out of order");
    let mut r = good_records();
    r[2].dispatched_ns = 15; // readback issued while the kernel ran
    r[2].start_ns = 20;
    assert_caught(r, &good_specs(), all, "was dispatched before command 1 ended");
    let mut r = good_records();
    r[2].stream = 1;
    assert_caught(r, &good_specs(), all, "task #1 ran on two slots");
    // Task 2 moved onto task 1's slot while task 1 runs there.
    let mut r = good_records();
    for x in r.iter_mut().filter(|x| x.task.0 == 2) {
        x.gpu = 0;
        x.stream = 0;
    }
    assert_caught(r, &good_specs(), all, "gpu 0 stream 0 ran two commands at once");
    let mut r = good_records();
    r[0].stream = 7;
    r[1].stream = 7;
    r[2].stream = 7;
    assert_caught(r, &good_specs(), all, "record outside the machine");
}

#[test]
fn checker_catches_threshold_violations() {
    let all = OverlapMatrix::all();
    // Task 2 on GPU 0, stream 1: its download overlaps task 1's (L_download = 1).
    let mut r = good_records();
    for x in r.iter_mut().filter(|x| x.task.0 == 2) {
        x.gpu = 0;
    }
    r[3].start_ns = 5;
    r[3].dispatched_ns = 5;
    assert_caught(r, &good_specs(), all, "2 download commands running at once on gpu 0");
    // Downloads on two GPUs at once: G_download = 1.
    let mut r = good_records();
    r[3].start_ns = 5;
    r[3].dispatched_ns = 5;
    assert_caught(r, &good_specs(), all, "2 download commands running at once on all GPUs");
    // Only the dispatcher's view overlaps: issued at 5 while the other ran until 10.
    let mut r = good_records();
    r[3].dispatched_ns = 5;
    assert_caught(r, &good_specs(), all, "2 download commands in flight at once on all GPUs");
    // Touching intervals [0,10) and [10,20) do not overlap.
    assert_eq!(max_overlap([(0, 10), (10, 20)]), (1, 0));
    assert_eq!(max_overlap([(0, 10), (5, 20), (6, 7)]).0, 3);
    assert_eq!(max_overlap([(5, 5)]).0, 0);
}

#[test]
fn checker_catches_overlap_matrix_violations() {
    let one_engine = OverlapMatrix::from_hardware(1, true);
    // Task 2 on GPU 0: its download (10..20) overlaps nothing forbidden...
    let mut r = good_records();
    for x in r.iter_mut().filter(|x| x.task.0 == 2) {
        x.gpu = 0;
    }
    r[3].start_ns = 26;
    r[3].dispatched_ns = 26;
    r[3].end_ns = 28; // ...but 26..28 overlaps task 1's readback 25..30.
    r[4].start_ns = 28;
    r[4].dispatched_ns = 28;
    r[5].start_ns = 30;
    r[5].dispatched_ns = 30;
    r[4].end_ns = 30;
    let specs = good_specs();
    assert_caught(r.clone(), &specs, one_engine, "readback and download ran at the same time");
    // With three engines the same timeline is fine.
    let mut limits = fake_limits(OverlapMatrix::from_hardware(3, true));
    limits.thresholds.global = [2, 2, 2, 2];
    assert!(violations(&fake_report(r), &specs, &limits, Clocks::SIM).is_empty());
}

#[test]
fn checker_catches_an_inconsistent_summary() {
    let specs = good_specs();
    let limits = fake_limits(OverlapMatrix::all());
    let mut r = fake_report(good_records());
    r.makespan_ns += 1;
    assert!(violations(&r, &specs, &limits, Clocks::SIM).iter().any(|m| m.contains("makespan")));
    let mut r = fake_report(good_records());
    r.tasks_per_gpu = vec![2, 0];
    assert!(violations(&r, &specs, &limits, Clocks::SIM).iter().any(|m| m.contains("gpu 0 ran 2 tasks")));
    let mut r = fake_report(good_records());
    r.busy_ns[1][Stage::Kernel.index()] = 1;
    assert!(violations(&r, &specs, &limits, Clocks::SIM).iter().any(|m| m.contains("busy 1 ns at kernel")));
    let mut records = good_records();
    records[1].bytes = 64;
    let v = violations(&fake_report(records), &specs, &limits, Clocks::SIM);
    assert!(v.iter().any(|m| m.contains("a kernel command moved 64 bytes")), "{v:#?}");
    assert_eq!(union_ns([(0, 10), (5, 20), (30, 40), (40, 41), (7, 7)]), 31);
}

/// A real run passes the checker, and the same run with one record moved fails it.
#[test]
fn checker_catches_a_tampered_real_report() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(timed(1)).gpus(1).streams(2).build().unwrap();
        let w = Workload::new(&sched, plan(61, 1, 12, 500, &[Recipe::Plain])).unwrap();
        w.submit_all(&sched).unwrap();
        let report = sched.synchronize().unwrap();
        let limits = Limits::of(&sched);
        check(&report, &w.specs(), &limits, Clocks::SIM);
        let mut bad = report.clone();
        let i = bad.records.iter().position(|r| r.task.0 == 5 && r.command == 2).unwrap();
        bad.records[i].start_ns = 0; // the readback "starts" before its task's download
        assert!(!violations(&bad, &w.specs(), &limits, Clocks::SIM).is_empty());
        let mut bad = report.clone();
        bad.records.retain(|r| r.task.0 != 3);
        assert!(!violations(&bad, &w.specs(), &limits, Clocks::SIM).is_empty());
    });
}
