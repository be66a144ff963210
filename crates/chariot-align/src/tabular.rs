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
//! score and its E-value (the hits keep the search's order and scores); as blastp
//! does, the subject is first masked by SEG with window 10, locut 1.8, hicut 2.1 (unless
//! the pair is nearly identical). With SEG ([`Statistics::seg`], blastp's `-seg yes`)
//! the queries' low-complexity segments are X for the search and the alignments, X
//! scoring −1 against every residue as in BLAST+'s BLOSUM62 ([`seg::blast_x`]; the
//! caller searches with that matrix too). Identities are counted on the sequences
//! before masking, as blastp counts them.

use crate::compo::{self, Compo};
use crate::db::{self, DbIndex};
use crate::hits::Hit;
use crate::karlin::{self, Params};
use crate::matrix::Matrix;
use crate::search::Query;
use crate::seg;
use crate::sw::Gaps;
use crate::traceback::{self, Alignment};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The statistics the E-values are computed with (blastp's options of the same names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Composition-based statistics, as blastp's `-comp_based_stats 1` (off: as `0`).
    pub comp_based: bool,
    /// SEG masking of the queries, as blastp's `-seg yes` ([`seg::Params::QUERY`]);
    /// the search must have run with the masked queries ([`mask_queries`]).
    pub seg: bool,
}

/// The queries as blastp's `-seg yes` searches them: low-complexity segments as X.
///
/// # Errors
/// A matrix without X.
pub fn mask_queries(queries: &[Query], matrix: &Matrix) -> Result<Vec<Query>, String> {
    queries
        .iter()
        .map(|q| Ok(Query { id: q.id.clone(), codes: seg::mask(&q.codes, matrix, seg::Params::QUERY)? }))
        .collect()
}

/// Whether blastp's composition-based statistics take a pair as nearly identical, and
/// so leave its subject unmasked (`s_preliminaryTestNearIdentical`, then
/// `s_TestNearIdentical`): the alignment `a` (with the standard matrix) spans at least
/// min(query length, 50) − 1 subject residues and scores at least 1.74 bits a column,
/// and more than 96% of its columns are identical as blastp counts them: runs of equal
/// residues from each end, bridged over shifts of up to 8, and 8-residue words between.
/// (NCBI's sources have held 0.95, 0.96 and 0.98 for the fraction; blastp 2.12 agrees
/// with 0.96 on the generated pairs of `tests/blast_tabular.rs`, where a pair at 95.6%
/// is masked.)
fn near_identical(a: &Alignment, query: &[u8], subject: &[u8], p: &Params) -> bool {
    let (qspan, sspan) = (a.qend + 1 - a.qstart, a.send + 1 - a.sstart);
    let span = qspan.min(sspan);
    if sspan + 1 < query.len().min(50) || span == 0 {
        return false;
    }
    if (a.score as f64) / (span as f64) < 1.74 * std::f64::consts::LN_2 / p.lambda {
        return false;
    }
    let q = &query[a.qstart - 1..a.qend];
    let s = &subject[a.sstart - 1..a.send];
    let near = |identical: usize| identical as f64 / span as f64 > 0.96;
    let (mut same, q_right, s_right) = extend_right(q, s);
    if q_right >= q.len() || s_right >= s.len() {
        return near(same);
    }
    let (left, q_left, s_left) = extend_left(&q[q_right..], &s[s_right..]);
    same += left;
    if q_left + q_right >= q.len() || s_left + s_right >= s.len() {
        return near(same);
    }
    same += word_identities(&q[q_right..q.len() - q_left], &s[s_right..s.len() - s_left]);
    near(same)
}

/// The most residues a bridge in [`extend_right`] and [`extend_left`] skips.
const MAX_SHIFT: usize = 8;
/// The word length of [`word_identities`].
const WORD: usize = 8;

/// Identical residues from the start of `q` and `s`: runs of equal residues, each
/// bridged to the next pair of equal residues at most [`MAX_SHIFT`] on (on both, or on
/// one: a gap); returns the identities and how far each sequence was consumed.
fn extend_right(q: &[u8], s: &[u8]) -> (usize, usize, usize) {
    let (mut same, mut i, mut j) = (0, 0, 0);
    while i < q.len() && j < s.len() {
        while i < q.len() && j < s.len() && q[i] == s[j] {
            same += 1;
            i += 1;
            j += 1;
        }
        let mut bridged = false;
        for n in 1..MAX_SHIFT {
            if bridged || i + n + 1 >= q.len() || j + n + 1 >= s.len() {
                break;
            }
            if q[i + n] == s[j + n] && q[i + n + 1] == s[j + n + 1] {
                (i, j) = (i + n + 2, j + n + 2);
                bridged = true;
            } else if q[i + n] == s[j] && q[i + n + 1] == s[j + 1] {
                (i, j) = (i + n + 2, j + 2);
                bridged = true;
            } else if q[i] == s[j + n] && q[i + 1] == s[j + n + 1] {
                (i, j) = (i + 2, j + n + 2);
                bridged = true;
            }
            if bridged {
                same += 2;
            }
        }
        if !bridged {
            break;
        }
    }
    (same, i, j)
}

/// [`extend_right`] from the ends of `q` and `s` leftwards.
fn extend_left(q: &[u8], s: &[u8]) -> (usize, usize, usize) {
    if q.is_empty() || s.is_empty() {
        return (0, 0, 0);
    }
    let (mut same, mut i, mut j) = (0, q.len() - 1, s.len() - 1);
    loop {
        while i > 0 && j > 0 && q[i] == s[j] {
            same += 1;
            i -= 1;
            j -= 1;
        }
        let mut bridged = false;
        for n in 1..MAX_SHIFT {
            if bridged || i <= n + 1 || j <= n + 1 {
                break;
            }
            if q[i - n] == s[j - n] && q[i - n - 1] == s[j - n - 1] {
                (i, j) = (i - n - 2, j - n - 2);
                bridged = true;
            } else if q[i - n] == s[j] && q[i - n - 1] == s[j - 1] {
                (i, j) = (i - n - 2, j - 2);
                bridged = true;
            } else if q[i] == s[j - n] && q[i - 1] == s[j - n - 1] {
                (i, j) = (i - 2, j - n - 2);
                bridged = true;
            }
            if bridged {
                same += 2;
            }
        }
        if !bridged || i == 0 || j == 0 {
            break;
        }
    }
    (same, q.len() - i - 1, s.len() - j - 1)
}

/// Identities between `q` and `s` by words: each subject word of [`WORD`] residues found
/// in the query (at or after the last match) counts its residues and those of the
/// extensions on both sides of it (`s_FindNumIdentical`).
fn word_identities(q: &[u8], s: &[u8]) -> usize {
    if q.len() < WORD || s.len() < WORD {
        return 0;
    }
    let (mut q_from, mut s_from, mut same) = (0, 0, 0);
    let (last_q, last_s) = (q.len() - WORD, s.len() - WORD);
    let mut j = 0;
    while j < last_s {
        let word = &s[j..j + WORD];
        if let Some(i) = (q_from..last_q).find(|&i| &q[i..i + WORD] == word) {
            let (left, _, _) = extend_left(&q[q_from..i], &s[s_from..j]);
            let (right, q_right, s_right) = extend_right(&q[i + WORD..], &s[j + WORD..]);
            same += WORD + left + right;
            q_from = i + WORD + q_right;
            s_from = j + WORD + s_right;
            j = s_from.saturating_sub(1);
            if j >= last_s {
                break;
            }
        }
        j += 1;
    }
    same
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

/// What every hit's line needs: the statistics, the subjects' residues, and each
/// query as searched (masked with `-seg yes`) with its composition.
struct Shared<'a> {
    matrix: &'a Matrix,
    gaps: Gaps,
    p: Params,
    compo: Option<Compo>,
    residues: HashMap<u64, Vec<u8>>,
    searched: Vec<Vec<u8>>,
    compositions: Vec<Option<compo::Composition>>,
    db_residues: u64,
}

/// A hit's line (`None`: nothing to report), or why there is none.
type LineResult = Result<Option<String>, String>;

/// The line of query `q` (index `qi`) against hit `h`, with `tb` the traceback's
/// scratch memory.
fn hit_line(sh: &Shared, q: &Query, qi: usize, h: &Hit, tb: &mut traceback::Scratch) -> LineResult {
    let (matrix, gaps, p) = (sh.matrix, sh.gaps, &sh.p);
    let q_codes = &sh.searched[qi];
    let s = sh
        .residues
        .get(&h.seq)
        .ok_or_else(|| format!("subject `{}` (database sequence {}) was not found on reading", h.id, h.seq))?;
    // Identities as blastp counts them: on the sequences before masking.
    let score = |x: u8, y: u8| matrix.score(x, y);
    let a = traceback::align_scratch(q_codes, s, score, gaps.open, gaps.extend, (&q.codes, s), tb);
    if a.score != h.score {
        return Err(format!(
            "query `{}` against subject `{}` (database sequence {}): the traceback's score {} differs from the search's {}",
            q.id, h.id, h.seq, a.score, h.score
        ));
    }
    let (m, n) = (q.codes.len() as u64, s.len() as u64);
    let (a, e) = match (&sh.compo, &sh.compositions[qi]) {
        (Some(c), Some(qc)) => {
            // blastp masks the subject with SEG before rescoring it (not a nearly
            // identical one), then aligns with the pair's rescaled matrix at 32 times
            // the precision, gap costs alike.
            let masked;
            let subject = if near_identical(&a, q_codes, s, p) {
                s.as_slice()
            } else {
                masked = seg::mask(s, matrix, seg::Params::SUBJECT)?;
                masked.as_slice()
            };
            let (adj, _) = c.matrix(qc, &c.composition(subject));
            let k = compo::SCALE;
            let mut a = traceback::align_scratch(
                q_codes,
                subject,
                |x, y| adj[x as usize][y as usize],
                gaps.open * k,
                gaps.extend * k,
                (&q.codes, s),
                tb,
            );
            let e = p.evalue_scaled(a.score as f64 / k as f64, m, n, sh.db_residues);
            a.score = (a.score as f64 / k as f64).round() as i32;
            (a, e)
        }
        _ => {
            let e = p.evalue(a.score, m, n, sh.db_residues);
            (a, e)
        }
    };
    // A pair whose rescaled alignment is empty has nothing to report.
    if a.score <= 0 {
        return Ok(None);
    }
    Ok(Some(line(&q.id, &h.id, &a, p, e)))
}

/// The tabular text of `hits` (one list per query, best first, as the search returns
/// them) over the database `index`; checks every traceback's score against the search's.
/// The hits' tracebacks run on all the host's cores (each thread with its own scratch
/// memory); the lines come out in the hits' order.
///
/// # Errors
/// Statistics unknown for the matrix or gap costs ([`karlin::params`]), a database read
/// error, or a traceback whose score differs from the search's (naming the pair; the
/// first such pair in the hits' order).
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
    // The queries as searched: SEG's segments as X with `-seg yes`.
    let searched = queries
        .iter()
        .map(|q| if stats.seg { seg::mask(&q.codes, matrix, seg::Params::QUERY) } else { Ok(q.codes.clone()) })
        .collect::<Result<Vec<_>, _>>()?;
    let compositions = searched.iter().map(|c| compo.as_ref().map(|k| k.composition(c))).collect();
    let sh = Shared { matrix, gaps, p, compo, residues, searched, compositions, db_residues: index.residues };
    let work: Vec<(usize, &Hit)> = queries
        .iter()
        .zip(hits)
        .enumerate()
        .flat_map(|(qi, (_, list))| list.iter().filter(|h| h.score > 0).map(move |h| (qi, h)))
        .collect();
    // Hits are taken one at a time from a shared counter: their costs (query × subject
    // lengths) differ by orders of magnitude, so fixed shares would leave cores idle.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(work.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut lines: Vec<Option<LineResult>> = vec![None; work.len()];
    let done: Vec<Vec<(usize, LineResult)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let (mut tb, mut out) = (traceback::Scratch::default(), Vec::new());
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&(qi, h)) = work.get(k) else { break };
                        out.push((k, hit_line(&sh, &queries[qi], qi, h, &mut tb)));
                    }
                    out
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    });
    for (k, r) in done.into_iter().flatten() {
        lines[k] = Some(r);
    }
    let (mut out, mut rows) = (String::new(), 0usize);
    for (k, l) in lines.into_iter().enumerate() {
        let l = l.ok_or_else(|| format!("the traceback of hit {k} did not finish (a worker thread panicked)"))?;
        if let Some(l) = l? {
            out.push_str(&l);
            out.push('\n');
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
