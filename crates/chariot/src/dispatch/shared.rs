//! What the dispatchers share with the scheduler: the task buffer Q, the stage queues
//! P_k, the batch that `synchronize` waits on (with the batch's task graph), and what
//! the report is built from. The scheduler makes it; the dispatchers end, move and fail
//! tasks through it, and ending a task releases the tasks that wait for it.

use crate::ids::TaskId;
use crate::memory::claims::Holder;
use crate::memory::ResidentInner;
use crate::report::{Adapted, CommandRecord, DispatchStats, KernelUse, LostGpu, MovedTask, Outcome, TaskFailure};
use crate::signal::Signal;
use crate::stage::queues::StageQueues;
use crate::sync::{AtomicBool, AtomicUsize, Condvar, Ordering};
use crate::task::buffer::TaskBuffer;
use crate::task::graph::{Added, Graph, Released};
use crate::task::window::Window;
use crate::task::Task;
use parking_lot::Mutex;
use std::sync::{Arc, Weak};
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

/// The most ended window tasks kept for the submitting thread to free.
const SPENT_MAX: usize = 1 << 16;

/// What a replay window leaves when it ends, for the submitting thread to free.
pub(crate) enum Spent {
    Task(#[allow(dead_code)] Box<Task>),
    /// Its layout (its tasks taken out).
    Window(#[allow(dead_code)] Box<Window>),
}

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
    pub(crate) timelines: Vec<Mutex<Vec<CommandRecord>>>,
    pub(crate) stats: Vec<Mutex<DispatchStats>>,
    /// The adaptation's changes since the last `synchronize`.
    pub(crate) adaptations: Mutex<Vec<Adapted>>,
    /// Per GPU: the kernel stage's capacity in GPU-fills in force now, where the stage is
    /// counted by fill (the adaptation moves it), for the report's kernel lines.
    pub(crate) kernel_fills_now: Mutex<Vec<Option<f64>>>,
    /// Every kernel launched so far and the fill of its launches, for the report.
    pub(crate) kernels: Mutex<Vec<KernelUse>>,
    /// Per GPU: replay windows waiting for it (`dispatch::window`), and their count
    /// (read without the lock on every turn).
    pub(crate) windows: Vec<Mutex<std::collections::VecDeque<Box<Window>>>>,
    pub(crate) windows_queued: Vec<AtomicUsize>,
    /// Tasks of replay windows that ended, to be freed by the submitting thread (at
    /// the next sub-window's cut, or at `synchronize`): freed here they were allocated,
    /// not on a dispatcher while the user's loop allocates the next ones, whose
    /// allocator they would contend for.
    pub(crate) spent: Mutex<Vec<Spent>>,
    /// In a cluster: a submit waits for this rank's tasks in flight to fall
    /// below this before it takes more (0: no cluster); `batch_done` tells it.
    pub(crate) claim_depth: AtomicUsize,
    /// Every resident buffer allocated (for eviction and lost GPUs); dropped ones are
    /// pruned as new ones come.
    pub(crate) residents: Mutex<Vec<Weak<ResidentInner>>>,
    pub(crate) epoch: Instant,
}

impl Shared {
    pub(crate) fn wake_all(&self) {
        for s in &self.signals {
            s.notify();
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
            if batch.outstanding == 0 || batch.outstanding < self.claim_depth.load(Ordering::Relaxed) {
                self.batch_done.notify_all();
            }
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

    /// Ends many tasks at once (a replay window's): as [`Shared::end_task`] each, but
    /// under one lock of the batch, their memory kept for the submitting thread to free
    /// ([`Shared::bury`], before the batch is told: `synchronize` frees what it finds),
    /// and the dispatchers with windows queued woken (a window may wait for these).
    pub(crate) fn end_tasks(&self, tasks: Vec<(Box<Task>, Option<TaskFailure>)>) {
        let mut released = Vec::new();
        let mut ended = Vec::with_capacity(tasks.len());
        let mut spent = Vec::with_capacity(tasks.len());
        for (mut task, failure) in tasks {
            for h in &task.hosts {
                h.release(Holder::Task(task.id));
            }
            task.residency.end(task.id, failure.is_none());
            ended.push((task.id, failure));
            spent.push(Spent::Task(task));
        }
        self.bury(spent.into_iter());
        let mut fail_at = (0, 0);
        {
            let mut batch = self.batch.lock();
            for (id, failure) in &mut ended {
                batch.graph.end(*id, failure.is_some(), &mut released);
                batch.outstanding -= 1;
                if let Some(f) = failure.take() {
                    fail_at = (f.gpu, f.stream);
                    batch.outcome.failures.push(f);
                }
            }
            if batch.outstanding == 0 || batch.outstanding < self.claim_depth.load(Ordering::Relaxed) {
                self.batch_done.notify_all();
            }
        }
        self.wake_window_waiters();
        for r in released {
            match r {
                Released::Ready(t) => self.ready(t),
                Released::Failed(t, cause) => {
                    let f = not_run(&t, cause, fail_at.0, fail_at.1);
                    self.end_task(t, Some(f));
                }
            }
        }
    }

    /// Keeps ended tasks for [`Shared::free_spent`], up to [`SPENT_MAX`] (beyond it
    /// they are freed here: a batch that never synchronizes keeps no more).
    pub(crate) fn bury(&self, what: impl Iterator<Item = Spent>) {
        let mut spent = self.spent.lock();
        for s in what {
            if spent.len() < SPENT_MAX {
                spent.push(s);
            }
        }
    }

    /// In a cluster, wakes the submitting thread where it waits for room to take more
    /// of the stream (`scheduler::ranks`): a task has left Q. The batch lock is taken
    /// first so that a waiter between its check and its wait is not missed.
    pub(crate) fn wake_claimer(&self) {
        if self.claim_depth.load(Ordering::Relaxed) > 0 {
            drop(self.batch.lock());
            self.batch_done.notify_all();
        }
    }

    /// Wakes the dispatchers that have windows queued: one may wait for tasks that
    /// just ended (`dispatch::window`).
    pub(crate) fn wake_window_waiters(&self) {
        for (g, queued) in self.windows_queued.iter().enumerate() {
            if queued.load(Ordering::SeqCst) > 0 {
                self.signals[g].notify();
            }
        }
    }

    /// Frees the ended tasks kept by [`Shared::bury`] (on the submitting thread).
    pub(crate) fn free_spent(&self) {
        let spent = std::mem::take(&mut *self.spent.lock());
        drop(spent);
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
        task.residency.home = self.home(&task);
        self.buffer.push(task);
        self.wake_all();
    }

    /// Where a ready task's resident data is: the GPU in the rotation holding the most
    /// bytes of what it reads (the first of equals), if any holds some. With one GPU
    /// there is no choice to make.
    fn home(&self, task: &Task) -> Option<usize> {
        let d = self.alive.len();
        if d < 2 || task.residency.uses.iter().all(|u| u.read.is_empty()) {
            return None;
        }
        (0..d)
            .filter(|&g| self.alive[g].load(Ordering::SeqCst))
            .map(|g| (g, task.residency.uses.iter().map(|u| u.buf.valid_bytes(g, &u.read)).sum::<usize>()))
            .filter(|&(_, bytes)| bytes > 0)
            .fold(None, |best: Option<(usize, usize)>, (g, b)| match best {
                Some((_, bb)) if bb >= b => best,
                _ => Some((g, b)),
            })
            .map(|(g, _)| g)
    }

    /// The resident buffers alive now.
    pub(crate) fn residents(&self) -> Vec<Arc<ResidentInner>> {
        self.residents.lock().iter().filter_map(Weak::upgrade).collect()
    }

    /// Queues a replay window for GPU `gpu`, or the first other GPU in the rotation if
    /// that one has left it; gives it back if none is left. The rotation is read under
    /// the queue's lock, which a leaving GPU takes after it marks itself out, so no
    /// window is queued where nobody will take it.
    pub(crate) fn push_window(&self, gpu: usize, window: Box<Window>) -> Result<(), Box<Window>> {
        for g in std::iter::once(gpu).chain(0..self.alive.len()) {
            let mut queue = self.windows[g].lock();
            if self.alive[g].load(Ordering::SeqCst) {
                queue.push_back(window);
                self.windows_queued[g].fetch_add(1, Ordering::SeqCst);
                drop(queue);
                self.signals[g].notify();
                return Ok(());
            }
        }
        Err(window)
    }

    /// GPU `gpu` is lost: the copies of resident data there are gone.
    fn resident_gpu_lost(&self, gpu: usize) {
        for r in self.residents() {
            r.gpu_lost(gpu);
        }
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
        self.resident_gpu_lost(lost.gpu);
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
