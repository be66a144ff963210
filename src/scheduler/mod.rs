//! The Scheduler: owns the backend, the task buffer, the stage queues, the dispatcher
//! and executioner threads, and the batch bookkeeping that `synchronize` waits on.
//!
//! Shutdown protocol (also run by `Drop`):
//! 1. refuse new submits (`closed`);
//! 2. wait until every submitted task has ended (as `synchronize` does);
//! 3. raise `stop` and wake every dispatcher; each leaves its loop once its slots are
//!    empty, dropping its GPU handle (streams, events, simulated engines);
//! 4. join the dispatchers, then close and join the executioners;
//! 5. free the device buffers in the graveyard.
//!
//! Driver errors met while freeing or tearing down (a dropped buffer's memory, pinned
//! host memory, a retired GPU's streams and events) are kept and listed in the next
//! report's `cleanup`; `shutdown` adds those of steps 3 to 5 to its report. After that,
//! and when a `Drop` discards the report, they go to stderr (`chariot: while shutting
//! down: …`).
//!
//! A callback never waits for its own task: `synchronize` and `shutdown` called in a
//! callback of this scheduler return [`Error::WaitInCallback`], and a `Drop` there (the
//! last handle moved into a callback) hands steps 2 to 5 to a thread of their own.

mod queries;
mod resources;

use crate::backend::Machine;
use crate::config::Config;
use crate::dispatch::executioners::Executioners;
use crate::dispatch::recorders::Recorders;
use crate::dispatch::shared::{Batch, Shared};
use crate::dispatch::Dispatcher;
use crate::error::{Error, Result};
use crate::ids::{Preds, TaskId};
use crate::memory::claims::Holder;
use crate::memory::{Graveyard, HostShared};
use crate::report::{kernel_lines, shutting_down, Report};
use crate::seam::{Capture, Offer, ResidentRange};
use crate::signal::Signal;
use crate::stage::queues::StageQueues;
use crate::task::buffer::TaskBuffer;
use crate::task::command::Command;
use crate::task::{HostClaim, Task};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

static NEXT_SCHEDULER: AtomicU64 = AtomicU64::new(1);

/// A sealed task as `TaskBuilder::submit` hands it over.
pub(crate) struct Submitted {
    pub(crate) id: TaskId,
    pub(crate) granularity: u64,
    pub(crate) commands: Vec<Command>,
    pub(crate) claims: Vec<HostClaim>,
    /// Tasks of this batch named by `TaskBuilder::after`.
    pub(crate) after: Preds,
    /// `TaskBuilder::refuse_conflicts`: a host conflict is an error, not a dependency.
    pub(crate) refuse_conflicts: bool,
    /// The resident byte ranges its commands read and write.
    pub(crate) resident: Vec<ResidentRange>,
    /// `TaskBuilder::prefer_gpu`, checked against the scheduler's GPUs.
    pub(crate) prefer: Option<usize>,
    /// Whether `prefer` is where its external device memory is (see `Task::bound`).
    pub(crate) bound: bool,
    /// An ended task's box to hold it (`WindowQueues::take_spare`), if one was spare.
    pub(crate) shell: Option<Box<Task>>,
}

/// The runtime: build one with [`Scheduler::builder`], allocate buffers, register
/// kernels, submit tasks, and [`synchronize`](Scheduler::synchronize).
///
/// ```
/// use chariot::{Arg, Backend, Kernel, Param, Scheduler};
/// let sched = Scheduler::builder().backend(Backend::Sim).streams(2).build()?;
/// let n = 1024;
/// let mut host = sched.alloc_host::<u32>(4 * n)?;
/// host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
/// let d = sched.alloc::<u32>(n)?;
/// let inc = sched.register_kernel(
///     Kernel::new("inc", r#"extern "C" __global__ void inc(unsigned* x, unsigned n) {
///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1; }"#)
///         .params([Param::Buffer, Param::U32])
///         .cpu_twin(|a| { let n = a.u32(1)? as usize; a.buffer_mut::<u32>(0)?[..n].iter_mut().for_each(|x| *x += 1); Ok(()) }),
/// )?;
/// for i in 0..4 {
///     let chunk = i * n..(i + 1) * n;
///     sched.task(i as u64, n as u64)
///         .download(&d, 0, &host, chunk.clone())
///         .launch(&inc, (n as u32).div_ceil(256), 256, 0, &[Arg::buffer(&d), Arg::u32(n as u32)])
///         .readback(&host, chunk, &d, 0)
///         .submit()?;
/// }
/// let report = sched.synchronize()?;
/// assert_eq!(report.tasks, 4);
/// assert!(host.read().iter().enumerate().all(|(i, &x)| x == i as u32 + 1));
/// # Ok::<(), chariot::Error>(())
/// ```
pub struct Scheduler {
    id: u64,
    machine: Arc<Machine>,
    config: Config,
    shared: Arc<Shared>,
    closed: AtomicBool,
    /// Held for a whole submit: each task's dependencies are on tasks submitted before it.
    submitting: Mutex<()>,
    seq: AtomicU64,
    /// Holds tasks back for replay windows (`crate::seam`: the last admission step).
    capture: Arc<Capture>,
    graveyard: Arc<Graveyard>,
    /// The report's lines on the tuning and the kernels, as last made.
    report_lines: Mutex<ReportLines>,
    threads: Mutex<Option<(Vec<JoinHandle<()>>, Executioners)>>,
    /// This rank's share of a cluster's task stream (`crate::seam`: the first
    /// admission step).
    #[cfg(feature = "mpi")]
    ranks: Option<crate::seam::RankShare>,
}

/// The report's lines on the tuning and the kernels as last made, and what they were
/// made from (the kernel capacity in force, as bits; the kernel list's changes): a
/// `synchronize` formats them again only when that moved (formatting them took
/// microseconds of every batch's wait).
#[derive(Default)]
struct ReportLines {
    made_from: Option<(Option<u64>, u64)>,
    lines: Vec<String>,
}

impl Scheduler {
    pub(crate) fn start(machine: Machine, config: Config) -> Result<Scheduler> {
        let machine = Arc::new(machine);
        let d = machine.gpus().len();
        let epoch = Instant::now();
        let signals: Vec<Arc<Signal>> = (0..d).map(|_| Arc::new(Signal::default())).collect();
        let shared = Arc::new(Shared {
            buffer: TaskBuffer::placing(config.order, d, config.streams),
            queues: StageQueues::new(config.thresholds.global),
            signals: signals.clone(),
            batch: CachePadded::new(crate::sync::Mutex::new(Batch::default())),
            batch_done: crate::sync::Condvar::new(),
            stop: crate::sync::AtomicBool::new(false),
            live: crate::sync::AtomicUsize::new(d),
            alive: (0..d).map(|_| crate::sync::AtomicBool::new(true)).collect(),
            records: Recorders::new(d, config.tuning.kernel_fills),
            resident: Default::default(),
            windows: crate::seam::WindowQueues::new(d),
            claims: crate::seam::ClaimGate::new(),
            woken_for_batch: crate::sync::AtomicBool::new(false),
            left: crate::sync::AtomicUsize::new(0),
            epoch,
        });
        let nvtx = match (&*machine, config.nvtx) {
            (Machine::Cuda(_), true) => Some(Arc::new(crate::backend::cuda::nvtx::Nvtx::load().map_err(|reason| {
                Error::InvalidConfig { name: "nvtx", value: "true".into(), allowed: format!("false here: {reason}") }
            })?)),
            _ => None,
        };
        let cuda = matches!(&*machine, Machine::Cuda(_));
        device_timing_here(config.device_timing, cuda && !crate::backend::cuda::times_events())?;
        // Open every GPU before starting any thread: a failure here leaves nothing running.
        let mut gpus = Vec::with_capacity(d);
        for (g, signal) in signals.iter().enumerate() {
            gpus.push(machine.open_gpu(
                g,
                config.streams,
                epoch,
                signal.clone(),
                config.device_timing,
                nvtx.clone(),
            )?);
        }
        let cores = crate::dispatch::affinity::choose(machine.gpus(), config.pin, config.pin_skip);
        // G_1 executioners, but never more than the D·S tasks that can hold a slot.
        let executioners = Executioners::start(config.thresholds.global[0].min(d.saturating_mul(config.streams)))?;
        let mut dispatchers = Vec::with_capacity(d);
        for (g, gpu) in gpus.into_iter().enumerate() {
            let dispatcher = Dispatcher::new(g, gpu, &config, shared.clone(), executioners.sender(), cores[g]);
            let dispatcher = Arc::new(crate::sync::Mutex::new(dispatcher));
            shared.windows.lend(g, &dispatcher);
            let name = format!("chariot-dispatch-{g}");
            match std::thread::Builder::new().name(name.clone()).spawn(move || Dispatcher::run(dispatcher)) {
                Ok(h) => dispatchers.push(h),
                Err(e) => {
                    shared.stop.store(true, Ordering::SeqCst);
                    shared.wake_all();
                    for h in dispatchers {
                        // A dispatcher catches its own panics (`Dispatcher::run`); the
                        // error returned says why the start failed.
                        let _ = h.join();
                    }
                    return Err(Error::Thread { name, message: e.to_string() });
                }
            }
        }
        let capture = Capture::new(config.execution, config.order, config.streams, shared.clone(), machine.clone());
        let graveyard = Graveyard::new(machine.clone());
        graveyard.watch(Arc::downgrade(&shared) as std::sync::Weak<dyn crate::memory::Quiet>);
        Ok(Scheduler {
            id: NEXT_SCHEDULER.fetch_add(1, Ordering::Relaxed),
            graveyard,
            machine,
            config,
            shared,
            closed: AtomicBool::new(false),
            submitting: Mutex::new(()),
            seq: AtomicU64::new(0),
            capture,
            report_lines: Mutex::new(ReportLines::default()),
            threads: Mutex::new(Some((dispatchers, executioners))),
            #[cfg(feature = "mpi")]
            ranks: None,
        })
    }

    /// Takes part in `cluster`'s task stream: run only this rank's share.
    #[cfg(feature = "mpi")]
    pub(crate) fn join_cluster(&mut self, cluster: crate::seam::Cluster) -> Result<()> {
        // As many tasks as this rank's slots can hold, and fewer waiting in Q than it
        // has GPUs: a rank takes no task it cannot start soon, so the others can (the
        // balance is dynamic to the last tasks).
        let gpus = self.machine.gpus().len();
        let depth = gpus * self.config.streams;
        self.ranks = Some(crate::seam::RankShare::new(cluster, depth, gpus, &self.shared)?);
        Ok(())
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The backend's machine.
    pub(crate) fn machine(&self) -> &Arc<Machine> {
        &self.machine
    }

    /// Submits a sealed task to run after the tasks of this batch named in `after` and
    /// after every unended task whose host claims conflict with its own (refused with
    /// [`Error::HostConflict`] instead where `refuse_conflicts`, or where a read guard
    /// holds the region). Submits are serialised (`submitting`), so a task depends only
    /// on tasks submitted before it and the graph has no cycle.
    ///
    /// Admission is a fixed pipeline of steps, each adding the tasks it must run after
    /// to `preds`: the rank's share (cluster: another rank's task stops here), the ids,
    /// the host claims (the core's), the resident dependencies and fetches, and last
    /// the replay capture, which holds the task back or hands it to the batch. The
    /// extensions' steps are `crate::seam`'s.
    pub(crate) fn submit_task(&self, task: Submitted) -> Result<TaskId> {
        let Submitted {
            id,
            granularity,
            mut commands,
            claims,
            after,
            refuse_conflicts,
            resident,
            prefer,
            bound,
            shell,
        } = task;
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::ShutDown);
        }
        let _one_at_a_time = self.submitting.lock();
        #[cfg(feature = "mpi")]
        if let Some(r) = &self.ranks {
            let local = |p: TaskId| self.capture.held(p, &[]).0 || self.shared.batch.lock().graph.contains(p);
            if !r.admit(&self.shared, id, &after, &claims, local)? {
                // Another rank's: it runs there.
                return Ok(id);
            }
        }
        self.check_ids(id, &after)?;
        // `preds` begins with the named ones; inferred ones are appended after them.
        let named = after.len();
        let mut preds = after;
        // A recorded task claims nothing now: each run of its graph does.
        let hosts = match self.capture.admit_recorded(
            id,
            &commands,
            !resident.is_empty() || prefer.is_some(),
            &claims,
            &mut preds,
        )? {
            Some(hosts) => hosts,
            None => claim_hosts(id, &claims, refuse_conflicts, &mut preds)?,
        };
        let residency = crate::seam::admit_resident(&self.shared, id, resident, &mut commands, &mut preds);
        // Under `submitting`, the one writer: a load and a store, no locked instruction.
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq + 1, Ordering::Relaxed);
        let task = Task { id, granularity, seq, commands, next: 0, hosts, residency, prefer, bound };
        let task = match shell {
            Some(mut b) => {
                *b = task;
                b
            }
            None => Box::new(task),
        };
        match self.capture.offer(task, named, preds) {
            Offer::Held => {}
            Offer::Admit(task, preds) => self.shared.admit(task, &preds),
        }
        Ok(id)
    }

    /// Refuses an id taken in this batch, an `after` naming the task itself, and one
    /// naming a task not submitted in it (held by the capture or in the graph).
    fn check_ids(&self, id: TaskId, after: &[TaskId]) -> Result<()> {
        // The capture first, then the graph (never both locks at once): a held task
        // moves to the graph only, so none is missed between the two.
        let (id_held, after_held) = self.capture.held(id, after);
        let batch = self.shared.batch.lock();
        if id_held || batch.graph.contains(id) {
            return Err(Error::DuplicateTask { task: id });
        }
        for (i, &p) in after.iter().enumerate() {
            if p == id {
                return Err(Error::DependencyCycle { task: id });
            }
            if !after_held.get(i) && !batch.graph.contains(p) {
                return Err(Error::UnknownDependency { task: id, dependency: p });
            }
        }
        Ok(())
    }

    /// Records the tasks `body` submits (with [`Scheduler::task`], as any loop does) as
    /// a graph, running none of them: [`RecordedGraph::run`](crate::graph::RecordedGraph::run)
    /// then runs them all at a cost to the host that does not grow with their number.
    /// While `body` runs, every task submitted to this scheduler, from any thread, is
    /// recorded. Dependencies are those of the loop: `after`, and those inferred from
    /// the host regions the recorded tasks share.
    ///
    /// # Errors
    /// [`Error::Recording`] when tasks submitted before have not been synchronized, when
    /// a recording is under way already, when a task holds a callback or resident data
    /// (named), or when `body` submits nothing; `body`'s own error (nothing is recorded
    /// then); [`Error::WaitInCallback`] in a callback; [`Error::ShutDown`].
    ///
    /// ```
    /// use chariot::{Arg, Backend, Kernel, Param, Scheduler, TaskId};
    /// let sched = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let k = sched.register_kernel(
    ///     Kernel::new("fill", "extern \"C\" __global__ void fill(float* x, float v) { x[threadIdx.x] = v; }")
    ///         .params([Param::Buffer, Param::F32])
    ///         .cpu_twin(|a| { let v = a.f32(1)?; a.buffer_mut::<f32>(0)?.fill(v); Ok(()) }),
    /// )?;
    /// let (dev, host) = (sched.alloc::<f32>(4)?, sched.alloc_host::<f32>(4)?);
    /// let mut graph = sched.record(|s| {
    ///     s.task(0, 1).launch(&k, 1, 4, 0, &[Arg::buffer(&dev), Arg::f32(1.0)]).submit()?;
    ///     s.task(1, 1).after(TaskId(0)).readback(&host, .., &dev, 0).submit()?;
    ///     Ok(())
    /// })?;
    /// graph.run()?;
    /// sched.synchronize()?;
    /// assert_eq!(&host.read()[..], &[1.0; 4]);
    /// graph.set_arg(TaskId(0), 0, 1, Arg::f32(2.0))?; // in place: the next run writes 2
    /// graph.run()?;
    /// sched.synchronize()?;
    /// assert_eq!(&host.read()[..], &[2.0; 4]);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    #[cfg(feature = "replay")]
    pub fn record(&self, body: impl FnOnce(&Scheduler) -> Result<()>) -> Result<crate::seam::RecordedGraph> {
        if let Some(task) = self.own_callback_task() {
            return Err(Error::WaitInCallback {
                task,
                call: "Scheduler::record",
                reason: "a recording takes every submit of its scheduler, task {task}'s dependents among them; \
                         record outside the callbacks"
                    .replace("{task}", &task.to_string()),
            });
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::ShutDown);
        }
        {
            let _one_at_a_time = self.submitting.lock();
            self.capture.start_recording().map_err(|problem| Error::Recording { task: None, problem })?;
        }
        // Ends the recording however `body` leaves (an error, a panic): nothing stays
        // recorded but what `finish_recording` takes.
        struct Abandon<'a>(&'a Capture);
        impl Drop for Abandon<'_> {
            fn drop(&mut self) {
                self.0.abandon_recording();
            }
        }
        let abandon = Abandon(&self.capture);
        body(self)?;
        let parts = {
            let _one_at_a_time = self.submitting.lock();
            self.capture.finish_recording()
        };
        drop(abandon);
        let parts = parts.map_err(|problem| Error::Recording { task: None, problem })?;
        crate::seam::make_lanes(&self.machine, &parts)?;
        Ok(crate::seam::RecordedGraph::new(self.shared.clone(), Some(self.machine.clone()), parts))
    }

    /// Wakes the dispatchers, if they sleep, ahead of the batch's first task; after the
    /// first call in a batch (until `synchronize`) it does nothing. A binding whose
    /// tasks take long to build (a host language's, where a batch's first task after a
    /// pause takes tens of microseconds) calls it as it starts building each task, so
    /// that a sleeping dispatcher's wake-up (tens of microseconds, more on a virtual
    /// machine) overlaps the building instead of following the submit: a woken
    /// dispatcher stays hot a little before it sleeps again. Rust callers need not:
    /// [`TaskBuilder::submit`](crate::TaskBuilder::submit) wakes them, and building a
    /// task takes about a microsecond.
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// let sched = Scheduler::builder().backend(Backend::Sim).build()?;
    /// sched.wake_for_batch();
    /// sched.task(1, 1).callback(chariot::callback::Resource::Cpu, |_| Ok(())).submit()?;
    /// sched.synchronize()?;
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn wake_for_batch(&self) {
        self.shared.wake_for_batch();
    }

    /// Waits until every submitted task has ended, then returns the batch's report.
    ///
    /// # Errors
    /// [`Error::TasksFailed`] with every failed task (and the report) when any failed;
    /// the other tasks completed and their outputs are intact.
    /// [`Error::WaitInCallback`] when called in a callback of this scheduler's tasks,
    /// which would wait for its own task; nothing is waited for or taken then.
    pub fn synchronize(&self) -> Result<Report> {
        self.refuse_in_callback("Scheduler::synchronize")?;
        self.capture.before_wait();
        let outcome = self.shared.close_batch(None).expect("no deadline: the batch ends");
        self.end_batch(outcome)
    }

    /// [`synchronize`](Self::synchronize), waiting at most `timeout`: `Ok(None)` while
    /// tasks are still running then (the batch goes on; call again), otherwise what
    /// `synchronize` returns. A host language's binding waits in slices of this, to
    /// handle its signals between them on the waiting thread itself.
    ///
    /// # Errors
    /// As [`synchronize`](Self::synchronize).
    pub fn synchronize_within(&self, timeout: std::time::Duration) -> Result<Option<Report>> {
        self.refuse_in_callback("Scheduler::synchronize_within")?;
        self.capture.before_wait();
        match self.shared.close_batch(Some(std::time::Instant::now() + timeout)) {
            Some(outcome) => self.end_batch(outcome).map(Some),
            None => Ok(None),
        }
    }

    /// The rest of a `synchronize` once the batch has ended: frees what it left, builds
    /// its report and starts the next batch.
    fn end_batch(&self, outcome: crate::report::Outcome) -> Result<Report> {
        // The batch's ids are free again: resident data forgets who used it.
        self.shared.resident.forget_tasks();
        let mut outcome = outcome;
        outcome.execution = self.capture.batch_execution();
        let failures = outcome.failures.clone();
        #[allow(unused_mut)] // the cluster form replaces them
        let (mut records, stats) = self.shared.records.take_batch();
        // A buffer dropped while its tasks ran reaches the graveyard as the last of them
        // is freed, and `free_batch` sees to that before what is buried returns.
        // Nothing runs now: freeing device memory cannot stall a pipeline.
        self.shared.windows.free_batch(self.graveyard.take_held_drops());
        self.graveyard.free_buried();
        #[allow(unused_mut)]
        let mut names: Vec<String> = self.machine.gpus().iter().map(|g| g.name.clone()).collect();
        #[allow(unused_mut)]
        let mut buses = self.config.buses;
        // In a cluster (collective: every rank is here): every rank's failures, and on
        // rank 0 one timeline of all ranks' GPUs.
        #[cfg(feature = "mpi")]
        let failures = match &self.ranks {
            Some(r) => {
                let (all, whole) = r.end_batch(&failures, &records, &names, self.shared.epoch)?;
                if let Some((n, rs)) = whole {
                    names = n;
                    records = rs;
                    // Every rank's buses (each rank as this one).
                    buses *= r.cluster.size();
                }
                outcome.failures = all.clone();
                all
            }
            None => failures,
        };
        let lines = self.report_lines();
        let adaptations = std::mem::take(&mut *self.shared.records.adaptations.lock());
        let cleanup = self.machine.cleanup().take();
        let report = Report::build(
            self.machine.name(),
            names,
            self.config.streams,
            buses,
            records,
            stats,
            outcome,
            lines,
            adaptations,
            cleanup,
        );
        self.capture.end_batch(failures.is_empty().then_some(&report));
        if failures.is_empty() {
            Ok(report)
        } else {
            Err(Error::TasksFailed { failures, report: Box::new(report) })
        }
    }

    /// The report's lines on the tuning's choices and on the kernels launched so far.
    fn report_lines(&self) -> Vec<String> {
        // The capacity in force now (the adaptation may have raised it): the largest of
        // the GPUs', as each GPU's own adaptation is listed among the changes.
        let now = self.shared.records.kernel_fills_now();
        let kernels = self.shared.records.kernels.lock();
        let made_from = Some((now.map(f64::to_bits), kernels.changes));
        let mut cache = self.report_lines.lock();
        if cache.made_from != made_from {
            let tuning = &self.config.tuning;
            let mut lines: Vec<String> = tuning.choices.iter().map(|c| c.to_string()).collect();
            lines.extend(kernel_lines(tuning, now, &kernels.uses));
            *cache = ReportLines { made_from, lines };
        }
        cache.lines.clone()
    }

    /// In a cluster (the `mpi` feature, [`Builder::cluster`](crate::Builder::cluster)):
    /// brings into rank 0's `buf` the regions of it that the other ranks' tasks of the
    /// last batch wrote (readbacks and writing callbacks of tasks that ran well), so
    /// that rank 0 holds every result, as one process would. Collective: every rank
    /// calls it after `synchronize`, for the same buffers in the same order. The other
    /// ranks' `buf` is unchanged; outside a cluster it does nothing.
    ///
    /// ```no_run
    /// # fn main() -> chariot::Result<()> {
    /// let cluster = chariot::cluster::Cluster::init()?;
    /// let s = chariot::Scheduler::builder().cluster(&cluster).build()?;
    /// let mut out = s.alloc_host::<f32>(1 << 20)?;
    /// // ... the loop: tasks read back into regions of `out` ...
    /// s.synchronize()?;
    /// s.gather(&mut out)?; // rank 0's `out` now holds every rank's regions
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::WaitInCallback`] in a callback of this scheduler's tasks;
    /// [`Error::Cluster`] where the buffer's length differs between ranks (the ranks
    /// did not allocate the same buffers in the same order).
    #[cfg(feature = "mpi")]
    pub fn gather<T: crate::memory::Element>(&self, buf: &mut crate::memory::HostBuffer<T>) -> Result<()> {
        self.refuse_in_callback("Scheduler::gather")?;
        match &self.ranks {
            Some(r) => r.gather(buf),
            None => Ok(()),
        }
    }

    /// Waits for all work, stops every runtime thread and returns the last batch's
    /// report, whose [`cleanup`](Report::cleanup) also lists the errors met while
    /// tearing down. Later submits fail with [`Error::ShutDown`]. Dropping the scheduler
    /// does the same, discarding the report: it writes any failure or cleanup error to
    /// stderr (`chariot: while shutting down: …`) instead.
    ///
    /// # Errors
    /// Those of [`synchronize`](Scheduler::synchronize); [`Error::WaitInCallback`] in a
    /// callback of this scheduler's tasks, and then the scheduler runs on unchanged.
    pub fn shutdown(&self) -> Result<Report> {
        self.refuse_in_callback("Scheduler::shutdown")?;
        self.closed.store(true, Ordering::SeqCst);
        let mut report = self.synchronize();
        stop_threads(&self.shared, self.threads.lock().take());
        self.graveyard.close();
        // Steps 3 to 5 ran after the batch's report was made: their errors join it.
        let teardown = self.machine.cleanup().close();
        match &mut report {
            Ok(r) => r.cleanup.extend(teardown),
            Err(Error::TasksFailed { report, .. }) => report.cleanup.extend(teardown),
            // Not reached (the refusal in a callback returned above); shown, not lost.
            Err(_) => teardown.iter().for_each(|e| shutting_down(e)),
        }
        report
    }

    /// [`Error::WaitInCallback`] if this thread runs a callback of one of this
    /// scheduler's tasks: waiting for the batch there would wait for that task.
    fn refuse_in_callback(&self, call: &'static str) -> Result<()> {
        match self.own_callback_task() {
            Some(task) => Err(Error::WaitInCallback {
                task,
                call,
                reason: format!(
                    "it waits for every task submitted, task {task} among them; call it outside the callbacks, \
                     e.g. on the thread that submits"
                ),
            }),
            None => Ok(()),
        }
    }

    /// The task of this scheduler whose callback this thread runs, if any.
    fn own_callback_task(&self) -> Option<TaskId> {
        crate::ids::current().filter(|&(sched, _)| sched == self.id).map(|(_, task)| task)
    }
}

/// The core's admission step: claims the task's host regions (dormant until it is
/// ready, `Shared::ready`), adding to `preds` the unended tasks whose claims conflict;
/// returns the host buffers claimed. A conflict with a guard, or any conflict where
/// `refuse_conflicts`, is an error, and the claims made so far are given back.
fn claim_hosts(
    id: TaskId,
    claims: &[HostClaim],
    refuse_conflicts: bool,
    preds: &mut Preds,
) -> Result<Vec<Arc<HostShared>>> {
    let mut holders = Vec::new();
    let mut hosts: Vec<Arc<HostShared>> = Vec::new();
    for HostClaim { host, region, write } in claims {
        let mut list = host.claims.lock();
        holders.clear();
        list.conflicts(region, *write, Holder::Task(id), &mut holders);
        if let Some(holder) = holders.iter().find(|h| refuse_conflicts || !matches!(h, Holder::Task(_))) {
            let holder = holder.public();
            drop(list);
            for h in &hosts {
                h.release(Holder::Task(id));
            }
            return Err(Error::HostConflict { task: id, buffer: host.id, region: region.public(), holder });
        }
        for h in &holders {
            if let Holder::Task(t) = *h {
                if !preds.contains(&t) {
                    preds.push(t);
                }
            }
        }
        // Dormant until the task is ready (`Shared::ready`): seen by later submits
        // and guards, not yet by `Claims::exclusive_to`.
        list.add_dormant(*region, *write, Holder::Task(id));
        drop(list);
        if !hosts.iter().any(|h| Arc::ptr_eq(h, host)) {
            hosts.push(host.clone());
        }
    }
    Ok(hosts)
}

/// Steps 3 and 4 of the shutdown protocol: stops and joins the dispatchers, then the
/// executioners. Called once every task has ended.
fn stop_threads(shared: &Shared, threads: Option<(Vec<JoinHandle<()>>, Executioners)>) {
    if let Some((dispatchers, mut executioners)) = threads {
        shared.stop.store(true, Ordering::SeqCst);
        shared.wake_all();
        for h in dispatchers {
            // A dispatcher catches its own panics and fails its tasks (`Dispatcher::run`):
            // a join error has been reported through them already.
            let _ = h.join();
        }
        executioners.stop();
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        if self.own_callback_task().is_some() {
            // The last handle went in a callback of this scheduler: its task cannot end
            // (nor its thread be joined) until the callback returns, so the rest of the
            // shutdown runs on a thread of its own, which ends once every task has.
            self.closed.store(true, Ordering::SeqCst);
            // Held tasks go now: they are counted only once they do.
            self.capture.before_wait();
            let (shared, graveyard) = (self.shared.clone(), self.graveyard.clone());
            let cleanup = self.machine.cleanup().clone();
            // Kept from `Drop` (an executioner's would join this very thread) unless the
            // finishing thread takes them.
            let threads = std::mem::ManuallyDrop::new(self.threads.lock().take());
            let finish = move || {
                let threads = std::mem::ManuallyDrop::into_inner(threads);
                let mut batch = shared.batch.lock();
                while batch.outstanding > 0 {
                    shared.batch_done.wait(&mut batch);
                }
                drop(batch);
                stop_threads(&shared, threads);
                graveyard.close();
                // No report follows a `Drop`: what the teardown met is shown.
                cleanup.close().iter().for_each(|e| shutting_down(e));
            };
            // Without that thread the runtime's threads outlive the scheduler, idle: a
            // leak, where joining them here would hang.
            if let Err(e) = std::thread::Builder::new().name("chariot-shutdown".into()).spawn(finish) {
                shutting_down(&format!(
                    "could not start the thread that finishes the shutdown ({e}); the runtime's threads stay, idle"
                ));
            }
            return;
        }
        // Dropping discards the last report: what it holds of failures and cleanup
        // errors is shown once, not lost.
        match self.shutdown() {
            Ok(report) => report.cleanup.iter().for_each(|e| shutting_down(e)),
            Err(e) => {
                if let Error::TasksFailed { report, .. } = &e {
                    report.cleanup.iter().for_each(|c| shutting_down(c));
                }
                shutting_down(&e);
            }
        }
    }
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("backend", &self.machine.name())
            .field("gpus", &self.gpu_count())
            .field("streams", &self.config.streams)
            .field("order", &self.config.order)
            .field("thresholds", &self.config.thresholds)
            .finish()
    }
}

/// `device_timing(asked)`, on a backend that cannot time a pair of events
/// (`untimed`: a CUDA driver without `cuEventElapsedTime_v2`): refused there, by name.
fn device_timing_here(asked: bool, untimed: bool) -> Result<()> {
    if asked && untimed {
        let allowed = "false here: the CUDA driver library lacks cuEventElapsedTime_v2 (CUDA 12.8 or newer)";
        return Err(Error::InvalidConfig { name: "device_timing", value: "true".into(), allowed: allowed.into() });
    }
    Ok(())
}

#[cfg(test)]
mod test;

impl crate::backend::cuda::GpuContext {
    /// The context of `sched`'s GPU `gpu` (the index a [`CallInfo`](crate::callback::CallInfo)
    /// names): `None` on the sim backend, which has no CUDA context, or where `sched` has
    /// no GPU `gpu`.
    ///
    /// ```
    /// use chariot::{cuda::GpuContext, Backend, Scheduler};
    /// let sched = Scheduler::builder().backend(Backend::Sim).build()?;
    /// assert!(GpuContext::of(&sched, 0).is_none());
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn of(sched: &Scheduler, gpu: usize) -> Option<Self> {
        sched.machine().cuda()?.context(gpu).map(|ctx| Self(ctx.clone()))
    }
}
