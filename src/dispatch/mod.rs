//! The per-GPU dispatcher: Algorithms 1 and 2 of the paper's Appendix B.
//!
//! One thread per GPU, pinned, owning S stream slots. Each turn of its loop it
//! 1. detects idle slots (the command in flight completed: event query on CUDA,
//!    posted completion on sim, executioner report for CPU callbacks), gives the
//!    stage's slot back (C_k.local, C_k.global, P_k) and advances the task;
//! 2. gives every slot without a task the first task of the buffer Q (task assignment);
//! 3. for each stage k, selects a slot whose next command is at stage k, cyclically
//!    after W_k, if conditions (a)-(c) of §5.3 hold (overlap matrix, local
//!    threshold), asks P_k for a slot (head only, global threshold) and dispatches.
//!
//! Invariants: a slot has at most one command in flight, so a task's commands run in
//! order on one GPU and stream; `running[k] <= L_k` here and C_k.global <= G_k on all
//! GPUs; a command starts only when every stage running on this GPU may overlap it.
//!
//! Below the caps L_k, a stage may have a tighter limit of its own (the hardware-aware defaults): a copy
//! stage its depth, the kernel stage a capacity in GPU-fills (the kernels in flight
//! fill at most that many GPUs, each its grid over one wave). The online adaptation
//! (`crate::stage::adaptation`) moves these limits from what each window of tasks
//! measures. A slot takes a task from Q only when no other slot of the GPU holds one
//! that has not started at the stage the new one starts at, so that tasks stay in Q,
//! where the order rule and every GPU can still reach them, until a GPU can start
//! them; a task that starts at another stage is taken meanwhile (Q keeps a heap per
//! first stage, a task placed on a GPU counted past the fetches that GPU would skip): a
//! kernel does not wait in Q behind an upload that waits for the copy engine.
//!
//! When a turn makes no progress the dispatcher spins while GPU commands are in
//! flight on a backend that must be polled (CUDA), and otherwise parks on its signal,
//! which submits, executioners, simulated engines and other dispatchers ring. Its state
//! is behind a lock it holds for each turn and lets go of while it waits (spins or
//! parks), so that another thread may take a turn of the replay windows meanwhile
//! (`crate::seam`: a recorded run launched and ended by the thread that queues and
//! waits for it, `Dispatcher::run`). That lock is held across driver calls: it is the
//! dispatcher's state, not a shared structure; the other threads only try it.
//!
//! The GPU is a [`Device`]: the backend's `Gpu`, or the model checks' model GPU. Beside
//! it: `recovery` (a lost GPU's retirement, `die`), `meter` (the adaptation's
//! windows) and `resident` (a task's resident data: binding its copies, stepping over
//! fetches with nothing to copy, planning the others).
//!
//! Why this file is long (about 560 lines): one loop over one slot state, kept whole.

pub(crate) mod affinity;
mod device;
pub(crate) mod executioners;
mod meter;
pub(crate) mod recorders;
mod recovery;
pub(crate) mod shared;

use crate::backend::{Fault, Reach, Span};
use crate::callback::CallInfo;
use crate::config::Config;
use crate::report::{CommandRecord, DispatchStats, DriverError, LostGpu, TaskFailure};
use crate::signal::Signal;
use crate::stage::adaptation::{Adaptation, Knob};
use crate::stage::queues::Grant;
use crate::stage::{OverlapMatrix, Stage, Thresholds};
use crate::sync::channel::{Receiver, Sender};
use crate::sync::Ordering;
use crate::task::command::Command;
use crate::task::Task;
pub(crate) use device::Device;
use executioners::{CpuDone, CpuJob};
use meter::Meter;
use shared::Shared;
use std::sync::Arc;
use std::time::Instant;

/// How long an idle CUDA dispatcher spins before it parks.
const SPIN_BEFORE_PARK: std::time::Duration = std::time::Duration::from_micros(200);

/// What a slot has in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Busy {
    stage: Stage,
    dispatched_ns: u64,
    /// The share of the GPU a kernel-stage command fills (0 for other stages).
    fill: f64,
}

#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) task: Option<Box<Task>>,
    pub(crate) busy: Option<Busy>,
    /// The task was taken from Q and has not dispatched a command here yet.
    fresh: bool,
    /// The task's next command was in flight when the GPU was lost: it began, and may
    /// have written part of its output.
    interrupted: bool,
}

/// What a dispatcher does after a turn of its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Another turn at once: this one made progress.
    Turn,
    /// Spin one turn: GPU commands are in flight and completion shows only by polling.
    Spin,
    /// Park until the signal moves past `seen` (after spinning a little if `hot`).
    Park { seen: u64, hot: bool },
    /// Leave the loop: the scheduler stopped with nothing left here, or the GPU is lost.
    Stop,
}

/// What a stage's selection found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    /// This slot's next command may start now.
    Go(usize),
    /// A command is ready at the stage but waits for the stage's limit on this GPU.
    Held,
    /// No command can start at the stage (none ready, or the overlap matrix forbids).
    Nothing,
}

/// One GPU's dispatcher, over its GPU `D` (see the module comment).
pub(crate) struct Dispatcher<D: Device> {
    pub(crate) gpu: usize,
    pub(crate) device: D,
    matrix: OverlapMatrix,
    thresholds: Thresholds,
    pub(crate) shared: Arc<Shared>,
    signal: Arc<Signal>,
    pub(crate) slots: Vec<Slot>,
    /// C_k.local: commands of stage k in flight on this GPU.
    running: [usize; Stage::K],
    /// Per stage: commands it may hold on this GPU (at most L_k): the copy stages'
    /// depth; L_k for the others.
    limit: [usize; Stage::K],
    /// The kernel stage's capacity in GPU-fills, where kernels are admitted by fill.
    kernel_fills: Option<f64>,
    /// Σ fill of the kernel-stage commands in flight.
    load: f64,
    /// Per stage: whether a ready command waits for the stage's limit.
    held: [bool; Stage::K],
    /// The adaptation of the limits, and its measurement.
    adaptation: Option<Adaptation>,
    meter: Meter,
    /// Whether this GPU is in P_k.
    queued: [bool; Stage::K],
    /// W_k: the slot that last dispatched at stage k.
    active: [usize; Stage::K],
    /// GPU-stage commands in flight.
    pub(crate) gpu_busy: usize,
    cpu_jobs: Sender<CpuJob>,
    cpu_done_tx: Sender<CpuDone>,
    cpu_done: Receiver<CpuDone>,
    core: Option<core_affinity::CoreId>,
    pub(crate) stats: DispatchStats,
    /// Set when the GPU is lost (a sticky fault): the message and when it was seen.
    pub(crate) lost: Option<(String, u64)>,
    /// The replay windows in flight here (`crate::seam`: the second source of work).
    pub(crate) windows: crate::seam::WindowsInFlight,
}

impl<D: Device> Dispatcher<D> {
    pub(crate) fn new(
        gpu: usize,
        device: D,
        config: &Config,
        shared: Arc<Shared>,
        cpu_jobs: Sender<CpuJob>,
        core: Option<core_affinity::CoreId>,
    ) -> Self {
        let (cpu_done_tx, cpu_done) = crate::sync::channel::unbounded();
        let s = config.streams;
        let t = &config.tuning;
        let caps = config.thresholds.local;
        let mut limit = caps;
        for stage in [Stage::Download, Stage::Readback] {
            limit[stage.index()] = t.copy_limit.min(caps[stage.index()]);
        }
        let adaptation = t.adapt.then(|| {
            let mut knobs = [None; Stage::K];
            for stage in [Stage::Download, Stage::Readback].into_iter().filter(|s| t.adaptive[s.index()]) {
                let (v, cap) = (limit[stage.index()] as f64, caps[stage.index()] as f64);
                knobs[stage.index()] = Some(Knob { value: v, min: v, max: cap.max(v), times: 1.0, plus: 1.0 });
            }
            if let Some(f) = t.kernel_fills.filter(|_| t.adaptive[Stage::Kernel.index()]) {
                let max = (caps[Stage::Kernel.index()] as f64).max(f);
                knobs[Stage::Kernel.index()] = Some(Knob { value: f, min: f, max, times: 2.0, plus: 0.0 });
            }
            Adaptation::new(knobs)
        });
        Dispatcher {
            gpu,
            device,
            matrix: config.matrices[gpu],
            thresholds: config.thresholds,
            signal: shared.signals[gpu].clone(),
            shared,
            slots: (0..s).map(|_| Slot::default()).collect(),
            running: [0; Stage::K],
            limit,
            kernel_fills: t.kernel_fills,
            load: 0.0,
            held: [false; Stage::K],
            adaptation: adaptation.filter(|a| a.active()),
            meter: Meter::default(),
            queued: [false; Stage::K],
            active: [s - 1; Stage::K],
            gpu_busy: 0,
            cpu_jobs,
            cpu_done_tx,
            cpu_done,
            core,
            stats: DispatchStats::default(),
            lost: None,
            windows: crate::seam::WindowsInFlight::new(),
        }
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.shared.epoch.elapsed().as_nanos() as u64
    }

    /// The dispatcher's thread body, over its state `cell`. A panic in the loop (a bug)
    /// or a GPU that cannot be bound does not hang `synchronize`: the dispatcher dies
    /// cleanly (see `die`).
    ///
    /// The thread holds `cell` while it works and lets go of it while it waits (spins
    /// on completions or parks): a thread that queues or waits for a recorded graph's
    /// run may then take one turn of the replay windows in its place (`crate::seam`,
    /// `WindowQueues::take_turns`), as a hand-written graph is launched and polled by
    /// the thread that waits for it. Those threads only ever try the lock; this one
    /// waits for it at most one such turn (a launch, or an event query and the run's end).
    pub(crate) fn run(cell: Arc<crate::sync::Mutex<Self>>) {
        Self::work(&cell);
        // Dropped here, on its own thread (a GPU's drop makes its context current on the
        // dropping thread, which must not be a user's): a thread that holds it for a
        // turn lets go within that turn, and once the work is over no window is left
        // for another to take a turn of.
        let mut cell = cell;
        while let Err(held) = Arc::try_unwrap(cell) {
            cell = held;
            crate::sync::thread::yield_now();
        }
    }

    /// [`Dispatcher::run`]'s work: the loop, then the GPU's retirement or death.
    fn work(cell: &Arc<crate::sync::Mutex<Self>>) {
        let signal = {
            let mut d = cell.lock();
            if let Some(core) = d.core {
                core_affinity::set_for_current(core);
            }
            if let Err(message) = d.device.bind_thread() {
                let message = format!("GPU {} unusable: {message}", d.gpu);
                let at_ns = d.now_ns();
                d.shared.lose_gpu(LostGpu { gpu: d.gpu, at_ns, message: message.clone() });
                d.die(&message);
                return;
            }
            d.signal.clone()
        };
        let turns = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Self::turns(cell, &signal);
            let mut d = cell.lock();
            if d.lost.is_some() {
                d.retire();
            }
        }));
        if let Err(payload) = turns {
            let mut d = cell.lock();
            let message = format!("dispatcher of GPU {} {}", d.gpu, crate::callback::panic_message(payload));
            d.die(&message);
        }
    }

    /// Turns until the scheduler stops or the GPU is lost, `cell` held for each turn
    /// and let go of for each wait.
    fn turns(cell: &crate::sync::Mutex<Self>, signal: &Signal) {
        let mut spins = 0u32;
        loop {
            let next = cell.lock().turn(&mut spins);
            match next {
                Next::Turn => {}
                Next::Stop => return,
                Next::Spin => {
                    // Completion shows only by querying: spin, yielding now and then so a
                    // shared core still serves the executioners.
                    if spins % 64 == 0 {
                        crate::sync::thread::yield_now();
                    } else {
                        crate::sync::hint::spin_loop();
                    }
                }
                // A CUDA dispatcher owns its core: it stays hot a little before parking.
                Next::Park { seen, hot: true } => signal.spin_then_park(seen, SPIN_BEFORE_PARK),
                Next::Park { seen, hot: false } => signal.park(seen),
            }
        }
    }

    /// One turn of the loop (`spins`: the idle turns spun in a row): what to do next.
    fn turn(&mut self, spins: &mut u32) -> Next {
        let seen = self.signal.epoch();
        let mut progress = self.detect_idle();
        if self.lost.is_none() && !self.shared.alive[self.gpu].load(Ordering::SeqCst) {
            // Found lost by another GPU, under a graph spread over this one (recorded
            // in the report then).
            self.lost = Some(("lost under a graph spread over it from another GPU".into(), self.now_ns()));
        }
        if self.lost.is_some() {
            return Next::Stop; // `run` retires the GPU
        }
        progress |= self.try_window();
        progress |= self.assign();
        for stage in Stage::ALL {
            progress |= self.try_stage(stage);
        }
        if progress {
            *spins = 0;
            return Next::Turn;
        }
        if self.shared.stop.load(Ordering::SeqCst) && self.idle() {
            self.flush_stats();
            return Next::Stop;
        }
        if self.gpu_busy > 0 && self.device.polls() {
            *spins += 1;
            return Next::Spin;
        }
        // Stats reach the shared copy when a task ends (see `complete`) and here,
        // before parking, never on a spinning turn: no lock while polling.
        self.flush_stats();
        if self.idle() && self.meter.start_ns.is_some() {
            // An idle GPU measures nothing: the window is dropped, a trial under
            // way is void (the next work may differ), and the next window (the
            // pipeline filling again) is not judged.
            self.meter.start_ns = None;
            self.meter.skip = true;
            if let Some(change) = self.adaptation.as_mut().and_then(|a| a.interrupt()) {
                self.apply(&[change]);
            }
        }
        Next::Park { seen, hot: self.device.spins() }
    }

    fn idle(&self) -> bool {
        self.slots.iter().all(|s| s.task.is_none() && s.busy.is_none()) && !self.windows_pending()
    }

    pub(crate) fn flush_stats(&mut self) {
        if self.stats.commands > 0 || self.stats.polls > 0 {
            self.shared.records.gpus[self.gpu].lock().stats.add(&std::mem::take(&mut self.stats));
        }
    }

    /// Step 4 of §5.4: find completed commands and release their stages.
    fn detect_idle(&mut self) -> bool {
        let mut progress = false;
        while let Ok(done) = self.cpu_done.try_recv() {
            let t0 = Instant::now();
            let span = Span { start_ns: done.start_ns, end_ns: done.end_ns };
            self.complete(done.stream, done.result.map(|()| span).map_err(Fault::task));
            self.stats.runtime_ns += t0.elapsed().as_nanos() as u64;
            progress = true;
        }
        if self.gpu_busy == 0 {
            return progress;
        }
        progress |= self.poll_window();
        for j in 0..self.slots.len() {
            if !matches!(self.slots[j].busy, Some(b) if b.stage.on_gpu()) {
                continue;
            }
            let t0 = Instant::now();
            let polled = self.device.poll(j);
            let t1 = Instant::now();
            self.stats.polls += 1;
            self.stats.poll_ns += (t1 - t0).as_nanos() as u64;
            if let Some(result) = polled {
                self.complete(j, result);
                self.stats.runtime_ns += t1.elapsed().as_nanos() as u64;
                progress = true;
            }
        }
        progress
    }

    /// The command in flight on slot `j` ended with `result`.
    fn complete(&mut self, j: usize, result: Result<Span, Fault>) {
        let busy = self.slots[j].busy.take().expect("completion of a slot with a command in flight");
        let k = busy.stage;
        self.running[k.index()] -= 1;
        if k.on_gpu() {
            self.gpu_busy -= 1;
        }
        if k == Stage::Kernel {
            self.load = if self.running[k.index()] == 0 { 0.0 } else { (self.load - busy.fill).max(0.0) };
        }
        if self.running[k.index()] == 0 {
            if let Some(since) = self.meter.busy_since[k.index()].take() {
                let end = result.as_ref().map_or_else(|_| self.now_ns(), |s| s.end_ns);
                self.meter.busy_ns[k.index()] += end.saturating_sub(since);
            }
        }
        if self.shared.queues.release(k) {
            // Other GPUs wait in P_k for the slot just given back.
            for (g, s) in self.shared.signals.iter().enumerate() {
                if g != self.gpu {
                    s.notify();
                }
            }
        }
        let (span, failed) = match &result {
            Ok(span) => (*span, false),
            Err(_) => (Span { start_ns: busy.dispatched_ns, end_ns: self.now_ns() }, true),
        };
        let Some(task) = self.slots[j].task.as_mut() else { return };
        let index = task.next;
        let record = CommandRecord {
            task: task.id,
            granularity: task.granularity,
            command: index as u32,
            stage: k,
            gpu: self.gpu as u16,
            stream: j as u16,
            dispatched_ns: busy.dispatched_ns,
            start_ns: span.start_ns,
            end_ns: span.end_ns,
            bytes: task.commands[index].bytes(),
            failed,
        };
        self.shared.records.gpus[self.gpu].lock().timeline.push(record);
        crate::seam::fetch_ended(self.gpu, &mut task.commands[index], result.is_ok());
        match result {
            Ok(_) => {
                task.next += 1;
                crate::seam::skip_valid_fetches(self.gpu, task);
                if task.next == task.commands.len() {
                    let task = self.slots[j].task.take().expect("checked above");
                    let granularity = task.granularity;
                    // Counts reach the shared stats before the task counts as ended, so
                    // `synchronize` never misses them.
                    self.flush_stats();
                    self.shared.end_task(task, None);
                    self.task_ended(granularity);
                }
            }
            Err(fault) => {
                if fault.loses_gpu() {
                    self.mark_lost(&fault.message);
                }
                match fault.reach {
                    // Kept for `retire`, which moves it if that is safe.
                    Reach::Gpu => self.slots[j].interrupted = true,
                    // A command of one GPU spans no other: as a fault of the task.
                    Reach::Task | Reach::GpuByTask | Reach::Spanned(_) => {
                        self.fail_task(j, index, k, fault.message, fault.driver)
                    }
                }
            }
        }
    }

    /// The GPU is lost (a sticky fault): noted here, for `retire`, and in the batch's
    /// report at once, before the task that saw it ends (it may be the batch's last).
    pub(crate) fn mark_lost(&mut self, message: &str) {
        if self.lost.is_none() {
            let at_ns = self.now_ns();
            self.lost = Some((message.to_string(), at_ns));
            self.shared.lose_gpu(LostGpu { gpu: self.gpu, at_ns, message: message.to_string() });
        }
    }

    fn fail_task(&mut self, j: usize, command: usize, stage: Stage, message: String, driver: Option<DriverError>) {
        self.slots[j].fresh = false;
        if let Some(task) = self.slots[j].task.take() {
            let failure = TaskFailure { task: task.id, command, stage, gpu: self.gpu, stream: j, message, driver };
            self.flush_stats();
            self.shared.end_task(task, Some(failure));
        }
    }

    /// Task assignment (Algorithm 2, lines 4-8): an idle slot takes a task from Q, one
    /// at a time per stage: not one that starts at a stage where another slot's task
    /// has yet to start (it waits for that stage, and so would this one), but the first
    /// of those that start elsewhere (a kernel while an upload waits for the copy
    /// engine: they do not compete).
    fn assign(&mut self) -> bool {
        if self.lost.is_some() || self.windows_pending() {
            return false;
        }
        let mut allowed = crate::task::buffer::ANY_STAGE;
        for t in self.slots.iter().filter(|s| s.fresh).filter_map(|s| s.task.as_ref()) {
            if let Some(c) = t.commands.get(t.next) {
                allowed[c.stage().index()] = false;
            }
        }
        if !allowed.contains(&true) {
            return false;
        }
        let Some(j) = self.slots.iter().position(|s| s.task.is_none() && s.busy.is_none()) else { return false };
        let shared = &self.shared;
        let gone = |h: usize| !shared.alive[h].load(Ordering::SeqCst);
        let Some(mut task) = self.shared.buffer.pop_for(self.gpu, &gone, allowed) else { return false };
        self.shared.wake_claimer();
        // Q hands a bound task to another GPU only once its own has left the rotation.
        let refused = match task.prefer {
            Some(g) if task.bound && g != self.gpu => {
                Some(format!("its external device memory is on GPU {g}, which has left the rotation"))
            }
            _ => crate::seam::bind_resident(self.gpu, &self.shared.resident, &mut task).err().map(|e| e.to_string()),
        };
        if let Some(message) = refused {
            let stage = task.commands.first().map_or(Stage::Download, |c| c.stage());
            let failure =
                TaskFailure { task: task.id, command: 0, stage, gpu: self.gpu, stream: j, message, driver: None };
            self.flush_stats();
            self.shared.end_task(task, Some(failure));
            return true;
        }
        crate::seam::skip_valid_fetches(self.gpu, &mut task);
        self.slots[j].task = Some(task);
        self.slots[j].fresh = true;
        if self.meter.start_ns.is_none() && self.adaptation.is_some() {
            let tasks = self.slots.iter().filter(|s| s.task.is_some()).count();
            self.meter.open(self.now_ns(), tasks, &self.running, &self.held);
        }
        true
    }

    /// Whether stage `stage` may start slot `j`'s next command now on this GPU: below
    /// L_k, below the copy stages' depth, and, for kernels admitted by fill, within the
    /// kernel stage's capacity (a kernel alone always fits).
    fn room(&self, stage: Stage, j: usize) -> bool {
        let k = stage.index();
        if !self.thresholds.local_allows(stage, self.running[k]) || self.running[k] >= self.limit[k] {
            return false;
        }
        match (stage, self.kernel_fills) {
            (Stage::Kernel, Some(cap)) if self.running[k] > 0 => {
                let fill = self.slots[j].task.as_ref().map_or(1.0, |t| t.commands[t.next].fill(self.gpu));
                self.load + fill <= cap + 1e-9
            }
            _ => true,
        }
    }

    /// Algorithm 2 with pop = false: the slot whose next command is at `stage`, searched
    /// cyclically after W_k, and whether it may start now.
    fn select(&self, stage: Stage) -> Pick {
        let k = stage.index();
        if !self.matrix.can_overlap(stage, &self.running) {
            return Pick::Nothing;
        }
        let s = self.slots.len();
        let ready = (1..=s).map(|i| (self.active[k] + i) % s).find(|&j| {
            let slot = &self.slots[j];
            slot.busy.is_none()
                && slot.task.as_ref().is_some_and(|t| {
                    // A resident piece another slot is fetching here is waited for.
                    t.commands.get(t.next).is_some_and(|c| c.stage() == stage && crate::seam::may_start(self.gpu, c))
                })
        });
        match ready {
            None => Pick::Nothing,
            Some(j) if self.room(stage, j) => Pick::Go(j),
            Some(_) => Pick::Held,
        }
    }

    /// Steps 1-3 of §5.4 for one stage.
    fn try_stage(&mut self, stage: Stage) -> bool {
        let k = stage.index();
        let pick = if self.lost.is_some() { Pick::Nothing } else { self.select(stage) };
        self.note_held(stage, pick == Pick::Held);
        let Pick::Go(j) = pick else {
            if let Some(g) = self.shared.queues.withdraw(stage, self.gpu, &mut self.queued[k]) {
                self.shared.signals[g].notify();
            }
            return false;
        };
        // Timed from here: an idle turn (no candidate) reads no clock. The selection
        // scan before it, over S slots, is left out of the runtime figure.
        let t0 = Instant::now();
        match self.shared.queues.request(stage, self.gpu, &mut self.queued[k]) {
            Grant::Wait => return false,
            Grant::Granted { wake } => {
                if let Some(g) = wake {
                    self.shared.signals[g].notify();
                }
            }
        }
        // Counted before dispatching: a command that fails at issue ends its task inside
        // `dispatch`, and the count must reach that batch's report.
        self.stats.commands += 1;
        let driver_ns = self.dispatch(j, stage);
        self.stats.driver_ns += driver_ns;
        self.stats.runtime_ns += (t0.elapsed().as_nanos() as u64).saturating_sub(driver_ns);
        true
    }

    /// Dispatches the next command of slot `j` (a stage-`stage` slot is granted).
    /// Returns the time spent in driver calls.
    fn dispatch(&mut self, j: usize, stage: Stage) -> u64 {
        let k = stage.index();
        let dispatched_ns = self.now_ns();
        if self.running[k] == 0 && self.meter.start_ns.is_some() {
            self.meter.busy_since[k] = Some(dispatched_ns);
        }
        self.running[k] += 1;
        self.active[k] = j;
        let fill = match self.slots[j].task.as_ref() {
            Some(t) if stage == Stage::Kernel => t.commands[t.next].fill(self.gpu),
            _ => 0.0,
        };
        self.load += fill;
        self.slots[j].fresh = false;
        self.slots[j].busy = Some(Busy { stage, dispatched_ns, fill });
        let task = self.slots[j].task.as_mut().expect("selected slots hold a task");
        let info = CallInfo { task: task.id, gpu: self.gpu, stream: j };
        let index = task.next;
        let cmd = &mut task.commands[index];
        if stage == Stage::Cpu {
            let Command::Cpu(f) = cmd else { unreachable!("stage Cpu is a CPU callback") };
            let f = f.take().expect("a command is dispatched once");
            let job =
                CpuJob { f, info, done: self.cpu_done_tx.clone(), wake: self.signal.clone(), epoch: self.shared.epoch };
            if self.cpu_jobs.send(job).is_err() {
                self.complete(j, Err(Fault::task("the executioner pool has stopped")));
            }
            return 0;
        }
        let planned = crate::seam::plan_command(self.gpu, task, index);
        self.gpu_busy += 1;
        if let Err(fault) = planned {
            // Nothing to copy (every piece is valid here), or nothing to copy from.
            let now = self.now_ns();
            self.complete(j, fault.map_or(Ok(Span { start_ns: now, end_ns: now }), |m| Err(Fault::task(m))));
            return 0;
        }
        let cmd = &mut self.slots[j].task.as_mut().expect("selected slots hold a task").commands[index];
        match self.device.issue(j, cmd, info, index) {
            Ok(driver_ns) => driver_ns,
            Err(fault) => {
                self.complete(j, Err(fault));
                0
            }
        }
    }
}
