//! `chariot-align search` under `mpirun` (the cluster form, the `mpi` feature): every rank runs
//! the same search, each its share of the database's chunks (chariot's cluster form:
//! `Builder::cluster`), and rank 0 prints what one process would. The best hits are
//! merged on rank 0, and the digest and counts are summed over the ranks. The scores'
//! TSV is written per rank (`-o hits.tsv`: rank 0 writes `hits.tsv`, rank r
//! `hits.tsv.rank<r>`), since the scores of a whole database are too many to gather.
//! Without the feature, or not launched by MPI, it is one process: rank 0 of 1.

use crate::hits::Hit;
#[cfg(feature = "mpi")]
use crate::hits::TopK;

#[cfg(feature = "mpi")]
static CLUSTER: parking_lot::Mutex<Option<chariot::cluster::Cluster>> = parking_lot::Mutex::new(None);

/// Joins the ranks if an MPI launcher started this process (with the `mpi` feature);
/// otherwise nothing. Call [`finish`] before the process ends.
pub fn start() -> Result<(), String> {
    #[cfg(feature = "mpi")]
    if chariot::cluster::Cluster::launched() {
        let c = chariot::cluster::Cluster::init().map_err(|e| e.to_string())?;
        *CLUSTER.lock() = Some(c);
    }
    Ok(())
}

/// Leaves the ranks (waits for every rank, then finalizes MPI).
pub fn finish() {
    #[cfg(feature = "mpi")]
    drop(CLUSTER.lock().take());
}

/// The cluster this process is part of, if any.
#[cfg(feature = "mpi")]
pub(crate) fn cluster() -> Option<chariot::cluster::Cluster> {
    CLUSTER.lock().clone()
}

/// This process's rank (0 alone).
pub fn rank() -> usize {
    #[cfg(feature = "mpi")]
    if let Some(c) = CLUSTER.lock().as_ref() {
        return c.rank();
    }
    0
}

/// The number of ranks (1 alone).
pub fn size() -> usize {
    #[cfg(feature = "mpi")]
    if let Some(c) = CLUSTER.lock().as_ref() {
        return c.size();
    }
    1
}

/// The sum of `v` over the ranks (wrapping; `v` alone). Collective.
pub(crate) fn sum(v: u64) -> u64 {
    #[cfg(feature = "mpi")]
    if let Some(c) = cluster() {
        return c.sum(v);
    }
    v
}

/// Every rank's best hits per query, merged on rank 0 (the `top` best of them); the
/// rank's own elsewhere. Collective.
pub(crate) fn merge_hits(hits: Vec<Vec<Hit>>, top: usize) -> Vec<Vec<Hit>> {
    #[cfg(feature = "mpi")]
    if let Some(c) = cluster() {
        if let Some(parts) = c.gather_bytes(&encode(&hits)) {
            let mut merged: Vec<TopK> = (0..hits.len()).map(|_| TopK::new(top)).collect();
            for part in &parts {
                for (q, list) in decode(part).into_iter().enumerate() {
                    for h in list {
                        if let Some(t) = merged.get_mut(q) {
                            t.offer(h.score, h.seq, || h.id);
                        }
                    }
                }
            }
            return merged.iter().map(TopK::sorted).collect();
        }
    }
    let _ = top;
    hits
}

/// Hits as bytes: per query the count, then each hit's score, subject index and name.
#[cfg(any(feature = "mpi", test))]
fn encode(hits: &[Vec<Hit>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(hits.len() as u64).to_le_bytes());
    for list in hits {
        out.extend_from_slice(&(list.len() as u64).to_le_bytes());
        for h in list {
            out.extend_from_slice(&(h.score as i64).to_le_bytes());
            out.extend_from_slice(&h.seq.to_le_bytes());
            out.extend_from_slice(&(h.id.len() as u64).to_le_bytes());
            out.extend_from_slice(h.id.as_bytes());
        }
    }
    out
}

#[cfg(any(feature = "mpi", test))]
fn decode(b: &[u8]) -> Vec<Vec<Hit>> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = b.get(at..at + n)?;
        at += n;
        Some(s)
    };
    let mut out = Vec::new();
    let word = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
    let Some(queries) = take(8).map(word) else { return out };
    for _ in 0..queries {
        let Some(n) = take(8).map(word) else { return out };
        let mut list = Vec::new();
        for _ in 0..n {
            let (Some(score), Some(seq), Some(len)) = (take(8).map(word), take(8).map(word), take(8).map(word)) else {
                return out;
            };
            let Some(id) = take(len as usize) else { return out };
            list.push(Hit { score: score as i64 as i32, seq, id: String::from_utf8_lossy(id).into_owned() });
        }
        out.push(list);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_come_back_as_they_went() {
        let h = |score: i32, seq: u64, id: &str| Hit { score, seq, id: id.into() };
        let hits = vec![vec![h(90, 3, "sp|P1"), h(-2, 7, "")], vec![], vec![h(41, 0, "x")]];
        assert_eq!(decode(&encode(&hits)), hits);
    }
}
