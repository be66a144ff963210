//! An independent check of `chariot-align search`'s scores: every (query, subject)
//! score in the TSV that `search -o` writes is compared with a plain Smith-Waterman /
//! Gotoh reference computed here, on the GPU, so that databases of billions of residues
//! can be checked whole.
//!
//! ```text
//! cargo run --release -p chariot-align --example gotoh_check -- -q Q.fa -d DB.fa --scores S.tsv
//! ```
//!
//! The reference shares nothing with chariot-align's kernels but the FASTA reader and
//! the matrix: 32-bit integers, one thread per subject, the substitution matrix itself
//! (no query profile, no 16-bit packing, no lanes working together, no pad rows in the
//! scores). Its CPU twin, which the sim backend runs in its place (`--backend sim`, the
//! tests), is the textbook two-row Gotoh in 64-bit integers. Besides the check of the
//! TSV, a sample of subjects (`--cpu-sample`) is aligned on the CPU by that textbook
//! code while the GPU runs, so that a fault of the GPU kernel itself shows as such and
//! is not taken for chariot-align's.
//!
//! Exit status: 0 every pair is present once and equal to the reference; 1 some score
//! differs, or pairs are missing or repeated; 2 an error (unreadable or malformed
//! input, unknown or repeated ids, the GPU); 3 the GPU reference disagrees with the CPU
//! on the sample (the reference itself is wrong: nothing is said of chariot-align).
//!
//! Why this file is long: a cargo example is one file: the CLI, the CUDA kernel and its
//! CPU twin, the FASTA and TSV reading, the GPU tasks and the report.

use chariot::callback::Resource;
use chariot::sim::SimProfile;
use chariot::{Arg, Backend, Kernel, Param, Scheduler, Stage};
use chariot_align::fasta::{self, FastaReader};
use chariot_align::matrix::{Matrix, MAX_LETTERS};
use clap::Parser;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "gotoh_check",
    about = "Checks every score of a `chariot-align search -o` TSV against an independent Smith-Waterman/Gotoh \
             reference computed on the GPU (one thread per subject, 32-bit scores, the matrix itself)",
    after_help = "Exit status: 0 every (query, subject) pair is in the TSV once, with the reference's score; \
                  1 scores differ, or pairs are missing or repeated (the first few of each are listed on stdout); \
                  2 an error (unreadable or malformed input, unknown or repeated ids, the GPU); 3 the GPU \
                  reference disagrees with the CPU on the --cpu-sample subjects (the reference is wrong, not \
                  chariot-align).\n\nOutput: one summary line on stdout (`gotoh_check OK: pairs N, mismatches 0, \
                  missing 0, extra 0, cells C, reference G GCUPS (kernels K s, upload U s), ...`, FAIL in place of \
                  OK otherwise); progress on stderr."
)]
struct Cli {
    /// Queries (FASTA, gzip too): the file given to `chariot-align search -q`; ids must
    /// be unique, every query at least one residue.
    #[arg(short, long)]
    query: PathBuf,
    /// Database (FASTA, gzip too; not a prepared .cadb): the FASTA the searched
    /// database was made from; ids must be unique.
    #[arg(short, long)]
    db: PathBuf,
    /// The scores to check: `chariot-align search -o`'s TSV (a header line
    /// `query<TAB>subject<TAB>score`, then one row per pair, in any order).
    #[arg(long)]
    scores: PathBuf,
    /// Substitution matrix in NCBI text format, as given to search (default: built-in
    /// BLOSUM62; at most 32 letters).
    #[arg(long)]
    matrix: Option<PathBuf>,
    /// Gap opening cost, as given to search (a gap of length k costs open + k·extend; 0 to 1000).
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(i32).range(0..=1000))]
    gap_open: i32,
    /// Gap extension cost, as given to search (0 to 1000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(0..=1000))]
    gap_extend: i32,
    /// Backend: auto (CUDA where a GPU is present, else the simulator), cuda, sim (a
    /// modeled H100: the kernel's CPU twin computes the scores), sim-instant (the
    /// same, no modeled time).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim", "sim-instant"])]
    backend: String,
    /// Query rows a thread keeps in registers per pass over its subject (the kernel's
    /// strip; scores are the same for each).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=32))]
    rows: u32,
    /// Subjects (spread over the length order, the longest and the shortest included)
    /// also aligned with every query by the textbook Gotoh on the CPU, while the GPU
    /// runs, and compared with the GPU reference (0: none).
    #[arg(long, default_value_t = 48)]
    cpu_sample: usize,
    /// Mismatches, missing and repeated pairs listed (each).
    #[arg(long, default_value_t = 10)]
    show: usize,
}

/// The reference kernel: one thread per subject, 32-bit Gotoh over the matrix itself.
/// `ROWS` is defined before it (`--rows`).
const SOURCE: &str = r#"
// Local alignment, a gap of length k costs open + k*extend:
//   E(i,j) = max(E(i,j-1) - ext, H(i,j-1) - open - ext)   (gap along the subject)
//   F(i,j) = max(F(i-1,j) - ext, H(i-1,j) - open - ext)   (gap along the query)
//   H(i,j) = max(0, H(i-1,j-1) + S(q_i, s_j), E(i,j), F(i,j)); the score: max of all H.
// Thread t aligns subject order[t] (the subjects sorted longest first: a warp's threads
// have about the same length, and the longest start first so that they make no tail).
// The query is cut into strips of ROWS rows; a strip's H and E live in registers while
// the thread walks the subject's columns, and the strip's last row (H, F) is left in the
// thread's scratch row (one int2 per residue of its subject, at the subject's offset)
// for the strip below. Rows past the query's end in the last strip are not counted in
// the score: they lie below every real row, so no real cell reads them.
#define NEG (-(1 << 29)) // minus infinity for E and F: far from overflow either way

// One strip: rows query[0 .. ROWS) of it, `live` of them real (ROWS but in the last
// strip; TAIL says there may be fewer, so that full strips pay no test); `first`: no
// strip above (row 0: H = 0, F = -inf); `last`: no strip below (nothing to leave).
template <bool TAIL>
__device__ __forceinline__ void strip(const unsigned char* __restrict__ subj, unsigned n, int2* __restrict__ row,
                                      const int* sub, const unsigned char* __restrict__ query, unsigned live,
                                      bool first, bool last, int oe, int ext, int& best) {
    const int* q[ROWS]; // each row's letter's row of the matrix
    int h[ROWS], e[ROWS]; // H(i, j-1), E(i, j-1)
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        q[r] = sub + 32 * (!TAIL || r < live ? query[r] : 0);
        h[r] = 0; // column 0
        e[r] = NEG;
    }
    int diag_top = 0; // H(i0, j-1): the row above the strip, one column back
    for (unsigned j = 0; j < n; ++j) {
        const int c = subj[j];
        const int2 up = first ? make_int2(0, NEG) : row[j]; // (H, F) of the row above, column j
        int hup = up.x, f = up.y, diag = diag_top;
        diag_top = up.x;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            e[r] = max(e[r] - ext, h[r] - oe);
            f = max(f - ext, hup - oe);
            const int hn = max(max(diag + q[r][c], 0), max(e[r], f));
            diag = h[r];
            h[r] = hn;
            hup = hn;
            if (!TAIL || r < live) best = max(best, hn);
        }
        if (!last) row[j] = make_int2(hup, f); // the strip's last row, for the strip below
    }
}

extern "C" __global__ void gotoh_ref(const unsigned char* __restrict__ res, const unsigned* __restrict__ off,
                                     const unsigned* __restrict__ order, unsigned nseq,
                                     const unsigned char* __restrict__ query, unsigned m,
                                     const int* __restrict__ matrix, int gap_open, int gap_extend,
                                     int2* __restrict__ scratch, int* __restrict__ scores) {
    // The 32 x 32 matrix, S(a, b) at a * 32 + b: the warp reads one query letter's row
    // at a time, each thread the column of its subject's letter (no bank conflicts).
    __shared__ int sub[32 * 32];
    for (unsigned i = threadIdx.x; i < 32 * 32; i += blockDim.x) sub[i] = matrix[i];
    __syncthreads();
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nseq) return;
    const unsigned s = order[t];
    const unsigned start = off[s], n = off[s + 1] - start;
    const int oe = gap_open + gap_extend, ext = gap_extend;
    int best = 0;
    for (unsigned i0 = 0; i0 < m; i0 += ROWS) {
        const bool first = i0 == 0, last = i0 + ROWS >= m;
        if (i0 + ROWS <= m)
            strip<false>(res + start, n, scratch + start, sub, query + i0, ROWS, first, last, oe, ext, best);
        else
            strip<true>(res + start, n, scratch + start, sub, query + i0, m - i0, first, last, oe, ext, best);
    }
    scores[s] = best;
}
"#;

/// Threads per block.
const BLOCK: u32 = 256;
/// A score not (yet) read from the TSV.
const UNSEEN: i32 = i32::MIN;

/// The textbook two-row Gotoh, 64-bit: the score of `query` against `subject`, with
/// `matrix[a * 32 + b]` the score of query letter `a` against subject letter `b`.
fn gotoh(query: &[u8], subject: &[u8], matrix: &[i32], open: i64, extend: i64) -> i64 {
    const NEG: i64 = i64::MIN / 4;
    let n = subject.len();
    // Rows i - 1 and i of H, and F: column 0 is H = 0 (F is never read there).
    let (mut h_prev, mut h) = (vec![0i64; n + 1], vec![0i64; n + 1]);
    let (mut f_prev, mut f) = (vec![NEG; n + 1], vec![NEG; n + 1]);
    let mut best = 0;
    for &a in query {
        let scores: &[i32; MAX_LETTERS] = matrix[a as usize * MAX_LETTERS..][..MAX_LETTERS].try_into().expect("a row");
        let mut e = NEG;
        for j in 1..=n {
            e = (e - extend).max(h[j - 1] - open - extend);
            f[j] = (f_prev[j] - extend).max(h_prev[j] - open - extend);
            let diag = h_prev[j - 1] + scores[subject[j - 1] as usize % MAX_LETTERS] as i64;
            h[j] = 0.max(diag).max(e).max(f[j]);
            best = best.max(h[j]);
        }
        std::mem::swap(&mut h, &mut h_prev);
        std::mem::swap(&mut f, &mut f_prev);
    }
    best
}

/// `f(k)` for every `k` in `0..n`, on every core (subjects taken 16 at a time).
fn par_map(n: usize, f: impl Fn(usize) -> i32 + Sync) -> Vec<i32> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(n.div_ceil(16)).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out = vec![0i32; n];
    let parts: Vec<Vec<(usize, Vec<i32>)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let k0 = next.fetch_add(16, std::sync::atomic::Ordering::Relaxed);
                        if k0 >= n {
                            return done;
                        }
                        done.push((k0, (k0..n.min(k0 + 16)).map(&f).collect()));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a reference thread panicked")).collect()
    });
    for (k0, v) in parts.into_iter().flatten() {
        out[k0..k0 + v.len()].copy_from_slice(&v);
    }
    out
}

/// The kernel, its parameters and its CPU twin (the textbook Gotoh over the same
/// buffers; the scratch row is not used).
fn kernel(rows: u32) -> Kernel {
    Kernel::new("gotoh_ref", format!("#define ROWS {rows}\n{SOURCE}"))
        .params([
            Param::Buffer, // res: every subject's residues (matrix codes), one after another
            Param::Buffer, // off: subject k is res[off[k]..off[k + 1]]
            Param::Buffer, // order: the subjects, longest first
            Param::U32,    // nseq
            Param::Buffer, // query: this query's residues
            Param::U32,    // m: its length
            Param::Buffer, // matrix: 32 x 32 int
            Param::I32,    // gap_open
            Param::I32,    // gap_extend
            Param::Buffer, // scratch: int2 per residue
            Param::Buffer, // scores: nseq int, subject order
        ])
        .cpu_twin(|a| {
            let (nseq, m) = (a.u32(3)? as usize, a.u32(5)? as usize);
            let (open, extend) = (a.i32(7)? as i64, a.i32(8)? as i64);
            let scores = {
                let (res, off) = (a.buffer::<u8>(0)?, a.buffer::<u32>(1)?);
                let (query, matrix) = (&a.buffer::<u8>(4)?[..m], a.buffer::<i32>(6)?);
                par_map(nseq, |k| gotoh(query, &res[off[k] as usize..off[k + 1] as usize], matrix, open, extend) as i32)
            };
            a.buffer_mut::<i32>(10)?[..nseq].copy_from_slice(&scores);
            Ok(())
        })
}

/// The backend `--backend` names.
fn backend(name: &str) -> Backend {
    match name {
        "cuda" => Backend::Cuda,
        "sim" => Backend::SimWith(SimProfile::h100()),
        "sim-instant" => Backend::SimWith(SimProfile::instant()),
        _ => Backend::Auto,
    }
}

/// The database: every subject's residues one after another, where each starts, and
/// the index of each id.
struct Db {
    residues: Vec<u8>,
    offsets: Vec<u32>,
    ids: HashMap<String, u32>,
}

impl Db {
    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn subject(&self, k: usize) -> &[u8] {
        &self.residues[self.offsets[k] as usize..self.offsets[k + 1] as usize]
    }

    /// Reads the FASTA database at `path`; refuses repeated ids.
    fn read(path: &Path, matrix: &Matrix) -> Result<Db, String> {
        let name = path.display().to_string();
        let mut reader = FastaReader::new(fasta::open(path, "database")?, &name);
        let (mut residues, mut offsets) = (Vec::new(), vec![0u32]);
        let mut ids = HashMap::new();
        let mut lines = Vec::new();
        let mut seq = Vec::new();
        while let Some(rec) = reader.next_record(matrix, &mut seq)? {
            residues.extend_from_slice(&seq);
            let end = u32::try_from(residues.len())
                .map_err(|_| format!("{name}: more than {} residues (the reference's offsets are 32-bit)", u32::MAX))?;
            let k = offsets.len() as u32 - 1;
            if let Some(&earlier) = ids.get(&rec.id) {
                let at: &u64 = &lines[earlier as usize];
                return Err(format!(
                    "{name}: line {}: subject id `{}` is also the record's on line {at}; the check needs unique ids",
                    rec.line, rec.id
                ));
            }
            ids.insert(rec.id, k);
            lines.push(rec.line);
            offsets.push(end);
        }
        if ids.is_empty() {
            return Err(format!("{name}: no sequences"));
        }
        if ids.len() >= u32::MAX as usize {
            return Err(format!("{name}: {} sequences; the reference takes fewer than {}", ids.len(), u32::MAX));
        }
        Ok(Db { residues, offsets, ids })
    }
}

/// The queries: ids, residues, where each starts in the concatenation.
struct Queries {
    ids: Vec<String>,
    residues: Vec<u8>,
    offsets: Vec<usize>,
}

impl Queries {
    fn read(path: &Path, matrix: &Matrix) -> Result<Queries, String> {
        let name = path.display().to_string();
        let records = fasta::read_all(path, matrix)?;
        if records.is_empty() {
            return Err(format!("{name}: no queries"));
        }
        let mut seen = HashMap::new();
        let (mut ids, mut residues, mut offsets) = (Vec::new(), Vec::new(), vec![0]);
        for (i, (id, seq)) in records.into_iter().enumerate() {
            if let Some(j) = seen.insert(id.clone(), i) {
                return Err(format!(
                    "{name}: query id `{id}` is that of queries {} and {} (numbered from 1); the check needs unique ids",
                    j + 1,
                    i + 1
                ));
            }
            if seq.is_empty() {
                return Err(format!("{name}: query `{id}` has no residues (chariot-align search refuses it too)"));
            }
            residues.extend_from_slice(&seq);
            offsets.push(residues.len());
            ids.push(id);
        }
        Ok(Queries { ids, residues, offsets })
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn range(&self, q: usize) -> std::ops::Range<usize> {
        self.offsets[q]..self.offsets[q + 1]
    }

    fn get(&self, q: usize) -> &[u8] {
        &self.residues[self.range(q)]
    }
}

/// What reading the TSV found besides the scores.
#[derive(Default)]
struct Tsv {
    rows: u64,
    /// Rows of a pair an earlier row had: their count, and the first few (line, query, subject index).
    extra: u64,
    extra_shown: Vec<(u64, usize, usize)>,
}

/// The TSV of scores, its header read.
struct TsvFile {
    name: String,
    reader: std::io::BufReader<std::fs::File>,
}

/// `line` (line `no` of `name`) and why it is refused, in words.
fn malformed(name: &str, no: u64, line: &[u8], why: &str) -> String {
    let text: String = String::from_utf8_lossy(line).chars().take(200).collect();
    format!("{name}: line {no}: {why}: `{}`", text.escape_debug())
}

/// The line's text: without its line end.
fn trim_end(line: &[u8]) -> &[u8] {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    text.strip_suffix(b"\r").unwrap_or(text)
}

impl TsvFile {
    /// Opens the TSV at `path` and reads its header (before the GPU work, so that a
    /// wrong file fails at once).
    fn open(path: &Path) -> Result<TsvFile, String> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| format!("cannot open scores {name}: {e}"))?;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        let mut line = Vec::new();
        let n = reader.read_until(b'\n', &mut line).map_err(|e| format!("{name}: read error on line 1: {e}"))?;
        if n == 0 {
            return Err(format!("{name}: empty (expected the header `query<TAB>subject<TAB>score`)"));
        }
        if trim_end(&line) != b"query\tsubject\tscore" {
            return Err(malformed(&name, 1, trim_end(&line), "expected the header `query<TAB>subject<TAB>score`"));
        }
        Ok(TsvFile { name, reader })
    }

    /// Reads the rows into `expected` (query q's score of subject s at `q * nseq + s`,
    /// [`UNSEEN`] where no row gave it).
    fn read(
        mut self,
        queries: &HashMap<&str, usize>,
        db: &Db,
        expected: &mut [i32],
        show: usize,
    ) -> Result<Tsv, String> {
        let name = &self.name;
        let nseq = db.len();
        let mut tsv = Tsv::default();
        let mut line = Vec::new();
        let mut no = 1u64;
        loop {
            line.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut line)
                .map_err(|e| format!("{name}: read error after line {no}: {e}"))?;
            if n == 0 {
                return Ok(tsv);
            }
            no += 1;
            let text = trim_end(&line);
            let mut fields = text.splitn(4, |&b| b == b'\t');
            let (Some(qid), Some(sid), Some(score), None) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(malformed(name, no, text, "expected 3 tab-separated fields (query, subject, score)"));
            };
            let score = std::str::from_utf8(score)
                .ok()
                .and_then(|s| s.parse::<i32>().ok())
                .filter(|&s| s != UNSEEN)
                .ok_or_else(|| malformed(name, no, text, "the score is not a 32-bit integer"))?;
            let qid = String::from_utf8_lossy(qid);
            let sid = String::from_utf8_lossy(sid);
            let Some(&q) = queries.get(qid.as_ref()) else {
                return Err(format!("{name}: line {no}: unknown query `{qid}` (not in the queries' FASTA)"));
            };
            let Some(&s) = db.ids.get(sid.as_ref()) else {
                return Err(format!("{name}: line {no}: unknown subject `{sid}` (not in the database's FASTA)"));
            };
            let slot = &mut expected[q * nseq + s as usize];
            if *slot != UNSEEN {
                tsv.extra += 1;
                if tsv.extra_shown.len() < show {
                    tsv.extra_shown.push((no, q, s as usize));
                }
            } else {
                *slot = score;
            }
            tsv.rows += 1;
        }
    }
}

/// The subjects of the CPU sample: `n` spread evenly over `order` (longest first),
/// its first and last included.
fn sample(order: &[u32], n: usize) -> Vec<usize> {
    let len = order.len();
    let n = n.min(len);
    let mut v: Vec<usize> = match n {
        0 => Vec::new(),
        1 => vec![order[0] as usize],
        _ => (0..n).map(|i| order[i * (len - 1) / (n - 1)] as usize).collect(),
    };
    v.dedup();
    v
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("gotoh_check: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// A chariot error about `what`, in words.
fn me(what: &'static str) -> impl Fn(chariot::Error) -> String {
    move |e| format!("{what}: {e}")
}

/// Seconds since `t`.
fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn run(cli: &Cli) -> Result<u8, String> {
    let t0 = Instant::now();
    let matrix = match &cli.matrix {
        Some(p) => Matrix::load(p)?,
        None => Matrix::blosum62(),
    };
    // The scheduler starts and the kernel compiles (a CUDA context, NVRTC) on a thread of
    // their own while the files are read.
    let (started, files) = std::thread::scope(|scope| {
        let starting = scope.spawn(|| {
            let t = Instant::now();
            let sched = Scheduler::builder()
                .backend(backend(&cli.backend))
                .gpus(1)
                .streams(2) // the queries run one after another (they share the scratch row)
                .build()
                .map_err(|e| format!("cannot start the scheduler: {e}"))?;
            let k = sched.register_kernel(kernel(cli.rows)).map_err(|e| format!("the reference kernel: {e}"))?;
            Ok::<_, String>((sched, k, secs(t)))
        });
        let files = (|| {
            let queries = Queries::read(&cli.query, &matrix)?;
            let db = Db::read(&cli.db, &matrix)?;
            let tsv_file = TsvFile::open(&cli.scores)?;
            Ok::<_, String>((queries, db, tsv_file))
        })();
        (starting.join().unwrap_or_else(|_| Err("the scheduler's start panicked".into())), files)
    });
    let (queries, db, tsv_file) = files?;
    let (sched, k, t_start) = started?;
    let (nq, nseq) = (queries.len(), db.len());
    let total_res = db.residues.len();
    let cells: u64 = queries.residues.len() as u64 * total_res as u64;
    let t_read = secs(t0);
    let gpu = sched.gpu_info().first().map(|g| g.name.clone()).unwrap_or_default();
    eprintln!(
        "gotoh_check: {nq} queries ({} residues), database {nseq} subjects ({total_res} residues): {cells} cells; \
         read in {t_read:.2} s; {gpu}: scheduler and kernel in {t_start:.2} s (meanwhile)",
        queries.residues.len()
    );

    // The GPU's buffers, downloaded once: residues, offsets, the subjects longest first,
    // the queries, the matrix; a scratch row of (H, F) per residue, written by the kernel.
    let t = Instant::now();
    let mut order: Vec<u32> = (0..nseq as u32).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(db.offsets[k as usize + 1] - db.offsets[k as usize]));
    let mut mat = [0i32; MAX_LETTERS * MAX_LETTERS];
    for a in 0..MAX_LETTERS {
        for b in 0..MAX_LETTERS {
            mat[a * MAX_LETTERS + b] = matrix.scores[a][b] as i32;
        }
    }
    let res_len = total_res.max(1);
    let mut h_res = sched.alloc_host::<u8>(res_len).map_err(me("host residues"))?;
    h_res.write()[..total_res].copy_from_slice(&db.residues);
    let mut h_off = sched.alloc_host::<u32>(nseq + 1).map_err(me("host offsets"))?;
    h_off.write().copy_from_slice(&db.offsets);
    let mut h_order = sched.alloc_host::<u32>(nseq).map_err(me("host order"))?;
    h_order.write().copy_from_slice(&order);
    let mut h_q = sched.alloc_host::<u8>(queries.residues.len()).map_err(me("host queries"))?;
    h_q.write().copy_from_slice(&queries.residues);
    let mut h_mat = sched.alloc_host::<i32>(mat.len()).map_err(me("host matrix"))?;
    h_mat.write().copy_from_slice(&mat);
    let h_scores = sched.alloc_host::<i32>(nq * nseq).map_err(me("host scores"))?;
    let d_res = sched.alloc_resident::<u8>(res_len).map_err(me("residues"))?;
    let d_off = sched.alloc_resident::<u32>(nseq + 1).map_err(me("offsets"))?;
    let d_order = sched.alloc_resident::<u32>(nseq).map_err(me("order"))?;
    let d_q = sched.alloc_resident::<u8>(queries.residues.len()).map_err(me("queries"))?;
    let d_mat = sched.alloc_resident::<i32>(mat.len()).map_err(me("matrix"))?;
    let d_scratch = sched.alloc_resident::<[i32; 2]>(res_len).map_err(me("scratch row"))?;
    let d_scores = sched.alloc::<i32>(nseq).map_err(me("scores"))?;
    eprintln!("gotoh_check: buffers in {:.2} s", secs(t));

    let t_gpu = Instant::now();
    let upload_done = Arc::new(Mutex::new(None::<f64>));
    let done = upload_done.clone();
    sched
        .task(nq as u64, total_res as u64)
        .download(&d_res, 0, &h_res, ..)
        .download(&d_off, 0, &h_off, ..)
        .download(&d_order, 0, &h_order, ..)
        .download(&d_q, 0, &h_q, ..)
        .download(&d_mat, 0, &h_mat, ..)
        .callback(Resource::Cpu, move |_| {
            *done.lock() = Some(secs(t_gpu));
            Ok(())
        })
        .submit()
        .map_err(me("submitting the upload"))?;
    let last = Arc::new(Mutex::new(t_gpu));
    let grid = (nseq as u32).div_ceil(BLOCK);
    for q in 0..nq {
        let m = queries.range(q).len();
        let (last, id) = (last.clone(), queries.ids[q].clone());
        let qcells = m as u64 * total_res as u64;
        let args = [
            Arg::reads(&d_res, ..),
            Arg::reads(&d_off, ..),
            Arg::reads(&d_order, ..),
            Arg::u32(nseq as u32),
            Arg::reads(&d_q, queries.range(q)),
            Arg::u32(m as u32),
            Arg::reads(&d_mat, ..),
            Arg::i32(cli.gap_open),
            Arg::i32(cli.gap_extend),
            Arg::writes(&d_scratch, ..),
            Arg::buffer(&d_scores),
        ];
        sched
            .task(q as u64, qcells.max(1))
            .launch(&k, grid, BLOCK, 0, &args)
            .readback(&h_scores, q * nseq..(q + 1) * nseq, &d_scores, 0)
            .callback(Resource::Cpu, move |_| {
                let now = Instant::now();
                let dt = now.duration_since(std::mem::replace(&mut *last.lock(), now)).as_secs_f64();
                eprintln!(
                    "gotoh_check: query {} of {nq} (`{id}`, {m} residues): {dt:.2} s, {:.1} GCUPS; {:.1} s in all",
                    q + 1,
                    qcells as f64 / dt.max(1e-9) / 1e9,
                    now.duration_since(t_gpu).as_secs_f64()
                );
                Ok(())
            })
            .submit()
            .map_err(me("submitting a query"))?;
    }

    // While the GPU runs: the TSV, then the CPU's sample.
    let t = Instant::now();
    let qmap: HashMap<&str, usize> = queries.ids.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
    let mut expected = vec![UNSEEN; nq * nseq];
    let tsv = tsv_file.read(&qmap, &db, &mut expected, cli.show);
    let t_tsv = secs(t);
    // A bad row ends the process at once: dropping the scheduler would first wait for
    // the GPU work queued (minutes on a large database) to end.
    let tsv = tsv.unwrap_or_else(|e| {
        eprintln!("gotoh_check: error: {e}");
        std::process::exit(2)
    });
    eprintln!("gotoh_check: {} rows of {} read in {t_tsv:.2} s", tsv.rows, cli.scores.display());
    let t = Instant::now();
    let picked = sample(&order, cli.cpu_sample);
    let (open, extend) = (cli.gap_open as i64, cli.gap_extend as i64);
    let cpu = par_map(nq * picked.len(), |i| {
        let (q, s) = (i / picked.len(), picked[i % picked.len()]);
        gotoh(queries.get(q), db.subject(s), &mat, open, extend) as i32
    });
    let sample_cells: u64 =
        picked.iter().map(|&s| db.subject(s).len() as u64).sum::<u64>() * queries.residues.len() as u64;
    let t_cpu = secs(t);
    eprintln!(
        "gotoh_check: CPU sample: {} subjects × {nq} queries, {sample_cells} cells in {t_cpu:.2} s",
        picked.len()
    );

    let report = sched.synchronize().map_err(me("the reference on the GPU"))?;
    let t_all_gpu = secs(t_gpu);
    let kernel_s = report
        .records
        .iter()
        .filter(|r| r.stage == Stage::Kernel)
        .map(|r| r.end_ns.saturating_sub(r.start_ns))
        .sum::<u64>() as f64
        / 1e9;
    let upload_s = upload_done.lock().unwrap_or(f64::NAN);
    let gcups = cells as f64 / kernel_s.max(1e-9) / 1e9;
    let reference = h_scores.read();

    // The GPU reference against the CPU on the sample.
    let mut wrong_ref = Vec::new();
    for (i, &c) in cpu.iter().enumerate() {
        let (q, s) = (i / picked.len(), picked[i % picked.len()]);
        if reference[q * nseq + s] != c {
            wrong_ref.push((q, s, reference[q * nseq + s], c));
        }
    }
    let names = |wanted: &mut dyn Iterator<Item = usize>| -> HashMap<usize, &str> {
        let wanted: std::collections::HashSet<usize> = wanted.collect();
        db.ids
            .iter()
            .filter(|(_, &k)| wanted.contains(&(k as usize)))
            .map(|(id, &k)| (k as usize, id.as_str()))
            .collect()
    };
    if !wrong_ref.is_empty() {
        let name = names(&mut wrong_ref.iter().map(|w| w.1));
        println!(
            "gotoh_check REFERENCE WRONG: the GPU reference disagrees with the CPU's textbook Gotoh on {} of {} \
             sampled pairs (backend {}, --rows {}); nothing is said of chariot-align",
            wrong_ref.len(),
            cpu.len(),
            report.backend,
            cli.rows
        );
        for &(q, s, g, c) in wrong_ref.iter().take(cli.show) {
            println!("  query {} subject {}: GPU reference {g}, CPU {c}", queries.ids[q], name[&s]);
        }
        return Ok(3);
    }

    // Every pair: present once, equal to the reference.
    let t = Instant::now();
    let (mut mismatches, mut missing) = (0u64, 0u64);
    let (mut shown_mis, mut shown_miss) = (Vec::new(), Vec::new());
    for (i, (&e, &r)) in expected.iter().zip(reference.iter()).enumerate() {
        if e == UNSEEN {
            missing += 1;
            if shown_miss.len() < cli.show {
                shown_miss.push(i);
            }
        } else if e != r {
            mismatches += 1;
            if shown_mis.len() < cli.show {
                shown_mis.push((i, e, r));
            }
        }
    }
    let ok = mismatches == 0 && missing == 0 && tsv.extra == 0;
    println!(
        "gotoh_check {}: pairs {}, mismatches {mismatches}, missing {missing}, extra {}, cells {cells}, reference \
         {gcups:.1} GCUPS (kernels {kernel_s:.2} s, upload {upload_s:.2} s, GPU in all {t_all_gpu:.2} s, {} {}, \
         --rows {}), CPU sample {} pairs equal, read {t_read:.2} s, TSV {t_tsv:.2} s, total {:.2} s",
        if ok { "OK" } else { "FAIL" },
        nq * nseq,
        tsv.extra,
        report.backend,
        gpu,
        cli.rows,
        cpu.len(),
        secs(t0)
    );
    if ok {
        return Ok(0);
    }
    let name = names(
        &mut shown_mis
            .iter()
            .map(|m| m.0 % nseq)
            .chain(shown_miss.iter().map(|&i| i % nseq))
            .chain(tsv.extra_shown.iter().map(|x| x.2)),
    );
    if mismatches > 0 {
        println!("{mismatches} scores differ from the reference; the first {}:", shown_mis.len());
        for &(i, e, r) in &shown_mis {
            println!(
                "  query {} subject {}: chariot-align {e}, reference {r}",
                queries.ids[i / nseq],
                name[&(i % nseq)]
            );
        }
    }
    if missing > 0 {
        println!("{missing} pairs have no row; the first {}:", shown_miss.len());
        for &i in &shown_miss {
            println!("  query {} subject {}", queries.ids[i / nseq], name[&(i % nseq)]);
        }
    }
    if tsv.extra > 0 {
        println!("{} rows repeat a pair an earlier row gave; the first {}:", tsv.extra, tsv.extra_shown.len());
        for &(line, q, s) in &tsv.extra_shown {
            println!("  line {line}: query {} subject {}", queries.ids[q], name[&s]);
        }
    }
    eprintln!("gotoh_check: compared in {:.2} s", secs(t));
    Ok(1)
}
