//! The overhead study of the paper's §6.1, with the pipelines a CUDA programmer would
//! write by hand measured in the same run, on one GPU or several.
//!
//! The dummy shift kernel over N chunks of fixed or random size (3-30 MB), the transfer
//! ratio r = (T_D + T_R)/T_K set by the kernel's iteration count, chariot for each
//! D × S × order × stage depth, and the baselines: at D = 1 serial, breadth-first,
//! depth-first and CUDA graph for each S; at D > 1 the static split (one host thread
//! per GPU, each running the breadth-first pipeline over its own contiguous share of
//! the chunks: the paper's "OpenMP version"). At D > 1 chariot also runs with its
//! dispatchers unpinned (`--pin`) and with the host buses B calibrated from copies of
//! all GPUs at once (`--buses`). Every run's output is checked element by element.
//! Each row gets the hardware-aware bound for its D from rates measured in the same
//! run, and the study checks that no measured makespan falls below it.
//!
//! `overhead --help` lists the options; `--out DIR` writes `overhead.csv`,
//! `calibration.csv`, `sim-args.txt` (the options that make the sim predict this
//! machine), the plots, and with `--trace` the fastest run's Chrome trace per point;
//! `--predict-from GPU.csv` on the sim backend writes `prediction.csv`, the sim's error
//! on each configuration of a GPU run; `--plot-from CSV` analyses a CSV again.
//!
//! This file holds the options and the study's outline; `runs` the runs of one point,
//! `csv` the CSV files, `summary` the tables printed, `predict` the sim's prediction,
//! `plots` the plots, `host` the host study, `ranks` the study under `mpirun`.
//!
//! Under `mpirun -np N` (built with the root package's `mpi` feature) chariot's runs
//! are the cluster form over every rank's GPUs: `--gpus` is each rank's D, the rows'
//! D is all of them, and rank 0 writes what one process would. chariot's defaults run
//! there (or with --no-default a grid of one); the hand-written baselines are one
//! process's and do not run there.

mod csv;
mod host;
mod plan;
mod plots;
mod predict;
mod ranks;
mod runs;
mod summary;

use chariot::report::LinkRates;
use chariot::sim::SimProfile;
use chariot::{Backend, HostBuffer, Order};
use chariot_studies::baseline::Baseline;
use chariot_studies::demo::{self, fill};
use clap::Parser;
use csv::{read_calibration, read_rows, write_row, Row, HEADER};
use indicatif::{ProgressBar, ProgressStyle};
use plan::{below_bound, bound_check, bound_for, chunk_ranges, elements, work, Machine};
use ranks::Ranks;
use runs::{Point, Probe, Study};
use std::io::Write;
use std::path::{Path, PathBuf};

/// chariot against the hand-written pipelines, across the transfer ratio r and the
/// number of GPUs D.
#[derive(Parser, Debug)]
#[command(name = "overhead", long_about = None)]
pub struct Cli {
    /// Chunks N.
    #[arg(long, default_value_t = 48)]
    pub chunks: usize,
    /// Smallest chunk, MiB.
    #[arg(long, default_value_t = 3.0)]
    pub min_mib: f64,
    /// Largest chunk, MiB.
    #[arg(long, default_value_t = 30.0)]
    pub max_mib: f64,
    /// Target transfer ratios r, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0.1,1,10,100")]
    pub ratios: Vec<f64>,
    /// Chunk sizes: fixed (all (min+max)/2), random (uniform in [min, max]), or both.
    #[arg(long, value_delimiter = ',', default_value = "fixed,random")]
    pub sizes: Vec<String>,
    /// Seeds of the random sizes.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub seeds: Vec<u64>,
    /// Streams per GPU.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    pub streams: Vec<usize>,
    /// Ordering rules: fcfs, lf, sf.
    #[arg(long, value_delimiter = ',', default_value = "fcfs,lf,sf", value_parser = order)]
    pub orders: Vec<Order>,
    /// Stage depths.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub depths: Vec<usize>,
    /// Kernel concurrencies of the hand-set grid (kernels one GPU runs at once); none
    /// given: the kernel stage admits kernels by their fill, as by default.
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<usize>,
    /// Timed batches of every chariot configuration at each point, alternated between
    /// the configurations (each configuration warmed up once first).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Skip chariot's defaults (by default they run at every point and D beside the
    /// grid of --streams × --orders × --depths × --kernels, which is set by hand and
    /// not adapted).
    #[arg(long)]
    pub no_default: bool,
    /// Kernel iterations at every point, in place of those that each target r asks
    /// for (r then only names the point; its model r is still computed).
    #[arg(long)]
    pub iters: Option<u32>,
    /// Skip the hand-set grid: chariot's defaults only (so under mpirun, unless
    /// --no-default).
    #[arg(long)]
    pub no_grid: bool,
    /// GPU counts D, comma-separated: chariot on the first D GPUs. The one-GPU
    /// baselines run at D = 1, the static split at each D > 1.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub gpus: Vec<usize>,
    /// Dispatcher pinning: on (each dispatcher on a core near its GPU), off, or on,off
    /// (both, back to back for each configuration, with the first --buses only).
    #[arg(long, value_delimiter = ',', default_value = "on")]
    pub pin: Vec<String>,
    /// Ratios r at which the pinning values after the first also run (default: every r).
    #[arg(long, value_delimiter = ',')]
    pub pin_ratios: Option<Vec<f64>>,
    /// Host buses B (the global thresholds G_2 = G_4 = B follow): default (one per
    /// GPU), calibrated (from copy rates of all GPUs at once), or a number; a list runs
    /// each, back to back for each configuration. Values that come to the same B at a
    /// D run once, under the first name.
    #[arg(long, value_delimiter = ',', default_value = "default")]
    pub buses: Vec<String>,
    /// Skip the hand-written baselines (and the static split).
    #[arg(long)]
    pub no_baselines: bool,
    /// On sim: predict a real GPU. Link rates measured there, GB/s: up,down,both.
    /// Implies timing-only simulation (outputs are not computed or checked).
    #[arg(long, value_delimiter = ',')]
    pub sim_link: Option<Vec<f64>>,
    /// On sim: the shift kernel's cost measured there, ns per element: a,b for a + b·iters.
    #[arg(long, value_delimiter = ',')]
    pub sim_kernel: Option<Vec<f64>>,
    /// On sim with --sim-link: what the host carries with all GPUs copying at once,
    /// GB/s: up,down,both, modeled as one bus that every GPU shares. Without it each
    /// simulated GPU has its own link.
    #[arg(long, value_delimiter = ',')]
    pub sim_host: Option<Vec<f64>>,
    /// auto, cuda or sim (baselines need cuda).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    pub backend: String,
    /// With --out: also write the Chrome trace of chariot's fastest run at each point
    /// and D (trace-<sizes>-<seed>-r<r>-d<D>.json; open in Perfetto).
    #[arg(long)]
    pub trace: bool,
    /// Directory for overhead.csv, calibration.csv, sim-args.txt and the plots.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run nothing: analyse a CSV this study wrote earlier. Prints the summary and the
    /// bound check and draws the plots (into --out, default the CSV's folder); with the
    /// run's calibration.csv beside the CSV, computes the bounds again first and writes
    /// the rows to --out/overhead.csv (give the run's --chunks, --min-mib, --max-mib).
    #[arg(long)]
    pub plot_from: Option<PathBuf>,
    /// Compare chariot's makespans of this run (or of --plot-from) with those of the
    /// same configurations in this CSV, written by a run on a GPU: prints the error
    /// per D and writes prediction.csv into --out. This run takes each point's kernel
    /// iterations from that CSV, so both runs time the same kernels.
    #[arg(long)]
    pub predict_from: Option<PathBuf>,
    /// Only draw the Gantt chart (gantt.png, into --out or beside the trace) of a Chrome
    /// trace written by chariot (e.g. the demo's demo-trace.json); run nothing.
    #[arg(long)]
    pub gantt_from: Option<PathBuf>,
    /// Run nothing else: the host study (the hardware-aware defaults). At each D of --gpus, chunks of
    /// --max-mib copied up alone, down alone and both ways at once, 5 times each, with
    /// each GPU's rate in each direction (its bytes over its busy time); then the host
    /// memory's own bandwidth (memcpy on 1 and on every core). Writes host.csv into --out.
    #[arg(long)]
    pub host_study: bool,
    /// Accepted for `cargo bench`.
    #[arg(long, hide = true)]
    pub bench: bool,
}

fn main() -> Result<(), String> {
    let cli = Cli::parse();
    if let Some(trace) = &cli.gantt_from {
        return plots::gantt(trace, cli.out.as_deref());
    }
    if let Some(csv) = &cli.plot_from {
        return reanalyse(&cli, csv);
    }
    let ranks = Ranks::start()?;
    let result = run(&cli, &ranks);
    ranks.finish(result)
}

/// The study: the host study, or the calibration, the sweep and the report.
fn run(cli: &Cli, ranks: &Ranks) -> Result<(), String> {
    let study = study(cli, ranks)?;
    if cli.host_study {
        return host::host_study(&study.backend, &cli.gpus, cli.max_mib, cli.out.as_deref());
    }
    let mut probe = calibrate(&study)?;
    let machines = machines(&study, &mut probe)?;
    // Rank 0 writes the files; the others run the same study without them.
    let out = cli.out.as_deref().filter(|_| ranks.rank() == 0);
    if let Some(dir) = out {
        csv::write_calibration(dir, probe.link, probe.model, &machines, probe.on_cuda)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let plan = grid(cli)?;
    let baselines: Vec<Baseline> =
        if cli.no_baselines || !probe.on_cuda || ranks.many() { Vec::new() } else { Baseline::ALL.to_vec() };
    let bar = progress_bar(&study, &plan, &machines, &baselines)?;
    let mut split_outputs = split_outputs(&study, &machines, &baselines, probe.total_max)?;
    let mut csv = create_csv(out)?;
    let mut rows: Vec<Row> = Vec::new();
    let mut below = Vec::new();
    // A prediction runs the GPU run's kernels: its iteration count at each point, not
    // one derived from this run's probe (which on the sim, or after a disturbed probe
    // on the GPU, would set a different kernel for the same target r).
    let gpu_iters: Vec<Row> = match &cli.predict_from {
        Some(gpu_csv) => read_rows(gpu_csv)?,
        None => Vec::new(),
    };
    for p in plan {
        let point = runs::run_point(
            &study,
            &mut probe,
            &machines,
            &baselines,
            &mut split_outputs,
            &gpu_iters,
            &bar,
            p,
            &mut below,
        )?;
        for p in point {
            if let Some(f) = csv.as_mut() {
                write_row(f, &p).map_err(|e| e.to_string())?;
            }
            rows.push(p);
        }
    }
    bar.finish();
    if ranks.rank() == 0 {
        report(cli, &rows, &below)?;
    }
    Ok(())
}

/// Checks the options and picks the backend (on sim with --sim-link, a profile of the
/// GPU measured there).
fn study<'a>(cli: &'a Cli, ranks: &'a Ranks) -> Result<Study<'a>, String> {
    if cli.chunks == 0
        || !(cli.min_mib > 0.0 && cli.max_mib >= cli.min_mib)
        || cli.streams.contains(&0)
        || cli.depths.contains(&0)
        || cli.kernels.contains(&0)
        || cli.repeat == 0
        || cli.gpus.is_empty()
        || cli.gpus.contains(&0)
    {
        return Err(
            "--chunks, --min-mib <= --max-mib, --streams, --depths, --kernels, --repeat and --gpus must be positive"
                .into(),
        );
    }
    if cli.no_default && cli.no_grid {
        return Err("--no-default with --no-grid leaves no chariot run".into());
    }
    if ranks.many() {
        // One scheduler of a process takes part in the ranks' stream at a time, and the
        // configurations of a point are alternated with all of them built: chariot's
        // defaults alone, or with --no-default a grid of one.
        let grid = if cli.no_grid {
            0
        } else {
            cli.streams.len() * cli.orders.len() * cli.depths.len() * cli.kernels.len().max(1) * cli.pin.len()
        };
        if cli.no_default && (grid != 1 || cli.buses.len() != 1) {
            return Err(format!(
                "under mpirun ({} ranks) the study runs one chariot configuration: with --no-default, give one \
                 value each of --streams, --orders, --depths, --kernels, --pin and --buses",
                ranks.size()
            ));
        }
        if cli.host_study {
            return Err("--host-study runs in one process, not under mpirun".into());
        }
    }
    let pins = cli.pin.iter().map(|p| pin(p)).collect::<Result<Vec<_>, _>>()?;
    if pins.is_empty() {
        return Err("--pin needs on, off or on,off (both)".into());
    }
    for b in &cli.buses {
        if !matches!(b.as_str(), "default" | "calibrated") && !b.parse::<usize>().is_ok_and(|n| n > 0) {
            return Err(format!("--buses: unknown value {b:?} (default, calibrated or a positive number)"));
        }
    }
    if cli.sim_link.as_ref().is_some_and(|l| l.len() != 3)
        || cli.sim_kernel.as_ref().is_some_and(|k| k.len() != 2)
        || cli.sim_host.as_ref().is_some_and(|h| h.len() != 3)
    {
        return Err("--sim-link and --sim-host take up,down,both and --sim-kernel takes a,b".into());
    }
    let predicting = cli.sim_link.is_some();
    let backend = match (cli.backend.as_str(), &cli.sim_link) {
        ("cuda", _) => Backend::Cuda,
        ("sim", Some(l)) => {
            let mut p = SimProfile::h100().with_link(l[0], l[1], l[2]).timing_only().spinning();
            if let Some(h) = &cli.sim_host {
                p.buses = Some(1);
                p.bus_bytes_per_s = h[0].max(h[1]) * 1e9;
                p.bus_duplex_bytes_per_s = h[2] * 1e9;
            }
            Backend::SimWith(p)
        }
        ("sim", None) => Backend::SimWith(SimProfile::h100()),
        _ => Backend::Auto,
    };
    Ok(Study { cli, backend, pins, predicting, ranks })
}

/// Calibration on the first GPU: link rates, and the kernel's time per element as
/// a + b·iters. Allocates the host buffers every run uses. Under mpirun rank 0's
/// GPU is probed, and every rank takes its figures.
fn calibrate(study: &Study) -> Result<Probe, String> {
    let (cli, ranks) = (study.cli, study.ranks);
    let probe_sched = study.build(1, 4, 2, Order::Fcfs, true, 1)?;
    let on_cuda = probe_sched.backend_name() == "cuda";
    let gpu = probe_sched.gpu_info()[0].clone();
    let (min, max) = (elements(cli.min_mib), elements(cli.max_mib));
    let total_max = max * cli.chunks;
    let mut input = probe_sched.alloc_host::<u32>(total_max).map_err(|e| e.to_string())?;
    let mut output = probe_sched.alloc_host::<u32>(total_max).map_err(|e| e.to_string())?;
    fill(&mut input, 2013);

    // Calibration: link rates, and the kernel's time per element as a + b·iters.
    let len = (min + max) / 2;
    let probe_chunks = (total_max / len).min(16);
    // Both probes long enough (hundreds of µs per kernel) that no dispatch gap shows
    // between back-to-back kernels: a probe of tiny kernels measures the dispatcher,
    // and would inflate the fitted intercept.
    let (i1, i2) = (512u32, 2048u32);
    let mut measured = [0.0; 5];
    let modeled = study.modeled(&probe_sched).map(|(link, _)| link);
    if ranks.rank() == 0 {
        let r1 = demo::probe_rates(&probe_sched, study.shift(), &input, &mut output, len, probe_chunks, i1)
            .map_err(|e| e.to_string())?;
        let r2 = demo::probe_rates(&probe_sched, study.shift(), &input, &mut output, len, probe_chunks, i2)
            .map_err(|e| e.to_string())?;
        // A kernel hardly slower at 4× the iterations (on a GPU it is about 4× slower)
        // leaves r without meaning, and the fit would ask for billions of iterations:
        // on a machine too busy for the probe, or on sim where the CPU twins' own time
        // hides the modeled cost.
        if r2.kernel_ns < 1.2 * r1.kernel_ns && cli.iters.is_none() && modeled.is_none() {
            return Err(format!(
                "calibration: the kernel took {:.0} ns at {i2} iterations and {:.0} ns at {i1}: no cost per iteration \
                 to set r by (the machine is too busy for the probe); give --iters",
                r2.kernel_ns, r1.kernel_ns
            ));
        }
        let b = ((r2.kernel_ns - r1.kernel_ns) / len as f64 / (i2 - i1) as f64).max(1e-9);
        let a = (r1.kernel_ns / len as f64 - b * i1 as f64).max(0.0);
        measured = [r2.link.up, r2.link.down, r2.link.both, a, b];
        if let Some(link) = modeled {
            let (ma, mb) = study.sim_kernel_model();
            println!(
                "sim probe: up {:.1} GB/s, down {:.1} GB/s, both {:.1} GB/s; kernel {a:.6} + {b:.8}·iters ns per \
                 element; the bounds take the profile's model instead (below)",
                r2.link.up, r2.link.down, r2.link.both
            );
            measured = [link.up, link.down, link.both, ma, mb];
        }
    }
    drop(probe_sched);
    let [up, down, both, a, b] = ranks.share(&measured)[..] else {
        return Err("calibration: rank 0's figures did not arrive".into());
    };
    let link = LinkRates { up, down, both };
    if ranks.rank() != 0 {
        return Ok(Probe { on_cuda, ordinal: gpu.ordinal, link, model: (a, b), min, max, total_max, input, output });
    }
    println!(
        "{} on {}: up {:.1} GB/s, down {:.1} GB/s, both {:.1} GB/s; kernel {:.6} + {:.8}·iters ns per element",
        if on_cuda { "cuda" } else { "sim" },
        gpu.name,
        link.up,
        link.down,
        link.both,
        a,
        b
    );
    Ok(Probe { on_cuda, ordinal: gpu.ordinal, link, model: (a, b), min, max, total_max, input, output })
}

/// Host rates with all GPUs copying at once, for each D > 1 (and B calibrated from
/// them); D = 1 takes the link. Under mpirun a machine is every rank's D GPUs, each
/// taken to have its own link: the bound of ranks on hosts of their own, which ranks
/// sharing a host's buses can only lose to.
fn machines(study: &Study, probe: &mut Probe) -> Result<Vec<Machine>, String> {
    let (link, ranks) = (probe.link, study.ranks.size());
    let len = (probe.min + probe.max) / 2;
    let mut gpus_list = study.cli.gpus.clone();
    gpus_list.dedup();
    let mut machines = Vec::new();
    for &d in &gpus_list {
        if ranks > 1 {
            let all = d * ranks;
            let host = link.times(all as f64);
            machines.push(Machine { gpus: all, ranks, host, calibrated_buses: d, ordinals: Vec::new() });
            if study.ranks.rank() == 0 {
                println!(
                    "{ranks} ranks x {d} GPUs: D = {all} in one task stream; bound with a link of its own per GPU"
                );
            }
            continue;
        }
        if d == 1 {
            machines.push(Machine { gpus: 1, ranks, host: link, calibrated_buses: 1, ordinals: vec![probe.ordinal] });
            continue;
        }
        let sched = study.build(d, 4, 2, Order::Fcfs, true, d)?;
        let host = match study.modeled(&sched) {
            Some((_, host)) => host,
            None => demo::probe_host_rates(&sched, &probe.input, &mut probe.output, len, 16 * d)
                .map_err(|e| e.to_string())?,
        };
        let ordinals = sched.gpu_info().iter().map(|g| g.ordinal).collect();
        let calibrated_buses = demo::calibrated_buses(link, host, d);
        println!(
            "D = {d}, all copying at once: up {:.1} GB/s ({:.2} links), down {:.1} GB/s ({:.2} links), both {:.1} GB/s; calibrated B = {calibrated_buses}",
            host.up,
            host.up / link.up,
            host.down,
            host.down / link.down,
            host.both
        );
        machines.push(Machine { gpus: d, ranks, host, calibrated_buses, ordinals });
    }
    Ok(machines)
}

/// The points: each --sizes (random ones at each seed) at each ratio r.
fn grid(cli: &Cli) -> Result<Vec<Point>, String> {
    let mut plan = Vec::new();
    for sizes in &cli.sizes {
        let random = match sizes.as_str() {
            "fixed" => false,
            "random" => true,
            s => return Err(format!("--sizes: unknown {s:?} (fixed, random)")),
        };
        for &seed in if random { &cli.seeds[..] } else { &[0u64][..] } {
            for &r in &cli.ratios {
                plan.push((sizes.clone(), random, seed, r));
            }
        }
    }
    Ok(plan)
}

/// The progress bar, over every run the plan makes.
fn progress_bar(
    study: &Study,
    plan: &[Point],
    machines: &[Machine],
    baselines: &[Baseline],
) -> Result<ProgressBar, String> {
    let cli = study.cli;
    let runs: usize = plan
        .iter()
        .map(|p| {
            machines
                .iter()
                .map(|m| {
                    let base = if m.gpus == 1 {
                        baselines.len().min(1) + baselines.len().saturating_sub(1) * cli.streams.len()
                    } else if baselines.is_empty() {
                        0
                    } else {
                        cli.streams.len()
                    };
                    let kernels = cli.kernels.len().max(1);
                    let grid = if !study.grid() {
                        0
                    } else {
                        study.variants(m, p.3).len() * cli.streams.len() * cli.orders.len() * cli.depths.len() * kernels
                    };
                    base + (grid + usize::from(!cli.no_default)) * cli.repeat
                })
                .sum::<usize>()
        })
        .sum();
    if study.ranks.rank() != 0 {
        return Ok(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(runs as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} {msg}").map_err(|e| e.to_string())?,
    );
    Ok(bar)
}

/// The static split's threads each write their own output buffer: the baseline takes
/// its output with a `&mut` guard. One per GPU beyond the first.
fn split_outputs(
    study: &Study,
    machines: &[Machine],
    baselines: &[Baseline],
    total_max: usize,
) -> Result<Vec<HostBuffer<u32>>, String> {
    let max_d = machines.iter().map(|m| m.gpus).max().unwrap_or(1);
    let mut split_outputs: Vec<HostBuffer<u32>> = Vec::new();
    if !baselines.is_empty() && max_d > 1 {
        let sched = study.build(1, 1, 1, Order::Fcfs, true, 1)?;
        for _ in 1..max_d {
            split_outputs.push(sched.alloc_host::<u32>(total_max).map_err(|e| e.to_string())?);
        }
    }
    Ok(split_outputs)
}

/// `overhead.csv` in --out with its header, where --out is given.
fn create_csv(out: Option<&Path>) -> Result<Option<std::fs::File>, String> {
    Ok(match out {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            let mut f = std::fs::File::create(dir.join("overhead.csv")).map_err(|e| e.to_string())?;
            writeln!(f, "{HEADER}").map_err(|e| e.to_string())?;
            Some(f)
        }
        None => None,
    })
}

/// After the sweep: the summary, the replay table (with --trace), the plots, the
/// sim's prediction (with --predict-from) and the bound check.
fn report(cli: &Cli, rows: &[Row], below: &[String]) -> Result<(), String> {
    summary::summary(rows);
    if let Some(dir) = &cli.out {
        if cli.trace {
            let cal = read_calibration(&dir.join("calibration.csv"))?;
            summary::replay_table(rows, dir, dir, &cal)?;
        }
        if let Err(e) = plots::plots(rows, dir) {
            eprintln!("plots not drawn: {e}");
        }
    }
    if let Some(gpu_csv) = &cli.predict_from {
        let dir = cli.out.clone().unwrap_or_default();
        predict::predict(rows, &read_rows(gpu_csv)?, &dir)?;
    }
    bound_check(below);
    Ok(())
}

/// An `--orders` entry, by chariot's one parser of order names (a usage error otherwise).
fn order(s: &str) -> Result<Order, String> {
    s.parse::<Order>().map_err(|e| e.to_string())
}

fn pin(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        p => Err(format!("--pin: unknown value {p:?} (on, off)")),
    }
}

/// `--plot-from`: the summary, the bound check, the plots (and with --predict-from the
/// sim's error) of a CSV this study wrote. Where its `calibration.csv` lies beside it,
/// the bounds are computed again by this build from the run's rates and chunks (give
/// the run's --chunks, --min-mib and --max-mib), and with --out in another folder the
/// rows are written there as overhead.csv.
fn reanalyse(cli: &Cli, csv: &Path) -> Result<(), String> {
    let mut rows = read_rows(csv)?;
    let dir = cli.out.clone().or_else(|| csv.parent().map(|p| p.to_path_buf())).unwrap_or_default();
    let calibration = csv.with_file_name("calibration.csv");
    if calibration.exists() {
        let cal = read_calibration(&calibration)?;
        let (min, max) = (elements(cli.min_mib), elements(cli.max_mib));
        let mut changed = 0;
        for r in rows.iter_mut() {
            let Some(&(_, link, host, model)) = cal.iter().find(|c| c.0 == r.gpus) else {
                return Err(format!("{}: no rates for D = {}", calibration.display(), r.gpus));
            };
            let chunks = chunk_ranges(cli.chunks, min, max, r.sizes == "random", r.seed);
            let hw = bound_for(&work(&chunks, r.iters, model), r.gpus, link, host);
            let bound = hw.t_ns as f64 / 1e6;
            if (bound / r.bound_ms - 1.0).abs() > 1e-3 {
                changed += 1;
            }
            r.bound_ms = bound;
            r.limit = hw.limit.to_string();
        }
        println!(
            "bounds computed again from {}: {changed} of {} rows changed by over 0.1%",
            calibration.display(),
            rows.len()
        );
        let target = dir.join("overhead.csv");
        if cli.out.is_some() && std::fs::canonicalize(&target).ok() != std::fs::canonicalize(csv).ok() {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let mut f = std::fs::File::create(&target).map_err(|e| format!("{}: {e}", target.display()))?;
            writeln!(f, "{HEADER}").map_err(|e| e.to_string())?;
            for r in &rows {
                write_row(&mut f, r).map_err(|e| e.to_string())?;
            }
        }
    }
    summary::summary(&rows);
    if calibration.exists() {
        let traces = csv.parent().unwrap_or(Path::new("."));
        summary::replay_table(&rows, traces, &dir, &read_calibration(&calibration)?)?;
    }
    if let Some(gpu_csv) = &cli.predict_from {
        predict::predict(&rows, &read_rows(gpu_csv)?, &dir)?;
    }
    bound_check(&below_bound(&rows));
    plots::plots(&rows, &dir)
}
