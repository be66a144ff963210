//! Tiled Cholesky factorisation (task graphs and resident data, benchmark 2; StarPU's classic benchmark,
//! MUSTARD's Table 4): chariot's task graph over resident tiles (POTRF, TRSM, SYRK, GEMM
//! on cuSOLVER and cuBLAS; by default an INVERSE a step, most TRSMs multiplying by
//! L_kk⁻¹, `--trsm`), with its defaults, against cuSOLVER's dense single-GPU
//! potrf, alternated round by round, GFLOP/s = N³/3 over the time.
//!
//! chariot's time runs from the first submit to `synchronize`'s return: the tiles'
//! uploads, the factorisation and L's readbacks, overlapped. The tiles' device memory
//! is allocated on every GPU before the clock, as the baseline's is
//! (`tiled::alloc_tiles`). With `--copies apart` it also runs the factorisation alone
//! (`chariot-apart`: the uploads a batch before, the readbacks a batch after, untimed),
//! to set beside cuSOLVER's factorisation alone. Each chariot run prints where its time
//! went ([`Timeline`]): the operations' busy time, when they started and ended, and the
//! copies' busy time, and at D > 1 each GPU's; `--trace` writes its Chrome trace. The
//! baseline's time is given with the transfers (upload, `cusolverDnXpotrf`, download,
//! one after the other) and without. Every factor is checked: ‖A − LLᵀ‖_F/‖A‖_F exactly
//! up to `--exact-max`, beyond that by random vectors (`--vectors`), in f64 on the CPU.
//!
//! `cargo bench --bench cholesky -- --help` lists the options. On the sim backend (no
//! GPU here, or `--backend sim`) the tile operations run on the CPU: a smoke test of the
//! graph at small N, not a measurement. D > 1 runs chariot only (MUSTARD's D = 2
//! baseline, cusolverMg, is not built).

use chariot::sim::SimProfile;
use chariot::{Backend, Order, Scheduler};
use chariot_align::output::Output;
use chariot_studies::cholesky::baseline::{self, PotrfRun};
use chariot_studies::cholesky::plan::Trsm;
use chariot_studies::cholesky::tiled::{
    factor_apart, factor_with, warm_up, Layout, Options, TiledHost, Timeline, Uploads,
};
use chariot_studies::cholesky::{residual, Spd, Tiling};
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;

/// chariot's tiled Cholesky factorisation against cuSOLVER's potrf.
#[derive(Parser, Debug)]
#[command(name = "cholesky", long_about = None)]
struct Cli {
    /// Orders N, comma-separated (default: 16384,32768 on CUDA, 512 on sim). N need not
    /// be a multiple of the tile: the last tiles are padded with the identity.
    #[arg(long, value_delimiter = ',')]
    n: Option<Vec<usize>>,
    /// Tile orders b, comma-separated (default: 1024,2048,4096 on CUDA, 64,128 on sim).
    #[arg(long, value_delimiter = ',')]
    tile: Option<Vec<usize>>,
    /// GPU counts D for chariot, comma-separated (the baseline runs at D = 1 only).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    gpus: Vec<usize>,
    /// Layouts of chariot's tasks at D > 1, comma-separated, alternated within each
    /// round: `data` (a ready task goes where most of what it reads is) and `cyclic`
    /// (MUSTARD's 2-D block-cyclic tiles, each task placed on its tile's owner). D = 1
    /// runs the first only.
    #[arg(long, value_delimiter = ',', default_value = "cyclic,data", value_parser = ["cyclic", "data"])]
    layouts: Vec<String>,
    /// How chariot's copies are timed, comma-separated, alternated within each round:
    /// `overlapped` (one batch: uploads, operations and readbacks, all timed) and
    /// `apart` (the operations alone timed, the tiles on the GPUs before them).
    #[arg(long, value_delimiter = ',', default_value = "overlapped", value_parser = ["overlapped", "apart"])]
    copies: Vec<String>,
    /// How chariot's TRSMs are done, comma-separated, alternated within each round:
    /// `inverse` (the default: a multiply by L_kk⁻¹, made by an INVERSE task a step)
    /// and `solve` (cuBLAS's triangular solve for every
    /// TRSM; its runs are named `…-solve`).
    #[arg(long, value_delimiter = ',', default_value = "inverse", value_parser = ["inverse", "solve"])]
    trsm: Vec<String>,
    /// The order of chariot's uploads, comma-separated, alternated within each round:
    /// `auto` (the default: rows at D = 1, first use at more), `rows` (row by row, the
    /// leading blocks first; runs named `…-rows`) and `first-use` (by the bottom level
    /// of the first operation on the tile; runs named `…-first-use`).
    #[arg(long, value_delimiter = ',', default_value = "auto", value_parser = ["auto", "rows", "first-use"])]
    uploads: Vec<String>,
    /// chariot's CUDA streams per GPU, S (default: chariot's own).
    #[arg(long)]
    streams: Option<usize>,
    /// Time chariot's commands on the GPU (`Builder::device_timing`: an event before and
    /// after each) rather than as the dispatcher sees them; the timelines and traces
    /// then show the commands' overlap and the GPU's idle gaps.
    #[arg(long)]
    device_timing: bool,
    /// Whether chariot's online adaptation may move its stage limits (`Builder::adapt`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    adapt: bool,
    /// Rounds: each runs chariot at every tile order, then the baseline.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Backend: auto (CUDA when there is a GPU), cuda or sim.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// chariot's task order: lf (largest granularity first: the tasks' bottom levels,
    /// the critical path first), fcfs (submit order) or sf.
    #[arg(long, default_value = "lf")]
    order: String,
    /// Random vectors of the residual check beyond --exact-max (0: no check).
    #[arg(long, default_value_t = 2)]
    vectors: usize,
    /// Largest N whose residual is computed exactly (O(N³) on the CPU).
    #[arg(long, default_value_t = 2048)]
    exact_max: usize,
    /// Seed of the matrix.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Skip the cuSOLVER baseline.
    #[arg(long)]
    no_baseline: bool,
    /// Write every run as a CSV row here.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write each chariot run's timeline as a Chrome trace (`Report::chrome_trace`: every
    /// command, its GPU, stream and times, and every dependency) into this directory,
    /// created if missing, one file a run: `METHOD-dD-nN-bB-rROUND.json`.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Accepted for `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One run.
#[derive(Clone, Debug)]
struct Row {
    method: String,
    d: usize,
    n: usize,
    tile: usize,
    round: usize,
    /// Seconds, transfers included.
    wall_s: f64,
    /// Seconds of the factorisation alone (the baseline), NaN for chariot.
    factor_s: f64,
    residual: f64,
    tasks: usize,
    /// chariot's timeline (zeros for the baseline).
    timeline: Timeline,
    /// Each GPU's own at D > 1 (empty otherwise).
    per_gpu: Vec<Timeline>,
}

impl Row {
    fn gflops(&self) -> f64 {
        chariot_studies::cholesky::flops(self.n) / self.wall_s / 1e9
    }
    fn gflops_factor(&self) -> f64 {
        chariot_studies::cholesky::flops(self.n) / self.factor_s / 1e9
    }
}

const HEADER: &str = "method,backend,d,n,tile,round,wall_s,gflops,factor_s,gflops_factor,residual,tasks,\
                      upload_busy_s,upload_end_s,compute_busy_s,compute_start_s,compute_end_s,readback_busy_s,end_s";

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
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

fn main() -> Result<(), String> {
    let cli = Cli::parse();
    let backend = Backend::from_name(&cli.backend, SimProfile::instant()).map_err(|e| e.to_string())?;
    let on_cuda = matches!(backend, Backend::Cuda);
    let order = match cli.order.as_str() {
        "lf" => Order::LargestFirst,
        "fcfs" => Order::Fcfs,
        "sf" => Order::SmallestFirst,
        other => return Err(format!("--order {other}: lf, fcfs or sf")),
    };
    let ns = cli.n.clone().unwrap_or(if on_cuda { vec![16384, 32768] } else { vec![512] });
    let tiles = cli.tile.clone().unwrap_or(if on_cuda { vec![1024, 2048, 4096] } else { vec![64, 128] });
    if ns.contains(&0) || tiles.contains(&0) || cli.gpus.contains(&0) || cli.rounds == 0 || cli.streams == Some(0) {
        return Err("--n, --tile, --gpus, --rounds and --streams must be positive".into());
    }
    let trsms = cli
        .trsm
        .iter()
        .map(|t| {
            [Trsm::Inverse, Trsm::Solve]
                .into_iter()
                .find(|w| w.name() == t)
                .ok_or(format!("--trsm {t}: inverse or solve"))
        })
        .collect::<Result<Vec<Trsm>, String>>()?;
    let uploads: Vec<Uploads> = cli
        .uploads
        .iter()
        .filter_map(|u| [Uploads::Auto, Uploads::Rows, Uploads::FirstUse].into_iter().find(|w| w.name() == u))
        .collect();
    let backend_name = if on_cuda { "cuda" } else { "sim" };
    println!(
        "cholesky on {backend_name}: N {ns:?}, tiles {tiles:?}, D {:?}, {} rounds, order {}, copies {:?}, TRSM {:?}, \
         uploads {:?}",
        cli.gpus, cli.rounds, cli.order, cli.copies, cli.trsm, cli.uploads
    );
    if !on_cuda {
        println!("(sim: the tile operations run on the CPU; times are not GPU measurements; no baseline)");
    }
    // Checked and opened before any run; written beside the target, renamed at the end.
    let mut csv = match &cli.csv {
        Some(p) => {
            let mut f = Output::create("--csv", p)?;
            writeln!(f, "{HEADER}").map_err(|e| e.to_string())?;
            Some(f)
        }
        None => None,
    };
    if let Some(dir) = &cli.trace {
        // Checked before any run: a directory, or a path where one can be made.
        std::fs::create_dir_all(dir).map_err(|e| format!("--trace {}: {e}", dir.display()))?;
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut record = |row: Row, rows: &mut Vec<Row>| -> Result<(), String> {
        println!(
            "  {:<22} D {} N {:>6} b {:>5} round {}: {:>9.3} s {:>9.1} GFLOP/s{}  residual {:.2e}",
            row.method,
            row.d,
            row.n,
            row.tile,
            row.round,
            row.wall_s,
            row.gflops(),
            if row.factor_s.is_nan() {
                String::new()
            } else {
                format!(" (factorisation alone {:.3} s, {:.1} GFLOP/s)", row.factor_s, row.gflops_factor())
            },
            row.residual
        );
        if row.timeline.end_ns > 0 {
            print_timeline("timeline ms:", "uploads", &row.timeline);
            for (g, t) in row.per_gpu.iter().enumerate() {
                print_timeline(&format!("GPU {g} ms:"), "uploads and fetches", t);
            }
        }
        if let Some(f) = csv.as_mut() {
            let s = |ns: u64| ns as f64 / 1e9;
            let t = row.timeline;
            writeln!(
                f,
                "{},{backend_name},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                row.method,
                row.d,
                row.n,
                row.tile,
                row.round,
                row.wall_s,
                row.gflops(),
                row.factor_s,
                row.gflops_factor(),
                row.residual,
                row.tasks,
                s(t.upload_busy_ns),
                s(t.upload_end_ns),
                s(t.compute_busy_ns),
                s(t.compute_start_ns),
                s(t.compute_end_ns),
                s(t.readback_busy_ns),
                s(t.end_ns)
            )
            .map_err(|e| e.to_string())?;
        }
        rows.push(row);
        Ok(())
    };
    for &d in &cli.gpus {
        let sched = chariot_scheduler(&backend, d, order, &cli)?;
        for &n in &ns {
            let spd = Spd::new(n, cli.seed);
            let a_norm = spd.frobenius();
            for round in 0..cli.rounds {
                for &b in tiles.iter().filter(|&&b| b <= n) {
                    let layouts = if d == 1 { &cli.layouts[..1] } else { &cli.layouts[..] };
                    for name in layouts {
                        let layout = if name == "cyclic" { Layout::BlockCyclic } else { Layout::Data };
                        for copies in &cli.copies {
                            let apart = copies == "apart";
                            for trsm in &trsms {
                                for &uploads in &uploads {
                                    let how = Way { options: Options { layout, trsm: *trsm, uploads }, apart };
                                    record(chariot_run(&sched, &spd, a_norm, b, round, how, &cli)?, &mut rows)?;
                                }
                            }
                        }
                    }
                }
                if d == 1 && on_cuda && !cli.no_baseline {
                    let vectors = if n <= cli.exact_max { cli.vectors.max(1) } else { cli.vectors };
                    let run: PotrfRun = baseline::potrf(0, &spd, a_norm, vectors)?;
                    let s = |ns: u64| ns as f64 / 1e9;
                    record(
                        Row {
                            method: "cusolver-potrf".into(),
                            d: 1,
                            n,
                            tile: 0,
                            round,
                            wall_s: s(run.total_ns()),
                            factor_s: s(run.factor_ns),
                            residual: run.residual,
                            tasks: 1,
                            timeline: Timeline::default(),
                            per_gpu: Vec::new(),
                        },
                        &mut rows,
                    )?;
                }
            }
        }
    }
    summary(&rows);
    if let Some(f) = csv {
        f.commit()?;
    }
    Ok(())
}

/// chariot's scheduler at D GPUs with its defaults, `order`, and the command line's
/// streams, adaptation and device timing.
fn chariot_scheduler(backend: &Backend, d: usize, order: Order, cli: &Cli) -> Result<Scheduler, String> {
    let mut builder = Scheduler::builder()
        .backend(backend.clone())
        .gpus(d)
        .order(order)
        .adapt(cli.adapt)
        .device_timing(cli.device_timing);
    if let Some(s) = cli.streams {
        builder = builder.streams(s);
    }
    let sched = builder.build().map_err(|e| e.to_string())?;
    println!(
        "chariot at D = {d}, S = {} on {}",
        sched.streams(),
        sched.gpu_info().iter().map(|g| g.name.as_str()).collect::<Vec<_>>().join(", ")
    );
    Ok(sched)
}

/// How one chariot run goes: the study's options, and whether the factorisation alone
/// is timed ([`factor_apart`]).
#[derive(Clone, Copy, Debug)]
struct Way {
    options: Options,
    apart: bool,
}

/// One chariot factorisation of `spd` in tiles of `b`, checked, done `how`; warmed up
/// first when this tile order is new to the scheduler (library handles, workspaces,
/// scratch tiles, and a small factorisation each way of TRSM the command line lists, so
/// that every kernel is loaded).
fn chariot_run(
    sched: &Scheduler,
    spd: &Spd,
    a_norm: f64,
    b: usize,
    round: usize,
    how: Way,
    cli: &Cli,
) -> Result<Row, String> {
    let err = |e: chariot::Error| e.to_string();
    let d = sched.gpu_count();
    let Way { options, apart } = how;
    let Options { layout, trsm, uploads } = options;
    if round == 0 {
        let gpus = warm_up(sched, b, trsm).map_err(err)?;
        if gpus < sched.gpu_count() {
            println!("  (warm-up reached {gpus} of {} GPUs)", sched.gpu_count());
        }
        let w = Spd::new((2 * d * b).min(spd.n.max(b)), 99);
        let host = TiledHost::new(sched, &w, Tiling::new(w.n, b)?).map_err(err)?;
        factor_with(sched, &host, Options { trsm, ..Options::default() }).map_err(err)?;
    }
    let t = Tiling::new(spd.n, b)?;
    let host = TiledHost::new(sched, spd, t).map_err(err)?;
    let run =
        if apart { factor_apart(sched, &host, options) } else { factor_with(sched, &host, options) }.map_err(err)?;
    let l = host.l.read();
    let res = if spd.n <= cli.exact_max {
        residual::exact(spd, &t.lower_dense(&l))
    } else if cli.vectors > 0 {
        residual::randomized(spd, a_norm, &residual::TiledFactor { tiling: t, tiles: &l }, cli.vectors, 0x5eed)
    } else {
        f64::NAN
    };
    // D = 1 places nothing: the layouts are the same run there.
    let base = match (layout == Layout::BlockCyclic && d > 1, apart, trsm) {
        (true, false, Trsm::Inverse) => "chariot-cyclic",
        (true, true, Trsm::Inverse) => "chariot-cyc-apart",
        (false, false, Trsm::Inverse) => "chariot",
        (false, true, Trsm::Inverse) => "chariot-apart",
        (true, false, Trsm::Solve) => "chariot-cyclic-solve",
        (true, true, Trsm::Solve) => "chariot-cyc-apart-solve",
        (false, false, Trsm::Solve) => "chariot-solve",
        (false, true, Trsm::Solve) => "chariot-apart-solve",
    };
    let mut method = base.to_string();
    if uploads != Uploads::default() {
        method += &format!("-{}", uploads.name());
    }
    for a in &run.report.adaptations {
        println!("  {:<22} adapted: {a}", "");
    }
    if let Some(dir) = &cli.trace {
        let path = dir.join(format!("{method}-d{d}-n{}-b{b}-r{round}.json", spd.n));
        let mut out = Output::create("--trace", &path)?;
        out.write_all(run.report.chrome_trace().as_bytes()).map_err(|e| format!("--trace {}: {e}", path.display()))?;
        out.commit()?;
    }
    Ok(Row {
        method,
        d,
        n: spd.n,
        tile: b,
        round,
        wall_s: run.wall_ns as f64 / 1e9,
        factor_s: f64::NAN,
        residual: res,
        tasks: run.tasks,
        timeline: Timeline::of(&run.report),
        per_gpu: if d > 1 { (0..d).map(|g| Timeline::of_gpu(&run.report, g)).collect() } else { Vec::new() },
    })
}

/// Prints one line of a run's timeline: `label`, then the operations' busy time and
/// span, the copies to the GPU (named `uploads`) and the readbacks, in ms.
fn print_timeline(label: &str, uploads: &str, t: &Timeline) {
    let ms = |ns: u64| ns as f64 / 1e6;
    println!(
        "  {:<22} {label} operations busy {:.1} from {:.1} to {:.1} ({:.0} % of their span), \
         {uploads} busy {:.1} until {:.1}, readbacks busy {:.1}, last command {:.1}",
        "",
        ms(t.compute_busy_ns),
        ms(t.compute_start_ns),
        ms(t.compute_end_ns),
        100.0 * t.compute_busy_ns as f64 / (t.compute_end_ns - t.compute_start_ns).max(1) as f64,
        ms(t.upload_busy_ns),
        ms(t.upload_end_ns),
        ms(t.readback_busy_ns),
        ms(t.end_ns)
    );
}

/// Medians per (method, D, N, b), and chariot's best tile against the baseline.
fn summary(rows: &[Row]) {
    println!("\nmedians over the rounds (GFLOP/s = N³/3 / time):");
    println!(
        "{:<22} {:>2} {:>6} {:>5} {:>10} {:>12} {:>10} {:>10}",
        "method", "D", "N", "b", "time s", "GFLOP/s", "alone", "residual"
    );
    let mut keys: Vec<(&str, usize, usize, usize)> =
        rows.iter().map(|r| (r.method.as_str(), r.d, r.n, r.tile)).collect();
    keys.dedup();
    keys.sort();
    keys.dedup();
    // Keyed by (D, N, the factorisation alone).
    let mut best: std::collections::BTreeMap<(usize, usize, bool), (f64, usize, &str)> = Default::default();
    let mut potrf: std::collections::BTreeMap<usize, (f64, f64)> = Default::default();
    for k in keys {
        let of: Vec<&Row> = rows.iter().filter(|r| (r.method.as_str(), r.d, r.n, r.tile) == k).collect();
        let gf = median(of.iter().map(|r| r.gflops()).collect());
        let alone = median(of.iter().map(|r| r.gflops_factor()).collect());
        let worst = of.iter().map(|r| r.residual).fold(f64::NAN, f64::max);
        let time = median(of.iter().map(|r| r.wall_s).collect());
        println!(
            "{:<22} {:>2} {:>6} {:>5} {:>10.3} {:>12.1} {:>10.1} {:>10.2e}",
            k.0, k.1, k.2, k.3, time, gf, alone, worst
        );
        if k.0.starts_with("chariot") {
            let e = best.entry((k.1, k.2, k.0.contains("apart"))).or_insert((0.0, 0, ""));
            if gf > e.0 {
                *e = (gf, k.3, k.0);
            }
        } else {
            potrf.insert(k.2, (gf, alone));
        }
    }
    for ((d, n, apart), (gf, b, method)) in best {
        match (potrf.get(&n), apart) {
            (Some(&(total, alone)), false) => println!(
                "D {d} N {n}: chariot's best ({method}, b = {b}) {gf:.1} GFLOP/s = {:.2}× cuSOLVER potrf with transfers, {:.2}× without",
                gf / total,
                gf / alone
            ),
            (Some(&(_, alone)), true) => println!(
                "D {d} N {n}: chariot's best factorisation alone ({method}, b = {b}) {gf:.1} GFLOP/s = {:.2}× cuSOLVER potrf's",
                gf / alone
            ),
            (None, apart) => println!(
                "D {d} N {n}: chariot's best{} ({method}, b = {b}) {gf:.1} GFLOP/s",
                if apart { " factorisation alone" } else { "" }
            ),
        }
    }
}
