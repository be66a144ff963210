//! The alignment behind a reported hit: Gotoh's affine-gap local alignment with a
//! traceback, on the CPU, for the few (query, subject) pairs a search reports (the
//! search itself computes scores only).
//!
//! The recurrence is the search's ([`crate::sw::align`]): a gap of length k costs
//! `open + k·extend`, `E` is a gap in the query (a run of subject residues), `F` a gap
//! in the subject. The alignment ends at the first cell, in row-major order (query
//! rows), holding the best score; ties in the traceback prefer a substitution, then a
//! gap in the query, then one in the subject, and a gap's opening over its extension.
//!
//! [`align_full_matrix`] does this plainly: the whole matrix with a byte of traceback a
//! cell. [`align`] and its variants report the same alignment (the same columns, ties
//! broken alike) in three passes that cost far less where the alignment covers a small
//! part of the matrix (a query against a long subject):
//!
//! 1. the best score and its end cell by a score-only pass in linear memory, vectorized
//!    ([`striped`]);
//! 2. the top-left corner of a box holding the alignment, by a pass from the end cell
//!    over the reversed prefixes that keeps only the cells which can lie on the
//!    alignment (bounded with the forward pass's row maxima), a band along it
//!    ([`reverse`]);
//! 3. [`align_full_matrix`] on that box alone.
//!
//! Step 3 gives the full matrix's alignment because the box's values are never above
//! the full matrix's (its borders are the smallest values a border can hold) and equal
//! them along the full matrix's alignment (which lies in the box, and realizes its
//! cells' values): at each cell of that alignment, the source the full matrix chose
//! keeps its value, the sources it preferred over it stay below, those after it stay at
//! most equal, so the box chooses the same source; the end cell is also the box's first
//! holding the best (an earlier one would be one of the full matrix's).

mod reverse;
mod striped;

use crate::matrix::Matrix;

/// A local alignment and BLAST's columns for it (`-outfmt 6`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alignment {
    /// Its score.
    pub score: i32,
    /// First aligned query residue, 1-based (0 when nothing aligns: score 0).
    pub qstart: usize,
    /// Last aligned query residue, 1-based.
    pub qend: usize,
    /// First aligned subject residue, 1-based.
    pub sstart: usize,
    /// Last aligned subject residue, 1-based.
    pub send: usize,
    /// Columns: substitutions and gap positions.
    pub length: usize,
    /// Columns aligning identical residues (same matrix code).
    pub identities: usize,
    /// Columns aligning different residues.
    pub mismatches: usize,
    /// Gaps (runs of gap positions), in either sequence.
    pub gap_opens: usize,
}

impl Alignment {
    /// Nothing aligned: score 0, every column 0.
    pub const EMPTY: Alignment = Alignment {
        score: 0,
        qstart: 0,
        qend: 0,
        sstart: 0,
        send: 0,
        length: 0,
        identities: 0,
        mismatches: 0,
        gap_opens: 0,
    };

    /// Percent identity over the alignment's length, as BLAST's `pident`.
    pub fn pident(&self) -> f64 {
        if self.length == 0 {
            return 0.0;
        }
        100.0 * self.identities as f64 / self.length as f64
    }
}

const NEG: i32 = i32::MIN / 4;
/// H came from: 0 (the alignment starts here), diagonal, E or F (bits 0-1).
const H_DIAG: u8 = 1;
const H_E: u8 = 2;
const H_F: u8 = 3;
/// E (resp. F) at this cell extends the E (F) of its left (upper) neighbour.
const E_EXT: u8 = 4;
const F_EXT: u8 = 8;

/// Aligns `query` with `subject` (matrix codes) locally with gap costs `open + k·extend`.
pub fn align(query: &[u8], subject: &[u8], m: &Matrix, open: i32, extend: i32) -> Alignment {
    align_by(query, subject, |a, b| m.score(a, b), open, extend)
}

/// [`align`] with the substitution score of (query code, subject code) given by
/// `score` (composition-based statistics align with a rescaled matrix).
pub fn align_by(query: &[u8], subject: &[u8], score: impl Fn(u8, u8) -> i32, open: i32, extend: i32) -> Alignment {
    align_counted(query, subject, score, open, extend, (query, subject))
}

/// [`align_by`], with identities counted on `same` (the query and the subject before
/// masking, of the same lengths): BLAST counts a masked column by its residues.
pub fn align_counted(
    query: &[u8],
    subject: &[u8],
    score: impl Fn(u8, u8) -> i32,
    open: i32,
    extend: i32,
    same: (&[u8], &[u8]),
) -> Alignment {
    align_scratch(query, subject, score, open, extend, same, &mut Scratch::default())
}

/// The memory of [`align_scratch`], kept between calls: the passes' rows and the
/// box's traceback bytes, grown to the largest pair seen (fresh allocations for every
/// pair cost their pages' first touches again).
#[derive(Debug, Default)]
pub struct Scratch {
    narrow: striped::Rows<i16, 8>,
    wide: striped::Rows<i32, 4>,
    band: reverse::Band,
    reach: Vec<i32>,
    tb: Vec<u8>,
}

/// [`align_counted`] with `scratch` as its memory. See the module's text for the
/// passes; a pair whose reverse pass would cover more than half of the prefix box
/// `[0, end]` is traced back over that prefix box instead.
pub fn align_scratch(
    query: &[u8],
    subject: &[u8],
    score: impl Fn(u8, u8) -> i32,
    open: i32,
    extend: i32,
    same: (&[u8], &[u8]),
    scratch: &mut Scratch,
) -> Alignment {
    assert!(same.0.len() == query.len() && same.1.len() == subject.len(), "unmasked sequences of other lengths");
    match passes(query, subject, &score, open, extend, same, scratch) {
        Ok(a) => a,
        // Scores or gap costs beyond the passes' range (never BLOSUM's nor the rescaled
        // matrices'), or passes that disagree with the box (which the module's argument
        // rules out): the whole matrix decides rather than a wrong line.
        Err(_) => full_matrix(query, subject, &score, open, extend, same, &mut scratch.tb),
    }
}

/// Why [`passes`] gave no alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Declined {
    /// A score or gap cost beyond the passes' range.
    Range,
    /// The box's alignment does not end at the forward pass's cell with its score.
    Disagree,
}

/// The three passes of the module's text.
fn passes(
    query: &[u8],
    subject: &[u8],
    score: &impl Fn(u8, u8) -> i32,
    open: i32,
    extend: i32,
    same: (&[u8], &[u8]),
    scratch: &mut Scratch,
) -> Result<Alignment, Declined> {
    if open < 0 || extend < 0 {
        return Err(Declined::Range);
    }
    let reach = &mut scratch.reach;
    let (best, bi, bj) = striped::forward(query, subject, score, open, extend, &mut scratch.narrow, reach)
        .or_else(|| striped::forward(query, subject, score, open, extend, &mut scratch.wide, reach))
        .ok_or(Declined::Range)?;
    if best <= 0 {
        return Ok(Alignment::EMPTY);
    }
    let budget = (bi + 1) * (bj + 1) / 2;
    let (r0, c0) =
        reverse::start_corner(query, subject, score, open, extend, (best, bi, bj), reach, budget, &mut scratch.band)
            .unwrap_or((0, 0));
    let (q, s) = (&query[r0..=bi], &subject[c0..=bj]);
    let mut a = full_matrix(q, s, score, open, extend, (&same.0[r0..=bi], &same.1[c0..=bj]), &mut scratch.tb);
    (a.qstart, a.qend, a.sstart, a.send) = (a.qstart + r0, a.qend + r0, a.sstart + c0, a.send + c0);
    if (a.score, a.qend, a.send) != (best, bi + 1, bj + 1) {
        return Err(Declined::Disagree);
    }
    Ok(a)
}

/// The alignment by the whole matrix, one byte of traceback a cell (query × subject
/// bytes): the reference [`align_scratch`] equals, kept for its tests and benchmarks.
pub fn align_full_matrix(
    query: &[u8],
    subject: &[u8],
    score: impl Fn(u8, u8) -> i32,
    open: i32,
    extend: i32,
    same: (&[u8], &[u8]),
    tb: &mut Vec<u8>,
) -> Alignment {
    full_matrix(query, subject, &score, open, extend, same, tb)
}

fn full_matrix(
    query: &[u8],
    subject: &[u8],
    score: &impl Fn(u8, u8) -> i32,
    open: i32,
    extend: i32,
    same: (&[u8], &[u8]),
    tb: &mut Vec<u8>,
) -> Alignment {
    assert!(same.0.len() == query.len() && same.1.len() == subject.len(), "unmasked sequences of other lengths");
    let (rows, cols) = (query.len(), subject.len());
    let goe = open + extend;
    // Every cell is written before it is read: no clearing needed, only the size.
    if tb.len() < rows * cols {
        tb.resize(rows * cols, 0);
    }
    let tb = &mut tb[..rows * cols];
    // One row of H serves as both the previous row and the current one: cell j + 1
    // of the previous row is read (as "up", then kept as the next cell's diagonal)
    // before it is overwritten. Each query row's scores are looked up once, by subject
    // code (codes are below 32, the matrix's most letters).
    let mut h = vec![0i32; cols + 1];
    let mut f = vec![NEG; cols + 1];
    let (mut best, mut bi, mut bj) = (0, 0, 0);
    for (i, (&qi, tb_row)) in query.iter().zip(tb.chunks_exact_mut(cols.max(1))).enumerate() {
        let row: [i32; 32] = std::array::from_fn(|b| score(qi, b as u8));
        let (mut e, mut left, mut diag_h) = (NEG, 0i32, 0i32);
        let cells = subject.iter().zip(tb_row.iter_mut()).zip(h[1..].iter_mut().zip(f[1..].iter_mut()));
        for (j, ((&sj, tbj), (hj, fj))) in cells.enumerate() {
            let mut t = 0u8;
            let e_open = left - goe;
            let e_ext = e - extend;
            e = if e_ext > e_open {
                t |= E_EXT;
                e_ext
            } else {
                e_open
            };
            let up = *hj;
            let f_open = up - goe;
            let f_ext = *fj - extend;
            let fv = if f_ext > f_open {
                t |= F_EXT;
                f_ext
            } else {
                f_open
            };
            *fj = fv;
            let diag = diag_h + row[usize::from(sj) % 32];
            let mut hv = 0;
            if diag > 0 {
                hv = diag;
                t |= H_DIAG;
            }
            if e > hv {
                hv = e;
                t = (t & !3) | H_E;
            }
            if fv > hv {
                hv = fv;
                t = (t & !3) | H_F;
            }
            diag_h = up;
            left = hv;
            *hj = hv;
            *tbj = t;
            if hv > best {
                (best, bi, bj) = (hv, i, j);
            }
        }
    }
    let mut a = Alignment { score: best, ..Alignment::EMPTY };
    if best == 0 {
        return a;
    }
    (a.qend, a.send) = (bi + 1, bj + 1);
    // The state being traced: 0 = H, 1 = E, 2 = F; (i, j) the cell, 0-based.
    let (mut i, mut j, mut state) = (bi as isize, bj as isize, 0u8);
    loop {
        let t = tb[i as usize * cols + j as usize];
        match state {
            0 => match t & 3 {
                H_DIAG => {
                    a.length += 1;
                    if same.0[i as usize] == same.1[j as usize] {
                        a.identities += 1;
                    } else {
                        a.mismatches += 1;
                    }
                    (a.qstart, a.sstart) = (i as usize + 1, j as usize + 1);
                    i -= 1;
                    j -= 1;
                    if i < 0 || j < 0 || tb_h_zero(tb, cols, i, j) {
                        break;
                    }
                }
                H_E => {
                    state = 1;
                    a.gap_opens += 1;
                }
                H_F => {
                    state = 2;
                    a.gap_opens += 1;
                }
                _ => break,
            },
            1 => {
                a.length += 1;
                if t & E_EXT == 0 {
                    state = 0;
                }
                j -= 1;
            }
            _ => {
                a.length += 1;
                if t & F_EXT == 0 {
                    state = 0;
                }
                i -= 1;
            }
        }
    }
    a
}

/// Whether H at cell (i, j) is 0 (a cell whose H has no source): a diagonal step into it
/// starts the alignment there.
fn tb_h_zero(tb: &[u8], cols: usize, i: isize, j: isize) -> bool {
    tb[i as usize * cols + j as usize] & 3 == 0
}

#[cfg(test)]
mod tests;
