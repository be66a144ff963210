//! The traceback's tests: known alignments, scores against the search's recurrence,
//! and the three passes against the whole matrix.

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
    let (mut h, mut e, mut f) = (vec![vec![0; cols]; rows], vec![vec![NEG; cols]; rows], vec![vec![NEG; cols]; rows]);
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

/// A random pair: the query `q` of `qlen` codes below `letters`, and a subject of
/// about `slen` codes holding a mutated copy of it (substitutions, insertions,
/// deletions at the rate `change` in 100) between random flanks, or none.
fn pair(rng: &mut rand::rngs::StdRng, qlen: usize, slen: usize, letters: u8, change: u32) -> (Vec<u8>, Vec<u8>) {
    let q: Vec<u8> = (0..qlen).map(|_| rng.random_range(0..letters)).collect();
    let mut copy = Vec::new();
    if rng.random_range(0..4) != 0 {
        // A part of the query, mutated.
        let from = rng.random_range(0..qlen);
        let to = rng.random_range(from..qlen) + 1;
        for &c in &q[from..to] {
            match rng.random_range(0..100) {
                x if x < change / 3 => {}
                x if x < 2 * change / 3 => {
                    copy.push(c);
                    copy.extend((0..rng.random_range(1..6)).map(|_| rng.random_range(0..letters)));
                }
                x if x < change * 2 => copy.push(rng.random_range(0..letters)),
                _ => copy.push(c),
            }
        }
    }
    let flanks = slen.saturating_sub(copy.len());
    let left = rng.random_range(0..=flanks);
    let mut s: Vec<u8> = (0..left).map(|_| rng.random_range(0..letters)).collect();
    s.extend(copy);
    s.extend((0..flanks - left).map(|_| rng.random_range(0..letters)));
    (q, s)
}

/// The three passes report the whole matrix's alignment, column for column, on random
/// pairs: unrelated and related (a mutated copy of part of the query in a long
/// subject), over 20 letters and over 2 and 4 (ties everywhere), with BLAST's gap costs
/// and others, with a 32-times rescaled matrix (the composition-based statistics'), and
/// with scores past the 16-bit pass's range (an identical run of 120 W scaled 32
/// times); the passes themselves decide every pair (no fallback to the whole matrix).
#[test]
fn passes_equal_the_whole_matrix() {
    let m = Matrix::blosum62();
    let mut rng = rand::rngs::StdRng::seed_from_u64(23);
    let mut scratch = Scratch::default();
    let mut tb = Vec::new();
    let (mut wide, mut boxed) = (0, 0);
    for k in 0..1000 {
        let letters = [20u8, 20, 4, 2][k % 4];
        let (qlen, slen) = match k % 5 {
            0 => (rng.random_range(1..40), rng.random_range(0..40)),
            1 => (rng.random_range(1..120), rng.random_range(1..150)),
            2 => (rng.random_range(20..80), rng.random_range(300..2000)),
            3 => (rng.random_range(100..250), rng.random_range(50..300)),
            _ => (rng.random_range(1..8), rng.random_range(1..1000)),
        };
        let (mut q, mut s) = pair(&mut rng, qlen, slen, letters, [5, 15, 40][k % 3]);
        let scale = if k % 7 == 0 || k % 97 == 0 { 32 } else { 1 };
        if k % 97 == 0 {
            // W against W is 11: 120 of them scaled 32 times is past i16.
            q = vec![17; 120];
            s = [vec![0u8; 30], vec![17; 130]].concat();
        }
        let (open, extend) = [(11, 1), (10, 2), (5, 0), (0, 3), (1, 1), (3, 2)][k % 6];
        let (open, extend) = (open * scale, extend * scale);
        let score = |a: u8, b: u8| m.score(a, b) * scale;
        // Masked copies: identities are counted on `same`.
        let same = (q.iter().map(|&c| c ^ u8::from(k % 11 == 0)).collect::<Vec<_>>(), s.clone());
        let want = align_full_matrix(&q, &s, score, open, extend, (&same.0, &same.1), &mut tb);
        let got = passes(&q, &s, &score, open, extend, (&same.0, &same.1), &mut scratch);
        assert_eq!(
            got,
            Ok(want.clone()),
            "pair {k}: {}×{} over {letters} letters, gaps {open}/{extend}",
            q.len(),
            s.len()
        );
        assert_eq!(align_scratch(&q, &s, score, open, extend, (&same.0, &same.1), &mut scratch), want);
        if want.score > 32767 - 11 * 32 {
            wide += 1;
        }
        if want.score > 0 && want.qstart > 1 && want.sstart > 1 {
            boxed += 1;
        }
    }
    // The 32-bit pass and boxes short of both sequences' starts were both exercised.
    assert!(wide >= 10 && boxed > 300, "{wide} pairs past 16 bits, {boxed} boxed");
}

/// Scores past the 32-bit pass's range, and negative gap costs, go to the whole matrix.
#[test]
fn out_of_range_goes_to_the_whole_matrix() {
    let m = Matrix::blosum62();
    let e = |s: &[u8]| m.encode(s).unwrap();
    let (q, s) = (e(b"WWKWW"), e(b"AWWKWWA"));
    let mut scratch = Scratch::default();
    let huge = |a: u8, b: u8| m.score(a, b) << 25;
    assert_eq!(passes(&q, &s, &huge, 11, 1, (&q, &s), &mut scratch), Err(Declined::Range));
    let a = align_scratch(&q, &s, huge, 11, 1, (&q, &s), &mut scratch);
    assert_eq!(a, align_full_matrix(&q, &s, huge, 11, 1, (&q, &s), &mut Vec::new()));
    assert_eq!((a.qstart, a.qend, a.sstart, a.send), (1, 5, 2, 6));
}
