//! Alignments a second of one thread: the traceback `--tabular` runs
//! ([`traceback::align_scratch`]: a vectorized score pass, a reverse pass, the
//! traceback in the alignment's box) against the whole-matrix traceback it replaced
//! ([`traceback::align_full_matrix`]), on generated pairs: queries of 63 to 5,000
//! residues against subjects of 100 to 35,000, each subject unrelated or holding a
//! mutated copy of the query (20% substitutions, 5% insertions and deletions) between
//! random flanks (a related subject is at least as long as that copy, whatever its
//! nominal length). Every pair's two alignments are checked equal.
//!
//! ```text
//! cargo run --release -p chariot-align --example traceback_speed -- [REPEATS]
//! ```
//!
//! Prints, per pair shape, the median over REPEATS (default 3) of each method's time,
//! then the alignments a second over all shapes.

use chariot_align::matrix::Matrix;
use chariot_align::traceback::{self, Scratch};
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// Residues with BLOSUM62's 20 standard codes, uniformly.
fn random(rng: &mut rand::rngs::StdRng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.random_range(0..20u8)).collect()
}

/// A subject of `slen` residues: random, or a mutated copy of `q` between random flanks.
fn subject(rng: &mut rand::rngs::StdRng, q: &[u8], slen: usize, related: bool) -> Vec<u8> {
    if !related {
        return random(rng, slen);
    }
    let mut copy = Vec::new();
    for &c in q {
        match rng.random_range(0..100) {
            0..=2 => {}
            3..=4 => {
                copy.push(c);
                copy.push(rng.random_range(0..20));
            }
            5..=24 => copy.push(rng.random_range(0..20)),
            _ => copy.push(c),
        }
    }
    let flanks = slen.saturating_sub(copy.len());
    let left = rng.random_range(0..=flanks);
    let mut s = random(rng, left);
    s.extend(copy);
    s.extend(random(rng, flanks - left));
    s
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), String> {
    let repeats: usize = std::env::args().nth(1).map_or(Ok(3), |a| a.parse().map_err(|e| format!("{a}: {e}")))?;
    let m = Matrix::blosum62();
    let score = |a: u8, b: u8| m.score(a, b);
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let (mut scratch, mut tb) = (Scratch::default(), Vec::new());
    let (mut old_total, mut new_total, mut pairs) = (0.0, 0.0, 0usize);
    println!("query subject related  old ms  new ms  speedup");
    for qlen in [63, 360, 1000, 5000] {
        for slen in [100, 1000, 5000, 35_000] {
            for related in [false, true] {
                let q = random(&mut rng, qlen);
                let s = subject(&mut rng, &q, slen, related);
                let (mut old, mut new) = (Vec::new(), Vec::new());
                for _ in 0..repeats.max(1) {
                    let t = Instant::now();
                    let a = traceback::align_full_matrix(&q, &s, score, 11, 1, (&q, &s), &mut tb);
                    old.push(t.elapsed().as_secs_f64());
                    let t = Instant::now();
                    let b = traceback::align_scratch(&q, &s, score, 11, 1, (&q, &s), &mut scratch);
                    new.push(t.elapsed().as_secs_f64());
                    if a != b {
                        return Err(format!("{qlen}×{slen} (related {related}): {a:?} ≠ {b:?}"));
                    }
                }
                let (o, n) = (median(old), median(new));
                println!("{qlen:5} {slen:7} {related:7} {:7.2} {:7.2} {:7.1}×", o * 1e3, n * 1e3, o / n);
                (old_total, new_total, pairs) = (old_total + o, new_total + n, pairs + 1);
            }
        }
    }
    println!(
        "{pairs} pairs: {:.1} alignments/s old, {:.1} new ({:.1}× ), medians of {repeats}",
        pairs as f64 / old_total,
        pairs as f64 / new_total,
        old_total / new_total
    );
    Ok(())
}
