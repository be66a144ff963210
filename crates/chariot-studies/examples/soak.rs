//! The soak run of the robustness work (`chariot_studies::soak`): many small tasks of random sizes
//! through one scheduler, in waves, every output checked and memory and threads sampled
//! after each wave; exit status 1 when anything grew or an output is wrong.
//! `cargo run --release --example soak -- --help`.

use chariot::sim::SimProfile;
use chariot::Backend;
use chariot_studies::soak::{run, Config};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// N small tasks of random sizes, in waves, checking every output and sampling memory
/// and threads after each wave.
#[derive(Parser, Debug, Clone)]
#[command(name = "soak", long_about = None)]
struct Cli {
    /// Tasks in all, N.
    #[arg(long, default_value_t = 1_000_000)]
    tasks: u64,
    /// Tasks per wave (one synchronize each).
    #[arg(long, default_value_t = 2_000)]
    wave: usize,
    /// Largest task, in u32 elements (sizes are uniform in 1..=max).
    #[arg(long, default_value_t = 4096)]
    max_len: usize,
    /// GPUs D.
    #[arg(long, default_value_t = 1)]
    gpus: usize,
    /// Streams per GPU S.
    #[arg(long, default_value_t = 4)]
    streams: usize,
    /// Backend: auto, cuda or sim.
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    backend: String,
    /// On sim: modeled time at this factor of the modeled H100 (0: none, as fast as the
    /// CPU twins run).
    #[arg(long, default_value_t = 0.0)]
    sim_scale: f64,
    /// Allowed growth of resident memory after the first wave, MiB.
    #[arg(long, default_value_t = 16)]
    rss_allowance_mib: u64,
    /// Seed of the sizes and coefficients.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Write the samples to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let profile = SimProfile::h100().with_gpus(cli.gpus.max(1)).with_time_scale(cli.sim_scale);
    let backend = match Backend::from_name(&cli.backend, profile) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.wave == 0 || cli.max_len == 0 {
        eprintln!("soak: --wave and --max-len must be at least 1");
        return ExitCode::from(2);
    }
    let cfg = Config {
        backend,
        gpus: cli.gpus,
        streams: cli.streams,
        tasks: cli.tasks,
        wave: cli.wave,
        max_len: cli.max_len,
        seed: cli.seed,
    };
    let bar = ProgressBar::new(cli.tasks);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} tasks, {per_sec}, eta {eta} | {msg}") {
        bar.set_style(style);
    }
    let outcome = match run(&cfg, &bar) {
        Ok(o) => o,
        Err(e) => {
            bar.abandon();
            eprintln!("soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    bar.finish_and_clear();
    println!("{}", outcome.summary());
    if let Some(path) = &cli.csv {
        let written = std::fs::File::create(path).and_then(|mut f| f.write_all(outcome.csv().as_bytes()));
        match written {
            Ok(()) => println!("samples written to {}", path.display()),
            Err(e) => {
                eprintln!("soak: writing {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    let problems = outcome.problems(cli.rss_allowance_mib * 1024);
    if problems.is_empty() {
        println!("soak passed (RSS allowance {} MiB after wave 1)", cli.rss_allowance_mib);
        ExitCode::SUCCESS
    } else {
        for p in &problems {
            eprintln!("soak FAILED: {p}");
        }
        ExitCode::FAILURE
    }
}
