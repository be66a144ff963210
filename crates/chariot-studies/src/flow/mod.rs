//! Replay's groundwork: cudaFlow's five micro-benchmark shapes (Lin and Huang,
//! cudaFlow, §4.1) as task graphs of tiny kernels, run by chariot (one task per node,
//! edges by [`chariot::TaskBuilder::after`]) and by one hand-written CUDA graph of the
//! same shape ([`HandGraph`]), so that the launch cost of small tasks can be compared
//! before graph replay exists.
//!
//! * [`Shape::Lc`], linear chain: `size` nodes, node `i` after node `i − 1`.
//! * [`Shape::Ep`], embarrassing parallelism: `size` independent nodes.
//! * [`Shape::Dc`], divide and conquer: a complete binary tree of depth `size`
//!   (2^size − 1 nodes), edges parent → children only, no joins back. This is the
//!   graph cudaFlow measured: its Table 1 counts 393,209 nodes + edges at 16 levels,
//!   which is 3 × 65,535 operations, 2 × 65,535 edges inside the nodes and 65,534 tree
//!   edges.
//! * [`Shape::Mr`], map-reduce: `size` iterations of 16 mappers and one reducer; each
//!   mapper of iteration `k > 0` after the reducer of iteration `k − 1`, the reducer
//!   after its 16 mappers.
//! * [`Shape::Dag`], random DAG: `size` levels of 1 to [`DAG_WIDTH`] nodes (uniform,
//!   seeded); each node of a level but the last has 1 to 5 edges (uniform) to distinct
//!   nodes of the next level. Nodes of the next level that no edge reaches are roots.
//! * [`Shape::Rnd`], MUSTARD's generated graphs (Turimbetov et al., ICS 2025, §5.1): `size` nodes,
//!   node `i` after 0 to [`RND_DEGREE`] × 2 distinct earlier nodes (uniform, so
//!   [`RND_DEGREE`] on average), drawn among the [`RND_WINDOW`] nodes before it.
//!
//! Nodes are numbered in a topological order (every edge goes from a lower to a higher
//! number), which is the order chariot's tasks are submitted in; the task id of node
//! `i` is `i`.
//!
//! Every node is one launch of [`spin_kernel`] (one block of [`BLOCK`] threads unless
//! [`ChariotFlow::blocks`] and the hand-written graph's `blocks` say more, `iters`
//! iterations of two dependent FMAs per thread) on no data: the only buffer is a
//! one-float sink that thread 0 writes the result into, so the loop is not compiled
//! away. chariot's sink is a virtual [`chariot::DeviceBuffer`] (one copy per GPU and
//! stream slot, no dependencies inferred, no copies); the CUDA graph's one device float.
//! There are no copies, so what is measured is the launch and the dependency handling.
//! `iters` is taken as given, not calibrated to a time.
//!
//! [`DeviceGraph`] runs the same graphs without the host in the loop (Giles' scheme):
//! the graph in device memory, a persistent kernel per GPU taking ready nodes from a
//! queue and running the spin kernel's body in place of a launch.

mod cuda;
mod device;

pub use cuda::{HandGraph, HandTiming};
pub use device::{DeviceCsr, DeviceGraph, DeviceTiming, DEFAULT_TIMEOUT};

use chariot::graph::RecordedGraph;
use chariot::kernel::{KernelHandle, LaunchShape, ScalarArgs};
use chariot::report::Report;
use chariot::{Arg, DeviceBuffer, Kernel, Param, Result, Scheduler};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// Threads of the one block each node's kernel runs.
pub const BLOCK: u32 = 128;

/// Mappers per map-reduce iteration (cudaFlow's 16).
pub const MAPPERS: usize = 16;

/// The most nodes a random DAG level holds (cudaFlow's 50).
pub const DAG_WIDTH: usize = 50;

/// The most edges a random DAG node has to the next level (cudaFlow's 5).
pub const DAG_FAN_OUT: usize = 5;

/// The average predecessors of a [`Shape::Rnd`] node.
pub const RND_DEGREE: usize = 2;

/// How far back a [`Shape::Rnd`] node draws its predecessors.
pub const RND_WINDOW: usize = 64;

/// The spin kernel's CUDA C: `flow_spin(float* sink, unsigned iters)`.
pub const SPIN_SOURCE: &str = r#"extern "C" __global__ void flow_spin(float* sink, unsigned iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f;
    for (unsigned i = 0; i < iters; ++i) {
        a = fmaf(a, b, 1e-4f);
        b = fmaf(b, 0.9999f, 1e-5f);
    }
    if (threadIdx.x == 0) sink[0] = a + b;
}"#;

/// The simulated cost of one node: a fixed 2 µs plus 1 ns per iteration (a guess for
/// the sim backend, not a calibration).
fn sim_cost(_: &LaunchShape, s: &ScalarArgs<'_>) -> Duration {
    Duration::from_nanos(2_000 + s.u32(1).unwrap_or(0) as u64)
}

/// What thread 0 of [`spin_kernel`] writes to the sink, computed on the CPU (the twin).
pub fn spin_value(iters: u32) -> f32 {
    let (mut a, mut b) = (0.0f32, 1.0001f32);
    for _ in 0..iters {
        a = a.mul_add(b, 1e-4);
        b = b.mul_add(0.9999, 1e-5);
    }
    a + b
}

/// The node kernel, `flow_spin(float* sink, unsigned iters)`, launched as one block of
/// [`BLOCK`] threads; its CPU twin writes [`spin_value`] to the sink.
pub fn spin_kernel() -> Kernel {
    Kernel::new("flow_spin", SPIN_SOURCE)
        .params([Param::Buffer, Param::U32])
        .cpu_twin(|a| {
            let v = spin_value(a.u32(1)?);
            let sink = a.buffer_mut::<f32>(0)?;
            if let Some(s) = sink.first_mut() {
                *s = v;
            }
            Ok(())
        })
        .sim_cost(sim_cost)
}

/// One of cudaFlow's micro-benchmark shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Linear chain of `size` nodes.
    Lc,
    /// `size` independent nodes.
    Ep,
    /// Complete binary tree of depth `size`, parent → children.
    Dc,
    /// `size` iterations of 16 mappers and a reducer.
    Mr,
    /// Random DAG of `size` levels.
    Dag,
    /// MUSTARD-style generated graph of `size` nodes.
    Rnd,
}

impl Shape {
    /// Every shape, in cudaFlow's order of presentation.
    pub const ALL: [Shape; 6] = [Shape::Lc, Shape::Ep, Shape::Dc, Shape::Mr, Shape::Dag, Shape::Rnd];

    /// The short name (`lc`, `ep`, `dc`, `mr`, `dag`, `rnd`).
    pub fn name(self) -> &'static str {
        match self {
            Shape::Lc => "lc",
            Shape::Ep => "ep",
            Shape::Dc => "dc",
            Shape::Mr => "mr",
            Shape::Dag => "dag",
            Shape::Rnd => "rnd",
        }
    }

    /// The shape of a short name.
    pub fn from_name(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }

    /// What `size` counts for this shape.
    pub fn size_meaning(self) -> &'static str {
        match self {
            Shape::Lc | Shape::Ep | Shape::Rnd => "nodes",
            Shape::Dc => "depth",
            Shape::Mr => "iterations",
            Shape::Dag => "levels",
        }
    }
}

/// A task graph: `nodes` nodes numbered in topological order and its edges
/// (predecessor, successor), each with predecessor < successor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    /// The shape it was built as.
    pub shape: Shape,
    /// The size parameter it was built with.
    pub size: usize,
    /// Number of nodes.
    pub nodes: usize,
    /// Edges (predecessor, successor), predecessor < successor, no duplicates.
    pub edges: Vec<(usize, usize)>,
    /// The random DAG's level sizes, first to last (nodes numbered level by level);
    /// empty for the other shapes.
    pub levels: Vec<usize>,
}

impl Graph {
    /// Builds `shape` at `size` (see the module's documentation; `seed` is used by the
    /// random DAG only).
    ///
    /// # Errors
    /// [`chariot::Error::InvalidConfig`] for a size of 0, or a tree deeper than 24.
    pub fn new(shape: Shape, size: usize, seed: u64) -> Result<Graph> {
        let max = if shape == Shape::Dc { 24 } else { 1 << 24 };
        if size == 0 || size > max {
            return Err(chariot::Error::InvalidConfig {
                name: "size",
                value: size.to_string(),
                allowed: format!("1..={max} {} for {}", shape.size_meaning(), shape.name()),
            });
        }
        let mut levels = Vec::new();
        let (nodes, edges) = match shape {
            Shape::Lc => (size, (1..size).map(|i| (i - 1, i)).collect()),
            Shape::Ep => (size, Vec::new()),
            Shape::Dc => {
                let n = (1usize << size) - 1;
                (n, (1..n).map(|c| ((c - 1) / 2, c)).collect())
            }
            Shape::Mr => {
                let per = MAPPERS + 1;
                let mut edges = Vec::with_capacity(size * 2 * MAPPERS);
                for k in 0..size {
                    let base = k * per;
                    for m in 0..MAPPERS {
                        if k > 0 {
                            edges.push((base - 1, base + m));
                        }
                        edges.push((base + m, base + MAPPERS));
                    }
                }
                edges.sort_unstable_by_key(|&(p, s)| (s, p));
                (size * per, edges)
            }
            Shape::Dag => {
                let (sizes, edges) = random_dag(size, DAG_WIDTH, seed);
                levels = sizes;
                (levels.iter().sum(), edges)
            }
            Shape::Rnd => (size, generated(size, seed)),
        };
        Ok(Graph { shape, size, nodes, edges, levels })
    }

    /// Nodes on its longest chain: how many nodes run one after another however many
    /// GPUs run the rest, so no schedule beats this many node times.
    pub fn longest_chain(&self) -> usize {
        let mut chain = vec![1usize; self.nodes];
        // Edges go from a lower number to a higher one: in order of the successor, each
        // predecessor's chain is final when read.
        let mut edges = self.edges.clone();
        edges.sort_unstable_by_key(|&(a, b)| (b, a));
        for (a, b) in edges {
            chain[b] = chain[b].max(chain[a] + 1);
        }
        chain.into_iter().max().unwrap_or(0)
    }

    /// Each node's predecessors, ascending.
    pub fn predecessors(&self) -> Vec<Vec<usize>> {
        let mut p = vec![Vec::new(); self.nodes];
        for &(a, b) in &self.edges {
            p[b].push(a);
        }
        p.iter_mut().for_each(|v| v.sort_unstable());
        p
    }
}

/// `levels` levels of 1..=`width` nodes, each node but the last level's with
/// 1..=[`DAG_FAN_OUT`] edges to distinct nodes of the next level: the level sizes and
/// the edges.
fn random_dag(levels: usize, width: usize, seed: u64) -> (Vec<usize>, Vec<(usize, usize)>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let sizes: Vec<usize> = (0..levels).map(|_| rng.random_range(1..=width)).collect();
    let mut start = 0;
    let mut edges = Vec::new();
    for l in 0..levels {
        let next = start + sizes[l];
        if l + 1 < levels {
            for node in start..next {
                let k = rng.random_range(1..=DAG_FAN_OUT.min(sizes[l + 1]));
                let mut to: Vec<usize> =
                    rand::seq::index::sample(&mut rng, sizes[l + 1], k).into_iter().map(|j| next + j).collect();
                to.sort_unstable();
                edges.extend(to.into_iter().map(|t| (node, t)));
            }
        }
        start = next;
    }
    (sizes, edges)
}

/// MUSTARD-style edges over `nodes` nodes: node `i` after 0..=2·[`RND_DEGREE`] distinct
/// nodes among the [`RND_WINDOW`] before it, sorted by successor, then predecessor.
fn generated(nodes: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut edges = Vec::new();
    for i in 1..nodes {
        let from = i.saturating_sub(RND_WINDOW);
        let k = rng.random_range(0..=2 * RND_DEGREE).min(i - from);
        let mut preds: Vec<usize> =
            rand::seq::index::sample(&mut rng, i - from, k).into_iter().map(|j| from + j).collect();
        preds.sort_unstable();
        edges.extend(preds.into_iter().map(|p| (p, i)));
    }
    edges
}

/// One chariot run of a graph.
#[derive(Debug)]
pub struct ChariotRun {
    /// The batch's report (records, edges).
    pub report: Report,
    /// Host time from the first submit to `synchronize`'s return, in ns.
    pub wall_ns: u64,
    /// Of it, the time to the last submit's return, in ns.
    pub submit_ns: u64,
}

/// The task id of [`ChariotFlow::sink_address`]'s batch of one (above any node's).
pub const SINK_PROBE_TASK: u64 = u64::MAX - 1;

/// What chariot needs to run graphs: the registered kernel and the sink.
#[derive(Debug)]
pub struct ChariotFlow {
    kernel: KernelHandle,
    sink: DeviceBuffer<f32>,
    blocks: u32,
}

impl ChariotFlow {
    /// Registers [`spin_kernel`] on `sched` and allocates the one-float sink.
    ///
    /// # Errors
    /// What `register_kernel` and `alloc` return.
    pub fn new(sched: &Scheduler) -> Result<ChariotFlow> {
        Ok(ChariotFlow { kernel: sched.register_kernel(spin_kernel())?, sink: sched.alloc::<f32>(1)?, blocks: 1 })
    }

    /// Every node's launch `blocks` blocks (at least 1; 1 unless set): nodes as wide as
    /// a GPU, where cudaFlow's and MUSTARD's are one block.
    pub fn blocks(mut self, blocks: u32) -> ChariotFlow {
        self.blocks = blocks.max(1);
        self
    }

    /// Every node's launch's blocks (what [`ChariotFlow::blocks`] set).
    pub fn blocks_per_node(&self) -> u32 {
        self.blocks
    }

    /// The one-float buffer every launch writes.
    pub fn sink(&self) -> &DeviceBuffer<f32> {
        &self.sink
    }

    /// Where launches on `sched`'s first GPU write: the device address of the sink's
    /// copy for the stream slot that a batch of one GPU callback ran on, and that slot
    /// (a replayed or recorded graph's lane `l` writes slot `l`'s copy); `None` on the
    /// sim. Runs that batch (task [`SINK_PROBE_TASK`]) and synchronizes.
    ///
    /// # Errors
    /// What `submit` and `synchronize` return.
    pub fn sink_address(&self, sched: &Scheduler) -> Result<Option<(u64, usize)>> {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
        let (into, sink) = (seen.clone(), self.sink.clone());
        sched
            .task(SINK_PROBE_TASK, 1)
            .gpu_callback(move |call| {
                let at = call.device_ptr(&sink).map(|p| (p, call.info().stream));
                *into.lock().map_err(|_| "the sink probe's result was poisoned")? = at;
                Ok(())
            })
            .submit()?;
        sched.synchronize()?;
        let at = *seen.lock().map_err(|_| chariot::Error::CudaUnavailable { reason: "sink probe poisoned".into() })?;
        Ok(at)
    }

    /// Runs `graph` on `sched` as one batch: node `i` is task `i` (granularity 1), one
    /// launch of the spin kernel with `iters`, after its predecessors by
    /// [`chariot::TaskBuilder::after`]; submits every node, then synchronizes.
    ///
    /// # Errors
    /// What `submit` and `synchronize` return.
    pub fn run(&self, sched: &Scheduler, graph: &Graph, iters: u32) -> Result<ChariotRun> {
        let preds = graph.predecessors();
        let args = [Arg::buffer(&self.sink), Arg::u32(iters)];
        let t0 = Instant::now();
        for (i, p) in preds.iter().enumerate() {
            sched
                .task(i as u64, 1)
                .after_all(p.iter().map(|&j| chariot::TaskId(j as u64)))
                .launch(&self.kernel, self.blocks, BLOCK, 0, &args)
                .submit()?;
        }
        let submit_ns = t0.elapsed().as_nanos() as u64;
        let report = sched.synchronize()?;
        Ok(ChariotRun { report, wall_ns: t0.elapsed().as_nanos() as u64, submit_ns })
    }

    /// Records `graph` once on `sched` ([`Scheduler::record`]): the same tasks
    /// [`ChariotFlow::run`] submits, as a graph to run many times; with the time it took.
    ///
    /// # Errors
    /// What `record` returns.
    pub fn record(&self, sched: &Scheduler, graph: &Graph, iters: u32) -> Result<(RecordedGraph, u64)> {
        let preds = graph.predecessors();
        let args = [Arg::buffer(&self.sink), Arg::u32(iters)];
        let t0 = Instant::now();
        let recorded = sched.record(|s| {
            for (i, p) in preds.iter().enumerate() {
                s.task(i as u64, 1)
                    .after_all(p.iter().map(|&j| chariot::TaskId(j as u64)))
                    .launch(&self.kernel, self.blocks, BLOCK, 0, &args)
                    .submit()?;
            }
            Ok(())
        })?;
        Ok((recorded, t0.elapsed().as_nanos() as u64))
    }

    /// One run of a recorded graph: [`RecordedGraph::run`], then `synchronize`.
    ///
    /// # Errors
    /// What `run` and `synchronize` return.
    pub fn run_recorded(&self, sched: &Scheduler, recorded: &RecordedGraph) -> Result<ChariotRun> {
        let t0 = Instant::now();
        recorded.run()?;
        let submit_ns = t0.elapsed().as_nanos() as u64;
        let report = sched.synchronize()?;
        Ok(ChariotRun { report, wall_ns: t0.elapsed().as_nanos() as u64, submit_ns })
    }
}

/// Every edge of `graph` that `report`'s timeline does not honour: the successor's
/// first command dispatched or started before the predecessor's last command ended, or
/// either node missing from the records. Empty when every edge holds. In a batch
/// replayed as graphs a task is dispatched with its whole window, so only starts count;
/// on CUDA a replayed window is timed as a whole (its tasks have no records), and an
/// edge between two tasks without records is the graph's own, which the driver keeps.
/// `device_timed`: the scheduler timed its commands on the GPU
/// (`Builder::device_timing`), so their starts and ends are the device's clock mapped to
/// the host's, within a few µs, and only starts are held against ends (a dispatch, on
/// the host's own clock, may then seem to come before the end it followed).
pub fn edge_violations(graph: &Graph, report: &Report, device_timed: bool) -> Vec<String> {
    let replayed = !report.windows.is_empty() || device_timed;
    let untimed = report.windows.iter().any(|w| !w.timed);
    let mut first = vec![(u64::MAX, u64::MAX); graph.nodes];
    let mut last: Vec<Option<u64>> = vec![None; graph.nodes];
    for r in &report.records {
        let t = r.task.0 as usize;
        if t >= graph.nodes {
            continue;
        }
        let dispatched = if replayed { r.start_ns } else { r.dispatched_ns };
        first[t] = (first[t].0.min(dispatched), first[t].1.min(r.start_ns));
        last[t] = Some(last[t].map_or(r.end_ns, |e| e.max(r.end_ns)));
    }
    let mut v = Vec::new();
    for &(p, s) in &graph.edges {
        let (dispatched, start) = first[s];
        if untimed && last[p].is_none() && dispatched == u64::MAX {
            continue;
        }
        match last[p] {
            None => v.push(format!("edge #{p} -> #{s}: #{p} has no record")),
            Some(_) if dispatched == u64::MAX => v.push(format!("edge #{p} -> #{s}: #{s} has no record")),
            Some(end) if dispatched < end || start < end => v.push(format!(
                "edge #{p} -> #{s}: #{s} dispatched at {dispatched} and started at {start}, before #{p} ended at {end}"
            )),
            Some(_) => {}
        }
    }
    v
}
