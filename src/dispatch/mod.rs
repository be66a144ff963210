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
//! When a turn makes no progress the dispatcher spins while GPU commands are in
//! flight on a backend that must be polled (CUDA), and otherwise parks on its signal,
//! which submits, executioners, simulated engines and other dispatchers ring.

pub(crate) mod affinity;

use crate::backend::{Fault, Gpu, Reach, Span};
use crate::builder::Config;
use crate::callback::{CallInfo, CpuDone, CpuJob};
use crate::error::TaskFailure;
use crate::report::{CommandRecord, DispatchStats, LostGpu, MovedTask};
use crate::scheduler::Shared;
use crate::signal::Signal;
use crate::stage::queues::Grant;
use crate::stage::{OverlapMatrix, Stage, Thresholds};
use crate::task::command::{Command, CopyCmd, Direction};
use crate::task::Task;
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// How long an idle CUDA dispatcher spins before it parks.
const SPIN_BEFORE_PARK: std::time::Duration = std::time::Duration::from_micros(200);

/// What a slot has in flight.
#[derive(Clone, Copy, Debug)]
struct Busy {
    stage: Stage,
    dispatched_ns: u64,
}

#[derive(Default)]
struct Slot {
    task: Option<Box<Task>>,
    busy: Option<Busy>,
    /// The task's next command was in flight when the GPU was lost: it began, and may
    /// have written part of its output.
    interrupted: bool,
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
        Dispatcher {
            gpu,
            device,
            matrix: config.matrices[gpu],
            thresholds: config.thresholds,
            signal: shared.signals[gpu].clone(),
            shared,
            slots: (0..s).map(|_| Slot::default()).collect(),
            running: [0; Stage::K],
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
                    // Counts reach the shared stats before the task counts as ended, so
                    // `synchronize` never misses them.
                    self.flush_stats();
                    self.shared.end_task(task, None);
                }
            }
            Err(fault) => {
                if fault.loses_gpu() && self.lost.is_none() {
                    self.lost = Some((fault.message.clone(), self.now_ns()));
                }
                match fault.reach {
                    // Kept for `retire`, which moves it if that is safe.
                    Reach::Gpu => self.slots[j].interrupted = true,
                    Reach::Task | Reach::GpuByTask => self.fail_task(j, index, k, fault.message),
                }
            }
        }
    }

    fn fail_task(&mut self, j: usize, command: usize, stage: Stage, message: String) {
        if let Some(task) = self.slots[j].task.take() {
            let failure = TaskFailure { task: task.id, command, stage, gpu: self.gpu, stream: j, message };
            self.flush_stats();
            self.shared.end_task(task, Some(failure));
        }
    }

    /// Task assignment (Algorithm 2, lines 4-8): idle slots take tasks from Q.
    fn assign(&mut self) -> bool {
        let mut progress = false;
        if self.lost.is_some() {
            return false;
        }
        for slot in &mut self.slots {
            if slot.task.is_none() && slot.busy.is_none() {
                match self.shared.buffer.pop() {
                    Some(task) => {
                        slot.task = Some(task);
                        progress = true;
                    }
                    None => break,
                }
            }
        }
        progress
    }

    /// Algorithm 2 with pop = false: the slot whose next command is at `stage` and may
    /// start now, searched cyclically after W_k.
    fn select(&self, stage: Stage) -> Option<usize> {
        let k = stage.index();
        if !self.thresholds.local_allows(stage, self.running[k]) || !self.matrix.can_overlap(stage, &self.running) {
            return None;
        }
        let s = self.slots.len();
        (1..=s).map(|i| (self.active[k] + i) % s).find(|&j| {
            let slot = &self.slots[j];
            slot.busy.is_none()
                && slot.task.as_ref().is_some_and(|t| t.commands.get(t.next).is_some_and(|c| c.stage() == stage))
        })
    }

    /// Steps 1-3 of §5.4 for one stage.
    fn try_stage(&mut self, stage: Stage) -> bool {
        let k = stage.index();
        let candidate = if self.lost.is_some() { None } else { self.select(stage) };
        let Some(j) = candidate else {
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
        self.running[k] += 1;
        self.active[k] = j;
        self.slots[j].busy = Some(Busy { stage, dispatched_ns });
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
    TaskFailure { task: task.id, command: task.next, stage, gpu, stream, message }
}
