//! What the dispatchers share with the scheduler: the pipeline (the task buffer Q, the
//! stage queues P_k, the signals, the GPUs in the rotation, the dispatchers' liveness),
//! the batch that `synchronize` waits on (with the batch's task graph), the report's
//! recorders (`recorders.rs`), and each extension's own state, owned by the extension
//! and reached through `crate::seam` (the replay windows' queues, the resident
//! buffers, the cluster's claim gate). The scheduler makes it; the dispatchers end, move and fail
//! tasks through it, and ending a task releases the tasks that wait for it.

use crate::dispatch::recorders::Recorders;
use crate::ids::TaskId;
use crate::memory::claims::Holder;
use crate::report::{LostGpu, MovedTask, Outcome, TaskFailure};
use crate::signal::Signal;
use crate::stage::queues::StageQueues;
use crate::sync::{AtomicBool, AtomicUsize, Condvar, Ordering};
use crate::task::buffer::TaskBuffer;
use crate::task::graph::{Added, Graph, Released};
use crate::task::Task;
use std::sync::Arc;
use std::time::Instant;

/// Tasks submitted and not yet ended (those held back by the graph included), the
/// tasks submitted since the last `synchronize`, and what ended badly.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) outstanding: usize,
    /// Every task submitted in this batch, ended or not, and what each waits for: the
    /// report counts tasks by id, so an id is taken until `synchronize` closes the batch.
    pub(crate) graph: Graph,
    pub(crate) outcome: Outcome,
}

/// Tasks left in a batch when its waiter is woken to spin through their end
/// ([`Shared::close_batch`]).
pub(crate) const WAKE_AHEAD: usize = 1;

/// How long `synchronize` spins for the batch's last tasks before it sleeps again: a
/// pipeline's last task often has less than this left when the one before it ends.
pub(crate) const SPIN_AT_END: std::time::Duration = std::time::Duration::from_millis(1);

/// What the dispatchers share with the scheduler.
pub(crate) struct Shared {
    pub(crate) buffer: TaskBuffer,
    pub(crate) queues: StageQueues,
    pub(crate) signals: Vec<Arc<Signal>>,
    /// On `crate::sync`'s primitives (as are the flags below): `synchronize` waits on
    /// it, and the model checks wait on it under shuttle.
    pub(crate) batch: crate::sync::Mutex<Batch>,
    pub(crate) batch_done: Condvar,
    pub(crate) stop: AtomicBool,
    /// Dispatchers still running their loop; the last one to die fails what is left.
    pub(crate) live: AtomicUsize,
    /// Per GPU: whether it is still in the rotation.
    pub(crate) alive: Vec<AtomicBool>,
    /// What the report is made from: per GPU its dispatcher's records, merged at
    /// `synchronize`.
    pub(crate) records: Recorders,
    /// The replay windows' state (`crate::seam`): windows queued per GPU, and what
    /// ended windows leave for the submitting thread to free.
    pub(crate) windows: crate::seam::WindowQueues,
    /// The cluster's state (`crate::seam`): in a cluster, a submit waits for this
    /// rank's tasks in flight to fall below a depth before it takes more; `batch_done`
    /// tells it.
    pub(crate) claims: crate::seam::ClaimGate,
    /// Resident data's state (`crate::seam`): every resident buffer allocated.
    pub(crate) resident: crate::seam::Residents,
    /// Whether this batch's dispatchers were woken ahead of its first task
    /// ([`Shared::wake_for_batch`]); cleared when the batch closes.
    pub(crate) woken_for_batch: AtomicBool,
    pub(crate) epoch: Instant,
}

impl Shared {
    pub(crate) fn wake_all(&self) {
        for s in &self.signals {
            s.notify();
        }
    }

    /// Wakes the dispatchers once per batch, ahead of its first task: see
    /// `Scheduler::wake_for_batch`. One load of a flag after the first call.
    pub(crate) fn wake_for_batch(&self) {
        if !self.woken_for_batch.load(Ordering::Relaxed) && !self.woken_for_batch.swap(true, Ordering::Relaxed) {
            self.wake_all();
        }
    }

    /// Ends a task: gives back its host claims, counts it out of the batch (its id stays
    /// taken until `synchronize`), and releases the tasks that waited for it: those now
    /// ready go to Q ([`Shared::ready`]); if it failed, those waiting for it end failed
    /// without running, and theirs in turn. No lock is held across another's.
    pub(crate) fn end_task(&self, task: Box<Task>, failure: Option<TaskFailure>) {
        let mut released = Vec::new();
        let mut failing = Vec::new();
        let mut next = Some((task, failure));
        while let Some((mut task, failure)) = next.take().or_else(|| failing.pop()) {
            let id = task.id;
            for h in &task.hosts {
                h.release(Holder::Task(id));
            }
            // Before its dependents are released: what it wrote is where they look.
            task.residency.end(id, failure.is_none());
            drop(task);
            let (gpu, stream) = failure.as_ref().map_or((0, 0), |f| (f.gpu, f.stream));
            let mut batch = self.batch.lock();
            batch.graph.end(id, failure.is_some(), &mut released);
            batch.outstanding -= 1;
            batch.outcome.failures.extend(failure);
            self.tell_batch(&batch);
            drop(batch);
            for r in released.drain(..) {
                match r {
                    Released::Ready(t) => self.ready(t),
                    Released::Failed(t, cause) => {
                        let f = not_run(&t, cause, gpu, stream);
                        failing.push((t, Some(f)));
                    }
                }
            }
        }
    }

    /// Tells the waiters on the batch (`synchronize`; in a cluster, a submit waiting
    /// for room) that tasks ended: at the last, and [`WAKE_AHEAD`] tasks before it, so
    /// that `synchronize` is awake when the batch ends. Called with the batch locked.
    pub(crate) fn tell_batch(&self, batch: &Batch) {
        if batch.outstanding <= WAKE_AHEAD || self.claims.waits_below(batch.outstanding) {
            self.batch_done.notify_all();
        }
    }

    /// Waits until every task of the batch has ended, or until `deadline`, then closes
    /// the batch: its outcome (`None` at the deadline, the batch left whole). Once no
    /// more than [`WAKE_AHEAD`] tasks are left it spins through their end for up to
    /// [`SPIN_AT_END`] instead of sleeping: a sleeping thread's wake-up takes tens to
    /// hundreds of microseconds (the most on a virtual machine), which the caller's
    /// time would count after the last command.
    pub(crate) fn close_batch(&self, deadline: Option<Instant>) -> Option<Outcome> {
        let mut batch = self.batch.lock();
        let mut spun = false;
        while batch.outstanding > 0 {
            if batch.outstanding <= WAKE_AHEAD && !spun {
                spun = true;
                let left = deadline.map_or(SPIN_AT_END, |d| d.saturating_duration_since(Instant::now()));
                let mut spin = crate::sync::SpinFor::new(left.min(SPIN_AT_END));
                drop(batch);
                batch = loop {
                    crate::sync::hint::spin_loop();
                    let b = self.batch.lock();
                    if b.outstanding == 0 || !spin.going() {
                        break b;
                    }
                };
                continue;
            }
            match deadline {
                None => self.batch_done.wait(&mut batch),
                Some(d) => {
                    if self.batch_done.wait_until(&mut batch, d) && batch.outstanding > 0 {
                        return None;
                    }
                }
            }
        }
        batch.graph.clear();
        self.woken_for_batch.store(false, Ordering::Relaxed);
        Some(std::mem::take(&mut batch.outcome))
    }

    /// In a cluster, wakes the submitting thread where it waits for room to take more
    /// of the stream (`scheduler::ranks`): a task has left Q. The batch lock is taken
    /// first so that a waiter between its check and its wait is not missed.
    pub(crate) fn wake_claimer(&self) {
        if self.claims.active() {
            drop(self.batch.lock());
            self.batch_done.notify_all();
        }
    }

    /// Counts a sealed task into the batch and the graph, to run after `after` (ids of
    /// this batch, checked by the caller): it goes to Q now if each of them has ended
    /// well, waits in the graph if one has not ended, and fails without running if one
    /// failed. The task's host claims are dormant until it goes to Q.
    pub(crate) fn admit(&self, task: Box<Task>, after: &[TaskId]) {
        let (added, at) = {
            let mut batch = self.batch.lock();
            batch.outstanding += 1;
            // The report's edges: each predecessor of this batch once (per task, not
            // per command).
            let id = task.id;
            for (i, &p) in after.iter().enumerate() {
                if !after[..i].contains(&p) && batch.graph.contains(p) {
                    batch.outcome.dependencies.push((p, id));
                }
            }
            let added = batch.graph.add(task, after);
            // Where the failed predecessor failed, for the failure of this one.
            let at = match &added {
                Added::Failed(_, cause) => {
                    batch.outcome.failures.iter().find(|f| f.task == *cause).map_or((0, 0), |f| (f.gpu, f.stream))
                }
                _ => (0, 0),
            };
            (added, at)
        };
        match added {
            Added::Ready(task) => self.ready(task),
            Added::Waiting => {}
            Added::Failed(task, cause) => {
                let failure = not_run(&task, cause, at.0, at.1);
                self.end_task(task, Some(failure));
            }
        }
    }

    /// A task whose predecessors have all ended (or that has none): its host claims
    /// become active (nothing active conflicts with them now: see `memory::claims`), it
    /// goes to Q, and the dispatchers are woken, as a submit wakes them.
    pub(crate) fn ready(&self, mut task: Box<Task>) {
        for h in &task.hosts {
            h.activate(Holder::Task(task.id));
        }
        task.residency.place(&self.alive);
        self.buffer.push(task);
        self.wake_all();
    }

    /// Puts a task moved off a lost GPU back in Q for the others, and says so in the
    /// batch's report. The task keeps its claims and stays outstanding; it gives up its
    /// copies on the lost GPU and is placed afresh.
    pub(crate) fn requeue(&self, mut task: Box<Task>, moved: MovedTask) {
        task.residency.moved();
        self.batch.lock().outcome.moved.push(moved);
        self.buffer.push(task);
        self.wake_all();
    }

    /// Records that `gpu` left the rotation. Its copies of resident data are gone from
    /// now on: no fetch plans to read them.
    pub(crate) fn lose_gpu(&self, lost: LostGpu) {
        self.alive[lost.gpu].store(false, Ordering::SeqCst);
        self.resident.gpu_lost(lost.gpu);
        self.batch.lock().outcome.lost_gpus.push(lost);
    }
}

/// The failure of a task that does not run because `cause`, a task it runs after, failed
/// (on `gpu`, `stream`: where the first failure of the chain was).
pub(crate) fn not_run(task: &Task, cause: TaskId, gpu: usize, stream: usize) -> TaskFailure {
    let stage = task.commands.first().map_or(crate::stage::Stage::Cpu, |c| c.stage());
    TaskFailure {
        task: task.id,
        command: 0,
        stage,
        gpu,
        stream,
        message: format!("not run: it runs after task {cause}, which failed"),
        driver: None,
    }
}
