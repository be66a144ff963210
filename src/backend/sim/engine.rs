//! A simulated GPU's engines: each copy engine and the compute engine is a thread that
//! takes jobs (a copy, a kernel's CPU twin, a library callback) from its channel, holds
//! them for their modeled time on the link and SM models, and posts each completion in
//! its stream slot, ringing the dispatcher's signal. Injected faults (a failing command,
//! a lost or slow GPU) act here.

use super::clock;
use super::compute::Sms;
use super::failure::{Held, SimFailure};
use super::link::{Dir, Links};
use super::{Completions, SimProfile};
use crate::backend::device::SimMemory;
use crate::backend::op::{Direction, HostAt, HostBlock, HostFunc, Tag, Twin};
use crate::backend::{Fault, Reach, Span, TaskRun, WindowRun};
use crate::signal::Signal;
use crossbeam_channel::Receiver;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EngineKind {
    Copy,
    Up,
    Down,
    Compute,
}

/// One copy of a command's copies, as an engine takes it (shares of the memories it
/// names, taken at issue).
pub(super) enum SimOp {
    /// Between a host block and device memory: `shape` is host offset and pitch,
    /// device offset and pitch, width and height.
    Copy { dir: Direction, host: Arc<dyn HostBlock>, dev: Arc<SimMemory>, shape: [usize; 6] },
    /// Bytes read at issue (where the profile moves bytes) to device memory.
    Upload { dst: Arc<SimMemory>, at: usize, len: usize, bytes: Option<Vec<u8>> },
    /// From another GPU's memory.
    Peer { src: Arc<SimMemory>, src_at: usize, dst: Arc<SimMemory>, dst_at: usize, len: usize },
    /// Zeroes.
    Fill { dst: Arc<SimMemory>, at: usize, len: usize },
}

/// A command's work, as an engine takes it.
pub(super) enum Work {
    /// Copies run as one command (a copy, or a fetch's parts): one copy latency, then
    /// the bytes on the links.
    Copies(SimOp, Vec<SimOp>),
    /// A kernel's twin on GPU `gpu`'s stream slot `slot` (the engine's GPU, or another
    /// where a window spans GPUs), the `seq`-th launched on its GPU, using `share` of the
    /// SMs alone.
    Launch { twin: Arc<dyn Twin>, gpu: usize, slot: usize, seq: u64, share: f64 },
    /// A host function, and its stream slot.
    Callback(Box<dyn HostFunc>, usize),
    /// A replay window: one graph launch, then its commands in order.
    Window(Box<WindowJob>),
}

/// A replay window's commands as an engine takes them: each with the GPU it runs on
/// (the engine's, or another where the window spans GPUs) and its tag, in the window's
/// order.
pub(super) struct WindowJob {
    pub(super) items: Vec<(usize, Tag, Work)>,
    /// Commands per task.
    pub(super) counts: Vec<usize>,
    /// Per task: the window's tasks it runs after.
    pub(super) preds: Vec<Vec<u32>>,
    /// Per task: its id, and the tasks of earlier windows it runs after (with their
    /// windows' numbers).
    pub(super) ids: Vec<crate::TaskId>,
    pub(super) external: Vec<Vec<(crate::TaskId, u64)>>,
    /// The window's number (`Window::seq`).
    pub(super) seq: u64,
    /// Its place among the GPU's windows: it runs when the windows before it ran.
    pub(super) turn: u64,
}

pub(super) struct Job {
    pub(super) stream: usize,
    /// The command it was lowered from (for injected faults).
    pub(super) tag: Tag,
    pub(super) work: Work,
}

/// The fault of a lost simulated GPU.
pub(super) fn lost_fault(gpu: usize, reach: Reach) -> Fault {
    Fault { message: SimFailure::Lost { gpu }.to_string(), reach, driver: None }
}

pub(super) struct Engine {
    pub(super) gpu: usize,
    pub(super) profile: SimProfile,
    pub(super) links: Arc<Links>,
    /// The GPU's SMs, shared by its compute threads.
    pub(super) sms: Arc<Sms>,
    pub(super) done: Completions,
    pub(super) window_done: super::WindowDone,
    pub(super) wake: Arc<Signal>,
    pub(super) epoch: Instant,
    /// When the GPU dies, if an injected death is set.
    pub(super) death: Option<Instant>,
    /// Every command takes this many times as long.
    pub(super) slow: f64,
    /// The machine's faults fired so far (every GPU's loss, each loss's firing).
    pub(super) fired: Arc<super::Fired>,
}

impl Engine {
    pub(super) fn run(self, jobs: Receiver<Job>) {
        loop {
            let job = if self.profile.spin {
                // Spin (yielding) up to 200 µs for the next job before blocking.
                let until = Instant::now() + Duration::from_micros(200);
                loop {
                    match jobs.try_recv() {
                        Ok(job) => break Some(job),
                        Err(crossbeam_channel::TryRecvError::Disconnected) => break None,
                        Err(crossbeam_channel::TryRecvError::Empty) if Instant::now() < until => {
                            std::thread::yield_now()
                        }
                        Err(crossbeam_channel::TryRecvError::Empty) => break jobs.recv().ok(),
                    }
                }
            } else {
                jobs.recv().ok()
            };
            let Some(job) = job else { return };
            if let Work::Window(w) = job.work {
                let turn = w.turn;
                let windows = &self.window_done;
                {
                    let mut st = windows.state.lock();
                    while st.next != turn {
                        windows.turn_taken.wait(&mut st);
                    }
                }
                let (ids, seq) = (w.ids.clone(), w.seq);
                let result = self.run_window(*w);
                let mut st = windows.state.lock();
                // A task of a window behind this one after one of these does not run.
                let failed = match &result {
                    Ok(run) => ids
                        .iter()
                        .zip(&run.tasks)
                        .filter(|(_, r)| !matches!(r, TaskRun::Ran(_)))
                        .map(|(id, _)| *id)
                        .collect(),
                    Err(_) => ids,
                };
                st.failed.push_back((seq, failed));
                if st.failed.len() > 2 {
                    st.failed.pop_front();
                }
                st.next += 1;
                st.done.push_back(result);
                drop(st);
                windows.turn_taken.notify_all();
                self.wake.notify();
                continue;
            }
            let start = Instant::now();
            let result = self.run_job(job.work, job.tag, start, self.profile.launch_latency, self.gpu);
            let end = Instant::now();
            let span = Span {
                start_ns: start.duration_since(self.epoch).as_nanos() as u64,
                end_ns: end.duration_since(self.epoch).as_nanos() as u64,
            };
            *self.done[job.stream].lock() = Some(result.map(|()| span));
            self.wake.notify();
        }
    }

    /// Holds the command until `modeled` (scaled) after `start`; an end past what the
    /// clock can count fails it.
    fn hold(&self, start: Instant, modeled: Duration, what: Held) -> Result<(), SimFailure> {
        let factor = self.profile.time_scale * self.slow;
        let end =
            start.checked_add(clock::scale(modeled, factor)).ok_or(SimFailure::PastClock { what, modeled, factor })?;
        clock::sleep_until(end);
        Ok(())
    }

    /// Whether GPU `gpu` (this one, or another a window spans) is lost, or its injected
    /// death has come.
    fn dead(&self, gpu: usize) -> bool {
        let death = if gpu == self.gpu {
            self.death
        } else {
            let faults = &self.profile.faults;
            faults.death(gpu).and_then(|at| self.epoch.checked_add(clock::scale(at, self.profile.time_scale)))
        };
        self.fired.lost[gpu].load(Ordering::SeqCst) || death.is_some_and(|at| Instant::now() >= at)
    }

    /// Runs a replay window: the graph's launch latency once, then each task's commands
    /// in order at the graph's node latency, a task after the failure of one it runs
    /// after not at all. A lost GPU fails the whole window: this one, or another it spans
    /// (`Reach::Spanned`).
    fn run_window(&self, w: WindowJob) -> Result<WindowRun, Fault> {
        let start = Instant::now();
        self.hold(start, self.profile.graph_launch_latency, Held::GraphLaunch).map_err(Fault::task)?;
        let mut runs: Vec<TaskRun> = Vec::with_capacity(w.counts.len());
        let mut items = w.items.into_iter();
        let failed_before: Vec<Option<crate::TaskId>> = {
            let st = self.window_done.state.lock();
            let failed = |p: &crate::TaskId, seq: u64| st.failed.iter().any(|(s, f)| *s == seq && f.contains(p));
            w.external.iter().map(|e| e.iter().find(|(p, s)| failed(p, *s)).map(|(p, _)| *p)).collect()
        };
        for (t, &count) in w.counts.iter().enumerate() {
            let failed_pred = w.preds[t].iter().map(|&p| p as usize).find(|&p| !matches!(runs[p], TaskRun::Ran(_)));
            let cause = match failed_pred {
                Some(p) => match runs[p] {
                    TaskRun::NotRun { cause } => Some(cause),
                    _ => Some(w.ids[p]),
                },
                None => failed_before[t],
            };
            if let Some(cause) = cause {
                runs.push(TaskRun::NotRun { cause });
                items.by_ref().take(count).for_each(drop);
                continue;
            }
            let mut spans = Vec::with_capacity(count);
            let mut failure = None;
            for c in 0..count {
                let Some((on, tag, work)) = items.next() else { break };
                if failure.is_some() {
                    continue;
                }
                let s0 = Instant::now();
                match self.run_job(work, tag, s0, self.profile.graph_node_latency, on) {
                    Ok(()) => spans.push(Span {
                        start_ns: s0.duration_since(self.epoch).as_nanos() as u64,
                        end_ns: Instant::now().duration_since(self.epoch).as_nanos() as u64,
                    }),
                    Err(fault) if fault.loses_a_gpu() => return Err(fault),
                    Err(fault) => failure = Some(TaskRun::Failed { command: c, fault }),
                }
            }
            runs.push(failure.unwrap_or(TaskRun::Ran(spans)));
        }
        let span = Span {
            start_ns: start.duration_since(self.epoch).as_nanos() as u64,
            end_ns: Instant::now().duration_since(self.epoch).as_nanos() as u64,
        };
        Ok(WindowRun { span, gpu_ns: Some(span.end_ns.saturating_sub(span.start_ns)), tasks: runs })
    }

    /// Runs one command on GPU `on` (this engine's, or another a spread window spans)
    /// with the injected faults: a lost GPU fails everything (a command running when it
    /// dies fails too), a failing command fails its task, a crashing one takes its GPU
    /// down. A loss of another GPU than this engine's reaches as `Reach::Spanned`.
    fn run_job(&self, work: Work, tag: Tag, start: Instant, launch: Duration, on: usize) -> Result<(), Fault> {
        let (task, command) = (tag.task, tag.command);
        let faults = &self.profile.faults;
        let reach = |own: Reach| if on == self.gpu { own } else { Reach::Spanned(on) };
        if self.dead(on) {
            self.fired.lost[on].store(true, Ordering::SeqCst);
            return Err(lost_fault(on, reach(Reach::Gpu)));
        }
        if faults.crashes(task, command) {
            self.fired.lost[on].store(true, Ordering::SeqCst);
            return Err(Fault {
                message: SimFailure::IllegalAddress { task, command }.to_string(),
                reach: reach(Reach::GpuByTask),
                driver: None,
            });
        }
        if faults.fails(task, command) {
            return Err(Fault::task(SimFailure::Injected { task, command }));
        }
        self.work(work, start, launch).map_err(Fault::task)?;
        let losing = faults.losing.iter().position(|&(t, c)| (t, c) == (task, command));
        if losing.is_some_and(|i| !self.fired.lost_once[i].swap(true, Ordering::SeqCst)) {
            self.fired.lost[on].store(true, Ordering::SeqCst);
        }
        if self.dead(on) {
            self.fired.lost[on].store(true, Ordering::SeqCst);
            return Err(lost_fault(on, reach(Reach::Gpu)));
        }
        Ok(())
    }

    /// Does a command's work and holds it for its modeled time; `launch` is a kernel's
    /// or a library call's latency (a stream launch's, or a graph node's).
    fn work(&self, work: Work, start: Instant, launch: Duration) -> Result<(), SimFailure> {
        match work {
            Work::Copies(first, more) => {
                // One copy alone is a copy; several (or a peer copy, an upload, a fill)
                // are a resident fetch.
                let what =
                    if more.is_empty() && matches!(first, SimOp::Copy { .. }) { Held::Copy } else { Held::Fetch };
                let (mut up, mut down, mut peer) = (0usize, 0usize, 0usize);
                for op in std::iter::once(first).chain(more) {
                    self.copy(op, &mut up, &mut down, &mut peer)?;
                }
                self.hold(start, self.profile.copy_latency, what)?;
                if peer > 0 {
                    let secs = peer as f64 * self.slow / self.profile.peer_bytes_per_s;
                    self.hold(Instant::now(), Duration::from_secs_f64(secs.min(1e9)), Held::PeerCopy)?;
                }
                match down {
                    0 => self.links.transfer(self.gpu, Dir::Up, up as f64 * self.slow),
                    _ => self.links.transfer(self.gpu, Dir::Down, down as f64 * self.slow),
                }
            }
            Work::Launch { twin, gpu, slot, seq, share } => {
                let began = Instant::now();
                if self.profile.execute {
                    twin.run(gpu, slot)?;
                }
                let real = began.elapsed();
                let modeled = twin.modeled().unwrap_or(real);
                // Its time alone, from `start` (the twin's run counts as part of it), on
                // the SMs that the kernels launched before it leave.
                let modeled = launch.saturating_add(modeled);
                let factor = self.profile.time_scale * self.slow;
                let end = start.checked_add(clock::scale(modeled, factor)).ok_or_else(|| SimFailure::PastClock {
                    what: Held::Kernel(twin.name().to_string()),
                    modeled,
                    factor,
                })?;
                let left = end.saturating_duration_since(Instant::now());
                self.sms.run(seq, share, left, twin.name())
            }
            Work::Window(_) => Err(SimFailure::WindowInWindow),
            Work::Callback(f, slot) => {
                f.run(HostAt { gpu: self.gpu, slot, stream: None })?;
                self.hold(start, launch, Held::GpuCallback)
            }
        }
    }

    /// Moves one copy's bytes (where the profile executes), counting them by link.
    fn copy(&self, op: SimOp, up: &mut usize, down: &mut usize, peer: &mut usize) -> Result<(), SimFailure> {
        let execute = self.profile.execute;
        match op {
            SimOp::Copy { dir, host, dev, shape } => {
                let [host_offset, host_pitch, dev_offset, dev_pitch, width, height] = shape;
                match dir {
                    Direction::Download => *up += width * height,
                    Direction::Readback => *down += width * height,
                }
                if !execute {
                    return Ok(());
                }
                let host = host.alloc();
                let mut words = dev.data.lock();
                let dev_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words[..]);
                for row in 0..height {
                    let h = host_offset + row * host_pitch;
                    let d = dev_offset + row * dev_pitch;
                    match dir {
                        // The task's claim on this host region excludes writers.
                        Direction::Download => dev_bytes[d..d + width].copy_from_slice(host.bytes(h, h + width)),
                        Direction::Readback => {
                            // SAFETY: the task's write claim on this host region, made
                            // at submit, active while the task runs and given back when
                            // it ends, excludes every other access while the copy runs
                            // (a conflicting task's claim is dormant: that task runs
                            // only after this one ends; see `memory::claims`); the slice
                            // lives for this statement, while `host` holds the
                            // allocation.
                            unsafe { host.bytes_mut(h, h + width) }.copy_from_slice(&dev_bytes[d..d + width])
                        }
                    }
                }
            }
            SimOp::Upload { dst, at, len, bytes } => {
                *up += len;
                if let Some(bytes) = bytes {
                    let mut words = dst.data.lock();
                    bytemuck::cast_slice_mut::<u128, u8>(&mut words[..])[at..at + len].copy_from_slice(&bytes);
                }
            }
            SimOp::Peer { src, src_at, dst, dst_at, len } => {
                *peer += len;
                if execute {
                    // Read the source first, then write: two GPUs fetching from each other
                    // never hold both memories at once.
                    let bytes = bytemuck::cast_slice::<u128, u8>(&src.data.lock()[..])[src_at..src_at + len].to_vec();
                    let mut words = dst.data.lock();
                    bytemuck::cast_slice_mut::<u128, u8>(&mut words[..])[dst_at..dst_at + len].copy_from_slice(&bytes);
                }
            }
            SimOp::Fill { dst, at, len } => {
                if execute {
                    let mut words = dst.data.lock();
                    bytemuck::cast_slice_mut::<u128, u8>(&mut words[..])[at..at + len].fill(0);
                }
            }
        }
        Ok(())
    }
}
