//! Task graphs and resident data, benchmark 1: a stream of small DAGs, GrCUDA's image-processing benchmark
//! (IMG), images streamed from pinned host memory. chariot with its defaults (one task
//! per DAG node, resident buffers in a ring of K sets) against the same kernels run
//! synchronously, one CUDA graph per image, and hand-written multi-stream code
//! (`chariot_studies::images`), alternated for several rounds; every output image is
//! checked pixel by pixel against the CPU reference (tolerance 1e-4).
//!
//! `cargo bench --bench images -- --help` lists the options; on CUDA the defaults
//! stream 256 images of 2048² (4 GiB each way). `--backend sim` runs chariot alone on
//! the simulator (the hand-written ways need CUDA), with small images by default.

use chariot::sim::SimProfile;
use chariot::{Backend, Scheduler};
use chariot_align::output::Output;
use chariot_studies::images::baseline::HandWritten;
use chariot_studies::images::bench::{self, Config, Variant};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// chariot against synchronous, CUDA-graph and multi-stream code on GrCUDA's image
/// pipeline, over a stream of images.
#[derive(Parser, Debug)]
#[command(name = "images", long_about = None)]
struct Cli {
    /// Image side N (images are N × N floats); default 2048 on CUDA, 64 on sim.
    #[arg(long)]
    size: Option<usize>,
    /// Images in the stream; default 256 on CUDA, 8 on sim.
    #[arg(long)]
    images: Option<usize>,
    /// Timed rounds (each variant once a round, alternated), after one warm-up round.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Buffer sets K of the ring (chariot, graphs, multi-stream).
    #[arg(long, default_value_t = 4)]
    ring: usize,
    /// CUDA ordinal of the GPU (chariot's scheduler and the hand-written ways).
    #[arg(long, default_value_t = 0)]
    gpu: usize,
    /// Seed of the images.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Variants, comma-separated: chariot, sync, cuda-graph, multi-stream (default
    /// all four on CUDA, chariot on sim).
    #[arg(long, value_delimiter = ',')]
    variants: Option<Vec<String>>,
    /// auto, cuda or sim.
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    backend: String,
    /// Write every run (warm-up included) as CSV to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Accepted for `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("images: some outputs did not match the CPU reference");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("images: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the benchmark; whether every output matched.
fn run(cli: &Cli) -> Result<bool, Box<dyn std::error::Error>> {
    // Checked and opened before any work; written beside the target, renamed at the end.
    let mut csv = cli.csv.as_deref().map(|p| Output::create("--csv", p)).transpose()?;
    let backend = Backend::from_name(&cli.backend, SimProfile::h100())?;
    let sim = backend != Backend::Cuda;
    // chariot's defaults: nothing tuned, only the GPU chosen.
    let sched = Scheduler::builder().backend(backend).gpu_list([cli.gpu]).build()?;
    let variants = match &cli.variants {
        Some(names) => names
            .iter()
            .map(|n| Variant::from_name(n).ok_or_else(|| format!("unknown variant {n:?}")))
            .collect::<Result<Vec<_>, _>>()?,
        None if sim => vec![Variant::Chariot],
        None => Variant::ALL.to_vec(),
    };
    let cfg = Config {
        n: cli.size.unwrap_or(if sim { 64 } else { 2048 }),
        images: cli.images.unwrap_or(if sim { 8 } else { 256 }),
        rounds: cli.rounds.max(1),
        ring: cli.ring,
        gpu: cli.gpu,
        seed: cli.seed,
        variants,
    };
    println!(
        "images: {} images of {}² on {} (GPU {}), ring K = {}, {} timed rounds after a warm-up; every image checked",
        cfg.images,
        cfg.n,
        sched.backend_name(),
        cfg.gpu,
        cfg.ring,
        cfg.rounds
    );
    let outcome = bench::run(&sched, &cfg, |s| {
        println!(
            "  round {} {:<13} {:>10.3} ms {:>9.1} µs/image{}  check {} (max |err| {:.2e})",
            s.round,
            s.variant.name(),
            s.wall_ns as f64 / 1e6,
            s.wall_ns as f64 / 1e3 / cfg.images as f64,
            if s.setup_ns > 0 { format!(" (+{:.3} ms set-up)", s.setup_ns as f64 / 1e6) } else { String::new() },
            if s.check.ok() { "ok" } else { "MISMATCH" },
            s.check.max_abs_err,
        );
    })?;
    println!("CPU reference of {} images: {:.2} s", cfg.images, outcome.reference_ns as f64 / 1e9);
    let summary = bench::summarize(&outcome.samples);
    print!("{}", bench::table(&summary, cfg.images));
    let median = |v: Variant| summary.iter().find(|s| s.variant == v).map(|s| s.median_ns as f64);
    if let Some(c) = median(Variant::Chariot) {
        for v in &Variant::ALL[2..] {
            if let Some(m) = median(*v) {
                println!("chariot / {}: {:.3} (time ratio; below 1 is faster)", v.name(), c / m);
            }
        }
        // GrCUDA's claim (its paper, seed 002): 1.44× over synchronous execution on
        // average, and no slowdown against hand-optimised CUDA graphs.
        let sync = median(Variant::Hand(HandWritten::Sync)).map(|s| s / c);
        let graph = median(Variant::Hand(HandWritten::Graph)).map(|g| c / g);
        if let (Some(sync), Some(graph)) = (sync, graph) {
            let met = sync >= 1.44 && graph <= 1.0;
            println!(
                "GrCUDA's bar (≥ 1.44× sync, no slower than the graphs): {:.2}× sync, {:.3} × graph time: {}",
                sync,
                graph,
                if met { "met" } else { "not met" }
            );
        }
    }
    if let Some(mut f) = csv.take() {
        bench::write_csv(&mut f, &cfg, &outcome)?;
        let path = f.path().to_path_buf();
        f.commit()?;
        println!("wrote {}", path.display());
    }
    Ok(summary.iter().all(|s| s.all_ok))
}
