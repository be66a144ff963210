//! The search pipeline (paper §6.3): one task per database chunk, five stages —
//! file read (CPU callback: read the chunk's byte range, parse, sort by length, pack;
//! for a database prepared by `makedb`, copy the chunk's slice of the file),
//! download (chunk and query profiles), one kernel launch per query, readback of the
//! scores, file write (CPU callback: TSV rows, running top-k, progress).
//!
//! Host memory is a ring of `slots` chunk slots; a chunk is submitted when a slot is
//! free, so at most `slots` chunks are in memory, and the task buffer holds enough of
//! them for LF (largest residue count first) to reorder.
//!
//! Where the database fits on the GPUs ([`DbPlacement`]) it is kept there: a first
//! batch of tasks reads each chunk and downloads it into its piece of a resident
//! buffer (a piece a chunk, on the GPU that takes the task), then the search's tasks
//! (profiles' download, the launches, readback, file write) run each where its chunk
//! is and read it there. The search's time, and so its GCUPS, is then the pass over
//! data on the GPUs, as CUDASW++ 4.0 times its search with `--uploadFull`; the upload
//! is timed apart ([`LoadPhase`]).

use crate::db::{self, ChunkInfo, DbIndex};
use crate::hits::{Hit, TopK};
use crate::matrix::Matrix;
use crate::output::Output;
use crate::sw::{self, Gaps, KernelChoice, KernelKind, Profile, Role};
use chariot::report::Report;
use chariot::{Arg, Backend, Order, Scheduler};
use parking_lot::Mutex;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A query: name and residues (matrix codes).
#[derive(Clone, Debug)]
pub struct Query {
    /// Name.
    pub id: String,
    /// Residues.
    pub codes: Vec<u8>,
}

/// How to run a search.
#[derive(Clone, Debug)]
pub struct Options {
    /// Backend.
    pub backend: Backend,
    /// D.
    pub gpus: usize,
    /// S (`None`: chariot chooses).
    pub streams: Option<usize>,
    /// Task order.
    pub order: Order,
    /// Stage depth (see the crate's Builder; `None`: chariot chooses).
    pub stage_depth: Option<usize>,
    /// Kernels one GPU may run at once (`None`: chariot chooses from each kernel's
    /// occupancy; 1 is the paper's threshold: chariot then never overlaps two kernels).
    pub kernels: Option<usize>,
    /// The kernel stage's capacity in GPU-fills (`None`: chariot chooses).
    pub fills: Option<f64>,
    /// Whether chariot adapts the limits it chose as the search runs.
    pub adapt: bool,
    /// Chunk slots in host memory (0: D·S + 4).
    pub slots: usize,
    /// Hits kept per query.
    pub top: usize,
    /// Gap costs.
    pub gaps: Gaps,
    /// TSV output file.
    pub out: Option<PathBuf>,
    /// Show a progress bar.
    pub progress: bool,
    /// Simulated kernel rate, G cells/s (sim backend only).
    pub sim_gcups: f64,
    /// Which Smith-Waterman kernel (`--kernel`; auto: DPX on sm_90 and later, and on sim).
    pub kernel: KernelChoice,
    /// Where the database lives during the search (`--db-on-gpu`).
    pub placement: DbPlacement,
}

/// Where a search keeps the database's packed chunks (`--db-on-gpu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DbPlacement {
    /// Resident where every chunk fits in [`RESIDENT_SHARE`] of each GPU's memory and
    /// the search runs in one process; streamed otherwise.
    #[default]
    Auto,
    /// Uploaded to the GPUs first (each GPU keeps the chunks it loaded), then searched
    /// there: the search's time and GCUPS count the kernels' pass over data already on
    /// the GPUs, as CUDASW++'s `--uploadFull` does, and the upload is timed apart.
    Resident,
    /// Streamed chunk by chunk, each chunk's read and download overlapping other chunks'
    /// kernels; the search's time counts them all.
    Streamed,
}

/// The share of a GPU's memory a resident database may take (`DbPlacement::Auto`).
pub const RESIDENT_SHARE: f64 = 0.5;

impl DbPlacement {
    /// `--db-on-gpu`'s value: auto, yes or no.
    pub fn parse(name: &str) -> Result<DbPlacement, String> {
        match name {
            "auto" => Ok(DbPlacement::Auto),
            "yes" => Ok(DbPlacement::Resident),
            "no" => Ok(DbPlacement::Streamed),
            other => Err(format!("--db-on-gpu {other}: auto, yes or no")),
        }
    }
}

/// Stage names of Table 1, in pipeline order.
pub const STAGES: [&str; 5] = ["file read", "download", "kernel", "readback", "file write"];

/// What a search produced.
#[derive(Debug)]
pub struct Outcome {
    /// Best hits per query, best first.
    pub hits: Vec<Vec<Hit>>,
    /// chariot's report.
    pub report: Report,
    /// Wall time from the first submit to the end of `synchronize` (of the search
    /// alone where the database is resident: see [`Outcome::load`]).
    pub wall: Duration,
    /// Sum of command times per stage of [`STAGES`], ns.
    pub stage_sum_ns: [u64; 5],
    /// Busy time (union of intervals) per stage, ns.
    pub stage_busy_ns: [u64; 5],
    /// Cells computed: Σ query length × database residues.
    pub cells: u128,
    /// Chunk slots used.
    pub slots: usize,
    /// Order-independent digest of every (query, subject, score): equal digests mean
    /// equal scores, whatever order the chunks were written in.
    pub digest: u64,
    /// The kernel that ran.
    pub kernel: KernelKind,
    /// (query, subject) pairs the DPX kernel aligned again in 32 bits: those whose score
    /// reached the query's [`Profile::sat`] (exactly the ones its 16-bit pass marks; 0
    /// with the portable kernel).
    pub repassed: u64,
    /// Where the start went.
    pub startup: Startup,
    /// The upload of a resident database before the search (`None`: streamed).
    pub load: Option<LoadPhase>,
}

/// The upload of a resident database: every chunk read and downloaded once, before the
/// search's tasks, which then read the chunks on the GPU that holds them.
#[derive(Debug)]
pub struct LoadPhase {
    /// Wall time from the first submit to the end of its `synchronize`.
    pub wall: Duration,
    /// Packed bytes uploaded.
    pub bytes: u64,
    /// Busy time of the file read stage (union), ns.
    pub read_busy_ns: u64,
    /// Busy time of the downloads (union), ns.
    pub download_busy_ns: u64,
    /// Its chariot report.
    pub report: Report,
}

impl Outcome {
    /// G cell updates per second over the wall time.
    pub fn gcups(&self) -> f64 {
        self.cells as f64 / self.wall.as_secs_f64().max(1e-12) / 1e9
    }
    /// The slowest stage's busy time, ns.
    pub fn slowest_busy_ns(&self) -> u64 {
        self.stage_busy_ns.iter().copied().max().unwrap_or(0)
    }
}

/// Length of the union of the spans `[start, end)`, ns.
pub fn union_ns(mut v: Vec<(u64, u64)>) -> u64 {
    v.sort_unstable();
    let (mut total, mut cur) = (0u64, None::<(u64, u64)>);
    for (s, e) in v {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

/// Sends the slot back when the task's last callback is dropped (run or not), once
/// the submit that owns it has succeeded.
struct SlotGuard {
    slot: usize,
    state: Arc<AtomicU8>,
    tx: crossbeam_channel::Sender<usize>,
}
const PENDING: u8 = 0;
const ARMED: u8 = 1;
const DROPPED: u8 = 2;
impl Drop for SlotGuard {
    fn drop(&mut self) {
        if self.state.compare_exchange(PENDING, DROPPED, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            let _ = self.tx.send(self.slot);
        }
    }
}

/// What one chunk's read leaves for its write: the names, the permutation from packed
/// position to record, and (for a prepared database) each record's index in the FASTA
/// file, so that results name and rank subjects as a FASTA search does.
#[derive(Debug, Default)]
pub struct SlotData {
    ids: Vec<String>,
    perm: Vec<u32>,
    /// Original index per record; empty: `first_seq` + position (FASTA).
    seqs: Vec<u64>,
}

/// The file read stage of one chunk into `buf`: FASTA is read, parsed, checked and
/// packed; a prepared database's chunk is copied (see [`crate::prepared::read_into`]).
pub fn read_into(index: &DbIndex, info: &ChunkInfo, matrix: &Matrix, buf: &mut [u8]) -> Result<SlotData, String> {
    match &index.prepared {
        Some(layout) => {
            let r = crate::prepared::read_into(&index.path, layout, info, buf)?;
            Ok(SlotData { ids: r.ids, perm: (0..info.nseq as u32).collect(), seqs: r.seqs })
        }
        None => {
            let d = db::read_chunk(&index.path, info, matrix)?;
            let perm = db::pack(&d, buf);
            Ok(SlotData { ids: d.ids, perm, seqs: Vec::new() })
        }
    }
}

/// The query profiles, laid out one after another as the kernel reads them.
#[derive(Debug)]
pub struct Profiles {
    /// One per query.
    pub list: Vec<Profile>,
    /// Offset of each in `bytes`.
    pub offsets: Vec<usize>,
    /// All of them.
    pub bytes: Vec<i8>,
}

impl Profiles {
    /// The profiles of `queries`.
    pub fn new(queries: &[Query], matrix: &Matrix) -> Result<Profiles, String> {
        if queries.is_empty() {
            return Err("no queries".into());
        }
        let list: Vec<Profile> = queries
            .iter()
            .map(|q| Profile::new(&q.codes, matrix).map_err(|e| format!("query `{}`: {e}", q.id)))
            .collect::<Result<_, _>>()?;
        let (mut offsets, mut bytes) = (Vec::new(), Vec::new());
        for p in &list {
            offsets.push(bytes.len());
            bytes.extend_from_slice(&p.scores);
        }
        Ok(Profiles { list, offsets, bytes })
    }

    /// Cells of a search of the whole database: Σ query length × residues.
    pub fn cells(&self, index: &DbIndex) -> u128 {
        self.list.iter().map(|p| p.m as u128).sum::<u128>() * index.residues as u128
    }
}

/// Buffer sizes every chunk of a database fits.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Bytes of the largest packed chunk.
    pub packed: usize,
    /// Residues of the largest chunk (rows of the scratch buffer).
    pub residues: usize,
    /// Records of the largest chunk.
    pub nseq: usize,
}

impl Sizes {
    /// The sizes of `index`'s chunks.
    pub fn of(index: &DbIndex) -> Sizes {
        Sizes {
            packed: index.chunks.iter().map(|c| c.packed_bytes()).max().unwrap_or(1),
            residues: index.chunks.iter().map(|c| c.residues).max().unwrap_or(0).max(1) as usize,
            nseq: index.chunks.iter().map(|c| c.nseq).max().unwrap_or(1),
        }
    }
}

/// The file write stage, shared by every chunk: running top-k per query, the TSV, the
/// progress bar and the digest of the scores.
pub struct Writer {
    query_ids: Vec<String>,
    top: Mutex<Vec<TopK>>,
    out: Mutex<Option<Output>>,
    digest: AtomicU64,
    bar: indicatif::ProgressBar,
    /// Per query, the DPX kernel's saturation threshold (empty: portable kernel).
    sat: Vec<i32>,
    repassed: AtomicU64,
}

fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Writer {
    /// Creates the output file of `opt.out` ([`rank_output`]) and opens the writer ([`Writer::open_to`]).
    pub fn open(queries: &[Query], opt: &Options, residues: u64) -> Result<Writer, String> {
        let out = opt.out.as_deref().map(rank_output).transpose()?;
        Writer::open_to(queries, opt, residues, out)
    }

    /// Takes the output file (`out`, created by [`rank_output`]) and writes its header;
    /// opens the progress bar (under mpirun only rank 0 shows it; see `ranks`).
    pub fn open_to(queries: &[Query], opt: &Options, residues: u64, out: Option<Output>) -> Result<Writer, String> {
        let rank = crate::ranks::rank();
        let out = match out {
            Some(mut w) => {
                writeln!(w, "query\tsubject\tscore")
                    .map_err(|e| format!("cannot write {}: {e}", w.path().display()))?;
                Some(w)
            }
            None => None,
        };
        let bar = if opt.progress && rank == 0 {
            let b = indicatif::ProgressBar::new(residues);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {percent}% of residues, eta {eta}",
                )
                .expect("template"),
            );
            b
        } else {
            indicatif::ProgressBar::hidden()
        };
        Ok(Writer {
            query_ids: queries.iter().map(|q| q.id.clone()).collect(),
            top: Mutex::new((0..queries.len()).map(|_| TopK::new(opt.top)).collect()),
            out: Mutex::new(out),
            digest: AtomicU64::new(0),
            bar,
            sat: Vec::new(),
            repassed: AtomicU64::new(0),
        })
    }

    /// Counts the scores the DPX kernel `kind` aligned again in 32 bits (those at or
    /// above each query's threshold, from `profiles`); nothing for the portable kernel.
    pub fn counting_repasses(mut self, kind: KernelKind, profiles: &[Profile]) -> Writer {
        if kind == KernelKind::Dpx {
            self.sat = profiles.iter().map(Profile::sat).collect();
        }
        self
    }

    /// Scores the DPX kernel aligned again in 32 bits so far.
    pub fn repassed(&self) -> u64 {
        self.repassed.load(Ordering::Relaxed)
    }

    /// Writes one chunk: `scores` holds each query's scores in packed order.
    pub fn write(&self, data: &SlotData, scores: &[i32], info: &ChunkInfo) -> Result<(), String> {
        let n = data.perm.len();
        let mut by_rec = vec![0i32; scores.len()];
        for q in 0..scores.len() / n.max(1) {
            for (pos, &r) in data.perm.iter().enumerate() {
                by_rec[q * n + r as usize] = scores[q * n + pos];
            }
        }
        let seq = |r: usize| data.seqs.get(r).copied().unwrap_or(info.first_seq + r as u64);
        let mut digest = 0u64;
        for (i, &sc) in by_rec.iter().enumerate() {
            let (q, r) = (i / n.max(1), i % n.max(1));
            digest = digest.wrapping_add(mix(mix(seq(r)) ^ mix(q as u64) ^ sc as u32 as u64));
        }
        self.digest.fetch_add(digest, Ordering::Relaxed);
        if !self.sat.is_empty() {
            let over = by_rec.chunks(n.max(1)).zip(&self.sat).map(|(s, &t)| s.iter().filter(|&&x| x >= t).count());
            self.repassed.fetch_add(over.sum::<usize>() as u64, Ordering::Relaxed);
        }
        {
            let mut top = self.top.lock();
            for (q, t) in top.iter_mut().enumerate() {
                for (r, &sc) in by_rec[q * n..(q + 1) * n].iter().enumerate() {
                    t.offer(sc, seq(r), || data.ids[r].clone());
                }
            }
        }
        if let Some(w) = self.out.lock().as_mut() {
            let mut text = String::with_capacity(n * 24);
            for (q, qid) in self.query_ids.iter().enumerate() {
                for (r, id) in data.ids.iter().enumerate() {
                    use std::fmt::Write as _;
                    let _ = writeln!(text, "{qid}\t{id}\t{}", by_rec[q * n + r]);
                }
            }
            w.write_all(text.as_bytes()).map_err(|e| format!("cannot write results: {e}"))?;
        }
        self.bar.inc(info.residues);
        Ok(())
    }

    /// Completes the output (renamed over its target); returns the best hits per query and the digest.
    pub fn finish(&self) -> Result<(Vec<Vec<Hit>>, u64), String> {
        self.bar.finish_and_clear();
        if let Some(w) = self.out.lock().take() {
            w.commit()?;
        }
        Ok((self.top.lock().iter().map(|t| t.sorted()).collect(), self.digest.load(Ordering::Relaxed)))
    }
}

struct Shared {
    matrix: Matrix,
    index: DbIndex,
    /// What each chunk's read leaves for its write (see `search_to`).
    data: Vec<Mutex<SlotData>>,
    writer: Writer,
    error: Mutex<Option<String>>,
}

impl Shared {
    fn fail(&self, e: String) -> chariot::BoxError {
        self.error.lock().get_or_insert_with(|| e.clone());
        e.into()
    }
}

/// The TSV output of this rank for `--out` `path`: rank 0's is `path`, rank r's
/// `<path>.rank<r>` under mpirun (see `ranks`); created at once (see [`crate::output`]).
///
/// # Errors
/// What [`Output::create`] refuses.
pub fn rank_output(path: &std::path::Path) -> Result<Output, String> {
    match crate::ranks::rank() {
        0 => Output::create("-o", path),
        r => Output::create(&format!("-o (rank {r})"), &PathBuf::from(format!("{}.rank{r}", path.display()))),
    }
}

/// Runs the search of `queries` over the database `index`, writing the TSV to
/// `opt.out` when set (see [`search_to`]).
pub fn search(index: &DbIndex, matrix: &Matrix, queries: &[Query], opt: &Options) -> Result<Outcome, String> {
    let out = opt.out.as_deref().map(rank_output).transpose()?;
    search_to(index, matrix, queries, opt, out)
}

/// Runs the search of `queries` over the database `index`, writing the TSV to `out`
/// (created before the search by [`rank_output`]; renamed over its target when the
/// search succeeds, removed when it fails).
pub fn search_to(
    index: &DbIndex,
    matrix: &Matrix,
    queries: &[Query],
    opt: &Options,
    out: Option<Output>,
) -> Result<Outcome, String> {
    let profiles = Profiles::new(queries, matrix)?;
    let nq = queries.len();
    let mut builder =
        Scheduler::builder().backend(opt.backend.clone()).gpus(opt.gpus).order(opt.order).adapt(opt.adapt);
    if let Some(s) = opt.streams {
        builder = builder.streams(s);
    }
    if let Some(d) = opt.stage_depth {
        builder = builder.stage_depth(d);
    }
    if let Some(k) = opt.kernels {
        builder = builder.kernel_concurrency(k);
    }
    if let Some(f) = opt.fills {
        builder = builder.kernel_fills(f);
    }
    #[cfg(feature = "mpi")]
    if let Some(c) = crate::ranks::cluster() {
        builder = builder.cluster(&c);
    }
    let t_start = Instant::now();
    let sched = builder.build().map_err(|e| format!("cannot start the scheduler: {e}"))?;
    let t_sched = t_start.elapsed();
    let archs: Vec<&str> = sched.gpu_info().iter().map(|g| g.arch.as_str()).collect();
    let kind = opt.kernel.resolve(&archs).for_gaps(opt.gaps);
    // One slot per task that can hold a stream slot, and 4 read ahead: the file read is
    // no bottleneck, and each slot is pinned at the largest chunk's size (3·D·S slots
    // pinned 1.2 GB for the paper's database, 0.45 s of a 0.8 s start on an H100).
    let slots = if opt.slots == 0 { sched.gpu_count() * sched.streams() + 4 } else { opt.slots };
    let slots = slots.min(index.chunks.len()).max(1);
    let size = Sizes::of(index);
    let slot_bytes = size.packed.next_multiple_of(64);
    let score_stride = nq * size.nseq;
    let resident = resident_here(opt.placement, &sched, index.chunks.len() * slot_bytes)?;
    let me = |e: chariot::Error| e.to_string();
    // The kernel compiles (NVRTC, or the kernel cache) on a thread of its own while the
    // pinned and device buffers are allocated: both take a good part of the start.
    let (kernel, buffers) = std::thread::scope(|scope| {
        let compiling = scope.spawn(|| {
            let t = Instant::now();
            let k = sched.register_kernel(sw::kernel(
                kind,
                Arc::new(profiles.list.clone()),
                profiles.offsets.clone(),
                opt.sim_gcups,
            ));
            (k, t.elapsed())
        });
        let t = Instant::now();
        let buffers = (|| -> Result<_, String> {
            let h_chunks = sched.alloc_host::<u8>(slots * slot_bytes).map_err(me)?;
            let h_scores = sched.alloc_host::<i32>(slots * score_stride).map_err(me)?;
            let mut h_prof = sched.alloc_host::<i8>(profiles.bytes.len()).map_err(me)?;
            h_prof.write().copy_from_slice(&profiles.bytes);
            // A resident database has a piece a chunk; a streamed one a chunk's copy per slot.
            let chunks = if resident {
                let n = index.chunks.len();
                Chunks::Resident(sched.alloc_resident_pieces::<u8>(n * slot_bytes, slot_bytes).map_err(me)?)
            } else {
                Chunks::Streamed(sched.alloc::<u8>(size.packed).map_err(me)?)
            };
            let d_scratch = sched.alloc::<[i32; 2]>(size.residues).map_err(me)?;
            let d_scores = sched.alloc::<i32>(score_stride).map_err(me)?;
            let d_prof = sched.alloc::<i8>(profiles.bytes.len()).map_err(me)?;
            Ok((h_chunks, h_scores, h_prof, chunks, d_scratch, d_scores, d_prof))
        })();
        let t_buffers = t.elapsed();
        let (k, t_kernel) = compiling.join().unwrap_or_else(|_| (Err(chariot::Error::ShutDown), Duration::ZERO));
        ((k, t_kernel), (buffers, t_buffers))
    });
    let ((kernel, t_kernel), (buffers, t_buffers)) = (kernel, buffers);
    let kernel = kernel.map_err(|e| format!("kernel: {e}"))?;
    let (h_chunks, h_scores, h_prof, chunks, d_scratch, d_scores, d_prof) = buffers?;
    let startup = Startup { scheduler: t_sched, kernel: t_kernel, buffers: t_buffers, total: t_start.elapsed() };
    // Chunk `c`'s packed bytes where the kernel reads them.
    let chunk_arg = |c: usize, info: &ChunkInfo| match &chunks {
        Chunks::Streamed(d) => Arg::buffer(d),
        Chunks::Resident(d) => Arg::reads(d, c * slot_bytes..c * slot_bytes + info.packed_bytes()),
    };
    let arg = |r: Role, chunk: &Arg| match r {
        Role::Chunk => chunk.clone(),
        Role::Profiles => Arg::buffer(&d_prof),
        Role::Scratch => Arg::buffer(&d_scratch),
        Role::Scores => Arg::buffer(&d_scores),
        Role::U32(v) => Arg::u32(v),
        Role::I32(v) => Arg::i32(v),
        Role::U64(v) => Arg::u64(v),
    };

    // What a chunk's read leaves for its write: kept per slot while streaming, per chunk
    // while the database is resident (its read and its write are then in two tasks).
    let kept = if resident { index.chunks.len() } else { slots };
    let shared = Arc::new(Shared {
        matrix: matrix.clone(),
        index: index.clone(),
        data: (0..kept).map(|_| Mutex::new(SlotData::default())).collect(),
        writer: Writer::open_to(queries, opt, index.residues, out)?.counting_repasses(kind, &profiles.list),
        error: Mutex::new(None),
    });
    let gaps = opt.gaps;
    // The file read stage of chunk `c`, its data kept at `key`.
    let read = |c: usize, key: usize| {
        let (sh, info) = (shared.clone(), index.chunks[c].clone());
        move |buf: &mut [u8], _: &chariot::callback::CallInfo| -> std::result::Result<(), chariot::BoxError> {
            let data = read_into(&sh.index, &info, &sh.matrix, buf).map_err(|e| sh.fail(e))?;
            *sh.data[key].lock() = data;
            Ok(())
        }
    };
    // The file write stage of chunk `c`'s scores (its read's data kept at `key`); `guard`
    // gives the task's host slot back.
    let write = |c: usize, key: usize, guard: SlotGuard| {
        let (sh, info) = (shared.clone(), index.chunks[c].clone());
        move |scores: &[i32], _: &chariot::callback::CallInfo| -> std::result::Result<(), chariot::BoxError> {
            let _guard = guard;
            let data = std::mem::take(&mut *sh.data[key].lock());
            sh.writer.write(&data, scores, &info).map_err(|e| sh.fail(e))
        }
    };
    let crange = |s: usize, info: &ChunkInfo| s * slot_bytes..s * slot_bytes + info.packed_bytes();
    let srange = |s: usize, info: &ChunkInfo| s * score_stride..s * score_stride + nq * info.nseq;
    // The launches of every query over chunk `c`, then the scores' readback and write.
    let search_chunk = same_builder(|t, c, info, s, key, guard| {
        let chunk = chunk_arg(c, info);
        let mut t = t.download(&d_prof, 0, &h_prof, ..);
        for (q, p) in profiles.list.iter().enumerate() {
            let args = sw::args(p, q, profiles.offsets[q], info.nseq, info.res_off(), info.residues, gaps);
            t = t.launch(
                &kernel,
                p.grid_of(kind, info.nseq),
                sw::BLOCK,
                p.shared_bytes(),
                &args.map(|r| arg(r, &chunk)),
            );
        }
        t.readback(&h_scores, srange(s, info), &d_scores, 0).callback_reading(
            &h_scores,
            srange(s, info),
            write(c, key, guard),
        )
    });

    let load = match &chunks {
        Chunks::Streamed(d_chunk) => {
            let t0 = Instant::now();
            each_chunk(index, &shared, slots, |c, info, s, guard| {
                let t = sched
                    .task(c as u64, info.residues.max(1))
                    .callback_writing(&h_chunks, crange(s, info), read(c, s))
                    .download(d_chunk, 0, &h_chunks, crange(s, info));
                search_chunk(t, c, info, s, s, guard)
            })?;
            return finish(
                sched.synchronize(),
                t0.elapsed(),
                &shared,
                opt.top,
                &profiles,
                index,
                slots,
                kind,
                startup,
                None,
            );
        }
        Chunks::Resident(d_db) => {
            // The upload: each chunk read into a slot and downloaded into its piece on
            // the GPU that takes the task; the slot is free once the download has ended.
            let t0 = Instant::now();
            each_chunk(index, &shared, slots, |c, info, s, guard| {
                sched
                    .task(c as u64, info.residues.max(1))
                    .callback_writing(&h_chunks, crange(s, info), read(c, c))
                    .download(d_db, c * slot_bytes, &h_chunks, crange(s, info))
                    .callback(chariot::callback::Resource::Cpu, move |_| {
                        drop(guard);
                        Ok(())
                    })
            })?;
            let report = sched.synchronize();
            let wall = t0.elapsed();
            if let Some(e) = shared.error.lock().take() {
                shared.writer.bar.finish_and_clear();
                return Err(e);
            }
            let report = report.map_err(|e| format!("loading the database to the GPUs failed: {e}"))?;
            let busy = |stage: chariot::Stage| {
                union_ns(report.records.iter().filter(|r| r.stage == stage).map(|r| (r.start_ns, r.end_ns)).collect())
            };
            let (read_busy_ns, download_busy_ns) = (busy(chariot::Stage::Cpu), busy(chariot::Stage::Download));
            let bytes = index.chunks.iter().map(|c| c.packed_bytes() as u64).sum();
            LoadPhase { wall, bytes, read_busy_ns, download_busy_ns, report }
        }
    };
    // The search: a task a chunk, each on the GPU that holds the chunk (its piece's
    // reader runs where the piece is valid), reading it there.
    let t0 = Instant::now();
    each_chunk(index, &shared, slots, |c, info, s, guard| {
        search_chunk(sched.task(c as u64, info.residues.max(1)), c, info, s, c, guard)
    })?;
    finish(sched.synchronize(), t0.elapsed(), &shared, opt.top, &profiles, index, slots, kind, startup, Some(load))
}

/// Ties a task-extending closure's builder lifetimes (the closure's signature alone
/// cannot name the scheduler's borrow).
fn same_builder<'s, F>(f: F) -> F
where
    F: Fn(chariot::TaskBuilder<'s>, usize, &ChunkInfo, usize, usize, SlotGuard) -> chariot::TaskBuilder<'s>,
{
    f
}

/// The device copy a search's kernels read each chunk from.
enum Chunks {
    /// A chunk's copy per GPU and stream slot, downloaded by each chunk's task.
    Streamed(chariot::DeviceBuffer<u8>),
    /// The whole database, a piece a chunk, uploaded once.
    Resident(chariot::resident::ResidentBuffer<u8>),
}

/// Whether a search under `placement` keeps its `bytes` of chunks on the GPUs.
fn resident_here(placement: DbPlacement, sched: &Scheduler, bytes: usize) -> Result<bool, String> {
    // In a cluster each rank takes chunks as it frees: a chunk loaded on one rank
    // would be searched on another.
    let cluster = crate::ranks::size() > 1;
    let fits = sched.gpu_info().iter().all(|g| bytes as f64 <= RESIDENT_SHARE * g.memory_bytes as f64);
    match placement {
        DbPlacement::Auto => Ok(fits && !cluster),
        DbPlacement::Streamed => Ok(false),
        DbPlacement::Resident if cluster => {
            Err("--db-on-gpu yes: not under mpirun (each rank streams the chunks it takes); use auto or no".into())
        }
        DbPlacement::Resident => {
            let least = sched.gpu_info().iter().map(|g| g.memory_bytes).min().unwrap_or(0);
            if bytes as u64 > least {
                return Err(format!(
                    "--db-on-gpu yes: the database's chunks take {bytes} bytes on the GPUs, more than the {least} \
                     bytes of the smallest; use auto or no"
                ));
            }
            Ok(true)
        }
    }
}

/// Submits a task a chunk, `task(c, info, slot, guard)` building chunk `c`'s with host
/// slot `slot` (of `slots`), which `guard` gives back when the task's last callback is
/// dropped; waits for a free slot before each.
fn each_chunk<'s>(
    index: &DbIndex,
    shared: &Shared,
    slots: usize,
    mut task: impl FnMut(usize, &ChunkInfo, usize, SlotGuard) -> chariot::TaskBuilder<'s>,
) -> Result<(), String> {
    let (tx, rx) = crossbeam_channel::unbounded::<usize>();
    let mut free: Vec<usize> = (0..slots).rev().collect();
    for (c, info) in index.chunks.iter().enumerate() {
        if shared.error.lock().is_some() {
            break;
        }
        let s = match free.pop() {
            Some(s) => s,
            None => rx.recv_timeout(Duration::from_secs(3600)).map_err(|_| "the pipeline stalled".to_string())?,
        };
        let state = Arc::new(AtomicU8::new(PENDING));
        let guard = SlotGuard { slot: s, state: state.clone(), tx: tx.clone() };
        match task(c, info, s, guard).submit() {
            Ok(_) => {
                if state.compare_exchange(PENDING, ARMED, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                    let _ = tx.send(s);
                }
            }
            Err(e) => return Err(format!("submit of chunk {c}: {e}")),
        }
    }
    Ok(())
}

/// The end of a search: its hits, digest and stage times from the report `report` of
/// its tasks, which took `wall`.
#[allow(clippy::too_many_arguments)]
fn finish(
    report: chariot::Result<Report>,
    wall: Duration,
    shared: &Shared,
    top: usize,
    profiles: &Profiles,
    index: &DbIndex,
    slots: usize,
    kind: KernelKind,
    startup: Startup,
    load: Option<LoadPhase>,
) -> Result<Outcome, String> {
    if let Some(e) = shared.error.lock().take() {
        shared.writer.bar.finish_and_clear();
        return Err(e);
    }
    let report = report.map_err(|e| format!("search failed: {e}"))?;
    let (hits, digest) = shared.writer.finish()?;
    // Under mpirun: every rank's hits on rank 0, every rank's digest and repasses.
    let hits = crate::ranks::merge_hits(hits, top);
    let digest = crate::ranks::sum(digest);
    let repassed = crate::ranks::sum(shared.writer.repassed());
    let nq = profiles.list.len();
    let mut sum = [0u64; 5];
    let mut spans: [Vec<(u64, u64)>; 5] = Default::default();
    for r in &report.records {
        // A streamed chunk's commands: read, the chunk's and the profiles' downloads,
        // a launch a query, readback, write. A resident one's search task has no read
        // and no chunk download (and a fetch of its piece, at the download stage, where
        // it had to be copied): its stages tell.
        let k = if load.is_none() {
            match r.command as usize {
                0 => 0,
                1 | 2 => 1,
                i if i < 3 + nq => 2,
                i if i == 3 + nq => 3,
                _ => 4,
            }
        } else {
            match r.stage {
                chariot::Stage::Download => 1,
                chariot::Stage::Kernel => 2,
                chariot::Stage::Readback => 3,
                chariot::Stage::Cpu => 4,
            }
        };
        sum[k] += r.duration_ns();
        spans[k].push((r.start_ns, r.end_ns));
    }
    let busy = spans.map(union_ns);
    let cells = profiles.cells(index);
    Ok(Outcome {
        hits,
        report,
        wall,
        stage_sum_ns: sum,
        stage_busy_ns: busy,
        cells,
        slots,
        digest,
        kernel: kind,
        repassed,
        startup,
        load,
    })
}

/// Where a search's start went, before its first task: what a whole-process time pays
/// besides the search itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct Startup {
    /// Building the scheduler: the driver, contexts, streams, threads.
    pub scheduler: Duration,
    /// Registering the kernel: NVRTC, or a cubin from chariot's kernel cache, and loading it.
    pub kernel: Duration,
    /// Allocating the pinned and device buffers (while the kernel compiles).
    pub buffers: Duration,
    /// All of it, from the scheduler's build to the buffers and kernel ready.
    pub total: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_on_gpu_names() {
        assert_eq!(DbPlacement::parse("auto"), Ok(DbPlacement::Auto));
        assert_eq!(DbPlacement::parse("yes"), Ok(DbPlacement::Resident));
        assert_eq!(DbPlacement::parse("no"), Ok(DbPlacement::Streamed));
        assert!(DbPlacement::parse("Yes").unwrap_err().contains("auto, yes or no"));
    }

    #[test]
    fn union_of_spans() {
        assert_eq!(union_ns(vec![(0, 10), (5, 12), (20, 25)]), 17);
        assert_eq!(union_ns(vec![]), 0);
    }
}
