//! chariot-align: Smith-Waterman protein database search on chariot (issue 6; seed 004
//! §6.3). A query (or several) is aligned against every sequence of a FASTA database,
//! streamed from disk in chunks of 8,192 sequences through the five-stage pipeline of
//! [`search`]: file read → download → kernel → readback → file write.
//!
//! ```text
//! chariot-align generate --sequences 536000 --out db.fa --queries-out q.fa
//! chariot-align search -q q.fa -d db.fa -o hits.tsv --top 10
//! chariot-align bench  -q q.fa -d db.fa --csv align.csv
//! ```
//!
//! See `chariot-align <command> --help` for every option.

mod cpu;
mod db;
mod fasta;
mod generate;
mod hand;
mod hits;
mod matrix;
mod search;
mod sw;
#[cfg(test)]
mod tests;

use chariot::{Backend, Order, SimProfile};
use clap::{Args, Parser, Subcommand};
use matrix::Matrix;
use search::{Options, Outcome, Query, STAGES};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use sw::Gaps;

/// Smith-Waterman protein database search, pipelined over GPUs × CUDA streams by chariot.
///
/// Scores are local alignment scores (Gotoh's affine-gap Smith-Waterman) with a
/// substitution matrix (BLOSUM62 unless --matrix) and gap cost open + k·extend for a
/// gap of length k. Letters are case-insensitive; ASCII letters missing from the
/// matrix (U, O, J) score as X; any other character is an error naming its line.
#[derive(Parser, Debug)]
#[command(name = "chariot-align", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Search a FASTA database with one or more FASTA queries.
    Search(SearchArgs),
    /// Generate a random protein database (and queries) with the paper's length shape.
    Generate(GenerateArgs),
    /// Measure: serial / hand-pipelined / FCFS / LF per query, Table 1, GCUPS, CPU baseline.
    Bench(BenchArgs),
}

#[derive(Args, Debug, Clone)]
struct Common {
    /// Query sequences (FASTA; every record is a query).
    #[arg(short, long)]
    query: PathBuf,
    /// Database (FASTA, any size; read chunk by chunk, never whole).
    #[arg(short, long)]
    db: PathBuf,
    /// Substitution matrix in NCBI text format (default: built-in BLOSUM62).
    #[arg(long)]
    matrix: Option<PathBuf>,
    /// Gap opening cost (a gap of length k costs open + k·extend).
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(i32).range(0..=1000))]
    gap_open: i32,
    /// Gap extension cost.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(0..=1000))]
    gap_extend: i32,
    /// Sequences per chunk (one task each).
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    chunk: u32,
    /// GPUs D.
    #[arg(long, default_value_t = 1)]
    gpus: usize,
    /// Backend: auto, cuda, sim (modeled H100), sim-instant (no modeled time).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim", "sim-instant"])]
    backend: String,
    /// Chunk slots kept in host memory (0: 3·D·S, at least 4).
    #[arg(long, default_value_t = 0)]
    slots: usize,
    /// Stage depth (default: chosen by chariot from the GPU's copy engines; 1: the
    /// paper's gating; 2: one more command queued per GPU stage).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4))]
    stage_depth: Option<u32>,
    /// Kernels one GPU may run at once (default: chosen by chariot from each kernel's
    /// occupancy, and adapted as the search runs; 1: the paper's threshold).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    kernels: Option<u32>,
    /// Modeled kernel rate on the sim backend, G cells/s.
    #[arg(long, default_value_t = 300.0)]
    sim_gcups: f64,
}

#[derive(Args, Debug)]
struct SearchArgs {
    #[command(flatten)]
    common: Common,
    /// Tab-separated output: query, subject id, score (one row per pair, chunks in completion order).
    #[arg(short, long)]
    out: Option<PathBuf>,
    /// Best hits shown per query.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Streams per GPU S, also the number of file-read threads, D·S (default: chosen
    /// by chariot: a slot per CPU core, at least 8).
    #[arg(long, value_parser = clap::value_parser!(usize))]
    streams: Option<usize>,
    /// Task order: lf (largest residue count first), fcfs (file order) or sf.
    #[arg(long, default_value = "lf", value_parser = order)]
    order: Order,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Also write chariot's report (JSON) here.
    #[arg(long)]
    report_json: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct GenerateArgs {
    /// Output database (FASTA).
    #[arg(long)]
    out: PathBuf,
    /// Sequences.
    #[arg(long, default_value_t = 536_000)]
    sequences: u64,
    /// Mean length.
    #[arg(long, default_value_t = 755.0)]
    mean: f64,
    /// σ of ln(length).
    #[arg(long, default_value_t = 0.7)]
    sigma: f64,
    /// Shortest length.
    #[arg(long, default_value_t = 2)]
    min: u64,
    /// Longest length (one sequence has it).
    #[arg(long, default_value_t = 35_213)]
    max: u64,
    /// Seed.
    #[arg(long, default_value_t = 2013)]
    seed: u64,
    /// Write the sequences sorted by length, shortest first (chunks then differ in size).
    #[arg(long)]
    sorted: bool,
    /// Also write random queries here.
    #[arg(long)]
    queries_out: Option<PathBuf>,
    /// Lengths of those queries.
    #[arg(long, value_delimiter = ',', default_value = "63,127,255,511,1023,2047,5000")]
    query_lengths: Vec<usize>,
}

#[derive(Args, Debug)]
struct BenchArgs {
    #[command(flatten)]
    common: Common,
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
    /// Every entry is checked before anything runs.
    #[arg(long, value_delimiter = ',', default_value = "auto,serial,hand,fcfs,lf", value_parser = BenchConfig::parse)]
    configs: Vec<BenchConfig>,
    /// Streams per GPU S for the pipelined configurations.
    #[arg(long, default_value_t = 4)]
    streams: usize,
    /// CSV of the runs.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Sequences for the multi-threaded CPU baseline (0: none).
    #[arg(long, default_value_t = 20_000)]
    cpu_seqs: u64,
    /// Threads of the CPU baseline (0: all cores).
    #[arg(long, default_value_t = 0)]
    cpu_threads: usize,
    /// Search all the queries at once in each configuration (as `search` does), rather
    /// than each query alone; no CPU baseline then.
    #[arg(long)]
    together: bool,
    /// Run the first configuration once, untimed, before the others: the process's
    /// first search pays the CUDA context's and the kernel's first use.
    #[arg(long)]
    warmup: bool,
}

fn backend(name: &str) -> Backend {
    match name {
        "cuda" => Backend::Cuda,
        "sim" => Backend::SimWith(SimProfile::h100()),
        "sim-instant" => Backend::SimWith(SimProfile::instant()),
        _ => Backend::Auto,
    }
}

/// `--order`, by chariot's one parser of order names: another name is a usage error.
fn order(name: &str) -> Result<Order, String> {
    name.parse::<Order>().map_err(|e| e.to_string())
}

/// What a `--configs` entry runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
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
    fn name(self) -> &'static str {
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
struct BenchConfig {
    /// The entry as given, e.g. `lf:16:k8:d2`.
    text: String,
    kind: Kind,
    /// `:N`: S = N.
    streams: Option<usize>,
    /// hand's second `:R`: read threads.
    readers: Option<usize>,
    /// `:all`: a slot for every chunk.
    all_slots: bool,
    /// `:kN`: kernels a GPU runs at once.
    kernels: Option<usize>,
    /// `:dN`: stage depth.
    depth: Option<usize>,
    /// `:fF`: GPU-fills admitted.
    fills: Option<f64>,
}

impl BenchConfig {
    /// Parses an entry; the error names what is wrong and what is allowed (clap adds
    /// the entry and the option).
    fn parse(cfg: &str) -> Result<BenchConfig, String> {
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

fn load_matrix(c: &Common) -> Result<Matrix, String> {
    match &c.matrix {
        Some(p) => Matrix::load(p),
        None => Ok(Matrix::blosum62()),
    }
}

fn load_queries(path: &Path, m: &Matrix) -> Result<Vec<Query>, String> {
    let qs = fasta::read_all(path, m)?;
    if qs.is_empty() {
        return Err(format!("{}: no query records", path.display()));
    }
    for (id, codes) in &qs {
        sw::Profile::new(codes, m).map_err(|e| format!("query `{id}`: {e}"))?;
    }
    Ok(qs.into_iter().map(|(id, codes)| Query { id, codes }).collect())
}

fn options(
    c: &Common,
    streams: Option<usize>,
    ord: Order,
    top: usize,
    out: Option<PathBuf>,
    progress: bool,
) -> Options {
    Options {
        backend: backend(&c.backend),
        gpus: c.gpus,
        streams,
        order: ord,
        stage_depth: c.stage_depth.map(|d| d as usize),
        kernels: c.kernels.map(|k| k as usize),
        fills: None,
        adapt: true,
        slots: c.slots,
        top,
        gaps: Gaps { open: c.gap_open, extend: c.gap_extend },
        out,
        progress,
        sim_gcups: c.sim_gcups,
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn print_stages(o: &Outcome) {
    println!("  {:<11} {:>12} {:>12}", "stage", "sum (ms)", "busy (ms)");
    for (k, name) in STAGES.iter().enumerate() {
        println!("  {:<11} {:>12.1} {:>12.1}", name, ms(o.stage_sum_ns[k]), ms(o.stage_busy_ns[k]));
    }
    let t = o.wall.as_nanos() as f64;
    println!(
        "  total {:.1} ms; slowest stage busy {:.1} ms; total / slowest = {:.3}",
        t / 1e6,
        ms(o.slowest_busy_ns()),
        t / o.slowest_busy_ns().max(1) as f64
    );
}

fn run_search(a: SearchArgs) -> Result<(), String> {
    let m = load_matrix(&a.common)?;
    let queries = load_queries(&a.common.query, &m)?;
    let t = Instant::now();
    let index = db::DbIndex::build(&a.common.db, &m, a.common.chunk as usize)?;
    let index_time = t.elapsed();
    eprintln!(
        "database {} ({} bytes): {} sequences, {} residues, longest {}, {} chunks (indexed in {:.2} s)",
        a.common.db.display(),
        index.bytes,
        index.sequences,
        index.residues,
        index.max_len,
        index.chunks.len(),
        index_time.as_secs_f64()
    );
    let opt = options(&a.common, a.streams, a.order, a.top, a.out.clone(), !a.no_progress);
    let o = search::search(&index, &m, &queries, &opt)?;
    println!(
        "backend {} ({}), D = {}, S = {}, order {}, {} slots: {:.3} s, {:.1} GCUPS",
        o.report.backend,
        o.report.gpus.join(", "),
        a.common.gpus,
        o.report.streams,
        a.order,
        o.slots,
        o.wall.as_secs_f64(),
        o.gcups()
    );
    print_stages(&o);
    for line in &o.report.tuning {
        println!("  chosen: {line}");
    }
    for a in &o.report.adaptations {
        println!("  adapted: {a}");
    }
    for (q, hits) in queries.iter().zip(&o.hits) {
        println!("\nquery {} ({} residues): top {}", q.id, q.codes.len(), hits.len());
        println!("  {:>4}  {:>7}  subject", "rank", "score");
        for (i, h) in hits.iter().enumerate() {
            println!("  {:>4}  {:>7}  {}", i + 1, h.score, h.id);
        }
    }
    if let Some(p) = &a.report_json {
        let j = serde_json::to_string(&o.report).map_err(|e| e.to_string())?;
        std::fs::write(p, j).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    if let Some(p) = &a.out {
        eprintln!("scores written to {}", p.display());
    }
    Ok(())
}

fn run_generate(a: GenerateArgs) -> Result<(), String> {
    let t = Instant::now();
    let shape = generate::Shape {
        sequences: a.sequences,
        mean: a.mean,
        sigma: a.sigma,
        min: a.min,
        max: a.max,
        seed: a.seed,
        sorted: a.sorted,
    };
    let (n, total, longest) = generate::database(&a.out, shape)?;
    println!(
        "{}: {n} sequences, {total} residues (mean {:.1}), longest {longest}, in {:.1} s",
        a.out.display(),
        total as f64 / n.max(1) as f64,
        t.elapsed().as_secs_f64()
    );
    if let Some(q) = &a.queries_out {
        generate::queries(q, &a.query_lengths, a.seed)?;
        println!("{}: queries of {:?} residues", q.display(), a.query_lengths);
    }
    Ok(())
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
            if o.device == chariot::baseline::InOrderDevice::CpuTwin { "CPU twin" } else { "cuda" },
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
        opt.gpus,
        o.gcups(),
        wall * 1e6 / o.slowest_busy_ns().max(1) as f64
    );
    if kind == "auto" {
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
        gpus: opt.gpus,
        streams: s,
        readers: opt.gpus * s,
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

fn run_bench(a: BenchArgs) -> Result<(), String> {
    let m = load_matrix(&a.common)?;
    let queries = load_queries(&a.common.query, &m)?;
    let t = Instant::now();
    let index = db::DbIndex::build(&a.common.db, &m, a.common.chunk as usize)?;
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
    if let Some(p) = &a.csv {
        std::fs::write(p, csv).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Search(a) => run_search(a),
        Command::Generate(a) => run_generate(a),
        Command::Bench(a) => run_bench(a),
    };
    let _ = std::io::stdout().flush();
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chariot-align: error: {e}");
            ExitCode::FAILURE
        }
    }
}
