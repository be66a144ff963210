//! `cargo run --release`: the paper's dummy shift kernel over N chunks on the best
//! backend, serially and pipelined with chariot's defaults (chosen from the hardware),
//! with T, the paper's estimate T_LB and its ε, the bound (hardware-aware: no run is
//! faster, checked), the speedup over serial, and an element-by-element check. `--sweep` also runs a grid of hand-set
//! configurations (S × stage depth × kernel concurrency), alternated with the default,
//! and says how far the default is from the best of them.

use chariot::report::{HardwareBound, LinkRates, Report, TaskWork};
use chariot::sim::SimProfile;
use chariot::{Backend, HostBuffer, Scheduler, Stage};
use chariot_studies::demo::{self, fill, mismatches, run_shift};
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Pipelines the paper's dummy shift kernel over N chunks with chariot's defaults and
/// compares it with the serial loop, with what the hardware allows, and (--sweep) with
/// every hand-set configuration of a grid.
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
    /// Also run the grid of --streams × --depths × --kernels, each set by hand (no
    /// adaptation), alternated with the default, and compare.
    #[arg(long)]
    sweep: bool,
    /// Streams per GPU of the sweep's grid.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16", value_parser = clap::value_parser!(usize))]
    streams: Vec<usize>,
    /// Stage depths of the sweep's grid (1: the paper's gating; 2: a second command queued per stage).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    depths: Vec<usize>,
    /// Kernel concurrencies of the sweep's grid (kernels one GPU runs at once).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    kernels: Vec<usize>,
    /// Timed runs of each configuration after a warm-up, alternated (default 5 with
    /// --sweep, else 1); medians are reported.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1000))]
    repeat: Option<u64>,
    /// Kernel rounds per element (default: calibrated so the kernel takes as long as a copy).
    #[arg(long)]
    iters: Option<u32>,
    /// On sim: modeled time runs this many times slower than the modeled H100, so the
    /// CPU's real work (copies, the kernel's twin) stays inside the modeled times.
    #[arg(long, default_value_t = 40.0)]
    sim_scale: f64,
    /// Directory for demo.csv and the default run's Chrome trace (created if missing).
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

/// One configuration of the comparison: chariot's defaults, or S, depth and kernel
/// concurrency set by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Config {
    Default,
    Hand { streams: usize, depth: usize, kernels: usize },
}

impl Config {
    fn name(&self) -> String {
        match self {
            Config::Default => "default".into(),
            Config::Hand { streams, depth, kernels } => format!("S{streams} d{depth} k{kernels}"),
        }
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Median duration of `stage` commands.
fn median_of(report: &Report, stage: Stage) -> u64 {
    median(report.records.iter().filter(|r| r.stage == stage).map(|r| r.duration_ns()).collect())
}

fn scheduler(setup: &Setup, config: Config) -> chariot::Result<Scheduler> {
    let b = Scheduler::builder().backend(setup.backend.clone()).device_timing(setup.device_timing);
    match config {
        Config::Default => b.build(),
        Config::Hand { streams, depth, kernels } => {
            b.streams(streams).stage_depth(depth).kernel_concurrency(kernels).adapt(false).build()
        }
    }
}

/// A configuration's scheduler with its kernel and device buffers.
struct Pipeline {
    config: Config,
    sched: Scheduler,
    kernel: chariot::kernel::KernelHandle,
    d_in: chariot::DeviceBuffer<u32>,
    d_out: chariot::DeviceBuffer<u32>,
}

impl Pipeline {
    fn new(setup: &Setup, config: Config) -> Result<Pipeline, String> {
        let sched = scheduler(setup, config).map_err(|e| format!("{}: {e}", config.name()))?;
        let kernel = sched.register_kernel(demo::shift_kernel()).map_err(|e| e.to_string())?;
        let d_in = sched.alloc::<u32>(setup.len).map_err(|e| e.to_string())?;
        let d_out = sched.alloc::<u32>(setup.len).map_err(|e| e.to_string())?;
        Ok(Pipeline { config, sched, kernel, d_in, d_out })
    }

    /// Runs the whole chunk set, checks every element, returns the report.
    fn run(&self, setup: &mut Setup, iters: u32) -> Result<Report, String> {
        demo::poison(&mut setup.output, 0xdead_beef);
        let (input, output) = (&setup.input, &setup.output);
        let report = run_shift(
            &self.sched,
            &self.kernel,
            input,
            output,
            &self.d_in,
            &self.d_out,
            0..setup.chunks,
            setup.len,
            iters,
        )
        .map_err(|e| e.to_string())?;
        let bad = mismatches(&setup.input, &setup.output, 0..setup.len * setup.chunks, iters);
        if bad > 0 {
            return Err(format!(
                "{}: {bad} of {} output elements differ from the CPU reference",
                self.config.name(),
                setup.len * setup.chunks
            ));
        }
        Ok(report)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match settle(cli).and_then(|plan| {
        let m = measure(&plan)?;
        print_results(&plan, &m);
        if let Some(dir) = &plan.out {
            write_files(dir, &m)?;
        }
        m.bound_check()
    }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the command line asks for, checked, with the defaults of the backend it names.
struct Plan {
    backend: Backend,
    on_sim: bool,
    device_timing: bool,
    /// Elements (u32) per chunk.
    len: usize,
    chunks: usize,
    repeat: u64,
    /// The default first, then (--sweep) the grid.
    configs: Vec<Config>,
    iters: Option<u32>,
    sim_scale: f64,
    seed: u64,
    /// The output directory, created and writable before any run.
    out: Option<PathBuf>,
}

/// Checks the command line and settles every choice before a scheduler is built; the
/// output directory is made (and a file in it tried) now, so a bad path costs no run.
fn settle(cli: Cli) -> Result<Plan, String> {
    for (name, list) in [("--streams", &cli.streams), ("--depths", &cli.depths), ("--kernels", &cli.kernels)] {
        if list.is_empty() || list.contains(&0) {
            return Err(format!("{name} {list:?} must be a non-empty list of positive numbers"));
        }
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
    let mut configs = vec![Config::Default];
    if cli.sweep {
        for &streams in &cli.streams {
            for &depth in &cli.depths {
                for &kernels in &cli.kernels {
                    configs.push(Config::Hand { streams, depth, kernels });
                }
            }
        }
    }
    if let Some(dir) = &cli.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
        tempfile_in(dir).map_err(|e| format!("--out {}: cannot write there: {e}", dir.display()))?;
    }
    Ok(Plan {
        backend,
        on_sim,
        device_timing: cli.device_timing,
        len: ((mib * 1048576.0) as usize / 4).max(1),
        chunks: cli.chunks as usize,
        repeat: cli.repeat.unwrap_or(if cli.sweep { 5 } else { 1 }),
        configs,
        iters: cli.iters,
        sim_scale: cli.sim_scale,
        seed: cli.seed,
        out: cli.out,
    })
}

/// Creates and removes a file in `dir`: whether the demo's outputs can be written there.
fn tempfile_in(dir: &std::path::Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".chariot-demo-probe-{}", std::process::id()));
    std::fs::File::create(&probe)?;
    std::fs::remove_file(&probe)
}

/// One timed run: its configuration, repetition, report and bound.
struct Run {
    config: usize,
    rep: u64,
    report: Report,
    bound: HardwareBound,
}

/// Everything the runs measured, for the printout and the files.
struct Measured {
    gpu: chariot::cuda::GpuInfo,
    len: usize,
    chunks: usize,
    iters: u32,
    serial_report: Report,
    /// How much of up + down both directions reach at once, of the bound's link rates.
    duplex: f64,
    /// The bound of the probed (or modeled) rates; each run has its own in `runs`.
    bound: HardwareBound,
    pipelines: Vec<Pipeline>,
    runs: Vec<Run>,
}

/// Runs the serial loop (and calibrates the kernel to a copy's time), finds the bound's
/// rates, then the configurations, warmed up once each and timed alternately.
fn measure(plan: &Plan) -> Result<Measured, String> {
    let (len, chunks) = (plan.len, plan.chunks);
    let serial = Scheduler::builder()
        .backend(plan.backend.clone())
        .streams(1)
        .device_timing(plan.device_timing)
        .build()
        .map_err(|e| e.to_string())?;
    let gpu = serial.gpu_info()[0].clone();
    println!(
        "chariot demo: backend {} ({}, {} copy engines, {} SMs){}",
        serial.backend_name(),
        gpu.name,
        gpu.copy_engines,
        gpu.sm_count,
        if plan.on_sim { format!(", modeled time x{}", plan.sim_scale) } else { String::new() }
    );
    let input = serial.alloc_host::<u32>(len * chunks).map_err(|e| e.to_string())?;
    let output = serial.alloc_host::<u32>(len * chunks).map_err(|e| e.to_string())?;
    let mut setup =
        Setup { backend: plan.backend.clone(), device_timing: plan.device_timing, input, output, len, chunks };
    fill(&mut setup.input, plan.seed);
    println!("N = {chunks} chunks of {:.1} MiB ({len} u32)", (len * 4) as f64 / 1048576.0);

    let serial = Pipeline::from(serial, &setup)?;
    // Calibrate: the kernel as long as a copy (download ≈ kernel ≈ readback).
    let iters = match plan.iters {
        Some(i) => i,
        None => {
            let probe = 256u32;
            let mut s1 = Setup { chunks: chunks.min(4), ..setup };
            let warm = serial.run(&mut s1, probe)?;
            let (d, k) = (median_of(&warm, Stage::Download), median_of(&warm, Stage::Kernel).max(1));
            setup = Setup { chunks, ..s1 };
            ((probe as f64 * d as f64 / k as f64).round() as u32).max(1)
        }
    };
    let serial_report = serial.run(&mut setup, iters)?;
    drop(serial);
    let t_serial = serial_report.makespan_ns;
    let stage_median = |stage: Stage| {
        let mut per_task = std::collections::BTreeMap::<u64, u64>::new();
        for r in serial_report.records.iter().filter(|r| r.stage == stage) {
            *per_task.entry(r.task.0).or_default() += r.duration_ns();
        }
        median(per_task.into_values().collect())
    };
    let (sd, sk, sr) = (stage_median(Stage::Download), stage_median(Stage::Kernel), stage_median(Stage::Readback));

    // Rates for the bound: the sim's own model, or probed on the GPU (and raised, run
    // by run, to what each run's copies achieved: the bound must hold for the run).
    let bytes = (len * 4) as u64;
    let (link, kernel_ns) = {
        let probe = Scheduler::builder().backend(plan.backend.clone()).build().map_err(|e| e.to_string())?;
        match probe.modeled_rates() {
            Some((link, _)) => {
                // The shift kernel's modeled time alone, at the sim's time scale.
                let k = len as f64 * iters as f64 * 1e9 / demo::SIM_SHIFT_RATE * plan.sim_scale;
                (link, k)
            }
            None => {
                let r = demo::probe_rates(
                    &probe,
                    demo::shift_kernel(),
                    &setup.input,
                    &mut setup.output,
                    setup.len,
                    setup.chunks,
                    iters,
                )
                .map_err(|e| e.to_string())?;
                (r.link, r.kernel_ns)
            }
        }
    };
    let duplex = link.both / (link.up + link.down);
    let hw_tasks = vec![TaskWork { up_bytes: bytes, kernel_ns: kernel_ns as u64, down_bytes: bytes }; chunks];
    // Each run's own bound: on CUDA, the probed rates raised to what its copies did (no
    // run beats its own copies); on sim, the model's own rates.
    let bound_of = |report: &Report| {
        let rates = if plan.on_sim { link } else { link.at_least(LinkRates::observed(&report.records)) };
        HardwareBound::one_gpu(&hw_tasks, rates)
    };
    let bound = HardwareBound::one_gpu(&hw_tasks, link);
    let ideal = 3.0 * chunks as f64 / (chunks as f64 + 2.0);
    println!(
        "iters = {iters}; serial (S = 1): T = {:.3} ms; per chunk download {:.1} us, kernel {:.1} us, readback {:.1} us",
        t_serial as f64 / 1e6,
        sd as f64 / 1e3,
        sk as f64 / 1e3,
        sr as f64 / 1e3
    );
    println!(
        "{}: up {:.1} GB/s, down {:.1} GB/s, both at once {:.1} GB/s ({duplex:.3} of the sum), kernel {:.1} us",
        if plan.on_sim { "modeled" } else { "sustained" },
        link.up,
        link.down,
        link.both,
        kernel_ns / 1e3
    );
    println!(
        "{bound}: no run is faster; speedup at most {:.2}x (3N/(N+2) = {ideal:.2}x with equal stages and free duplex)",
        t_serial as f64 / bound.t_ns.max(1) as f64
    );

    // The default, and with --sweep the grid, each built once and warmed up once.
    let mut pipelines = Vec::with_capacity(plan.configs.len());
    for &c in &plan.configs {
        let p = Pipeline::new(&setup, c)?;
        p.run(&mut setup, iters)?;
        pipelines.push(p);
    }
    println!("\nchariot's defaults here:\n{}", pipelines[0].sched.tuning());
    // Timed runs, alternated: each repetition visits every configuration, from a
    // different one each time.
    let mut runs: Vec<Run> = Vec::new();
    for rep in 0..plan.repeat {
        for i in 0..pipelines.len() {
            let c = (i + rep as usize) % pipelines.len();
            let report = pipelines[c].run(&mut setup, iters)?;
            let bound = bound_of(&report);
            runs.push(Run { config: c, rep, report, bound });
        }
    }
    Ok(Measured { gpu, len, chunks, iters, serial_report, duplex, bound, pipelines, runs })
}

impl Measured {
    /// The serial loop's makespan.
    fn t_serial(&self) -> u64 {
        self.serial_report.makespan_ns
    }

    /// The runs faster than their own bound (none, or the bound is not one).
    fn below_bound(&self) -> impl Iterator<Item = &Run> {
        self.runs.iter().filter(|r| r.report.makespan_ns < r.bound.t_ns)
    }

    /// The default configuration's fastest run.
    fn default_fastest(&self) -> Option<&Run> {
        self.runs.iter().filter(|r| r.config == 0).min_by_key(|r| r.report.makespan_ns)
    }

    /// An error where a run beat its bound.
    fn bound_check(&self) -> Result<(), String> {
        match self.below_bound().count() {
            0 => Ok(()),
            n => Err(format!("{n} run(s) below the hardware bound: the bound is not one")),
        }
    }
}

/// The table of medians per configuration, the default against the grid's best, the
/// bound check and the default's fastest report.
fn print_results(plan: &Plan, m: &Measured) {
    let t_serial = m.t_serial();
    println!();
    println!(
        "{:>14} {:>10} {:>10} {:>8} {:>8} {:>9} {:>8} {:>10} {:>10}",
        "config", "T ms", "est. ms", "eps_est", "speedup", "of bound", "eps", "rt us/cmd", "drv us/cmd"
    );
    let mut medians = Vec::new();
    for (c, p) in m.pipelines.iter().enumerate() {
        let mine: Vec<&Run> = m.runs.iter().filter(|r| r.config == c).collect();
        let t = median(mine.iter().map(|r| r.report.makespan_ns).collect());
        let t_lb = median(mine.iter().map(|r| r.report.lower_bound.t_lb_ns).collect());
        let eps_hw =
            median_f(mine.iter().map(|r| r.report.makespan_ns as f64 / r.bound.t_ns.max(1) as f64 - 1.0).collect());
        let rt = median_f(mine.iter().map(|r| r.report.dispatch.runtime_ns_per_command()).collect());
        let drv = median_f(mine.iter().map(|r| r.report.dispatch.driver_ns_per_command()).collect());
        let speedup = t_serial as f64 / t.max(1) as f64;
        println!(
            "{:>14} {:>10.3} {:>10.3} {:>7.1}% {:>7.2}x {:>8.1}% {:>7.1}% {:>10.2} {:>10.2}",
            p.config.name(),
            t as f64 / 1e6,
            t_lb as f64 / 1e6,
            (t as f64 / t_lb.max(1) as f64 - 1.0) * 100.0,
            speedup,
            100.0 * speedup / (t_serial as f64 / m.bound.t_ns.max(1) as f64),
            eps_hw * 100.0,
            rt / 1e3,
            drv / 1e3
        );
        medians.push(t);
    }
    println!(
        "(est.: the paper's T_LB, an estimate a run can beat: its T1 assumes the copy directions never overlap, its \
         T2 adds up kernels that run side by side; eps: T against the bound, which no run beats)"
    );
    if let Some((best, &t_best)) = medians.iter().enumerate().skip(1).min_by_key(|(_, &t)| t) {
        println!(
            "\ndefault {:.3} ms against the best hand-set configuration ({}) {:.3} ms: {:+.1}% (medians of {})",
            medians[0] as f64 / 1e6,
            m.pipelines[best].config.name(),
            t_best as f64 / 1e6,
            (medians[0] as f64 / t_best.max(1) as f64 - 1.0) * 100.0,
            plan.repeat
        );
    }
    let below: Vec<&Run> = m.below_bound().collect();
    if below.is_empty() {
        println!("bound check: no makespan of the {} runs below its bound", m.runs.len());
    }
    for r in below {
        println!(
            "BOUND VIOLATED: {} run {}: makespan {:.3} ms < bound {:.3} ms ({})",
            m.pipelines[r.config].config.name(),
            r.rep,
            r.report.makespan_ms(),
            r.bound.t_ns as f64 / 1e6,
            r.bound.limit
        );
    }
    if let Some(r) = m.default_fastest() {
        println!("\nthe default's fastest run:\n{}", r.report);
    }
}

/// demo.csv (every timed run), the default's fastest run as a Chrome trace and a Gantt
/// chart, and the serial run's records, in `dir`.
fn write_files(dir: &std::path::Path, m: &Measured) -> Result<(), String> {
    let (len, chunks, iters, t_serial) = (m.len, m.chunks, m.iters, m.t_serial());
    let io = |e: std::io::Error| format!("writing in {}: {e}", dir.display());
    let mut f = std::fs::File::create(dir.join("demo.csv")).map_err(io)?;
    writeln!(f, "backend,device,chunks,chunk_bytes,iters,config,streams,depth,kernels,rep,makespan_ms,serial_ms,speedup,paper_t_lb_ms,paper_eps,hw_bound_ms,hw_limit,eps_hw,duplex_factor,runtime_us_per_cmd,driver_us_per_cmd")
        .map_err(io)?;
    for r in &m.runs {
        let p = &m.pipelines[r.config];
        let t = p.sched.tuning();
        let kernels = p.sched.thresholds().local[Stage::Kernel.index()];
        let rep = &r.report;
        writeln!(
            f,
            "{},{},{chunks},{},{iters},{},{},{},{},{},{:.6},{:.6},{:.4},{:.6},{:.5},{:.6},{},{:.5},{:.4},{:.3},{:.3}",
            rep.backend,
            m.gpu.name,
            len * 4,
            p.config.name(),
            t.streams,
            t.stage_depth,
            if t.kernel_fills.is_some() { "auto".to_string() } else { kernels.to_string() },
            r.rep,
            rep.makespan_ms(),
            t_serial as f64 / 1e6,
            t_serial as f64 / rep.makespan_ns.max(1) as f64,
            rep.lower_bound.t_lb_ns as f64 / 1e6,
            rep.epsilon.unwrap_or(f64::NAN),
            r.bound.t_ns as f64 / 1e6,
            r.bound.limit,
            rep.makespan_ns as f64 / r.bound.t_ns.max(1) as f64 - 1.0,
            m.duplex,
            rep.dispatch.runtime_ns_per_command() / 1e3,
            rep.dispatch.driver_ns_per_command() / 1e3,
        )
        .map_err(io)?;
    }
    if let Some(r) = m.default_fastest() {
        std::fs::write(dir.join("demo-trace.json"), r.report.chrome_trace()).map_err(io)?;
        let title =
            format!("demo, the default's fastest run: S = {}, T = {:.3} ms", r.report.streams, r.report.makespan_ms());
        if let Err(e) = chariot_studies::plot::gantt(dir.join("demo-gantt.png"), &title, &r.report) {
            eprintln!("Gantt chart not drawn: {e}");
        }
    }
    let mut f = std::fs::File::create(dir.join("demo-serial-records.csv")).map_err(io)?;
    writeln!(f, "task,command,stage,stream,dispatched_ns,start_ns,end_ns,bytes").map_err(io)?;
    for r in &m.serial_report.records {
        writeln!(
            f,
            "{},{},{},{},{},{},{},{}",
            r.task.0, r.command, r.stage, r.stream, r.dispatched_ns, r.start_ns, r.end_ns, r.bytes
        )
        .map_err(io)?;
    }
    println!("wrote {}/demo.csv and demo-trace.json", dir.display());
    Ok(())
}

impl Pipeline {
    /// The serial pipeline on a scheduler built already (the one that owns the host buffers).
    fn from(sched: Scheduler, setup: &Setup) -> Result<Pipeline, String> {
        let kernel = sched.register_kernel(demo::shift_kernel()).map_err(|e| e.to_string())?;
        let d_in = sched.alloc::<u32>(setup.len).map_err(|e| e.to_string())?;
        let d_out = sched.alloc::<u32>(setup.len).map_err(|e| e.to_string())?;
        Ok(Pipeline { config: Config::Default, sched, kernel, d_in, d_out })
    }
}
