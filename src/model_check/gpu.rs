//! The model GPU the real dispatcher drives (`dispatch::Device`): an engine thread per
//! GPU runs the commands and posts completions; what runs is counted and checked.

use super::pipeline::Config;
use super::thread;
use crate::backend::{DriverNs, Fault, Span};
use crate::callback::CallInfo;
use crate::dispatch::Device;
use crate::memory::{DeviceBufferInner, FreeDevice, HostShared};
use crate::signal::Signal;
use crate::stage::Stage;
use crate::task::command::{Command, CopyCmd, Direction};
use shuttle::sync::atomic::AtomicUsize;
use shuttle::sync::{mpsc, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// What the model GPUs, executioners and the final checks count.
pub(super) struct Counts {
    pub(super) config: Config,
    /// Per stage: commands in flight on all GPUs.
    pub(super) global: [AtomicUsize; Stage::K],
    /// Per GPU and stage: commands in flight on that GPU.
    pub(super) local: Vec<[AtomicUsize; Stage::K]>,
    /// Per task: commands run so far.
    pub(super) ran: Vec<AtomicUsize>,
    /// Per task: commands whose end is known (a completion polled, a callback returned).
    pub(super) finished: Vec<AtomicUsize>,
}

impl Counts {
    /// Command `command` of task `task`, of `stage`, starts on `gpu`.
    pub(super) fn enter(&self, gpu: usize, stage: Stage, task: usize, command: usize) {
        let (k, t) = (stage.index(), &self.config.thresholds);
        let running: [usize; Stage::K] = std::array::from_fn(|s| self.local[gpu][s].load(SeqCst));
        assert!(self.config.matrix.can_overlap(stage, &running), "stage {stage} overlaps a forbidden one: {running:?}");
        let n = self.global[k].fetch_add(1, SeqCst) + 1;
        assert!(n <= t.global[k], "{n} commands of stage {stage} in flight (G = {})", t.global[k]);
        let n = self.local[gpu][k].fetch_add(1, SeqCst) + 1;
        assert!(n <= t.local[k], "{n} commands of stage {stage} on GPU {gpu} (L = {})", t.local[k]);
        if command == 0 {
            for &p in self.config.after.get(task).into_iter().flatten() {
                let (done, all) = (self.finished[p].load(SeqCst), self.config.plans[p].1.len());
                assert_eq!(done, all, "task {task} starts after task {p}, of which {done} of {all} commands ended");
            }
        }
        let before = self.ran[task].fetch_add(1, SeqCst);
        assert_eq!(before, command, "task {task} ran command {command} after {before} commands");
    }

    /// A command of `stage` of `task` on `gpu` has ended and its end is known.
    pub(super) fn leave(&self, gpu: usize, stage: Stage, task: usize) {
        self.finished[task].fetch_add(1, SeqCst);
        self.global[stage.index()].fetch_sub(1, SeqCst);
        self.local[gpu][stage.index()].fetch_sub(1, SeqCst);
    }
}

/// Device memory no model command touches: nothing to free.
#[derive(Debug)]
pub(super) struct NoFree;

impl FreeDevice for NoFree {
    fn free_device(&self, _bufs: Vec<crate::backend::device::PhysBuf>) {}
}

/// The commands of `plan`'s task `id`: copies of one byte, GPU callbacks for the kernel
/// stage (the model GPU does not run them), and CPU callbacks that count themselves.
pub(super) fn commands(
    counts: &Arc<Counts>,
    id: usize,
    host: &Arc<HostShared>,
    dev: &Arc<DeviceBufferInner>,
) -> Vec<Command> {
    let copy = |dir| {
        let (host, dev) = (host.clone(), dev.clone());
        Command::Copy(CopyCmd {
            dir,
            host,
            host_offset: 0,
            host_pitch: 1,
            dev: crate::memory::DevTarget::Virtual(dev),
            dev_offset: 0,
            dev_pitch: 1,
            width: 1,
            height: 1,
        })
    };
    let stages = &counts.config.plans[id].1;
    stages
        .iter()
        .enumerate()
        .map(|(i, stage)| match stage {
            Stage::Download => copy(Direction::Download),
            Stage::Readback => copy(Direction::Readback),
            Stage::Kernel => Command::Gpu(None),
            Stage::Cpu => {
                let counts = counts.clone();
                Command::Cpu(Some(Box::new(move |info: &CallInfo| {
                    counts.enter(info.gpu, Stage::Cpu, id, i);
                    thread::yield_now();
                    counts.leave(info.gpu, Stage::Cpu, id);
                    Ok(())
                })))
            }
        })
        .collect()
}

/// A command sent to a GPU's model engine, or a replay window (`window`: whether it
/// runs well).
pub(super) struct Job {
    slot: usize,
    task: usize,
    command: usize,
    stage: Stage,
    window: Option<bool>,
}

/// The engine of one GPU: runs commands in arrival order and posts each completion in
/// its slot, then rings the dispatcher's signal `ring` (as `backend/sim` does), if any
/// (a polled GPU's dispatcher finds it by polling). Ends when its GPU goes.
pub(super) fn engine(
    counts: Arc<Counts>,
    gpu: usize,
    ring: Option<Arc<Signal>>,
    jobs: mpsc::Receiver<Job>,
    posted: Arc<[Mutex<bool>]>,
    windows: Arc<Mutex<VecDeque<bool>>>,
) {
    while let Ok(job) = jobs.recv() {
        if let Some(ok) = job.window {
            // A window runs its tasks as one unit and completes in issue order.
            thread::yield_now();
            windows.lock().unwrap().push_back(ok);
            if let Some(signal) = &ring {
                signal.notify();
            }
            continue;
        }
        counts.enter(gpu, job.stage, job.task, job.command);
        thread::yield_now();
        *posted[job.slot].lock().unwrap() = true;
        if let Some(signal) = &ring {
            signal.notify();
        }
    }
}

/// The model GPU the real dispatcher drives: issue hands the command (or the replay
/// window) to the engine; poll takes the slot's posted completion (or the first
/// window's).
pub(super) struct ModelGpu {
    pub(super) gpu: usize,
    pub(super) counts: Arc<Counts>,
    pub(super) jobs: mpsc::Sender<Job>,
    pub(super) posted: Arc<[Mutex<bool>]>,
    /// Per slot: the stage and task of its command in flight.
    pub(super) stages: Vec<Option<(Stage, usize)>>,
    /// Windows the engine completed, in issue order (whether each ran well).
    pub(super) windows: Arc<Mutex<VecDeque<bool>>>,
    /// Every window issued here fails as a whole (its tasks fail).
    pub(super) fail_windows: bool,
    /// Every window issued here spread over another GPU fails with that GPU lost under
    /// it (`Reach::Spanned`).
    pub(super) lose_spanned: bool,
    /// Per window issued and not yet polled, in order: the other GPU it spans, if any.
    pub(super) spans: VecDeque<Option<usize>>,
}

impl Device for ModelGpu {
    #[cfg(feature = "replay")]
    type Visit = ();

    fn bind_thread(&self) -> Result<(), crate::report::DriverError> {
        Ok(())
    }

    #[cfg(feature = "replay")]
    fn visit(&self) -> Result<(), crate::report::DriverError> {
        Ok(())
    }

    fn issue(&mut self, stream: usize, cmd: &mut Command, info: CallInfo, command: usize) -> Result<DriverNs, Fault> {
        let task = info.task.0 as usize;
        assert!(self.stages[stream].replace((cmd.stage(), task)).is_none(), "slot {stream} issued twice");
        let job = Job { slot: stream, task, command, stage: cmd.stage(), window: None };
        self.jobs.send(job).expect("the engine outlives its GPU");
        Ok(0)
    }

    fn poll(&mut self, stream: usize) -> Option<Result<Span, Fault>> {
        if !std::mem::take(&mut *self.posted[stream].lock().unwrap()) {
            return None;
        }
        let (stage, task) = self.stages[stream].take().expect("a completion of a busy slot");
        self.counts.leave(self.gpu, stage, task);
        Some(Ok(Span { start_ns: 0, end_ns: 0 }))
    }

    #[cfg(feature = "replay")]
    fn issue_window(&mut self, w: &crate::seam::Window) -> Result<(DriverNs, crate::backend::GraphUse), Fault> {
        assert!(self.stages.iter().all(Option::is_none), "a window issued beside commands in flight");
        let task = w.tasks.first().map_or(0, |t| t.id.0 as usize);
        let spanned = w.gpus.iter().map(|&g| g as usize).find(|&g| g != self.gpu);
        self.spans.push_back(spanned);
        let fails = self.fail_windows || (self.lose_spanned && spanned.is_some());
        let job = Job { slot: 0, task, command: 0, stage: Stage::Kernel, window: Some(!fails) };
        self.jobs.send(job).expect("the engine outlives its GPU");
        Ok((0, crate::backend::GraphUse::Simulated))
    }

    #[cfg(feature = "replay")]
    fn issue_recorded(&mut self, part: &crate::seam::Part) -> Result<(DriverNs, crate::backend::GraphUse), Fault> {
        self.issue_window(&part.window.lock())
    }

    /// A window that ran well: every task ran, untimed inside it (as on CUDA).
    fn poll_window(&mut self) -> Option<Result<crate::backend::WindowRun, Fault>> {
        let ok = self.windows.lock().unwrap().pop_front()?;
        let spanned = self.spans.pop_front().expect("a window issued for each completed");
        Some(match (ok, spanned) {
            (true, _) => {
                Ok(crate::backend::WindowRun { span: Span { start_ns: 0, end_ns: 0 }, gpu_ns: None, tasks: Vec::new() })
            }
            (false, Some(g)) if self.lose_spanned => Err(Fault {
                message: format!("the model lost GPU {g} under the window"),
                reach: crate::backend::Reach::Spanned(g),
                driver: None,
            }),
            (false, _) => Err(Fault::task("the model window failed")),
        })
    }

    #[cfg(feature = "replay")]
    fn can_issue_window(&self, _w: &crate::seam::Window) -> bool {
        true
    }

    #[cfg(feature = "replay")]
    fn other_gpu_lost(&self, _gpu: usize) -> bool {
        false
    }

    fn quiesce(&self) {}

    fn polls(&self) -> bool {
        self.counts.config.polls(self.gpu)
    }

    fn spins(&self) -> bool {
        self.gpu < self.counts.config.spinners || self.polls()
    }
}
