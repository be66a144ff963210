//! What the ranks tell each other at `synchronize` (the cluster form): how many tasks each
//! submitted in the batch (the same program submits the same stream on every rank; a
//! mismatch is an error), and every rank's failures, so that each rank's
//! `synchronize` names every failed task of the batch and the rank that held it. Rank
//! 0 also gets every rank's GPUs and timeline, for one report of the whole batch: each
//! rank's clock is moved onto rank 0's at the exchange (each says where its clock
//! stands as it enters; they enter together to within the exchange's latency).
//! Collective: every rank calls it once per batch.

use crate::ids::TaskId;
use crate::report::{CommandRecord, TaskFailure};
use crate::stage::Stage;
use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;

/// What one rank brings to the exchange.
pub(crate) struct Share<'a> {
    pub(crate) submitted: u64,
    /// Tasks this rank took.
    pub(crate) taken: u64,
    pub(crate) failures: &'a [TaskFailure],
    /// Its GPUs' names and its batch's records (for rank 0's report).
    pub(crate) gpus: &'a [String],
    pub(crate) records: &'a [CommandRecord],
    /// When its scheduler started: its clock, read once every rank is in the exchange.
    pub(crate) epoch: std::time::Instant,
}

/// What every rank brought: per rank its count of submitted tasks, and every failure,
/// rank by rank, each with the rank that held its task; on rank 0, every rank's GPUs
/// ("rank r: name", rank by rank) and records (on rank 0's clock, GPUs numbered in
/// that list).
pub(crate) struct Gathered {
    pub(crate) submitted: Vec<u64>,
    pub(crate) taken: Vec<u64>,
    pub(crate) failures: Vec<(usize, TaskFailure)>,
    pub(crate) whole: Option<Whole>,
}

/// Every rank's GPUs (named "rank r: …") and records, on rank 0.
pub(crate) type Whole = (Vec<String>, Vec<CommandRecord>);

/// Exchanges `share` among all ranks.
pub(crate) fn all(share: &Share<'_>) -> Gathered {
    let world = SimpleCommunicator::world();
    let size = world.size() as usize;
    let mut submitted = vec![0u64; size];
    world.all_gather_into(&share.submitted, &mut submitted[..]);
    // Every rank is here now (a rank that finished early waited above): the clocks are
    // read together, to within this exchange's latency.
    let now_ns = share.epoch.elapsed().as_nanos() as u64;
    let mut taken = vec![0u64; size];
    world.all_gather_into(&share.taken, &mut taken[..]);
    let bytes = encode(share.failures);
    let len = bytes.len() as Count;
    let mut lens = vec![0 as Count; size];
    world.all_gather_into(&len, &mut lens[..]);
    let displs = offsets(&lens);
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
    let whole = to_root(&world, &encode_timeline(share, now_ns)).map(|parts| {
        let mut names = Vec::new();
        let mut records = Vec::new();
        let root_now = now_ns;
        for (r, part) in parts.iter().enumerate() {
            let first_gpu = names.len() as u16;
            decode_timeline(part, r, first_gpu, root_now, &mut names, &mut records);
        }
        (names, records)
    });
    Gathered { submitted, taken, failures, whole }
}

/// Where each rank's part starts in the gathered buffer: the running sum of `lens`.
fn offsets(lens: &[Count]) -> Vec<Count> {
    lens.iter()
        .scan(0, |at, &l| {
            let d = *at;
            *at += l;
            Some(d)
        })
        .collect()
}

/// Gathers `bytes` of every rank on rank 0: per rank its bytes there, `None` elsewhere.
/// Collective.
pub(crate) fn to_root(world: &SimpleCommunicator, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let root = world.process_at_rank(0);
    let len = bytes.len() as Count;
    if world.rank() != 0 {
        root.gather_into(&len);
        root.gather_varcount_into(bytes);
        return None;
    }
    let mut lens = vec![0 as Count; world.size() as usize];
    root.gather_into_root(&len, &mut lens[..]);
    let displs = offsets(&lens);
    let mut all = vec![0u8; lens.iter().map(|&l| l as usize).sum::<usize>().max(1)];
    {
        let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
        root.gather_varcount_into_root(bytes, &mut part);
    }
    Some(displs.iter().zip(&lens).map(|(&d, &l)| all[d as usize..(d + l) as usize].to_vec()).collect())
}

/// A rank's GPUs and timeline as bytes: its clock, the GPU count and names (length,
/// UTF-8), then the records, fixed-size.
fn encode_timeline(share: &Share<'_>, now_ns: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + share.records.len() * RECORD);
    out.extend_from_slice(&now_ns.to_le_bytes());
    out.extend_from_slice(&(share.gpus.len() as u64).to_le_bytes());
    for g in share.gpus {
        out.extend_from_slice(&(g.len() as u64).to_le_bytes());
        out.extend_from_slice(g.as_bytes());
    }
    for r in share.records {
        for v in [r.task.0, r.granularity, r.dispatched_ns, r.start_ns, r.end_ns, r.bytes] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&r.command.to_le_bytes());
        out.extend_from_slice(&r.gpu.to_le_bytes());
        out.extend_from_slice(&r.stream.to_le_bytes());
        out.push(r.stage.index() as u8);
        out.push(r.failed as u8);
    }
    out
}

/// Bytes of one record in [`encode_timeline`].
const RECORD: usize = 6 * 8 + 4 + 2 + 2 + 1 + 1;

/// Reads rank `rank`'s part: its GPUs named "rank r: …" and numbered from `first_gpu`,
/// its records moved onto the root's clock (`root_now` at the exchange).
fn decode_timeline(
    mut b: &[u8],
    rank: usize,
    first_gpu: u16,
    root_now: u64,
    names: &mut Vec<String>,
    records: &mut Vec<CommandRecord>,
) {
    let word = |b: &mut &[u8]| -> Option<u64> {
        let (w, rest) = b.split_first_chunk::<8>()?;
        *b = rest;
        Some(u64::from_le_bytes(*w))
    };
    let (Some(now), Some(gpus)) = (word(&mut b), word(&mut b)) else { return };
    for _ in 0..gpus {
        let Some(len) = word(&mut b) else { return };
        let len = (len as usize).min(b.len());
        names.push(format!("rank {rank}: {}", String::from_utf8_lossy(&b[..len])));
        b = &b[len..];
    }
    // Records at `t` on this rank's clock are at `t + root_now − now` on the root's.
    let shift = |t: u64| (t as i128 + root_now as i128 - now as i128).max(0) as u64;
    for c in b.chunks_exact(RECORD) {
        let w = |i: usize| u64::from_le_bytes(c[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let rest = &c[48..];
        records.push(CommandRecord {
            task: TaskId(w(0)),
            granularity: w(1),
            dispatched_ns: shift(w(2)),
            start_ns: shift(w(3)),
            end_ns: shift(w(4)),
            bytes: w(5),
            command: u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes")),
            gpu: first_gpu + u16::from_le_bytes(rest[4..6].try_into().expect("2 bytes")),
            stream: u16::from_le_bytes(rest[6..8].try_into().expect("2 bytes")),
            stage: Stage::ALL.get(rest[8] as usize).copied().unwrap_or(Stage::Cpu),
            failed: rest[9] != 0,
        });
    }
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
    fn timelines_come_back_renumbered_and_on_the_root_clock() {
        let rec = |gpu: u16, start: u64| CommandRecord {
            task: TaskId(5),
            granularity: 9,
            command: 1,
            stage: Stage::Readback,
            gpu,
            stream: 2,
            dispatched_ns: start - 10,
            start_ns: start,
            end_ns: start + 100,
            bytes: 4096,
            failed: false,
        };
        let gpus = ["H100".to_string(), "H100".to_string()];
        let records = [rec(0, 1_000), rec(1, 2_000)];
        let epoch = std::time::Instant::now();
        let share = Share { submitted: 2, taken: 2, failures: &[], gpus: &gpus, records: &records, epoch };
        let (mut names, mut got) = (vec!["rank 0: H100".to_string()], Vec::new());
        // The root's clock stood at 7,000 when this rank's stood at 5,000.
        decode_timeline(&encode_timeline(&share, 5_000), 1, 1, 7_000, &mut names, &mut got);
        assert_eq!(names, ["rank 0: H100", "rank 1: H100", "rank 1: H100"]);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].gpu, got[0].start_ns, got[0].end_ns, got[0].dispatched_ns), (1, 3_000, 3_100, 2_990));
        assert_eq!((got[1].gpu, got[1].stage, got[1].stream, got[1].bytes), (2, Stage::Readback, 2, 4096));
    }

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
