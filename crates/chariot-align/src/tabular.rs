//! BLAST tabular output (`blastp -outfmt 6`) of a search's top hits: for each query, its
//! hits best first, one line each with BLAST's 12 columns
//!
//! ```text
//! qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore
//! ```
//!
//! The alignment of each reported pair comes from a traceback on the CPU
//! ([`crate::traceback`]), whose score must equal the search's for that pair: a
//! difference is an error naming the pair, never a silent one. E-values and bit scores
//! are BLAST's ([`crate::karlin`]), over the whole database's residues and sequences;
//! numbers are printed as BLAST prints them. Unlike BLAST, every one of the `--top`
//! hits is listed whatever its E-value (no `-evalue` cut-off), one alignment per
//! subject (as `-max_hsps 1`), and a hit of score 0 (nothing aligns) is left out.
//!
//! With composition-based statistics ([`Statistics::comp_based`], blastp's
//! `-comp_based_stats 1`), each pair is aligned again with BLOSUM62 rescaled for the
//! two sequences' compositions ([`crate::compo`]): the line reports that alignment, its
//! score and its E-value (the hits keep the search's order and scores).

use crate::compo::{self, Compo};
use crate::db::{self, DbIndex};
use crate::hits::Hit;
use crate::karlin::{self, Params};
use crate::matrix::Matrix;
use crate::search::Query;
use crate::sw::Gaps;
use crate::traceback::{self, Alignment};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

/// The statistics the E-values are computed with (blastp's options of the same names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Composition-based statistics, as blastp's `-comp_based_stats 1` (off: as `0`).
    pub comp_based: bool,
}

/// One line of the output (no newline) for query `qid` and subject `sid`.
/// `evalue` is BLAST+'s ([`Params::evalue`]).
pub fn line(qid: &str, sid: &str, a: &Alignment, p: &Params, evalue: f64) -> String {
    format!(
        "{qid}\t{sid}\t{:.3}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        a.pident(),
        a.length,
        a.mismatches,
        a.gap_opens,
        a.qstart,
        a.qend,
        a.sstart,
        a.send,
        karlin::format_evalue(evalue),
        karlin::format_bits(p.bits(a.score))
    )
}

/// The residues of the database sequences `wanted` (indices in FASTA order), read chunk
/// by chunk (a FASTA database's chunks holding none of them are not read).
pub fn subjects(index: &DbIndex, matrix: &Matrix, wanted: &HashSet<u64>) -> Result<HashMap<u64, Vec<u8>>, String> {
    let mut out = HashMap::with_capacity(wanted.len());
    for c in &index.chunks {
        if out.len() == wanted.len() {
            break;
        }
        if index.prepared.is_none() && !(c.first_seq..c.first_seq + c.nseq as u64).any(|s| wanted.contains(&s)) {
            continue;
        }
        let (d, seqs) = db::read_subjects(index, c, matrix)?;
        let mut at = 0usize;
        for (&len, &s) in d.lens.iter().zip(&seqs) {
            if wanted.contains(&s) {
                out.insert(s, d.codes[at..at + len as usize].to_vec());
            }
            at += len as usize;
        }
    }
    Ok(out)
}

/// The tabular text of `hits` (one list per query, best first, as the search returns
/// them) over the database `index`; checks every traceback's score against the search's.
///
/// # Errors
/// Statistics unknown for the matrix or gap costs ([`karlin::params`]), a database read
/// error, or a traceback whose score differs from the search's (naming the pair).
pub fn text(
    index: &DbIndex,
    matrix: &Matrix,
    queries: &[Query],
    hits: &[Vec<Hit>],
    gaps: Gaps,
    stats: Statistics,
) -> Result<(String, usize), String> {
    let p = karlin::params(matrix, gaps)?;
    let compo = if stats.comp_based { Some(Compo::new(matrix)?) } else { None };
    let wanted: HashSet<u64> = hits.iter().flatten().filter(|h| h.score > 0).map(|h| h.seq).collect();
    let residues = subjects(index, matrix, &wanted)?;
    let (mut out, mut rows) = (String::new(), 0usize);
    for (q, list) in queries.iter().zip(hits) {
        let q_comp = compo.as_ref().map(|c| c.composition(&q.codes));
        for h in list.iter().filter(|h| h.score > 0) {
            let s = residues
                .get(&h.seq)
                .ok_or_else(|| format!("subject `{}` (database sequence {}) was not found on reading", h.id, h.seq))?;
            let a = traceback::align(&q.codes, s, matrix, gaps.open, gaps.extend);
            if a.score != h.score {
                return Err(format!(
                    "query `{}` against subject `{}` (database sequence {}): the traceback's score {} differs from the search's {}",
                    q.id, h.id, h.seq, a.score, h.score
                ));
            }
            let (m, n) = (q.codes.len() as u64, s.len() as u64);
            let (a, e) = match (&compo, &q_comp) {
                (Some(c), Some(qc)) => {
                    // The pair's rescaled matrix at 32 times the precision, gap costs alike.
                    let (adj, _) = c.matrix(qc, &c.composition(s));
                    let k = compo::SCALE;
                    let mut a = traceback::align_by(
                        &q.codes,
                        s,
                        |x, y| adj[x as usize][y as usize],
                        gaps.open * k,
                        gaps.extend * k,
                    );
                    let e = p.evalue_scaled(a.score as f64 / k as f64, m, n, index.residues);
                    a.score = (a.score as f64 / k as f64).round() as i32;
                    (a, e)
                }
                _ => {
                    let e = p.evalue(a.score, m, n, index.residues);
                    (a, e)
                }
            };
            // A pair whose rescaled alignment is empty has nothing to report.
            if a.score <= 0 {
                continue;
            }
            let _ = writeln!(out, "{}", line(&q.id, &h.id, &a, &p, e));
            rows += 1;
        }
    }
    Ok((out, rows))
}

/// Writes [`text`] to `path`; returns the number of lines.
pub fn write(
    path: &Path,
    index: &DbIndex,
    matrix: &Matrix,
    queries: &[Query],
    hits: &[Vec<Hit>],
    gaps: Gaps,
    stats: Statistics,
) -> Result<usize, String> {
    let (t, rows) = text(index, matrix, queries, hits, gaps, stats)?;
    std::fs::write(path, t).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(rows)
}
