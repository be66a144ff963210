//! Issue 18, first item, groundwork: cudaFlow's micro-benchmark shapes (linear chain,
//! embarrassing parallelism, divide and conquer, map-reduce, random DAG) of tiny spin
//! kernels on one GPU, chariot with its defaults (one task per node, edges by `after`)
//! against one hand-written CUDA graph of the same shape, built and instantiated once
//! and launched per run (`chariot_studies::flow`). Each round runs both, alternating
//! which goes first; the table shows medians, time per node and chariot / graph.
//! `--device-graph` adds a third variant, the graph run on the device by persistent
//! kernels (`DeviceGraph`, Giles' scheme), rotated with the other two, and three columns:
//! its median, time per node and device / graph.
//!
//! `cargo bench --bench flow -- --help` lists the options. `--backend sim` runs chariot
//! alone on the simulator (the CUDA graph needs CUDA), at small sizes by default.

use chariot::{Backend, Scheduler, SimProfile};
use chariot_studies::flow::{edge_violations, ChariotFlow, DeviceGraph, Graph, HandGraph, Shape};
use clap::Parser;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// chariot against a hand-written CUDA graph on cudaFlow's micro-benchmark shapes.
#[derive(Parser, Debug)]
#[command(name = "flow", long_about = None)]
struct Cli {
    /// Shapes, comma-separated: lc (linear chain), ep (embarrassing parallelism), dc
    /// (divide and conquer: binary tree), mr (map-reduce), dag (random DAG).
    #[arg(long, value_delimiter = ',', default_value = "lc,ep,dc,mr,dag")]
    shapes: Vec<String>,
    /// Sizes, comma-separated SHAPE=N: nodes for lc and ep, depth for dc, iterations
    /// for mr, levels for dag. Defaults on CUDA lc=1024, ep=1024, dc=10, mr=64,
    /// dag=32; on sim lc=64, ep=64, dc=6, mr=4, dag=4.
    #[arg(long, value_delimiter = ',')]
    size: Vec<String>,
    /// Spin iterations of every node's kernel, comma-separated (one measurement each).
    #[arg(long, value_delimiter = ',', default_value = "0,1000,10000")]
    iters: Vec<u32>,
    /// Timed rounds (chariot and the graph once each, alternated), after one warm-up.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// CUDA ordinal of the GPU (chariot's scheduler and the graph).
    #[arg(long, default_value_t = 0)]
    gpu: usize,
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

/// The default size of `shape`.
fn default_size(shape: Shape, sim: bool) -> usize {
    match (shape, sim) {
        (Shape::Lc | Shape::Ep, false) => 1024,
        (Shape::Lc | Shape::Ep, true) => 64,
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
    // chariot's defaults: nothing tuned, only the GPU chosen.
    let sched = Scheduler::builder().backend(backend).gpu_list([cli.gpu]).build()?;
    let flow = ChariotFlow::new(&sched)?;
    let mut csv = match &cli.csv {
        Some(p) => {
            let mut w = BufWriter::new(File::create(p)?);
            writeln!(w, "shape,size,nodes,edges,iters,variant,round,wall_ns,build_ns")?;
            Some(w)
        }
        None => None,
    };
    println!(
        "flow: {} on GPU {}, {} rounds after one warm-up{}",
        if sim { "sim" } else { "cuda" },
        cli.gpu,
        cli.rounds,
        if sim { " (chariot alone: the CUDA graph needs CUDA)" } else { "" }
    );
    // The device-side columns, only with --device-graph (the other lines keep their
    // format).
    let device_on = cli.device_graph && !sim;
    if cli.device_graph && sim {
        eprintln!("flow: --device-graph needs CUDA; left out on sim");
    }
    println!(
        "{:<5} {:>6} {:>7} {:>7} {:>6} | {:>11} {:>9} | {:>11} {:>9} {:>10} | {:>7}{}",
        "shape",
        "size",
        "nodes",
        "edges",
        "iters",
        "chariot ms",
        "µs/node",
        "graph ms",
        "µs/node",
        "build ms",
        "ratio",
        if device_on { format!(" | {:>11} {:>9} {:>7}", "device ms", "µs/node", "ratio") } else { String::new() }
    );
    let mut ok = true;
    for &(shape, size) in &plan {
        let graph = Graph::new(shape, size, cli.seed)?;
        for &iters in &cli.iters {
            let mut hand = if sim { None } else { Some(HandGraph::build(cli.gpu, &graph, iters)?) };
            let build_ns = hand.as_ref().map_or(0, |h| h.build_ns());
            let mut device = if device_on { Some(DeviceGraph::build(&[cli.gpu], &graph, iters)?) } else { None };
            let device_build_ns = device.as_ref().map_or(0, |d| d.build_ns());
            // Wall times of chariot, the CUDA graph and the device graph.
            let mut times: [Vec<u64>; 3] = Default::default();
            let variants = if device_on { 3 } else { 2 };
            for round in 0..=cli.rounds {
                for turn in 0..variants {
                    // The variants take turns going first: with two, even rounds run
                    // chariot first and odd rounds the graph first.
                    let which = (round + turn) % variants;
                    let (variant, wall_ns, b) = match which {
                        0 => {
                            let r = flow.run(&sched, &graph, iters)?;
                            let bad = edge_violations(&graph, &r.report);
                            if let Some(first) = bad.first() {
                                eprintln!(
                                    "flow: {} size {size}: {} edges broken, first: {first}",
                                    shape.name(),
                                    bad.len()
                                );
                                ok = false;
                            }
                            ("chariot", r.wall_ns, 0)
                        }
                        1 => match hand.as_mut() {
                            Some(h) => ("cuda-graph", h.run()?.wall_ns, build_ns),
                            None => continue,
                        },
                        _ => match device.as_mut() {
                            Some(d) => ("device-graph", d.run()?.wall_ns, device_build_ns),
                            None => continue,
                        },
                    };
                    if round > 0 {
                        times[which].push(wall_ns);
                    }
                    if let Some(w) = csv.as_mut() {
                        let (name, nodes, edges) = (shape.name(), graph.nodes, graph.edges.len());
                        writeln!(w, "{name},{size},{nodes},{edges},{iters},{variant},{round},{wall_ns},{b}")?;
                    }
                }
            }
            let [ours, theirs, on_device] = &mut times;
            let per_node = |ns: u64| ns as f64 / 1e3 / graph.nodes as f64;
            let (c, g) = (median(ours), median(theirs));
            let (g_ms, g_node, b_ms, ratio) = if hand.is_some() {
                (
                    format!("{:.3}", g as f64 / 1e6),
                    format!("{:.2}", per_node(g)),
                    format!("{:.3}", build_ns as f64 / 1e6),
                    format!("{:.2}", c as f64 / g.max(1) as f64),
                )
            } else {
                ("-".into(), "-".into(), "-".into(), "-".into())
            };
            println!(
                "{:<5} {:>6} {:>7} {:>7} {:>6} | {:>11.3} {:>9.2} | {:>11} {:>9} {:>10} | {:>7}{}",
                shape.name(),
                size,
                graph.nodes,
                graph.edges.len(),
                iters,
                c as f64 / 1e6,
                per_node(c),
                g_ms,
                g_node,
                b_ms,
                ratio,
                if device.is_some() {
                    let d = median(on_device);
                    format!(" | {:>11.3} {:>9.2} {:>7.2}", d as f64 / 1e6, per_node(d), d as f64 / g.max(1) as f64)
                } else {
                    String::new()
                }
            );
        }
    }
    if let Some(mut w) = csv {
        w.flush()?;
    }
    println!("ratio: chariot's median over the CUDA graph's (launch to synchronize; build apart)");
    if device_on {
        println!(
            "device: the graph run by persistent kernels on the GPU (reset, launch, wait; upload apart); its ratio \
             over the CUDA graph's"
        );
    }
    Ok(ok)
}
