//! Host time the runtime adds per command, above the driver call that issues it
//! (issue: at most 2 µs). Runs many tasks of tiny commands (a 4-byte download, an empty
//! kernel, a 4-byte readback) so that the host side dominates, and reports the
//! dispatchers' own accounting: time in chariot's code per command (selection, stage
//! queues, counters, idle detection bookkeeping, timeline) and, beside it, time inside
//! the driver calls that issue commands and inside completion queries. Also reports
//! the submit side (building and submitting a task on the user's thread).
//!
//! Usage: `dispatch_overhead [--tasks N] [--streams S] [--depth D] [--backend auto|cuda|sim] [--out FILE.csv]`

use chariot::sim::SimProfile;
use chariot::{Arg, Backend, Scheduler};
use chariot_studies::demo;
use clap::Parser;
use std::io::Write;
use std::time::Instant;

/// Measures chariot's host cost per command with tiny commands.
#[derive(Parser, Debug)]
#[command(name = "dispatch_overhead", long_about = None)]
struct Cli {
    /// Tasks per run (three commands each).
    #[arg(long, default_value_t = 20_000)]
    tasks: u64,
    /// Streams per GPU, comma-separated list.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    streams: Vec<usize>,
    /// Stage depths, comma-separated list.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    depths: Vec<usize>,
    /// auto, cuda or sim.
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    backend: String,
    /// Append the rows to this CSV file.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Accepted for `cargo bench` compatibility.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> Result<(), String> {
    let cli = Cli::parse();
    if cli.tasks == 0 || cli.streams.contains(&0) || cli.depths.contains(&0) {
        return Err("--tasks, --streams and --depths must be positive".into());
    }
    let backend = match cli.backend.as_str() {
        "cuda" => Backend::Cuda,
        "sim" => Backend::SimWith(SimProfile::instant()),
        _ => Backend::Auto,
    };
    println!(
        "{:>7} {:>5} {:>8} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "S", "depth", "tasks", "runtime us", "driver us", "query us", "submit us", "wall ms"
    );
    let mut rows = Vec::new();
    for &depth in &cli.depths {
        for &s in &cli.streams {
            let sched = Scheduler::builder()
                .backend(backend.clone())
                .streams(s)
                .stage_depth(depth)
                .build()
                .map_err(|e| e.to_string())?;
            let empty = sched.register_kernel(demo::empty_kernel()).map_err(|e| e.to_string())?;
            let host = sched.alloc_host::<u32>(cli.tasks as usize).map_err(|e| e.to_string())?;
            let out = sched.alloc_host::<u32>(cli.tasks as usize).map_err(|e| e.to_string())?;
            let d = sched.alloc::<u32>(1).map_err(|e| e.to_string())?;
            // Warm-up: first launch loads the module, first copies touch the pages.
            for i in 0..64u64 {
                let r = i as usize..i as usize + 1;
                sched
                    .task(i, 1)
                    .download(&d, 0, &host, r.clone())
                    .launch(&empty, 1u32, 1u32, 0, &[])
                    .readback(&out, r, &d, 0)
                    .submit()
                    .map_err(|e| e.to_string())?;
            }
            sched.synchronize().map_err(|e| e.to_string())?;
            let t0 = Instant::now();
            for i in 0..cli.tasks {
                let r = i as usize..i as usize + 1;
                sched
                    .task(i, 1)
                    .download(&d, 0, &host, r.clone())
                    .launch(&empty, 1u32, 1u32, 0, &[] as &[Arg])
                    .readback(&out, r, &d, 0)
                    .submit()
                    .map_err(|e| e.to_string())?;
            }
            let submit = t0.elapsed();
            let report = sched.synchronize().map_err(|e| e.to_string())?;
            let wall = t0.elapsed();
            let st = report.dispatch;
            let per = |ns: u64| ns as f64 / st.commands.max(1) as f64 / 1e3;
            let submit_us = submit.as_nanos() as f64 / (3 * cli.tasks) as f64 / 1e3;
            println!(
                "{s:>7} {depth:>5} {:>8} {:>12.3} {:>12.3} {:>12.3} {:>12.3} {:>10.1}",
                cli.tasks,
                per(st.runtime_ns),
                per(st.driver_ns),
                per(st.poll_ns),
                submit_us,
                wall.as_secs_f64() * 1e3
            );
            rows.push(format!(
                "{},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{},{:.3}",
                report.backend,
                sched.gpu_info()[0].name,
                s,
                depth,
                cli.tasks,
                per(st.runtime_ns),
                per(st.driver_ns),
                per(st.poll_ns),
                submit_us,
                st.polls,
                wall.as_secs_f64() * 1e3
            ));
        }
    }
    println!("runtime: chariot's own host time per command (driver calls excluded); driver: inside the calls that issue it; query: inside completion queries (all of them, including not-ready answers) per command; submit: building and submitting, per command, on the user's thread");
    if let Some(path) = cli.out {
        let new = !path.exists();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(|e| e.to_string())?;
        if new {
            writeln!(f, "backend,device,streams,depth,tasks,runtime_us_per_cmd,driver_us_per_cmd,query_us_per_cmd,submit_us_per_cmd,polls,wall_ms").map_err(|e| e.to_string())?;
        }
        for r in rows {
            writeln!(f, "{r}").map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
