//! A multi-threaded CPU search (the baseline for GCUPS): the database's first
//! `max_seqs` sequences, read chunk by chunk, split over threads, each subject aligned
//! with the strip recurrence of [`crate::sw::align`].

use crate::db::{self, DbIndex};
use crate::matrix::Matrix;
use crate::sw::{self, Gaps, Profile};
use std::time::{Duration, Instant};

/// Result of a CPU search.
#[derive(Debug)]
pub struct CpuRun {
    /// Scores per sequence searched, in database order (a prepared database's: sorted).
    pub scores: Vec<i32>,
    /// Residues searched.
    pub residues: u64,
    /// Wall time of the alignments (file reading excluded).
    pub wall: Duration,
}

/// Aligns `query` against the first `max_seqs` sequences of `index` on `threads` threads.
pub fn search(
    index: &DbIndex,
    matrix: &Matrix,
    query: &[u8],
    gaps: Gaps,
    max_seqs: u64,
    threads: usize,
) -> Result<CpuRun, String> {
    let p = Profile::new(query, matrix)?;
    let mut subjects: Vec<Vec<u8>> = Vec::new();
    for c in &index.chunks {
        if subjects.len() as u64 >= max_seqs {
            break;
        }
        let (d, _) = db::read_subjects(index, c, matrix)?;
        let mut s = 0usize;
        for &l in &d.lens {
            if subjects.len() as u64 >= max_seqs {
                break;
            }
            subjects.push(d.codes[s..s + l as usize].to_vec());
            s += l as usize;
        }
    }
    let residues = subjects.iter().map(|s| s.len() as u64).sum();
    let threads = threads.max(1);
    let mut scores = vec![0i32; subjects.len()];
    let next = std::sync::atomic::AtomicUsize::new(0);
    let t0 = Instant::now();
    let results = parking_lot::Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let mut mine = Vec::new();
                loop {
                    let k = next.fetch_add(64, std::sync::atomic::Ordering::Relaxed);
                    if k >= subjects.len() {
                        break;
                    }
                    for (i, s) in subjects.iter().enumerate().skip(k).take(64) {
                        mine.push((i, sw::align(&p, s, gaps, &mut a, &mut b)));
                    }
                }
                results.lock().extend(mine);
            });
        }
    });
    let wall = t0.elapsed();
    for (i, s) in results.into_inner() {
        scores[i] = s;
    }
    Ok(CpuRun { scores, residues, wall })
}
