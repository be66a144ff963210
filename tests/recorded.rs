//! Recorded graphs on the sim backend: a DAG recorded once and run again and again
//! gives, run after run, the outputs of the same loop submitted task by task, element
//! by element, for D ∈ {1, 2} and S ∈ {1, 4} (laid out on more lanes than S, each lane
//! with its copies of the virtual buffers), with every edge (named or inferred from
//! host regions) honoured in the timeline; an update changes the next run in place; a
//! failing node is named; guards and runs meet as guards and tasks do; every misuse
//! is a named error and leaves the scheduler usable. A DAG wider than one GPU, at
//! D = 2, is one part spread over both GPUs, gives the loop's outputs, shares no
//! buffer copy with work placed on the other GPU meanwhile, and fails its runs, naming
//! the GPU, once that GPU is lost. A GPU lost under a spread run, or under the
//! per-iteration loop's spread window, fails it and leaves the rotation; the other GPU
//! goes on.
//! The CUDA side: `cuda_recorded_*` below (ignored without a GPU).

#[path = "common/mod.rs"]
mod common;

use chariot::callback::Resource;
use chariot::error::ConflictHolder;
use chariot::graph::{RecordedGraph, RecordingProblem};
use chariot::kernel::KernelHandle;
use chariot::report::{GraphSetup, LaunchedBy, ReplayedWindow, Report, WayChosen};
use chariot::sim::{SimFaults, SimProfile};
use chariot::{Arg, Backend, DeviceBuffer, Error, Execution, HostBuffer, Param, Scheduler, TaskId};
use common::*;
use rand::{Rng, SeedableRng};

const DEADLINE_S: u64 = 120;
/// Elements of one task's region.
const N: usize = 64;

fn sim(gpus: usize) -> Backend {
    Backend::SimWith(SimProfile::h100().with_gpus(gpus))
}

/// A task of a random DAG: it reads an earlier task's output region (an edge inferred
/// from the host buffer) or its own input region, and names earlier tasks with `after`.
struct Node {
    source: Option<usize>,
    after: Vec<usize>,
}

fn random_dag(seed: u64, count: usize) -> Vec<Node> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..count)
        .map(|i| {
            let recent = |rng: &mut rand::rngs::StdRng| rng.random_range(i.saturating_sub(6)..i);
            let source = (i > 0 && rng.random_bool(0.5)).then(|| recent(&mut rng));
            let mut after: Vec<usize> =
                if i > 0 { (0..rng.random_range(0..=2)).map(|_| recent(&mut rng)).collect() } else { vec![] };
            after.sort_unstable();
            after.dedup();
            Node { source, after }
        })
        .collect()
}

/// What a serial CPU run of the DAG leaves in the output buffer, with `a` and `b`.
fn reference(nodes: &[Node], a: u32, b: u32) -> Vec<u32> {
    reference_from(nodes, gen, a, b)
}

/// The same, with the input's element `i` being `input(i)`.
fn reference_from(nodes: &[Node], input: impl Fn(usize) -> u32, a: u32, b: u32) -> Vec<u32> {
    let mut out = vec![0u32; nodes.len() * N];
    for (i, node) in nodes.iter().enumerate() {
        for e in 0..N {
            let x = match node.source {
                Some(p) => out[p * N + e],
                None => input(i * N + e),
            };
            out[i * N + e] = affine_ref(x, a.wrapping_add(i as u32), b);
        }
    }
    out
}

/// Asserts `got` equals `want`, naming the first element that differs.
fn same(got: &[u32], want: &[u32], case: &str) {
    assert_eq!(got.len(), want.len(), "{case}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{case}: element {i} (task {}) is {}, expected {}", i / N, got[i], want[i]);
    }
}

/// The DAG's buffers and kernel, and its launches' grid.
struct Dag {
    k: KernelHandle,
    grid: u32,
    input: HostBuffer<u32>,
    out: HostBuffer<u32>,
    d_in: DeviceBuffer<u32>,
    d_out: DeviceBuffer<u32>,
}

impl Dag {
    fn new(sched: &Scheduler, count: usize) -> Dag {
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let mut input = sched.alloc_host::<u32>(count * N).unwrap();
        input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        let out = sched.alloc_host::<u32>(count * N).unwrap();
        let (d_in, d_out) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
        Dag { k, grid: 1, input, out, d_in, d_out }
    }

    /// Submits the DAG's tasks (download, affine with `a + i` and `b`, readback).
    fn submit(&self, s: &Scheduler, nodes: &[Node], a: u32, b: u32) -> chariot::Result<()> {
        self.submit_from(s, nodes, a, b, 0)
    }

    /// [`Dag::submit`] with node `i` as task `first + i`.
    fn submit_from(&self, s: &Scheduler, nodes: &[Node], a: u32, b: u32, first: u64) -> chariot::Result<()> {
        for (i, node) in nodes.iter().enumerate() {
            let t = s.task(first + i as u64, 1).after_all(node.after.iter().map(|&p| TaskId(first + p as u64)));
            let t = match node.source {
                Some(p) => t.download(&self.d_in, 0, &self.out, p * N..(p + 1) * N),
                None => t.download(&self.d_in, 0, &self.input, i * N..(i + 1) * N),
            };
            let args = [
                Arg::buffer(&self.d_in),
                Arg::buffer(&self.d_out),
                Arg::u32(N as u32),
                Arg::u32(a.wrapping_add(i as u32)),
                Arg::u32(b),
            ];
            t.launch(&self.k, self.grid, BLOCK, 0, &args)
                .readback(&self.out, i * N..(i + 1) * N, &self.d_out, 0)
                .submit()?;
        }
        Ok(())
    }
}

/// Every edge of the DAG (named, and inferred from the source region) holds in the
/// report's records of one run: the successor's first command started after the
/// predecessor's last ended.
fn check_edges(nodes: &[Node], report: &Report) {
    for (s, node) in nodes.iter().enumerate() {
        for p in node.after.iter().copied().chain(node.source) {
            let (pr, sr) = (report.task_records(TaskId(p as u64)), report.task_records(TaskId(s as u64)));
            assert!(!pr.is_empty() && !sr.is_empty(), "edge {p} -> {s}: a task has no records");
            let end = pr.iter().map(|r| r.end_ns).max().unwrap();
            let start = sr.iter().map(|r| r.start_ns).min().unwrap();
            assert!(start >= end, "edge {p} -> {s}: {s} started at {start}, before {p} ended at {end}");
        }
    }
}

#[test]
fn recorded_dags_match_the_loop_run_after_run_and_honour_every_edge() {
    with_timeout(DEADLINE_S, || {
        let mut seed = 0;
        for gpus in [1, 2] {
            for streams in [1, 4] {
                seed += 1;
                let nodes = random_dag(seed, 60);
                let case = format!("D={gpus} S={streams}");
                let sched = Scheduler::builder().backend(sim(gpus)).gpus(gpus).streams(streams).build().unwrap();
                let mut dag = Dag::new(&sched, nodes.len());
                // The loop, submitted task by task: the outputs the graph must give.
                dag.submit(&sched, &nodes, 3, 7).unwrap();
                sched.synchronize().unwrap();
                let looped = dag.out.read().to_vec();
                same(&looped, &reference(&nodes, 3, 7), &format!("{case}: the loop against the CPU reference"));
                let mut graph = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
                assert_eq!(graph.tasks(), nodes.len(), "{case}");
                assert!(sched.synchronize().unwrap().records.is_empty(), "{case}: recording ran a task");
                for run in 0..3 {
                    dag.out.write_range(..).unwrap().fill(SENTINEL);
                    graph.run().unwrap();
                    let report = sched.synchronize().unwrap();
                    same(&dag.out.read(), &reference(&nodes, 5, 1), &format!("{case} run {run}"));
                    assert_eq!(report.windows.len(), graph.gpus().len(), "{case} run {run}: a window a part");
                    assert!(report.windows.iter().all(|w| w.setup == GraphSetup::Simulated && w.lanes <= 128));
                    // Lanes past S (the copies they need are small): the DAG's width runs.
                    assert!(report.windows.iter().any(|w| w.lanes > streams), "{case}: {:?}", report.windows);
                    assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), nodes.len(), "{case}");
                    check_edges(&nodes, &report);
                }
                // Many runs queued before one synchronize run in order: the last one's
                // outputs are the graph's.
                for _ in 0..5 {
                    graph.run().unwrap();
                }
                let report = sched.synchronize().unwrap();
                assert_eq!(report.windows.len(), 5 * graph.gpus().len(), "{case}");
                same(&dag.out.read(), &reference(&nodes, 5, 1), &format!("{case} after 5 runs"));
                // An update of every task's `a`, then a run: the loop's outputs with it.
                for i in 0..nodes.len() {
                    graph.set_arg(TaskId(i as u64), 1, 3, Arg::u32(9u32.wrapping_add(i as u32))).unwrap();
                }
                graph.run().unwrap();
                sched.synchronize().unwrap();
                same(&dag.out.read(), &reference(&nodes, 9, 1), &format!("{case} after the update"));
            }
        }
    });
}

/// A DAG of `levels` levels of `width` tasks, each reading a task of the level before
/// (and named after one more, where the seed says).
fn layered(seed: u64, levels: usize, width: usize) -> Vec<Node> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..levels * width)
        .map(|i| {
            let before = (i / width).checked_sub(1).map(|l| l * width..(l + 1) * width);
            let source = before.clone().map(|r| rng.random_range(r));
            let after = before.filter(|_| rng.random_bool(0.5)).map(|r| rng.random_range(r)).into_iter().collect();
            Node { source, after }
        })
        .collect()
}

/// A recorded DAG wider than one GPU (each launch a full wave, four a level) at D = 2 is
/// spread over both GPUs in one part: its runs and an update give the loop's outputs,
/// its tasks are recorded on both GPUs, and every edge, between GPUs too, holds.
fn wide_dag_spreads(backend: Backend) {
    let nodes = layered(11, 8, 4);
    let sched = Scheduler::builder().backend(backend).gpus(2).streams(4).build().unwrap();
    assert_eq!(sched.gpu_info().len(), 2, "two GPUs");
    let mut dag = Dag::new(&sched, nodes.len());
    let info = &sched.gpu_info()[0];
    dag.grid = info.sm_count * info.blocks_per_sm(BLOCK, 0);
    dag.submit(&sched, &nodes, 3, 7).unwrap();
    sched.synchronize().unwrap();
    same(&dag.out.read(), &reference(&nodes, 3, 7), "the loop against the CPU reference");
    let mut graph = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
    assert_eq!(graph.node_gpus(), [0, 1], "a part four GPUs wide spreads over both");
    assert_eq!(graph.gpus().len(), 1, "one connected part, one graph: {:?}", graph.gpus());
    for run in 0..3 {
        dag.out.write_range(..).unwrap().fill(SENTINEL);
        graph.run().unwrap();
        let report = sched.synchronize().unwrap();
        same(&dag.out.read(), &reference(&nodes, 5, 1), &format!("run {run}"));
        assert_eq!(report.windows.len(), 1, "run {run}: one launch for both GPUs");
        if report.windows[0].setup == GraphSetup::Simulated {
            for g in 0..2 {
                assert!(report.records.iter().any(|r| r.gpu as usize == g), "run {run}: no task ran on GPU {g}");
            }
            check_edges(&nodes, &report);
        }
    }
    for i in 0..nodes.len() {
        graph.set_arg(TaskId(i as u64), 1, 3, Arg::u32(9u32.wrapping_add(i as u32))).unwrap();
    }
    graph.run().unwrap();
    sched.synchronize().unwrap();
    same(&dag.out.read(), &reference(&nodes, 9, 1), "after the update");
    // The same DAG of one-block launches fits one GPU: it stays on one.
    dag.grid = 1;
    let narrow = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
    assert_eq!(narrow.node_gpus().len(), 1, "a part that fits one GPU stays on one");
}

/// The per-iteration loop of a DAG wider than one GPU (each launch a full wave, four a
/// level) at D = 2, replayed: its first batch's window stays on one GPU and asks for its
/// buffers' guest lanes; from the next batch on the part's window spans both GPUs, its
/// tasks on GPU 1 on guest lanes (as a recorded part's); every batch gives the CPU
/// reference's outputs and every edge holds. The same DAG of one-block launches, before
/// and after, stays on one GPU.
fn the_loop_spreads_a_wide_dag(backend: Backend) {
    let nodes = layered(13, 8, 4);
    let sched = Scheduler::builder().backend(backend).gpus(2).streams(4).execution(Execution::Replay).build().unwrap();
    let mut dag = Dag::new(&sched, nodes.len());
    let info = &sched.gpu_info()[0];
    let wave = info.sm_count * info.blocks_per_sm(BLOCK, 0);
    for (grid, want) in [(1, &[1, 1][..]), (wave, &[1, 2, 2]), (1, &[1, 1])] {
        dag.grid = grid;
        for (batch, &want) in want.iter().enumerate() {
            let case = format!("grid {grid}, batch {batch}");
            dag.out.write_range(..).unwrap().fill(SENTINEL);
            dag.submit(&sched, &nodes, 3, batch as u32).unwrap();
            let report = sched.synchronize().unwrap();
            same(&dag.out.read(), &reference(&nodes, 3, batch as u32), &case);
            assert_eq!(report.windows.iter().map(|w| w.tasks).sum::<usize>(), nodes.len(), "{case}: all replayed");
            let spans = report.windows.iter().map(|w| w.gpu_count).max();
            assert_eq!(spans, Some(want), "{case}: {:?}", report.windows);
            // Timed on the sim only: CUDA runs a graph's nodes untimed.
            if report.windows.iter().all(|w| w.setup == GraphSetup::Simulated) {
                check_edges(&nodes, &report);
                let guests = report.records.iter().filter(|r| r.gpu == 1 && r.stream >= 256).count();
                assert_eq!(guests > 0, want == 2, "{case}: tasks of GPU 1 on its guest lanes");
            }
        }
    }
}

#[test]
fn the_loops_windows_spread_a_dag_wider_than_a_gpu_once_its_guest_lanes_are_made() {
    with_timeout(DEADLINE_S, || the_loop_spreads_a_wide_dag(sim(2)));
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn cuda_the_loops_windows_spread_a_dag_wider_than_a_gpu_once_its_guest_lanes_are_made() {
    on_two_cuda_gpus(the_loop_spreads_a_wide_dag);
}

/// A scheduler on two simulated GPUs with `faults`, S = 4 and `execution` (else the
/// default), and a DAG of `tasks` full-wave launches on it.
fn wide_dag_on_two_sim_gpus(faults: SimFaults, execution: Option<Execution>, tasks: usize) -> (Scheduler, Dag) {
    let backend = Backend::SimWith(SimProfile::h100().with_gpus(2).with_faults(faults));
    let builder = Scheduler::builder().backend(backend).gpus(2).streams(4);
    let sched = match execution {
        Some(e) => builder.execution(e),
        None => builder,
    }
    .build()
    .unwrap();
    let mut dag = Dag::new(&sched, tasks);
    let info = &sched.gpu_info()[0];
    dag.grid = info.sm_count * info.blocks_per_sm(BLOCK, 0);
    (sched, dag)
}

/// After GPU `lost` was lost under a graph spread over both GPUs (of `tasks` tasks, in
/// a command of `culprit`'s), with `failures` and `report`: the spread graph failed,
/// each of its tasks named; the graphs of one GPU ran; GPU `lost` left the rotation and
/// the other stayed.
fn lost_under_the_spread_graph(
    sched: &Scheduler,
    failures: &[chariot::report::TaskFailure],
    report: &Report,
    culprit: TaskId,
    lost: usize,
    tasks: usize,
    case: &str,
) {
    let windows = &report.windows;
    assert!(windows.iter().all(|w| w.failed == (w.gpu_count == 2)), "{case}: {windows:?}");
    let spread: usize = windows.iter().filter(|w| w.failed).map(|w| w.tasks).sum();
    assert!(spread > tasks / 2, "{case}: {windows:?}");
    assert_eq!(failures.len(), spread, "{case}: {failures:?}");
    assert!(failures.iter().any(|f| f.task == culprit), "{case}: {failures:?}");
    assert!(failures.iter().all(|f| f.message.contains("replayed window failed")), "{case}: {failures:?}");
    let gone: Vec<usize> = report.lost_gpus.iter().map(|l| l.gpu).collect();
    assert_eq!(gone, [lost], "{case}: GPU {lost} leaves, the other stays");
    assert_eq!(sched.live_gpus(), [1 - lost], "{case}");
}

/// A loss of GPU 1 under the per-iteration loop's window spread over both GPUs, in a
/// command of one of its tasks there (`how`: the GPU lost under it, or its kernel
/// crashing): the window fails as a whole and every task of it is named, GPU 1 leaves
/// the rotation, GPU 0 stays in it, and the next batch runs there alone with the CPU
/// reference's outputs. Nothing hangs.
#[test]
fn a_gpu_lost_under_the_loops_spread_window_leaves_the_rotation_and_the_other_goes_on() {
    /// The second batch's task ids start here (the structure is the first's).
    const SECOND: u64 = 1000;
    with_timeout(DEADLINE_S, || {
        let nodes = layered(13, 8, 4);
        let open = |faults| wide_dag_on_two_sim_gpus(faults, Some(Execution::Replay), nodes.len());
        let batch = |sched: &Scheduler, dag: &mut Dag, first: u64| {
            dag.out.write_range(..).unwrap().fill(SENTINEL);
            dag.submit_from(sched, &nodes, 3, 7, first).unwrap();
            sched.synchronize()
        };
        // The second batch spreads; which of its tasks run on GPU 1 (the same in every
        // run: the layout depends on the structure only).
        let (sched, mut dag) = open(SimFaults::default());
        batch(&sched, &mut dag, 0).unwrap();
        let report = batch(&sched, &mut dag, SECOND).unwrap();
        assert_eq!(report.windows.iter().map(|w| w.gpu_count).max(), Some(2), "{:?}", report.windows);
        let gpu_of = |t: usize| report.records.iter().find(|r| r.task.0 == SECOND + t as u64).map(|r| r.gpu as usize);
        let k = (0..nodes.len()).find(|&t| gpu_of(t) == Some(1)).expect("a task on GPU 1");
        // A task of GPU 0 with an edge: in the spread part (the others are tasks alone).
        let linked = |t: usize| {
            let n = &nodes[t];
            n.source.is_some()
                || !n.after.is_empty()
                || nodes.iter().any(|m| m.source == Some(t) || m.after.contains(&t))
        };
        let j = (0..nodes.len()).find(|&t| gpu_of(t) == Some(0) && linked(t)).expect("a task of the part on GPU 0");
        let (on_1, on_0) = (TaskId(SECOND + k as u64), TaskId(SECOND + j as u64));
        drop((sched, dag));
        for (how, faults, culprit, lost) in [
            ("GPU 1 lost under it", SimFaults::default().lose_gpu_on_command(on_1, 1), on_1, 1),
            ("a kernel of GPU 1 crashing", SimFaults::default().crash_on_command(on_1, 1), on_1, 1),
            // The sim's GPUs fail alone (no driver poisoning every context).
            ("a kernel of GPU 0 crashing", SimFaults::default().crash_on_command(on_0, 1), on_0, 0),
        ] {
            let (sched, mut dag) = open(faults);
            batch(&sched, &mut dag, 0).unwrap();
            let Err(Error::TasksFailed { failures, report }) = batch(&sched, &mut dag, SECOND) else {
                panic!("{how}: the spread window fails")
            };
            lost_under_the_spread_graph(&sched, &failures, &report, culprit, lost, nodes.len(), how);
            let report = batch(&sched, &mut dag, 0).unwrap_or_else(|e| panic!("{how}: the next batch: {e}"));
            same(&dag.out.read(), &reference(&nodes, 3, 7), &format!("{how}: the next batch"));
            assert!(report.records.iter().all(|r| r.gpu as usize == 1 - lost), "{how}: the next batch on one GPU");
        }
    });
}

/// A loss of GPU 1 under a run of a recorded part spread over both GPUs (in its task's
/// command there): the run fails, every task named; GPU 1 leaves the rotation, GPU 0
/// stays; the part's next run fails naming GPU 1, and the loop runs on GPU 0.
#[test]
fn a_gpu_lost_under_a_spread_recorded_run_leaves_the_rotation_and_the_other_goes_on() {
    with_timeout(DEADLINE_S, || {
        let nodes = layered(13, 8, 4);
        let open = |faults| {
            let (sched, dag) = wide_dag_on_two_sim_gpus(faults, None, nodes.len());
            let graph = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
            assert_eq!(graph.node_gpus(), [0, 1]);
            (sched, dag, graph)
        };
        // Which task runs on GPU 1 (the layout depends on the graph only).
        let (sched, _dag, graph) = open(SimFaults::default());
        graph.run().unwrap();
        let report = sched.synchronize().unwrap();
        let on_1 = report.records.iter().find(|r| r.gpu == 1).map(|r| r.task).expect("a task on GPU 1");
        drop((graph, sched));
        let (sched, mut dag, graph) = open(SimFaults::default().lose_gpu_on_command(on_1, 1));
        graph.run().unwrap();
        let Err(Error::TasksFailed { failures, report }) = sched.synchronize() else { panic!("the run fails") };
        lost_under_the_spread_graph(&sched, &failures, &report, on_1, 1, nodes.len(), "a recorded run");
        graph.run().unwrap();
        let Err(Error::TasksFailed { failures, .. }) = sched.synchronize() else { panic!("the next run fails") };
        assert!(failures.iter().any(|f| f.message.contains("GPU 1, which this recorded part spans")), "{failures:?}");
        dag.out.write_range(..).unwrap().fill(SENTINEL);
        dag.submit(&sched, &nodes, 3, 7).unwrap();
        let report = sched.synchronize().unwrap();
        same(&dag.out.read(), &reference(&nodes, 3, 7), "the loop after the loss");
        assert!(report.records.iter().all(|r| r.gpu == 0), "the loop on GPU 0 alone");
    });
}

/// A spread part's tasks on the GPU it is not launched from use that GPU's guest lanes:
/// work placed there meanwhile, on the same virtual buffers, shares no copy with them
/// (its dispatcher does not order the part's tasks with its own), and both give their
/// outputs.
fn spread_beside_placed_work(backend: Backend) {
    {
        let nodes = layered(12, 8, 4);
        let sched = Scheduler::builder().backend(backend).gpus(2).streams(4).build().unwrap();
        let mut dag = Dag::new(&sched, nodes.len());
        let info = &sched.gpu_info()[0];
        dag.grid = info.sm_count * info.blocks_per_sm(BLOCK, 0);
        let graph = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
        assert_eq!(graph.node_gpus(), [0, 1]);
        let placed = 48;
        let mut input = sched.alloc_host::<u32>(placed * N).unwrap();
        input.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen2(i));
        let mut out = sched.alloc_host::<u32>(placed * N).unwrap();
        for round in 0..4 {
            dag.out.write_range(..).unwrap().fill(SENTINEL);
            out.write_range(..).unwrap().fill(SENTINEL);
            graph.run().unwrap();
            for i in 0..placed {
                let args = [
                    Arg::buffer(&dag.d_in),
                    Arg::buffer(&dag.d_out),
                    Arg::u32(N as u32),
                    Arg::u32(7 + i as u32),
                    Arg::u32(round),
                ];
                sched
                    .task(1000 + i as u64, 1)
                    .prefer_gpu(1)
                    .download(&dag.d_in, 0, &input, i * N..(i + 1) * N)
                    .launch(&dag.k, 1, BLOCK, 0, &args)
                    .readback(&out, i * N..(i + 1) * N, &dag.d_out, 0)
                    .submit()
                    .unwrap();
            }
            let report = sched.synchronize().unwrap();
            same(&dag.out.read(), &reference(&nodes, 5, 1), &format!("round {round}: the graph"));
            let got = out.read();
            for i in 0..placed * N {
                let want = affine_ref(gen2(i), 7 + (i / N) as u32, round);
                assert_eq!(got[i], want, "round {round}: placed task {}, element {i}", i / N);
            }
            // The spread part's tasks on GPU 1 ran on its guest lanes (from 256 on; a
            // lone task of the recording, a part of its own, runs on GPU 1's lanes).
            // (Timed on the sim only: CUDA runs a graph's nodes untimed.)
            let guests = report.records.iter().filter(|r| r.gpu == 1 && r.task.0 < 1000 && r.stream >= 256).count();
            let timed = report.windows.iter().all(|w| w.setup == GraphSetup::Simulated);
            assert!(guests > 0 || !timed, "round {round}: no task of the graph on a guest lane of GPU 1");
        }
    }
}

#[test]
fn a_spread_part_shares_no_copy_with_work_placed_on_the_gpus_it_spans() {
    with_timeout(DEADLINE_S, || spread_beside_placed_work(sim(2)));
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn cuda_a_spread_part_shares_no_copy_with_work_placed_on_the_gpus_it_spans() {
    on_two_cuda_gpus(spread_beside_placed_work);
}

/// Runs `body` on CUDA within the deadline where this machine has two CUDA GPUs; else
/// says the test skips.
fn on_two_cuda_gpus(body: fn(Backend)) {
    let gpus = Backend::cuda_devices().unwrap_or(0);
    if gpus < 2 {
        eprintln!("SKIPPED: {gpus} CUDA GPU(s) here; this test needs two");
        return;
    }
    with_timeout(DEADLINE_S, move || body(Backend::Cuda));
}

/// A spread part's runs fail, naming the GPU, once a GPU it spans is lost (its nodes
/// there have nowhere else to go); nothing hangs and the other GPU goes on.
#[test]
fn a_spread_part_fails_its_runs_once_a_gpu_it_spans_is_lost() {
    with_timeout(DEADLINE_S, || {
        let nodes = layered(13, 8, 4);
        let faults = SimFaults::default().lose_gpu_on_command(TaskId(2000), 2);
        let (sched, dag) = wide_dag_on_two_sim_gpus(faults, None, nodes.len());
        let graph = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
        assert_eq!(graph.node_gpus(), [0, 1]);
        graph.run().unwrap();
        sched.synchronize().unwrap();
        same(&dag.out.read(), &reference(&nodes, 5, 1), "before the loss");
        // GPU 1 is lost under a task placed there.
        let args = [Arg::buffer(&dag.d_in), Arg::buffer(&dag.d_out), Arg::u32(N as u32), Arg::u32(1), Arg::u32(0)];
        let place = |id: u64, gpu: usize| {
            sched
                .task(id, 1)
                .prefer_gpu(gpu)
                .download(&dag.d_in, 0, &dag.input, 0..N)
                .launch(&dag.k, 1, BLOCK, 0, &args)
                .readback(&dag.out, 0..N, &dag.d_out, 0)
                .submit()
                .unwrap()
        };
        place(2000, 1);
        let lost = match sched.synchronize() {
            Ok(r) => r.lost_gpus.len(),
            Err(Error::TasksFailed { report, .. }) => report.lost_gpus.len(),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(lost, 1, "GPU 1 is lost");
        graph.run().unwrap();
        let Err(Error::TasksFailed { failures, .. }) = sched.synchronize() else { panic!("the run fails") };
        assert!(
            failures.iter().any(|f| f.message.contains("GPU 1, which this recorded part spans, has left the rotation")),
            "{failures:?}"
        );
        place(3000, 0);
        sched.synchronize().unwrap();
    });
}

#[test]
fn a_dag_wider_than_a_gpu_spreads_over_both_in_one_graph_and_matches_the_loop() {
    with_timeout(DEADLINE_S, || wide_dag_spreads(sim(2)));
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn cuda_a_dag_wider_than_a_gpu_spreads_over_both_in_one_graph_and_matches_the_loop() {
    on_two_cuda_gpus(wide_dag_spreads);
}

#[test]
fn an_update_swaps_a_buffer_and_the_next_run_uses_it() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let mut host = sched.alloc_host::<u32>(N).unwrap();
        host.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        let out = sched.alloc_host::<u32>(N).unwrap();
        let (a, b, c) =
            (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
        let mut graph = sched
            .record(|s| {
                let args = [Arg::buffer(&a), Arg::buffer(&b), Arg::u32(N as u32), Arg::u32(2), Arg::u32(0)];
                s.task(0, 1).download(&a, 0, &host, ..).launch(&k, 1, BLOCK, 0, &args).submit()?;
                s.task(1, 1).after(TaskId(0)).readback(&out, .., &b, 0).submit()?;
                Ok(())
            })
            .unwrap();
        graph.run().unwrap();
        sched.synchronize().unwrap();
        let twice: Vec<u32> = (0..N).map(|i| affine_ref(gen(i), 2, 0)).collect();
        assert_eq!(out.read().to_vec(), twice);
        // The kernel now writes `c`, which nothing reads back: the output stays.
        graph.set_arg(TaskId(0), 1, 1, Arg::buffer(&c)).unwrap();
        out.read();
        graph.run().unwrap();
        sched.synchronize().unwrap();
        assert_eq!(out.read().to_vec(), twice);
    });
}

/// Moves every copy of a recorded DAG in place: downloads to a second input, readbacks
/// (and the downloads that read them) to a second output. The next run gives the loop's
/// outputs for the new input in the new output, element by element, and leaves the old
/// output alone; every edge still holds; the moved bytes are what runs claim now.
#[test]
fn moved_copies_run_on_their_new_bytes() {
    with_timeout(DEADLINE_S, || {
        for gpus in [1, 2] {
            let nodes = random_dag(40 + gpus as u64, 40);
            let case = format!("D={gpus}");
            let sched = Scheduler::builder().backend(sim(gpus)).streams(4).build().unwrap();
            let mut dag = Dag::new(&sched, nodes.len());
            let mut graph = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
            graph.run().unwrap();
            sched.synchronize().unwrap();
            same(&dag.out.read(), &reference(&nodes, 5, 1), &format!("{case}: recorded"));
            let mut input2 = sched.alloc_host::<u32>(nodes.len() * N).unwrap();
            // Another input: what a loop's next batch would download.
            input2.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen2(i));
            let mut out2 = sched.alloc_host::<u32>(nodes.len() * N).unwrap();
            out2.write().fill(SENTINEL);
            // Commands: 0 the download, 1 the launch, 2 the readback.
            for i in 0..nodes.len() {
                graph.set_copy(TaskId(i as u64), 2, &out2, i * N).unwrap();
            }
            for (i, node) in nodes.iter().enumerate() {
                match node.source {
                    Some(p) => graph.set_copy(TaskId(i as u64), 0, &out2, p * N).unwrap(),
                    None => graph.set_copy(TaskId(i as u64), 0, &input2, i * N).unwrap(),
                }
            }
            dag.out.write().fill(SENTINEL);
            graph.run().unwrap();
            let report = sched.synchronize().unwrap();
            same(&out2.read(), &reference_from(&nodes, gen2, 5, 1), &format!("{case}: moved"));
            assert!(dag.out.read().iter().all(|&x| x == SENTINEL), "{case}: the old output was written");
            check_edges(&nodes, &report);
            // A run now claims the new output: a live read guard there refuses it.
            let _guard = out2.read();
            match graph.run() {
                Err(Error::HostConflict { holder, .. }) => assert_eq!(holder, ConflictHolder::ReadGuard, "{case}"),
                other => panic!("{case}: expected HostConflict, got {other:?}"),
            }
        }
    });
}

/// A moved copy that would share written bytes with a task the graph does not order
/// with it, end past its buffer, or is no copy at all: each refused, naming the task,
/// and the graph runs as before.
#[test]
fn moved_copies_name_what_is_wrong() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let out = sched.alloc_host::<u32>(2 * N).unwrap();
        let (a, b) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
        let mut graph = sched
            .record(|s| {
                for i in 0..2u64 {
                    let args = [Arg::buffer(&a), Arg::buffer(&b), Arg::u32(N as u32), Arg::u32(2), Arg::u32(i as u32)];
                    let r = i as usize * N..(i as usize + 1) * N;
                    s.task(i, 1).launch(&k, 1, BLOCK, 0, &args).readback(&out, r, &b, 0).submit()?;
                }
                Ok(())
            })
            .unwrap();
        let e = graph.set_copy(TaskId(1), 1, &out, 0).unwrap_err();
        assert!(e.to_string().contains("task #0"), "{e}");
        assert_eq!(recording_problem(e), (Some(TaskId(1)), RecordingProblem::HostOverlap { other: TaskId(0) }));
        let e = graph.set_copy(TaskId(1), 1, &out, N + 1).unwrap_err();
        let bytes = 2 * N * 4;
        assert_eq!(
            recording_problem(e),
            (Some(TaskId(1)), RecordingProblem::HostRange { end: Some(bytes + 4), bytes })
        );
        let e = graph.set_copy(TaskId(1), 0, &out, 0).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(1)), RecordingProblem::NotACopy { command: 0 }));
        let e = graph.set_copy(TaskId(7), 1, &out, 0).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(7)), RecordingProblem::UnknownTask));
        graph.run().unwrap();
        sched.synchronize().unwrap();
        let got = out.read().to_vec();
        for i in 0..2 {
            assert!(got[i * N..(i + 1) * N].iter().all(|&x| x == i as u32), "task {i}");
        }
    });
}

/// A graph of two tasks: `affine` on the sim, then a readback.
fn small_graph(sched: &Scheduler, out: &HostBuffer<u32>, k: &KernelHandle) -> RecordedGraph {
    let (a, b) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
    sched
        .record(|s| {
            let args = [Arg::buffer(&a), Arg::buffer(&b), Arg::u32(N as u32), Arg::u32(2), Arg::u32(1)];
            s.task(0, 1).launch(k, 1, BLOCK, 0, &args).submit()?;
            s.task(1, 1).after(TaskId(0)).readback(out, .., &b, 0).submit()?;
            Ok(())
        })
        .unwrap()
}

fn recording_problem(e: Error) -> (Option<TaskId>, RecordingProblem) {
    match e {
        Error::Recording { task, problem } => (task, problem),
        other => panic!("expected Error::Recording, got {other}"),
    }
}

#[test]
fn updates_name_what_is_wrong() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let out = sched.alloc_host::<u32>(N).unwrap();
        let mut graph = small_graph(&sched, &out, &k);
        let e = graph.set_arg(TaskId(7), 0, 3, Arg::u32(1)).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(7)), RecordingProblem::UnknownTask));
        // What each argument takes: the kernel's declared parameters.
        assert_eq!(graph.param(TaskId(0), 0, 0).unwrap(), Param::Buffer);
        assert_eq!(graph.param(TaskId(0), 0, 3).unwrap(), Param::U32);
        let e = graph.param(TaskId(1), 0, 0).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(1)), RecordingProblem::NoSuchArgument { command: 0, arg: 0 }));
        let e = graph.param(TaskId(0), 0, 9).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(0)), RecordingProblem::NoSuchArgument { command: 0, arg: 9 }));
        let e = graph.set_arg(TaskId(1), 0, 0, Arg::u32(1)).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(1)), RecordingProblem::NoSuchArgument { command: 0, arg: 0 }));
        let e = graph.set_arg(TaskId(0), 0, 5, Arg::u32(1)).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(0)), RecordingProblem::NoSuchArgument { command: 0, arg: 5 }));
        let e = graph.set_arg(TaskId(0), 0, 3, Arg::f32(1.0)).unwrap_err();
        assert!(e.to_string().contains("argument 3 is a u32; an f32 given"), "{e}");
        assert_eq!(
            recording_problem(e),
            (Some(TaskId(0)), RecordingProblem::ArgumentKind { arg: 3, expected: "a u32", given: "an f32" })
        );
        // Still whole: it runs as recorded.
        graph.run().unwrap();
        sched.synchronize().unwrap();
        assert_eq!(out.read()[5], affine_ref(0, 2, 1));
    });
}

#[test]
fn recording_refuses_what_a_graph_cannot_take_and_ends_cleanly() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let out = sched.alloc_host::<u32>(N).unwrap();
        let d = sched.alloc::<u32>(N).unwrap();
        // A callback: refused, naming the task; the recording ends with the body.
        let e = sched
            .record(|s| {
                s.task(0, 1).readback(&out, .., &d, 0).submit()?;
                s.task(1, 1).callback(Resource::Cpu, |_| Ok(())).submit()?;
                Ok(())
            })
            .unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(1)), RecordingProblem::NotRecordable));
        // A task placed on a GPU by its user: refused too (a graph places its tasks).
        let e =
            sched.record(|s| s.task(0, 1).prefer_gpu(0).readback(&out, .., &d, 0).submit().map(|_| ())).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(0)), RecordingProblem::NotRecordable));
        // Nothing submitted: empty.
        let e = sched.record(|_| Ok(())).unwrap_err();
        assert_eq!(recording_problem(e), (None, RecordingProblem::Empty));
        // Nested.
        let e = sched
            .record(|s| {
                let inner = s.record(|_| Ok(())).unwrap_err();
                assert_eq!(recording_problem(inner), (None, RecordingProblem::Nested));
                s.task(0, 1).readback(&out, .., &d, 0).submit()?;
                Ok(())
            })
            .map(|g| g.tasks());
        assert_eq!(e.unwrap(), 1);
        // A panic in the body ends the recording too.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = sched.record(|s| {
                s.task(0, 1).readback(&out, .., &d, 0).submit()?;
                panic!("the body panics");
            });
        }));
        assert!(caught.is_err());
        // The scheduler runs plain tasks again, and an open batch refuses a recording.
        sched.task(5, 1).readback(&out, .., &d, 0).submit().unwrap();
        let e = sched.record(|_| Ok(())).unwrap_err();
        assert_eq!(recording_problem(e), (None, RecordingProblem::BatchOpen { tasks: 1 }));
        assert_eq!(sched.synchronize().unwrap().tasks, 1);
        let graph = small_graph(&sched, &out, &k);
        graph.run().unwrap();
        sched.synchronize().unwrap();
    });
}

#[test]
fn a_failing_node_is_named_and_the_graph_runs_again() {
    with_timeout(DEADLINE_S, || {
        // Task 0's launch fails: task 1, after it, does not run.
        let faults = SimFaults::default().fail_command(TaskId(0), 0);
        let sched =
            Scheduler::builder().backend(Backend::SimWith(SimProfile::h100().with_faults(faults))).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let mut out = sched.alloc_host::<u32>(N).unwrap();
        out.write().fill(SENTINEL);
        let graph = small_graph(&sched, &out, &k);
        for _ in 0..2 {
            graph.run().unwrap();
            match sched.synchronize() {
                Err(Error::TasksFailed { failures, .. }) => {
                    assert!(failures.iter().any(|f| f.task == TaskId(0) && f.command == 0), "{failures:?}");
                    assert!(
                        failures.iter().any(|f| f.task == TaskId(1) && f.message.contains("not run")),
                        "{failures:?}"
                    );
                }
                other => panic!("expected TasksFailed, got {:?}", other.map(|r| r.tasks)),
            }
            assert!(out.read().iter().all(|&x| x == SENTINEL));
        }
    });
}

#[test]
fn runs_and_guards_meet_as_tasks_and_guards_do() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let mut out = sched.alloc_host::<u32>(N).unwrap();
        let graph = small_graph(&sched, &out, &k);
        // A live read guard on bytes a run writes: refused, naming the guard.
        {
            let _guard = out.read();
            match graph.run() {
                Err(Error::HostConflict { task, holder, .. }) => {
                    assert_eq!((task, holder), (TaskId(0), ConflictHolder::ReadGuard));
                }
                other => panic!("expected HostConflict, got {other:?}"),
            }
        }
        // A read guard waits for the run: the values are there without synchronize.
        graph.run().unwrap();
        assert_eq!(out.read()[3], affine_ref(0, 2, 1));
        sched.synchronize().unwrap();
        // A write guard too is met by a run.
        {
            let mut guard = out.write();
            guard[0] = 1;
            let e = graph.run().unwrap_err();
            assert!(e.to_string().contains("live write guard"), "{e}");
        }
        // A task submitted against a run in flight (its kernel takes 300 ms on the sim)
        // is refused, naming the run; the run goes on.
        let slow = affine_kernel().sim_cost(|_, _| std::time::Duration::from_millis(300));
        let slow = sched.register_kernel(slow).unwrap();
        let slow_graph = small_graph(&sched, &out, &slow);
        let d = sched.alloc::<u32>(N).unwrap();
        slow_graph.run().unwrap();
        match sched.task(9, 1).readback(&out, .., &d, 0).submit() {
            Err(Error::HostConflict { task, holder, .. }) => {
                assert_eq!((task, holder), (TaskId(9), ConflictHolder::RecordedRun));
            }
            other => panic!("expected HostConflict, got {other:?}"),
        }
        sched.synchronize().unwrap();
    });
}

/// On a CUDA GPU: a recorded DAG gives the loop's outputs run after run at S ∈ {1, 4};
/// its first run builds the part's graph, later runs launch it again unchanged, and a
/// run after an update sets the changed nodes in place (then launches it unchanged),
/// kernel arguments and moved copies alike.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_recorded_dags_match_the_loop_and_keep_their_graph() {
    with_timeout(DEADLINE_S, || {
        for streams in [1, 4] {
            let nodes = random_dag(200 + streams as u64, 60);
            let case = format!("S={streams}");
            let sched = Scheduler::builder().backend(Backend::Cuda).streams(streams).build().unwrap();
            let mut dag = Dag::new(&sched, nodes.len());
            dag.submit(&sched, &nodes, 3, 7).unwrap();
            sched.synchronize().unwrap();
            same(&dag.out.read(), &reference(&nodes, 3, 7), &format!("{case}: the loop"));
            let mut graph = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
            let mut setups = Vec::new();
            for run in 0..3 {
                dag.out.write_range(..).unwrap().fill(SENTINEL);
                graph.run().unwrap();
                let report = sched.synchronize().unwrap();
                same(&dag.out.read(), &reference(&nodes, 5, 1), &format!("{case} run {run}"));
                setups.extend(report.windows.iter().map(|w| w.setup));
                // Its tasks copy: the device executor cannot run it, and the report says so.
                assert!(report.windows.iter().all(|w| w.way == Some(WayChosen::GraphOnly)), "{case}: {report}");
            }
            for i in 0..nodes.len() {
                graph.set_arg(TaskId(i as u64), 1, 3, Arg::u32(9u32.wrapping_add(i as u32))).unwrap();
            }
            for run in 0..2 {
                graph.run().unwrap();
                let report = sched.synchronize().unwrap();
                same(&dag.out.read(), &reference(&nodes, 9, 1), &format!("{case} updated, run {run}"));
                setups.extend(report.windows.iter().map(|w| w.setup));
            }
            // The downloads of the tasks that read the input move to a second input:
            // the next run sets those copy nodes, then launches the graph unchanged.
            let mut input2 = sched.alloc_host::<u32>(nodes.len() * N).unwrap();
            input2.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen2(i));
            let mut moved = 0;
            for (i, node) in nodes.iter().enumerate() {
                if node.source.is_none() {
                    graph.set_copy(TaskId(i as u64), 0, &input2, i * N).unwrap();
                    moved += 1;
                }
            }
            for run in 0..2 {
                graph.run().unwrap();
                let report = sched.synchronize().unwrap();
                same(&dag.out.read(), &reference_from(&nodes, gen2, 9, 1), &format!("{case} moved, run {run}"));
                setups.extend(report.windows.iter().map(|w| w.setup));
            }
            eprintln!("{case}: graphs {setups:?}");
            let n = nodes.len();
            assert_eq!(
                setups,
                [
                    GraphSetup::Built,
                    GraphSetup::Reused,
                    GraphSetup::Reused,
                    GraphSetup::Updated { nodes: n },
                    GraphSetup::Reused,
                    GraphSetup::Updated { nodes: moved },
                    GraphSetup::Reused
                ],
                "{case}"
            );
        }
    });
}

/// Lanes past S only where their copies fit the budget: a graph of wide work on a
/// 4 MiB buffer (126 more copies would take 504 MiB) stays on S lanes, one on a small
/// buffer takes more; both give the loop's outputs.
#[test]
fn lanes_past_s_only_where_their_copies_are_small() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).streams(2).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let out = sched.alloc_host::<u32>(8 * N).unwrap();
        for (elements, wide) in [(1 << 20, false), (N, true)] {
            let (a, b) = (sched.alloc::<u32>(elements).unwrap(), sched.alloc::<u32>(elements).unwrap());
            let graph = sched
                .record(|s| {
                    for i in 0..8u64 {
                        let args =
                            [Arg::buffer(&a), Arg::buffer(&b), Arg::u32(N as u32), Arg::u32(3), Arg::u32(i as u32)];
                        let r = i as usize * N..(i as usize + 1) * N;
                        s.task(i, 1).launch(&k, 1, BLOCK, 0, &args).readback(&out, r, &b, 0).submit()?;
                    }
                    Ok(())
                })
                .unwrap();
            graph.run().unwrap();
            let report = sched.synchronize().unwrap();
            let lanes = report.windows[0].lanes;
            assert_eq!(lanes > 2, wide, "{elements} elements: {lanes} lanes");
            // `a` holds zeros on every lane's copy: each task writes b = 0 * 3 + i.
            let got = out.read().to_vec();
            for i in 0..8 {
                assert!(got[i * N..(i + 1) * N].iter().all(|&x| x == i as u32), "{elements} elements: task {i}");
            }
        }
    });
}

/// On a CUDA GPU: a recorded graph of one-launch tasks of one block shape (what the
/// device executor runs) tries both ways, four runs each (a warm-up and three measured),
/// then keeps one: the setups read Built, Reused ×3, Device ×4, then the kept way's
/// (Reused or Device) for good.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_recorded_graph_tries_the_device_and_keeps_the_faster_way() {
    tries_both_ways_and_keeps_the_faster(false);
}

/// The same with `device_timing`: every run is timed on the GPU, within its span, and
/// the trial reads those times.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_recorded_graph_timed_on_the_gpu_keeps_the_faster_way_by_those_times() {
    tries_both_ways_and_keeps_the_faster(true);
}

fn tries_both_ways_and_keeps_the_faster(device_timing: bool) {
    with_timeout(DEADLINE_S, move || {
        let sched = Scheduler::builder().backend(Backend::Cuda).device_timing(device_timing).build().unwrap();
        let k = sched.register_kernel(mix_kernel()).unwrap();
        let x = sched.alloc::<u32>(N).unwrap();
        let graph = sched
            .record(|s| {
                for i in 0..256u64 {
                    let t = s.task(i, 1);
                    let t = if i % 4 > 0 { t.after(TaskId(i - 1)) } else { t };
                    t.launch(&k, 1, BLOCK, 0, &[Arg::buffer(&x), Arg::u32(N as u32), Arg::u32(i as u32)]).submit()?;
                }
                Ok(())
            })
            .unwrap();
        let mut windows = Vec::new();
        for _ in 0..12 {
            graph.run().unwrap();
            let report = sched.synchronize().unwrap();
            assert!(report.windows.iter().all(|w| !w.failed));
            windows.extend(report.windows.iter().cloned());
        }
        let setups: Vec<GraphSetup> = windows.iter().map(|w| w.setup).collect();
        eprintln!("graphs {setups:?}");
        // A warm-up and three measured runs of each way, then the faster way's best.
        let reused = GraphSetup::Reused;
        let device = GraphSetup::Device;
        assert_eq!(setups[..8], [GraphSetup::Built, reused, reused, reused, device, device, device, device]);
        let kept = setups[8];
        assert!(matches!(kept, GraphSetup::Reused | GraphSetup::Device), "{setups:?}");
        assert!(setups[8..].iter().all(|&s| s == kept), "{setups:?}");
        // Each run says why: its trial run, then the way kept with the best measured
        // runs of each way, which are the report's own times of runs 2-4 and 6-8 (with
        // `device_timing` their times on the GPU, else their spans).
        for (i, w) in windows[..8].iter().enumerate() {
            let want = WayChosen::Trying { device: i >= 4, run: (i % 4) as u8 + 1, of: 4 };
            assert_eq!(w.way, Some(want), "run {i}: {w}");
        }
        for w in &windows {
            match w.gpu_ns {
                // The GPU's timer ticks in 0.5 µs or finer; its pair lies inside the span.
                Some(ns) => assert!(device_timing && ns > 0 && ns <= w.duration_ns() + 1_000, "{w}"),
                None => assert!(!device_timing, "a run not timed on the GPU: {w}"),
            }
        }
        let best = |runs: &[ReplayedWindow]| runs.iter().map(|w| w.run_ns()).min().unwrap();
        let (graph_ns, device_ns) = (best(&windows[1..4]), best(&windows[5..8]));
        let want = if kept == device {
            WayChosen::Device { device_ns, graph_ns }
        } else {
            WayChosen::Graph { graph_ns, device_ns }
        };
        assert_eq!(want == WayChosen::Device { device_ns, graph_ns }, device_ns < graph_ns);
        for w in &windows[8..] {
            assert_eq!(w.way, Some(want), "{w}");
        }
        eprintln!("{}", windows[8]);
    });
}

/// On a CUDA GPU: a recorded chain of one-launch tasks gives the loop's outputs on
/// every run, the device's included: the first device run uploads the part's image,
/// the next ones run it again with only its counters reset, and a run after an update
/// uploads the new arguments' image (runs 4–7 go to the device, as the trial above
/// says; updates before runs 4 and 7).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_device_runs_again_and_after_updates_give_the_loops_outputs() {
    with_timeout(DEADLINE_S, || {
        const M: usize = 1000;
        const CHAIN: u32 = 64;
        // One stream: the resets' and readbacks' tasks and the graph share x's one copy.
        let sched = Scheduler::builder().backend(Backend::Cuda).streams(1).build().unwrap();
        let k = sched.register_kernel(mix_kernel()).unwrap();
        let mut input = sched.alloc_host::<u32>(M).unwrap();
        input.write().iter_mut().enumerate().for_each(|(i, v)| *v = gen(i));
        let out = sched.alloc_host::<u32>(M).unwrap();
        let x = sched.alloc::<u32>(M).unwrap();
        let mut graph = sched
            .record(|s| {
                for t in 0..CHAIN {
                    let task = s.task(t as u64, 1);
                    let task = if t > 0 { task.after(TaskId(t as u64 - 1)) } else { task };
                    task.launch(&k, grid(M), BLOCK, 0, &[Arg::buffer(&x), Arg::u32(M as u32), Arg::u32(t)]).submit()?;
                }
                Ok(())
            })
            .unwrap();
        let reference = |salt: u32| -> Vec<u32> {
            (0..M).map(|i| (0..CHAIN).fold(gen(i), |v, t| mix_ref(v, t + salt, i))).collect()
        };
        let (mut setups, mut salt) = (Vec::new(), 0);
        for run in 0..12u32 {
            if run == 4 || run == 7 {
                salt = run * 1000;
                for t in 0..CHAIN {
                    graph.set_arg(TaskId(t as u64), 0, 2, Arg::u32(t + salt)).unwrap();
                }
            }
            sched.task(10_000, 1).download(&x, 0, &input, ..).submit().unwrap();
            sched.synchronize().unwrap();
            graph.run().unwrap();
            let report = sched.synchronize().unwrap();
            assert!(report.windows.iter().all(|w| !w.failed), "run {run}: {report}");
            setups.extend(report.windows.iter().map(|w| w.setup));
            sched.task(10_001, 1).readback(&out, .., &x, 0).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
            sched.synchronize().unwrap();
            same(&out.read(), &reference(salt), &format!("run {run} (setups {setups:?})"));
        }
        eprintln!("graphs {setups:?}");
        assert_eq!(setups.len(), 12, "one part a run: {setups:?}");
        assert!(setups[4..8].iter().all(|&s| s == GraphSetup::Device), "{setups:?}");
    });
}

/// An update's device buffer gets its copies of the lanes past S where the part runs on
/// them (else a lane would name a copy that does not exist), and a buffer of another
/// scheduler is refused.
#[test]
fn an_updated_buffer_runs_on_every_lane_and_must_be_this_schedulers() {
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(sim(1)).streams(1).build().unwrap();
        let k = sched.register_kernel(affine_kernel()).unwrap();
        let out = sched.alloc_host::<u32>(4 * N).unwrap();
        let (a, b) = (sched.alloc::<u32>(N).unwrap(), sched.alloc::<u32>(N).unwrap());
        let mut graph = sched
            .record(|s| {
                for i in 0..4u64 {
                    let args = [Arg::buffer(&a), Arg::buffer(&b), Arg::u32(N as u32), Arg::u32(3), Arg::u32(i as u32)];
                    let r = i as usize * N..(i as usize + 1) * N;
                    s.task(i, 1).launch(&k, 1, BLOCK, 0, &args).readback(&out, r, &b, 0).submit()?;
                }
                Ok(())
            })
            .unwrap();
        let c = sched.alloc::<u32>(N).unwrap();
        for i in 0..4 {
            graph.set_arg(TaskId(i), 0, 0, Arg::buffer(&c)).unwrap();
        }
        graph.run().unwrap();
        let report = sched.synchronize().unwrap();
        assert!(report.windows[0].lanes > 1, "{:?}", report.windows);
        let got = out.read().to_vec();
        for i in 0..4 {
            assert!(got[i * N..(i + 1) * N].iter().all(|&x| x == i as u32), "task {i}");
        }
        let other = Scheduler::builder().backend(sim(1)).build().unwrap();
        let foreign = other.alloc::<u32>(N).unwrap();
        let e = graph.set_arg(TaskId(0), 0, 0, Arg::buffer(&foreign)).unwrap_err();
        assert_eq!(recording_problem(e), (Some(TaskId(0)), RecordingProblem::OtherScheduler));
    });
}

/// A run of a kept graph queued while its GPU's dispatcher waits (parked, the batch
/// before long ended) is launched by the thread that calls `run`, as a hand-written
/// graph is, and gives the loop's outputs; a part's first run, and the first after an
/// update, are the dispatcher's (they lower the part); then the caller again.
fn runs_launched_by_the_caller(backend: Backend) {
    let nodes = random_dag(77, 40);
    let sched = Scheduler::builder().backend(backend).streams(4).build().unwrap();
    let mut dag = Dag::new(&sched, nodes.len());
    let mut graph = sched.record(|s| dag.submit(s, &nodes, 5, 1)).unwrap();
    let mut run = |graph: &RecordedGraph, a: u32, what: &str| {
        // The dispatcher parks 200 µs after its last work: long past here.
        std::thread::sleep(std::time::Duration::from_millis(20));
        dag.out.write_range(..).unwrap().fill(SENTINEL);
        graph.run().unwrap();
        let report = sched.synchronize().unwrap();
        same(&dag.out.read(), &reference(&nodes, a, 1), what);
        let by: Vec<LaunchedBy> = report.windows.iter().map(|w| w.launched_by).collect();
        assert!(by.windows(2).all(|p| p[0] == p[1]), "{what}: {by:?}");
        by[0]
    };
    assert_eq!(run(&graph, 5, "the first run"), LaunchedBy::Dispatcher);
    assert_eq!(run(&graph, 5, "the second run"), LaunchedBy::Caller);
    assert_eq!(run(&graph, 5, "the third run"), LaunchedBy::Caller);
    for i in 0..nodes.len() {
        graph.set_arg(TaskId(i as u64), 1, 3, Arg::u32(8u32.wrapping_add(i as u32))).unwrap();
    }
    assert_eq!(run(&graph, 8, "the first run after an update"), LaunchedBy::Dispatcher);
    assert_eq!(run(&graph, 8, "the second run after an update"), LaunchedBy::Caller);
}

#[test]
fn runs_queued_while_the_dispatcher_waits_are_launched_by_the_caller() {
    with_timeout(DEADLINE_S, || runs_launched_by_the_caller(sim(1)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_runs_queued_while_the_dispatcher_waits_are_launched_by_the_caller() {
    with_timeout(DEADLINE_S, || runs_launched_by_the_caller(Backend::Cuda));
}
