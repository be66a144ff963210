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
use crossbeam_utils::CachePadded;
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

/// How long before the expected end of the work in flight `synchronize` stops sleeping
/// to spin: a timed sleep ends up to the timer's slack (50 µs) late, and the thread
/// then takes as long to run again as a woken one (tens to hundreds of microseconds).
pub(crate) const SPIN_LEAD_NS: u64 = 300_000;

/// What the dispatchers share with the scheduler.
pub(crate) struct Shared {
    pub(crate) buffer: TaskBuffer,
    pub(crate) queues: StageQueues,
    pub(crate) signals: Vec<Arc<Signal>>,
    /// On `crate::sync`'s primitives (as are the flags below): `synchronize` waits on
    /// it, and the model checks wait on it under shuttle.
    /// On a cache line of its own: the submitting thread takes it on every submit and
    /// the dispatchers on every window, and the flags around it change as tasks end.
    pub(crate) batch: CachePadded<crate::sync::Mutex<Batch>>,
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
    /// The batch's `outstanding` as the last task to end left it ([`Shared::tell_batch`]):
    /// what a spinning [`Shared::close_batch`] reads, rather than taking the lock that
    /// the ending tasks need.
    pub(crate) left: AtomicUsize,
    pub(crate) epoch: Instant,
}

impl crate::memory::Quiet for Shared {
    /// No task admitted and unended. Tried, not waited for: a batch locked by another
    /// thread (a task ending, one admitted) counts as busy, and a caller that holds the
    /// lock itself finds it busy rather than deadlocking.
    fn quiet(&self) -> bool {
        self.batch.try_lock().is_some_and(|b| b.outstanding == 0)
    }

    fn let_go_kept(&self) {
        self.windows.let_go_kept();
    }
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
        self.left.store(batch.outstanding, Ordering::Release);
        if batch.outstanding <= WAKE_AHEAD || self.claims.waits_below(batch.outstanding) {
            self.batch_done.notify_all();
        }
    }

    /// Waits until every task of the batch has ended, or until `deadline`, then closes
    /// the batch: its outcome (`None` at the deadline, the batch left whole). A
    /// sleeping thread's wake-up takes tens to hundreds of microseconds (the most on a
    /// virtual machine), which the caller's time would count after the last command,
    /// so it spins through the end where it can tell the end is near: once no more than
    /// [`WAKE_AHEAD`] tasks are left, for up to [`SPIN_AT_END`]; and where a dispatcher
    /// foresaw when its work ends (a recorded graph's run, or a batch's window of a
    /// structure that ran before: the replay windows' state,
    /// `WindowQueues::expected_end`, through `crate::seam`), it
    /// sleeps until [`SPIN_LEAD_NS`] before that and spins from there to
    /// [`SPIN_AT_END`] past it, once for each end foreseen. Every sleep is also ended
    /// by the batch's last task.
    pub(crate) fn close_batch(&self, deadline: Option<Instant>) -> Option<Outcome> {
        let mut batch = self.batch.lock();
        let mut spun = Spun::default();
        while batch.outstanding > 0 {
            let now = self.epoch.elapsed().as_nanos() as u64;
            let expected = self.windows.expected_end();
            let ns = std::time::Duration::from_nanos;
            let until_deadline =
                |d: std::time::Duration| deadline.map_or(d, |at| d.min(at.saturating_duration_since(Instant::now())));
            match next_wait(batch.outstanding, expected, now, &mut spun) {
                Wait::Until(at) => {
                    let wake = self.epoch + ns(at);
                    let wake = deadline.map_or(wake, |d| d.min(wake));
                    if self.batch_done.wait_until(&mut batch, wake)
                        && batch.outstanding > 0
                        && deadline.is_some_and(|d| Instant::now() >= d)
                    {
                        return None;
                    }
                }
                Wait::Spin(spin_ns) => {
                    let mut spin = crate::sync::SpinFor::new(until_deadline(ns(spin_ns)));
                    self.left.store(batch.outstanding, Ordering::Relaxed);
                    drop(batch);
                    batch = loop {
                        crate::sync::hint::spin_loop();
                        // Where a dispatcher waits, this thread polls its recorded runs
                        // and ends them (`crate::seam`: replay's windows).
                        self.windows.take_turns();
                        if self.left.load(Ordering::Acquire) > 0 && spin.going() {
                            continue;
                        }
                        let b = self.batch.lock();
                        if b.outstanding == 0 || !spin.going() {
                            break b;
                        }
                    };
                }
                Wait::Block => match deadline {
                    None => self.batch_done.wait(&mut batch),
                    Some(d) => {
                        if self.batch_done.wait_until(&mut batch, d) && batch.outstanding > 0 {
                            return None;
                        }
                    }
                },
            }
        }
        batch.graph.clear();
        self.woken_for_batch.store(false, Ordering::Relaxed);
        self.windows.forget_expected_end();
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

    /// Records that `gpu` left the rotation, once: its own dispatcher, or another whose
    /// graph spread over it failed with it lost (its dispatcher is rung, to retire). Its
    /// copies of resident data are gone from now on: no fetch plans to read them.
    pub(crate) fn lose_gpu(&self, lost: LostGpu) {
        if !self.alive[lost.gpu].swap(false, Ordering::SeqCst) {
            return;
        }
        let gpu = lost.gpu;
        self.resident.gpu_lost(gpu);
        self.batch.lock().outcome.lost_gpus.push(lost);
        self.signals[gpu].notify();
    }
}

/// How [`Shared::close_batch`] waits next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// Sleep until this time (ns since the epoch), or until told.
    Until(u64),
    /// Spin for this long (ns), or until the batch ends.
    Spin(u64),
    /// Sleep until told.
    Block,
}

/// What a waiter in [`Shared::close_batch`] has spun for so far.
#[derive(Debug, Default)]
struct Spun {
    /// The batch's last tasks.
    at_last: bool,
    /// The foreseen end it last spun for (0: none).
    foreseen: u64,
}

/// How [`Shared::close_batch`] waits next, with `outstanding` tasks left, the work's
/// end foreseen at `expected` (0: not) and the time `now` (both ns since the epoch): it
/// sleeps until [`SPIN_LEAD_NS`] before a foreseen end, then spins to [`SPIN_AT_END`]
/// past it, once an end; it spins [`SPIN_AT_END`] (or to that past the end foreseen, if
/// later) once no more than [`WAKE_AHEAD`] tasks are left, once a wait; else it sleeps.
fn next_wait(outstanding: usize, expected: u64, now: u64, spun: &mut Spun) -> Wait {
    if expected > now + SPIN_LEAD_NS {
        return Wait::Until(expected - SPIN_LEAD_NS);
    }
    let at_last = outstanding <= WAKE_AHEAD && !spun.at_last;
    let foreseen = expected != 0 && expected != spun.foreseen;
    if !(at_last || foreseen) {
        return Wait::Block;
    }
    spun.at_last |= at_last;
    spun.foreseen = expected;
    let at_end = SPIN_AT_END.as_nanos() as u64;
    let past = (expected + at_end).saturating_sub(now);
    Wait::Spin(if at_last { past.max(at_end) } else { past })
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

#[cfg(all(test, not(feature = "model-check")))]
mod test {
    use super::*;
    #[cfg(feature = "replay")]
    use std::time::Duration;

    /// The structures of a scheduler of one GPU with nothing running.
    #[cfg(feature = "replay")]
    fn shared() -> Arc<Shared> {
        Arc::new(Shared {
            buffer: TaskBuffer::placing(crate::Order::Fcfs, 1, 1),
            queues: StageQueues::new([1; crate::stage::Stage::K]),
            signals: vec![Arc::new(Signal::default())],
            batch: CachePadded::new(crate::sync::Mutex::new(Batch::default())),
            batch_done: Condvar::new(),
            stop: AtomicBool::new(false),
            live: AtomicUsize::new(1),
            alive: vec![AtomicBool::new(true)],
            records: Recorders::new(1, None),
            resident: Default::default(),
            windows: crate::seam::WindowQueues::new(1),
            claims: crate::seam::ClaimGate::new(),
            woken_for_batch: AtomicBool::new(false),
            left: AtomicUsize::new(0),
            epoch: Instant::now(),
        })
    }

    /// Counts `n` units of work into the batch and ends them after `after`, as a
    /// dispatcher does.
    #[cfg(feature = "replay")]
    fn end_after(shared: &Arc<Shared>, n: usize, after: Duration) -> std::thread::JoinHandle<()> {
        shared.batch.lock().outstanding += n;
        let s = shared.clone();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            for _ in 0..n {
                let mut batch = s.batch.lock();
                batch.outstanding -= 1;
                s.tell_batch(&batch);
            }
        })
    }

    /// A foreseen end is a hint for how to wait, never what is waited for: the batch
    /// closes when its work ends, before the end foreseen or well after it, and a
    /// deadline before the end foreseen still ends the wait. (Only replay windows'
    /// runs are foreseen: with replay off nothing is.)
    #[cfg(feature = "replay")]
    #[test]
    fn synchronize_waits_for_the_work_not_for_its_foreseen_end() {
        let s = shared();
        let now = |s: &Shared| s.epoch.elapsed().as_nanos() as u64;
        // Foreseen 5 s away, done in 20 ms: closed at the work's end.
        s.windows.expect_end(now(&s) + 5_000_000_000);
        let t0 = Instant::now();
        let worker = end_after(&s, 3, Duration::from_millis(20));
        assert!(s.close_batch(None).is_some());
        let took = t0.elapsed();
        worker.join().unwrap();
        assert!(took >= Duration::from_millis(20) && took < Duration::from_secs(2), "closed after {took:?}");
        assert_eq!(s.windows.expected_end(), 0, "a closed batch forgets its foreseen end");
        // Foreseen in 1 ms, done in 60 ms: the spin past the foreseen end gives up and
        // the wait goes on until the end.
        s.windows.expect_end(now(&s) + 1_000_000);
        let t0 = Instant::now();
        let worker = end_after(&s, 1, Duration::from_millis(60));
        assert!(s.close_batch(None).is_some());
        assert!(t0.elapsed() >= Duration::from_millis(60));
        worker.join().unwrap();
        // Foreseen 5 s away, a deadline in 30 ms: the batch is left whole at the deadline.
        s.windows.expect_end(now(&s) + 5_000_000_000);
        let worker = end_after(&s, 2, Duration::from_millis(300));
        let t0 = Instant::now();
        assert!(s.close_batch(Some(Instant::now() + Duration::from_millis(30))).is_none());
        let took = t0.elapsed();
        assert!(took >= Duration::from_millis(30) && took < Duration::from_millis(250), "gave up after {took:?}");
        assert_eq!(s.batch.lock().outstanding, 2);
        worker.join().unwrap();
        assert!(s.close_batch(None).is_some());
        // Foreseen in 40 ms; it ends sooner without telling (its tell comes 3 s later):
        // the wait wakes on its own just before the foreseen end.
        s.batch.lock().outstanding += 1;
        let end = now(&s) + 40_000_000;
        s.windows.expect_end(end);
        let quiet = s.clone();
        let (closed, tell_late) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            let mut batch = quiet.batch.lock();
            batch.outstanding -= 1;
            quiet.left.store(batch.outstanding, Ordering::Release);
            drop(batch);
            if tell_late.recv_timeout(Duration::from_secs(3)).is_err() {
                quiet.batch_done.notify_all();
            }
        });
        assert!(s.close_batch(None).is_some());
        let at = now(&s);
        closed.send(()).unwrap();
        assert!(at >= end - SPIN_LEAD_NS && at < end + 1_000_000_000, "closed at {at} ns, the end foreseen at {end}");
        worker.join().unwrap();
        // A later end foreseen replaces an earlier one, an earlier one does not.
        s.windows.expect_end(now(&s) + 10);
        let later = now(&s) + 2_000_000;
        s.windows.expect_end(later);
        s.windows.expect_end(later - 1_000_000);
        assert_eq!(s.windows.expected_end(), later);
    }
    /// The waits in order: the batch's last tasks spun for once; a foreseen end slept
    /// to and spun through once; an end foreseen long ago (a recorded run, then other
    /// tasks) does not take the spin at the batch's last tasks.
    #[test]
    fn close_batch_sleeps_to_a_foreseen_end_and_spins_through_the_last_tasks() {
        let (ms, lead, at_end) = (1_000_000u64, SPIN_LEAD_NS, SPIN_AT_END.as_nanos() as u64);
        // Nothing foreseen: sleep while tasks are many, spin once at the last.
        let mut spun = Spun::default();
        assert_eq!(next_wait(3, 0, 10 * ms, &mut spun), Wait::Block);
        assert_eq!(next_wait(1, 0, 10 * ms, &mut spun), Wait::Spin(at_end));
        assert_eq!(next_wait(1, 0, 11 * ms, &mut spun), Wait::Block);
        // A run foreseen to end at 50 ms: sleep to the lead, then spin past it, once.
        let mut spun = Spun::default();
        assert_eq!(next_wait(1, 50 * ms, 10 * ms, &mut spun), Wait::Until(50 * ms - lead));
        assert_eq!(next_wait(1, 50 * ms, 50 * ms - lead, &mut spun), Wait::Spin(lead + at_end));
        assert_eq!(next_wait(1, 50 * ms, 52 * ms, &mut spun), Wait::Block);
        // The next run foreseen (issued behind it): again.
        assert_eq!(next_wait(1, 60 * ms, 59 * ms + 900_000, &mut spun), Wait::Spin(100_000 + at_end));
        // A run that ended long ago, then other tasks: its spin is spent at once, and the
        // last of the others still get theirs.
        let mut spun = Spun::default();
        assert_eq!(next_wait(2, 5 * ms, 40 * ms, &mut spun), Wait::Spin(0));
        assert_eq!(next_wait(2, 5 * ms, 41 * ms, &mut spun), Wait::Block);
        assert_eq!(next_wait(1, 5 * ms, 42 * ms, &mut spun), Wait::Spin(at_end));
        assert_eq!(next_wait(1, 5 * ms, 43 * ms, &mut spun), Wait::Block);
    }
}
