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
    /// Measure: serial / in-order (FCFS) / LF pipelines per query, Table 1, GCUPS, CPU baseline.
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
    /// Stage depth (1: the paper's gating; 2: one more command queued per GPU stage).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4))]
    stage_depth: u32,
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
    /// Streams per GPU S (also the number of file-read threads, D·S).
    #[arg(long, default_value_t = 8)]
    streams: usize,
    /// Task order: lf (largest residue count first), fcfs (file order) or sf.
    #[arg(long, default_value = "lf", value_parser = ["lf", "fcfs", "sf"])]
    order: String,
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
    /// Configurations: serial (S = 1, FCFS), fcfs (S streams, in order), lf (S streams,
    /// LF); a suffix `:N` sets S = N, `:all` gives every chunk a slot (the whole task set
    /// queued at once), e.g. `lf:8:all`.
    #[arg(long, value_delimiter = ',', default_value = "serial,fcfs,lf")]
    configs: Vec<String>,
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
}

fn backend(name: &str) -> Backend {
    match name {
        "cuda" => Backend::Cuda,
        "sim" => Backend::SimWith(SimProfile::h100()),
        "sim-instant" => Backend::SimWith(SimProfile::instant()),
        _ => Backend::Auto,
    }
}

fn order(name: &str) -> Order {
    match name {
        "fcfs" => Order::Fcfs,
        "sf" => Order::SmallestFirst,
        _ => Order::LargestFirst,
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

fn options(c: &Common, streams: usize, ord: Order, top: usize, out: Option<PathBuf>, progress: bool) -> Options {
    Options {
        backend: backend(&c.backend),
        gpus: c.gpus,
        streams,
        order: ord,
        stage_depth: c.stage_depth as usize,
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
    let opt = options(&a.common, a.streams, order(&a.order), a.top, a.out.clone(), !a.no_progress);
    let o = search::search(&index, &m, &queries, &opt)?;
    println!(
        "backend {} ({}), D = {}, S = {}, order {}, {} slots: {:.3} s, {:.1} GCUPS",
        o.report.backend,
        o.report.gpus.join(", "),
        a.common.gpus,
        a.streams,
        a.order,
        o.slots,
        o.wall.as_secs_f64(),
        o.gcups()
    );
    print_stages(&o);
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
         read_busy_ms,download_busy_ms,kernel_busy_ms,readback_busy_ms,write_busy_ms,slowest_busy_ms,total_over_slowest,speedup_vs_serial\n",
    );
    let gaps = Gaps { open: a.common.gap_open, extend: a.common.gap_extend };
    for q in &queries {
        println!("\n== query {} ({} residues)", q.id, q.codes.len());
        let mut serial_ms = None;
        let mut reference: Option<Vec<(i32, u64)>> = None;
        for cfg in &a.configs {
            let mut parts = cfg.split(':');
            let kind = parts.next().unwrap_or_default();
            let (mut s, ord, name) = match kind {
                "serial" => (1, Order::Fcfs, "fcfs"),
                "fcfs" => (a.streams, Order::Fcfs, "fcfs"),
                "lf" => (a.streams, Order::LargestFirst, "lf"),
                other => return Err(format!("unknown configuration `{other}` (serial, fcfs, lf)")),
            };
            let mut all_slots = false;
            for p in parts {
                match p {
                    "all" => all_slots = true,
                    n => s = n.parse().map_err(|_| format!("configuration `{cfg}`: `{n}` is no stream count"))?,
                }
            }
            let mut opt = options(&a.common, s, ord, 10, None, false);
            if kind == "serial" {
                opt.gpus = 1;
            }
            if all_slots {
                opt.slots = index.chunks.len();
            }
            let o = search::search(&index, &m, std::slice::from_ref(q), &opt)?;
            let top: Vec<(i32, u64)> = o.hits[0].iter().map(|h| (h.score, h.seq)).collect();
            match &reference {
                None => reference = Some(top),
                Some(r) if *r != top => {
                    return Err(format!("configuration {cfg} found other top hits: {top:?} vs {r:?}"))
                }
                _ => {}
            }
            let wall = o.wall.as_secs_f64() * 1e3;
            if kind == "serial" {
                serial_ms = Some(wall);
            }
            let speedup = serial_ms.map(|s| s / wall).unwrap_or(f64::NAN);
            println!(
                "{cfg:>9}: D = {}, S = {s}, {name}: {wall:.1} ms, {:.1} GCUPS, total/slowest stage {:.3}, speedup over serial {speedup:.2}",
                opt.gpus,
                o.gcups(),
                wall * 1e6 / o.slowest_busy_ns().max(1) as f64
            );
            if kind == "serial" {
                print_stages(&o);
            }
            let s5 = o.stage_sum_ns.map(ms);
            let b5 = o.stage_busy_ns.map(ms);
            csv += &format!(
                "{},{},{cfg},{},{s},{name},{wall:.3},{:.3},{:.2},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.4},{speedup:.3}\n",
                q.id,
                q.codes.len(),
                opt.gpus,
                o.report.makespan_ms(),
                o.gcups(),
                s5[0],
                s5[1],
                s5[2],
                s5[3],
                s5[4],
                b5[0],
                b5[1],
                b5[2],
                b5[3],
                b5[4],
                ms(o.slowest_busy_ns()),
                wall * 1e6 / o.slowest_busy_ns().max(1) as f64
            );
        }
        if a.cpu_seqs > 0 {
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
            csv += &format!(
                "{},{},cpu,0,{threads},-,{:.3},,{g:.3},,,,,,,,,,,,,\n",
                q.id,
                q.codes.len(),
                r.wall.as_secs_f64() * 1e3
            );
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
