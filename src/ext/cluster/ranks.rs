//! A scheduler's share of a cluster's task stream (the `mpi` feature): which
//! of the batch's tasks this rank runs, and what the ranks tell each other at
//! `synchronize` (`ext::cluster::{handout, exchange}`).
//!
//! Position i of the batch (its i-th submit, the same task on every rank) is this
//! rank's if it lies in a block rank 0 gave this rank. A rank asks for the next block
//! when its submits reach the end of its last one, and only once its tasks in flight
//! are fewer than [`RankShare::depth`]: the user's loop waits there, so a rank takes
//! work at the pace its GPUs finish it. A rank whose GPUs have all left the rotation
//! takes no more. A task named by `after` runs where the task it names runs: the rank
//! that has it takes the task that names it.

use crate::dispatch::shared::Shared;
use crate::error::{Error, Result};
use crate::ext::cluster::exchange::{self, Share};
use crate::ext::cluster::Cluster;
use crate::ids::TaskId;
use crate::memory::claims::Region;
use crate::memory::{Element, HostBuffer};
use crate::report::{CommandRecord, TaskFailure};
use crate::sync::Ordering;
use parking_lot::Mutex;

/// Positions claimed at a time.
const BLOCK: u64 = 1;

struct State {
    batch: u64,
    /// Every task submitted in this batch, whichever rank runs it.
    seen: rustc_hash::FxHashSet<TaskId>,
    /// Tasks submitted in this batch, and those this rank took.
    submitted: u64,
    taken: u64,
    /// The next handed-out task's position (tasks without `after`, in submit order).
    next: u64,
    /// This rank's current block of positions.
    start: u64,
    end: u64,
    /// No GPU of this rank is left: it takes no more.
    stopped: bool,
    /// The host regions this rank's tasks of this batch write (task, buffer, bytes).
    written: Vec<(TaskId, u64, Region)>,
    /// Those of the last batch `synchronize` ended whose tasks ran well, for `gather`.
    last_written: Vec<(u64, Region)>,
}

/// One scheduler's place in a cluster's stream.
pub(crate) struct RankShare {
    pub(crate) cluster: Cluster,
    /// The most tasks in flight before this rank asks for more.
    depth: usize,
    /// The most tasks waiting in Q (bound to no GPU yet) before it asks for more.
    waiting: usize,
    st: Mutex<State>,
}

impl RankShare {
    /// Takes `cluster` for this scheduler (refused where another has it).
    pub(crate) fn new(cluster: Cluster, depth: usize, waiting: usize, shared: &Shared) -> Result<RankShare> {
        if !cluster.attach() {
            return Err(Error::Cluster {
                rank: Some(cluster.rank()),
                message: "another scheduler of this process takes part in the cluster's stream; drop it first".into(),
            });
        }
        shared.claims.set(depth);
        let batch = cluster.next_batch();
        Ok(RankShare {
            cluster,
            depth,
            waiting,
            st: Mutex::new(State {
                batch,
                seen: Default::default(),
                submitted: 0,
                taken: 0,
                next: 0,
                start: 0,
                end: 0,
                stopped: false,
                written: Vec::new(),
                last_written: Vec::new(),
            }),
        })
    }

    /// Whether this rank runs the batch's next submitted task, `id` (`after`: the tasks
    /// it names; `local`: whether a task of this batch is this rank's). Counts the
    /// position either way. Refuses, on every rank alike, an id submitted before in
    /// this batch, or an `after` naming itself or a task not submitted in it.
    pub(crate) fn takes(
        &self,
        shared: &Shared,
        id: TaskId,
        after: &[TaskId],
        local: impl Fn(TaskId) -> bool,
    ) -> Result<bool> {
        let mut st = self.st.lock();
        if st.seen.contains(&id) {
            return Err(Error::DuplicateTask { task: id });
        }
        for &p in after {
            if p == id {
                return Err(Error::DependencyCycle { task: id });
            }
            if !st.seen.contains(&p) {
                return Err(Error::UnknownDependency { task: id, dependency: p });
            }
        }
        st.seen.insert(id);
        st.submitted += 1;
        // A task that names others goes where the first of them is, without a position
        // (positions count only the tasks handed out, or the counter would fall behind
        // a rank's next position and tasks would run nowhere).
        if let Some(&p) = after.first() {
            let mine = local(p);
            st.taken += mine as u64;
            return Ok(mine);
        }
        let at = st.next;
        st.next += 1;
        if st.stopped {
            return Ok(false);
        }
        if at >= st.end {
            let lost = || shared.alive.iter().all(|a| !a.load(Ordering::SeqCst));
            if lost() {
                st.stopped = true;
                return Ok(false);
            }
            // Room first: the loop waits here while this rank's slots are full, or
            // while tasks wait in its Q for a GPU to take them (a GPU takes one only
            // when its others have started, Algorithm 2). A task taken here waits for
            // no more than that, and the rest of the stream stays for the ranks that
            // have room. A task ending, or leaving Q, wakes it.
            {
                let mut batch = shared.batch.lock();
                while batch.outstanding >= self.depth || shared.buffer.waiting() >= self.waiting {
                    shared.batch_done.wait(&mut batch);
                }
            }
            if lost() {
                st.stopped = true;
                return Ok(false);
            }
            let start = self.cluster.inner.handout.claim(st.batch, BLOCK);
            st.start = start;
            st.end = start + BLOCK;
        }
        let mine = at >= st.start && at < st.end;
        st.taken += mine as u64;
        Ok(mine)
    }

    /// At `synchronize`, after this rank's batch ended (its `failures`, `records` and
    /// `gpus`, its clock started at `epoch`): every rank's failures, each naming the rank that
    /// held the task (in rank order), and on rank 0 every rank's GPUs and records (see
    /// `exchange`); the next batch begun. An error where the ranks did not submit the
    /// same number of tasks.
    pub(crate) fn end_batch(
        &self,
        failures: &[TaskFailure],
        records: &[CommandRecord],
        gpus: &[String],
        epoch: std::time::Instant,
    ) -> Result<(Vec<TaskFailure>, Option<exchange::Whole>)> {
        let mut st = self.st.lock();
        let (submitted, taken) = (st.submitted, st.taken);
        let all = exchange::all(&Share { submitted, taken, failures, gpus, records, epoch });
        st.batch = self.cluster.next_batch();
        st.seen.clear();
        let written = std::mem::take(&mut st.written);
        st.last_written = written
            .into_iter()
            .filter(|(t, ..)| !failures.iter().any(|f| f.task == *t))
            .map(|(_, h, r)| (h, r))
            .collect();
        st.submitted = 0;
        st.taken = 0;
        st.next = 0;
        st.start = 0;
        st.end = 0;
        st.stopped = false;
        if let Some((r, n)) = all.submitted.iter().enumerate().find(|(_, &n)| n != submitted) {
            return Err(Error::Cluster {
                rank: Some(self.cluster.rank()),
                message: format!(
                    "the ranks submitted different task streams in this batch: this rank {submitted} tasks, \
                     rank {r} {n}; every rank must run the same loop"
                ),
            });
        }
        let ran: u64 = all.taken.iter().sum();
        if ran != submitted {
            return Err(Error::Cluster {
                rank: Some(self.cluster.rank()),
                message: format!(
                    "{} of the batch's {submitted} tasks ran on no rank (taken per rank: {:?}): the ranks that \
                     held their places lost every GPU, or a task names one that failed at submit",
                    submitted.saturating_sub(ran),
                    all.taken
                ),
            });
        }
        let failures =
            all.failures.into_iter().map(|(r, f)| TaskFailure { message: format!("on rank {r}: {}", f.message), ..f });
        Ok((failures.collect(), all.whole))
    }
}

impl RankShare {
    /// The rank's share as an admission step of a submit: whether this rank runs task
    /// `id` ([`RankShare::takes`]); if so, notes the host regions it writes, for
    /// `gather`.
    pub(crate) fn admit(
        &self,
        shared: &Shared,
        id: TaskId,
        after: &[TaskId],
        claims: &[crate::task::HostClaim],
        local: impl Fn(TaskId) -> bool,
    ) -> Result<bool> {
        if !self.takes(shared, id, after, local)? {
            return Ok(false);
        }
        for c in claims.iter().filter(|c| c.write) {
            self.wrote(id, c.host.id, c.region);
        }
        Ok(true)
    }

    /// Notes that task `task`, this rank's, writes `region` of host buffer `host`.
    pub(crate) fn wrote(&self, task: TaskId, host: u64, region: Region) {
        self.st.lock().written.push((task, host, region));
    }

    /// Brings into rank 0's `buf` the regions of it that the other ranks' tasks of the
    /// last batch wrote and ran well (see `Scheduler::gather`). Collective.
    pub(crate) fn gather<T: Element>(&self, buf: &mut HostBuffer<T>) -> Result<()> {
        let rank = self.cluster.rank();
        let regions: Vec<Region> = {
            let st = self.st.lock();
            st.last_written.iter().filter(|(h, _)| *h == buf.id()).map(|&(_, r)| r).collect()
        };
        // This rank's part: the buffer's length, then each row written (start, length,
        // bytes). Rank 0 sends nothing of its own: its rows are in place.
        let mut part = Vec::new();
        {
            let data = buf.read();
            let bytes: &[u8] = bytemuck::cast_slice(&data);
            part.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            if rank != 0 {
                for r in &regions {
                    for row in 0..r.height {
                        let at = r.start + row * r.pitch;
                        let Some(row_bytes) = bytes.get(at..at + r.width) else { continue };
                        part.extend_from_slice(&(at as u64).to_le_bytes());
                        part.extend_from_slice(&(r.width as u64).to_le_bytes());
                        part.extend_from_slice(row_bytes);
                    }
                }
            }
        }
        let Some(parts) = exchange::to_root(&mpi::topology::SimpleCommunicator::world(), &part) else {
            return Ok(());
        };
        let id = buf.id();
        let mut data = buf.write();
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut data);
        let len = bytes.len();
        for (r, p) in parts.iter().enumerate().skip(1) {
            let word = |b: &[u8], at: usize| b.get(at..at + 8).map(|w| u64::from_le_bytes(w.try_into().expect("8")));
            if word(p, 0) != Some(len as u64) {
                return Err(Error::Cluster {
                    rank: Some(rank),
                    message: format!(
                        "gather: host buffer {id} holds {len} bytes here and {} on rank {r}: every rank must \
                         allocate the same buffers in the same order",
                        word(p, 0).map_or_else(|| "no length".to_string(), |w| format!("{w} bytes")),
                    ),
                });
            }
            let mut at = 8;
            while let (Some(start), Some(width)) = (word(p, at), word(p, at + 8)) {
                let (start, width) = (start as usize, width as usize);
                let (Some(src), Some(dst)) = (p.get(at + 16..at + 16 + width), bytes.get_mut(start..start + width))
                else {
                    break;
                };
                dst.copy_from_slice(src);
                at += 16 + width;
            }
        }
        Ok(())
    }
}

impl Drop for RankShare {
    fn drop(&mut self) {
        self.cluster.detach();
    }
}
