//! The Smith-Waterman kernels (`kernels/sw.cu`): query profiles, launch shape, and the
//! CPU twins that the sim backend runs in their place (the same strip recurrence, written
//! for the CPU, giving the same scores).
//!
//! Two kernels ([`KernelKind`]), chosen by `--kernel` ([`KernelChoice`]; `auto` by
//! default: DPX where every GPU is compute capability 9.0 or later, and on the sim
//! backend, which models an H100):
//!
//! * `portable` (`sw_search`): 32-bit scores, one subject per lane group;
//! * `dpx` (`sw_search_dpx`, issue 17): 16-bit scores packed two per 32-bit register,
//!   two subjects per lane group, updated by Hopper's DPX instructions
//!   (`__viaddmax_s16x2`, `__vimax_s16x2_relu`); a subject whose 16-bit score reached
//!   [`Profile::sat`] (32767 minus the largest profile score: below it no value can
//!   have wrapped) is aligned again by the 32-bit pass in the same launch. Its CPU twin
//!   ([`align_pair16`]) emulates the 16-bit arithmetic, wrap-around included, so that the
//!   sim backend takes the same path, re-pass included, and still gives exact scores.

use crate::matrix::{Matrix, MAX_LETTERS};
use chariot::{Kernel, Param};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// CUDA C source.
pub const SOURCE: &str = include_str!("../../../kernels/sw.cu");
/// Query rows per lane strip (`SW_R`).
pub const STRIP: usize = 16;
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
const PAD: i8 = -64;
/// Minus infinity for E and F, far from overflow.
const NEG: i32 = -(1 << 29);

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
    /// Lanes per subject (power of two, ≤ 32).
    pub group: u32,
    /// Padded query length (a multiple of group·STRIP).
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
        let strips = m.div_ceil(STRIP);
        let group = strips.next_power_of_two().min(32) as u32;
        let mpad = m.next_multiple_of(group as usize * STRIP);
        let mut scores = vec![PAD; LETTERS * mpad];
        for a in 0..matrix.letters.len() {
            for (i, &q) in query.iter().enumerate() {
                scores[a * mpad + i] = matrix.scores[q as usize][a];
            }
        }
        Ok(Profile { group, mpad, m, scores })
    }

    /// Rows of a shared-memory profile tile.
    pub fn tile(&self) -> usize {
        self.mpad.min(TILE)
    }

    /// Dynamic shared memory of a launch, bytes.
    pub fn shared_bytes(&self) -> u32 {
        (LETTERS * self.tile()) as u32
    }

    /// The grid (blocks of [`BLOCK`] threads) of a launch of the portable kernel over
    /// `nseq` subjects: a group of lanes a subject.
    pub fn grid(&self, nseq: usize) -> u32 {
        self.grid_of(KernelKind::Portable, nseq)
    }

    /// The grid of a launch of `kind` over `nseq` subjects: a group of lanes a subject
    /// (portable) or a pair of subjects (DPX).
    pub fn grid_of(&self, kind: KernelKind, nseq: usize) -> u32 {
        let groups = nseq.div_ceil(kind.subjects_per_group()) as u64;
        ((groups * self.group as u64).div_ceil(BLOCK as u64)).max(1) as u32
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

/// Score of one subject against a profile, by strips of [`STRIP`] rows with the strip
/// above's bottom row kept in `row_h`/`row_f` (the twin's inner loop; also the CPU
/// search's). `subject` holds matrix codes.
pub fn align(p: &Profile, subject: &[u8], gaps: Gaps, row_h: &mut Vec<i32>, row_f: &mut Vec<i32>) -> i32 {
    let n = subject.len();
    let (goe, ge) = (gaps.open + gaps.extend, gaps.extend);
    row_h.clear();
    row_h.resize(n, 0);
    row_f.clear();
    row_f.resize(n, NEG);
    let mut best = 0;
    for r0 in (0..p.mpad).step_by(STRIP) {
        let mut h = [0i32; STRIP];
        let mut e = [NEG; STRIP];
        let mut diag = 0;
        for ((&c, th), tf) in subject.iter().zip(row_h.iter_mut()).zip(row_f.iter_mut()) {
            let base = c as usize * p.mpad + r0;
            let col: &[i8; STRIP] = p.scores[base..base + STRIP].try_into().expect("a strip");
            let (top_h, mut f) = (*th, *tf);
            let (mut hup, mut hd) = (top_h, diag);
            for r in 0..STRIP {
                let en = (e[r] - ge).max(h[r] - goe);
                f = (f - ge).max(hup - goe);
                let hn = (hd + col[r] as i32).max(0).max(en).max(f);
                hd = h[r];
                h[r] = hn;
                e[r] = en;
                hup = hn;
                best = best.max(hn);
            }
            diag = top_h;
            *th = hup;
            *tf = f;
        }
    }
    best
}

/// Packed 16-bit operations of `sw_search_dpx`, on words holding two `i16` (low
/// halfword: a pair's first subject, high: its second), wrapping as the GPU's do: the
/// twin runs the kernel's own sequence of them.
pub mod packed {
    /// The two halfwords, low first.
    pub fn halves(x: u32) -> [i16; 2] {
        [x as u16 as i16, (x >> 16) as u16 as i16]
    }
    /// Two halfwords, low first, as a word.
    pub fn pack(h: [i16; 2]) -> u32 {
        h[0] as u16 as u32 | (h[1] as u16 as u32) << 16
    }
    /// `v` in both halfwords (`sw_splat2`).
    pub fn splat(v: i32) -> u32 {
        pack([v as i16; 2])
    }
    /// `__viaddmax_s16x2`: max(a + b, c) per halfword, the sum wrapping.
    pub fn addmax(a: u32, b: u32, c: u32) -> u32 {
        let (a, b, c) = (halves(a), halves(b), halves(c));
        pack([a[0].wrapping_add(b[0]).max(c[0]), a[1].wrapping_add(b[1]).max(c[1])])
    }
    /// `__vimax_s16x2_relu`: max(a, b, 0) per halfword.
    pub fn max_relu(a: u32, b: u32) -> u32 {
        let (a, b) = (halves(a), halves(b));
        pack([a[0].max(b[0]).max(0), a[1].max(b[1]).max(0)])
    }
    /// PTX `prmt.b32 d, a, b, sel` (generic form): byte i of d is byte `sel_i & 7` of
    /// {b, a}, or that byte's sign replicated where `sel_i & 8`.
    pub fn prmt(a: u32, b: u32, sel: u32) -> u32 {
        let src = (b as u64) << 32 | a as u64;
        (0..4).fold(0u32, |d, i| {
            let nib = (sel >> (4 * i)) & 0xF;
            let byte = (src >> (8 * (nib & 7))) as u8;
            let byte = if nib & 8 == 0 {
                byte
            } else if byte & 0x80 != 0 {
                0xFF
            } else {
                0
            };
            d | (byte as u32) << (8 * i)
        })
    }
}

/// The profile bytes of rows `r0..r0 + 16` for subject letter `c`, as the kernel's
/// 16-byte load gives them (four little-endian words).
fn profile_words(p: &Profile, c: u8, r0: usize) -> [u32; 4] {
    let base = c as usize * p.mpad + r0;
    let b = &p.scores[base..base + STRIP];
    std::array::from_fn(|k| {
        u32::from_le_bytes([b[4 * k] as u8, b[4 * k + 1] as u8, b[4 * k + 2] as u8, b[4 * k + 3] as u8])
    })
}

/// Four padded profile bytes (`SW_PAD4`).
const PAD4: u32 = u32::from_ne_bytes([PAD as u8; 4]);

/// What `sw_search_dpx` computes for the pair of subjects `a` and `b`, before any
/// 32-bit re-pass: both 16-bit scores packed (low: `a`), by the kernel's sequence of
/// packed operations ([`packed`]), wrap-around included, strip after strip with the
/// strip above's bottom row (packed H, F) in `row`. A half whose score is below
/// [`Profile::sat`] is the exact score; at or above it the subject needs the 32-bit pass.
pub fn align_pair16(p: &Profile, a: &[u8], b: &[u8], gaps: Gaps, row: &mut Vec<(u32, u32)>) -> u32 {
    use packed::{addmax, max_relu, prmt, splat};
    const NEG2: u32 = 0x8000_8000;
    let np = a.len().max(b.len());
    let (ngoe2, nge2) = (splat(-(gaps.open + gaps.extend)), splat(-gaps.extend));
    row.clear();
    row.resize(np, (0, ngoe2));
    let mut best = 0u32;
    for r0 in (0..p.mpad).step_by(STRIP) {
        let (mut h, mut hg, mut e) = ([0u32; STRIP], [ngoe2; STRIP], [ngoe2; STRIP]);
        let mut diag = 0u32;
        for (j, cell) in row.iter_mut().enumerate() {
            let (in_h, in_f) = *cell;
            let wa = a.get(j).map_or([PAD4; 4], |&c| profile_words(p, c, r0));
            let wb = b.get(j).map_or([PAD4; 4], |&c| profile_words(p, c, r0));
            let (mut f, mut hd) = (in_f, diag);
            let mut hgu = addmax(in_h, ngoe2, NEG2);
            for r in 0..STRIP {
                let w = prmt(wa[r >> 2], wb[r >> 2], 0xC480 + 0x1111 * (r & 3) as u32);
                let en = addmax(e[r], nge2, hg[r]);
                f = addmax(f, nge2, hgu);
                let hn = max_relu(addmax(hd, w, en), f);
                hd = h[r];
                h[r] = hn;
                e[r] = en;
                hgu = addmax(hn, ngoe2, NEG2);
                hg[r] = hgu;
                best = max_relu(best, hn);
            }
            diag = in_h;
            *cell = (h[STRIP - 1], f);
        }
    }
    best
}

/// One subject's half of [`align_pair16`], computed alone with scalar `i16` operations
/// that wrap as the packed ones do (the same values, faster on the CPU): `subject` over
/// `cols` columns (≥ its length; the columns past its end score as padding, as the
/// shorter subject of a pair does in the kernel). This is the DPX twin's inner loop.
pub fn align16(p: &Profile, subject: &[u8], cols: usize, gaps: Gaps, row: &mut Vec<(i16, i16)>) -> i16 {
    let (ngoe, nge) = (-(gaps.open + gaps.extend) as i16, -gaps.extend as i16);
    let addmax = |a: i16, b: i16, c: i16| a.wrapping_add(b).max(c);
    row.clear();
    row.resize(cols.max(subject.len()), (0, ngoe));
    let pad = [PAD; STRIP];
    let mut best = 0i16;
    for r0 in (0..p.mpad).step_by(STRIP) {
        let (mut h, mut hg, mut e) = ([0i16; STRIP], [ngoe; STRIP], [ngoe; STRIP]);
        let mut diag = 0i16;
        for (j, cell) in row.iter_mut().enumerate() {
            let (in_h, in_f) = *cell;
            let col: &[i8; STRIP] = match subject.get(j) {
                Some(&c) => p.scores[c as usize * p.mpad + r0..][..STRIP].try_into().expect("a strip"),
                None => &pad,
            };
            let (mut f, mut hd) = (in_f, diag);
            let mut hgu = addmax(in_h, ngoe, i16::MIN);
            for r in 0..STRIP {
                let en = addmax(e[r], nge, hg[r]);
                f = addmax(f, nge, hgu);
                let hn = addmax(hd, col[r] as i16, en).max(f).max(0);
                hd = h[r];
                h[r] = hn;
                e[r] = en;
                hgu = addmax(hn, ngoe, i16::MIN);
                hg[r] = hgu;
                best = best.max(hn);
            }
            diag = in_h;
            *cell = (h[STRIP - 1], f);
        }
    }
    best
}

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
) -> [Role; 15] {
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
        ])
        .cpu_twin(move |a| {
            let (nseq, res_off, prof_off) = (a.u32(1)? as usize, a.u32(2)? as usize, a.u32(4)? as usize);
            let (goe, ge, score_off) = (a.i32(7)?, a.i32(8)?, a.u32(11)? as usize);
            let sat = a.i32(14)?;
            let q = prof_offsets.iter().position(|&o| o == prof_off).ok_or("unknown profile offset")?;
            let p = &profiles[q];
            if p.mpad != a.u32(5)? as usize || p.group != a.u32(6)? || sat != p.sat() {
                return Err("profile arguments do not match the registered profile".into());
            }
            let gaps = Gaps { open: goe - ge, extend: ge };
            let chunk = a.buffer::<u8>(0)?;
            let off = |k: usize| u32::from_le_bytes(chunk[k * 4..k * 4 + 4].try_into().unwrap()) as usize;
            let subject = |k: usize| &chunk[res_off + off(k)..res_off + off(k + 1)];
            let mut out = Vec::with_capacity(nseq);
            let (mut rh, mut rf) = (Vec::new(), Vec::new());
            match kind {
                KernelKind::Portable => {
                    for k in 0..nseq {
                        out.push(align(p, subject(k), gaps, &mut rh, &mut rf));
                    }
                }
                KernelKind::Dpx => {
                    // Subjects 2k and 2k + 1 share a lane group: both run over the
                    // longer one's columns (align16 gives each half of align_pair16).
                    let mut row = Vec::new();
                    for k in (0..nseq).step_by(2) {
                        let pair = k..nseq.min(k + 2);
                        let cols = pair.clone().map(|s| subject(s).len()).max().unwrap_or(0);
                        for s in pair {
                            let score = align16(p, subject(s), cols, gaps, &mut row) as i32;
                            out.push(if score < sat {
                                score
                            } else {
                                count.fetch_add(1, Ordering::Relaxed);
                                align(p, subject(s), gaps, &mut rh, &mut rf)
                            });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_shape() {
        let m = Matrix::blosum62();
        let p = Profile::new(&m.encode(b"ARND").unwrap(), &m).unwrap();
        assert_eq!((p.group, p.mpad), (1, 16));
        assert_eq!(p.scores[4], PAD);
        assert_eq!(p.scores[1], -1, "query R against subject A");
        let p = Profile::new(&[0u8; 63], &m).unwrap();
        assert_eq!((p.group, p.mpad), (4, 64));
        let p = Profile::new(&vec![0u8; 511], &m).unwrap();
        assert_eq!((p.group, p.mpad, p.tile()), (32, 512, 512));
        assert_eq!(p.grid(8192), 1024);
        let p = Profile::new(&vec![0u8; 5000], &m).unwrap();
        assert_eq!((p.group, p.mpad, p.tile(), p.shared_bytes()), (32, 5120, 1024, 32768));
        assert!(Profile::new(&[], &m).is_err());
        assert!(Profile::new(&vec![0u8; MAX_QUERY + 1], &m).unwrap_err().contains("longer"));
    }

    #[test]
    fn align_small_cases() {
        let m = Matrix::blosum62();
        let gaps = Gaps { open: 11, extend: 1 };
        let p = Profile::new(&m.encode(b"HEAGAWGHEE").unwrap(), &m).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        assert_eq!(align(&p, &[], gaps, &mut a, &mut b), 0);
        assert_eq!(align(&p, &m.encode(b"W").unwrap(), gaps, &mut a, &mut b), 11);
        let q = Profile::new(&m.encode(b"WWWWW").unwrap(), &m).unwrap();
        assert_eq!(align(&q, &m.encode(b"WWWWW").unwrap(), gaps, &mut a, &mut b), 55);
        // WW, a gap of 3 (11 + 3) in the query, WW: 44 - 14.
        assert_eq!(align(&q, &m.encode(b"WWAAAWW").unwrap(), gaps, &mut a, &mut b), 30);
    }

    #[test]
    fn kernel_choice_and_arch() {
        assert_eq!(KernelChoice::parse("auto"), Ok(KernelChoice::Auto));
        assert_eq!(KernelChoice::parse("dpx"), Ok(KernelChoice::Dpx));
        assert!(KernelChoice::parse("DPX").unwrap_err().contains("auto, portable or dpx"));
        assert!(has_dpx("sm_90") && has_dpx("sm_90a") && has_dpx("sm_100") && has_dpx("sm_120") && has_dpx("sim"));
        assert!(!has_dpx("sm_80") && !has_dpx("sm_89") && !has_dpx("") && !has_dpx("gfx90a"));
        assert_eq!(KernelChoice::Auto.resolve(&["sm_90", "sm_90"]), KernelKind::Dpx);
        assert_eq!(KernelChoice::Auto.resolve(&["sm_90", "sm_86"]), KernelKind::Portable);
        assert_eq!(KernelChoice::Auto.resolve::<&str>(&[]), KernelKind::Portable);
        assert_eq!(KernelChoice::Portable.resolve(&["sm_90"]), KernelKind::Portable);
        assert_eq!(KernelChoice::Dpx.resolve(&["sm_80"]), KernelKind::Dpx);
        let gaps = |open, extend| Gaps { open, extend };
        assert_eq!(KernelKind::Dpx.for_gaps(gaps(1000, 1000)), KernelKind::Dpx);
        assert_eq!(KernelKind::Dpx.for_gaps(gaps(16_000, 1000)), KernelKind::Portable);
        assert_eq!(KernelKind::Dpx.for_gaps(gaps(-1, 1)), KernelKind::Portable);
        assert_eq!(KernelKind::Portable.for_gaps(gaps(11, 1)), KernelKind::Portable);
        for k in [KernelKind::Portable, KernelKind::Dpx] {
            assert!(k.source().starts_with(&format!("#define SW_ONLY_{}\n", k.name().to_uppercase())));
            assert!(k
                .source()
                .contains(&format!("extern \"C\" __global__ void __launch_bounds__(256) {}(", k.entry())));
        }
        let m = Matrix::blosum62();
        let p = Profile::new(&vec![0u8; 511], &m).unwrap();
        assert_eq!((p.grid_of(KernelKind::Portable, 8192), p.grid_of(KernelKind::Dpx, 8192)), (1024, 512));
        assert_eq!(p.grid_of(KernelKind::Dpx, 3), 1);
        assert_eq!(p.sat(), 32767 - 4, "A's best score in BLOSUM62");
        assert_eq!(Profile::new(&m.encode(b"WA").unwrap(), &m).unwrap().sat(), 32767 - 11);
    }

    /// The byte permute's selectors put signed byte k of a and of b, sign-extended, in
    /// the low and high halfwords.
    #[test]
    fn prmt_selectors_sign_extend() {
        let (a, b) = (0x80_7F_FF_01u32, 0xC0_00_05_FEu32);
        for k in 0..4 {
            let want = packed::pack([(a >> (8 * k)) as u8 as i8 as i16, (b >> (8 * k)) as u8 as i8 as i16]);
            assert_eq!(packed::prmt(a, b, 0xC480 + 0x1111 * k), want, "k = {k}");
        }
        assert_eq!(packed::prmt(0x0302_0100, 0x0706_0504, 0x7531), 0x0705_0301);
        assert_eq!(
            packed::addmax(packed::pack([32767, -5]), packed::splat(1), packed::pack([0, 0])),
            packed::pack([0, 0])
        );
        assert_eq!(packed::max_relu(packed::pack([-3, 7]), packed::pack([-9, 2])), packed::pack([0, 7]));
    }

    fn random_codes(n: usize, letters: u8, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % letters as u64) as u8
            })
            .collect()
    }

    /// The packed pair computation (the kernel's sequence of DPX operations) gives each
    /// subject's [`align16`], and below the threshold that is the exact 32-bit score,
    /// for pairs of equal and unequal lengths, empty subjects and several gap costs.
    #[test]
    fn packed_pairs_equal_scalar_16_bit_and_exact_scores() {
        let m = Matrix::blosum62();
        let mut row = Vec::new();
        let (mut r16, mut rh, mut rf) = (Vec::new(), Vec::new(), Vec::new());
        for (qi, qlen) in [1usize, 5, 16, 17, 40, 130].into_iter().enumerate() {
            let p = Profile::new(&random_codes(qlen, 24, qi as u64 + 1), &m).unwrap();
            for gaps in [Gaps { open: 11, extend: 1 }, Gaps { open: 0, extend: 0 }, Gaps { open: 5, extend: 3 }] {
                for (la, lb) in [(0, 0), (1, 0), (7, 7), (50, 3), (3, 50), (120, 119), (64, 0)] {
                    let a = random_codes(la, 24, (la * 31 + lb + qlen) as u64);
                    let b = random_codes(lb, 24, (lb * 17 + la + 2 * qlen) as u64);
                    let cols = la.max(lb);
                    let got = packed::halves(align_pair16(&p, &a, &b, gaps, &mut row));
                    let want = [align16(&p, &a, cols, gaps, &mut r16), align16(&p, &b, cols, gaps, &mut r16)];
                    assert_eq!(got, want, "q {qlen}, {la} x {lb}, {gaps:?}");
                    assert_eq!(want[0] as i32, align(&p, &a, gaps, &mut rh, &mut rf), "q {qlen}, a {la}");
                    assert_eq!(want[1] as i32, align(&p, &b, gaps, &mut rh, &mut rf), "q {qlen}, b {lb}");
                }
            }
        }
    }

    /// With a matrix whose best score is 127, the threshold is 32640: 257 W against 257
    /// W (32639) is exact in 16 bits; 258 (32766) and 300 (38100, which wraps) reach
    /// it, and the packed pair marks just that subject, whatever its partner does.
    #[test]
    fn sixteen_bit_saturation_is_marked_at_the_threshold() {
        let m = Matrix::parse("big", "   A  W\nA  1 -1\nW -1 127\n").unwrap();
        let gaps = Gaps { open: 11, extend: 1 };
        let (mut row, mut r16, mut rh, mut rf) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (len, exact) in [(257usize, 32639), (258, 32766), (300, 38100)] {
            let w = vec![1u8; len];
            let p = Profile::new(&w, &m).unwrap();
            assert_eq!(p.sat(), 32640);
            assert_eq!(align(&p, &w, gaps, &mut rh, &mut rf), exact);
            let s16 = align16(&p, &w, len, gaps, &mut r16) as i32;
            assert_eq!(s16 >= p.sat(), exact >= p.sat(), "length {len}: 16-bit {s16}");
            if exact < p.sat() {
                assert_eq!(s16, exact);
            }
            let other = vec![0u8; len / 2];
            let pair = packed::halves(align_pair16(&p, &w, &other, gaps, &mut row));
            assert_eq!(pair[0] as i32, s16);
            assert_eq!(pair[1] as i32, align(&p, &other, gaps, &mut rh, &mut rf));
        }
    }

    /// The DPX kernel's CPU twin on a packed chunk of an odd number of subjects, two of
    /// them past the threshold: every score exact, and exactly those two re-passed.
    #[test]
    fn dpx_twin_repasses_just_the_saturated_subjects() {
        use chariot::{LaunchShape, TwinArg};
        let m = Matrix::parse("big", "   A  W\nA  1 -1\nW -1 127\n").unwrap();
        let gaps = Gaps { open: 11, extend: 1 };
        let query = vec![1u8; 300];
        let profiles = Arc::new(vec![Profile::new(&query, &m).unwrap()]);
        let p = &profiles[0];
        // Longest first, as packed chunks are.
        let subjects: Vec<Vec<u8>> =
            vec![vec![1; 320], vec![1; 290], random_codes(200, 2, 3), vec![1; 257], vec![0; 10]];
        let nseq = subjects.len();
        let res_off = ((nseq + 1) * 4).next_multiple_of(16);
        let mut chunk = vec![0u8; res_off];
        let mut off = 0u32;
        for (k, s) in subjects.iter().enumerate() {
            chunk[k * 4..k * 4 + 4].copy_from_slice(&off.to_le_bytes());
            chunk.extend_from_slice(s);
            off += s.len() as u32;
        }
        chunk[nseq * 4..nseq * 4 + 4].copy_from_slice(&off.to_le_bytes());
        let (mut rh, mut rf) = (Vec::new(), Vec::new());
        let want: Vec<i32> = subjects.iter().map(|s| align(p, s, gaps, &mut rh, &mut rf)).collect();
        let over = want.iter().filter(|&&x| x >= p.sat()).count();
        assert_eq!(over, 2, "{want:?}");
        for kind in [KernelKind::Portable, KernelKind::Dpx] {
            let (k, repassed) = kernel_counted(kind, profiles.clone(), vec![0], 300.0);
            // Buffers aligned for the twin's i32 and int2 views.
            let mut store =
                [vec![0u8; chunk.len() + 16], vec![0u8; p.scores.len() + 16], vec![0u8; 1040], vec![0u8; 80]];
            let mut bufs: Vec<&mut [u8]> = store.iter_mut().map(|v| aligned(v)).collect();
            bufs[0][..chunk.len()].copy_from_slice(&chunk);
            for (d, &x) in bufs[1].iter_mut().zip(&p.scores) {
                *d = x as u8;
            }
            let args: Vec<TwinArg> = args(p, 0, 0, nseq, res_off, off as u64, gaps)
                .iter()
                .map(|r| match *r {
                    Role::Chunk => TwinArg::Buffer(0),
                    Role::Profiles => TwinArg::Buffer(1),
                    Role::Scratch => TwinArg::Buffer(2),
                    Role::Scores => TwinArg::Buffer(3),
                    Role::U32(v) => TwinArg::U32(v),
                    Role::I32(v) => TwinArg::I32(v),
                    Role::U64(v) => TwinArg::U64(v),
                })
                .collect();
            let shape =
                LaunchShape { grid: p.grid_of(kind, nseq).into(), block: BLOCK.into(), shared_bytes: p.shared_bytes() };
            k.run_cpu_twin(shape, &args, &mut bufs).unwrap();
            let got: Vec<i32> =
                bufs[3].chunks(4).take(nseq).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect();
            assert_eq!(got, want, "{kind:?}");
            let expect = if kind == KernelKind::Dpx { 2 } else { 0 };
            assert_eq!(repassed.load(Ordering::Relaxed), expect, "{kind:?}");
        }
    }

    /// The part of `v` from its first 16-byte-aligned byte, less 16 bytes.
    fn aligned(v: &mut [u8]) -> &mut [u8] {
        let off = v.as_ptr().align_offset(16);
        let n = v.len() - 16;
        &mut v[off..off + n]
    }
}
