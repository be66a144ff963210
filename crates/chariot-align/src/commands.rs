//! The `search` and `generate` commands: their options (clap's, flattened into the
//! binary's command line) and what they run, with the pieces that `bench` shares.

use crate::matrix::Matrix;
use crate::search::{self, Options, Outcome, Query, STAGES};
use crate::sw::{self, Gaps};
use crate::{db, fasta, generate};
use chariot::sim::SimProfile;
use chariot::{Backend, Order};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The options `search` and `bench` share: the files, the scoring, the chunking and the machine.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Query sequences (FASTA, or gzip-compressed FASTA; every record is a query, of 1
    /// to 100,000 residues).
    #[arg(short, long)]
    pub query: PathBuf,
    /// Database: FASTA (gzip-compressed too: decompressed to a temporary file first),
    /// or prepared by `makedb` (told by its first bytes); any size, read chunk by chunk,
    /// never whole.
    #[arg(short, long)]
    pub db: PathBuf,
    /// Substitution matrix in NCBI text format (default: built-in BLOSUM62; at most 32 letters).
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    /// Gap opening cost (a gap of length k costs open + k·extend; 0 to 1000).
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(i32).range(0..=1000))]
    pub gap_open: i32,
    /// Gap extension cost (0 to 1000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(0..=1000))]
    pub gap_extend: i32,
    /// Sequences per chunk (one task each; 1 to 1,000,000; a chunk holds under 4 GiB of
    /// residues, and a prepared database's chunks at most 4× the mean chunk's residues).
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub chunk: u32,
    /// GPUs D: a count, or all: every GPU CUDA lists here (CUDA_VISIBLE_DEVICES selects
    /// them; under mpirun each rank takes its share of its host's); on the simulator, all
    /// is one.
    #[arg(long, default_value = "all", value_parser = parse_gpus)]
    pub gpus: usize,
    /// Backend: auto, cuda, sim (modeled H100), sim-instant (no modeled time).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim", "sim-instant"])]
    pub backend: String,
    /// Chunk slots kept in host memory (0: D·S + 4: one per task that can hold a stream
    /// slot, and 4 read ahead; each is pinned at the largest chunk's size; a database
    /// kept on the GPUs is then uploaded through 8 of them).
    #[arg(long, default_value_t = 0)]
    pub slots: usize,
    /// Stage depth (default: chosen by chariot from the GPU's copy engines; 1: the
    /// paper's gating; 2: one more command queued per GPU stage).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4))]
    pub stage_depth: Option<u32>,
    /// Kernels one GPU may run at once (default: chosen by chariot from each kernel's
    /// occupancy, and adapted as the search runs; 1: the paper's threshold).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub kernels: Option<u32>,
    /// Modeled kernel rate on the sim backend, G cells/s.
    #[arg(long, default_value_t = 300.0)]
    pub sim_gcups: f64,
    /// Smith-Waterman kernel: dpx (16-bit scores two to a register, Hopper's DPX
    /// instructions, subjects whose 16-bit score may have saturated aligned again in 32
    /// bits), portable (32-bit), or auto: dpx where every GPU is sm_90 or later (and on
    /// the sim backends, which model an H100), else portable. Scores are the same.
    #[arg(long, default_value = "auto", value_parser = sw::KernelChoice::parse)]
    pub kernel: sw::KernelChoice,
    /// Where the database lives during the search: yes (uploaded to the GPUs first, each
    /// GPU keeping the chunks it loaded, then searched there; the search's time and
    /// GCUPS count the pass over data already on the GPUs, as CUDASW++'s --uploadFull
    /// does, and the upload is reported apart), no (streamed chunk by chunk, each
    /// chunk's read and download overlapping other chunks' kernels), or auto: yes where
    /// the chunks fit in half of every GPU's memory and the search is not under mpirun.
    #[arg(long, default_value = "auto", value_parser = search::DbPlacement::parse)]
    pub db_on_gpu: search::DbPlacement,
    /// With the dpx kernel and several queries: yes (queries aligned as two runs at a time
    /// against each subject, each run queries end to end, up to 32 queries a launch; both
    /// runs take the longer one's rows, and a pair is formed where that costs at most
    /// 15 % more rows than the queries alone) or no (a launch a query, two subjects a
    /// lane group). Scores are the same.
    #[arg(long, default_value = "yes", value_parser = ["yes", "no"])]
    pub query_pairs: String,
}

/// The limits of a search, stated in `search --help`.
pub const SEARCH_LIMITS: &str = "Limits: a query holds 1 to 100,000 residues; a chunk (--chunk, 1 to 1,000,000 \
sequences) under 4 GiB of residues; a matrix at most 32 letters; gap costs 0 to 1000; --stage-depth 1 to 4; \
--kernels 1 to 64. Outputs (-o, --tabular, --report-json) must differ from the inputs and from each other, and be \
regular files or missing: each is written as <path>.partial and renamed when complete.\n\n\
Output: the top hits of each query go to stdout; the run's statistics and warnings to stderr (--quiet: \
warnings only).";

/// The options of `search`.
#[derive(Args, Debug)]
#[command(after_help = SEARCH_LIMITS)]
pub struct SearchArgs {
    /// The files, the scoring and the machine.
    #[command(flatten)]
    pub common: Common,
    /// Tab-separated output: query, subject id, score (one row per pair, chunks in
    /// completion order; within a prepared database's chunk, subjects in length order).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Best hits shown per query (and written by --tabular).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// BLAST tabular output (`blastp -outfmt 6`'s 12 columns: qseqid sseqid pident
    /// length mismatch gapopen qstart qend sstart send evalue bitscore) of the --top
    /// hits of each query, best first: alignments by a CPU traceback, E-values and bit
    /// scores by BLAST's Karlin-Altschul statistics over the whole database. Needs
    /// BLOSUM62 and gap costs BLAST has statistics for (11/1 default; 9..13/1, 6..11/2);
    /// --gap-open/--gap-extend are BLAST's -gapopen/-gapextend (a gap of length k costs
    /// open + k*extend).
    #[arg(long, value_name = "FILE")]
    pub tabular: Option<PathBuf>,
    /// Composition-based statistics of --tabular's E-values, as blastp's
    /// -comp_based_stats: 0 (the default here: none, as blastp -comp_based_stats 0) or 1
    /// (Schaffer et al. 2001: each pair aligned again with BLOSUM62 rescaled for the two
    /// sequences' compositions, as blastp -comp_based_stats 1; blastp's own default is
    /// 2, which chariot-align does not offer).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub comp_based_stats: u8,
    /// SEG low-complexity masking of the queries, as blastp's -seg: no (the default,
    /// as blastp's) or yes (window 12, locut 2.2, hicut 2.5, as blastp -seg yes):
    /// masked residues are X (scoring -1 against every letter, as in BLAST+'s BLOSUM62)
    /// for the search and --tabular.
    #[arg(long, default_value = "no", value_parser = ["yes", "no"])]
    pub seg: String,
    /// Streams per GPU S, also the number of file-read threads, D·S (default: chosen
    /// by chariot: a slot per CPU core, at least 8).
    #[arg(long, value_parser = clap::value_parser!(usize))]
    pub streams: Option<usize>,
    /// Task order: lf (largest residue count first), fcfs (file order) or sf.
    #[arg(long, default_value = "lf", value_parser = order)]
    pub order: Order,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// No statistics on stderr (and no progress bar): the hits only, and warnings.
    #[arg(long)]
    pub quiet: bool,
    /// Also write chariot's report (JSON) here: the search's (with the database on the
    /// GPUs, its upload is summarised on stderr).
    #[arg(long)]
    pub report_json: Option<PathBuf>,
}

/// The options of `makedb`.
#[derive(Args, Debug)]
#[command(after_help = "Limits: a matrix at most 32 letters; the database's residues and names are held in memory \
while they are sorted (about a byte per residue). The prepared file has a checksum per sequence, checked as \
each chunk is read.")]
pub struct MakedbArgs {
    /// The FASTA database to prepare (gzip-compressed too).
    #[arg(short, long)]
    pub db: PathBuf,
    /// The prepared database to write (a regular file, replaced if it exists, or a new
    /// path; never the input; written beside it as `<out>.partial` and renamed when complete).
    #[arg(short, long)]
    pub out: PathBuf,
    /// Substitution matrix in NCBI text format whose alphabet codes the residues
    /// (default: built-in BLOSUM62). Only its letters matter: any matrix with the same
    /// letters in the same order searches the prepared database.
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// No summary on stderr (and no progress bar); warnings still.
    #[arg(long)]
    pub quiet: bool,
}

/// `makedb`: prepares a FASTA database once for many searches (see
/// [`crate::prepared`]: residues encoded, sequences sorted by length, an index).
pub fn run_makedb(a: MakedbArgs) -> Result<(), String> {
    let mut inputs = vec![("-d", a.db.as_path())];
    if let Some(p) = &a.matrix {
        inputs.push(("--matrix", p.as_path()));
    }
    crate::output::check_distinct(&inputs, &[("-o", &a.out)])?;
    crate::output::check_target("-o", &a.out)?;
    let m = match &a.matrix {
        Some(p) => Matrix::load(p)?,
        None => Matrix::blosum62(),
    };
    let t = Instant::now();
    let s = crate::prepared::make(&a.db, &a.out, &m, !a.no_progress && !a.quiet)?;
    s.warnings.print(&a.db.display().to_string());
    if !a.quiet {
        eprintln!(
            "{}: {} sequences, {} residues, longest {}, alphabet {} ({} bytes, format version {}) in {:.2} s",
            a.out.display(),
            s.layout.sequences,
            s.layout.residues,
            s.layout.max_len,
            String::from_utf8_lossy(&s.layout.alphabet),
            s.bytes,
            crate::prepared::VERSION,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The options of `generate`.
#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// Output database (FASTA).
    #[arg(long)]
    pub out: PathBuf,
    /// Sequences.
    #[arg(long, default_value_t = 536_000)]
    pub sequences: u64,
    /// Mean length.
    #[arg(long, default_value_t = 755.0)]
    pub mean: f64,
    /// σ of ln(length).
    #[arg(long, default_value_t = 0.7)]
    pub sigma: f64,
    /// Shortest length.
    #[arg(long, default_value_t = 2)]
    pub min: u64,
    /// Longest length (one sequence has it).
    #[arg(long, default_value_t = 35_213)]
    pub max: u64,
    /// Seed.
    #[arg(long, default_value_t = 2013)]
    pub seed: u64,
    /// Write the sequences sorted by length, shortest first (chunks then differ in size).
    #[arg(long)]
    pub sorted: bool,
    /// Also write random queries here.
    #[arg(long)]
    pub queries_out: Option<PathBuf>,
    /// Lengths of those queries (each 1 to 100,000 residues), comma-separated; the query
    /// of length L is named qL (qL.2, qL.3, … where a length repeats).
    #[arg(long, value_delimiter = ',', default_value = "63,127,255,511,1023,2047,5000")]
    pub query_lengths: Vec<usize>,
    /// No summary on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// The backend named by `--backend` (`auto`, `cuda`, `sim`, `sim-instant`; clap admits no other).
pub fn backend(name: &str) -> Backend {
    match name {
        "cuda" => Backend::Cuda,
        "sim" => Backend::SimWith(SimProfile::h100()),
        "sim-instant" => Backend::SimWith(SimProfile::instant()),
        _ => Backend::Auto,
    }
}

/// `--gpus`: `all` (0 in [`Options::gpus`]) or a count of 1 or more.
fn parse_gpus(v: &str) -> Result<usize, String> {
    match v {
        "all" => Ok(0),
        _ => match v.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("gpus = {v:?}; allowed: all, or a count of 1 or more")),
        },
    }
}

/// `--order`, by chariot's one parser of order names: another name is a usage error.
pub fn order(name: &str) -> Result<Order, String> {
    name.parse::<Order>().map_err(|e| e.to_string())
}

/// The matrix of `--matrix`, or BLOSUM62.
pub fn load_matrix(c: &Common) -> Result<Matrix, String> {
    match &c.matrix {
        Some(p) => Matrix::load(p),
        None => Ok(Matrix::blosum62()),
    }
}

/// The queries of a FASTA file, each checked to make a profile; no record is an error.
pub fn load_queries(path: &Path, m: &Matrix) -> Result<Vec<Query>, String> {
    Ok(load_queries_warning(path, m)?.0)
}

/// [`load_queries`], and the duplicate ids among them (empty queries are errors).
pub fn load_queries_warning(path: &Path, m: &Matrix) -> Result<(Vec<Query>, fasta::Warnings), String> {
    let (qs, warnings) = fasta::read_all_warning(path, m)?;
    if qs.is_empty() {
        return Err(format!("{}: no query records", path.display()));
    }
    for (id, codes) in &qs {
        sw::Profile::new(codes, m).map_err(|e| format!("query `{id}`: {e}"))?;
    }
    Ok((qs.into_iter().map(|(id, codes)| Query { id, codes }).collect(), warnings))
}

/// The search options of the command line's values (adaptation on, no GPU-fills limit).
pub fn options(
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
        kernel: c.kernel,
        placement: c.db_on_gpu,
        query_pairs: c.query_pairs == "yes",
    }
}

/// What the kernel line of a search adds after the kernel's name.
pub fn kernel_note(o: &Outcome) -> String {
    match o.kernel {
        sw::KernelKind::Portable => " (32-bit scores)".into(),
        sw::KernelKind::Dpx if o.query_pairs > 0 => {
            let alone = o.hits.len() - o.paired_queries;
            let (pairs, queries) =
                (if o.query_pairs == 1 { "pair" } else { "pairs" }, if alone == 1 { "query" } else { "queries" });
            format!(
                " (16-bit scores; {} queries in {} query {pairs}, a subject and two runs of queries a lane group; \
                 {alone} {queries} alone, two subjects a lane group; {} scores re-run in 32 bits)",
                o.paired_queries, o.query_pairs, o.repassed
            )
        }
        sw::KernelKind::Dpx => {
            format!(" (16-bit scores, two subjects a lane group; {} scores re-run in 32 bits)", o.repassed)
        }
    }
}

/// Nanoseconds as milliseconds.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// A search's time per stage (sum of command times and busy time) and total / slowest stage, as lines.
pub fn stage_lines(o: &Outcome) -> Vec<String> {
    let mut v = vec![format!("  {:<11} {:>12} {:>12}", "stage", "sum (ms)", "busy (ms)")];
    for (k, name) in STAGES.iter().enumerate() {
        v.push(format!("  {:<11} {:>12.1} {:>12.1}", name, ms(o.stage_sum_ns[k]), ms(o.stage_busy_ns[k])));
    }
    let t = o.wall.as_nanos() as f64;
    v.push(format!(
        "  total {:.1} ms; slowest stage busy {:.1} ms; total / slowest = {:.3}",
        t / 1e6,
        ms(o.slowest_busy_ns()),
        t / o.slowest_busy_ns().max(1) as f64
    ));
    v
}

/// Prints [`stage_lines`] to stdout (what `bench` reports).
pub fn print_stages(o: &Outcome) {
    for l in stage_lines(o) {
        println!("{l}");
    }
}

/// `search`: checks and creates every output, indexes the database, searches it with
/// every query, prints the top hits to stdout and the statistics to stderr (and writes
/// the TSV, the BLAST tabular output and the report when asked).
pub fn run_search(a: SearchArgs) -> Result<(), String> {
    let mut inputs = vec![("-q", a.common.query.as_path()), ("-d", a.common.db.as_path())];
    if let Some(p) = &a.common.matrix {
        inputs.push(("--matrix", p.as_path()));
    }
    let outputs: Vec<(&str, &Path)> = [("-o", &a.out), ("--tabular", &a.tabular), ("--report-json", &a.report_json)]
        .into_iter()
        .filter_map(|(f, p)| Some((f, p.as_deref()?)))
        .collect();
    crate::output::check_distinct(&inputs, &outputs)?;
    // Under mpirun, rank 0 speaks for all (see `ranks`) and writes all but the TSV.
    let root = crate::ranks::rank() == 0;
    let stats = root && !a.quiet;
    // Every output is created before anything is read: a bad path fails at once.
    let tsv = a.out.as_deref().map(search::rank_output).transpose()?;
    let create = |flag: &str, p: &Option<PathBuf>| match p {
        Some(p) if root => crate::output::Output::create(flag, p).map(Some),
        _ => Ok(None),
    };
    let tabular_out = create("--tabular", &a.tabular)?;
    let report_out = create("--report-json", &a.report_json)?;
    let m = load_matrix(&a.common)?;
    // SEG's X scores as in BLAST+'s BLOSUM62 (−1 against everything).
    let m = if a.seg == "yes" { crate::seg::blast_x(&m) } else { m };
    let gaps = Gaps { open: a.common.gap_open, extend: a.common.gap_extend };
    if a.tabular.is_some() {
        crate::karlin::params(&m, gaps).map_err(|e| format!("--tabular: {e}"))?;
    }
    let (queries, query_warnings) = load_queries_warning(&a.common.query, &m)?;
    if root {
        query_warnings.print(&format!("queries {}", a.common.query.display()));
    }
    let t = Instant::now();
    // A gzip database is read through a decompressed copy: chunks are read at offsets.
    let decompressed = if fasta::is_gzip(&a.common.db, "database")? {
        let d = db::Decompressed::new(&a.common.db)?;
        if stats {
            eprintln!(
                "database {} is gzip-compressed: decompressed to {} for this search (run `chariot-align makedb` once to skip this)",
                a.common.db.display(),
                d.path.display()
            );
        }
        Some(d)
    } else {
        None
    };
    let db_path = decompressed.as_ref().map_or(a.common.db.as_path(), |d| d.path.as_path());
    let index = db::DbIndex::open(db_path, &m, a.common.chunk as usize)?;
    let index_time = t.elapsed();
    if root {
        index.warnings.print(&format!("database {}", a.common.db.display()));
    }
    if stats {
        eprintln!(
            "database {} ({}, {} bytes): {} sequences, {} residues, longest {}, {} chunks (indexed in {:.2} s)",
            a.common.db.display(),
            if index.prepared.is_some() { "prepared" } else { "FASTA" },
            index.bytes,
            index.sequences,
            index.residues,
            index.max_len,
            index.chunks.len(),
            index_time.as_secs_f64()
        );
    }
    let opt = options(&a.common, a.streams, a.order, a.top, a.out.clone(), !a.no_progress && !a.quiet);
    let seg = a.seg == "yes";
    // With SEG the search sees the masked queries; --tabular masks them again itself.
    let masked;
    let searched: &[Query] = if seg {
        masked = crate::tabular::mask_queries(&queries, &m)?;
        &masked
    } else {
        &queries
    };
    let o = search::search_to(&index, &m, searched, &opt, tsv)?;
    if !root {
        return Ok(());
    }
    if stats {
        eprintln!(
            "backend {} ({}), D = {}, S = {}, order {}, {} slots: {:.3} s, {:.1} GCUPS",
            o.report.backend,
            o.report.gpus.join(", "),
            o.report.gpus.len(),
            o.report.streams,
            a.order,
            o.slots,
            o.wall.as_secs_f64(),
            o.gcups()
        );
        eprintln!("  kernel {}{}", o.kernel.name(), kernel_note(&o));
        match &o.load {
            Some(l) => eprintln!(
                "  database on the GPUs (--db-on-gpu): {:.1} MB uploaded in {:.3} s before the search (file read busy \
                 {:.1} ms, downloads {:.1} ms); the search's time counts the pass over it",
                l.bytes as f64 / 1e6,
                l.wall.as_secs_f64(),
                ms(l.read_busy_ns),
                ms(l.download_busy_ns)
            ),
            None => eprintln!("  database streamed chunk by chunk (--db-on-gpu): the search's time counts its reading"),
        }
        let st = o.startup;
        eprintln!(
            "  startup {:.3} s before the first task: scheduler {:.3} s, kernel {:.3} s (NVRTC, or chariot's kernel cache), \
             buffers {:.3} s (pinned and device, while the kernel compiles)",
            st.total.as_secs_f64(),
            st.scheduler.as_secs_f64(),
            st.kernel.as_secs_f64(),
            st.buffers.as_secs_f64()
        );
        for l in stage_lines(&o) {
            eprintln!("{l}");
        }
        for line in &o.report.tuning {
            eprintln!("  chosen: {line}");
        }
        for a in &o.report.adaptations {
            eprintln!("  adapted: {a}");
        }
        if !query_warnings.is_empty() || !index.warnings.is_empty() {
            eprintln!("  warnings: queries: {}; database: {}", query_warnings.summary(), index.warnings.summary());
        }
    }
    for (i, (q, hits)) in queries.iter().zip(&o.hits).enumerate() {
        if i > 0 {
            println!();
        }
        println!("query {} ({} residues): top {}", q.id, q.codes.len(), hits.len());
        println!("  {:>4}  {:>7}  subject", "rank", "score");
        for (i, h) in hits.iter().enumerate() {
            println!("  {:>4}  {:>7}  {}", i + 1, h.score, h.id);
        }
    }
    if let Some(mut w) = report_out {
        let j = serde_json::to_string(&o.report).map_err(|e| e.to_string())?;
        w.write_all(j.as_bytes()).map_err(|e| format!("--report-json {}: cannot write: {e}", w.path().display()))?;
        w.commit()?;
    }
    if let (Some(p), true) = (&a.out, stats) {
        match crate::ranks::size() {
            1 => eprintln!("scores written to {}", p.display()),
            n => eprintln!(
                "scores written to {} (rank 0's) and {}.rank1 … .rank{} (the other ranks')",
                p.display(),
                p.display(),
                n - 1
            ),
        }
    }
    if let Some(mut w) = tabular_out {
        let t = Instant::now();
        let statistics = crate::tabular::Statistics { comp_based: a.comp_based_stats == 1, seg };
        let (text, rows) = crate::tabular::text(&index, &m, &queries, &o.hits, gaps, statistics)?;
        w.write_all(text.as_bytes()).map_err(|e| format!("--tabular {}: cannot write: {e}", w.path().display()))?;
        let p = w.path().to_path_buf();
        w.commit()?;
        if stats {
            eprintln!("{rows} BLAST tabular lines written to {} in {:.2} s", p.display(), t.elapsed().as_secs_f64());
        }
    }
    drop(decompressed);
    Ok(())
}

/// `generate`: writes a random database (and queries) with the paper's length shape.
pub fn run_generate(a: GenerateArgs) -> Result<(), String> {
    if let Some(&l) = a.query_lengths.iter().find(|&&l| l == 0 || l > sw::MAX_QUERY) {
        return Err(format!("--query-lengths: a query of {l} residues; allowed: 1 to {} each", sw::MAX_QUERY));
    }
    let mut outputs = vec![("--out", a.out.as_path())];
    if let Some(q) = &a.queries_out {
        outputs.push(("--queries-out", q.as_path()));
    }
    crate::output::check_distinct(&[], &outputs)?;
    for (flag, p) in &outputs {
        crate::output::check_target(flag, p)?;
    }
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
    if !a.quiet {
        eprintln!(
            "{}: {n} sequences, {total} residues (mean {:.1}), longest {longest}, in {:.1} s",
            a.out.display(),
            total as f64 / n.max(1) as f64,
            t.elapsed().as_secs_f64()
        );
    }
    if let Some(q) = &a.queries_out {
        generate::queries(q, &a.query_lengths, a.seed)?;
        if !a.quiet {
            eprintln!("{}: queries of {:?} residues", q.display(), a.query_lengths);
        }
    }
    Ok(())
}
