//! The overhead study of the paper's §6.1 on one GPU, with the pipelines a CUDA
//! programmer would write by hand measured in the same run (issue 4).
//!
//! The dummy shift kernel over N chunks of fixed or random size (3-30 MB), the transfer
//! ratio r = (T_D + T_R)/T_K set by the kernel's iteration count, chariot for each
//! S × order × stage depth, and the baselines (serial, breadth-first, depth-first,
//! CUDA graph) for each S. Every run's output is checked element by element. Each row
//! gets the hardware-aware bound from rates measured in the same run, and the study
//! checks that no measured makespan falls below it.
//!
//! `overhead --help` lists the options; `--out DIR` writes `overhead.csv`.

use chariot::baseline::{self, Baseline};
use chariot::demo::{self, fill, mismatches};
use chariot::{Arg, Backend, HardwareBound, Order, Scheduler, SimProfile, TaskWork};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::ops::Range;
use std::time::Instant;

/// chariot against the hand-written pipelines, across the transfer ratio r.
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
    #[arg(long, value_delimiter = ',', default_value = "fcfs,lf,sf")]
    orders: Vec<String>,
    /// Stage depths.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    depths: Vec<usize>,
    /// Skip the hand-written baselines.
    #[arg(long)]
    no_baselines: bool,
    /// On sim: predict a real GPU. Link rates measured there, GB/s: up,down,both.
    /// Implies timing-only simulation (outputs are not computed or checked).
    #[arg(long, value_delimiter = ',')]
    sim_link: Option<Vec<f64>>,
    /// On sim: the shift kernel's cost measured there, ns per element: a,b for a + b·iters.
    #[arg(long, value_delimiter = ',')]
    sim_kernel: Option<Vec<f64>>,
    /// auto, cuda or sim (baselines need cuda).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    backend: String,
    /// Directory for overhead.csv.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Only draw the plots (into --out, default the CSV's folder) from a CSV this
    /// study wrote earlier; run nothing.
    #[arg(long)]
    plot_from: Option<std::path::PathBuf>,
    /// Only draw the Gantt chart (gantt.png, into --out or beside the trace) of a Chrome
    /// trace written by chariot (e.g. the demo's demo-trace.json); run nothing.
    #[arg(long)]
    gantt_from: Option<std::path::PathBuf>,
    /// Accepted for `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn order(s: &str) -> Result<Order, String> {
    match s {
        "fcfs" => Ok(Order::Fcfs),
        "lf" => Ok(Order::LargestFirst),
        "sf" => Ok(Order::SmallestFirst),
        o => Err(format!("--orders: unknown order {o:?} (fcfs, lf, sf)")),
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
}

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
        let rows = read_rows(csv)?;
        let dir = cli.out.clone().or_else(|| csv.parent().map(|p| p.to_path_buf())).unwrap_or_default();
        return plots(&rows, &dir);
    }
    if cli.chunks == 0
        || !(cli.min_mib > 0.0 && cli.max_mib >= cli.min_mib)
        || cli.streams.contains(&0)
        || cli.depths.contains(&0)
    {
        return Err("--chunks, --min-mib <= --max-mib, --streams and --depths must be positive".into());
    }
    let orders = cli.orders.iter().map(|o| order(o)).collect::<Result<Vec<_>, _>>()?;
    if cli.sim_link.as_ref().is_some_and(|l| l.len() != 3) || cli.sim_kernel.as_ref().is_some_and(|k| k.len() != 2) {
        return Err("--sim-link takes up,down,both and --sim-kernel takes a,b".into());
    }
    let predicting = cli.sim_link.is_some();
    let backend = match (cli.backend.as_str(), &cli.sim_link) {
        ("cuda", _) => Backend::Cuda,
        ("sim", Some(l)) => Backend::SimWith(SimProfile::h100().with_link(l[0], l[1], l[2]).timing_only().spinning()),
        ("sim", None) => Backend::SimWith(SimProfile::h100()),
        _ => Backend::Auto,
    };
    let shift = || match &cli.sim_kernel {
        Some(k) => demo::shift_kernel_costing(k[0], k[1]),
        None => demo::shift_kernel(),
    };
    let build = |s: usize, depth: usize, order: Order| {
        Scheduler::builder()
            .backend(backend.clone())
            .streams(s)
            .stage_depth(depth)
            .order(order)
            .build()
            .map_err(|e| e.to_string())
    };
    let probe_sched = build(4, 2, Order::Fcfs)?;
    let on_cuda = probe_sched.backend_name() == "cuda";
    let gpu = probe_sched.gpu_info()[0].clone();
    let (min, max) = ((cli.min_mib * 262144.0) as usize, (cli.max_mib * 262144.0) as usize);
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
        "{} on {}: up {:.1} GB/s, down {:.1} GB/s, both {:.1} GB/s; kernel {:.3} + {:.5}·iters ns per element",
        if on_cuda { "cuda" } else { "sim" },
        gpu.name,
        link.up,
        link.down,
        link.both,
        a,
        b
    );

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
    let per_point =
        1 + baselines.len().saturating_sub(1) * cli.streams.len() + cli.streams.len() * orders.len() * cli.depths.len();
    let bar = ProgressBar::new((plan.len() * per_point) as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} {msg}").map_err(|e| e.to_string())?,
    );
    let mut csv = match &cli.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            let mut f = std::fs::File::create(dir.join("overhead.csv")).map_err(|e| e.to_string())?;
            writeln!(f, "sizes,seed,r_target,r_model,iters,system,streams,order,depth,wall_ms,makespan_ms,hw_bound_ms,serial_ms,speedup,eps_hw,paper_eps,runtime_us_per_cmd").map_err(|e| e.to_string())?;
            Some(f)
        }
        None => None,
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut below_bound = Vec::new();
    for (sizes, random, seed, r) in plan {
        let chunks = chunk_ranges(cli.chunks, min, max, random, seed);
        let mean = chunks.iter().map(|c| c.len()).sum::<usize>() / chunks.len();
        let copy_ns = mean as f64 * 4.0 * (1.0 / link.up + 1.0 / link.down);
        let iters = (((copy_ns / r) / mean as f64 - a) / b).clamp(0.0, 4e9) as u32;
        let r_model = copy_ns / kernel_ns(mean, iters);
        let tasks: Vec<TaskWork> = chunks
            .iter()
            .map(|c| TaskWork {
                up_bytes: c.len() as u64 * 4,
                kernel_ns: kernel_ns(c.len(), iters) as u64,
                down_bytes: c.len() as u64 * 4,
            })
            .collect();
        let bound = HardwareBound::one_gpu(&tasks, link).t_ns as f64 / 1e6;
        bar.set_message(format!("{sizes} seed {seed} r {r}"));
        let mut point = Vec::new();
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
        };
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
        for &depth in &cli.depths {
            for (&o, oname) in orders.iter().zip(&cli.orders) {
                for &s in &cli.streams {
                    let sched = build(s, depth, o)?;
                    let k = sched.register_kernel(shift()).map_err(|e| e.to_string())?;
                    let d_in = sched.alloc::<u32>(max).map_err(|e| e.to_string())?;
                    let d_out = sched.alloc::<u32>(max).map_err(|e| e.to_string())?;
                    if !predicting {
                        demo::poison(&mut output, 0xdead_beef);
                    }
                    let t0 = Instant::now();
                    for (i, c) in chunks.iter().enumerate() {
                        let n = c.len();
                        sched
                            .task(i as u64, n as u64)
                            .download(&d_in, 0, &input, c.clone())
                            .launch(
                                &k,
                                (n as u32).div_ceil(demo::BLOCK),
                                demo::BLOCK,
                                0,
                                &[Arg::buffer(&d_out), Arg::buffer(&d_in), Arg::u32(n as u32), Arg::u32(iters)],
                            )
                            .readback(&output, c.clone(), &d_out, 0)
                            .submit()
                            .map_err(|e| e.to_string())?;
                    }
                    let report = sched.synchronize().map_err(|e| e.to_string())?;
                    let wall = t0.elapsed().as_secs_f64() * 1e3;
                    let bad: usize = if predicting {
                        0
                    } else {
                        chunks.iter().map(|c| mismatches(&input, &output, c.clone(), iters)).sum()
                    };
                    if bad > 0 {
                        return Err(format!("chariot S={s} {oname} depth {depth}: {bad} wrong elements"));
                    }
                    let mut row = base("chariot", s, wall, report.makespan_ms());
                    row.order = oname.clone();
                    row.depth = depth;
                    row.paper_eps = report.epsilon.unwrap_or(f64::NAN);
                    row.runtime_us = report.dispatch.runtime_ns_per_command() / 1e3;
                    if report.makespan_ms() < bound * 0.999 {
                        below_bound.push(format!(
                            "{sizes} seed {seed} r {r} S {s} {oname} depth {depth}: {:.3} < {:.3} ms",
                            report.makespan_ms(),
                            bound
                        ));
                    }
                    point.push(row);
                    bar.inc(1);
                }
            }
        }
        let serial = point.iter().find(|p| p.system == "serial").map(|p| p.wall_ms);
        let serial = serial
            .or_else(|| point.iter().find(|p| p.system == "chariot" && p.streams == 1).map(|p| p.wall_ms))
            .unwrap_or(f64::NAN);
        for mut p in point {
            p.serial_ms = serial;
            if let Some(f) = csv.as_mut() {
                write_row(f, &p).map_err(|e| e.to_string())?;
            }
            rows.push(p);
        }
    }
    bar.finish();
    // Summary: per point, chariot's best against each baseline's best.
    println!(
        "\n{:>7} {:>5} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "sizes", "seed", "r", "bound ms", "chariot", "eps_hw", "serial", "breadth", "depth", "graph"
    );
    let mut keys: Vec<(String, u64, u64)> =
        rows.iter().map(|r| (r.sizes.clone(), r.seed, r.r_target.to_bits())).collect();
    keys.dedup();
    for (sizes, seed, rb) in keys {
        let pts: Vec<&Row> =
            rows.iter().filter(|r| r.sizes == sizes && r.seed == seed && r.r_target.to_bits() == rb).collect();
        let best = |sys: &str| pts.iter().filter(|p| p.system == sys).map(|p| p.wall_ms).fold(f64::NAN, f64::min);
        let chariot = pts.iter().filter(|p| p.system == "chariot").min_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms));
        let (cw, eps) = chariot.map_or((f64::NAN, f64::NAN), |c| (c.wall_ms, c.makespan_ms / c.bound_ms - 1.0));
        println!(
            "{sizes:>7} {seed:>5} {:>8} {:>9.3} {cw:>9.3} {:>8.1}% {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            f64::from_bits(rb),
            pts[0].bound_ms,
            eps * 100.0,
            best("serial"),
            best("breadth-first"),
            best("depth-first"),
            best("cuda-graph")
        );
    }
    if let Some(dir) = &cli.out {
        if let Err(e) = plots(&rows, dir) {
            eprintln!("plots not drawn: {e}");
        }
    }
    if below_bound.is_empty() {
        println!("bound check: no chariot makespan below its hardware bound");
    } else {
        println!("bound check FAILED for {} run(s):\n  {}", below_bound.len(), below_bound.join("\n  "));
    }
    Ok(())
}

fn write_row(f: &mut std::fs::File, r: &Row) -> std::io::Result<()> {
    writeln!(
        f,
        "{},{},{},{:.4},{},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.5},{:.5},{:.3}",
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
        r.runtime_us
    )?;
    f.flush()
}

/// Reads the rows of an `overhead.csv`.
fn read_rows(path: &std::path::Path) -> Result<Vec<Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or(format!("CSV has no column {name}"));
    let c = [
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
    ]
    .map(col);
    let mut idx = [0usize; 15];
    for (i, r) in c.into_iter().enumerate() {
        idx[i] = r?;
    }
    let f = |v: &[&str], i: usize| v[idx[i]].parse::<f64>().unwrap_or(f64::NAN);
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            if v.len() < header.len() {
                return Err(format!("short CSV line: {l}"));
            }
            Ok(Row {
                sizes: v[idx[0]].to_string(),
                seed: f(&v, 1) as u64,
                r_target: f(&v, 2),
                r_model: f(&v, 3),
                iters: f(&v, 4) as u32,
                system: v[idx[5]].to_string(),
                streams: f(&v, 6) as usize,
                order: v[idx[7]].to_string(),
                depth: f(&v, 8) as usize,
                wall_ms: f(&v, 9),
                makespan_ms: f(&v, 10),
                bound_ms: f(&v, 11),
                serial_ms: f(&v, 12),
                paper_eps: f(&v, 13),
                runtime_us: f(&v, 14),
            })
        })
        .collect()
}

/// ε against the hardware bound and speedup over serial, against r, as PNGs in `dir`.
fn plots(rows: &[Row], dir: &std::path::Path) -> Result<(), String> {
    use chariot::plot::{line_chart, Series};
    let mut sets: Vec<(String, u64)> = rows.iter().map(|r| (r.sizes.clone(), r.seed)).collect();
    sets.sort();
    sets.dedup();
    let rs = |set: &(String, u64)| {
        let mut v: Vec<f64> = rows.iter().filter(|r| (r.sizes.clone(), r.seed) == *set).map(|r| r.r_target).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let best = |set: &(String, u64), r: f64, system: &str| {
        rows.iter()
            .filter(|x| (x.sizes.clone(), x.seed) == *set && x.r_target == r && x.system == system)
            .min_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms))
    };
    let name = |set: &(String, u64)| {
        if set.0 == "fixed" {
            "fixed sizes".to_string()
        } else {
            format!("{} sizes, seed {}", set.0, set.1)
        }
    };
    let eps: Vec<Series> = sets
        .iter()
        .map(|set| Series {
            label: name(set),
            points: rs(set)
                .into_iter()
                .filter_map(|r| best(set, r, "chariot").map(|b| (r, 100.0 * (b.makespan_ms / b.bound_ms - 1.0))))
                .collect(),
        })
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
    Ok(())
}
