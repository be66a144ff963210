//! The Smith-Waterman kernel (`kernels/sw.cu`): query profiles, launch shape, and the
//! CPU twin that the sim backend runs in its place (the same strip recurrence, written
//! for the CPU, giving the same scores).

use crate::matrix::{Matrix, MAX_LETTERS};
use chariot::{Kernel, Param};
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

    /// Threads a launch over `nseq` subjects needs, and its grid.
    pub fn grid(&self, nseq: usize) -> u32 {
        ((nseq as u64 * self.group as u64).div_ceil(BLOCK as u64)).max(1) as u32
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

/// One argument of a `sw_search` launch, by role: chariot's tasks ([`crate::search`])
/// and the hand pipeline ([`crate::hand`]) map the roles to their own buffers, so both
/// pass the same arguments.
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
/// residues start at `res_off`, in the order of [`kernel`]'s parameters.
pub fn args(
    p: &Profile,
    q: usize,
    prof_off: usize,
    nseq: usize,
    res_off: usize,
    residues: u64,
    gaps: Gaps,
) -> [Role; 14] {
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
    ]
}

/// The kernel with its parameters, CPU twin and simulated cost (`cells` at
/// `sim_gcups` G cells/s).
pub fn kernel(profiles: std::sync::Arc<Vec<Profile>>, prof_offsets: Vec<usize>, sim_gcups: f64) -> Kernel {
    Kernel::new("sw_search", SOURCE)
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
        ])
        .cpu_twin(move |a| {
            let (nseq, res_off, prof_off) = (a.u32(1)? as usize, a.u32(2)? as usize, a.u32(4)? as usize);
            let (goe, ge, score_off) = (a.i32(7)?, a.i32(8)?, a.u32(11)? as usize);
            let q = prof_offsets.iter().position(|&o| o == prof_off).ok_or("unknown profile offset")?;
            let p = &profiles[q];
            if p.mpad != a.u32(5)? as usize || p.group != a.u32(6)? {
                return Err("profile arguments do not match the registered profile".into());
            }
            let gaps = Gaps { open: goe - ge, extend: ge };
            let chunk = a.buffer::<u8>(0)?;
            let off = |k: usize| u32::from_le_bytes(chunk[k * 4..k * 4 + 4].try_into().unwrap()) as usize;
            let mut out = Vec::with_capacity(nseq);
            let (mut rh, mut rf) = (Vec::new(), Vec::new());
            for k in 0..nseq {
                let subject = &chunk[res_off + off(k)..res_off + off(k + 1)];
                out.push(align(p, subject, gaps, &mut rh, &mut rf));
            }
            a.buffer_mut::<i32>(10)?[score_off..score_off + nseq].copy_from_slice(&out);
            Ok(())
        })
        .sim_cost(move |_, s| Duration::from_secs_f64(s.u64(13).unwrap_or(0) as f64 / (sim_gcups * 1e9)))
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
}
