//! The submit probe: the flow bench's per-iteration loop (`chariot_studies::flow`) on one
//! shape, many batches on one scheduler, printing the submitting thread's time a task and
//! the batch's wall (medians and minima over the batches). What the submit-path studies
//! ran (`results/nvidia-h200/2026-11-30-submit-path-trims/`); under callgrind
//! (`--separate-threads=yes`) its first thread is the submitting one.
//! `cargo run --release -p chariot-studies --example submit_probe -- --help`.

use chariot::{Backend, Execution, Scheduler};
use chariot_studies::flow::{ChariotFlow, Graph, Shape};
use clap::Parser;
use std::process::ExitCode;

/// The per-iteration loop of one flow shape, `batches` times: submit time a task and
/// wall a batch.
#[derive(Parser, Debug)]
#[command(name = "submit_probe", long_about = None)]
struct Cli {
    /// Backend: `sim` or `cuda`.
    #[arg(long, default_value = "sim")]
    backend: String,
    /// Shape: lc, ep, dc, mr, dag or rnd.
    #[arg(long, default_value = "rnd")]
    shape: String,
    /// The shape's size (nodes; the tree's depth; map-reduce's width; the DAG's levels).
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Execution: auto (the default), replay or host.
    #[arg(long, default_value = "auto")]
    execution: String,
    /// Batches, each one run of the graph (the first learns its structure).
    #[arg(long, default_value_t = 30)]
    batches: usize,
    /// Spin iterations of every node.
    #[arg(long, default_value_t = 0)]
    iters: u32,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("submit_probe: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let backend = match cli.backend.as_str() {
        "sim" => Backend::Sim,
        "cuda" => Backend::Cuda,
        other => return Err(format!("--backend {other}: expected sim or cuda").into()),
    };
    let shape = Shape::from_name(&cli.shape)
        .ok_or_else(|| format!("--shape {}: expected one of lc, ep, dc, mr, dag, rnd", cli.shape))?;
    let execution = match cli.execution.as_str() {
        "auto" => Execution::Auto,
        "replay" => Execution::Replay,
        "host" => Execution::Host,
        other => return Err(format!("--execution {other}: expected auto, replay or host").into()),
    };
    if cli.batches == 0 {
        return Err("--batches 0: at least 1".into());
    }
    let sched = Scheduler::builder().backend(backend).execution(execution).build()?;
    let flow = ChariotFlow::new(&sched)?;
    let graph = Graph::new(shape, cli.size, 1)?;
    let (mut submits, mut walls) = (Vec::with_capacity(cli.batches), Vec::with_capacity(cli.batches));
    for _ in 0..cli.batches {
        let r = flow.run(&sched, &graph, cli.iters)?;
        submits.push(r.submit_ns as f64 / graph.nodes.max(1) as f64 / 1e3);
        walls.push(r.wall_ns as f64 / 1e3);
    }
    submits.sort_by(f64::total_cmp);
    walls.sort_by(f64::total_cmp);
    let half = cli.batches / 2;
    println!(
        "{} {} {} {} nodes, {} iterations: submit µs a task median {:.3} min {:.3}; wall µs median {:.0} min {:.0}",
        cli.backend, cli.shape, cli.execution, graph.nodes, cli.iters, submits[half], submits[0], walls[half], walls[0]
    );
    Ok(())
}
