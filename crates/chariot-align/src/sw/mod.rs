//! The Smith-Waterman kernels (`kernels/sw.cu`): query profiles, launch shape, and the
//! CPU twins that the sim backend runs in their place (the same strip recurrence, written
//! for the CPU, giving the same scores).
//!
//! Two kernels ([`KernelKind`]), chosen by `--kernel` ([`KernelChoice`]; `auto` by
//! default: DPX where every GPU is compute capability 9.0 or later, and on the sim
//! backend, which models an H100):
//!
//! * `portable` (`sw_search`): 32-bit scores, one subject per lane group;
//! * `dpx` (`sw_search_dpx`, the CUDASW++ comparison): 16-bit scores packed two per 32-bit register,
//!   two subjects per lane group, updated by Hopper's DPX instructions
//!   (`__viaddmax_s16x2`, `__vimax3_s16x2_relu`; the adds that need no max by `__vadd2`,
//!   on the FMA pipe beside them); a subject whose 16-bit score reached
//!   [`Profile::sat`] (32767 minus the largest profile score: below it no value can
//!   have wrapped) is aligned again by the 32-bit pass in the same launch. Its CPU twin
//!   ([`align_pair16`]) emulates the 16-bit arithmetic, wrap-around included, so that the
//!   sim backend takes the same path, re-pass included, and still gives exact scores.
//!
//! With the DPX kernel and several queries, queries also run in pairs of runs
//! ([`pair_queries`], [`PairProfile`], [`pair_kernel`]: `sw_search_qp`, a subject and two
//! runs of queries per lane group, each run queries end to end): a pair's packed profile
//! holds both runs' scores in one 32-bit word, so a cell pair needs no byte permute, the
//! one ALU-pipe operation per cell pair that is neither a max nor an add; and two runs of
//! several queries take about the same rows, where two queries alone leave the shorter
//! one's rows padded.

use crate::matrix::{Matrix, MAX_LETTERS};
use chariot::{Kernel, Param};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

/// CUDA C source.
pub const SOURCE: &str = include_str!("../../kernels/sw.cu");
/// Queries of at most this many residues take strips of [`SHORT_STRIP`] rows, longer ones
/// of [`STRIP`] (measured on an H200, the paper-shaped database: with 16-row strips a
/// 127-residue query searched at 1.27× the GCUPS of 32-row strips, a 255-residue one at
/// 0.94×).
pub const SHORT_QUERY: usize = 128;
/// Query rows per lane strip of a short query (the kernels' `R` = 16): more lanes a
/// subject, as many as [`MAX_GROUP_SHORT`], so that a short query still fills the GPU.
pub const SHORT_STRIP: usize = 16;
/// Query rows per lane strip of a longer query (`R` = 32): a lane's two subjects' H and
/// E in 128 registers, and half the per-column work (shuffles, loads, the scratch row)
/// of 16-row strips (measured on an H200 with CUDASW++'s 20 queries: 1.20× the GCUPS of
/// 16-row strips over 256-residue subjects, 1.09× on the paper-shaped database, both
/// with [`MAX_GROUP`]).
pub const STRIP: usize = 32;
/// The longest strip of any query.
pub const MAX_STRIP: usize = STRIP;
/// Most lanes a subject of a short query (a power of two).
pub const MAX_GROUP_SHORT: usize = 32;
/// Most lanes a subject of a longer query (a power of two): a query longer than
/// `MAX_GROUP · STRIP` rows takes several passes. More lanes make a pass's wavefront
/// longer to fill and drain; fewer make more passes, and more subjects a warp (which runs
/// as long as its longest). On an H200 with CUDASW++'s 20 queries, 8 was within 3 % of
/// the best of 4, 8 and 16 on both databases tried: 4 was 2.6 % faster over 256-residue
/// subjects but 40 % slower on the paper-shaped database, 16 1.7 % faster there but 6 %
/// slower over 256.
pub const MAX_GROUP: usize = 8;
/// Alphabet rows of the profile (`SW_A`).
pub const LETTERS: usize = MAX_LETTERS;
/// Most query rows of a shared-memory profile tile (`SW_QT`).
pub const TILE: usize = 1024;
/// Threads per block.
pub const BLOCK: u32 = 256;
/// Longest query accepted (the profile is staged through shared memory in tiles, so
/// this is a sanity limit on host memory, not a kernel limit).
pub const MAX_QUERY: usize = 100_000;
/// Profile score of padded query positions: low enough that no padded cell can raise
/// a score (every padded cell is below some real cell or 0).
pub(crate) const PAD: i8 = -64;
/// Minus infinity for E and F, far from overflow.
pub(crate) const NEG: i32 = -(1 << 29);

/// Which kernel `--kernel` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KernelChoice {
    /// DPX where every GPU has compute capability 9.0 or later (and on the sim backend,
    /// which models an H100), else portable.
    #[default]
    Auto,
    /// The 32-bit kernel.
    Portable,
    /// The 16-bit DPX kernel (on a GPU before sm_90 it runs, with its DPX instructions
    /// emulated by the compiler).
    Dpx,
}

impl KernelChoice {
    /// Parses `auto`, `portable` or `dpx`.
    ///
    /// # Errors
    /// Any other name, with the names allowed.
    pub fn parse(name: &str) -> Result<KernelChoice, String> {
        match name {
            "auto" => Ok(KernelChoice::Auto),
            "portable" => Ok(KernelChoice::Portable),
            "dpx" => Ok(KernelChoice::Dpx),
            other => Err(format!("kernel = {other:?}; allowed: auto, portable or dpx")),
        }
    }

    /// The kernel to run on GPUs of these architectures (`sm_90`, …; `sim` on the
    /// simulator): `auto` is DPX where every one is `sim` or sm_90 and later.
    pub fn resolve<S: AsRef<str>>(self, archs: &[S]) -> KernelKind {
        match self {
            KernelChoice::Portable => KernelKind::Portable,
            KernelChoice::Dpx => KernelKind::Dpx,
            KernelChoice::Auto if !archs.is_empty() && archs.iter().all(|a| has_dpx(a.as_ref())) => KernelKind::Dpx,
            KernelChoice::Auto => KernelKind::Portable,
        }
    }
}

/// Whether a GPU of architecture `arch` (`sm_90`, `sm_100`, … or `sim`) has DPX
/// instructions in hardware (compute capability 9.0 and later).
pub fn has_dpx(arch: &str) -> bool {
    if arch == "sim" {
        return true;
    }
    let digits: String = arch.strip_prefix("sm_").unwrap_or("").chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse::<u32>().is_ok_and(|v| v >= 90)
}

/// The kernel a search runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// `sw_search`: 32-bit scores, one subject per lane group.
    Portable,
    /// `sw_search_dpx`: 16-bit packed scores, two subjects per lane group, 32-bit
    /// re-pass of the subjects whose 16-bit score reached [`Profile::sat`].
    Dpx,
}

impl KernelKind {
    /// `portable` or `dpx`.
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::Portable => "portable",
            KernelKind::Dpx => "dpx",
        }
    }
    /// The entry point in `kernels/sw.cu`.
    pub fn entry(self) -> &'static str {
        match self {
            KernelKind::Portable => "sw_search",
            KernelKind::Dpx => "sw_search_dpx",
        }
    }
    /// The kernel for gap costs `gaps`: DPX only where every E and F value (down to
    /// −(open + 2·extend)) fits 16 bits with room to spare; else portable. The command
    /// line's costs (at most 1000 each) always fit.
    pub fn for_gaps(self, gaps: Gaps) -> KernelKind {
        let fits = gaps.open >= 0 && gaps.extend >= 0 && gaps.open as i64 + 2 * gaps.extend as i64 <= 16_384;
        if fits {
            self
        } else {
            KernelKind::Portable
        }
    }

    /// The source NVRTC compiles for this kernel: `kernels/sw.cu` with only this
    /// kernel in it (`SW_ONLY_PORTABLE` / `SW_ONLY_DPX` defined first).
    pub fn source(self) -> String {
        let only = match self {
            KernelKind::Portable => "SW_ONLY_PORTABLE",
            KernelKind::Dpx => "SW_ONLY_DPX",
        };
        format!("#define {only}\n{SOURCE}")
    }

    /// Subjects one lane group aligns.
    pub fn subjects_per_group(self) -> usize {
        match self {
            KernelKind::Portable => 1,
            KernelKind::Dpx => 2,
        }
    }
}

/// Gap costs: a gap of length k costs `open + k·extend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gaps {
    /// Opening cost.
    pub open: i32,
    /// Cost per gap position.
    pub extend: i32,
}

/// A query's profile and launch parameters.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Query rows of a lane's strip: [`SHORT_STRIP`] for a query of at most
    /// [`SHORT_QUERY`] residues, else [`STRIP`].
    pub strip: usize,
    /// Lanes per subject (power of two, ≤ [`MAX_GROUP_SHORT`] with short strips, else
    /// ≤ [`MAX_GROUP`]).
    pub group: u32,
    /// Padded query length (a multiple of group·strip).
    pub mpad: usize,
    /// Real query length.
    pub m: usize,
    /// `[LETTERS][mpad]`: score of query position i against subject letter a.
    pub scores: Vec<i8>,
}

impl Profile {
    /// Builds the profile of `query` (matrix codes).
    ///
    /// # Errors
    /// An empty query or one longer than [`MAX_QUERY`].
    pub fn new(query: &[u8], matrix: &Matrix) -> Result<Profile, String> {
        let m = query.len();
        if m == 0 {
            return Err("empty query: a query needs at least one residue".into());
        }
        if m > MAX_QUERY {
            return Err(format!("query of {m} residues is longer than the {MAX_QUERY} supported"));
        }
        let (strip, most) = if m <= SHORT_QUERY { (SHORT_STRIP, MAX_GROUP_SHORT) } else { (STRIP, MAX_GROUP) };
        let group = m.div_ceil(strip).next_power_of_two().min(most) as u32;
        let mpad = m.next_multiple_of(group as usize * strip);
        let mut scores = vec![PAD; LETTERS * mpad];
        for a in 0..matrix.letters.len() {
            for (i, &q) in query.iter().enumerate() {
                scores[a * mpad + i] = matrix.scores[q as usize][a];
            }
        }
        Ok(Profile { strip, group, mpad, m, scores })
    }

    /// Rows of a shared-memory profile tile.
    pub fn tile(&self) -> usize {
        self.mpad.min(TILE)
    }

    /// Dynamic shared memory of a launch, bytes: a tile of the profile's [`LETTERS`] rows
    /// and the kernels' pad row.
    pub fn shared_bytes(&self) -> u32 {
        ((LETTERS + 1) * self.tile()) as u32
    }

    /// The grid (blocks of [`BLOCK`] threads) of a launch of the portable kernel over
    /// `nseq` subjects: a group of lanes a subject.
    pub fn grid(&self, nseq: usize) -> u32 {
        self.grid_of(KernelKind::Portable, nseq)
    }

    /// The grid of a launch of `kind` over `nseq` subjects: a group of lanes a subject
    /// (portable) or a pair of subjects (DPX).
    pub fn grid_of(&self, kind: KernelKind, nseq: usize) -> u32 {
        blocks(nseq.div_ceil(kind.subjects_per_group()), self.group)
    }

    /// The 16-bit kernel's saturation threshold: 32767 minus the largest profile score.
    /// Until some H reaches it no 16-bit value can have wrapped (an H below it plus any
    /// score stays ≤ 32767), so a subject whose 16-bit best is below it has its exact
    /// score, and one whose best reached it is aligned again in 32 bits.
    pub fn sat(&self) -> i32 {
        let top = self.scores.iter().copied().max().unwrap_or(0).max(0) as i32;
        i16::MAX as i32 - top
    }
}

mod pair;
#[cfg(test)]
mod tests;
mod twin;

pub use pair::{
    pair_args, pair_kernel, pair_queries, plan_runs, PairAt, PairProfile, HIGH_STARTS, LOW_STARTS, MAX_PAIRED,
    PAIR_ENTRY, PAIR_GAIN, PAIR_TILE,
};
pub use twin::{align, align16, align_pair16, packed};
use twin::{dpx_score, TwinRows};

/// One argument of a `sw_search` / `sw_search_dpx` launch, by role: chariot's tasks
/// ([`crate::search`]) and the hand pipeline ([`crate::hand`]) map the roles to their
/// own buffers, so both pass the same arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The packed chunk.
    Chunk,
    /// All query profiles, one after another.
    Profiles,
    /// The per-residue scratch row (`int2`).
    Scratch,
    /// The chunk's scores.
    Scores,
    /// An `unsigned int`.
    U32(u32),
    /// An `int`.
    I32(i32),
    /// An `unsigned long long`.
    U64(u64),
}

/// The arguments of the launch of query profile `p` (at `prof_off` in the profiles,
/// query `q`) over a packed chunk of `nseq` subjects and `residues` residues whose
/// residues start at `res_off`, in the order of [`kernel`]'s parameters (both kernels
/// take the same).
pub fn args(
    p: &Profile,
    q: usize,
    prof_off: usize,
    nseq: usize,
    res_off: usize,
    residues: u64,
    gaps: Gaps,
) -> [Role; 16] {
    [
        Role::Chunk,
        Role::U32(nseq as u32),
        Role::U32(res_off as u32),
        Role::Profiles,
        Role::U32(prof_off as u32),
        Role::U32(p.mpad as u32),
        Role::U32(p.group),
        Role::I32(gaps.open + gaps.extend),
        Role::I32(gaps.extend),
        Role::Scratch,
        Role::Scores,
        Role::U32((q * nseq) as u32),
        Role::U32(p.tile() as u32),
        Role::U64(p.m as u64 * residues),
        Role::I32(p.sat()),
        Role::U32(p.strip as u32),
    ]
}

/// The kernel `kind` with its parameters, CPU twin and simulated cost (`cells` at
/// `sim_gcups` G cells/s).
pub fn kernel(kind: KernelKind, profiles: Arc<Vec<Profile>>, prof_offsets: Vec<usize>, sim_gcups: f64) -> Kernel {
    kernel_counted(kind, profiles, prof_offsets, sim_gcups).0
}

/// [`kernel`], and the count of (query, subject) pairs its CPU twin aligned again in 32
/// bits (the DPX twin's re-passes; always 0 for the portable kernel).
pub fn kernel_counted(
    kind: KernelKind,
    profiles: Arc<Vec<Profile>>,
    prof_offsets: Vec<usize>,
    sim_gcups: f64,
) -> (Kernel, Arc<AtomicU64>) {
    let repassed = Arc::new(AtomicU64::new(0));
    let count = repassed.clone();
    let k = Kernel::new(kind.entry(), kind.source())
        .params([
            Param::Buffer, // chunk
            Param::U32,    // nseq
            Param::U32,    // res_off
            Param::Buffer, // profile
            Param::U32,    // prof_off
            Param::U32,    // mpad
            Param::U32,    // group
            Param::I32,    // gap_oe
            Param::I32,    // gap_e
            Param::Buffer, // scratch
            Param::Buffer, // scores
            Param::U32,    // score_off
            Param::U32,    // qt
            Param::U64,    // cells (cost model only)
            Param::I32,    // sat (the DPX kernel's)
            Param::U32,    // strip
        ])
        .cpu_twin(move |a| {
            let (nseq, res_off, prof_off) = (a.u32(1)? as usize, a.u32(2)? as usize, a.u32(4)? as usize);
            let (goe, ge, score_off) = (a.i32(7)?, a.i32(8)?, a.u32(11)? as usize);
            let sat = a.i32(14)?;
            let q = prof_offsets.iter().position(|&o| o == prof_off).ok_or("unknown profile offset")?;
            let p = &profiles[q];
            if p.mpad != a.u32(5)? as usize || p.group != a.u32(6)? || sat != p.sat() || p.strip != a.u32(15)? as usize
            {
                return Err("profile arguments do not match the registered profile".into());
            }
            let gaps = Gaps { open: goe - ge, extend: ge };
            let chunk = a.buffer::<u8>(0)?;
            let subject = |k: usize| chunk_subject(chunk, res_off, k).ok_or("a subject outside the chunk");
            let mut out = Vec::with_capacity(nseq);
            let mut rows = TwinRows::default();
            match kind {
                KernelKind::Portable => {
                    for k in 0..nseq {
                        out.push(align(p, subject(k)?, gaps, &mut rows.h, &mut rows.f));
                    }
                }
                KernelKind::Dpx => {
                    // Subjects 2k and 2k + 1 share a lane group: both run over the
                    // longer one's columns (align16 gives each half of align_pair16).
                    for k in (0..nseq).step_by(2) {
                        let pair = k..nseq.min(k + 2);
                        let mut cols = 0;
                        for s in pair.clone() {
                            cols = cols.max(subject(s)?.len());
                        }
                        for s in pair {
                            out.push(dpx_score(p, subject(s)?, cols, gaps, sat, &mut rows, &count));
                        }
                    }
                }
            }
            a.buffer_mut::<i32>(10)?[score_off..score_off + nseq].copy_from_slice(&out);
            Ok(())
        })
        .sim_cost(move |_, s| Duration::from_secs_f64(s.u64(13).unwrap_or(0) as f64 / (sim_gcups * 1e9)));
    (k, repassed)
}

/// Blocks of [`BLOCK`] threads for `groups` lane groups of `group` lanes (at least one).
pub(crate) fn blocks(groups: usize, group: u32) -> u32 {
    ((groups as u64 * group as u64).div_ceil(BLOCK as u64)).max(1) as u32
}

/// Subject `k` of a packed chunk (u32 offsets, the residues from `res_off`), as the
/// kernels find it; `None` where the chunk is too short for it.
pub(crate) fn chunk_subject(chunk: &[u8], res_off: usize, k: usize) -> Option<&[u8]> {
    let off = |k: usize| Some(u32::from_le_bytes(chunk.get(k * 4..k * 4 + 4)?.try_into().ok()?) as usize);
    chunk.get(res_off + off(k)?..res_off + off(k + 1)?)
}
