//! The CPU twins' recurrences: Gotoh's in 32 bits (`align`), and the DPX kernel's
//! 16-bit arithmetic, one subject (`align16`) or a packed pair as the kernel runs it
//! (`align_pair16`).

use super::{Gaps, Profile, MAX_STRIP, NEG, PAD};
use std::sync::atomic::{AtomicU64, Ordering};

/// Score of one subject against a profile, by strips of [`Profile::strip`] rows with the strip
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
    for r0 in (0..p.mpad).step_by(p.strip) {
        let mut h = [0i32; MAX_STRIP];
        let mut e = [NEG; MAX_STRIP];
        let mut diag = 0;
        for ((&c, th), tf) in subject.iter().zip(row_h.iter_mut()).zip(row_f.iter_mut()) {
            let base = c as usize * p.mpad + r0;
            let col = &p.scores[base..base + p.strip];
            let (top_h, mut f) = (*th, *tf);
            let (mut hup, mut hd) = (top_h, diag);
            for r in 0..p.strip {
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

/// The profile bytes of rows `r0..r0 + p.strip` for subject letter `c`, as the kernel's
/// 16-byte loads give them (little-endian words; the rest [`PAD4`]).
fn profile_words(p: &Profile, c: u8, r0: usize) -> [u32; MAX_STRIP / 4] {
    let base = c as usize * p.mpad + r0;
    let b = &p.scores[base..base + p.strip];
    std::array::from_fn(|k| match b.get(4 * k..4 * k + 4) {
        Some(w) => u32::from_le_bytes([w[0] as u8, w[1] as u8, w[2] as u8, w[3] as u8]),
        None => PAD4,
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
    for r0 in (0..p.mpad).step_by(p.strip) {
        // e[r]: E of row r's next cell, updated as each H is computed (as the kernel does with
        // 32-row strips; with 16-row ones it computes E first: the same values).
        let (mut h, mut e) = ([0u32; MAX_STRIP], [ngoe2; MAX_STRIP]);
        let mut diag = 0u32;
        for (j, cell) in row.iter_mut().enumerate() {
            let (in_h, in_f) = *cell;
            let wa = a.get(j).map_or([PAD4; MAX_STRIP / 4], |&c| profile_words(p, c, r0));
            let wb = b.get(j).map_or([PAD4; MAX_STRIP / 4], |&c| profile_words(p, c, r0));
            let (mut f, mut hd) = (in_f, diag);
            let mut hgu = addmax(in_h, ngoe2, NEG2);
            for r in 0..p.strip {
                let w = prmt(wa[r >> 2], wb[r >> 2], 0xC480 + 0x1111 * (r & 3) as u32);
                f = addmax(f, nge2, hgu);
                let hn = max_relu(addmax(hd, w, e[r]), f);
                hd = h[r];
                h[r] = hn;
                hgu = addmax(hn, ngoe2, NEG2);
                e[r] = addmax(e[r], nge2, hgu);
                best = max_relu(best, hn);
            }
            diag = in_h;
            *cell = (h[p.strip - 1], f);
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
    let pad = [PAD; MAX_STRIP];
    let mut best = 0i16;
    for r0 in (0..p.mpad).step_by(p.strip) {
        let (mut h, mut e) = ([0i16; MAX_STRIP], [ngoe; MAX_STRIP]);
        let mut diag = 0i16;
        for (j, cell) in row.iter_mut().enumerate() {
            let (in_h, in_f) = *cell;
            let col = match subject.get(j) {
                Some(&c) => &p.scores[c as usize * p.mpad + r0..][..p.strip],
                None => &pad[..p.strip],
            };
            let (mut f, mut hd) = (in_f, diag);
            let mut hgu = addmax(in_h, ngoe, i16::MIN);
            for r in 0..p.strip {
                f = addmax(f, nge, hgu);
                let hn = addmax(hd, col[r] as i16, e[r]).max(f).max(0);
                hd = h[r];
                h[r] = hn;
                hgu = addmax(hn, ngoe, i16::MIN);
                e[r] = addmax(e[r], nge, hgu);
                best = best.max(hn);
            }
            diag = in_h;
            *cell = (h[p.strip - 1], f);
        }
    }
    best
}

/// The twins' scratch rows, kept from one subject to the next.
#[derive(Default)]
pub(crate) struct TwinRows {
    /// [`align`]'s H row.
    pub h: Vec<i32>,
    /// [`align`]'s F row.
    pub f: Vec<i32>,
    /// [`align16`]'s packed row.
    pub row16: Vec<(i16, i16)>,
}

/// What a DPX kernel gives for `subject` against `p` over `cols` columns (at least its
/// length): the 16-bit score ([`align16`]) where it is below `sat`, the query's threshold,
/// else the 32-bit [`align`] of the kernel's re-pass, counted in `repassed`.
pub(crate) fn dpx_score(
    p: &Profile,
    subject: &[u8],
    cols: usize,
    gaps: Gaps,
    sat: i32,
    rows: &mut TwinRows,
    repassed: &AtomicU64,
) -> i32 {
    let score = align16(p, subject, cols, gaps, &mut rows.row16) as i32;
    if score < sat {
        return score;
    }
    repassed.fetch_add(1, Ordering::Relaxed);
    align(p, subject, gaps, &mut rows.h, &mut rows.f)
}
