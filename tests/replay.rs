//! Replay windows on the sim backend: a batch replayed as graphs gives the
//! outputs of host dispatch, element by element, over random DAGs for D ∈ {1, 2},
//! S ∈ {1, 4} and every order, and its recorded timeline honours every dependency;
//! `Execution::Auto` replays a repeated batch of short tasks and not one of long
//! tasks; a failing task in a window fails it and those after it, and the scheduler
//! goes on; a guard or a task that cannot replay lets held tasks go (no hang); a long
//! batch goes as sub-windows that keep its edges, stop at a failure and survive a lost
//! GPU; a batch the host paces has its last cuts tapered.
//! The CUDA side of the same checks is in `tests/gpu.rs` (`replay_*`, ignored).

#[path = "common/mod.rs"]
mod common;

use chariot::callback::Resource;
use chariot::kernel::KernelHandle;
use chariot::report::{GraphSetup, HostReason, Report};
use chariot::sim::{SimFaults, SimProfile};
use chariot::{Arg, Backend, DeviceBuffer, Error, Execution, HostBuffer, Kernel, Order, Param, Scheduler, TaskId};
use common::*;
use rand::{Rng, SeedableRng};
use std::time::Duration;

const DEADLINE_S: u64 = 120;
/// Elements of one task's region.
const N: usize = 64;

/// The tests of this file run one at a time: `Execution::Auto` judges replay by the
/// host's measured cost of a command against the sim's modeled kernels, which a test
/// running beside it on the same cores would distort.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn sim(gpus: usize) -> Backend {
    Backend::SimWith(SimProfile::h100().with_gpus(gpus))
}

/// One task of a random DAG: reads an earlier task's output region (an inferred
/// dependency) or its own input region, names earlier tasks with `after`.
struct Node {
    source: Option<usize>,
    after: Vec<usize>,
    granularity: u64,
}

fn random_dag(seed: u64, count: usize) -> Vec<Node> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..count)
        .map(|i| {
            let recent = |rng: &mut rand::rngs::StdRng| rng.random_range(i.saturating_sub(6)..i);
            let source = (i > 0 && rng.random_bool(0.6)).then(|| recent(&mut rng));
            let after = if i > 0 { (0..rng.random_range(0..=2)).map(|_| recent(&mut rng)).collect() } else { vec![] };
            Node { source, after, granularity: rng.random_range(1..=9) }
        })
        .collect()
}

/// The outputs a serial CPU run of the DAG leaves.
fn reference(nodes: &[Node]) -> Vec<u32> {
    let mut out = vec![0u32; nodes.len() * N];
    for (i, node) in nodes.iter().enumerate() {
        for e in 0..N {
            let x = match node.source {
                Some(p) => out[p * N + e],
                None => gen(i * N + e),
            };
            out[i * N + e] = affine_ref(x, i as u32 + 3, 7);
        }
    }
    out
}

/// Submits the DAG (download, `k`: affine, readback per task) and synchronizes.
fn run(sched: &Scheduler, k: &KernelHandle, nodes: &[Node]) -> (Vec<u32>, Report) {
    let (d_in, d_out) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
    run_through(sched, k, nodes, &d_in, &d_out)
}

/// [`run`] through device buffers the caller keeps (its host buffers made anew).
fn run_through(
    sched: &Scheduler,
    k: &KernelHandle,
    nodes: &[Node],
    d_in: &DeviceBuffer<u32>,
    d_out: &DeviceBuffer<u32>,
) -> (Vec<u32>, Report) {
    let count = nodes.len();
    let mut input = sched.alloc_host::<u32>(count * N).unwrap();
    input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
    let mut out = sched.alloc_host::<u32>(count * N).unwrap();
    out.write().fill(SENTINEL);
    let (d_in, d_out) = (d_in.clone(), d_out.clone());
    for (i, node) in nodes.iter().enumerate() {
        let t = sched.task(i as u64, node.granularity).after_all(node.after.iter().map(|&p| TaskId(p as u64)));
        let t = match node.source {
            Some(p) => t.download(&d_in, 0, &out, p * N..(p + 1) * N),
            None => t.download(&d_in, 0, &input, i * N..(i + 1) * N),
        };
        let args = [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(N as u32), Arg::u32(i as u32 + 3), Arg::u32(7)];
        t.launch(k, 1, BLOCK, 0, &args).readback(&out, i * N..(i + 1) * N, &d_out, 0).submit().unwrap();
    }
    let report = sched.synchronize().unwrap();
    let values = out.read().to_vec();
    (values, report)
}

/// Every dependency of the report holds in its records: the successor's first command
/// started after the predecessor's last ended.
fn check_edges(report: &Report) {
    for &(p, s) in &report.dependencies {
        let (pr, sr) = (report.task_records(p), report.task_records(s));
        assert!(!pr.is_empty() && !sr.is_empty(), "edge {p} -> {s}: a task has no records");
        let end = pr.iter().map(|r| r.end_ns).max().unwrap();
        let start = sr.iter().map(|r| r.start_ns).min().unwrap();
        assert!(start >= end, "edge {p} -> {s}: {s} started at {start}, before {p} ended at {end}");
    }
}

/// Regions of N elements: the input (`gen`), the output (`SENTINEL` at first), the
/// device buffers a task copies through, and a kernel taking the `affine` kernel's
/// arguments with `a` and `b` (then `extra`).
struct Affine {
    k: KernelHandle,
    input: HostBuffer<u32>,
    out: HostBuffer<u32>,
    d_in: DeviceBuffer<u32>,
    d_out: DeviceBuffer<u32>,
    a: u32,
    b: u32,
    extra: Vec<Arg>,
}

impl Affine {
    /// The `affine` kernel on `regions` regions.
    fn new(sched: &Scheduler, regions: usize, a: u32, b: u32) -> Affine {
        let k = sched.register_kernel(affine_kernel()).unwrap();
        Affine::with_kernel(sched, k, regions, N, a, b, &[])
    }

    /// Kernel `k` (`affine`'s arguments, then `extra`) on `regions` regions, through a
    /// `d_in` of `elements` u32s.
    fn with_kernel(
        sched: &Scheduler,
        k: KernelHandle,
        regions: usize,
        elements: usize,
        a: u32,
        b: u32,
        extra: &[Arg],
    ) -> Affine {
        let mut input = sched.alloc_host::<u32>(regions * N).unwrap();
        input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        let mut out = sched.alloc_host::<u32>(regions * N).unwrap();
        out.write().fill(SENTINEL);
        let (d_in, d_out) = (sched.alloc::<u32>(elements).unwrap(), sched.alloc::<u32>(N).unwrap());
        Affine { k, input, out, d_in, d_out, a, b, extra: extra.to_vec() }
    }

    /// Submits task `id` on region `region` (after `after`, if given): download,
    /// affine, readback.
    fn submit(&self, sched: &Scheduler, id: u64, region: usize, after: Option<u64>) {
        self.submit_after(sched, id, region, after.as_slice());
    }

    /// As [`Affine::submit`], after every task of `after`.
    fn submit_after(&self, sched: &Scheduler, id: u64, region: usize, after: &[u64]) {
        let r = region * N..(region + 1) * N;
        let mut args = vec![
            Arg::buffer(&self.d_in),
            Arg::buffer(&self.d_out),
            Arg::u32(N as u32),
            Arg::u32(self.a),
            Arg::u32(self.b),
        ];
        args.extend_from_slice(&self.extra);
        sched
            .task(id, 1)
            .after_all(after.iter().copied().map(TaskId))
            .download(&self.d_in, 0, &self.input, r.clone())
            .launch(&self.k, 1, BLOCK, 0, &args)
            .readback(&self.out, r, &self.d_out, 0)
            .submit()
            .unwrap();
    }

    /// What element `e` of region `region` holds once its task ran.
    fn expected(&self, region: usize, e: usize) -> u32 {
        affine_ref(gen(region * N + e), self.a, self.b)
    }

    /// The first element of `regions` regions whose output is not [`Affine::expected`].
    fn first_wrong(&self, regions: usize) -> Option<(usize, u32)> {
        let values = self.out.read().to_vec();
        (0..regions * N).find(|&i| values[i] != self.expected(i / N, i % N)).map(|i| (i, values[i]))
    }
}

#[test]
fn replayed_dags_match_host_dispatch_and_honour_every_edge() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let mut seed = 0;
        for gpus in [1, 2] {
            for streams in [1, 4] {
                for order in Order::ALL {
                    seed += 1;
                    let nodes = random_dag(seed, 100);
                    let expected = reference(&nodes);
                    for execution in [Execution::Host, Execution::Replay] {
                        let sched = Scheduler::builder()
                            .backend(sim(gpus))
                            .gpus(gpus)
                            .streams(streams)
                            .order(order)
                            .execution(execution)
                            .build()
                            .unwrap();
                        let case = format!("D={gpus} S={streams} {order} {execution}");
                        let k = sched.register_kernel(affine_kernel()).unwrap();
                        // Twice: the second replay finds the structure it learnt.
                        for round in 0..2 {
                            let (out, report) = run(&sched, &k, &nodes);
                            assert_eq!(out, expected, "{case} round {round}: outputs differ from the CPU reference");
                            check_edges(&report);
                            assert_eq!(report.tasks, nodes.len(), "{case}");
                            let replayed: usize = report.windows.iter().map(|w| w.tasks).sum();
                            match execution {
                                Execution::Replay => {
                                    assert_eq!(replayed, nodes.len(), "{case} round {round}: {report}");
                                    assert!(report.windows.iter().all(|w| w.setup == GraphSetup::Simulated));
                                    assert!(report.windows.iter().all(|w| w.lanes <= streams), "{case}");
                                    // The sim's windows are timed by their engines' runs.
                                    assert!(report.windows.iter().all(|w| w.gpu_ns.is_some()), "{case}");
                                    assert_eq!(report.dispatch.replayed, 3 * nodes.len() as u64);
                                }
                                _ => assert!(report.windows.is_empty(), "{case}"),
                            }
                        }
                    }
                }
            }
        }
    });
}

/// A kernel that only takes time on sim: `cost` per launch.
fn timed_kernel(cost: Duration) -> Kernel {
    Kernel::new(
        "tick",
        "extern \"C\" __global__ void tick(unsigned* x, unsigned v) { if (threadIdx.x == 0) x[0] = v; }",
    )
    .params([Param::Buffer, Param::U32])
    .cpu_twin(|a| {
        let v = a.u32(1)?;
        a.buffer_mut::<u32>(0)?[0] = v;
        Ok(())
    })
    .sim_cost(move |_, _| cost)
}

/// Runs `batches` batches of a 64-task chain of `cost` kernels; how many tasks each
/// batch replayed.
fn auto_batches(cost: Duration, batches: usize) -> Vec<usize> {
    let sched = Scheduler::builder().backend(sim(1)).build().unwrap();
    assert_eq!(sched.execution(), Execution::Auto);
    let k = sched.register_kernel(timed_kernel(cost)).unwrap();
    let x = sched.alloc::<u32>(1).unwrap();
    (0..batches)
        .map(|_| {
            for i in 0..64u64 {
                let t = sched.task(i, 1);
                let t = if i > 0 { t.after(TaskId(i - 1)) } else { t };
                t.launch(&k, 1, 32, 0, &[Arg::buffer(&x), Arg::u32(i as u32)]).submit().unwrap();
            }
            let r = sched.synchronize().unwrap();
            assert_eq!(r.tasks, 64);
            r.windows.iter().map(|w| w.tasks).sum()
        })
        .collect()
}

#[test]
fn auto_replays_a_repeated_batch_of_short_tasks_only() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        // Short: 1 µs kernels, far below the host's cost of a command: learnt on the
        // first batch, replayed from the second on.
        assert_eq!(auto_batches(Duration::from_micros(1), 3), [0, 64, 64]);
        // Long: 20 ms kernels, the GPU sets the pace: never replayed. (Replay pays below
        // PAYS_BELOW = 8 host dispatch times a command: 20 ms needs 2.5 ms a command to
        // look short. With 2 ms kernels, a dispatcher preempted on a loaded two-core CI
        // machine once made the second batch replay.)
        assert_eq!(auto_batches(Duration::from_millis(20), 2), [0, 0]);
    });
}

/// Each batch's report says how its tasks went and why (`Report::execution`): under
/// Auto a structure learnt on the host, then replayed with the measure that made it pay;
/// a batch past the structure, one that departs from it, one synchronized before it
/// was whole, and one whose commands are long; under Replay a task that cannot run in a
/// graph; nothing under Host.
#[test]
fn the_report_says_how_each_batch_went_and_why() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let fresh = |execution: Execution, cost: Duration| {
            let sched = Scheduler::builder().backend(sim(1)).execution(execution).build().unwrap();
            let k = sched.register_kernel(timed_kernel(cost)).unwrap();
            let x = sched.alloc::<u32>(1).unwrap();
            (sched, k, x)
        };
        // Tasks 0..n, a chain but for task `loose` (if any), which names none.
        let chain = |sched: &Scheduler, k: &KernelHandle, x: &DeviceBuffer<u32>, n: u64, loose: Option<u64>| {
            for i in 0..n {
                let t = sched.task(i, 1);
                let t = if i > 0 && Some(i) != loose { t.after(TaskId(i - 1)) } else { t };
                t.launch(k, 1, 32, 0, &[Arg::buffer(x), Arg::u32(i as u32)]).submit().unwrap();
            }
            let r = sched.synchronize().unwrap();
            let e = r.execution.clone().unwrap_or_else(|| panic!("no execution line: {r}"));
            (e.replayed, e.pays, e.host_from)
        };
        let short = Duration::from_micros(1);
        let learnt = Some((TaskId(0), HostReason::Learning));
        // A scheduler whose 64-task chain was learnt and then replayed, with the measure
        // that made it pay. On a loaded machine a learnt batch may not pay (a simulated
        // command ended late): then its next batch must say so by the rule, and a fresh
        // scheduler tries again, up to five.
        let paying = || {
            for _ in 0..5 {
                let (sched, k, x) = fresh(Execution::Auto, short);
                assert_eq!(chain(&sched, &k, &x, 64, None), (0, None, learnt));
                match chain(&sched, &k, &x, 64, None) {
                    (64, Some(p), None) => {
                        assert!(p.gpu_ns < Execution::PAYS_BELOW * p.host_ns, "{p:?}");
                        return (sched, k, x);
                    }
                    (0, None, Some((TaskId(0), HostReason::DoesNotPay { gpu_ns, host_ns }))) => {
                        assert!(gpu_ns >= Execution::PAYS_BELOW * host_ns, "{gpu_ns} {host_ns}");
                    }
                    other => panic!("{other:?}"),
                }
            }
            panic!("no learnt batch paid in five tries");
        };
        // Past the structure: the 65th task is the host's.
        let (sched, k, x) = paying();
        let (replayed, _, host_from) = chain(&sched, &k, &x, 65, None);
        assert_eq!((replayed, host_from), (64, Some((TaskId(64), HostReason::PastTheStructure))));
        // Departs at task 5: the held tasks before it go to the host too, from task 0.
        let (sched, k, x) = paying();
        assert_eq!(chain(&sched, &k, &x, 64, Some(5)), (0, None, Some((TaskId(0), HostReason::Departs))));
        // Synchronized after 10 of its 64 tasks.
        let (sched, k, x) = paying();
        assert_eq!(chain(&sched, &k, &x, 10, None), (0, None, Some((TaskId(0), HostReason::SynchronizedEarly))));
        // Long commands (20 ms): repeated, but replaying does not pay.
        let (sched, k, x) = fresh(Execution::Auto, Duration::from_millis(20));
        assert_eq!(chain(&sched, &k, &x, 3, None), (0, None, learnt));
        let (replayed, _, host_from) = chain(&sched, &k, &x, 3, None);
        match host_from {
            Some((TaskId(0), HostReason::DoesNotPay { gpu_ns, host_ns })) => {
                assert_eq!(replayed, 0);
                assert!(gpu_ns >= Execution::PAYS_BELOW * host_ns && gpu_ns >= 20e6, "{gpu_ns} {host_ns}");
            }
            other => panic!("{other:?}"),
        }
        // Replay: five launches go as a window; the callback after them cannot.
        let (sched, k, x) = fresh(Execution::Replay, short);
        for i in 0..5u64 {
            sched.task(i, 1).launch(&k, 1, 32, 0, &[Arg::buffer(&x), Arg::u32(1)]).submit().unwrap();
        }
        sched.task(5, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
        let r = sched.synchronize().unwrap();
        let e = r.execution.clone().expect("replay says");
        assert_eq!((e.replayed, e.pays), (5, None));
        assert_eq!(e.host_from, Some((TaskId(5), HostReason::NotInAGraph)));
        assert!(
            r.to_string().contains("execution: 5 tasks replayed; the host from task #5: it cannot run in a graph"),
            "{r}"
        );
        // Host: no choice made, no line.
        let (sched, k, x) = fresh(Execution::Host, short);
        sched.task(0, 1).launch(&k, 1, 32, 0, &[Arg::buffer(&x), Arg::u32(1)]).submit().unwrap();
        assert_eq!(sched.synchronize().unwrap().execution, None);
    });
}

#[test]
fn auto_lets_a_departing_batch_go_to_the_host() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).build().unwrap();
        let k = sched.register_kernel(timed_kernel(Duration::from_micros(1))).unwrap();
        let x = sched.alloc::<u32>(1).unwrap();
        // One chain (each task after the one before), or two interleaved chains (each
        // after the one two before): chains, so that the host sets the pace either way.
        let batch = |one_chain: bool| {
            for i in 0..16u64 {
                let t = sched.task(i, 1);
                let step = if one_chain { 1 } else { 2 };
                let t = if i >= step { t.after(TaskId(i - step)) } else { t };
                t.launch(&k, 1, 32, 0, &[Arg::buffer(&x), Arg::u32(1)]).submit().unwrap();
            }
            sched.synchronize().unwrap()
        };
        assert!(batch(true).windows.is_empty());
        // Same commands, other edges: departs at task 2, runs on the host, whole.
        let mut r = batch(false);
        assert!(r.windows.is_empty(), "{r}");
        assert_eq!(r.tasks, 16);
        // Learnt again: the next such batch replays where the batch it learnt from paid
        // (its GPU commands' mean below PAYS_BELOW times the host's time a command). On
        // a loaded two-core machine one simulated command may end a millisecond late
        // (its engine thread woken late), and then the batch after it goes to the host
        // and is judged again: so a few tries, each checked against the rule.
        let paid = |r: &Report| {
            let gpu: Vec<u64> = r.records.iter().filter(|x| x.stage.on_gpu()).map(|x| x.duration_ns()).collect();
            let host = (r.dispatch.runtime_ns + r.dispatch.driver_ns) as f64 / r.dispatch.commands.max(1) as f64;
            (gpu.iter().sum::<u64>() as f64 / gpu.len().max(1) as f64) < Execution::PAYS_BELOW * host
        };
        let mut replayed = false;
        for _ in 0..5 {
            let learnt_paid = paid(&r);
            r = batch(false);
            let tasks: usize = r.windows.iter().map(|w| w.tasks).sum();
            assert_eq!(tasks, if learnt_paid { 16 } else { 0 }, "{r}");
            if learnt_paid {
                replayed = true;
                break;
            }
        }
        assert!(replayed, "no try learnt from a batch that paid");
    });
}

#[test]
fn a_failing_task_fails_itself_and_those_after_it_and_the_scheduler_goes_on() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        // Task 1's launch (command 1) fails: 2 runs after it; 0 and 3 do not.
        let faults = SimFaults::default().fail_command(TaskId(1), 1);
        let backend = Backend::SimWith(SimProfile::h100().with_faults(faults));
        let sched = Scheduler::builder().backend(backend).execution(Execution::Replay).build().unwrap();
        let rig = Affine::new(&sched, 4, 3, 7);
        for i in 0..4u64 {
            rig.submit(&sched, i, i as usize, (i == 1 || i == 2).then(|| i - 1));
        }
        let Err(Error::TasksFailed { failures, report }) = sched.synchronize() else { panic!("tasks 1 and 2 fail") };
        let mut failed: Vec<(TaskId, usize)> = failures.iter().map(|f| (f.task, f.command)).collect();
        failed.sort();
        assert_eq!(failed, [(TaskId(1), 1), (TaskId(2), 0)], "{failures:?}");
        assert!(failures.iter().any(|f| f.task == TaskId(2) && f.message.contains("task #1")), "{failures:?}");
        assert!(report.windows.iter().any(|w| w.failed));
        let values = rig.out.read().to_vec();
        for t in [0usize, 3] {
            for e in 0..N {
                assert_eq!(values[t * N + e], rig.expected(t, e), "task {t} element {e}");
            }
        }
        assert!(values[N..3 * N].iter().all(|&v| v == SENTINEL), "tasks 1 and 2 wrote nothing");
        // The scheduler goes on.
        rig.submit(&sched, 9, 0, None);
        let report = sched.synchronize().unwrap();
        assert_eq!(report.tasks, 1);
    });
}

/// Two chains interleaved (task i after i − 2, region i), `n` tasks, with the rig.
fn two_chains(sched: &Scheduler, rig: &Affine, n: u64) {
    for i in 0..n {
        rig.submit(sched, i, i as usize, (i >= 2).then(|| i - 2));
    }
}

/// `two_chains`' batch of `n` tasks ran them all, each element of their outputs as the
/// CPU computes it, and its timeline honours every edge (`what` names the run).
fn check_two_chains(report: &Report, rig: &Affine, n: usize, what: &str) {
    assert_eq!(report.tasks, n, "{what}");
    let values = rig.out.read().to_vec();
    for t in 0..n {
        for e in 0..N {
            assert_eq!(values[t * N + e], rig.expected(t, e), "{what}: task {t} element {e}");
        }
    }
    check_edges(report);
}

/// The GPU each task ran on (its first record's).
fn gpu_of(report: &Report, id: u64) -> u16 {
    report.task_records(TaskId(id)).first().map(|r| r.gpu).expect("the task has records")
}

#[test]
fn a_long_batch_goes_as_sub_windows_that_keep_its_edges() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        for gpus in [1, 2] {
            let sched = Scheduler::builder()
                .backend(sim(gpus))
                .gpus(gpus)
                .streams(4)
                .execution(Execution::Replay)
                .build()
                .unwrap();
            let rig = Affine::new(&sched, 300, 3, 7);
            two_chains(&sched, &rig, 300);
            let report = sched.synchronize().unwrap();
            check_two_chains(&report, &rig, 300, &format!("D={gpus}"));
            // Cut at 64 and 192 tasks while the loop submitted, the rest at
            // `synchronize`; at D = 2 each chain's part of a cut on its own GPU, the
            // GPU its earlier part went to.
            for g in 0..gpus {
                let mut on_g: Vec<_> = report.windows.iter().filter(|w| w.gpu == g).collect();
                on_g.sort_by_key(|w| w.launched_ns);
                let sizes: Vec<usize> = on_g.iter().map(|w| w.tasks).collect();
                let expected: Vec<usize> = [64, 128, 108].iter().map(|n| n / gpus).collect();
                assert_eq!(sizes, expected, "D={gpus} GPU {g}: {report}");
            }
            for i in 2..300 {
                assert_eq!(gpu_of(&report, i), gpu_of(&report, i % 2), "D={gpus}: task {i} left its chain's GPU");
            }
        }
    });
}

/// How busy a batch's windows kept its busiest GPU, over the time from its first
/// window's queueing to its last's: what `BatchExecution::tapered` reports, computed
/// here from the report's windows (a window counts from the end of the one before it
/// on its GPU). `None` with fewer than two windows.
fn busy_share(report: &Report) -> Option<f64> {
    let first = report.windows.iter().map(|w| w.queued_ns).min()?;
    let last = report.windows.iter().map(|w| w.queued_ns).max()?;
    if report.windows.len() < 2 || last <= first {
        return None;
    }
    let (mut end, mut busy) = (vec![0u64; report.gpus.len()], vec![0u64; report.gpus.len()]);
    for w in &report.windows {
        busy[w.gpu] += w.gpu_ns.unwrap_or_else(|| w.end_ns.saturating_sub(w.launched_ns.max(end[w.gpu])));
        end[w.gpu] = end[w.gpu].max(w.end_ns);
    }
    Some(*busy.iter().max()? as f64 / (last - first) as f64)
}

/// A batch whose windows the GPU runs faster than the loop submits them (here a loop
/// that sleeps between submits) has the last cuts of its next batches tapered: small
/// windows at its end, the report saying why; its outputs and edges stay those of the
/// batch before. The sim's GPU is threads of this process, so on a loaded machine a
/// batch may measure as the GPU's pace: each batch is checked against the rule from
/// the shares its batches before measured (two in a row below 1 taper, two at 1.25 or
/// more stop it), and the tapered cuts must have come at least once.
#[test]
fn a_host_paced_batch_has_its_last_cuts_tapered() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).streams(4).execution(Execution::Replay).build().unwrap();
        let rig = Affine::new(&sched, 300, 3, 7);
        let (mut tapered, mut turns, mut seen) = (false, 0, 0);
        for batch in 0..8 {
            for i in 0..300u64 {
                rig.submit(&sched, i, i as usize, (i >= 2).then(|| i - 2));
                std::thread::sleep(Duration::from_millis(1));
            }
            let report = sched.synchronize().unwrap();
            check_two_chains(&report, &rig, 300, &format!("batch {batch}"));
            let mut windows = report.windows.clone();
            windows.sort_by_key(|w| w.launched_ns);
            let sizes: Vec<usize> = windows.iter().map(|w| w.tasks).collect();
            let said = report.execution.clone().expect("replayed").tapered;
            // 300 tasks left 236 after the first cut, so at most 64 a cut from there.
            let expected: &[usize] = if tapered { &[64, 64, 64, 64, 44] } else { &[64, 128, 108] };
            assert_eq!(sizes, expected, "batch {batch}: {report}");
            assert_eq!(said.is_some(), tapered, "batch {batch}: {report}");
            seen += tapered as usize;
            // The first batch learns the structure; each later one is measured.
            let share = busy_share(&report).expect("three windows");
            if batch > 0 {
                let past = if tapered { share >= 1.25 } else { share < 1.0 };
                turns = if past { turns + 1 } else { 0 };
                if turns == 2 {
                    (tapered, turns) = (!tapered, 0);
                }
            }
        }
        assert!(seen > 0, "no batch measured the host's pace in 8: the sim's GPU threads starved?");
    });
}

#[test]
fn a_failure_in_a_sub_window_stops_what_runs_after_it_in_later_ones() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        for gpus in [1, 2] {
            // Task 10's launch fails: the even chain stops there, in its window and in
            // the later ones; the odd chain runs whole.
            let faults = SimFaults::default().fail_command(TaskId(10), 1);
            let backend = Backend::SimWith(SimProfile::h100().with_gpus(gpus).with_faults(faults));
            let sched = Scheduler::builder().backend(backend).gpus(gpus).execution(Execution::Replay).build().unwrap();
            let rig = Affine::new(&sched, 120, 3, 7);
            two_chains(&sched, &rig, 120);
            let Err(Error::TasksFailed { failures, report }) = sched.synchronize() else { panic!("tasks fail") };
            assert!(report.windows.len() >= 2, "{report}");
            let mut failed: Vec<u64> = failures.iter().map(|f| f.task.0).collect();
            failed.sort();
            assert_eq!(failed, (10..120).step_by(2).collect::<Vec<u64>>(), "D={gpus}: {failures:?}");
            for f in &failures {
                match f.task.0 {
                    10 => assert_eq!(f.command, 1, "{f:?}"),
                    _ => assert!(f.message.contains("which failed"), "{f:?}"),
                }
            }
            let values = rig.out.read().to_vec();
            for t in 0..120 {
                let ran = t % 2 == 1 || t < 10;
                for e in 0..N {
                    let want = if ran { rig.expected(t, e) } else { SENTINEL };
                    assert_eq!(values[t * N + e], want, "D={gpus}: task {t} element {e}");
                }
            }
            // The scheduler goes on.
            rig.submit(&sched, 999, 0, None);
            assert_eq!(sched.synchronize().unwrap().tasks, 1);
        }
    });
}

#[test]
fn a_gpu_lost_under_sub_windows_fails_its_chain_and_nothing_hangs() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        // D = 2, a chain per GPU: the GPU of the even chain is lost at task 80 (its
        // second window). That window fails; the even chain's later windows go to the
        // other GPU and do not run (what they run after failed); the odd chain runs.
        let faults = SimFaults::default().lose_gpu_on_command(TaskId(80), 1);
        let backend = Backend::SimWith(SimProfile::h100().with_gpus(2).with_faults(faults));
        let sched = Scheduler::builder().backend(backend).gpus(2).execution(Execution::Replay).build().unwrap();
        let rig = Affine::new(&sched, 120, 3, 7);
        two_chains(&sched, &rig, 120);
        let Err(Error::TasksFailed { failures, report }) = sched.synchronize() else { panic!("tasks fail") };
        assert_eq!(report.lost_gpus.len(), 1, "{report}");
        let mut failed: Vec<u64> = failures.iter().map(|f| f.task.0).collect();
        failed.sort();
        assert_eq!(failed, (64..120).step_by(2).collect::<Vec<u64>>(), "{failures:?}");
        let values = rig.out.read().to_vec();
        for t in (1..120).step_by(2).chain((0..64).step_by(2)) {
            for e in 0..N {
                assert_eq!(values[t * N + e], rig.expected(t, e), "task {t} element {e}");
            }
        }
        // The other GPU goes on.
        rig.submit(&sched, 999, 0, None);
        assert_eq!(sched.synchronize().unwrap().tasks, 1);
    });
}

#[test]
fn a_window_emptied_by_a_failure_wakes_the_gpu_that_waits_for_it() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        // D = 2, GPU 0 slow. First window: chain A (0..32) on GPU 0, chain B (32..64)
        // on GPU 1, where 33 fails. Second window (64..192): B's continuation, also
        // after A's tail (31): on GPU 1, waiting for GPU 0. Third: task 192 after 31
        // and 191: on GPU 0, waiting for GPU 1. When GPU 0's first window ends, GPU 1
        // takes every task of its second out (they run after 33) and must wake GPU 0,
        // whose third window waits for 191.
        let faults = SimFaults::default().fail_command(TaskId(33), 1).slow_gpu(0, 200.0);
        let backend = Backend::SimWith(SimProfile::h100().with_gpus(2).with_faults(faults));
        let sched = Scheduler::builder().backend(backend).gpus(2).execution(Execution::Replay).build().unwrap();
        let rig = Affine::new(&sched, 200, 3, 7);
        for i in 0..64u64 {
            let after: Vec<u64> = if i % 32 == 0 { vec![] } else { vec![i - 1] };
            rig.submit_after(&sched, i, i as usize, &after);
        }
        rig.submit_after(&sched, 64, 64, &[63, 31]);
        for i in 65..192u64 {
            rig.submit_after(&sched, i, i as usize, &[i - 1]);
        }
        rig.submit_after(&sched, 192, 192, &[31, 191]);
        let Err(Error::TasksFailed { failures, .. }) = sched.synchronize() else { panic!("tasks fail") };
        let mut failed: Vec<u64> = failures.iter().map(|f| f.task.0).collect();
        failed.sort();
        assert_eq!(failed, (33..64).chain(64..193).collect::<Vec<u64>>(), "{failures:?}");
        let values = rig.out.read().to_vec();
        for t in 0..33 {
            assert_eq!(values[t * N], rig.expected(t, 0), "task {t}");
        }
    });
}

#[test]
fn a_task_id_that_failed_in_one_batch_blocks_nothing_in_the_next() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        // Batch 1: task 10 fails, 64 (the second window) runs after it and does not
        // run. Batch 2 reuses the ids; task 10 now runs well, and so does 64.
        let faults = SimFaults::default().fail_command(TaskId(10), 1);
        let backend = Backend::SimWith(SimProfile::h100().with_faults(faults));
        let sched = Scheduler::builder().backend(backend).execution(Execution::Replay).build().unwrap();
        let rig = Affine::new(&sched, 70, 3, 7);
        for i in 0..64 {
            rig.submit(&sched, i, i as usize, None);
        }
        rig.submit(&sched, 64, 64, Some(10));
        let Err(Error::TasksFailed { failures, .. }) = sched.synchronize() else { panic!("task 10 fails") };
        let mut failed: Vec<u64> = failures.iter().map(|f| f.task.0).collect();
        failed.sort();
        assert_eq!(failed, [10, 64]);
        for i in 0..64 {
            if i == 10 {
                // One command: nothing of it is made to fail.
                sched.task(10, 1).download(&rig.d_in, 0, &rig.input, 10 * N..11 * N).submit().unwrap();
            } else {
                rig.submit(&sched, i, i as usize, None);
            }
        }
        rig.submit(&sched, 64, 64, Some(10));
        let report = sched.synchronize().unwrap_or_else(|e| panic!("batch 2 fails: {e}"));
        assert_eq!(report.tasks, 65);
        assert_eq!(rig.out.read()[64 * N], rig.expected(64, 0));
    });
}

#[test]
fn a_guard_or_a_task_that_cannot_replay_lets_held_tasks_go() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(2)).gpus(2).execution(Execution::Replay).build().unwrap();
        let rig = Affine::new(&sched, 8, 5, 1);
        for i in 0..8usize {
            rig.submit(&sched, i as u64, i, None);
        }
        // A read guard waits for the held tasks: they go first, as windows.
        let expected: Vec<u32> = (0..8 * N).map(|i| rig.expected(i / N, i % N)).collect();
        assert_eq!(rig.out.read().to_vec(), expected);
        // A CPU callback cannot replay: it runs after the window it names.
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = seen.clone();
        let report = sched.synchronize().unwrap();
        assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), 8);
        for i in 0..4usize {
            rig.submit(&sched, i as u64, i, None);
        }
        sched
            .task(10, 1)
            .after_all((0..4).map(TaskId))
            .callback(Resource::Cpu, move |_| {
                s2.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            })
            .submit()
            .unwrap();
        let report = sched.synchronize().unwrap();
        assert!(seen.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), 4, "{report}");
        let cb = report.task_records(TaskId(10));
        let window_end = report.windows.iter().map(|w| w.end_ns).max().unwrap();
        assert!(cb.iter().all(|r| r.start_ns >= window_end), "the callback ran before its window ended");
    });
}

/// On a CUDA GPU: random DAGs replayed as CUDA graphs give the CPU reference's
/// outputs, as host dispatch does, at S ∈ {1, 4}; the second batch of a structure
/// updates or reuses the graph the first built; `Execution::Auto` replays the repeated
/// batch of short tasks.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_replayed_dags_match_host_dispatch() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        for streams in [1, 4] {
            for (seed, order) in [(101, Order::Fcfs), (102, Order::LargestFirst)] {
                let nodes = random_dag(seed, 60);
                let expected = reference(&nodes);
                for execution in Execution::ALL {
                    let sched = Scheduler::builder()
                        .backend(Backend::Cuda)
                        .streams(streams)
                        .order(order)
                        .execution(execution)
                        .build()
                        .unwrap();
                    let case = format!("S={streams} {order} {execution}");
                    let k = sched.register_kernel(affine_kernel()).unwrap();
                    let mut setups = Vec::new();
                    for round in 0..3 {
                        let (out, report) = run(&sched, &k, &nodes);
                        assert_eq!(out, expected, "{case} round {round}: outputs differ from the CPU reference");
                        assert_eq!(report.tasks, nodes.len(), "{case} round {round}");
                        setups.push(report.windows.iter().map(|w| w.setup).collect::<Vec<_>>());
                        if execution == Execution::Host {
                            assert!(report.windows.is_empty());
                        }
                    }
                    eprintln!("{case}: graphs {setups:?}");
                    if execution == Execution::Replay {
                        // One window (60 tasks: below the first cut), built once.
                        assert_eq!(setups[0], [GraphSetup::Built], "{case}");
                        // New buffers each round: the kept graph's pointers are set anew.
                        assert!(setups[1..].iter().all(|s| matches!(s[..], [GraphSetup::Updated { .. }])), "{case}");
                    }
                }
            }
        }
        // Auto: a repeated chain of short kernels is learnt, then replayed, unchanged.
        let sched = Scheduler::builder().backend(Backend::Cuda).build().unwrap();
        let k = sched.register_kernel(timed_kernel(Duration::from_micros(1))).unwrap();
        let x = sched.alloc::<u32>(1).unwrap();
        let mut setups = Vec::new();
        for _ in 0..4 {
            for i in 0..256u64 {
                let t = sched.task(i, 1);
                let t = if i > 0 { t.after(TaskId(i - 1)) } else { t };
                t.launch(&k, 1, 32, 0, &[Arg::buffer(&x), Arg::u32(i as u32)]).submit().unwrap();
            }
            let r = sched.synchronize().unwrap();
            assert_eq!(r.tasks, 256);
            setups.push(r.windows.iter().map(|w| w.setup).collect::<Vec<_>>());
        }
        eprintln!("auto: {setups:?}");
        // Learnt from the first batch; then sub-windows of 64, 128 and 64 tasks, the
        // last of the first's structure (its graph updated), each kept and found again.
        assert_eq!(setups[0], []);
        assert_eq!(setups[1][..2], [GraphSetup::Built; 2]);
        assert_eq!(setups[1].len(), 3);
        for s in &setups[2..] {
            assert_eq!(s.len(), 3);
            assert!(!s.contains(&GraphSetup::Built), "{s:?}");
        }
    });
}

/// On a CUDA GPU: with `device_timing`, every replayed window is timed on the GPU
/// (`gpu_ns`, within its span) and gives the host's outputs; without it, none is.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_windows_are_timed_on_the_gpu_with_device_timing_only() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let nodes = random_dag(103, 60);
        let expected = reference(&nodes);
        for device_timing in [true, false] {
            let sched = Scheduler::builder()
                .backend(Backend::Cuda)
                .streams(4)
                .execution(Execution::Replay)
                .device_timing(device_timing)
                .build()
                .unwrap();
            let k = sched.register_kernel(affine_kernel()).unwrap();
            for round in 0..3 {
                let (out, report) = run(&sched, &k, &nodes);
                assert_eq!(out, expected, "device_timing {device_timing} round {round}");
                assert!(!report.windows.is_empty());
                for w in &report.windows {
                    match w.gpu_ns {
                        // The GPU's timer ticks in 0.5 µs or finer; its pair lies inside
                        // the span.
                        Some(ns) => assert!(device_timing && ns > 0 && ns <= w.duration_ns() + 1_000, "{w}"),
                        None => assert!(!device_timing, "round {round}: a window not timed on the GPU: {w}"),
                    }
                    assert_eq!(w.run_ns(), w.gpu_ns.unwrap_or(w.duration_ns()));
                }
            }
        }
    });
}

#[test]
fn a_lane_is_an_order_not_a_dependency() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        // S = 1: two independent tasks share the one lane; task 0's launch fails.
        let faults = SimFaults::default().fail_command(TaskId(0), 1);
        let backend = Backend::SimWith(SimProfile::h100().with_faults(faults));
        let sched = Scheduler::builder().backend(backend).streams(1).execution(Execution::Replay).build().unwrap();
        let rig = Affine::new(&sched, 2, 3, 7);
        for i in 0..2usize {
            rig.submit(&sched, i as u64, i, None);
        }
        let Err(Error::TasksFailed { failures, report }) = sched.synchronize() else { panic!("task 0 fails") };
        assert_eq!(failures.iter().map(|f| f.task).collect::<Vec<_>>(), [TaskId(0)], "{failures:?}");
        assert_eq!(report.windows.iter().map(|w| w.lanes).max(), Some(1));
        let values = rig.out.read().to_vec();
        for e in 0..N {
            assert_eq!(values[N + e], rig.expected(1, e), "task 1 element {e}");
        }
    });
}

#[test]
fn tasks_submitted_while_another_thread_synchronizes_all_run() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        for execution in [Execution::Replay, Execution::Auto] {
            let sched = std::sync::Arc::new(Scheduler::builder().backend(sim(1)).execution(execution).build().unwrap());
            let k = sched.register_kernel(affine_kernel()).unwrap();
            let mut input = sched.alloc_host::<u32>(N).unwrap();
            input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let syncer = {
                let (sched, stop) = (sched.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        let _ = sched.synchronize();
                    }
                })
            };
            let (d_in, d_out) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
            let args = [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(N as u32), Arg::u32(5), Arg::u32(1)];
            for i in 0..300u64 {
                let out = sched.alloc_host::<u32>(N).unwrap();
                sched
                    .task(1_000_000 + i, 1)
                    .download(&d_in, 0, &input, ..)
                    .launch(&k, 1, BLOCK, 0, &args)
                    .readback(&out, .., &d_out, 0)
                    .submit()
                    .unwrap();
                // The guard waits for the task: it must run, whichever batch it fell in.
                assert!(out.read().iter().enumerate().all(|(e, &v)| v == affine_ref(gen(e), 5, 1)), "task {i}");
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            syncer.join().unwrap();
            sched.synchronize().unwrap();
        }
    });
}

/// `x[i] += k` for `i < n`, over a grid of several blocks.
fn inc_kernel() -> Kernel {
    Kernel::new(
        "inc",
        r#"extern "C" __global__ void inc(unsigned* x, unsigned n, unsigned k) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += k; }
        extern "C" __global__ void scale(unsigned* x, unsigned n, unsigned k) {
            unsigned i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x; if (i < n) x[i] *= k; }"#,
    )
    .params([Param::Buffer, Param::U32, Param::U32])
    .cpu_twin(|a| {
        let (n, k) = (a.u32(1)? as usize, a.u32(2)?);
        a.buffer_mut::<u32>(0)?.iter_mut().take(n).for_each(|x| *x = x.wrapping_add(k));
        Ok(())
    })
}

fn scale_kernel() -> Kernel {
    Kernel::new("scale", inc_kernel_source()).params([Param::Buffer, Param::U32, Param::U32]).cpu_twin(|a| {
        let (n, k) = (a.u32(1)? as usize, a.u32(2)?);
        a.buffer_mut::<u32>(0)?.iter_mut().take(n).for_each(|x| *x = x.wrapping_mul(k));
        Ok(())
    })
}

fn inc_kernel_source() -> String {
    inc_kernel().source().to_string()
}

/// A chain of 200 launches (inc and scale, several blocks each, scale on a 2-D grid)
/// on one virtual buffer with S = 1, then a readback task (with a CPU callback, which
/// cannot replay) after the last: the values
/// a serial CPU run gives, and how the chain ran.
fn chain(backend: Backend, execution: Execution) -> (Vec<u32>, Report) {
    const M: usize = 1000;
    let sched = Scheduler::builder().backend(backend).streams(1).execution(execution).build().unwrap();
    let (inc, scale) = (sched.register_kernel(inc_kernel()).unwrap(), sched.register_kernel(scale_kernel()).unwrap());
    let mut host = sched.alloc_host::<u32>(M).unwrap();
    host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
    let out = sched.alloc_host::<u32>(M).unwrap();
    let x = sched.alloc::<u32>(M).unwrap();
    sched.task(0, 1).download(&x, 0, &host, ..).submit().unwrap();
    sched.synchronize().unwrap();
    for t in 1..=200u64 {
        let args = [Arg::buffer(&x), Arg::u32(M as u32), Arg::u32(t as u32 % 7 + 1)];
        let task = sched.task(t, 1);
        let task = if t > 1 { task.after(TaskId(t - 1)) } else { task };
        let task = if t % 3 == 0 {
            task.launch(&scale, (4u32, 2u32, 1u32), 128, 0, &args)
        } else {
            task.launch(&inc, (M as u32).div_ceil(128), 128, 0, &args)
        };
        task.submit().unwrap();
    }
    // A CPU callback: the task cannot replay, so the window is the 200 launches and
    // this runs after it, on the host.
    sched
        .task(1000, 1)
        .after(TaskId(200))
        .readback(&out, .., &x, 0)
        .callback(Resource::Cpu, |_| Ok(()))
        .submit()
        .unwrap();
    let report = sched.synchronize().unwrap();
    let values = out.read().to_vec();
    (values, report)
}

fn chain_reference() -> Vec<u32> {
    (0..1000u32)
        .map(|i| {
            (1..=200u32).fold(i, |x, t| if t % 3 == 0 { x.wrapping_mul(t % 7 + 1) } else { x.wrapping_add(t % 7 + 1) })
        })
        .collect()
}

#[test]
fn device_mode_gives_host_dispatch_outputs() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let expected = chain_reference();
        for execution in [Execution::Host, Execution::Replay, Execution::Device] {
            let (out, report) = chain(sim(1), execution);
            assert_eq!(out, expected, "{execution}");
            let windowed: usize = report.windows.iter().map(|w| w.tasks).sum();
            assert_eq!(windowed, if execution == Execution::Host { 0 } else { 200 }, "{execution}: {report}");
        }
    });
}

/// On a CUDA GPU: the chain run by the device-side executor (one persistent kernel,
/// the grids looped over on its blocks) gives host dispatch's outputs, and so does
/// replay; the flow-like DAG of one-launch tasks on 4 lanes completes in device mode.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_device_mode_gives_host_dispatch_outputs() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let expected = chain_reference();
        for execution in [Execution::Host, Execution::Replay, Execution::Device, Execution::Device] {
            let (out, report) = chain(Backend::Cuda, execution);
            assert_eq!(out, expected, "{execution}: {report}");
            let setups: Vec<GraphSetup> = report.windows.iter().map(|w| w.setup).collect();
            eprintln!("{execution}: {setups:?}");
            if execution == Execution::Device {
                assert!(!setups.is_empty() && setups.iter().all(|&u| u == GraphSetup::Device), "{report}");
            }
        }
        // A random DAG of one-launch tasks over 4 lanes, twice: completes, all tasks.
        let sched =
            Scheduler::builder().backend(Backend::Cuda).streams(4).execution(Execution::Device).build().unwrap();
        let inc = sched.register_kernel(inc_kernel()).unwrap();
        let x = sched.alloc::<u32>(256).unwrap();
        for _ in 0..2 {
            let nodes = random_dag(7, 300);
            for (i, node) in nodes.iter().enumerate() {
                let preds = node.after.iter().chain(node.source.iter()).map(|&p| p as u64);
                sched
                    .task(i as u64, 1)
                    .after_all(preds.into_iter().map(TaskId))
                    .launch(&inc, 2, 128, 0, &[Arg::buffer(&x), Arg::u32(256), Arg::u32(1)])
                    .submit()
                    .unwrap();
            }
            let report = sched.synchronize().unwrap();
            assert_eq!(report.tasks, 300);
            assert!(report.windows.iter().all(|w| w.setup == GraphSetup::Device), "{report}");
            assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), 300, "{report}");
        }
        // Two kernels whose sources both define `bump`: together they are no executor
        // (a redefinition), so their window replays as a graph, with the right result.
        let helper = |name: &str, k: u32| {
            let src = format!(
                "__device__ unsigned bump(unsigned x) {{ return x + {k}; }}\n\
                 extern \"C\" __global__ void {name}(unsigned* x, unsigned n, unsigned u) {{\n\
                 unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = bump(x[i]); }}"
            );
            Kernel::new(name, src).params([Param::Buffer, Param::U32, Param::U32])
        };
        let sched =
            Scheduler::builder().backend(Backend::Cuda).streams(1).execution(Execution::Device).build().unwrap();
        let (a, b) =
            (sched.register_kernel(helper("bump_a", 1)).unwrap(), sched.register_kernel(helper("bump_b", 10)).unwrap());
        let mut host = sched.alloc_host::<u32>(256).unwrap();
        host.write().fill(0);
        let x = sched.alloc::<u32>(256).unwrap();
        sched.task(0, 1).download(&x, 0, &host, ..).submit().unwrap();
        sched.synchronize().unwrap();
        for t in 1..=20u64 {
            let k = if t % 2 == 0 { &a } else { &b };
            let task = sched.task(t, 1);
            let task = if t > 1 { task.after(TaskId(t - 1)) } else { task };
            task.launch(k, 2, 128, 0, &[Arg::buffer(&x), Arg::u32(256), Arg::u32(0)]).submit().unwrap();
        }
        sched
            .task(99, 1)
            .after(TaskId(20))
            .readback(&host, .., &x, 0)
            .callback(Resource::Cpu, |_| Ok(()))
            .submit()
            .unwrap();
        let report = sched.synchronize().unwrap();
        let setups: Vec<GraphSetup> = report.windows.iter().map(|w| w.setup).collect();
        assert!(!setups.is_empty() && !setups.contains(&GraphSetup::Device), "{report}");
        let values = host.read().to_vec();
        assert!(values.iter().all(|&v| v == 10 + 10 * 10), "{:?}", &values[..4]);
    });
}

/// `rounds` batches of [`LONG_TASKS`] tasks of `rig` on `sched` (`case` names them in
/// failures), task `t` on region `t`: every batch's outputs checked against the CPU
/// reference, element by element. Returns the most lanes a window of each batch used,
/// and whether its report said the windows could take lanes past S (checking the step
/// time it gave is at least the rule's 20 µs).
fn long_task_batches(case: &str, sched: &Scheduler, rig: &mut Affine, rounds: usize) -> (Vec<usize>, Vec<bool>) {
    let (mut lanes, mut wide) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        rig.out.write().fill(SENTINEL);
        for t in 0..LONG_TASKS {
            rig.submit(sched, t as u64, t, None);
        }
        let report = sched.synchronize().unwrap();
        assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), LONG_TASKS, "{case} round {round}: {report}");
        lanes.push(report.windows.iter().map(|w| w.lanes).max().unwrap_or(0));
        // A window on lanes past S ends with a timed completion event, no other.
        for w in &report.windows {
            assert_eq!(w.timed_end, w.lanes > sched.streams(), "{case} round {round}: {w}");
        }
        let step_ns = report.execution.as_ref().and_then(|e| e.wide_step_ns);
        assert!(step_ns.is_none_or(|ns| ns >= 20e3), "{case} round {round}: {report}");
        wide.push(step_ns.is_some());
        if let Some((i, v)) = rig.first_wrong(LONG_TASKS) {
            panic!("{case} round {round}: element {i} (task {}) is {v} (lanes {lanes:?})", i / N);
        }
    }
    (lanes, wide)
}

/// The tasks of a batch of [`long_task_batches`].
const LONG_TASKS: usize = 48;

/// On CUDA, the windows of a structure of long tasks (a kernel that spins about 0.1 ms)
/// go wide once measured, and every batch, narrow or wide, gives the CPU reference's
/// outputs, element by element; at D = 1, and at D = 2 where the machine has two GPUs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_windows_of_long_tasks_take_lanes_past_s() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        const STREAMS: usize = 4;
        let src = r#"extern "C" __global__ void slow_affine(const unsigned* in, unsigned* out, unsigned n,
                                                         unsigned a, unsigned b, unsigned spin) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            float x = (float)threadIdx.x;
            for (unsigned k = 0; k < spin; k++) x = x * 0.999f + 0.5f;
            if (i < n) out[i] = in[i] * a + b + (x < -1.0f ? 1u : 0u);
        }"#;
        let two = Backend::cuda_devices().unwrap_or(0) >= 2;
        if !two {
            eprintln!("one CUDA GPU here: D = 1 only");
        }
        for gpus in [1, 2].into_iter().filter(|&d| d == 1 || two) {
            let kernel = Kernel::new("slow_affine", src).params([
                Param::Buffer,
                Param::Buffer,
                Param::U32,
                Param::U32,
                Param::U32,
                Param::U32,
            ]);
            let sched = Scheduler::builder()
                .backend(Backend::Cuda)
                .gpus(gpus)
                .streams(STREAMS)
                .execution(Execution::Replay)
                .build()
                .unwrap();
            let k = sched.register_kernel(kernel).unwrap();
            let mut rig = Affine::with_kernel(&sched, k, LONG_TASKS, N, 3, 7, &[Arg::u32(40_000)]);
            let (lanes, wide) = long_task_batches(&format!("D={gpus}"), &sched, &mut rig, 8);
            assert_eq!(wide, [false, false, false, true, true, true, true, true], "D={gpus}: lanes {lanes:?}");
            assert!(lanes[..4].iter().all(|&l| l <= STREAMS), "D={gpus}: lanes {lanes:?}");
            assert!(lanes[4..].iter().all(|&l| l > STREAMS), "D={gpus}: lanes {lanes:?}");
        }
    });
}

/// A structure whose windows kept their lanes busy at least 20 µs a task in two batches
/// runs its later batches' windows on as many lanes as their width (up to 128), not S:
/// the batch after those names its buffers, whose copies for the lanes past S are made
/// at that batch's end, and the batches after run wide. The same outputs every batch, at
/// D = 1 and 2. One stream, or a buffer whose 126 more copies would not fit the 256 MiB
/// budget, keep every batch on S lanes. (The rule's measure is checked apart, in
/// `ext::replay::capture`'s unit test: on the sim every command is long.)
#[test]
fn windows_of_long_tasks_take_lanes_past_s_where_the_copies_are_small() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let cases = [(1, 2, N, 50, true), (2, 2, N, 50, true), (1, 1, N, 50, false), (1, 2, 1 << 20, 50, false)];
        for (gpus, streams, elements, us, wide) in cases {
            let case = format!("D={gpus} S={streams}, tasks of {us} µs, a {elements}-element buffer");
            let sched =
                Scheduler::builder().backend(sim(gpus)).streams(streams).execution(Execution::Replay).build().unwrap();
            let kernel = affine_kernel().sim_cost(move |_, _| Duration::from_micros(us));
            let k = sched.register_kernel(kernel).unwrap();
            let mut rig = Affine::with_kernel(&sched, k, LONG_TASKS, elements, 3, 7, &[]);
            let (lanes, said) = long_task_batches(&case, &sched, &mut rig, 6);
            // Round 0 learns the structure, rounds 1 and 2 measure it, round 3 names its
            // buffers (their copies made at its end); rounds 4 and 5 follow. The report
            // says so from round 3 on, with S ≥ 2 (a buffer too large keeps its windows
            // on S lanes, as each window's lanes show).
            let wants = streams >= 2;
            assert_eq!(said, [false, false, false, wants, wants, wants], "{case}: lanes {lanes:?}");
            assert!(lanes[..4].iter().all(|&l| l <= streams), "{case}: lanes {lanes:?}");
            assert!(lanes[4..].iter().all(|&l| (l > streams) == wide), "{case}: lanes {lanes:?}");
        }
    });
}

/// A kept graph whose memory was freed since its copy nodes were set sets them again
/// before it launches: the driver gives a freed address to the next allocation, and a
/// copy node set before the free (same address, other allocation) crashed
/// `cuGraphLaunch` on driver 580, or read back into the freed allocation (with the
/// renewal disabled, round 1 here left every output the sentinel). Here the device
/// buffers stay and the host buffers are
/// made anew each round (freed at its end, their addresses likely the next round's),
/// then both are made anew each round: every round gives the CPU reference's outputs,
/// and every round after the first sets nodes of the graph the first built.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_a_kept_graph_sets_its_copies_again_after_memory_is_freed() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder()
            .backend(Backend::Cuda)
            .gpus(1)
            .streams(2)
            .execution(Execution::Replay)
            .build()
            .unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let nodes = random_dag(103, 40);
        let expected = reference(&nodes);
        let (d_in, d_out) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
        for round in 0..8 {
            let (out, report) =
                if round < 4 { run_through(&sched, &k, &nodes, &d_in, &d_out) } else { run(&sched, &k, &nodes) };
            assert_eq!(out, expected, "round {round}: outputs differ from the CPU reference");
            let setups: Vec<GraphSetup> = report.windows.iter().map(|w| w.setup).collect();
            if round == 0 {
                assert_eq!(setups, [GraphSetup::Built], "round {round}");
            } else {
                assert!(matches!(setups[..], [GraphSetup::Updated { .. }]), "round {round}: {setups:?}");
            }
        }
    });
}

/// A device buffer dropped while the replayed windows of its batch run returns its
/// memory at that batch's `synchronize`, as on the host's path: the batch's last tasks
/// are freed by the thread that ends them, beside the waiting `synchronize`, which waits
/// for that where a buffer's handle went while tasks held it.
#[test]
fn a_buffer_dropped_while_its_windows_run_is_returned_by_their_synchronize() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).streams(2).execution(Execution::Replay).build().unwrap();
        let tasks = 200usize;
        let chunk = 64usize;
        let mut host = sched.alloc_host::<u32>(chunk).unwrap();
        host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
        let out = sched.alloc_host::<u32>(chunk * tasks).unwrap();
        let base = sched.device_memory_in_use(0).unwrap();
        for round in 0..20 {
            let dev = sched.alloc::<u32>(chunk).unwrap();
            assert!(sched.device_memory_in_use(0).unwrap() > base, "round {round}: the buffer holds memory");
            for t in 0..tasks {
                let r = t * chunk..(t + 1) * chunk;
                sched.task(t as u64, 1).download(&dev, 0, &host, ..).readback(&out, r, &dev, 0).submit().unwrap();
            }
            drop(dev);
            let report = sched.synchronize().unwrap();
            assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), tasks, "round {round}: all replayed");
            assert_eq!(sched.device_memory_in_use(0).unwrap(), base, "round {round}: the dropped buffer's memory");
            assert!(out.read().iter().enumerate().all(|(i, &x)| x == (i % chunk) as u32), "round {round}");
        }
    });
}

/// A replayed loop of launches alone, batch after batch, each launch refilling in place
/// the ended launch its task box kept (same kernel: its buffer, scalars and grid
/// changed) or replacing it (another kernel at that position): every batch's values
/// are a serial CPU run's.
#[test]
fn launches_refilled_in_place_take_each_batchs_own_arguments() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        const M: usize = 600;
        // One stream: a virtual buffer has one copy, which every task reads and writes.
        let sched = Scheduler::builder().backend(sim(1)).streams(1).execution(Execution::Replay).build().unwrap();
        let (inc, scale) =
            (sched.register_kernel(inc_kernel()).unwrap(), sched.register_kernel(scale_kernel()).unwrap());
        let bufs = [sched.alloc::<u32>(M).unwrap(), sched.alloc::<u32>(M).unwrap()];
        let outs = [sched.alloc_host::<u32>(M).unwrap(), sched.alloc_host::<u32>(M).unwrap()];
        let mut want = [vec![0u32; M], vec![0u32; M]];
        for (b, d) in bufs.iter().enumerate() {
            let mut h = sched.alloc_host::<u32>(M).unwrap();
            h.write().iter_mut().enumerate().for_each(|(i, x)| *x = (i * (b + 1)) as u32);
            want[b].iter_mut().enumerate().for_each(|(i, x)| *x = (i * (b + 1)) as u32);
            sched.task(b as u64, 1).download(d, 0, &h, ..).submit().unwrap();
        }
        sched.synchronize().unwrap();
        let tasks = 150u64;
        for round in 0..6u64 {
            for t in 0..tasks {
                // The buffer, the count, the scalar and the kernel at a position change
                // from one batch to the next.
                let b = ((t + round) % 2) as usize;
                let n = (M - (t as usize * 3 + round as usize) % 200) as u32;
                let k = (t + round) as u32 % 5 + 1;
                let scales = (t + round) % 7 == 0;
                let kernel = if scales { &scale } else { &inc };
                let args = [Arg::buffer(&bufs[b]), Arg::u32(n), Arg::u32(k)];
                let task = sched.task(t, 1);
                let task = if t > 0 { task.after(TaskId(t - 1)) } else { task };
                task.launch(kernel, n.div_ceil(128), 128, 0, &args).submit().unwrap();
                for x in want[b].iter_mut().take(n as usize) {
                    *x = if scales { x.wrapping_mul(k) } else { x.wrapping_add(k) };
                }
            }
            let report = sched.synchronize().unwrap();
            assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), tasks as usize, "round {round}");
            for (b, d) in bufs.iter().enumerate() {
                sched.task(1000 + b as u64, 1).readback(&outs[b], .., d, 0).submit().unwrap();
            }
            sched.synchronize().unwrap();
            for b in 0..2 {
                assert_eq!(&outs[b].read()[..], &want[b][..], "round {round}, buffer {b}");
            }
        }
    });
}

/// The launches the spare task boxes keep for the next submits do not keep a buffer's
/// memory: a buffer only launches named returns it at the `synchronize` of the batch
/// whose windows ran as its last handle dropped, and once dropped between batches (at
/// the drop, or at the next `synchronize`, which runs nothing); a clone dropped while
/// the buffer lives returns nothing.
#[test]
fn kept_launches_do_not_keep_a_dropped_buffers_memory() {
    let _serial = serial();
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).streams(2).execution(Execution::Replay).build().unwrap();
        let inc = sched.register_kernel(inc_kernel()).unwrap();
        let base = sched.device_memory_in_use(0).unwrap();
        for round in 0..8 {
            let dev = sched.alloc::<u32>(256).unwrap();
            let held = sched.device_memory_in_use(0).unwrap();
            assert!(held > base, "round {round}: the buffer holds memory");
            for t in 0..200u64 {
                let args = [Arg::buffer(&dev), Arg::u32(256), Arg::u32(1)];
                sched.task(t, 1).launch(&inc, 2, 128, 0, &args).submit().unwrap();
            }
            let clone = dev.clone();
            if round % 2 == 0 {
                drop(dev);
                drop(clone);
                let report = sched.synchronize().unwrap();
                assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), 200, "round {round}: all replayed");
            } else {
                let report = sched.synchronize().unwrap();
                assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), 200, "round {round}: all replayed");
                // (Its windows may have gone wide: the buffer's lane copies made at the
                // batch's end are its memory too.)
                let before = sched.device_memory_in_use(0).unwrap();
                drop(clone);
                assert_eq!(sched.device_memory_in_use(0).unwrap(), before, "round {round}: a clone's drop");
                drop(dev);
                // Returned at the drop where no task is in flight, else (a dispatcher
                // held the batch's lock as the drop asked) at the next `synchronize`.
                sched.synchronize().unwrap();
            }
            assert_eq!(sched.device_memory_in_use(0).unwrap(), base, "round {round}: the dropped buffer's memory");
        }
    });
}
