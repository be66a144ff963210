//! What the ranks tell each other at `synchronize` (issue 19): how many tasks each
//! submitted in the batch (the same program submits the same stream on every rank; a
//! mismatch is an error), and every rank's failures, so that each rank's
//! `synchronize` names every failed task of the batch and the rank that held it.
//! Collective: every rank calls it once per batch.

use crate::ids::TaskId;
use crate::report::TaskFailure;
use crate::stage::Stage;
use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;

/// What one rank brings to the exchange.
pub(crate) struct Share<'a> {
    pub(crate) submitted: u64,
    pub(crate) failures: &'a [TaskFailure],
}

/// What every rank brought: per rank its count of submitted tasks, and every failure,
/// rank by rank, each with the rank that held its task.
pub(crate) struct Gathered {
    pub(crate) submitted: Vec<u64>,
    pub(crate) failures: Vec<(usize, TaskFailure)>,
}

/// Exchanges `share` among all ranks.
pub(crate) fn all(share: &Share<'_>) -> Gathered {
    let world = SimpleCommunicator::world();
    let size = world.size() as usize;
    let mut submitted = vec![0u64; size];
    world.all_gather_into(&share.submitted, &mut submitted[..]);
    let bytes = encode(share.failures);
    let len = bytes.len() as Count;
    let mut lens = vec![0 as Count; size];
    world.all_gather_into(&len, &mut lens[..]);
    let displs: Vec<Count> = lens
        .iter()
        .scan(0, |at, &l| {
            let d = *at;
            *at += l;
            Some(d)
        })
        .collect();
    let mut all = vec![0u8; lens.iter().map(|&l| l as usize).sum()];
    // Nothing failed anywhere (every rank sees the same lengths): no exchange, and no
    // empty buffers, which MPI may take for aliased ones.
    if !all.is_empty() {
        let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        world.all_gather_varcount_into(&bytes[..], &mut part);
    }
    let mut failures = Vec::new();
    for (r, (&d, &l)) in displs.iter().zip(&lens).enumerate() {
        decode(&all[d as usize..(d + l) as usize], r, &mut failures);
    }
    Gathered { submitted, failures }
}

/// A failure as bytes: task, command, stage, GPU, stream (u64 each, little-endian),
/// then the message's length and UTF-8 (the driver's error is in the message).
fn encode(failures: &[TaskFailure]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in failures {
        for v in [f.task.0, f.command as u64, f.stage.index() as u64, f.gpu as u64, f.stream as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(f.message.len() as u64).to_le_bytes());
        out.extend_from_slice(f.message.as_bytes());
    }
    out
}

fn decode(mut b: &[u8], rank: usize, out: &mut Vec<(usize, TaskFailure)>) {
    let word = |b: &mut &[u8]| -> Option<u64> {
        let (w, rest) = b.split_first_chunk::<8>()?;
        *b = rest;
        Some(u64::from_le_bytes(*w))
    };
    while !b.is_empty() {
        let (Some(task), Some(command), Some(stage), Some(gpu), Some(stream), Some(len)) =
            (word(&mut b), word(&mut b), word(&mut b), word(&mut b), word(&mut b), word(&mut b))
        else {
            return;
        };
        let len = (len as usize).min(b.len());
        let message = String::from_utf8_lossy(&b[..len]).into_owned();
        b = &b[len..];
        let failure = TaskFailure {
            task: TaskId(task),
            command: command as usize,
            stage: Stage::ALL.get(stage as usize).copied().unwrap_or(Stage::Cpu),
            gpu: gpu as usize,
            stream: stream as usize,
            message,
            driver: None,
        };
        out.push((rank, failure));
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn failures_come_back_as_they_went() {
        let f = |t: u64, m: &str| TaskFailure {
            task: TaskId(t),
            command: 2,
            stage: Stage::Kernel,
            gpu: 1,
            stream: 3,
            message: m.into(),
            driver: None,
        };
        let sent = [f(7, "illegal address"), f(9, "not run: it runs after task #7, which failed")];
        let mut got = Vec::new();
        decode(&encode(&sent), 2, &mut got);
        assert_eq!(got.len(), 2);
        for ((r, g), s) in got.iter().zip(&sent) {
            assert_eq!((*r, g.task, g.command, g.stage, g.gpu, g.stream), (2, s.task, 2, Stage::Kernel, 1, 3));
            assert_eq!(g.message, s.message);
        }
    }
}
