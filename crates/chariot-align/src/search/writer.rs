//! The file write stage of a search, shared by every chunk: each query's running top
//! hits, the TSV rows, the progress bar and the order-independent digest of the scores.

use super::{rank_output, Options, Query, SlotData};
use crate::db::ChunkInfo;
use crate::hits::{Hit, TopK};
use crate::output::Output;
use crate::sw::{KernelKind, Profile};
use parking_lot::Mutex;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// The file write stage, shared by every chunk: running top-k per query, the TSV, the
/// progress bar and the digest of the scores.
pub struct Writer {
    query_ids: Vec<String>,
    top: Mutex<Vec<TopK>>,
    out: Mutex<Option<Output>>,
    digest: AtomicU64,
    pub(super) bar: indicatif::ProgressBar,
    /// Per query, the DPX kernel's saturation threshold (empty: portable kernel).
    sat: Vec<i32>,
    repassed: AtomicU64,
}

fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Writer {
    /// Creates the output file of `opt.out` ([`rank_output`]) and opens the writer ([`Writer::open_to`]).
    pub fn open(queries: &[Query], opt: &Options, residues: u64) -> Result<Writer, String> {
        let out = opt.out.as_deref().map(rank_output).transpose()?;
        Writer::open_to(queries, opt, residues, out)
    }

    /// Takes the output file (`out`, created by [`rank_output`]) and writes its header;
    /// opens the progress bar (under mpirun only rank 0 shows it; see `ranks`).
    pub fn open_to(queries: &[Query], opt: &Options, residues: u64, out: Option<Output>) -> Result<Writer, String> {
        let rank = crate::ranks::rank();
        let out = match out {
            Some(mut w) => {
                writeln!(w, "query\tsubject\tscore")
                    .map_err(|e| format!("cannot write {}: {e}", w.path().display()))?;
                Some(w)
            }
            None => None,
        };
        let bar = if opt.progress && rank == 0 {
            let b = indicatif::ProgressBar::new(residues);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {percent}% of residues, eta {eta} {msg}",
                )
                .expect("template"),
            );
            b
        } else {
            indicatif::ProgressBar::hidden()
        };
        Ok(Writer {
            query_ids: queries.iter().map(|q| q.id.clone()).collect(),
            top: Mutex::new((0..queries.len()).map(|_| TopK::new(opt.top)).collect()),
            out: Mutex::new(out),
            digest: AtomicU64::new(0),
            bar,
            sat: Vec::new(),
            repassed: AtomicU64::new(0),
        })
    }

    /// Counts the scores the DPX kernel `kind` aligned again in 32 bits (those at or
    /// above each query's threshold, from `profiles`); nothing for the portable kernel.
    pub fn counting_repasses(mut self, kind: KernelKind, profiles: &[Profile]) -> Writer {
        if kind == KernelKind::Dpx {
            self.sat = profiles.iter().map(Profile::sat).collect();
        }
        self
    }

    /// Scores the DPX kernel aligned again in 32 bits so far.
    pub fn repassed(&self) -> u64 {
        self.repassed.load(Ordering::Relaxed)
    }

    /// Writes one chunk: `scores` holds each query's scores in packed order.
    pub fn write(&self, data: &SlotData, scores: &[i32], info: &ChunkInfo) -> Result<(), String> {
        let n = data.perm.len();
        let mut by_rec = vec![0i32; scores.len()];
        for q in 0..scores.len() / n.max(1) {
            for (pos, &r) in data.perm.iter().enumerate() {
                by_rec[q * n + r as usize] = scores[q * n + pos];
            }
        }
        let seq = |r: usize| data.seqs.get(r).copied().unwrap_or(info.first_seq + r as u64);
        let mut digest = 0u64;
        for (i, &sc) in by_rec.iter().enumerate() {
            let (q, r) = (i / n.max(1), i % n.max(1));
            digest = digest.wrapping_add(mix(mix(seq(r)) ^ mix(q as u64) ^ sc as u32 as u64));
        }
        self.digest.fetch_add(digest, Ordering::Relaxed);
        if !self.sat.is_empty() {
            let over = by_rec.chunks(n.max(1)).zip(&self.sat).map(|(s, &t)| s.iter().filter(|&&x| x >= t).count());
            self.repassed.fetch_add(over.sum::<usize>() as u64, Ordering::Relaxed);
        }
        {
            let mut top = self.top.lock();
            for (q, t) in top.iter_mut().enumerate() {
                for (r, &sc) in by_rec[q * n..(q + 1) * n].iter().enumerate() {
                    t.offer(sc, seq(r), || data.ids[r].clone());
                }
            }
        }
        if let Some(w) = self.out.lock().as_mut() {
            let mut text = String::with_capacity(n * 24);
            for (q, qid) in self.query_ids.iter().enumerate() {
                for (r, id) in data.ids.iter().enumerate() {
                    use std::fmt::Write as _;
                    let _ = writeln!(text, "{qid}\t{id}\t{}", by_rec[q * n + r]);
                }
            }
            w.write_all(text.as_bytes()).map_err(|e| format!("cannot write results: {e}"))?;
        }
        self.bar.inc(info.residues);
        Ok(())
    }

    /// Completes the output (renamed over its target); returns the best hits per query and the digest.
    pub fn finish(&self) -> Result<(Vec<Vec<Hit>>, u64), String> {
        self.bar.finish_and_clear();
        if let Some(w) = self.out.lock().take() {
            w.commit()?;
        }
        Ok((self.top.lock().iter().map(|t| t.sorted()).collect(), self.digest.load(Ordering::Relaxed)))
    }
}
