//! Recovery from a lost GPU (the robustness work) and the dispatcher's way out: `retire` takes a GPU
//! whose context is lost out of the rotation, waits for its commands in flight, moves
//! each task that can safely run again to Q for the other GPUs and fails the others;
//! `die` leaves the pipeline without hanging anyone (also after a panic or a GPU that
//! cannot be bound). Apart from `mod.rs` so the main loop reads as Algorithms 1 and 2.

use super::{Device, Dispatcher};
use crate::report::{MovedTask, TaskFailure};
use crate::stage::Stage;
use crate::sync::Ordering;
use crate::task::command::{Command, CopyCmd, Direction};
use crate::task::Task;
use std::sync::Arc;

impl<D: Device> Dispatcher<D> {
    /// Takes a lost GPU out of the rotation (the robustness work): waits for every command in flight
    /// here to end (on a lost context they end at once, with its error), so that no copy
    /// of a first attempt can race with a second; then puts back in Q each task that
    /// can safely run again elsewhere (see [`restart_point`]) and fails the others;
    /// then leaves as a dying dispatcher does.
    pub(super) fn retire(&mut self) {
        // Recorded in the report when the fault was seen (`mark_lost`).
        let (message, _) = self.lost.clone().unwrap_or_default();
        for stage in Stage::ALL {
            let k = stage.index();
            if let Some(g) = self.shared.queues.withdraw(stage, self.gpu, &mut self.queued[k]) {
                self.shared.signals[g].notify();
            }
        }
        while self.slots.iter().any(|s| s.busy.is_some()) || !self.windows.is_empty() {
            let seen = self.signal.epoch();
            if !self.detect_idle() {
                if self.gpu_busy > 0 && self.device.polls() {
                    crate::sync::thread::yield_now();
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
    pub(super) fn die(&mut self, message: &str) {
        self.device.quiesce();
        // Windows in flight (a panic while they ran): their tasks fail, after the quiesce.
        self.drop_windows(message);
        // Out of the rotation: its heap in Q is taken by the others, no ready task is
        // placed here any more.
        self.shared.alive[self.gpu].store(false, Ordering::SeqCst);
        self.hand_over_windows(message);
        for stage in Stage::ALL {
            let k = stage.index();
            if let Some(g) = self.shared.queues.withdraw(stage, self.gpu, &mut self.queued[k]) {
                self.shared.signals[g].notify();
            }
        }
        for j in 0..self.slots.len() {
            if let Some(busy) = self.slots[j].busy.take() {
                self.shared.queues.release(busy.stage);
                // A fetch in flight gives back what its plan holds (pending pieces here,
                // the source copies it counted as used).
                if let Some(task) = self.slots[j].task.as_mut() {
                    if let Some(c) = task.commands.get_mut(task.next) {
                        crate::seam::fetch_ended(self.gpu, c, false);
                    }
                }
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
fn restart_point(task: &Task, interrupted: bool) -> Result<usize, NoRestart> {
    if task.bound {
        return Err(NoRestart::Bound);
    }
    let Some(first) = task.commands.iter().position(|c| c.stage().on_gpu()) else { return Ok(task.next) };
    if task.next < first || (task.next == first && !interrupted) {
        return Ok(task.next); // nothing of it began on the GPU
    }
    let begun = (task.next + usize::from(interrupted)).min(task.commands.len());
    for (i, c) in task.commands.iter().enumerate().take(begun).skip(first) {
        match c {
            Command::Copy(_) | Command::Launch(_) => {}
            #[cfg(feature = "resident")]
            Command::Fetch(_) => {}
            Command::Gpu(_) => return Err(NoRestart::GpuCallbackRan { command: i }),
            Command::Cpu(_) => return Err(NoRestart::CpuCallbackRan { command: i }),
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
            return Err(NoRestart::ReadbackOverInput { readback: r, download: d });
        }
    }
    Ok(first)
}

/// Why a task on a lost GPU cannot run again elsewhere ([`restart_point`]): what of
/// it had run that must not run twice.
#[derive(Debug, thiserror::Error)]
enum NoRestart {
    /// Its launches name external device memory, which lives on the lost GPU.
    #[error("its launches use external device memory on that GPU")]
    Bound,
    /// Its GPU callback had run (a callback runs once).
    #[error("its GPU callback (command {command}) had run, and a callback runs once")]
    GpuCallbackRan {
        /// The callback's index in the task.
        command: usize,
    },
    /// A CPU callback after its first GPU command had run.
    #[error("its CPU callback (command {command}) had run after its first GPU command, and a callback runs once")]
    CpuCallbackRan {
        /// The callback's index in the task.
        command: usize,
    },
    /// A readback had begun writing host memory that one of its downloads reads.
    #[error(
        "its readback (command {readback}) had begun writing host memory that its download (command {download}) reads"
    )]
    ReadbackOverInput {
        /// The readback's index in the task.
        readback: usize,
        /// The download's index.
        download: usize,
    },
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
