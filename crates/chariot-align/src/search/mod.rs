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
//! batch of tasks reads each chunk and downloads it into its pieces of a resident
//! buffer (on the GPU that takes the task), then the search's tasks
//! (profiles' download, the launches, readback, file write) run each where its chunk
//! is and read it there. The search's time, and so its GCUPS, is then the pass over
//! data on the GPUs, as CUDASW++ 4.0 times its search with `--uploadFull`; the upload
//! is timed apart ([`LoadPhase`]).

use crate::db::{self, ChunkInfo, DbIndex};
use crate::hits::Hit;
use crate::matrix::Matrix;
use crate::output::Output;
use crate::sw::{self, Gaps, KernelChoice, KernelKind, Profile};
use chariot::report::Report;
use chariot::{Backend, Order};
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod run;
mod writer;
pub use run::{search, search_to};
pub use writer::Writer;

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
    /// D; 0: every GPU CUDA lists (one on the simulator).
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
    /// Whether the DPX kernel aligns queries of similar lengths two at a time
    /// (`--query-pairs`; [`Profiles::pair_up`]).
    pub query_pairs: bool,
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

/// The pieces of a resident database, bytes: each chunk starts a piece (at most a
/// piece a chunk is left unused).
const DB_PIECE: usize = 1 << 20;

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
    /// Query pairs aligned by `sw_search_qp` ([`Profiles::pairs`], two runs of queries
    /// each; 0 with the portable kernel, one query or `--query-pairs no`).
    pub query_pairs: usize,
    /// Queries in those pairs ([`Profiles::paired`]); the rest ran alone.
    pub paired_queries: usize,
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

/// The query profiles, laid out one after another as the kernels read them, and the
/// launches that run them over a chunk.
#[derive(Debug)]
pub struct Profiles {
    /// One per query.
    pub list: Vec<Profile>,
    /// Offset of each in `bytes`.
    pub offsets: Vec<usize>,
    /// All of them, then each query pair's packed profile, table and pass words.
    pub bytes: Vec<i8>,
    /// Query pairs, two runs of queries a launch ([`Profiles::pair_up`]; none before).
    pub pairs: Vec<QueryPair>,
    /// The launches over a chunk, in order: queries alone and pairs.
    pub launches: Vec<Launch>,
}

/// Two runs of queries that `sw_search_qp` aligns at once.
#[derive(Clone, Debug)]
pub struct QueryPair {
    /// Their runs, packed profile and plan.
    pub profile: sw::PairProfile,
    /// Where the packed profile, the pass words and the table are in [`Profiles::bytes`].
    pub at: sw::PairAt,
}

/// One launch over a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Query `q` alone (`sw_search` or `sw_search_dpx`).
    Query(usize),
    /// Query pair `i` of [`Profiles::pairs`] (`sw_search_qp`).
    Pair(usize),
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
        let launches = (0..list.len()).map(Launch::Query).collect();
        Ok(Profiles { list, offsets, bytes, pairs: Vec::new(), launches })
    }

    /// Pairs the queries for `sw_search_qp` ([`sw::pair_queries`]) where the kernel is
    /// DPX: the pairs' packed profiles and plans go after the queries' profiles in
    /// `bytes`, and the launches become the pairs (longest first), then the queries left
    /// alone.
    pub fn pair_up(&mut self, kind: KernelKind) {
        if kind != KernelKind::Dpx || self.list.len() < 2 {
            return;
        }
        let (pairs, alone) = sw::pair_queries(&self.list);
        self.launches.clear();
        for runs in pairs {
            let profile = sw::PairProfile::new(&self.list, runs);
            // Each part's length is a multiple of 16 bytes: the kernels' 16-byte loads stay aligned.
            let packed = self.bytes.len();
            self.bytes.extend(profile.packed.iter().map(|&x| x as i8));
            let table = self.bytes.len();
            let rows = profile.table(&self.list, &self.offsets);
            self.bytes.extend(rows.iter().flatten().flat_map(|x| x.to_le_bytes()).map(|b| b as i8));
            let passes = self.bytes.len();
            self.bytes.extend(profile.passes.iter().flat_map(|x| x.to_le_bytes()).map(|b| b as i8));
            self.bytes.resize(self.bytes.len().next_multiple_of(16), 0);
            self.launches.push(Launch::Pair(self.pairs.len()));
            self.pairs.push(QueryPair { profile, at: sw::PairAt { packed, passes, table } });
        }
        self.launches.extend(alone.into_iter().map(Launch::Query));
    }

    /// Queries aligned in query pairs.
    pub fn paired(&self) -> usize {
        self.pairs.iter().map(|p| p.profile.segments().count()).sum()
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
