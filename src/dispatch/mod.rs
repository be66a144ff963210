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
//! Below the caps L_k, a stage may have a tighter limit of its own (issue 14): a copy
//! stage its depth, the kernel stage a capacity in GPU-fills (the kernels in flight
//! fill at most that many GPUs, each its grid over one wave). The online adaptation
//! (`crate::stage::adaptation`) moves these limits from what each window of tasks
//! measures. A slot takes a task from Q only when no other slot of the GPU holds one
//! that has not started, so that tasks stay in Q, where the order rule and every GPU
//! can still reach them, until a GPU can start them.
//!
//! When a turn makes no progress the dispatcher spins while GPU commands are in
//! flight on a backend that must be polled (CUDA), and otherwise parks on its signal,
//! which submits, executioners, simulated engines and other dispatchers ring.

pub(crate) mod affinity;
pub(crate) mod executioners;
pub(crate) mod shared;

use crate::backend::{Fault, Gpu, Reach, Span};
use crate::callback::CallInfo;
use crate::config::Config;
use crate::report::Adapted;
use crate::report::{CommandRecord, DispatchStats, DriverError, LostGpu, MovedTask, TaskFailure};
use crate::signal::Signal;
use crate::stage::adaptation::{Adaptation, Knob, Window};
use crate::stage::queues::Grant;
use crate::stage::{OverlapMatrix, Stage, Thresholds};
use crate::task::command::{Command, CopyCmd, Direction};
use crate::task::Task;
use crossbeam_channel::{Receiver, Sender};
use executioners::{CpuDone, CpuJob};
use shared::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Tasks a measured window holds at least (more where more are in flight: a window
/// spans a turnover of the pipeline).
const MIN_WINDOW: usize = 8;

/// How long an idle CUDA dispatcher spins before it parks.
const SPIN_BEFORE_PARK: std::time::Duration = std::time::Duration::from_micros(200);

/// What a slot has in flight.
#[derive(Clone, Copy, Debug)]
struct Busy {
    stage: Stage,
    dispatched_ns: u64,
    /// The share of the GPU a kernel-stage command fills (0 for other stages).
    fill: f64,
}

#[derive(Default)]
struct Slot {
    task: Option<Box<Task>>,
    busy: Option<Busy>,
    /// The task was taken from Q and has not dispatched a command here yet.
    fresh: bool,
    /// The task's next command was in flight when the GPU was lost: it began, and may
    /// have written part of its output.
    interrupted: bool,
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

/// One window's measurement for the adaptation (see `crate::stage::adaptation`).
#[derive(Debug, Default)]
struct Meter {
    /// When the window began; `None` while the GPU has no task.
    start_ns: Option<u64>,
    /// The window ends once this many tasks have ended in it.
    target: usize,
    tasks: usize,
    work: f64,
    busy_ns: [u64; Stage::K],
    busy_since: [Option<u64>; Stage::K],
    blocked_ns: [u64; Stage::K],
    blocked_since: [Option<u64>; Stage::K],
    /// The next window follows an idle spell (the pipeline fills again): not judged.
    skip: bool,
}

impl Meter {
    /// Starts a window at `now` with `running` commands in flight per stage and
    /// `held` stages waiting for their limit.
    fn open(&mut self, now: u64, tasks_in_flight: usize, running: &[usize; Stage::K], held: &[bool; Stage::K]) {
        *self = Meter {
            start_ns: Some(now),
            target: tasks_in_flight.max(MIN_WINDOW),
            busy_since: std::array::from_fn(|k| (running[k] > 0).then_some(now)),
            blocked_since: std::array::from_fn(|k| held[k].then_some(now)),
            skip: self.skip,
            ..Default::default()
        };
    }

    /// The window up to `now`.
    fn window(&self, now: u64) -> Window {
        let open = |total: u64, since: Option<u64>| total + since.map_or(0, |t| now.saturating_sub(t));
        Window {
            ns: now.saturating_sub(self.start_ns.unwrap_or(now)),
            work: self.work,
            busy_ns: std::array::from_fn(|k| open(self.busy_ns[k], self.busy_since[k])),
            blocked_ns: std::array::from_fn(|k| open(self.blocked_ns[k], self.blocked_since[k])),
        }
    }
}

pub(crate) struct Dispatcher {
    gpu: usize,
    device: Gpu,
    matrix: OverlapMatrix,
    thresholds: Thresholds,
    shared: Arc<Shared>,
    signal: Arc<Signal>,
    slots: Vec<Slot>,
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
    gpu_busy: usize,
    cpu_jobs: Sender<CpuJob>,
    cpu_done_tx: Sender<CpuDone>,
    cpu_done: Receiver<CpuDone>,
    core: Option<core_affinity::CoreId>,
    stats: DispatchStats,
    /// Set when the GPU is lost (a sticky fault): the message and when it was seen.
    lost: Option<(String, u64)>,
}

impl Dispatcher {
    pub(crate) fn new(
        gpu: usize,
        device: Gpu,
        config: &Config,
        shared: Arc<Shared>,
        cpu_jobs: Sender<CpuJob>,
        core: Option<core_affinity::CoreId>,
    ) -> Self {
        let (cpu_done_tx, cpu_done) = crossbeam_channel::unbounded();
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
        }
    }

    fn now_ns(&self) -> u64 {
        self.shared.epoch.elapsed().as_nanos() as u64
    }

    /// The dispatcher's thread body. A panic in the loop (a bug) or a GPU that cannot
    /// be bound does not hang `synchronize`: the dispatcher dies cleanly (see `die`).
    pub(crate) fn run(mut self) {
        if let Some(core) = self.core {
            core_affinity::set_for_current(core);
        }
        if let Err(message) = self.device.bind_thread() {
            let message = format!("GPU {} unusable: {message}", self.gpu);
            self.shared.lose_gpu(LostGpu { gpu: self.gpu, at_ns: self.now_ns(), message: message.clone() });
            self.die(&message);
            return;
        }
        let turns = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.turns();
            if self.lost.is_some() {
                self.retire();
            }
        }));
        if let Err(payload) = turns {
            let message = format!("dispatcher of GPU {} {}", self.gpu, crate::callback::panic_message(payload));
            self.die(&message);
        }
    }

    fn turns(&mut self) {
        let mut spins = 0u32;
        loop {
            let seen = self.signal.epoch();
            let mut progress = self.detect_idle();
            if self.lost.is_some() {
                return; // `run` retires the GPU
            }
            progress |= self.assign();
            for stage in Stage::ALL {
                progress |= self.try_stage(stage);
            }
            if progress {
                spins = 0;
                continue;
            }
            if self.shared.stop.load(Ordering::SeqCst) && self.idle() {
                break;
            }
            if self.gpu_busy > 0 && self.device.polls() {
                // Completion shows only by querying: spin, yielding now and then so a
                // shared core still serves the executioners.
                spins += 1;
                if spins % 64 == 0 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            } else {
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
                if self.device.spins() {
                    // A CUDA dispatcher owns its core: stay hot a little before parking.
                    self.signal.spin_then_park(seen, SPIN_BEFORE_PARK);
                } else {
                    self.signal.park(seen);
                }
            }
        }
        self.flush_stats();
    }

    fn idle(&self) -> bool {
        self.slots.iter().all(|s| s.task.is_none() && s.busy.is_none())
    }

    fn flush_stats(&mut self) {
        if self.stats.commands > 0 || self.stats.polls > 0 {
            self.shared.stats[self.gpu].lock().add(&std::mem::take(&mut self.stats));
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
        self.shared.timelines[self.gpu].lock().push(record);
        match result {
            Ok(_) => {
                task.next += 1;
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
                if fault.loses_gpu() && self.lost.is_none() {
                    self.lost = Some((fault.message.clone(), self.now_ns()));
                }
                match fault.reach {
                    // Kept for `retire`, which moves it if that is safe.
                    Reach::Gpu => self.slots[j].interrupted = true,
                    Reach::Task | Reach::GpuByTask => self.fail_task(j, index, k, fault.message, fault.driver),
                }
            }
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
    /// at a time: not while another slot's task has yet to start (it waits for its
    /// first stage, and so would this one).
    fn assign(&mut self) -> bool {
        if self.lost.is_some() || self.slots.iter().any(|s| s.fresh) {
            return false;
        }
        let Some(j) = self.slots.iter().position(|s| s.task.is_none() && s.busy.is_none()) else { return false };
        let Some(task) = self.shared.buffer.pop() else { return false };
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
                && slot.task.as_ref().is_some_and(|t| t.commands.get(t.next).is_some_and(|c| c.stage() == stage))
        });
        match ready {
            None => Pick::Nothing,
            Some(j) if self.room(stage, j) => Pick::Go(j),
            Some(_) => Pick::Held,
        }
    }

    /// Notes whether a ready command of `stage` waits for the stage's limit, for the
    /// adaptation's measure (the clock is read only when that changes).
    fn note_held(&mut self, stage: Stage, held: bool) {
        let k = stage.index();
        if self.held[k] == held {
            return;
        }
        self.held[k] = held;
        if self.meter.start_ns.is_none() {
            return;
        }
        let now = self.now_ns();
        if held {
            self.meter.blocked_since[k] = Some(now);
        } else if let Some(since) = self.meter.blocked_since[k].take() {
            self.meter.blocked_ns[k] += now.saturating_sub(since);
        }
    }

    /// A task ended on this GPU: counts it in the window, and at the window's end lets
    /// the adaptation judge it and applies what it changes.
    fn task_ended(&mut self, granularity: u64) {
        if self.adaptation.is_none() || self.meter.start_ns.is_none() {
            return;
        }
        self.meter.tasks += 1;
        self.meter.work += granularity as f64;
        if self.meter.tasks < self.meter.target {
            return;
        }
        let now = self.now_ns();
        let window = self.meter.window(now);
        let skip = std::mem::take(&mut self.meter.skip);
        let changes = match self.adaptation.as_mut() {
            Some(a) if !skip => a.end_window(&window),
            _ => Vec::new(),
        };
        self.apply(&changes);
        let tasks = self.slots.iter().filter(|s| s.task.is_some()).count();
        self.meter.open(now, tasks, &self.running, &self.held);
    }

    /// Puts the adaptation's changes in force and logs them for the report.
    fn apply(&mut self, changes: &[crate::stage::adaptation::Change]) {
        for c in changes {
            match c.stage {
                Stage::Kernel => {
                    self.kernel_fills = Some(c.in_force());
                    self.shared.kernel_fills_now.lock()[self.gpu] = self.kernel_fills;
                }
                stage => self.limit[stage.index()] = (c.in_force().round() as usize).max(1),
            }
        }
        if !changes.is_empty() {
            let mut log = self.shared.adaptations.lock();
            log.extend(changes.iter().map(|&change| Adapted::new(self.gpu, change)));
        }
    }

    /// Steps 1-3 of §5.4 for one stage.
    fn try_stage(&mut self, stage: Stage) -> bool {
        let k = stage.index();
        let pick = if self.lost.is_some() { Pick::Nothing } else { self.select(stage) };
        self.note_held(stage, pick == Pick::Held);
        let Pick::Go(j) = pick else {
            if self.queued[k] {
                if let Some(g) = self.shared.queues.withdraw(stage, self.gpu, &mut self.queued[k]) {
                    self.shared.signals[g].notify();
                }
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
        self.gpu_busy += 1;
        match self.device.issue(j, cmd, info, index) {
            Ok(driver_ns) => driver_ns,
            Err(fault) => {
                self.complete(j, Err(fault));
                0
            }
        }
    }

    /// Takes a lost GPU out of the rotation (issue 7): waits for every command in flight
    /// here to end (on a lost context they end at once, with its error), so that no copy
    /// of a first attempt can race with a second; then puts back in Q each task that
    /// can safely run again elsewhere (see [`restart_point`]) and fails the others;
    /// then leaves as a dying dispatcher does.
    fn retire(&mut self) {
        let (message, at_ns) = self.lost.clone().unwrap_or_default();
        self.shared.lose_gpu(LostGpu { gpu: self.gpu, at_ns, message: message.clone() });
        for stage in Stage::ALL {
            let k = stage.index();
            if let Some(g) = self.shared.queues.withdraw(stage, self.gpu, &mut self.queued[k]) {
                self.shared.signals[g].notify();
            }
        }
        while self.slots.iter().any(|s| s.busy.is_some()) {
            let seen = self.signal.epoch();
            if !self.detect_idle() {
                if self.gpu_busy > 0 && self.device.polls() {
                    std::thread::yield_now();
                } else {
                    self.signal.park(seen);
                }
            }
        }
        self.device.quiesce();
        self.flush_stats();
        for j in 0..self.slots.len() {
            self.slots[j].fresh = false;
            let interrupted = std::mem::take(&mut self.slots[j].interrupted);
            let Some(mut task) = self.slots[j].task.take() else { continue };
            match restart_point(&task, interrupted) {
                Ok(restart) => {
                    let moved = MovedTask { task: task.id, from_gpu: self.gpu, restart };
                    task.next = restart;
                    self.shared.requeue(task, moved);
                }
                Err(why) => {
                    let text = format!("GPU {} lost ({message}); the task cannot run again elsewhere: {why}", self.gpu);
                    let failure = failure_at_next(&task, self.gpu, j, text);
                    self.shared.end_task(task, Some(failure));
                }
            }
        }
        self.die(&format!("GPU {} lost: {message}", self.gpu));
    }

    /// Leaves the pipeline without hanging anyone: gives back this GPU's stage slots and
    /// P_k places, fails the tasks it holds, and, if no other dispatcher is alive,
    /// fails every task still waiting (and any submitted later) until shutdown.
    fn die(&mut self, message: &str) {
        self.device.quiesce();
        for stage in Stage::ALL {
            let k = stage.index();
            if let Some(g) = self.shared.queues.withdraw(stage, self.gpu, &mut self.queued[k]) {
                self.shared.signals[g].notify();
            }
        }
        for j in 0..self.slots.len() {
            if let Some(busy) = self.slots[j].busy.take() {
                self.shared.queues.release(busy.stage);
            }
            self.slots[j].fresh = false;
            if let Some(task) = self.slots[j].task.take() {
                let failure = failure_at_next(&task, self.gpu, j, message.to_string());
                self.shared.end_task(task, Some(failure));
            }
        }
        self.shared.wake_all();
        if self.shared.live.fetch_sub(1, Ordering::SeqCst) != 1 {
            return; // the others take the waiting tasks
        }
        while !self.shared.stop.load(Ordering::SeqCst) {
            let seen = self.signal.epoch();
            while let Some(task) = self.shared.buffer.pop() {
                let why = format!("no GPU left to run it; the last one failed: {message}");
                let failure = failure_at_next(&task, self.gpu, 0, why);
                self.shared.end_task(task, Some(failure));
            }
            self.signal.park(seen);
        }
    }
}

/// Where a task on a lost GPU can run again from, or why it cannot. Its commands from
/// its first GPU command on run again (device memory of the lost GPU is gone), so those
/// already run must be repeatable: copies and launches are, callbacks are not (they run
/// once). And a readback that had begun must not have written over host memory that
/// one of its downloads reads (an in-place transform), or the second attempt would read
/// a half-written input.
fn restart_point(task: &Task, interrupted: bool) -> Result<usize, String> {
    let Some(first) = task.commands.iter().position(|c| c.stage().on_gpu()) else { return Ok(task.next) };
    if task.next < first || (task.next == first && !interrupted) {
        return Ok(task.next); // nothing of it began on the GPU
    }
    let begun = (task.next + usize::from(interrupted)).min(task.commands.len());
    for (i, c) in task.commands.iter().enumerate().take(begun).skip(first) {
        match c {
            Command::Copy(_) | Command::Launch(_) => {}
            Command::Gpu(_) => return Err(format!("its GPU callback (command {i}) had run, and a callback runs once")),
            Command::Cpu(_) => {
                return Err(format!(
                    "its CPU callback (command {i}) had run after its first GPU command, and a callback runs once"
                ))
            }
        }
    }
    let copies = |range: std::ops::Range<usize>, dir: Direction| {
        task.commands[range.clone()].iter().zip(range).filter_map(move |(c, i)| match c {
            Command::Copy(copy) if copy.dir == dir => Some((i, copy)),
            _ => None,
        })
    };
    for (r, readback) in copies(first..begun, Direction::Readback) {
        if let Some((d, _)) =
            copies(first..task.commands.len(), Direction::Download).find(|(_, d)| overlap(readback, d))
        {
            return Err(format!(
                "its readback (command {r}) had begun writing host memory that its download (command {d}) reads"
            ));
        }
    }
    Ok(first)
}

/// Whether two copies touch overlapping host bytes (by their spans, first row's start
/// to last row's end: conservative for 2-D copies).
fn overlap(a: &CopyCmd, b: &CopyCmd) -> bool {
    let span = |c: &CopyCmd| (c.host_offset, c.host_offset + (c.height - 1) * c.host_pitch + c.width);
    let ((a0, a1), (b0, b1)) = (span(a), span(b));
    Arc::ptr_eq(&a.host, &b.host) && a0 < b1 && b0 < a1
}

/// The failure of `task` at the command it would run next.
fn failure_at_next(task: &Task, gpu: usize, stream: usize, message: String) -> TaskFailure {
    let stage = task.commands.get(task.next).map_or(Stage::Cpu, |c| c.stage());
    TaskFailure { task: task.id, command: task.next, stage, gpu, stream, message, driver: None }
}
