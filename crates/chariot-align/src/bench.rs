//! The `bench` command: each `--configs` entry (chariot with its defaults or set by
//! hand, the serial run, the hand-written in-order pipeline) run on each query, checked
//! to find the same scores, timed per stage, against the CPU baseline.

use crate::commands::{load_matrix, load_queries, ms, options, print_stages, Common};
use crate::matrix::Matrix;
use crate::search::{self, Query};
use crate::sw::Gaps;
use crate::{cpu, db, hand};
use chariot::Order;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// The options of `bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The files, the scoring and the machine.
    #[command(flatten)]
    pub common: Common,
    /// Configurations: auto (chariot with its defaults, largest first: what `search`
    /// runs), serial (chariot, S = 1, FCFS: the non-pipelined code), hand (the
    /// hand-written in-order pipeline: S streams, S file-read threads, no chariot), or
    /// an order: fcfs (chariot, S streams, file order), lf (chariot, S streams, largest
    /// first) or sf (smallest first), each with S, depth and kernels set by hand and no
    /// adaptation. A suffix `:N` sets S = N; on hand a second `:R` sets the read
    /// threads (`hand:2:1` is one producer thread with double buffering); on serial and
    /// the orders `:all` gives every chunk a slot (the whole task set queued at once)
    /// and `:kN` lets a GPU run N kernels at once (as `--kernels`), `:fF` admits
    /// kernels up to F GPU-fills (by occupancy) and `:dN` sets the stage depth (as
    /// `--stage-depth`), e.g. `lf:8:all`, `fcfs:4:k4`, `lf:16:k8:d2`, `lf:16:f2:d2`.
    /// Every entry is checked before anything runs. The database is streamed (as by the
    /// hand-written pipeline) unless `--db-on-gpu yes`.
    #[arg(long, value_delimiter = ',', default_value = "auto,serial,hand,fcfs,lf", value_parser = BenchConfig::parse)]
    pub configs: Vec<BenchConfig>,
    /// Streams per GPU S for the pipelined configurations.
    #[arg(long, default_value_t = 4)]
    pub streams: usize,
    /// CSV of the runs.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Sequences for the multi-threaded CPU baseline (0: none).
    #[arg(long, default_value_t = 20_000)]
    pub cpu_seqs: u64,
    /// Threads of the CPU baseline (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub cpu_threads: usize,
    /// Search all the queries at once in each configuration (as `search` does), rather
    /// than each query alone; no CPU baseline then.
    #[arg(long)]
    pub together: bool,
    /// Run the first configuration once, untimed, before the others: the process's
    /// first search pays the CUDA context's and the kernel's first use.
    #[arg(long)]
    pub warmup: bool,
}

/// What a `--configs` entry runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// chariot with its defaults, largest first (what `search` runs).
    Auto,
    /// chariot with S = 1, FCFS.
    Serial,
    /// The hand-written in-order pipeline.
    Hand,
    /// chariot with this order, set by hand.
    Chariot(Order),
}

impl Kind {
    /// The entry's first word.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Auto => "auto",
            Kind::Serial => "serial",
            Kind::Hand => "hand",
            Kind::Chariot(o) => o.name(),
        }
    }
}

/// One `--configs` entry, checked when the command line is read.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchConfig {
    /// The entry as given, e.g. `lf:16:k8:d2`.
    pub text: String,
    /// What the entry runs (its first word).
    pub kind: Kind,
    /// `:N`: S = N.
    pub streams: Option<usize>,
    /// hand's second `:R`: read threads.
    pub readers: Option<usize>,
    /// `:all`: a slot for every chunk.
    pub all_slots: bool,
    /// `:kN`: kernels a GPU runs at once.
    pub kernels: Option<usize>,
    /// `:dN`: stage depth.
    pub depth: Option<usize>,
    /// `:fF`: GPU-fills admitted.
    pub fills: Option<f64>,
}

impl BenchConfig {
    /// Parses an entry; the error names what is wrong and what is allowed (clap adds
    /// the entry and the option).
    pub fn parse(cfg: &str) -> Result<BenchConfig, String> {
        let mut parts = cfg.split(':');
        let first = parts.next().unwrap_or_default();
        let kind = match first {
            "auto" => Kind::Auto,
            "serial" => Kind::Serial,
            "hand" => Kind::Hand,
            other => match other.parse::<Order>() {
                Ok(o) => Kind::Chariot(o),
                Err(chariot::Error::InvalidConfig { allowed, .. }) => {
                    return Err(format!(
                        "unknown configuration `{other}`; allowed: auto, serial, hand, or an order ({allowed})"
                    ))
                }
                Err(e) => return Err(e.to_string()),
            },
        };
        let mut c = BenchConfig {
            text: cfg.to_string(),
            kind,
            streams: None,
            readers: None,
            all_slots: false,
            kernels: None,
            depth: None,
            fills: None,
        };
        if kind == Kind::Auto && cfg.contains(':') {
            return Err("auto takes no suffix (it is chariot's own choice)".into());
        }
        let set_by_hand = matches!(kind, Kind::Serial | Kind::Chariot(_));
        for (k, p) in parts.enumerate() {
            let number =
                |n: &str| n.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| format!("`{n}` is no count"));
            match (kind, k, p) {
                (_, _, "all") if set_by_hand => c.all_slots = true,
                (_, _, p) if set_by_hand && p.starts_with('k') => c.kernels = Some(number(&p[1..])?),
                (_, _, p) if set_by_hand && p.starts_with('d') => c.depth = Some(number(&p[1..])?),
                (_, _, p) if set_by_hand && p.starts_with('f') => {
                    let f = p[1..].parse::<f64>().ok().filter(|f| f.is_finite() && *f > 0.0);
                    c.fills = Some(f.ok_or_else(|| format!("`{p}` is no number of GPU-fills"))?);
                }
                (_, 0, n) => c.streams = Some(number(n)?),
                (Kind::Hand, 1, n) => c.readers = Some(number(n)?),
                _ => return Err(format!("`{p}` is not understood")),
            }
        }
        Ok(c)
    }
}

/// One measured configuration of a query, for the bench's lines and CSV.
struct Row {
    cfg: String,
    kind: String,
    gpus: usize,
    streams: usize,
    readers: usize,
    order: &'static str,
    wall_ms: f64,
    makespan_ms: Option<f64>,
    gcups: f64,
    /// Per stage of [`STAGES`]: sum of command times and busy time, ms (the hand
    /// pipeline times its file read and write only).
    sum: [Option<f64>; 5],
    busy: [Option<f64>; 5],
    /// Top 10 hits (score, subject) and the digest of every score, for the check.
    top: Vec<(i32, u64)>,
    digest: u64,
}

impl Row {
    fn slowest(&self) -> Option<f64> {
        let b: Option<Vec<f64>> = self.busy.iter().copied().collect();
        b.map(|b| b.into_iter().fold(0.0, f64::max))
    }
}

fn opt_cell(v: Option<f64>, digits: usize) -> String {
    v.map(|v| format!("{v:.digits$}")).unwrap_or_default()
}

/// Runs configuration `c` for one query.
fn bench_one(a: &BenchArgs, index: &db::DbIndex, m: &Matrix, q1: &[Query], c: &BenchConfig) -> Result<Row, String> {
    let (cfg, kind) = (c.text.as_str(), c.kind.name());
    let (s, ord, name) = match c.kind {
        Kind::Auto => (0, Order::LargestFirst, Order::LargestFirst.name()),
        Kind::Serial => (c.streams.unwrap_or(1), Order::Fcfs, Order::Fcfs.name()),
        Kind::Hand => (c.streams.unwrap_or(a.streams), Order::Fcfs, "in-order"),
        Kind::Chariot(o) => (c.streams.unwrap_or(a.streams), o, o.name()),
    };
    let (all_slots, readers, kernels, depth, fills) = (c.all_slots, c.readers, c.kernels, c.depth, c.fills);
    let mut opt = options(&a.common, (kind != "auto").then_some(s), ord, 10, None, false);
    // The bench times the streamed pipeline (the paper's, and the hand-written one's)
    // unless asked for a resident database: a resident search's time leaves the upload out.
    if opt.placement == search::DbPlacement::Auto {
        opt.placement = search::DbPlacement::Streamed;
    }
    if kind == "serial" || kind == "hand" {
        opt.gpus = 1;
    }
    if all_slots {
        opt.slots = index.chunks.len();
    }
    if let Some(k) = kernels {
        opt.kernels = Some(k);
    }
    if let Some(d) = depth {
        opt.stage_depth = Some(d);
    }
    opt.fills = fills;
    // A configuration set by hand is set by hand throughout: no adaptation.
    opt.adapt = kind == "auto";
    if kind == "hand" {
        let readers = readers.unwrap_or(s);
        let o = hand::search(index, m, q1, &opt, readers)?;
        let wall = o.wall.as_secs_f64() * 1e3;
        println!(
            "{cfg:>9}: D = 1, S = {s}, R = {readers}, by hand in order ({}): {wall:.1} ms, {:.1} GCUPS, \
             read busy {:.1} ms (sum {:.1}), write busy {:.1} ms; main thread waited {:.1} ms for reads, {:.1} ms for streams",
            if o.device == chariot_inorder::InOrderDevice::CpuTwin { "CPU twin" } else { "cuda" },
            o.gcups(),
            ms(o.read_busy_ns),
            ms(o.read_sum_ns),
            ms(o.write_busy_ns),
            ms(o.starved_ns),
            ms(o.waiting_ns)
        );
        let top = o.hits[0].iter().map(|h| (h.score, h.seq)).collect();
        let row = Row {
            cfg: cfg.to_string(),
            kind: kind.to_string(),
            gpus: 1,
            streams: s,
            readers,
            order: name,
            wall_ms: wall,
            makespan_ms: None,
            gcups: o.gcups(),
            sum: [Some(ms(o.read_sum_ns)), None, None, None, Some(ms(o.write_sum_ns))],
            busy: [Some(ms(o.read_busy_ns)), None, None, None, Some(ms(o.write_busy_ns))],
            top,
            digest: o.digest,
        };
        return Ok(row);
    }
    let o = search::search(index, m, q1, &opt)?;
    let wall = o.wall.as_secs_f64() * 1e3;
    let s = o.report.streams;
    let kernels = opt.kernels.map_or("auto".to_string(), |k| k.to_string());
    println!(
        "{cfg:>9}: D = {}, S = {s}, {name}, {kernels} kernel(s) at once: {wall:.1} ms, {:.1} GCUPS, total/slowest stage {:.3}",
        o.report.gpus.len(),
        o.gcups(),
        wall * 1e6 / o.slowest_busy_ns().max(1) as f64
    );
    if kind == "auto" {
        println!("           kernel {}{}", o.kernel.name(), crate::commands::kernel_note(&o));
        for line in o.report.tuning.iter().filter(|l| l.starts_with("kernel concurrency")) {
            println!("           chosen: {line}");
        }
        for a in &o.report.adaptations {
            println!("           adapted: {a}");
        }
    }
    if kind == "serial" {
        print_stages(&o);
    }
    let top = o.hits[0].iter().map(|h| (h.score, h.seq)).collect();
    let row = Row {
        cfg: cfg.to_string(),
        kind: kind.to_string(),
        gpus: o.report.gpus.len(),
        streams: s,
        readers: o.report.gpus.len() * s,
        order: name,
        wall_ms: wall,
        makespan_ms: Some(o.report.makespan_ms()),
        gcups: o.gcups(),
        sum: o.stage_sum_ns.map(|v| Some(ms(v))),
        busy: o.stage_busy_ns.map(|v| Some(ms(v))),
        top,
        digest: o.digest,
    };
    Ok(row)
}

/// `bench`: indexes the database, runs every configuration on each query (or on all of
/// them at once), checks that they find the same scores, prints a line per run and the
/// speedups, and writes the CSV when asked.
pub fn run_bench(a: BenchArgs) -> Result<(), String> {
    // The CSV goes through the output guard as `search`'s outputs do: never an input,
    // only over a regular file or a missing path, created (its `.partial`) before the
    // runs so a bad path fails at once, and renamed only when complete.
    let mut inputs = vec![("-q", a.common.query.as_path()), ("-d", a.common.db.as_path())];
    if let Some(p) = &a.common.matrix {
        inputs.push(("--matrix", p.as_path()));
    }
    let csv_out = match &a.csv {
        Some(p) => {
            crate::output::check_distinct(&inputs, &[("--csv", p.as_path())])?;
            Some(crate::output::Output::create("--csv", p)?)
        }
        None => None,
    };
    let m = load_matrix(&a.common)?;
    let queries = load_queries(&a.common.query, &m)?;
    let t = Instant::now();
    let index = db::DbIndex::open(&a.common.db, &m, a.common.chunk as usize)?;
    println!(
        "database {}: {} sequences, {} residues, longest {}, {} chunks of {} (indexed in {:.2} s)",
        a.common.db.display(),
        index.sequences,
        index.residues,
        index.max_len,
        index.chunks.len(),
        a.common.chunk,
        t.elapsed().as_secs_f64()
    );
    let mut csv = String::from(
        "query,m,config,gpus,streams,order,wall_ms,makespan_ms,gcups,read_ms,download_ms,kernel_ms,readback_ms,write_ms,\
         read_busy_ms,download_busy_ms,kernel_busy_ms,readback_busy_ms,write_busy_ms,slowest_busy_ms,total_over_slowest,speedup_vs_serial,\
         readers,speedup_vs_hand\n",
    );
    let gaps = Gaps { open: a.common.gap_open, extend: a.common.gap_extend };
    // Each query alone, or all of them at once.
    let groups: Vec<Vec<Query>> =
        if a.together { vec![queries.clone()] } else { queries.iter().map(|q| vec![q.clone()]).collect() };
    for group in &groups {
        let q = match group.as_slice() {
            [one] => one.clone(),
            all => Query {
                id: format!("{}-queries", all.len()),
                codes: all.iter().flat_map(|q| q.codes.iter().copied()).collect(),
            },
        };
        println!("\n== query {} ({} residues)", q.id, q.codes.len());
        if let (true, Some(first)) = (a.warmup, a.configs.first()) {
            bench_one(&a, &index, &m, group, first)?;
            println!("   (the run above warmed up, untimed)");
        }
        let mut rows: Vec<Row> = Vec::new();
        for c in &a.configs {
            let (cfg, row) = (&c.text, bench_one(&a, &index, &m, group, c)?);
            if let Some(r) = rows.first() {
                if r.top != row.top {
                    return Err(format!(
                        "configuration {cfg} found other top hits than {}: {:?} vs {:?}",
                        r.cfg, row.top, r.top
                    ));
                }
                if r.digest != row.digest {
                    return Err(format!(
                        "configuration {cfg} computed other scores than {} (digest {:x} vs {:x})",
                        r.cfg, row.digest, r.digest
                    ));
                }
            }
            rows.push(row);
        }
        if rows.len() > 1 {
            println!("   every configuration found the same top 10 and the same {} scores", index.sequences);
        }
        let serial = rows.iter().find(|r| r.kind == "serial").map(|r| r.wall_ms);
        // The hand pipeline with the same S (and one read thread per stream, as chariot's
        // D·S executioners), or else the first one with that S.
        let hand = |s: usize| {
            let same = rows.iter().filter(|r| r.kind == "hand" && r.streams == s);
            same.clone().find(|r| r.readers == s).or_else(|| same.clone().next()).map(|r| r.wall_ms)
        };
        println!("   {:>9} {:>10} {:>10} {:>12}", "config", "ms", "×serial", "×hand(same S)");
        for r in &rows {
            let vs_serial = serial.map(|s| s / r.wall_ms);
            let vs_hand = if r.kind == "serial" { None } else { hand(r.streams).map(|h| h / r.wall_ms) };
            println!("   {:>9} {:>10.1} {:>10} {:>12}", r.cfg, r.wall_ms, opt_cell(vs_serial, 2), opt_cell(vs_hand, 2));
            let slowest = r.slowest();
            let mut cells = vec![
                q.id.clone(),
                q.codes.len().to_string(),
                r.cfg.clone(),
                r.gpus.to_string(),
                r.streams.to_string(),
                r.order.to_string(),
                format!("{:.3}", r.wall_ms),
                opt_cell(r.makespan_ms, 3),
                format!("{:.2}", r.gcups),
            ];
            cells.extend(r.sum.iter().chain(&r.busy).map(|&v| opt_cell(v, 3)));
            cells.extend([
                opt_cell(slowest, 3),
                opt_cell(slowest.map(|s| r.wall_ms / s.max(1e-9)), 4),
                opt_cell(vs_serial, 3),
                r.readers.to_string(),
                opt_cell(vs_hand, 3),
            ]);
            csv += &(cells.join(",") + "\n");
        }
        if a.cpu_seqs > 0 && group.len() == 1 {
            let threads = if a.cpu_threads == 0 {
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
            } else {
                a.cpu_threads
            };
            let r = cpu::search(&index, &m, &q.codes, gaps, a.cpu_seqs, threads)?;
            let g = q.codes.len() as f64 * r.residues as f64 / r.wall.as_secs_f64() / 1e9;
            println!(
                "   cpu: {threads} threads, first {} sequences ({} residues): {:.1} ms, {g:.2} GCUPS",
                r.scores.len(),
                r.residues,
                r.wall.as_secs_f64() * 1e3
            );
            let mut cells = vec![
                q.id.clone(),
                q.codes.len().to_string(),
                "cpu".into(),
                "0".into(),
                threads.to_string(),
                "-".into(),
                format!("{:.3}", r.wall.as_secs_f64() * 1e3),
                String::new(),
                format!("{g:.3}"),
            ];
            cells.extend(std::iter::repeat_n(String::new(), 13));
            cells.extend([threads.to_string(), String::new()]);
            csv += &(cells.join(",") + "\n");
        }
    }
    if let Some(mut w) = csv_out {
        w.write_all(csv.as_bytes()).map_err(|e| format!("--csv {}: cannot write: {e}", w.path().display()))?;
        w.commit()?;
    }
    Ok(())
}
