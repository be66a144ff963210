//! `cargo run --release`: the paper's dummy shift kernel over N chunks on the best
//! backend, serially and pipelined, with T, the paper's bound T_LB and ε, a
//! hardware-aware bound, the speedup over serial, and an element-by-element check.

use chariot::demo::{self, fill, mismatches, run_shift};
use chariot::{Backend, HardwareBound, HostBuffer, Report, Scheduler, SimProfile, Stage, TaskWork};
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Pipelines the paper's dummy shift kernel over N chunks and compares it with the
/// serial loop and with what the hardware allows.
#[derive(Parser, Debug)]
#[command(version, about, long_about = None)]
struct Cli {
    /// Backend: auto (CUDA if a driver and GPU are there, else sim), cuda or sim.
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    backend: String,
    /// Number of chunks N.
    #[arg(long, default_value_t = 48, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    chunks: u64,
    /// Chunk size in MiB (default 16 on CUDA, 4 on sim).
    #[arg(long)]
    chunk_mib: Option<f64>,
    /// Streams per GPU to try, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4")]
    streams: Vec<usize>,
    /// Stage depths to try (1: the paper's gating; 2: a second command queued per stage).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    depths: Vec<usize>,
    /// Kernel rounds per element (default: calibrated so the kernel takes as long as a copy).
    #[arg(long)]
    iters: Option<u32>,
    /// On sim: modeled time runs this many times slower than the modeled H100, so the
    /// CPU's real work (copies, the kernel's twin) stays inside the modeled times.
    #[arg(long, default_value_t = 40.0)]
    sim_scale: f64,
    /// Directory for demo.csv and the best run's Chrome trace (created if missing).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Timestamp commands on the device with timing events (slower on Hopper: they
    /// serialise streams; for comparison only).
    #[arg(long)]
    device_timing: bool,
    /// Seed of the input data.
    #[arg(long, default_value_t = 2013)]
    seed: u64,
}

struct Setup {
    backend: Backend,
    device_timing: bool,
    input: HostBuffer<u32>,
    output: HostBuffer<u32>,
    len: usize,
    chunks: usize,
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Median duration of `stage` commands.
fn median_of(report: &Report, stage: Stage) -> u64 {
    median(report.records.iter().filter(|r| r.stage == stage).map(|r| r.duration_ns()).collect())
}

fn scheduler(setup: &Setup, streams: usize, depth: usize) -> chariot::Result<Scheduler> {
    Scheduler::builder()
        .backend(setup.backend.clone())
        .streams(streams)
        .stage_depth(depth)
        .device_timing(setup.device_timing)
        .build()
}

/// Runs the whole chunk set on `sched`, checks every element, returns the report.
fn run(setup: &mut Setup, sched: &Scheduler, iters: u32) -> Result<Report, String> {
    demo::poison(&mut setup.output, 0xdead_beef);
    let kernel = sched.register_kernel(demo::shift_kernel()).map_err(|e| e.to_string())?;
    let d_in = sched.alloc::<u32>(setup.len).map_err(|e| e.to_string())?;
    let d_out = sched.alloc::<u32>(setup.len).map_err(|e| e.to_string())?;
    let report =
        run_shift(sched, &kernel, &setup.input, &setup.output, &d_in, &d_out, 0..setup.chunks, setup.len, iters)
            .map_err(|e| e.to_string())?;
    let bad = mismatches(&setup.input, &setup.output, 0..setup.len * setup.chunks, iters);
    if bad > 0 {
        return Err(format!("{bad} of {} output elements differ from the CPU reference", setup.len * setup.chunks));
    }
    Ok(report)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn real_main(cli: Cli) -> Result<(), String> {
    if cli.streams.is_empty() || cli.streams.contains(&0) || cli.depths.is_empty() || cli.depths.contains(&0) {
        return Err(format!(
            "--streams {:?} and --depths {:?} must be non-empty lists of positive numbers",
            cli.streams, cli.depths
        ));
    }
    if !(cli.sim_scale.is_finite() && cli.sim_scale > 0.0) {
        return Err(format!("--sim-scale {} must be a positive number", cli.sim_scale));
    }
    let backend = Backend::from_name(&cli.backend, SimProfile::h100().with_time_scale(cli.sim_scale))
        .map_err(|e| e.to_string())?;
    let on_sim = !matches!(backend, Backend::Cuda);
    let mib = cli.chunk_mib.unwrap_or(if on_sim { 4.0 } else { 16.0 });
    if !(mib.is_finite() && mib > 0.0 && mib <= 1024.0) {
        return Err(format!("--chunk-mib {mib} must be in (0, 1024]"));
    }
    let len = ((mib * 1048576.0) as usize / 4).max(1);
    let chunks = cli.chunks as usize;
    let serial = Scheduler::builder()
        .backend(backend.clone())
        .streams(1)
        .device_timing(cli.device_timing)
        .build()
        .map_err(|e| e.to_string())?;
    let gpu = serial.gpu_info()[0].clone();
    println!(
        "chariot demo: backend {} ({}, {} copy engines){}",
        serial.backend_name(),
        gpu.name,
        gpu.copy_engines,
        if on_sim { format!(", modeled time x{}", cli.sim_scale) } else { String::new() }
    );
    let input = serial.alloc_host::<u32>(len * chunks).map_err(|e| e.to_string())?;
    let output = serial.alloc_host::<u32>(len * chunks).map_err(|e| e.to_string())?;
    let mut setup = Setup { backend, device_timing: cli.device_timing, input, output, len, chunks };
    fill(&mut setup.input, cli.seed);
    println!("N = {chunks} chunks of {:.1} MiB ({len} u32)", (len * 4) as f64 / 1048576.0);

    // Calibrate: the kernel as long as a copy (download ≈ kernel ≈ readback).
    let iters = match cli.iters {
        Some(i) => i,
        None => {
            let probe = 256u32;
            let mut s1 = Setup { chunks: chunks.min(4), ..setup };
            let warm = run(&mut s1, &serial, probe)?;
            let (d, k) = (median_of(&warm, Stage::Download), median_of(&warm, Stage::Kernel).max(1));
            setup = Setup { chunks, ..s1 };
            ((probe as f64 * d as f64 / k as f64).round() as u32).max(1)
        }
    };
    let serial_report = run(&mut setup, &serial, iters)?;
    drop(serial);
    let t_serial = serial_report.makespan_ns;
    let per_task: Vec<(u64, u64, u64)> = {
        let mut m = std::collections::BTreeMap::<u64, (u64, u64, u64)>::new();
        for r in &serial_report.records {
            let e = m.entry(r.task.0).or_default();
            match r.stage {
                Stage::Download => e.0 += r.duration_ns(),
                Stage::Kernel => e.1 += r.duration_ns(),
                Stage::Readback => e.2 += r.duration_ns(),
                Stage::Cpu => {}
            }
        }
        m.into_values().collect()
    };
    let (sd, sk, sr) = (
        median(per_task.iter().map(|t| t.0).collect()),
        median(per_task.iter().map(|t| t.1).collect()),
        median(per_task.iter().map(|t| t.2).collect()),
    );
    let rates = {
        let probe = scheduler(&setup, 4, 2).map_err(|e| e.to_string())?;
        demo::probe_rates(&probe, demo::shift_kernel(), &setup.input, &mut setup.output, setup.len, setup.chunks, iters)
            .map_err(|e| e.to_string())?
    };
    let duplex = rates.link.both / (rates.link.up + rates.link.down);
    // The bound: every chunk's bytes at the sustained rates, kernels at their sustained time.
    let bytes = (len * 4) as u64;
    let hw_tasks = vec![TaskWork { up_bytes: bytes, kernel_ns: rates.kernel_ns as u64, down_bytes: bytes }; chunks];
    let bound = HardwareBound::one_gpu(&hw_tasks, rates.link);
    let ideal = 3.0 * chunks as f64 / (chunks as f64 + 2.0);
    println!(
        "iters = {iters}; serial (S = 1): T = {:.3} ms; per chunk download {:.1} us, kernel {:.1} us, readback {:.1} us",
        t_serial as f64 / 1e6,
        sd as f64 / 1e3,
        sk as f64 / 1e3,
        sr as f64 / 1e3
    );
    println!(
        "sustained: up {:.1} GB/s, down {:.1} GB/s, both at once {:.1} GB/s ({:.3} of the sum), kernel {:.1} us",
        rates.link.up,
        rates.link.down,
        rates.link.both,
        duplex,
        rates.kernel_ns / 1e3
    );
    println!(
        "hardware bound T_hw = {:.3} ms ({}), speedup bound {:.2}x (3N/(N+2) = {ideal:.2}x with equal stages and free duplex)",
        bound.t_ns as f64 / 1e6,
        bound.limit,
        t_serial as f64 / bound.t_ns.max(1) as f64
    );
    println!();
    println!(
        "{:>5} {:>5} {:>10} {:>10} {:>8} {:>8} {:>9} {:>8} {:>10} {:>10}",
        "S", "depth", "T ms", "T_LB ms", "eps", "speedup", "of bound", "eps_hw", "rt us/cmd", "drv us/cmd"
    );
    let mut rows = Vec::new();
    let mut best: Option<Report> = None;
    for &depth in &cli.depths {
        for &s in &cli.streams {
            let sched = scheduler(&setup, s, depth).map_err(|e| e.to_string())?;
            let report = run(&mut setup, &sched, iters)?;
            let speedup = t_serial as f64 / report.makespan_ns as f64;
            let bound_speedup = t_serial as f64 / bound.t_ns.max(1) as f64;
            let eps_hw = report.makespan_ns as f64 / bound.t_ns.max(1) as f64 - 1.0;
            println!(
                "{s:>5} {depth:>5} {:>10.3} {:>10.3} {:>7.1}% {:>7.2}x {:>8.1}% {:>7.1}% {:>10.2} {:>10.2}",
                report.makespan_ms(),
                report.lower_bound.t_lb_ns as f64 / 1e6,
                report.epsilon.unwrap_or(f64::NAN) * 100.0,
                speedup,
                100.0 * speedup / bound_speedup,
                eps_hw * 100.0,
                report.dispatch.runtime_ns_per_command() / 1e3,
                report.dispatch.driver_ns_per_command() / 1e3
            );
            rows.push(format!(
                "{},{},{},{},{},{},{},{:.6},{:.6},{:.4},{:.6},{:.5},{:.6},{},{:.4},{:.5},{:.4},{:.3},{:.3}",
                report.backend,
                gpu.name,
                chunks,
                len * 4,
                iters,
                s,
                depth,
                report.makespan_ms(),
                t_serial as f64 / 1e6,
                speedup,
                report.lower_bound.t_lb_ns as f64 / 1e6,
                report.epsilon.unwrap_or(f64::NAN),
                bound.t_ns as f64 / 1e6,
                bound.limit,
                bound_speedup,
                eps_hw,
                duplex,
                report.dispatch.runtime_ns_per_command() / 1e3,
                report.dispatch.driver_ns_per_command() / 1e3,
            ));
            if best.as_ref().is_none_or(|b| report.makespan_ns < b.makespan_ns) {
                best = Some(report);
            }
        }
    }
    if let Some(b) = &best {
        println!("\nbest run:\n{b}");
    }
    if let Some(dir) = cli.out {
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let mut f = std::fs::File::create(dir.join("demo.csv")).map_err(|e| e.to_string())?;
        writeln!(f, "backend,device,chunks,chunk_bytes,iters,streams,depth,makespan_ms,serial_ms,speedup,paper_t_lb_ms,paper_eps,hw_bound_ms,hw_limit,hw_speedup_bound,eps_hw,duplex_factor,runtime_us_per_cmd,driver_us_per_cmd")
            .map_err(|e| e.to_string())?;
        for r in rows {
            writeln!(f, "{r}").map_err(|e| e.to_string())?;
        }
        if let Some(b) = best {
            std::fs::write(dir.join("demo-trace.json"), b.chrome_trace()).map_err(|e| e.to_string())?;
            let title = format!("demo, best run: S = {}, T = {:.3} ms", b.streams, b.makespan_ms());
            if let Err(e) = chariot::plot::gantt(dir.join("demo-gantt.png"), &title, &b) {
                eprintln!("Gantt chart not drawn: {e}");
            }
        }
        for (name, rep) in [("serial", &serial_report)] {
            let mut f =
                std::fs::File::create(dir.join(format!("demo-{name}-records.csv"))).map_err(|e| e.to_string())?;
            writeln!(f, "task,command,stage,stream,dispatched_ns,start_ns,end_ns,bytes").map_err(|e| e.to_string())?;
            for r in &rep.records {
                writeln!(
                    f,
                    "{},{},{},{},{},{},{},{}",
                    r.task.0, r.command, r.stage, r.stream, r.dispatched_ns, r.start_ns, r.end_ns, r.bytes
                )
                .map_err(|e| e.to_string())?;
            }
        }
        println!("wrote {}/demo.csv and demo-trace.json", dir.display());
    }
    Ok(())
}
