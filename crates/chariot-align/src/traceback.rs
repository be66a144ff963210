//! The alignment behind a reported hit: Gotoh's affine-gap local alignment with a
//! traceback, on the CPU, for the few (query, subject) pairs a search reports (the
//! search itself computes scores only).
//!
//! The recurrence is the search's ([`crate::sw::align`]): a gap of length k costs
//! `open + k·extend`, `E` is a gap in the query (a run of subject residues), `F` a gap
//! in the subject. The alignment ends at the first cell, in row-major order (query
//! rows), holding the best score; ties in the traceback prefer a substitution, then a
//! gap in the query, then one in the subject, and a gap's opening over its extension.
//! Memory: one byte of traceback per cell, query length × subject length bytes.

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
    align_scratch(query, subject, score, open, extend, same, &mut Vec::new())
}

/// [`align_counted`] with `tb` as the traceback's memory (query × subject bytes, kept
/// between calls): a fresh allocation of that size for every pair costs its pages'
/// first touches again, which for long subjects is a large part of the work.
pub fn align_scratch(
    query: &[u8],
    subject: &[u8],
    score: impl Fn(u8, u8) -> i32,
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
    let mut a = Alignment {
        score: best,
        qstart: 0,
        qend: 0,
        sstart: 0,
        send: 0,
        length: 0,
        identities: 0,
        mismatches: 0,
        gap_opens: 0,
    };
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
mod tests {
    use super::*;
    use crate::sw::{self, Gaps, Profile};
    use rand::{Rng, SeedableRng};

    #[test]
    fn known_alignments() {
        let m = Matrix::blosum62();
        let e = |s: &[u8]| m.encode(s).unwrap();
        let a = align(&e(b"WWWWW"), &e(b"AAWWWWWAA"), &m, 11, 1);
        assert_eq!((a.score, a.qstart, a.qend, a.sstart, a.send, a.length), (55, 1, 5, 3, 7, 5));
        assert_eq!((a.identities, a.mismatches, a.gap_opens), (5, 0, 0));
        assert_eq!(a.pident(), 100.0);
        // WW, a gap of 3 in the query (11 + 3), WW: 44 - 14.
        let a = align(&e(b"WWWW"), &e(b"WWAAAWW"), &m, 11, 1);
        assert_eq!((a.score, a.length, a.identities, a.mismatches, a.gap_opens), (30, 7, 4, 0, 1));
        assert_eq!((a.qstart, a.qend, a.sstart, a.send), (1, 4, 1, 7));
        // The same gap in the subject.
        let a = align(&e(b"WWAAAWW"), &e(b"WWWW"), &m, 11, 1);
        assert_eq!((a.score, a.length, a.gap_opens, a.qend, a.send), (30, 7, 1, 7, 4));
        let a = align(&e(b"W"), &e(b"P"), &m, 11, 1);
        assert_eq!((a.score, a.length, a.qstart), (0, 0, 0));
        assert_eq!(align(&[], &e(b"W"), &m, 11, 1).score, 0);
    }

    /// Gotoh's algorithm plainly (full matrices), as the end-to-end tests' reference.
    fn gotoh(q: &[u8], s: &[u8], m: &Matrix, open: i32, extend: i32) -> i32 {
        let (rows, cols) = (q.len() + 1, s.len() + 1);
        let (mut h, mut e, mut f) =
            (vec![vec![0; cols]; rows], vec![vec![NEG; cols]; rows], vec![vec![NEG; cols]; rows]);
        let mut best = 0;
        for i in 1..rows {
            for j in 1..cols {
                e[i][j] = (e[i][j - 1] - extend).max(h[i][j - 1] - open - extend);
                f[i][j] = (f[i - 1][j] - extend).max(h[i - 1][j] - open - extend);
                let diag = h[i - 1][j - 1] + m.score(q[i - 1], s[j - 1]);
                h[i][j] = 0.max(diag).max(e[i][j]).max(f[i][j]);
                best = best.max(h[i][j]);
            }
        }
        best
    }

    /// The traceback's score equals the scalar reference and the search's recurrence on
    /// random pairs (related and unrelated), and its columns add up.
    #[test]
    fn traceback_score_equals_the_search_recurrence() {
        let m = Matrix::blosum62();
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        let (mut rh, mut rf) = (Vec::new(), Vec::new());
        for k in 0..300 {
            let q: Vec<u8> = (0..rng.random_range(1..120)).map(|_| rng.random_range(0..23u8)).collect();
            let s: Vec<u8> = if k % 2 == 0 {
                (0..rng.random_range(0..150)).map(|_| rng.random_range(0..23u8)).collect()
            } else {
                let mut s = Vec::new();
                for &c in &q {
                    match rng.random_range(0..10) {
                        0 => {}
                        1 => s.extend((0..rng.random_range(1..5)).map(|_| rng.random_range(0..23u8))),
                        2 | 3 => s.push(rng.random_range(0..23u8)),
                        _ => s.push(c),
                    }
                }
                s
            };
            for (open, extend) in [(11, 1), (10, 2), (5, 0), (0, 3)] {
                let p = Profile::new(&q, &m).unwrap();
                let want = sw::align(&p, &s, Gaps { open, extend }, &mut rh, &mut rf);
                let a = align(&q, &s, &m, open, extend);
                assert_eq!(a.score, want, "pair {k}, gaps {open}/{extend}");
                assert_eq!(a.score, gotoh(&q, &s, &m, open, extend), "pair {k}, gaps {open}/{extend}");
                if a.score > 0 {
                    let spans = (a.qend - a.qstart + 1) + (a.send - a.sstart + 1);
                    assert_eq!(a.length, spans - a.identities - a.mismatches, "pair {k}: columns");
                    assert!(a.gap_opens <= a.length - a.identities - a.mismatches, "pair {k}");
                }
            }
        }
    }
}
