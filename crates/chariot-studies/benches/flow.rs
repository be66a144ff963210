//! Replay: cudaFlow's micro-benchmark shapes (linear chain, embarrassing parallelism,
//! divide and conquer, map-reduce, random DAG) of tiny spin kernels on one GPU. chariot
//! with its defaults (one task per node, edges by `after`; `Execution::Auto` replays the
//! batch as a CUDA graph once it has seen it and judged that replay pays), chariot with
//! replay off (`Execution::Host`: every command dispatched by the host), and one
//! hand-written CUDA graph of the same shape, built and instantiated once and launched
//! per run (`chariot_studies::flow`). Each round runs every variant, rotating which goes
//! first; the table shows medians, time per node, the share of chariot's tasks replayed
//! and on how many lanes (streams), and each chariot variant over the graph.
//! chariot's recorded graph (`Scheduler::record` once, build apart; then per run
//! `RecordedGraph::run` and `synchronize`) runs too, with its own columns. Each is timed
//! as it runs from the warm-up on: the hand-written graph after its build, the recorded
//! graph after its runs settle its way, and the per-iteration loop after the batches
//! in which the runtime learns the structure and settles its windows (printed, and
//! written as the loop's build in the CSV).
//! `--device-graph` adds the graph run on the device by persistent kernels
//! (`DeviceGraph`, Giles' scheme), rotated with the others, and its columns.
//!
//! `--variants` runs only some of the four in this process: once a context's launches
//! have moved between streams about 16 times (host dispatch over S streams does), the
//! GPU runs every CUDA graph's nodes in it slower, so a campaign runs each variant in a
//! process of its own and merges the CSVs (`scripts/gpu/flow-summary.py`).
//!
//! `cargo bench --bench flow -- --help` lists the options. `--backend sim` runs chariot
//! alone on the simulator (the CUDA graph needs CUDA), at small sizes by default.

use chariot::report::{GraphSetup, LaunchedBy};
use chariot::sim::SimProfile;
use chariot::{Backend, Execution, Scheduler};
use chariot_align::output::{self, Output};
use chariot_studies::flow::{edge_violations, ChariotFlow, ChariotRun, DeviceGraph, Graph, HandGraph, Shape};
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// chariot against a hand-written CUDA graph on cudaFlow's micro-benchmark shapes.
#[derive(Parser, Debug)]
#[command(name = "flow", long_about = None)]
struct Cli {
    /// Shapes, comma-separated: lc (linear chain), ep (embarrassing parallelism), dc
    /// (divide and conquer: binary tree), mr (map-reduce), dag (random DAG), rnd
    /// (MUSTARD's generated graphs: random edges back, 2 a node on average).
    #[arg(long, value_delimiter = ',', default_value = "lc,ep,dc,mr,dag,rnd")]
    shapes: Vec<String>,
    /// Sizes, comma-separated SHAPE=N: nodes for lc, ep and rnd, depth for dc,
    /// iterations for mr, levels for dag. Defaults on CUDA lc=1024, ep=1024, dc=10,
    /// mr=64, dag=32, rnd=1024; on sim lc=64, ep=64, dc=6, mr=4, dag=4, rnd=64.
    #[arg(long, value_delimiter = ',')]
    size: Vec<String>,
    /// Spin iterations of every node's kernel, comma-separated (one measurement each).
    #[arg(long, value_delimiter = ',', default_value = "0,1000,10000")]
    iters: Vec<u32>,
    /// Timed rounds (chariot and the graph once each, alternated), after one warm-up
    /// (for chariot's per-iteration loop, batches until it runs as it goes on, at most
    /// 9; their time is printed and written as its build).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// CUDA ordinal of the GPU (chariot's scheduler and the graph).
    #[arg(long, default_value_t = 0)]
    gpu: usize,
    /// GPUs D of chariot's schedulers and of the device graph: `--gpu` and the D − 1
    /// after it (the hand-written CUDA graph stays on `--gpu`: the single-GPU baseline).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    gpus: u32,
    /// Blocks of every node's launch (chariot's and the hand-written graph's): 1 is
    /// cudaFlow's and MUSTARD's node; one full wave of an H200 is 2,112 (132 SMs × 16
    /// blocks of 128 threads), where a graph wider than a GPU has work for a second.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    blocks: u32,
    /// Seed of the random DAG.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// auto, cuda or sim.
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    backend: String,
    /// Write every run (warm-up included, round 0) as CSV to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Also run each graph on the device (persistent kernels, no launch per node; CUDA
    /// only), as a third variant with its own columns.
    #[arg(long)]
    device_graph: bool,
    /// Also run chariot with `Execution::Device` (the window of one-launch tasks run on
    /// the GPU by the runtime's persistent executor; CUDA only) as a variant of its own.
    #[arg(long)]
    chariot_device: bool,
    /// Leave out chariot's recorded graph (for comparing the other variants with a build
    /// that has none: the same variants then take turns).
    #[arg(long)]
    no_recorded: bool,
    /// Which of the four usual variants run in this process, comma-separated: chariot
    /// (defaults, the per-iteration loop), host (replay off), graph (the hand-written
    /// CUDA graph), recorded (chariot's recorded graph). The GPU runs every CUDA graph's
    /// nodes slower once the context's launches have moved between streams about 16
    /// times (0.64 → 0.82 µs a node on the H200's 1,024-node chain), as host dispatch
    /// over S streams does: a campaign that compares variants runs each in a process of
    /// its own, as a user's program would.
    #[arg(long, value_delimiter = ',', default_value = "chariot,host,graph,recorded",
          value_parser = ["chariot", "host", "graph", "recorded"])]
    variants: Vec<String>,
    /// Where the hand-written graph's nodes write their float: `own`, a sink of its
    /// own; `chariot`, the sink chariot's launches write on stream slot 0 (a recorded
    /// graph's lane 0), which needs the chariot or recorded variant in this process. A
    /// chain of one-block nodes runs at a speed set by where that float lies (653–760
    /// µs for 1,024 empty nodes on an H200 by its page: `peers/sink_address_probe.cu`),
    /// so comparing two programs' chains node for node needs one address.
    #[arg(long, default_value = "own", value_parser = ["own", "chariot"])]
    graph_sink: String,
    /// S, the CUDA streams of every chariot scheduler here (default: chariot's own
    /// choice).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    streams: Option<u32>,
    /// Whether chariot pins each dispatcher thread to a core of its own
    /// (`Builder::pin_dispatchers`; chariot's default is true).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pin_dispatchers: bool,
    /// Time chariot's commands and windows on the GPU (`Builder::device_timing`: events
    /// around each; `--windows` then has each window's GPU time). Slows the runs.
    #[arg(long)]
    device_timing: bool,
    /// Write every window of chariot's per-iteration runs (defaults; warm-up included,
    /// round 0) as CSV to this file: its tasks, lanes and graph set-up (built, updated,
    /// reused, device), when it was queued, launched and seen to end, in µs after the
    /// run's first window was queued, its time on the GPU (with `--device-timing`) and
    /// its host time; with the run's submit and wall times (from its first submit).
    #[arg(long)]
    windows: Option<PathBuf>,
    /// Accepted for `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("flow: chariot's timeline broke an edge of the graph");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("flow: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs of a recorded graph before it is timed: enough for the runtime to try both of
/// its ways (four runs as a CUDA graph, four on the device) and keep one. Also the most
/// warm-up batches of chariot's per-iteration loop ([`settle_loop`]).
const SETTLE_RUNS: usize = 9;

/// How a batch of the per-iteration loop ran: its tasks replayed, its windows' most
/// lanes, its window count, and whether any window's graph was built for it.
fn loop_way(report: &chariot::report::Report) -> (usize, usize, usize, bool) {
    let w = &report.windows;
    (
        w.iter().map(|w| w.tasks).sum(),
        w.iter().map(|w| w.lanes).max().unwrap_or(0),
        w.len(),
        w.iter().any(|w| w.setup == GraphSetup::Built),
    )
}

/// The per-iteration loop's warm-up, as a user's loop goes through it: batches until
/// four in a row ran the same way (tasks replayed, lanes, windows) with no graph built
/// for any, at most [`SETTLE_RUNS`]. The runtime learns a structure on its first batch,
/// replays it from the next, and widens the windows of long tasks after two batches in
/// a row measured them, building their graphs once; a batch whose kernels' arguments
/// changed (the next spin count, where one structure runs at several) is not one of
/// those two. Three alike were too few there (a tree's windows widened on the fourth);
/// four leave nothing pending. The timed rounds then measure the loop as it runs from
/// there on, as the hand-written graph's are timed after its build. The last batch, the
/// warm-up's summed wall time (ns), its batch count, and whether the loop settled (not
/// where it ran [`SETTLE_RUNS`] batches without four alike).
fn settle_loop(
    f: &ChariotFlow,
    s: &Scheduler,
    graph: &Graph,
    iters: u32,
    shape: Shape,
    ok: &mut bool,
    device_timed: bool,
) -> Result<(ChariotRun, u64, usize, bool), Box<dyn std::error::Error>> {
    let (mut total, mut alike) = (0, 0);
    let mut prev: Option<(usize, usize, usize, bool)> = None;
    for n in 1..=SETTLE_RUNS {
        let r = f.run(s, graph, iters)?;
        *ok &= edges_hold(graph, &r.report, shape, "warm-up", device_timed);
        total += r.wall_ns;
        let way = loop_way(&r.report);
        // Batches in a row that ran this way, none building a graph.
        alike = if way.3 {
            0
        } else if prev == Some(way) {
            alike + 1
        } else {
            1
        };
        prev = Some(way);
        if alike == 4 || n == SETTLE_RUNS {
            return Ok((r, total, n, alike == 4));
        }
    }
    unreachable!("the loop returns at its last batch")
}

/// Whether `report` honours every edge of `graph`; where not, says how many edges broke
/// and the first, naming the shape and `what` ran it.
/// `device_timed`: see [`edge_violations`].
fn edges_hold(graph: &Graph, report: &chariot::report::Report, shape: Shape, what: &str, device_timed: bool) -> bool {
    let bad = edge_violations(graph, report, device_timed);
    if let Some(first) = bad.first() {
        eprintln!("flow: {} {what}: {} edges broken, first: {first}", shape.name(), bad.len());
    }
    bad.is_empty()
}

/// The default size of `shape`.
fn default_size(shape: Shape, sim: bool) -> usize {
    match (shape, sim) {
        (Shape::Lc | Shape::Ep | Shape::Rnd, false) => 1024,
        (Shape::Lc | Shape::Ep | Shape::Rnd, true) => 64,
        (Shape::Dc, false) => 10,
        (Shape::Dc, true) => 6,
        (Shape::Mr, false) => 64,
        (Shape::Mr, true) => 4,
        (Shape::Dag, false) => 32,
        (Shape::Dag, true) => 4,
    }
}

/// The shapes and their sizes the command line asks for.
fn plan(cli: &Cli, sim: bool) -> Result<Vec<(Shape, usize)>, String> {
    let mut sizes = Vec::new();
    for s in &cli.size {
        let (name, n) = s.split_once('=').ok_or_else(|| format!("--size {s}: expected SHAPE=N"))?;
        let shape = Shape::from_name(name).ok_or_else(|| format!("--size {s}: unknown shape {name}"))?;
        let n: usize = n.parse().map_err(|_| format!("--size {s}: {n} is not a count"))?;
        sizes.push((shape, n));
    }
    cli.shapes
        .iter()
        .map(|name| {
            let shape = Shape::from_name(name).ok_or_else(|| format!("--shapes: unknown shape {name}"))?;
            let size = sizes.iter().rev().find(|(s, _)| *s == shape).map_or(default_size(shape, sim), |&(_, n)| n);
            Ok((shape, size))
        })
        .collect()
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    match v.len() {
        0 => 0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

/// Runs the benchmark; whether every chariot run honoured every edge.
fn run(cli: &Cli) -> Result<bool, Box<dyn std::error::Error>> {
    let backend = Backend::from_name(&cli.backend, SimProfile::h100())?;
    let sim = backend != Backend::Cuda;
    let plan = plan(cli, sim)?;
    // chariot's defaults: nothing tuned, only the GPU chosen (replay where it pays);
    // and the same with replay off, the host dispatching every command.
    let gpus: Vec<usize> = (cli.gpu..cli.gpu + cli.gpus as usize).collect();
    let wants = |v: &str| cli.variants.iter().any(|w| w == v);
    let (run_chariot, run_host, run_graph) = (wants("chariot"), wants("host"), wants("graph"));
    let run_recorded = wants("recorded") && !cli.no_recorded;
    let builder = |execution: Execution| {
        let b = Scheduler::builder()
            .backend(backend.clone())
            .gpu_list(gpus.clone())
            .execution(execution)
            .pin_dispatchers(cli.pin_dispatchers)
            .device_timing(cli.device_timing);
        match cli.streams {
            Some(s) => b.streams(s as usize),
            None => b,
        }
    };
    // Only the schedulers the variants need: each brings S streams to the GPU's context.
    let sched = if run_chariot || run_recorded { Some(builder(Execution::Auto).build()?) } else { None };
    let host = if run_host { Some(builder(Execution::Host).build()?) } else { None };
    if cli.device_graph && cli.blocks > 1 {
        return Err(
            format!("--device-graph runs every node on one block; --blocks {} asks for more", cli.blocks).into()
        );
    }
    let flow = sched.as_ref().map(|s| ChariotFlow::new(s).map(|f| f.blocks(cli.blocks))).transpose()?;
    let host_flow = host.as_ref().map(|s| ChariotFlow::new(s).map(|f| f.blocks(cli.blocks))).transpose()?;
    let into_chariot = cli.graph_sink == "chariot";
    if into_chariot && run_graph && flow.is_none() {
        return Err(
            "--graph-sink chariot writes chariot's sink: run the chariot or recorded variant with the graph".into()
        );
    }
    let chariot_device_on = cli.chariot_device && !sim;
    let dev_sched = if chariot_device_on { Some(builder(Execution::Device).build()?) } else { None };
    let dev_flow = dev_sched.as_ref().map(|s| ChariotFlow::new(s).map(|f| f.blocks(cli.blocks))).transpose()?;
    // Both checked and opened before any run, written beside their targets and renamed at
    // the end; one file cannot be both.
    if let (Some(c), Some(w)) = (&cli.csv, &cli.windows) {
        output::check_distinct(&[], &[("--csv", c), ("--windows", w)])?;
    }
    let mut csv = match &cli.csv {
        Some(p) => {
            let mut w = Output::create("--csv", p)?;
            writeln!(
                w,
                "shape,size,nodes,edges,iters,variant,round,wall_ns,build_ns,replayed_tasks,lanes,submit_ns,\
                 window_host_ns,window_ns,way,window_waited_ns,windows_by_caller"
            )?;
            Some(w)
        }
        None => None,
    };
    let mut windows_csv = match &cli.windows {
        Some(p) => {
            let mut w = Output::create("--windows", p)?;
            writeln!(
                w,
                "shape,size,iters,round,window,tasks,lanes,setup,queued_us,launched_us,end_us,gpu_us,host_us,submit_us,wall_us"
            )?;
            Some(w)
        }
        None => None,
    };
    println!(
        "flow: {} on GPU {} (chariot and the device graph on {} GPU(s)), {} block(s) a node, {} rounds after one warm-up{}",
        if sim { "sim" } else { "cuda" },
        cli.gpu,
        gpus.len(),
        cli.blocks,
        cli.rounds,
        if sim { " (chariot alone: the CUDA graph needs CUDA)" } else { "" }
    );
    if into_chariot && run_graph && !sim {
        println!("flow: the hand-written graph writes chariot's sink (its stream slot 0's copy on GPU {})", cli.gpu);
    }
    let device_on = cli.device_graph && !sim;
    if cli.device_graph && sim {
        eprintln!("flow: --device-graph needs CUDA; left out on sim");
    }
    // The critical path in nodes: what no number of GPUs or lanes can shorten.
    for &(shape, size) in &plan {
        let g = Graph::new(shape, size, cli.seed)?;
        let chain = g.longest_chain();
        println!(
            "{} {size}: {} nodes, longest chain {chain} nodes, mean width {:.1}",
            shape.name(),
            g.nodes,
            g.nodes as f64 / chain.max(1) as f64
        );
    }
    println!(
        "{:<5} {:>6} {:>7} {:>7} {:>6} | {:>10} {:>8} {:>6} {:>5} | {:>10} {:>8} | {:>10} {:>8} {:>9} | {:>6} {:>6} | {:>9} {:>8} {:>6}{}",
        "shape",
        "size",
        "nodes",
        "edges",
        "iters",
        "chariot ms",
        "µs/node",
        "replay",
        "lanes",
        "host ms",
        "µs/node",
        "graph ms",
        "µs/node",
        "build ms",
        "c/g",
        "h/g",
        "rec ms",
        "µs/node",
        "r/g",
        if device_on { format!(" | {:>10} {:>8} {:>6}", "device ms", "µs/node", "d/g") } else { String::new() }
            + &if chariot_device_on {
                format!(" | {:>10} {:>8} {:>6}", "c-dev ms", "µs/node", "cd/g")
            } else {
                String::new()
            }
    );
    let mut ok = true;
    let mut breakdown = Vec::new();
    for &(shape, size) in &plan {
        let graph = Graph::new(shape, size, cli.seed)?;
        for &iters in &cli.iters {
            let mut hand = match (&sched, &flow) {
                _ if sim || !run_graph => None,
                (Some(s), Some(f)) if into_chariot => Some(HandGraph::build_into(cli.gpu, &graph, iters, f, s)?),
                _ => Some(HandGraph::build(cli.gpu, &graph, iters, cli.blocks)?),
            };
            let build_ns = hand.as_ref().map_or(0, |h| h.build_ns());
            let mut device = if device_on { Some(DeviceGraph::build(&gpus, &graph, iters)?) } else { None };
            let device_build_ns = device.as_ref().map_or(0, |d| d.build_ns());
            // Wall times of chariot (defaults), chariot (host), the CUDA graph, the
            // device graph, chariot's device mode, chariot's recorded graph.
            let mut times: [Vec<u64>; 6] = Default::default();
            // Recorded once, then run until its way is settled (graph or device: the
            // runtime tries both on the first runs), all counted as its build.
            let mut recorded = None;
            let (mut record_ns, mut way) = (0, "graph");
            // Why the runtime runs it as it does, as the last settling run's report says.
            let mut last_way = None;
            if let (true, Some(s), Some(f)) = (run_recorded, &sched, &flow) {
                let (r, ns) = f.record(s, &graph, iters)?;
                if r.node_gpus().len() > 1 {
                    println!(
                        "{} {size} at {iters}: the recorded graph's nodes run on GPUs {:?} (parts launched from {:?})",
                        shape.name(),
                        r.node_gpus(),
                        r.gpus()
                    );
                }
                record_ns = ns;
                for _ in 0..SETTLE_RUNS {
                    let run = f.run_recorded(s, &r)?;
                    record_ns += run.wall_ns;
                    last_way = run.report.windows.iter().find_map(|w| w.way);
                    way = if run.report.windows.iter().any(|w| w.setup == GraphSetup::Device) {
                        "device"
                    } else {
                        "graph"
                    };
                }
                if let Some(why) = last_way.as_ref() {
                    println!("{} {size} at {iters}: the recorded graph runs {why}", shape.name());
                }
                recorded = Some(r);
            }
            let (mut replayed, mut lanes) = (0usize, 0usize);
            // The per-iteration loop's warm-up (`settle_loop`): its wall time, batches.
            let (mut settle_ns, mut settle_batches, mut settled) = (0u64, 0usize, true);
            // How the loop's last run went, and why (its report's execution line).
            let mut last_execution = None;
            // chariot with its defaults, per timed run: submitting, the windows' set-up
            // and launch on the host, the windows' span (launch to completion seen).
            let mut parts: [Vec<u64>; 3] = Default::default();
            let mut last_parts = [0u64; 5];
            let variants = 6;
            for round in 0..=cli.rounds {
                for turn in 0..variants {
                    // The variants take turns going first.
                    let which = (round + turn) % variants;
                    let (variant, wall_ns, b) = match which {
                        0 | 1 => {
                            let pair = if which == 0 { (&sched, &flow) } else { (&host, &host_flow) };
                            let (Some(s), Some(f)) = (pair.0.as_ref(), pair.1.as_ref()) else { continue };
                            if which == 0 && !run_chariot {
                                continue;
                            }
                            // The warm-up checks each of its batches' edges itself.
                            let r = if which == 0 && round == 0 {
                                let (r, ns, n, done) =
                                    settle_loop(f, s, &graph, iters, shape, &mut ok, cli.device_timing)?;
                                (settle_ns, settle_batches, settled) = (ns, n, done);
                                r
                            } else {
                                let r = f.run(s, &graph, iters)?;
                                ok &= edges_hold(&graph, &r.report, shape, &format!("size {size}"), cli.device_timing);
                                r
                            };
                            last_parts = [
                                r.submit_ns,
                                r.report.windows.iter().map(|w| w.host_ns).sum(),
                                r.report.windows.iter().map(|w| w.duration_ns()).sum(),
                                r.report.windows.iter().map(|w| w.waited_ns()).sum(),
                                r.report.windows.iter().filter(|w| w.launched_by == LaunchedBy::Caller).count() as u64,
                            ];
                            if let (0, Some(w)) = (which, windows_csv.as_mut()) {
                                let q0 = r.report.windows.iter().map(|w| w.queued_ns).min().unwrap_or(0);
                                let us = |ns: u64| ns.saturating_sub(q0) as f64 / 1e3;
                                for (i, x) in r.report.windows.iter().enumerate() {
                                    writeln!(
                                        w,
                                        "{},{size},{iters},{round},{i},{},{},{},{:.1},{:.1},{:.1},{},{:.1},{:.1},{:.1}",
                                        shape.name(),
                                        x.tasks,
                                        x.lanes,
                                        x.setup,
                                        us(x.queued_ns),
                                        us(x.launched_ns),
                                        us(x.end_ns),
                                        x.gpu_ns.map_or(String::new(), |g| format!("{:.1}", g as f64 / 1e3)),
                                        x.host_ns as f64 / 1e3,
                                        r.submit_ns as f64 / 1e3,
                                        r.wall_ns as f64 / 1e3
                                    )?;
                                }
                            }
                            if which == 0 {
                                last_execution = r.report.execution.as_ref().map(|e| {
                                    let w = &r.report.windows;
                                    let span: u64 = w.iter().map(|w| w.duration_ns()).sum();
                                    let ran: u64 = w.iter().map(|w| w.run_ns()).sum();
                                    let steps: usize = w.iter().map(|w| w.depth).sum();
                                    let timed =
                                        if w.iter().all(|w| w.gpu_ns.is_some()) { "on the GPU" } else { "as spans" };
                                    format!(
                                        "{e}; its {} windows: spans {:.1} us, run {:.1} us {timed}, {:.1} us a step",
                                        w.len(),
                                        span as f64 / 1e3,
                                        ran as f64 / 1e3,
                                        ran as f64 / 1e3 / steps.max(1) as f64
                                    )
                                });
                                replayed = r.report.windows.iter().map(|w| w.tasks).sum();
                                lanes = r.report.windows.iter().map(|w| w.lanes).max().unwrap_or(0);
                                if round > 0 {
                                    for (v, p) in parts.iter_mut().zip(last_parts) {
                                        v.push(p);
                                    }
                                }
                            }
                            (
                                if which == 0 { "chariot" } else { "chariot-host" },
                                r.wall_ns,
                                if which == 0 { settle_ns } else { 0 },
                            )
                        }
                        2 => match hand.as_mut() {
                            Some(h) => ("cuda-graph", h.run()?.wall_ns, build_ns),
                            None => continue,
                        },
                        3 => match device.as_mut() {
                            Some(d) => ("device-graph", d.run()?.wall_ns, device_build_ns),
                            None => continue,
                        },
                        5 => {
                            let (Some(s), Some(f), Some(rec)) = (&sched, &flow, &recorded) else { continue };
                            let r = f.run_recorded(s, rec)?;
                            last_parts = [
                                r.submit_ns,
                                r.report.windows.iter().map(|w| w.host_ns).sum(),
                                r.report.windows.iter().map(|w| w.duration_ns()).sum(),
                                r.report.windows.iter().map(|w| w.waited_ns()).sum(),
                                r.report.windows.iter().filter(|w| w.launched_by == LaunchedBy::Caller).count() as u64,
                            ];
                            ok &= edges_hold(&graph, &r.report, shape, "recorded", cli.device_timing);
                            ("chariot-recorded", r.wall_ns, record_ns)
                        }
                        _ => match (&dev_sched, &dev_flow) {
                            (Some(s), Some(f)) => {
                                let r = f.run(s, &graph, iters)?;
                                ok &= edges_hold(&graph, &r.report, shape, "device mode", cli.device_timing);
                                ("chariot-device", r.wall_ns, 0)
                            }
                            _ => continue,
                        },
                    };
                    if round > 0 {
                        times[which].push(wall_ns);
                    }
                    if let Some(w) = csv.as_mut() {
                        let (name, nodes, edges) = (shape.name(), graph.nodes, graph.edges.len());
                        let (rt, ln) = if which == 0 { (replayed, lanes) } else { (0, 0) };
                        let [sub, wh, ws, wait, by_caller] = if which < 2 || which == 5 { last_parts } else { [0; 5] };
                        let how = if which == 5 { way } else { "" };
                        writeln!(
                            w,
                            "{name},{size},{nodes},{edges},{iters},{variant},{round},{wall_ns},{b},{rt},{ln},{sub},{wh},{ws},{how},{wait},{by_caller}"
                        )?;
                    }
                }
            }
            let [ours, hosts, theirs, on_device, chariot_dev, rec] = &mut times;
            if run_chariot {
                let [sub, wh, ws] = &mut parts;
                breakdown.push(format!(
                    "{:<5} {:>6} {:>6} | {:>10.2} {:>12.1} {:>10.3} {:>10.3}",
                    shape.name(),
                    size,
                    iters,
                    median(sub) as f64 / 1e3 / graph.nodes as f64,
                    median(wh) as f64 / 1e3,
                    median(ws) as f64 / 1e6,
                    median(&mut ours.clone()) as f64 / 1e6
                ));
            }
            if settle_batches > 0 {
                let how = if settled { "to run as it goes on" } else { "without settling (timed as it stood)" };
                println!(
                    "{} {size} at {iters}: the loop's warm-up, {settle_batches} batch(es) {how}, {:.3} ms in all",
                    shape.name(),
                    settle_ns as f64 / 1e6
                );
            }
            if let Some(e) = &last_execution {
                println!("{} {size} at {iters}: the loop's last run, execution: {e}", shape.name());
            }
            let per_node = |ns: u64| ns as f64 / 1e3 / graph.nodes as f64;
            let g = median(theirs);
            let over_g =
                |x: u64| if hand.is_some() { format!("{:.2}", x as f64 / g.max(1) as f64) } else { "-".into() };
            // A variant this process did not run prints dashes, never a zero time.
            let ms = |v: &mut Vec<u64>| {
                if v.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:.3}", median(v) as f64 / 1e6)
                }
            };
            let node =
                |v: &mut Vec<u64>| if v.is_empty() { "-".to_string() } else { format!("{:.2}", per_node(median(v))) };
            let over = |v: &mut Vec<u64>| if v.is_empty() { "-".to_string() } else { over_g(median(v)) };
            let build_ms = if hand.is_some() { format!("{:.3}", build_ns as f64 / 1e6) } else { "-".into() };
            let (replay, lane_col) = if run_chariot {
                (format!("{:.0}%", 100.0 * replayed as f64 / graph.nodes as f64), lanes.to_string())
            } else {
                ("-".into(), "-".into())
            };
            println!(
                "{:<5} {:>6} {:>7} {:>7} {:>6} | {:>10} {:>8} {:>6} {:>5} | {:>10} {:>8} | {:>10} {:>8} {:>9} | {:>6} {:>6} | {:>9} {:>8} {:>6}{}",
                shape.name(),
                size,
                graph.nodes,
                graph.edges.len(),
                iters,
                ms(ours),
                node(ours),
                replay,
                lane_col,
                ms(hosts),
                node(hosts),
                ms(theirs),
                node(theirs),
                build_ms,
                over(ours),
                over(hosts),
                ms(rec),
                node(rec),
                format!("{}{}", over(rec), if way == "device" && !rec.is_empty() { "d" } else { "" }),
                if device.is_some() {
                    format!(" | {:>10} {:>8} {:>6}", ms(on_device), node(on_device), over(on_device))
                } else {
                    String::new()
                } + &if dev_sched.is_some() {
                    format!(" | {:>10} {:>8} {:>6}", ms(chariot_dev), node(chariot_dev), over(chariot_dev))
                } else {
                    String::new()
                }
            );
        }
    }
    if let Some(w) = windows_csv {
        w.commit()?;
    }
    if let Some(w) = csv {
        w.commit()?;
    }
    println!("\nwhere chariot's time goes (defaults; medians of the timed runs)");
    println!(
        "{:<5} {:>6} {:>6} | {:>10} {:>12} {:>10} {:>10}",
        "shape", "size", "iters", "submit µs/n", "set-up µs", "window ms", "total ms"
    );
    breakdown.iter().for_each(|l| println!("{l}"));
    println!(
        "chariot: defaults (replay where it pays; replay = the last run's tasks replayed, on that many lanes); host: \
         replay off; rec: the recorded graph (run to synchronize; recorded and settled apart; r/g marked d where \
         the runtime chose the device executor); c/g, h/g, r/g: their \
         medians over the CUDA graph's (submit or launch to synchronize; build apart)"
    );
    if chariot_device_on {
        println!("c-dev: chariot with Execution::Device: the runtime's persistent executor runs the window on the GPU");
    }
    if device_on {
        println!(
            "device: the graph run by persistent kernels on the GPU (reset, launch, wait; upload apart); its ratio \
             over the CUDA graph's"
        );
    }
    Ok(ok)
}
