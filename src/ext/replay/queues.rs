//! The replay windows' share of what the dispatchers and the scheduler share: per GPU
//! the windows queued for it (and their count, read without the lock on every turn),
//! and what ended windows leave for the submitting thread to free (a batch's last
//! ones, the thread that ends them). On `crate::sync`'s
//! primitives, so the model checks run the hand-off under shuttle.

use crate::dispatch::shared::{not_run, Shared};
use crate::dispatch::{Device, Dispatcher};
use crate::ext::replay::window::part::Part;
use crate::ext::replay::window::Window;
use crate::kernel::ArgValue;
use crate::memory::claims::Holder;
use crate::report::TaskFailure;
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::task::command::Command;
use crate::task::graph::Released;
use crate::task::Task;
use crossbeam_utils::CachePadded;
use std::collections::VecDeque;
use std::sync::{Arc, Weak};

/// The most ended window tasks kept for the submitting thread to free.
const SPENT_MAX: usize = 1 << 16;

/// The ended window tasks kept while the user's loop submits: freed then only beyond
/// this many (a few MB), so that a batch of a few thousand tasks frees its tasks as
/// `synchronize` waits for its last windows, not between the loop's submits (about
/// 0.2 µs a task on an H200's host).
pub(crate) const SPENT_KEEP: usize = 8 * 1024;

/// The most emptied tasks kept for the next submits to fill ([`WindowQueues::take_spare`]):
/// a loop of up to this many tasks a batch allocates none once it repeats.
pub(crate) const SPARE_MAX: usize = SPENT_KEEP;

/// Argument lists of ended launches kept for the next launches of the same length, up
/// to this length ([`WindowQueues::take_spare_args`]).
pub(crate) const SPARE_ARGS: usize = 8;

/// What a replay window leaves when it ends, for the submitting thread to free.
pub(crate) enum Spent {
    Task(#[allow(dead_code)] Box<Task>),
    /// Its layout (its tasks taken out).
    Window(#[allow(dead_code)] Box<Window>),
}

/// A dispatcher's state as another thread takes a turn of its replay windows
/// (`ext::replay::dispatch` has the turn): the thread that queues a recorded graph's
/// run launches it, and the thread that waits for it polls it and ends it, where the
/// dispatcher lets go of its state (it waits: spins on completions or parks;
/// `Dispatcher::run`). A hand-written CUDA graph is launched and polled by the thread
/// that waits for it; the dispatcher's wake-up (tens of microseconds) would otherwise
/// come before each launch of a run it did not foresee.
pub(crate) trait Lender: Send + Sync {
    /// If the dispatcher's state is free now: ends the first window in flight if it
    /// completed, then launches the first queued if it relaunches a kept graph or
    /// device image (`Part::relaunches`: on CUDA one launch, never a lowering, where
    /// the backend still keeps it); whether either
    /// happened. The dispatcher is rung where work is left to it (a run in flight,
    /// windows queued, a GPU lost).
    fn take_turn(&self) -> bool;
}

/// Spare argument lists by length (1 to [`SPARE_ARGS`]).
type SpareArgs = [Vec<Arc<[ArgValue]>>; SPARE_ARGS];

/// The windows waiting for each GPU, and the ended tasks kept for the submitting thread.
pub(crate) struct WindowQueues {
    /// Per GPU: replay windows waiting for it, and their count.
    pub(crate) queued: Vec<Mutex<VecDeque<Box<Window>>>>,
    pub(crate) count: Vec<AtomicUsize>,
    /// Tasks of replay windows that ended, to be freed by the submitting thread (as
    /// `synchronize` starts to wait, or at a sub-window's cut beyond [`SPENT_KEEP`]):
    /// freed on the thread that allocated them, not on a dispatcher while the user's
    /// loop allocates the next ones, whose allocator they would contend for (measured
    /// on an H200, 2026-11-29: freeing each window's tasks where it ended made the
    /// loop's submits 0.2 ms slower a batch). A batch's last ones, which end while
    /// `synchronize` waits and nothing is submitted, the thread that ends them frees.
    spent: CachePadded<Mutex<Vec<Spent>>>,
    /// Ended tasks emptied by the submitting thread as it frees the spent ones (their
    /// commands, claims and resident data let go; their box and command list kept):
    /// the next submits fill them instead of allocating (two allocations and two frees
    /// a task, of about six). Boxed: the box is what is reused.
    /// This and `spare_args` are taken on every submit, each on a cache line of its
    /// own, so that the dispatchers' writes to the fields beside them (as windows end)
    /// do not take that line from the submitting thread's core.
    #[allow(clippy::vec_box)]
    spare: CachePadded<Mutex<Vec<Box<Task>>>>,
    /// By length (1 to [`SPARE_ARGS`]): argument lists of those tasks' launches that
    /// nothing else held, each value let go (a zero in its place), for the next launches
    /// to fill instead of allocating one.
    spare_args: CachePadded<Mutex<SpareArgs>>,
    /// When the foreseen runs in flight (recorded runs, and windows of structures that
    /// ran before) are expected to end (ns since the scheduler's
    /// epoch; 0: none foreseen): the latest a dispatcher foresaw. A hint for how
    /// `synchronize` waits (`Shared::close_batch`), never for what it waits for.
    expected_end_ns: AtomicU64,
    /// Per GPU: windows its dispatcher has in flight (set by the dispatcher).
    pub(crate) flying: Vec<AtomicUsize>,
    /// Per GPU: its dispatcher's state, for a turn taken by the thread that queues or
    /// waits for a recorded run ([`Lender`]); set once as the dispatcher starts.
    lenders: Vec<std::sync::OnceLock<Weak<dyn Lender>>>,
    /// A thread waits in `synchronize` for the batch (from the capture's `before_wait`
    /// to its `end_batch`): the thread that ends the batch's last tasks frees them and
    /// what is kept, after telling the waiter, instead of leaving them on its way out.
    closing: AtomicBool,
    /// Threads freeing a batch's last tasks now ([`Shared::end_tasks`]): where a
    /// buffer's handle went while tasks held it, `synchronize` waits for them before it
    /// returns buried device memory, so that the buffer is returned by that
    /// `synchronize`.
    freeing: AtomicUsize,
}

impl WindowQueues {
    /// Empty queues for `gpus` GPUs.
    pub(crate) fn new(gpus: usize) -> WindowQueues {
        WindowQueues {
            queued: (0..gpus).map(|_| Mutex::new(VecDeque::new())).collect(),
            count: (0..gpus).map(|_| AtomicUsize::new(0)).collect(),
            spent: CachePadded::new(Mutex::new(Vec::new())),
            spare: CachePadded::new(Mutex::new(Vec::new())),
            spare_args: CachePadded::new(Mutex::new(Default::default())),
            expected_end_ns: AtomicU64::new(0),
            flying: (0..gpus).map(|_| AtomicUsize::new(0)).collect(),
            lenders: (0..gpus).map(|_| std::sync::OnceLock::new()).collect(),
            closing: AtomicBool::new(false),
            freeing: AtomicUsize::new(0),
        }
    }

    /// GPU `gpu`'s dispatcher, whose state `cell` other threads may take a turn of.
    pub(crate) fn lend<D: Device + 'static>(&self, gpu: usize, cell: &Arc<Mutex<Dispatcher<D>>>) {
        let weak: Weak<dyn Lender> = Arc::downgrade(cell) as Weak<Mutex<Dispatcher<D>>>;
        // Set once per GPU, as its dispatcher is made.
        let _ = self.lenders[gpu].set(weak);
    }

    /// Takes a turn of GPU `gpu`'s windows if its dispatcher lets go of its state now
    /// ([`Lender::take_turn`]); whether it did anything.
    pub(crate) fn take_turn(&self, gpu: usize) -> bool {
        self.lenders[gpu].get().and_then(Weak::upgrade).is_some_and(|d| d.take_turn())
    }

    /// Takes a turn of each GPU's windows where some are queued or in flight (a thread
    /// that spins for a batch's end: it ends a run there as soon as it completes).
    pub(crate) fn take_turns(&self) {
        for g in 0..self.count.len() {
            if self.count[g].load(Ordering::Relaxed) > 0 || self.flying[g].load(Ordering::Relaxed) > 0 {
                self.take_turn(g);
            }
        }
    }

    /// A dispatcher foresees that the run it issued ends at `end_ns`: the
    /// expected end moves there if that is later.
    pub(crate) fn expect_end(&self, end_ns: u64) {
        self.expected_end_ns.fetch_max(end_ns, Ordering::Relaxed);
    }

    /// When the foreseen runs in flight are expected to end (0: none foreseen).
    pub(crate) fn expected_end(&self) -> u64 {
        self.expected_end_ns.load(Ordering::Relaxed)
    }

    /// The batch closed: nothing is foreseen any more.
    pub(crate) fn forget_expected_end(&self) {
        self.expected_end_ns.store(0, Ordering::Relaxed);
    }

    /// Keeps ended tasks for [`WindowQueues::free_spent`], up to [`SPENT_MAX`] (beyond
    /// it they are freed here: a batch that never synchronizes keeps no more).
    pub(crate) fn bury(&self, what: impl Iterator<Item = Spent>) {
        let mut spent = self.spent.lock();
        for s in what {
            if spent.len() < SPENT_MAX {
                spent.push(s);
            }
        }
    }

    /// Frees the ended tasks kept by [`WindowQueues::bury`] (on the submitting thread).
    pub(crate) fn free_spent(&self) {
        self.free_spent_beyond(0);
    }

    /// Whether a thread waits in `synchronize` for the batch: set before it waits,
    /// cleared as the next batch starts.
    pub(crate) fn set_closing(&self, closing: bool) {
        self.closing.store(closing, Ordering::SeqCst);
    }

    /// Waits until no thread frees a batch's last tasks ([`Shared::end_tasks`]): what
    /// they held (the last reference to a device buffer) is let go.
    pub(crate) fn wait_freed(&self) {
        while self.freeing.load(Ordering::Acquire) > 0 {
            crate::sync::thread::yield_now();
        }
    }

    /// [`WindowQueues::free_spent`] where more than `keep` are kept (at a sub-window's
    /// cut, where the submitting thread's time is the batch's: [`SPENT_KEEP`]); freed
    /// after the lock is let go.
    pub(crate) fn free_spent_beyond(&self, keep: usize) {
        let spent = {
            let mut kept = self.spent.lock();
            if kept.len() <= keep {
                return;
            }
            std::mem::take(&mut *kept)
        };
        self.recycle(spent);
    }

    /// Frees `spent`, keeping up to [`SPARE_MAX`] of its tasks emptied for the next
    /// submits ([`WindowQueues::take_spare`]), a task of launches only with its launches
    /// (refilled in place by the next submit's, [`WindowQueues::let_go_kept`] lets go of
    /// them), others with their launches' argument lists that nothing else held
    /// ([`WindowQueues::take_spare_args`]). What they held is let go before either list
    /// is locked: a value's drop may be the user's.
    fn recycle(&self, spent: Vec<Spent>) {
        let mut tasks = Vec::with_capacity(spent.len());
        let mut lists: Vec<Arc<[ArgValue]>> = Vec::new();
        for s in spent {
            let Spent::Task(mut task) = s else { continue };
            // A task of launches only keeps them, for the next submit's launches of the
            // same kernels to refill in place (`TaskBuilder::refill_launch`); the sim's
            // twin lets go of the list it shares.
            if task.commands.iter().all(|c| matches!(c, Command::Launch(_))) {
                for c in &mut task.commands {
                    if let Command::Launch(l) = c {
                        l.twin = None;
                    }
                }
            } else {
                for c in task.commands.drain(..) {
                    if let Command::Launch(mut l) = c {
                        l.twin = None; // the sim's twin shares the list
                        let n = l.args.len();
                        if let Some(values) = Arc::get_mut(&mut l.args).filter(|_| (1..=SPARE_ARGS).contains(&n)) {
                            values.iter_mut().for_each(|v| *v = ArgValue::U32(0));
                            lists.push(l.args);
                        }
                    }
                }
            }
            task.hosts.clear();
            task.residency = Default::default();
            tasks.push(task);
        }
        let extra = {
            let mut spare = self.spare.lock();
            let room = SPARE_MAX.saturating_sub(spare.len()).min(tasks.len());
            spare.extend(tasks.drain(..room));
            tasks
        };
        let extra_lists: Vec<Arc<[ArgValue]>> = {
            let mut by_len = self.spare_args.lock();
            lists
                .into_iter()
                .filter_map(|l| {
                    let list = &mut by_len[l.len() - 1];
                    if list.len() >= SPARE_MAX {
                        return Some(l);
                    }
                    list.push(l);
                    None
                })
                .collect()
        };
        drop((extra, extra_lists));
    }

    /// What a batch's windows left, freed as its `synchronize` ends, before it returns
    /// buried device memory (`Scheduler::end_batch`). Where a buffer's last handle was
    /// dropped while tasks held the buffer (`held_drops`): waits for the thread freeing
    /// the batch's last tasks ([`Shared::end_tasks`]), and once every ended task is
    /// emptied lets go of the launches they keep, which may name the buffer, so that
    /// this `synchronize` returns its memory.
    pub(crate) fn free_batch(&self, held_drops: bool) {
        if held_drops {
            self.wait_freed();
        }
        self.free_spent();
        #[cfg(not(chariot_mutation = "no_let_go_kept"))]
        if held_drops {
            self.let_go_kept();
        }
    }

    /// Lets go of the launches the spare tasks keep ([`WindowQueues::recycle`]), after
    /// the lock: what they held (the last reference to a buffer) is dropped on this
    /// thread, with no lock held.
    pub(crate) fn let_go_kept(&self) {
        let kept: Vec<Vec<Command>> = {
            let mut spare = self.spare.lock();
            spare.iter_mut().filter(|t| !t.commands.is_empty()).map(|t| std::mem::take(&mut t.commands)).collect()
        };
        drop(kept);
    }

    /// An argument list of `n` values to fill (each a zero), if one is spare.
    pub(crate) fn take_spare_args(&self, n: usize) -> Option<Arc<[ArgValue]>> {
        self.spare_args.lock().get_mut(n.wrapping_sub(1))?.pop()
    }

    /// An emptied task to fill (its command list empty with room, or the launches it
    /// keeps), if one is spare.
    pub(crate) fn take_spare(&self) -> Option<Box<Task>> {
        self.spare.lock().pop()
    }
}

impl Shared {
    /// Ends many tasks at once (a replay window's): as [`Shared::end_task`] each, but
    /// under one lock of the batch, their memory kept for the submitting thread to free
    /// ([`WindowQueues::bury`], before the batch is told: `synchronize` frees what it
    /// finds), and the dispatchers with windows queued woken (a window may wait for these).
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
        self.windows.bury(spent.into_iter());
        let mut fail_at = (0, 0);
        let last = {
            let mut batch = self.batch.lock();
            for (id, failure) in &mut ended {
                batch.graph.end(*id, failure.is_some(), &mut released);
                batch.outstanding -= 1;
                if let Some(f) = failure.take() {
                    fail_at = (f.gpu, f.stream);
                    batch.outcome.failures.push(f);
                }
            }
            self.tell_batch(&batch);
            // The batch's last tasks while `synchronize` waits: what its windows left is
            // taken before the waiter can see the end (it looks under this lock) and
            // freed here once it was told, beside its report, not on its way out (about
            // 0.2 ms for a few hundred tasks). Nothing is submitted now to contend with.
            (batch.outstanding == 0 && self.windows.closing.load(Ordering::SeqCst)).then(|| {
                self.windows.freeing.fetch_add(1, Ordering::SeqCst);
                std::mem::take(&mut *self.windows.spent.lock())
            })
        };
        // A window queued on another GPU may wait for these tasks. Without this wake the
        // model check `model_check::windows` deadlocks (its `no_window_wake` mutation).
        #[cfg(not(chariot_mutation = "no_window_wake"))]
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
        if let Some(last) = last {
            self.windows.recycle(last);
            self.windows.freeing.fetch_sub(1, Ordering::Release);
        }
    }

    /// Wakes the dispatchers that have windows queued: one may wait for tasks that
    /// just ended (`ext::replay::dispatch`).
    pub(crate) fn wake_window_waiters(&self) {
        for (g, queued) in self.windows.count.iter().enumerate() {
            if queued.load(Ordering::SeqCst) > 0 {
                self.signals[g].notify();
            }
        }
    }

    /// Queues a replay window for GPU `gpu`, or the first other GPU in the rotation if
    /// that one has left it; gives it back if none is left. The rotation is read under
    /// the queue's lock, which a leaving GPU takes after it marks itself out, so no
    /// window is queued where nobody will take it.
    pub(crate) fn push_window(&self, gpu: usize, window: Box<Window>) -> Result<(), Box<Window>> {
        let g = self.queue_window(gpu, window)?;
        self.signals[g].notify();
        Ok(())
    }

    /// As [`Shared::push_window`], without ringing the dispatcher: the GPU queued on,
    /// whose dispatcher the caller rings.
    pub(crate) fn queue_window(&self, gpu: usize, mut window: Box<Window>) -> Result<usize, Box<Window>> {
        if window.queued_ns == 0 {
            window.queued_ns = self.epoch.elapsed().as_nanos() as u64;
        }
        for g in std::iter::once(gpu).chain(0..self.alive.len()) {
            let mut queue = self.windows.queued[g].lock();
            if self.alive[g].load(Ordering::SeqCst) {
                queue.push_back(window);
                self.windows.count[g].fetch_add(1, Ordering::SeqCst);
                return Ok(g);
            }
        }
        Err(window)
    }
}

/// The ends of recorded graphs' runs (`ext::replay::recorded`).
impl Shared {
    /// Ends a part run that cannot run (no GPU left): its first task's failure names
    /// the cause.
    pub(crate) fn fail_recorded(&self, shell: &mut Window, message: &str) {
        let Some(part) = shell.recorded.take() else { return };
        let failure = part.window.lock().tasks.first().map(|t| TaskFailure {
            task: t.id,
            command: 0,
            stage: t.commands.first().map_or(crate::stage::Stage::Kernel, |c| c.stage()),
            gpu: part.gpu,
            stream: 0,
            message: message.to_string(),
            driver: None,
        });
        self.end_part_run(part, failure.into_iter().collect());
    }

    /// Counts a part run out of the batch with its failures, after letting go of the
    /// part (an update waits for that) and of the claims if it was the graph's last.
    pub(crate) fn end_part_run(&self, part: Arc<Part>, failures: Vec<TaskFailure>) {
        let runs = part.runs.clone();
        #[cfg(chariot_mutation = "count_out_first")]
        runs.end_one();
        drop(part);
        #[cfg(not(chariot_mutation = "count_out_first"))]
        runs.end_one();
        let mut batch = self.batch.lock();
        batch.outcome.failures.extend(failures);
        batch.outstanding -= 1;
        self.tell_batch(&batch);
    }
}
