//! The overhead study of the paper's §6.1, with the pipelines a CUDA programmer would
//! write by hand measured in the same run (issue 4), on one GPU or several (issue 8).
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

use chariot::baseline::{self, Baseline};
use chariot::demo::{self, fill, mismatches};
use chariot::{Arg, Backend, HardwareBound, HostBuffer, LinkRates, Order, Scheduler, SimProfile, TaskWork};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// chariot against the hand-written pipelines, across the transfer ratio r and the
/// number of GPUs D.
#[derive(Parser, Debug)]
#[command(about, long_about = None)]
struct Cli {
    /// Chunks N.
    #[arg(long, default_value_t = 48)]
    chunks: usize,
    /// Smallest chunk, MiB.
    #[arg(long, default_value_t = 3.0)]
    min_mib: f64,
    /// Largest chunk, MiB.
    #[arg(long, default_value_t = 30.0)]
    max_mib: f64,
    /// Target transfer ratios r, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0.1,1,10,100")]
    ratios: Vec<f64>,
    /// Chunk sizes: fixed (all (min+max)/2), random (uniform in [min, max]), or both.
    #[arg(long, value_delimiter = ',', default_value = "fixed,random")]
    sizes: Vec<String>,
    /// Seeds of the random sizes.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    seeds: Vec<u64>,
    /// Streams per GPU.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    streams: Vec<usize>,
    /// Ordering rules: fcfs, lf, sf.
    #[arg(long, value_delimiter = ',', default_value = "fcfs,lf,sf", value_parser = order)]
    orders: Vec<Order>,
    /// Stage depths.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    depths: Vec<usize>,
    /// Kernel concurrencies of the hand-set grid (kernels one GPU runs at once); none
    /// given: the kernel stage admits kernels by their fill, as by default.
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<usize>,
    /// Timed batches of every chariot configuration at each point, alternated between
    /// the configurations (each configuration warmed up once first).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Skip chariot's defaults (by default they run at every point and D beside the
    /// grid of --streams × --orders × --depths × --kernels, which is set by hand and
    /// not adapted).
    #[arg(long)]
    no_default: bool,
    /// GPU counts D, comma-separated: chariot on the first D GPUs. The one-GPU
    /// baselines run at D = 1, the static split at each D > 1.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    gpus: Vec<usize>,
    /// Dispatcher pinning: on (each dispatcher on a core near its GPU), off, or on,off
    /// (both, back to back for each configuration, with the first --buses only).
    #[arg(long, value_delimiter = ',', default_value = "on")]
    pin: Vec<String>,
    /// Ratios r at which the pinning values after the first also run (default: every r).
    #[arg(long, value_delimiter = ',')]
    pin_ratios: Option<Vec<f64>>,
    /// Host buses B (the global thresholds G_2 = G_4 = B follow): default (one per
    /// GPU), calibrated (from copy rates of all GPUs at once), or a number; a list runs
    /// each, back to back for each configuration. Values that come to the same B at a
    /// D run once, under the first name.
    #[arg(long, value_delimiter = ',', default_value = "default")]
    buses: Vec<String>,
    /// Skip the hand-written baselines (and the static split).
    #[arg(long)]
    no_baselines: bool,
    /// On sim: predict a real GPU. Link rates measured there, GB/s: up,down,both.
    /// Implies timing-only simulation (outputs are not computed or checked).
    #[arg(long, value_delimiter = ',')]
    sim_link: Option<Vec<f64>>,
    /// On sim: the shift kernel's cost measured there, ns per element: a,b for a + b·iters.
    #[arg(long, value_delimiter = ',')]
    sim_kernel: Option<Vec<f64>>,
    /// On sim with --sim-link: what the host carries with all GPUs copying at once,
    /// GB/s: up,down,both, modeled as one bus that every GPU shares. Without it each
    /// simulated GPU has its own link.
    #[arg(long, value_delimiter = ',')]
    sim_host: Option<Vec<f64>>,
    /// auto, cuda or sim (baselines need cuda).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    backend: String,
    /// With --out: also write the Chrome trace of chariot's fastest run at each point
    /// and D (trace-<sizes>-<seed>-r<r>-d<D>.json; open in Perfetto).
    #[arg(long)]
    trace: bool,
    /// Directory for overhead.csv, calibration.csv, sim-args.txt and the plots.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run nothing: analyse a CSV this study wrote earlier. Prints the summary and the
    /// bound check and draws the plots (into --out, default the CSV's folder); with the
    /// run's calibration.csv beside the CSV, computes the bounds again first and writes
    /// the rows to --out/overhead.csv (give the run's --chunks, --min-mib, --max-mib).
    #[arg(long)]
    plot_from: Option<PathBuf>,
    /// Compare chariot's makespans of this run (or of --plot-from) with those of the
    /// same configurations in this CSV, written by a run on a GPU: prints the error
    /// per D and writes prediction.csv into --out. This run takes each point's kernel
    /// iterations from that CSV, so both runs time the same kernels.
    #[arg(long)]
    predict_from: Option<PathBuf>,
    /// Only draw the Gantt chart (gantt.png, into --out or beside the trace) of a Chrome
    /// trace written by chariot (e.g. the demo's demo-trace.json); run nothing.
    #[arg(long)]
    gantt_from: Option<PathBuf>,
    /// Run nothing else: the host study (issue 14). At each D of --gpus, chunks of
    /// --max-mib copied up alone, down alone and both ways at once, 5 times each, with
    /// each GPU's rate in each direction (its bytes over its busy time); then the host
    /// memory's own bandwidth (memcpy on 1 and on every core). Writes host.csv into --out.
    #[arg(long)]
    host_study: bool,
    /// Accepted for `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// `--host-study`: per-direction copy rates of D GPUs copying at once, and the host
/// memory's bandwidth. Prints a table and writes `host.csv` into `out`.
fn host_study(backend: &Backend, gpus: &[usize], mib: f64, out: Option<&Path>) -> Result<(), String> {
    use chariot::Stage;
    let len = elements(mib);
    let mut csv = String::from("gpus,rep,batch,gpu,up_gb_s,down_gb_s\n");
    println!("{:>2} {:>6} {:>4} {:>10} {:>10} {:>10}", "D", "batch", "GPU", "up GB/s", "down GB/s", "sum");
    for &d in gpus {
        let sched = Scheduler::builder()
            .backend(backend.clone())
            .gpus(d)
            .streams(4)
            .stage_depth(2)
            .adapt(false)
            .build()
            .map_err(|e| e.to_string())?;
        let n = 8 * d;
        let mut input = sched.alloc_host::<u32>(len * n).map_err(|e| e.to_string())?;
        let output = sched.alloc_host::<u32>(len * n).map_err(|e| e.to_string())?;
        fill(&mut input, 7);
        let d_in = sched.alloc::<u32>(len).map_err(|e| e.to_string())?;
        let d_out = sched.alloc::<u32>(len).map_err(|e| e.to_string())?;
        // 0: uploads alone, 1: readbacks alone, 2: both at once.
        let batch = |kind: u8| -> Result<chariot::Report, String> {
            for i in 0..n {
                let r = i * len..(i + 1) * len;
                if kind != 1 {
                    sched
                        .task(2 * i as u64, 1)
                        .download(&d_in, 0, &input, r.clone())
                        .submit()
                        .map_err(|e| e.to_string())?;
                }
                if kind != 0 {
                    sched
                        .task(2 * i as u64 + 1, 1)
                        .readback(&output, r, &d_out, 0)
                        .submit()
                        .map_err(|e| e.to_string())?;
                }
            }
            sched.synchronize().map_err(|e| e.to_string())
        };
        batch(2)?;
        for rep in 0..5 {
            for (kind, name) in [(0u8, "up"), (1, "down"), (2, "both")] {
                let report = batch(kind)?;
                let (mut tu, mut td) = (0.0, 0.0);
                for g in 0..d {
                    let rate = |stage: Stage| {
                        let bytes: u64 = report
                            .records
                            .iter()
                            .filter(|r| r.gpu as usize == g && r.stage == stage)
                            .map(|r| r.bytes)
                            .sum();
                        bytes as f64 / report.busy_ns[g][stage.index()].max(1) as f64
                    };
                    let (u, dn) = (rate(Stage::Download), rate(Stage::Readback));
                    tu += u;
                    td += dn;
                    csv += &format!("{d},{rep},{name},{g},{u:.3},{dn:.3}\n");
                }
                csv += &format!("{d},{rep},{name},all,{tu:.3},{td:.3}\n");
                println!("{d:>2} {name:>6} {:>4} {tu:>10.1} {td:>10.1} {:>10.1}", "all", tu + td);
            }
        }
    }
    // The host memory itself: memcpy between two 1 GiB buffers, read and written bytes.
    let bytes = 1usize << 30;
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    for threads in [1, cores / 2, cores] {
        let mut best = 0.0f64;
        for _ in 0..3 {
            let t0 = Instant::now();
            let per = bytes.div_ceil(threads);
            std::thread::scope(|scope| {
                for (s, d) in src.chunks(per).zip(dst.chunks_mut(per)) {
                    scope.spawn(move || d.copy_from_slice(s));
                }
            });
            best = best.max(2.0 * bytes as f64 / t0.elapsed().as_nanos() as f64);
        }
        println!("host memory, memcpy on {threads} thread(s): {best:.1} GB/s read + written");
        csv += &format!("0,0,memcpy-{threads},all,{best:.3},0\n");
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("host.csv"), csv).map_err(|e| e.to_string())?;
    }
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

/// Chunk ranges: fixed or uniformly random sizes in [min, max] MiB (xorshift, seeded).
fn chunk_ranges(n: usize, min: usize, max: usize, random: bool, seed: u64) -> Vec<Range<usize>> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut at = 0;
    (0..n)
        .map(|_| {
            let len = if random {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                min + (s % (max - min + 1) as u64) as usize
            } else {
                (min + max) / 2
            };
            at += len;
            at - len..at
        })
        .collect()
}

/// u32 elements in `mib` MiB.
fn elements(mib: f64) -> usize {
    (mib * 262144.0) as usize
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
    summary(&rows);
    if calibration.exists() {
        let traces = csv.parent().unwrap_or(Path::new("."));
        replay_table(&rows, traces, &dir, &read_calibration(&calibration)?)?;
    }
    if let Some(gpu_csv) = &cli.predict_from {
        predict(&rows, &read_rows(gpu_csv)?, &dir)?;
    }
    bound_check(&below_bound(&rows));
    plots(&rows, &dir)
}

/// chariot's traced run at each point (the fastest, `trace-*-d<D>.json` in `traces`)
/// against the zero-overhead replay of its own dispatch order
/// ([`chariot::zero_overhead_makespan`]): each GPU's chunks in the order it ran them, on
/// the same stream slots, at the measured rates, with no host time. At D > 1 each GPU
/// is replayed alone at its share of the host (the link, or the host's measured totals
/// over D where smaller), and the replay is the slowest GPU's. The bound holds for every
/// order and split; the replay is what a perfect runtime reaches with this one, so
/// T / T_replay − 1 is chariot's own overhead and T_replay / T_hw − 1 the order's (and
/// at D > 1 the split's). Prints the table and writes replay.csv into `out`.
fn replay_table(rows: &[Row], traces: &Path, out: &Path, cal: &[Calibration]) -> Result<(), String> {
    let mut points: Vec<&Row> = rows.iter().filter(|r| r.system == "chariot").collect();
    points.sort_by_key(|x| (x.gpus, x.point()));
    points.dedup_by(|x, y| (x.gpus, x.point()) == (y.gpus, y.point()));
    let mut csv = String::from(
        "gpus,sizes,seed,r_target,streams,bound_ms,replay_ms,chariot_ms,replay_over_bound,chariot_over_replay\n",
    );
    let mut lines = Vec::new();
    for p in points {
        let Some(&(_, link, host, (a, b))) = cal.iter().find(|c| c.0 == p.gpus) else { continue };
        let file = traces.join(format!("trace-{}-{}-r{}-d{}.json", p.sizes, p.seed, p.r_target, p.gpus));
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let events: Vec<&serde_json::Value> = json["traceEvents"]
            .as_array()
            .map(|v| v.iter().filter(|e| e["ph"] == "X" && e["args"].is_object()).collect())
            .unwrap_or_default();
        let num = |e: &serde_json::Value, k: &str| e[k].as_f64().or_else(|| e["args"][k].as_f64()).unwrap_or(f64::NAN);
        let d = p.gpus.max(1) as f64;
        let share = LinkRates {
            up: link.up.min(host.up / d),
            down: link.down.min(host.down / d),
            both: link.both.min(host.both / d),
        };
        let per_element = a + b * p.iters as f64;
        let mut replay_ns = 0u64;
        let mut slots = 1;
        for g in 0..p.gpus {
            let mut downloads: Vec<&&serde_json::Value> =
                events.iter().filter(|e| e["cat"] == "download" && num(e, "pid") as usize == g).collect();
            downloads.sort_by(|x, y| num(x, "ts").total_cmp(&num(y, "ts")));
            let gpu_slots = downloads.iter().map(|e| num(e, "stream") as usize + 1).max().unwrap_or(1);
            slots = slots.max(gpu_slots);
            let tasks: Vec<TaskWork> = downloads
                .iter()
                .map(|e| {
                    let bytes = num(e, "bytes") as u64;
                    TaskWork {
                        up_bytes: bytes,
                        kernel_ns: (per_element * (bytes / 4) as f64) as u64,
                        down_bytes: bytes,
                    }
                })
                .collect();
            let rates = if p.gpus > 1 { share } else { link };
            replay_ns = replay_ns.max(chariot::zero_overhead_makespan(&tasks, rates, gpu_slots));
        }
        let start = events.iter().map(|e| num(e, "ts")).fold(f64::INFINITY, f64::min);
        let end = events.iter().map(|e| num(e, "ts") + num(e, "dur")).fold(f64::NEG_INFINITY, f64::max);
        let t = (end - start) / 1e3;
        let replay = replay_ns as f64 / 1e6;
        // The bound of this point: every chariot row of it carries the same one.
        let bound = p.bound_ms;
        csv += &format!(
            "{},{},{},{},{slots},{bound:.4},{replay:.4},{t:.4},{:.5},{:.5}\n",
            p.gpus,
            p.sizes,
            p.seed,
            p.r_target,
            replay / bound - 1.0,
            t / replay - 1.0
        );
        lines.push(format!(
            "  {:>2} {:>6} {:>4} {:>6} {slots:>3} {bound:>10.3} {replay:>10.3} {t:>10.3} {:>+12.1}% {:>+14.1}%",
            p.gpus,
            p.sizes,
            p.seed,
            p.r_target,
            100.0 * (replay / bound - 1.0),
            100.0 * (t / replay - 1.0)
        ));
    }
    if lines.is_empty() {
        return Ok(());
    }
    println!(
        "\nchariot's traced run against the zero-overhead replay of its own order:\n  {:>2} {:>6} {:>4} {:>6} {:>3} {:>10} {:>10} {:>10} {:>13} {:>15}",
        "D", "sizes", "seed", "r", "S", "bound ms", "replay ms", "chariot ms", "replay/bound", "chariot/replay"
    );
    println!("{}", lines.join("\n"));
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    std::fs::write(out.join("replay.csv"), csv).map_err(|e| format!("{}: {e}", out.display()))
}

/// One line of `calibration.csv`: D, the link alone, the host with all D GPUs, the
/// kernel model (a, b).
type Calibration = (usize, LinkRates, LinkRates, (f64, f64));

fn read_calibration(path: &Path) -> Result<Vec<Calibration>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.trim().parse::<f64>().unwrap_or(f64::NAN)).collect();
            if v.len() < 10 || v.iter().any(|x| !x.is_finite()) {
                return Err(format!("{}: bad line {l:?}", path.display()));
            }
            let rates = |i: usize| LinkRates { up: v[i], down: v[i + 1], both: v[i + 2] };
            Ok((v[0] as usize, rates(1), rates(4), (v[8], v[9])))
        })
        .collect()
}

/// The static split: `parts` contiguous groups of equal count (the first N mod parts
/// groups one chunk more), as a programmer splits a loop over threads.
fn static_groups(chunks: &[Range<usize>], parts: usize) -> Vec<Vec<Range<usize>>> {
    let (base, extra) = (chunks.len() / parts, chunks.len() % parts);
    let mut at = 0;
    (0..parts)
        .map(|g| {
            let n = base + usize::from(g < extra);
            at += n;
            chunks[at - n..at].to_vec()
        })
        .collect()
}

/// The host rates the bound takes at `d` GPUs: the probe's totals where they fall
/// short of `d` links by more than a probe's noise (under 90% of them in some direction
/// or both ways: the host is a real limit), else `d` links. On 2 × H200 the probe read
/// the both-ways total at 0.87–0.90 of two links in six runs, and chariot at D = 2
/// moved the same 176–180 GB/s when all four copy engines ran. (A static-split baseline
/// seemed to move 193 GB/s, but its two GPUs' timed runs had not overlapped; fixed.)
fn host_for_bound(link: LinkRates, host: LinkRates, d: usize) -> LinkRates {
    let k = d as f64;
    if host.up < 0.9 * k * link.up || host.down < 0.9 * k * link.down || host.both < 0.9 * k * link.both {
        host
    } else {
        link.times(k)
    }
}

/// Submits one batch of the study: each chunk downloaded, shifted and read back.
#[allow(clippy::too_many_arguments)]
fn submit_batch(
    sched: &Scheduler,
    k: &chariot::KernelHandle,
    d_in: &chariot::DeviceBuffer<u32>,
    d_out: &chariot::DeviceBuffer<u32>,
    input: &HostBuffer<u32>,
    output: &HostBuffer<u32>,
    chunks: &[Range<usize>],
    iters: u32,
) -> Result<(), String> {
    for (i, c) in chunks.iter().enumerate() {
        let n = c.len();
        sched
            .task(i as u64, n as u64)
            .download(d_in, 0, input, c.clone())
            .launch(
                k,
                (n as u32).div_ceil(demo::BLOCK),
                demo::BLOCK,
                0,
                &[Arg::buffer(d_out), Arg::buffer(d_in), Arg::u32(n as u32), Arg::u32(iters)],
            )
            .readback(output, c.clone(), d_out, 0)
            .submit()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Each chunk's work for the bound, with the kernel model a + b·iters ns per element.
fn work(chunks: &[Range<usize>], iters: u32, (a, b): (f64, f64)) -> Vec<TaskWork> {
    chunks
        .iter()
        .map(|c| TaskWork {
            up_bytes: c.len() as u64 * 4,
            kernel_ns: (c.len() as f64 * (a + b * iters as f64)) as u64,
            down_bytes: c.len() as u64 * 4,
        })
        .collect()
}

/// `tasks` with each kernel's time at most `ns_per_element` times its chunk's length.
fn work_at_most(tasks: &[TaskWork], chunks: &[Range<usize>], ns_per_element: f64) -> Vec<TaskWork> {
    tasks
        .iter()
        .zip(chunks)
        .map(|(t, c)| TaskWork { kernel_ns: t.kernel_ns.min((c.len() as f64 * ns_per_element) as u64), ..*t })
        .collect()
}

/// The hardware-aware bound of `tasks` at `d` GPUs (the one-GPU bound at D = 1).
fn bound_for(tasks: &[TaskWork], d: usize, link: LinkRates, host: LinkRates) -> HardwareBound {
    if d == 1 {
        HardwareBound::one_gpu(tasks, link)
    } else {
        HardwareBound::multi_gpu(tasks, d, link, host_for_bound(link, host, d))
    }
}

/// Rows whose makespan falls below their bound (a tenth of a percent of slack).
fn below_bound(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.makespan_ms < r.bound_ms * 0.999)
        .map(|r| {
            format!(
                "{} seed {} r {} D {} {} S {}{}: makespan {:.3} ms < bound {:.3} ms ({})",
                r.sizes,
                r.seed,
                r.r_target,
                r.gpus,
                r.system,
                r.streams,
                if r.system == "chariot" {
                    format!(
                        " {} {} depth {} kernels {} pin {} B {} run {}",
                        r.config, r.order, r.depth, r.kernels, r.pin, r.buses, r.rep
                    )
                } else {
                    String::new()
                },
                r.makespan_ms,
                r.bound_ms,
                r.limit
            )
        })
        .collect()
}

/// What one GPU count runs with: the rates the bound needs, B calibrated, the GPUs.
#[derive(Clone, Debug)]
struct Machine {
    gpus: usize,
    /// Totals of all `gpus` GPUs copying at once (the link itself at D = 1).
    host: LinkRates,
    calibrated_buses: usize,
    ordinals: Vec<usize>,
}

/// One chariot configuration beside S, order and depth.
#[derive(Clone, Debug, PartialEq)]
struct Variant {
    pin: bool,
    bus_mode: String,
    buses: usize,
}

#[derive(Clone, Debug)]
struct Row {
    sizes: String,
    seed: u64,
    r_target: f64,
    r_model: f64,
    iters: u32,
    system: String,
    streams: usize,
    order: String,
    depth: usize,
    wall_ms: f64,
    makespan_ms: f64,
    bound_ms: f64,
    serial_ms: f64,
    paper_eps: f64,
    runtime_us: f64,
    gpus: usize,
    /// "on", "off", or empty for the baselines.
    pin: String,
    /// "default", "calibrated", a number, or empty for the baselines.
    bus_mode: String,
    buses: usize,
    paper_bound_ms: f64,
    limit: String,
    /// The best static split at this point and D (NaN where none ran).
    static_ms: f64,
    tasks_per_gpu: String,
    /// chariot: "default" (everything chosen by chariot) or "hand" (the grid); empty
    /// for the baselines.
    config: String,
    /// chariot's kernel concurrency: a number set by hand, or "fill" (by occupancy).
    kernels: String,
    /// Which timed batch of the configuration (0-based).
    rep: usize,
}

impl Row {
    fn point(&self) -> (String, u64, u64) {
        (self.sizes.clone(), self.seed, self.r_target.to_bits())
    }
}

const HEADER: &str = "sizes,seed,r_target,r_model,iters,system,streams,order,depth,wall_ms,makespan_ms,hw_bound_ms,serial_ms,speedup,eps_hw,paper_eps,runtime_us_per_cmd,gpus,pin,buses_mode,buses,paper_bound_ms,hw_limit,static_ms,tasks_per_gpu,config,kernels,rep";

fn main() -> Result<(), String> {
    let cli = Cli::parse();
    if let Some(trace) = &cli.gantt_from {
        let json = std::fs::read_to_string(trace).map_err(|e| format!("{}: {e}", trace.display()))?;
        let dir = cli.out.clone().or_else(|| trace.parent().map(|p| p.to_path_buf())).unwrap_or_default();
        let title =
            format!("timeline of {}", trace.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        return chariot::plot::gantt_from_trace(dir.join("gantt.png"), &title, &json);
    }
    if let Some(csv) = &cli.plot_from {
        return reanalyse(&cli, csv);
    }
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
    let pins = cli.pin.iter().map(|p| pin(p)).collect::<Result<Vec<_>, _>>()?;
    if pins.is_empty() {
        return Err("--pin needs on, off or both".into());
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
    if cli.host_study {
        return host_study(&backend, &cli.gpus, cli.max_mib, cli.out.as_deref());
    }
    let shift = || match &cli.sim_kernel {
        Some(k) => demo::shift_kernel_costing(k[0], k[1]),
        None => demo::shift_kernel(),
    };
    // B is always given explicitly, so that the sim's profile cannot change it: the
    // default is one bus per GPU, as the CUDA backend has it.
    let build = |d: usize, s: usize, depth: usize, order: Order, pin: bool, buses: usize| {
        Scheduler::builder()
            .backend(backend.clone())
            .gpus(d)
            .streams(s)
            .stage_depth(depth)
            .order(order)
            .pin_dispatchers(pin)
            .buses(buses)
            .build()
            .map_err(|e| e.to_string())
    };
    // The grid: every knob set by hand, nothing adapted.
    let build_hand = |d: usize, s: usize, depth: usize, order: Order, pin: bool, buses: usize, k: Option<usize>| {
        let b = Scheduler::builder()
            .backend(backend.clone())
            .gpus(d)
            .streams(s)
            .stage_depth(depth)
            .order(order)
            .pin_dispatchers(pin)
            .buses(buses)
            .adapt(false);
        match k {
            Some(k) => b.kernel_concurrency(k),
            None => b,
        }
        .build()
        .map_err(|e| e.to_string())
    };
    // chariot's defaults: only the GPUs (and the sim's profile) given.
    let build_default =
        |d: usize| Scheduler::builder().backend(backend.clone()).gpus(d).build().map_err(|e| e.to_string());
    let probe_sched = build(1, 4, 2, Order::Fcfs, true, 1)?;
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
    let r1 = demo::probe_rates(&probe_sched, shift(), &input, &mut output, len, probe_chunks, i1)
        .map_err(|e| e.to_string())?;
    let r2 = demo::probe_rates(&probe_sched, shift(), &input, &mut output, len, probe_chunks, i2)
        .map_err(|e| e.to_string())?;
    drop(probe_sched);
    let link = r2.link;
    let b = ((r2.kernel_ns - r1.kernel_ns) / len as f64 / (i2 - i1) as f64).max(1e-9);
    let a = (r1.kernel_ns / len as f64 - b * i1 as f64).max(0.0);
    let kernel_ns = |n: usize, iters: u32| n as f64 * (a + b * iters as f64);
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

    // Host rates with all GPUs copying at once, for each D > 1.
    let mut gpus_list = cli.gpus.clone();
    gpus_list.dedup();
    let mut machines = Vec::new();
    for &d in &gpus_list {
        if d == 1 {
            machines.push(Machine { gpus: 1, host: link, calibrated_buses: 1, ordinals: vec![gpu.ordinal] });
            continue;
        }
        let sched = build(d, 4, 2, Order::Fcfs, true, d)?;
        let host = demo::probe_host_rates(&sched, &input, &mut output, len, 16 * d).map_err(|e| e.to_string())?;
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
        machines.push(Machine { gpus: d, host, calibrated_buses, ordinals });
    }
    if let Some(dir) = &cli.out {
        write_calibration(dir, link, (a, b), &machines, on_cuda).map_err(|e| format!("{}: {e}", dir.display()))?;
    }

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
    let baselines: Vec<Baseline> = if cli.no_baselines || !on_cuda { Vec::new() } else { Baseline::ALL.to_vec() };
    let variants = |m: &Machine, r: f64| -> Vec<Variant> {
        let mut v: Vec<Variant> = Vec::new();
        for mode in &cli.buses {
            let buses = match mode.as_str() {
                "default" => m.gpus,
                "calibrated" => m.calibrated_buses,
                n => n.parse::<usize>().map_or(m.gpus, |n| n.clamp(1, m.gpus)),
            };
            if !v.iter().any(|x| x.buses == buses) {
                v.push(Variant { pin: pins[0], bus_mode: mode.clone(), buses });
            }
        }
        let first = v[0].clone();
        if cli.pin_ratios.as_ref().is_none_or(|rs| rs.contains(&r)) {
            for &p in &pins[1..] {
                v.push(Variant { pin: p, ..first.clone() });
            }
        }
        v
    };
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
                    let grid =
                        variants(m, p.3).len() * cli.streams.len() * cli.orders.len() * cli.depths.len() * kernels;
                    base + (grid + usize::from(!cli.no_default)) * cli.repeat
                })
                .sum::<usize>()
        })
        .sum();
    let bar = ProgressBar::new(runs as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} {msg}").map_err(|e| e.to_string())?,
    );
    // The static split's threads each write their own output buffer: the baseline takes
    // its output with a `&mut` guard.
    let max_d = machines.iter().map(|m| m.gpus).max().unwrap_or(1);
    let mut split_outputs: Vec<HostBuffer<u32>> = Vec::new();
    if !baselines.is_empty() && max_d > 1 {
        let sched = build(1, 1, 1, Order::Fcfs, true, 1)?;
        for _ in 1..max_d {
            split_outputs.push(sched.alloc_host::<u32>(total_max).map_err(|e| e.to_string())?);
        }
    }
    let mut csv = match &cli.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            let mut f = std::fs::File::create(dir.join("overhead.csv")).map_err(|e| e.to_string())?;
            writeln!(f, "{HEADER}").map_err(|e| e.to_string())?;
            Some(f)
        }
        None => None,
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut below = Vec::new();
    // A prediction runs the GPU run's kernels: its iteration count at each point, not
    // one derived from this run's probe (which on the sim, or after a disturbed probe
    // on the GPU, would set a different kernel for the same target r).
    let gpu_iters: Vec<Row> = match &cli.predict_from {
        Some(gpu_csv) => read_rows(gpu_csv)?,
        None => Vec::new(),
    };
    for (sizes, random, seed, r) in plan {
        let chunks = chunk_ranges(cli.chunks, min, max, random, seed);
        let mean = chunks.iter().map(|c| c.len()).sum::<usize>() / chunks.len();
        let copy_ns = mean as f64 * 4.0 * (1.0 / link.up + 1.0 / link.down);
        let iters = gpu_iters
            .iter()
            .find(|g| g.sizes == sizes && g.seed == seed && g.r_target == r)
            .map_or_else(|| (((copy_ns / r) / mean as f64 - a) / b).clamp(0.0, 4e9) as u32, |g| g.iters);
        let r_model = copy_ns / kernel_ns(mean, iters);
        let tasks = work(&chunks, iters, (a, b));
        // The kernels' own best: this point's kernels alone, back to back on one GPU at
        // the most concurrency it allows, fastest of 3. No pipeline runs them faster, so
        // the bound's kernel times take this where the fitted model (an extrapolation
        // from two probes) says more.
        let kernels_alone = if predicting {
            f64::INFINITY
        } else {
            let sched = build_hand(1, 16, 2, Order::Fcfs, true, 1, Some(16))?;
            let k = sched.register_kernel(shift()).map_err(|e| e.to_string())?;
            let (d_in, d_out) = (
                sched.alloc::<u32>(max).map_err(|e| e.to_string())?,
                sched.alloc::<u32>(max).map_err(|e| e.to_string())?,
            );
            let total: usize = chunks.iter().map(|c| c.len()).sum();
            let mut best = f64::INFINITY;
            for _ in 0..4 {
                for (i, c) in chunks.iter().enumerate() {
                    let n = c.len() as u32;
                    let args = [Arg::buffer(&d_out), Arg::buffer(&d_in), Arg::u32(n), Arg::u32(iters)];
                    sched
                        .task(i as u64, 1)
                        .launch(&k, n.div_ceil(demo::BLOCK), demo::BLOCK, 0, &args)
                        .submit()
                        .map_err(|e| e.to_string())?;
                }
                let report = sched.synchronize().map_err(|e| e.to_string())?;
                best = best.min(report.makespan_ns as f64 / total as f64);
            }
            best
        };
        let tasks = work_at_most(&tasks, &chunks, kernels_alone);
        let mut point = Vec::new();
        for m in &machines {
            let d = m.gpus;
            let hw = bound_for(&tasks, d, link, m.host);
            let bound = hw.t_ns as f64 / 1e6;
            bar.set_message(format!("{sizes} seed {seed} r {r} D {d}"));
            let base = |system: &str, s: usize, wall: f64, makespan: f64| Row {
                sizes: sizes.clone(),
                seed,
                r_target: r,
                r_model,
                iters,
                system: system.to_string(),
                streams: s,
                order: String::new(),
                depth: 0,
                wall_ms: wall,
                makespan_ms: makespan,
                bound_ms: bound,
                serial_ms: 0.0,
                paper_eps: f64::NAN,
                runtime_us: f64::NAN,
                gpus: d,
                pin: String::new(),
                bus_mode: String::new(),
                buses: d,
                paper_bound_ms: f64::NAN,
                limit: hw.limit.to_string(),
                static_ms: f64::NAN,
                tasks_per_gpu: String::new(),
                config: String::new(),
                kernels: String::new(),
                rep: 0,
            };
            if d == 1 {
                for &bl in &baselines {
                    let ss: Vec<usize> = if bl == Baseline::Serial { vec![1] } else { cli.streams.clone() };
                    for s in ss {
                        demo::poison(&mut output, 0xdead_beef);
                        let t = baseline::shift(bl, gpu.ordinal, s, &input, &mut output, &chunks, iters)
                            .map_err(|e| e.to_string())?;
                        let bad: usize = chunks.iter().map(|c| mismatches(&input, &output, c.clone(), iters)).sum();
                        if bad > 0 {
                            return Err(format!("{} S={s}: {bad} wrong elements", bl.name()));
                        }
                        let ms = t.wall_ns as f64 / 1e6;
                        point.push(base(bl.name(), s, ms, ms));
                        bar.inc(1);
                    }
                }
            } else if !baselines.is_empty() {
                for &s in &cli.streams {
                    let mut outs: Vec<&mut HostBuffer<u32>> =
                        std::iter::once(&mut output).chain(split_outputs.iter_mut()).take(d).collect();
                    let (ms, overlap) = static_split(&m.ordinals, s, &input, &mut outs, &chunks, iters)?;
                    if overlap < 0.9 {
                        note(&bar, format!(
                            "note: static split D {d} S {s} ({sizes} seed {seed} r {r}): the GPUs' timed runs overlapped {:.0}%",
                            overlap * 100.0
                        ));
                    }
                    point.push(base("static-split", s, ms, ms));
                    bar.inc(1);
                }
            }
            let mut fastest_trace: Option<(f64, String)> = None;
            // Every chariot configuration of this point: the defaults, then the grid.
            struct Config {
                sched: Scheduler,
                kernel: chariot::KernelHandle,
                d_in: chariot::DeviceBuffer<u32>,
                d_out: chariot::DeviceBuffer<u32>,
                default: bool,
                order: String,
                variant: Variant,
                kernels: Option<usize>,
            }
            let mut configs: Vec<Config> = Vec::new();
            let mut add = |sched: Scheduler, default: bool, order: &str, variant: Variant, kernels: Option<usize>| {
                let kernel = sched.register_kernel(shift()).map_err(|e| e.to_string())?;
                let d_in = sched.alloc::<u32>(max).map_err(|e| e.to_string())?;
                let d_out = sched.alloc::<u32>(max).map_err(|e| e.to_string())?;
                configs.push(Config { sched, kernel, d_in, d_out, default, order: order.into(), variant, kernels });
                Ok::<(), String>(())
            };
            if !cli.no_default {
                let v = Variant { pin: true, bus_mode: "default".into(), buses: d };
                add(build_default(d)?, true, "fcfs", v, None)?;
            }
            let kernel_grid: Vec<Option<usize>> =
                if cli.kernels.is_empty() { vec![None] } else { cli.kernels.iter().map(|&k| Some(k)).collect() };
            for &depth in &cli.depths {
                for &o in &cli.orders {
                    for &s in &cli.streams {
                        for &k in &kernel_grid {
                            for v in variants(m, r) {
                                add(build_hand(d, s, depth, o, v.pin, v.buses, k)?, false, o.name(), v, k)?;
                            }
                        }
                    }
                }
            }
            // The first batch of each touches device memory and the context's first
            // copies from these host buffers (on 2 × H200 a cold first batch ran up to
            // 10% slower at D = 2): a warm-up, as the baselines have. Then the timed
            // batches, alternated: each repetition visits every configuration, starting
            // from another one. Outputs poisoned before each batch and checked after it.
            let run_batch = |c: &Config, output: &mut HostBuffer<u32>| -> Result<(chariot::Report, f64), String> {
                if !predicting {
                    demo::poison(output, 0xdead_beef);
                }
                let t0 = Instant::now();
                submit_batch(&c.sched, &c.kernel, &c.d_in, &c.d_out, &input, output, &chunks, iters)?;
                let report = c.sched.synchronize().map_err(|e| e.to_string())?;
                Ok((report, t0.elapsed().as_secs_f64() * 1e3))
            };
            for c in &configs {
                run_batch(c, &mut output)?;
            }
            // What chariot's copies achieved at this point and D: the baselines' bounds
            // take it too (they keep no records, and run on the same machine).
            let (mut seen_link, mut seen_host) = (link, m.host);
            for rep in 0..cli.repeat {
                for i in 0..configs.len() {
                    let c = &configs[(i + rep) % configs.len()];
                    let (report, wall) = run_batch(c, &mut output)?;
                    let bad: usize = if predicting {
                        0
                    } else {
                        chunks.iter().map(|c| mismatches(&input, &output, c.clone(), iters)).sum()
                    };
                    let t = c.sched.tuning();
                    let (s, depth) = (t.streams, t.stage_depth);
                    let pin_name = if c.variant.pin { "on" } else { "off" };
                    let kernels = c.kernels.map_or("fill".to_string(), |k| k.to_string());
                    let which = if c.default { "default" } else { "hand" };
                    let config = format!(
                        "D {d} {which} S {s} {} depth {depth} kernels {kernels} pin {pin_name} B {}",
                        c.order, c.variant.buses
                    );
                    if bad > 0 {
                        return Err(format!("chariot {config}: {bad} wrong elements"));
                    }
                    let mut row = base("chariot", s, wall, report.makespan_ms());
                    // This run's own bound: the probed rates raised to what its copies
                    // did, on one link and on the host (no run beats its own copies).
                    let own_link = link.at_least(LinkRates::observed(&report.records));
                    let own_host = m.host.at_least(LinkRates::observed_host(&report.records));
                    let own = bound_for(&tasks, d, own_link, if d == 1 { own_link } else { own_host });
                    seen_link = seen_link.at_least(own_link);
                    seen_host = seen_host.at_least(own_host);
                    row.bound_ms = own.t_ns as f64 / 1e6;
                    row.limit = own.limit.to_string();
                    row.order = c.order.clone();
                    row.depth = depth;
                    row.pin = pin_name.to_string();
                    row.bus_mode = c.variant.bus_mode.clone();
                    row.buses = report.buses;
                    row.paper_eps = report.epsilon.unwrap_or(f64::NAN);
                    row.paper_bound_ms = report.lower_bound.t_lb_ns as f64 / 1e6;
                    row.runtime_us = report.dispatch.runtime_ns_per_command() / 1e3;
                    row.tasks_per_gpu =
                        report.tasks_per_gpu.iter().map(|n| n.to_string()).collect::<Vec<_>>().join("/");
                    row.config = which.to_string();
                    row.kernels = kernels;
                    row.rep = rep;
                    if cli.trace && fastest_trace.as_ref().is_none_or(|t| wall < t.0) {
                        fastest_trace = Some((wall, report.chrome_trace()));
                    }
                    point.push(row);
                    bar.inc(1);
                }
            }
            drop(configs);
            let seen = bound_for(&tasks, d, seen_link, if d == 1 { seen_link } else { seen_host });
            for p in point.iter_mut().filter(|p| p.system != "chariot" && p.gpus == d) {
                p.bound_ms = seen.t_ns as f64 / 1e6;
                p.limit = seen.limit.to_string();
            }
            if let (Some(dir), Some((_, json))) = (&cli.out, fastest_trace) {
                let file = dir.join(format!("trace-{sizes}-{seed}-r{r}-d{d}.json"));
                std::fs::write(&file, json).map_err(|e| format!("{}: {e}", file.display()))?;
            }
        }
        // Serial is one GPU's: the speedups of every D are over it.
        let serial = point.iter().find(|p| p.system == "serial").map(|p| p.wall_ms);
        let serial = serial
            .or_else(|| {
                point.iter().find(|p| p.system == "chariot" && p.gpus == 1 && p.streams == 1).map(|p| p.wall_ms)
            })
            .unwrap_or(f64::NAN);
        let best_static = |d: usize| {
            point
                .iter()
                .filter(|p| p.system == "static-split" && p.gpus == d)
                .map(|p| p.wall_ms)
                .fold(f64::NAN, f64::min)
        };
        let statics: Vec<(usize, f64)> = machines.iter().map(|m| (m.gpus, best_static(m.gpus))).collect();
        for p in point.iter_mut() {
            p.serial_ms = serial;
            p.static_ms = statics.iter().find(|s| s.0 == p.gpus).map_or(f64::NAN, |s| s.1);
        }
        for warning in below_bound(&point) {
            note(&bar, format!("WARNING below the hardware bound: {warning}"));
            below.push(warning);
        }
        for p in point {
            if let Some(f) = csv.as_mut() {
                write_row(f, &p).map_err(|e| e.to_string())?;
            }
            rows.push(p);
        }
    }
    bar.finish();
    summary(&rows);
    if let Some(dir) = &cli.out {
        if cli.trace {
            let cal = read_calibration(&dir.join("calibration.csv"))?;
            replay_table(&rows, dir, dir, &cal)?;
        }
        if let Err(e) = plots(&rows, dir) {
            eprintln!("plots not drawn: {e}");
        }
    }
    if let Some(gpu_csv) = &cli.predict_from {
        let dir = cli.out.clone().unwrap_or_default();
        predict(&rows, &read_rows(gpu_csv)?, &dir)?;
    }
    bound_check(&below);
    Ok(())
}

/// A line above the progress bar. `ProgressBar::println` prints nothing when the bar
/// is hidden (output not a terminal, as on the GPU machines); this prints either way.
fn note(bar: &ProgressBar, line: String) {
    bar.suspend(|| eprintln!("{line}"));
}

fn bound_check(below: &[String]) {
    if below.is_empty() {
        println!("bound check: no makespan (chariot, baselines, static split) below its hardware bound");
    } else {
        println!("bound check FAILED for {} run(s):\n  {}", below.len(), below.join("\n  "));
    }
}

/// The static split: one host thread per GPU, each running the breadth-first pipeline
/// with `s` streams over its contiguous share of the chunks into its own output
/// buffer, all started together. Returns the slowest thread's timed run (ms) and how
/// much the threads' timed runs overlapped (their common stretch over the longest).
///
/// Each thread's `baseline::shift_started_by` warms up, waits for the others at a
/// barrier, then times its run, so the timed runs start together. (Before, each thread
/// warmed up again after the barrier; with NVRTC and module loading in between, the
/// timed runs of 9 ms did not overlap at all on 2 × H200, and each GPU had the host to
/// itself. The note that said so was lost: `ProgressBar::println` prints nothing when
/// the output is not a terminal.) The overlap is printed when under 90%.
fn static_split(
    ordinals: &[usize],
    s: usize,
    input: &HostBuffer<u32>,
    outputs: &mut [&mut HostBuffer<u32>],
    chunks: &[Range<usize>],
    iters: u32,
) -> Result<(f64, f64), String> {
    let d = ordinals.len();
    let groups = static_groups(chunks, d);
    for out in outputs.iter_mut() {
        demo::poison(out, 0xdead_beef);
    }
    let barrier = std::sync::Barrier::new(d);
    let epoch = Instant::now();
    let results: Vec<Result<(u64, f64), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = outputs
            .iter_mut()
            .zip(&groups)
            .zip(ordinals)
            .map(|((out, group), &ordinal)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    // Each thread warms up, then waits for the others at the barrier, so
                    // the timed runs start together and both GPUs copy at once.
                    let timed = baseline::shift_started_by(
                        Baseline::BreadthFirst,
                        ordinal,
                        s,
                        input,
                        out,
                        group,
                        iters,
                        barrier,
                    )
                    .map_err(|e| format!("static split, GPU {ordinal}: {e}"));
                    // Placed by when its last result came, not by when the thread got
                    // back: tearing a run down (freeing its memory) takes time of its own.
                    timed.map(|t| (t.wall_ns, t.ended.saturating_duration_since(epoch).as_secs_f64()))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("static split thread panicked".into()))).collect()
    });
    let mut spans = Vec::new();
    for r in results {
        let (wall_ns, end) = r?;
        spans.push((end - wall_ns as f64 / 1e9, end));
    }
    for (out, group) in outputs.iter().zip(&groups) {
        let bad: usize = group.iter().map(|c| mismatches(input, out, c.clone(), iters)).sum();
        if bad > 0 {
            return Err(format!("static split D {d} S {s}: {bad} wrong elements"));
        }
    }
    let longest = spans.iter().map(|(a, b)| b - a).fold(0.0, f64::max);
    let common = spans.iter().map(|s| s.1).fold(f64::INFINITY, f64::min)
        - spans.iter().map(|s| s.0).fold(f64::NEG_INFINITY, f64::max);
    Ok((longest * 1e3, (common / longest).clamp(0.0, 1.0)))
}

fn write_calibration(
    dir: &Path,
    link: LinkRates,
    (a, b): (f64, f64),
    machines: &[Machine],
    on_cuda: bool,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut f = std::fs::File::create(dir.join("calibration.csv"))?;
    writeln!(
        f,
        "gpus,link_up,link_down,link_both,host_up,host_down,host_both,calibrated_buses,kernel_a_ns,kernel_b_ns"
    )?;
    for m in machines {
        writeln!(
            f,
            "{},{},{},{},{},{},{},{},{},{}",
            m.gpus, link.up, link.down, link.both, m.host.up, m.host.down, m.host.both, m.calibrated_buses, a, b
        )?;
    }
    if on_cuda {
        // The options that make the sim predict this machine: the host as one shared
        // bus only where the bound takes it as one (`host_for_bound`).
        let mut args =
            format!("--sim-link {:.3},{:.3},{:.3} --sim-kernel {:.6},{:.8}", link.up, link.down, link.both, a, b);
        if let Some(m) = machines.iter().filter(|m| m.gpus > 1).max_by_key(|m| m.gpus) {
            if host_for_bound(link, m.host, m.gpus) == m.host {
                args += &format!(" --sim-host {:.3},{:.3},{:.3}", m.host.up, m.host.down, m.host.both);
            }
        }
        std::fs::write(dir.join("sim-args.txt"), args + "\n")?;
    }
    Ok(())
}

fn write_row(f: &mut std::fs::File, r: &Row) -> std::io::Result<()> {
    writeln!(
        f,
        "{},{},{},{:.4},{},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.5},{:.5},{:.3},{},{},{},{},{:.4},{},{:.4},{},{},{},{}",
        r.sizes,
        r.seed,
        r.r_target,
        r.r_model,
        r.iters,
        r.system,
        r.streams,
        r.order,
        r.depth,
        r.wall_ms,
        r.makespan_ms,
        r.bound_ms,
        r.serial_ms,
        r.serial_ms / r.wall_ms,
        r.makespan_ms / r.bound_ms - 1.0,
        r.paper_eps,
        r.runtime_us,
        r.gpus,
        r.pin,
        r.bus_mode,
        r.buses,
        r.paper_bound_ms,
        r.limit,
        r.static_ms,
        r.tasks_per_gpu,
        r.config,
        r.kernels,
        r.rep
    )?;
    f.flush()
}

/// Reads the rows of an `overhead.csv`; the columns of the multi-GPU study are
/// optional, so that CSVs of the one-GPU study still read (as D = 1, pinned).
fn read_rows(path: &Path) -> Result<Vec<Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let required = [
        "sizes",
        "seed",
        "r_target",
        "r_model",
        "iters",
        "system",
        "streams",
        "order",
        "depth",
        "wall_ms",
        "makespan_ms",
        "hw_bound_ms",
        "serial_ms",
        "paper_eps",
        "runtime_us_per_cmd",
    ];
    let mut idx = [0usize; 15];
    for (i, name) in required.iter().enumerate() {
        idx[i] = col(name).ok_or(format!("CSV has no column {name}"))?;
    }
    let [gpus, pin, bus_mode, buses, paper_bound, limit, static_ms, per_gpu] =
        ["gpus", "pin", "buses_mode", "buses", "paper_bound_ms", "hw_limit", "static_ms", "tasks_per_gpu"].map(col);
    let [config, kernels, rep] = ["config", "kernels", "rep"].map(col);
    let f = |v: &[&str], i: usize| v[idx[i]].parse::<f64>().unwrap_or(f64::NAN);
    let opt = |v: &[&str], i: Option<usize>| i.and_then(|i| v.get(i)).map(|s| s.to_string());
    let num = |v: &[&str], i: Option<usize>| opt(v, i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(f64::NAN);
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            if v.len() < header.len() {
                return Err(format!("short CSV line: {l}"));
            }
            let system = v[idx[5]].to_string();
            let d = opt(&v, gpus).and_then(|s| s.parse().ok()).unwrap_or(1);
            let chariot = system == "chariot";
            Ok(Row {
                sizes: v[idx[0]].to_string(),
                seed: f(&v, 1) as u64,
                r_target: f(&v, 2),
                r_model: f(&v, 3),
                iters: f(&v, 4) as u32,
                system,
                streams: f(&v, 6) as usize,
                order: v[idx[7]].to_string(),
                depth: f(&v, 8) as usize,
                wall_ms: f(&v, 9),
                makespan_ms: f(&v, 10),
                bound_ms: f(&v, 11),
                serial_ms: f(&v, 12),
                paper_eps: f(&v, 13),
                runtime_us: f(&v, 14),
                gpus: d,
                pin: opt(&v, pin).unwrap_or_else(|| if chariot { "on".into() } else { String::new() }),
                bus_mode: opt(&v, bus_mode).unwrap_or_else(|| if chariot { "default".into() } else { String::new() }),
                buses: opt(&v, buses).and_then(|s| s.parse().ok()).unwrap_or(d),
                paper_bound_ms: num(&v, paper_bound),
                limit: opt(&v, limit).unwrap_or_default(),
                static_ms: num(&v, static_ms),
                tasks_per_gpu: opt(&v, per_gpu).unwrap_or_default(),
                config: opt(&v, config).unwrap_or_else(|| if chariot { "hand".into() } else { String::new() }),
                kernels: opt(&v, kernels).unwrap_or_default(),
                rep: opt(&v, rep).and_then(|s| s.parse().ok()).unwrap_or(0),
            })
        })
        .collect()
}

/// The points (sizes, seed, r) in the order they ran.
fn points(rows: &[Row]) -> Vec<(String, u64, u64)> {
    let mut keys: Vec<(String, u64, u64)> = Vec::new();
    for r in rows {
        if !keys.contains(&r.point()) {
            keys.push(r.point());
        }
    }
    keys
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The fastest row (by wall time) among `rows` that `keep` accepts.
fn fastest<'a>(rows: &[&'a Row], keep: impl Fn(&Row) -> bool) -> Option<&'a Row> {
    rows.iter().copied().filter(|r| keep(r)).min_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms))
}

/// The tables printed after a sweep: per point and D, chariot's best against the
/// bounds and the baselines; then pinning, buses, the static split and scaling.
fn summary(rows: &[Row]) {
    let mut gpus: Vec<usize> = rows.iter().map(|r| r.gpus).collect();
    gpus.sort_unstable();
    gpus.dedup();
    println!(
        "\n{:>7} {:>5} {:>6} {:>2} {:>9} {:>9} {:>28} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "sizes",
        "seed",
        "r",
        "D",
        "bound ms",
        "chariot",
        "best config",
        "eps_hw",
        "eps_pap",
        "serial",
        "breadth",
        "depth",
        "graph",
        "static"
    );
    for (sizes, seed, rb) in points(rows) {
        for &d in &gpus {
            let pts: Vec<&Row> =
                rows.iter().filter(|r| r.point() == (sizes.clone(), seed, rb) && r.gpus == d).collect();
            if pts.is_empty() {
                continue;
            }
            let best = |sys: &str| fastest(&pts, |p| p.system == sys).map_or(f64::NAN, |p| p.wall_ms);
            let Some(c) = fastest(&pts, |p| p.system == "chariot") else { continue };
            println!(
                "{sizes:>7} {seed:>5} {:>6} {d:>2} {:>9.3} {:>9.3} {:>28} {:>6.1}% {:>6.1}% {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                f64::from_bits(rb),
                c.bound_ms,
                c.wall_ms,
                format!("S{} {} d{} pin {} B{}", c.streams, c.order, c.depth, c.pin, c.buses),
                (c.makespan_ms / c.bound_ms - 1.0) * 100.0,
                c.paper_eps * 100.0,
                if d == 1 { best("serial") } else { c.serial_ms },
                best("breadth-first"),
                best("depth-first"),
                best("cuda-graph"),
                best("static-split")
            );
        }
    }
    default_against_best(rows, &gpus);
    // Same configuration, one thing changed: the ratio of makespans, per pair.
    let pairs = |label: &str, differs: &dyn Fn(&Row, &Row) -> bool, same: &dyn Fn(&Row, &Row) -> bool| {
        let chariot: Vec<&Row> = rows.iter().filter(|r| r.system == "chariot").collect();
        let mut any = false;
        for &d in &gpus {
            let ratios: Vec<f64> = chariot
                .iter()
                .filter(|a| a.gpus == d)
                .flat_map(|a| {
                    chariot
                        .iter()
                        .filter(move |b| b.gpus == d && a.point() == b.point() && same(a, b) && differs(a, b))
                        .map(move |b| b.makespan_ms / a.makespan_ms)
                })
                .collect();
            if ratios.is_empty() {
                continue;
            }
            if !any {
                println!("\n{label}");
                any = true;
            }
            let n = ratios.len();
            let slower = ratios.iter().filter(|&&x| x > 1.0).count();
            println!(
                "  D = {d}: {n} pairs; second over first, median {:+.2}%, range {:+.2}% to {:+.2}%; second slower in {slower}",
                (median(ratios.clone()) - 1.0) * 100.0,
                (ratios.iter().copied().fold(f64::INFINITY, f64::min) - 1.0) * 100.0,
                (ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max) - 1.0) * 100.0,
            );
        }
    };
    let config = |a: &Row, b: &Row| a.streams == b.streams && a.order == b.order && a.depth == b.depth;
    pairs(
        "pinned (first) against unpinned (second) dispatchers, same configuration and buses:",
        &|a, b| a.pin == "on" && b.pin == "off",
        &|a, b| config(a, b) && a.buses == b.buses,
    );
    pairs(
        "default B (first) against the other bus settings (second), same configuration, pinned:",
        &|a, b| a.bus_mode == "default" && b.bus_mode != "default",
        &|a, b| config(a, b) && a.pin == b.pin && a.pin == "on",
    );
    // The static split against chariot, and chariot's scaling over D = 1.
    let mut lines = Vec::new();
    for (sizes, seed, rb) in points(rows) {
        let at = |d: usize, sys: &str| {
            let pts: Vec<&Row> =
                rows.iter().filter(|r| r.point() == (sizes.clone(), seed, rb) && r.gpus == d).collect();
            fastest(&pts, |p| p.system == sys).map(|p| p.wall_ms)
        };
        for &d in gpus.iter().filter(|&&d| d > 1) {
            let (c, s, one) = (at(d, "chariot"), at(d, "static-split"), at(1, "chariot"));
            if c.is_none() {
                continue;
            }
            let c = c.unwrap_or(f64::NAN);
            lines.push(format!(
                "  {sizes:>7} {seed:>5} r {:>6} D {d}: chariot {c:.3} ms, static split {}, chariot over D = 1 {}",
                f64::from_bits(rb),
                s.map_or("n/a".into(), |s| format!("{s:.3} ms (chariot {:+.1}%)", (c / s - 1.0) * 100.0)),
                one.map_or("n/a".into(), |o| format!("{:.2}x", o / c)),
            ));
        }
    }
    if !lines.is_empty() {
        println!("\nD > 1: chariot's best against the static split's best, and its scaling:\n{}", lines.join("\n"));
    }
}

/// chariot's defaults against the best configuration set by hand, per point and D: the
/// median wall time of each configuration over its timed batches, then the default's
/// over the least of the grid's. Prints the table and the worst ratio.
fn default_against_best(rows: &[Row], gpus: &[usize]) {
    type Key = (usize, String, usize, String, String, usize);
    let key = |r: &Row| -> Key { (r.streams, r.order.clone(), r.depth, r.kernels.clone(), r.pin.clone(), r.buses) };
    let mut lines = Vec::new();
    let mut worst: Option<(f64, String)> = None;
    for (sizes, seed, rb) in points(rows) {
        for &d in gpus {
            let here: Vec<&Row> = rows
                .iter()
                .filter(|r| r.system == "chariot" && r.gpus == d && r.point() == (sizes.clone(), seed, rb))
                .collect();
            let default: Vec<f64> = here.iter().filter(|r| r.config == "default").map(|r| r.wall_ms).collect();
            if default.is_empty() {
                continue;
            }
            let mut hand: Vec<(Key, Vec<f64>)> = Vec::new();
            for r in here.iter().filter(|r| r.config != "default") {
                match hand.iter_mut().find(|(k, _)| *k == key(r)) {
                    Some((_, v)) => v.push(r.wall_ms),
                    None => hand.push((key(r), vec![r.wall_ms])),
                }
            }
            let best = hand.into_iter().map(|(k, v)| (median(v), k)).min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((t_best, k)) = best else { continue };
            let t_default = median(default.clone());
            let ratio = t_default / t_best;
            let what = format!("{sizes} seed {seed} r {} D {d}", f64::from_bits(rb));
            if worst.as_ref().is_none_or(|w| ratio > w.0) {
                worst = Some((ratio, what.clone()));
            }
            let d_row = here.iter().find(|r| r.config == "default").expect("a default row");
            lines.push(format!(
                "  {what:<28} default (S {} depth {}) {t_default:>9.3} ms, best by hand (S {} {} depth {} kernels {} pin {} B {}) {t_best:>9.3} ms: {:+.1}% ({} runs each)",
                d_row.streams,
                d_row.depth,
                k.0,
                k.1,
                k.2,
                k.3,
                k.4,
                k.5,
                (ratio - 1.0) * 100.0,
                default.len()
            ));
        }
    }
    if lines.is_empty() {
        return;
    }
    println!("\nchariot's defaults against the best configuration set by hand (medians of the timed runs, wall time):");
    for l in &lines {
        println!("{l}");
    }
    if let Some((ratio, what)) = worst {
        println!("  worst: {what}, default {:+.1}% over the best", (ratio - 1.0) * 100.0);
    }
}

/// Joins the chariot rows of a sim run with the same configurations of a GPU run;
/// writes `prediction.csv` into `dir` and prints the error per D.
fn predict(sim: &[Row], gpu: &[Row], dir: &Path) -> Result<(), String> {
    let key = |r: &Row| {
        (
            r.gpus,
            r.sizes.clone(),
            r.seed,
            r.r_target.to_bits(),
            r.streams,
            r.order.clone(),
            r.depth,
            r.pin.clone(),
            r.buses,
        )
    };
    let mut out = String::from("gpus,sizes,seed,r_target,streams,order,depth,pin,buses,gpu_ms,sim_ms,error\n");
    let mut errors: Vec<(usize, f64, f64)> = Vec::new();
    for s in sim.iter().filter(|r| r.system == "chariot") {
        let Some(g) = gpu.iter().find(|g| g.system == "chariot" && key(g) == key(s)) else { continue };
        let err = s.makespan_ms / g.makespan_ms - 1.0;
        errors.push((s.gpus, s.r_target, err));
        out += &format!(
            "{},{},{},{},{},{},{},{},{},{:.4},{:.4},{:.5}\n",
            s.gpus,
            s.sizes,
            s.seed,
            s.r_target,
            s.streams,
            s.order,
            s.depth,
            s.pin,
            s.buses,
            g.makespan_ms,
            s.makespan_ms,
            err
        );
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("prediction.csv"), out).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut gpus: Vec<usize> = errors.iter().map(|e| e.0).collect();
    gpus.sort_unstable();
    gpus.dedup();
    println!("\nthe sim's prediction of the GPU run's makespans (sim / GPU − 1), chariot configurations:");
    for d in gpus {
        let mut abs: Vec<f64> = errors.iter().filter(|e| e.0 == d).map(|e| e.2.abs()).collect();
        abs.sort_by(f64::total_cmp);
        let signed: Vec<f64> = errors.iter().filter(|e| e.0 == d).map(|e| e.2).collect();
        let n = abs.len();
        let within = abs.iter().filter(|&&x| x <= 0.10).count();
        println!(
            "  D = {d}: {within} of {n} within 10%; median |error| {:.1}%, 90th percentile {:.1}%, worst {:.1}%; median signed {:+.1}%",
            median(abs.clone()) * 100.0,
            abs[(n * 9 / 10).min(n - 1)] * 100.0,
            abs[n - 1] * 100.0,
            median(signed) * 100.0
        );
        let mut rs: Vec<f64> = errors.iter().filter(|e| e.0 == d).map(|e| e.1).collect();
        rs.sort_by(f64::total_cmp);
        rs.dedup();
        for r in rs {
            let e: Vec<f64> = errors.iter().filter(|e| e.0 == d && e.1 == r).map(|e| e.2).collect();
            println!(
                "    r {r:>6}: median {:+.1}%, worst |error| {:.1}%",
                median(e.clone()) * 100.0,
                e.iter().map(|x| x.abs()).fold(0.0, f64::max) * 100.0
            );
        }
    }
    if errors.is_empty() {
        println!("  no configuration of this run is in the GPU's CSV");
    }
    Ok(())
}

/// ε against the hardware bound and speedup over serial, against r, as PNGs in `dir`
/// (one GPU); at D > 1 also ε against both bounds for each D, the static split against
/// chariot, and chariot's scaling over D = 1.
fn plots(all: &[Row], dir: &Path) -> Result<(), String> {
    use chariot::plot::Series;
    // A chart whose series have no finite point (no serial run, say) is left out.
    let line_chart = |path: PathBuf, title: &str, x: &str, y: &str, log_x: bool, series: &[Series]| {
        let series: Vec<Series> = series
            .iter()
            .map(|s| Series {
                label: s.label.clone(),
                points: s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            println!("plot {} left out: nothing to draw", path.display());
            return Ok(());
        }
        chariot::plot::line_chart(path, title, x, y, log_x, &series)
    };
    // The one-GPU plots: D = 1 and chariot's default settings, as the one-GPU study.
    let rows: Vec<Row> = all
        .iter()
        .filter(|r| r.gpus == 1 && (r.system != "chariot" || (r.pin == "on" && r.bus_mode == "default")))
        .cloned()
        .collect();
    let rows = &rows[..];
    let mut sets: Vec<(String, u64)> = all.iter().map(|r| (r.sizes.clone(), r.seed)).collect();
    sets.sort();
    sets.dedup();
    let rs = |set: &(String, u64)| {
        let mut v: Vec<f64> = all.iter().filter(|r| (r.sizes.clone(), r.seed) == *set).map(|r| r.r_target).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let best_in = |rows: &[Row], set: &(String, u64), r: f64, system: &str, d: usize| -> Option<Row> {
        rows.iter()
            .filter(|x| (x.sizes.clone(), x.seed) == *set && x.r_target == r && x.system == system && x.gpus == d)
            .min_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms))
            .cloned()
    };
    let best = |set: &(String, u64), r: f64, system: &str| best_in(rows, set, r, system, 1);
    let name = |set: &(String, u64)| {
        if set.0 == "fixed" {
            "fixed sizes".to_string()
        } else {
            format!("{} sizes, seed {}", set.0, set.1)
        }
    };
    if !rows.is_empty() {
        let eps: Vec<Series> = sets
            .iter()
            .map(|set| Series {
                label: name(set),
                points: rs(set)
                    .into_iter()
                    .filter_map(|r| best(set, r, "chariot").map(|b| (r, 100.0 * (b.makespan_ms / b.bound_ms - 1.0))))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        line_chart(
            dir.join("eps_vs_r.png"),
            "ε of chariot's best configuration against the hardware-aware bound",
            "transfer ratio r",
            "ε (%)",
            true,
            &eps,
        )?;
        for set in &sets {
            let mut series: Vec<Series> = ["chariot", "breadth-first", "depth-first", "cuda-graph"]
                .iter()
                .map(|sys| Series {
                    label: sys.to_string(),
                    points: rs(set)
                        .into_iter()
                        .filter_map(|r| best(set, r, sys).map(|b| (r, b.serial_ms / b.wall_ms)))
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            series.push(Series {
                label: "hardware-aware bound".into(),
                points: rs(set)
                    .into_iter()
                    .filter_map(|r| best(set, r, "chariot").map(|b| (r, b.serial_ms / b.bound_ms)))
                    .collect(),
            });
            let file = format!(
                "speedup_vs_r_{}{}.png",
                set.0,
                if set.0 == "fixed" { String::new() } else { format!("_{}", set.1) }
            );
            line_chart(
                dir.join(file),
                &format!("speedup over serial, {}", name(set)),
                "transfer ratio r",
                "speedup",
                true,
                &series,
            )?;
        }
    }
    let mut gpus: Vec<usize> = all.iter().map(|r| r.gpus).collect();
    gpus.sort_unstable();
    gpus.dedup();
    if gpus.iter().all(|&d| d == 1) {
        return Ok(());
    }
    // ε of the best configuration at each D, the worst over the chunk-size sets: one
    // chart per bound, as the paper's is an order of magnitude looser.
    for (file, label, paper) in
        [("eps_hw_by_gpus.png", "the hardware-aware bound", false), ("eps_paper_by_gpus.png", "the paper's T_LB", true)]
    {
        let mut eps = Vec::new();
        for &d in &gpus {
            let mut rr: Vec<f64> = all.iter().filter(|r| r.gpus == d).map(|r| r.r_target).collect();
            rr.sort_by(f64::total_cmp);
            rr.dedup();
            let points: Vec<(f64, f64)> = rr
                .into_iter()
                .filter_map(|r| {
                    sets.iter()
                        .filter_map(|set| best_in(all, set, r, "chariot", d))
                        .map(|b| if paper { b.paper_eps } else { b.makespan_ms / b.bound_ms - 1.0 })
                        .filter(|e| e.is_finite())
                        .reduce(f64::max)
                        .map(|e| (r, 100.0 * e))
                })
                .collect();
            eps.push(Series { label: format!("D = {d}"), points });
        }
        line_chart(
            dir.join(file),
            &format!("ε of chariot's best against {label} (worst over chunk-size sets)"),
            "transfer ratio r",
            "ε (%)",
            true,
            &eps,
        )?;
    }
    // The static split against chariot on random sizes, speedup over one GPU's serial.
    let mut split = Vec::new();
    for set in sets.iter().filter(|s| s.0 == "random") {
        for &d in gpus.iter().filter(|&&d| d > 1) {
            for (label, sys) in [("chariot", "chariot"), ("static split", "static-split")] {
                let points: Vec<(f64, f64)> = rs(set)
                    .into_iter()
                    .filter_map(|r| best_in(all, set, r, sys, d).map(|b| (r, b.serial_ms / b.wall_ms)))
                    .filter(|p| p.1.is_finite())
                    .collect();
                if !points.is_empty() {
                    split.push(Series { label: format!("{label}, D = {d}, seed {}", set.1), points });
                }
            }
        }
    }
    if !split.is_empty() {
        line_chart(
            dir.join("static_split_vs_chariot.png"),
            "random sizes: speedup over one GPU's serial run",
            "transfer ratio r",
            "speedup",
            true,
            &split,
        )?;
    }
    // chariot's scaling: its best at D over its best at D = 1, and the bounds' ratio,
    // each the mean over the chunk-size sets.
    let mut scaling = Vec::new();
    for &d in gpus.iter().filter(|&&d| d > 1) {
        for (label, bound) in [("chariot", false), ("the bounds' ratio", true)] {
            let mut rr: Vec<f64> = all.iter().filter(|r| r.gpus == d).map(|r| r.r_target).collect();
            rr.sort_by(f64::total_cmp);
            rr.dedup();
            let points: Vec<(f64, f64)> = rr
                .into_iter()
                .filter_map(|r| {
                    let ratios: Vec<f64> = sets
                        .iter()
                        .filter_map(|set| {
                            let (one, many) =
                                (best_in(all, set, r, "chariot", 1)?, best_in(all, set, r, "chariot", d)?);
                            Some(if bound { one.bound_ms / many.bound_ms } else { one.wall_ms / many.wall_ms })
                        })
                        .collect();
                    (!ratios.is_empty()).then(|| (r, ratios.iter().sum::<f64>() / ratios.len() as f64))
                })
                .collect();
            scaling.push(Series { label: format!("D = {d}, {label}"), points });
        }
    }
    if !scaling.is_empty() {
        line_chart(
            dir.join("scaling.png"),
            "chariot's best at D GPUs over its best at one GPU (mean over chunk-size sets)",
            "transfer ratio r",
            "speedup over D = 1",
            true,
            &scaling,
        )?;
    }
    Ok(())
}
