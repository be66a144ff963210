//! Recorded graphs: a loop's tasks recorded once ([`Scheduler::record`]) and run many
//! times, each run costing the host the same few steps whatever the tasks' number.
//!
//! Recording keeps the submitted tasks (`ext::replay::capture`) and lays them out as
//! replay windows are, one part per GPU that gets work (`window::plan`). A part is
//! never ended: its tasks stay, and each run queues a *shell* for each part (a window
//! without tasks that names the part) where windows queue. The dispatcher issues a
//! shell's part as a window's graph; the backend keeps the part's graph under the
//! part's number and generation, so a later run of an unchanged part is one
//! `cuGraphLaunch` (CUDA; the sim lowers and runs it each time), or on the device a
//! reset of its kept image's counters and one launch of the executor. An update
//! ([`RecordedGraph::set_arg`]) waits until no run is queued or running, changes the
//! task in place and bumps the part's generation: the next run sets the changed nodes
//! in the kept graph (`cuGraphExecKernelNodeSetParams`), it does not rebuild it.
//! [`RecordedGraph::set_copy`] moves a copy's host side the same way
//! (`cuGraphExecMemcpyNodeSetParams`), and the runs claim the new bytes.
//!
//! A run claims, for each host buffer the graph copies from or to, the span of bytes
//! its copies touch (one claim a buffer, however many copies), from its first run
//! queued to its last ended: guards wait for it as for a task; a run meeting a task's
//! claim waits for that task; one meeting a guard, or a task submitted against a run,
//! is refused ([`Error::HostConflict`]). Runs of one graph go in the order queued
//! (each GPU runs its windows in order, and the graph's parts share no host bytes one
//! writes: such tasks are joined by an edge and share a part).

use crate::backend::op::Direction;
use crate::backend::Machine;
use crate::dispatch::shared::Shared;
use crate::error::RecordingProblem;
use crate::ext::replay::window::part::{Part, Runs};
use crate::ext::replay::window::Window;
use crate::ids::TaskId;
use crate::kernel::{Arg, ArgValue};
use crate::memory::claims::{Holder, Region};
use crate::memory::host::HostShared;
use crate::memory::DeviceBufferInner;
use crate::memory::{Element, HostBuffer};
use crate::sync::Ordering;
use crate::task::command::{Command, CopyCmd};
use crate::task::Task;
use crate::{Error, Result};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The most lanes a recorded part is laid out on: as many kernels as a GPU runs at
/// once (128 on the GPUs of compute capability 7 to 9), so that the graph's width, not
/// the scheduler's S, bounds how many of its tasks run side by side.
pub(crate) const RECORD_LANES: usize = 128;

/// The most device memory the copies of the lanes past S may take, per GPU and
/// recording: a recording whose virtual buffers would need more stays on S lanes.
pub(crate) const LANE_BUDGET: usize = 256 << 20;

/// The virtual buffers `tasks` name, each once.
pub(crate) fn virtual_buffers<'a>(tasks: impl Iterator<Item = &'a Task>) -> Vec<Arc<DeviceBufferInner>> {
    let mut out: Vec<Arc<DeviceBufferInner>> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    for t in tasks {
        each_virtual(t, |b| {
            if seen.insert(b.id) {
                out.push(b.clone());
            }
        });
    }
    out
}

/// Calls `f` on each virtual buffer `task`'s commands name (a copy's device side, a
/// launch's buffer arguments), repeats included.
pub(crate) fn each_virtual(task: &Task, mut f: impl FnMut(&Arc<DeviceBufferInner>)) {
    for c in &task.commands {
        match c {
            Command::Copy(c) => {
                if let Some(b) = c.dev.as_virtual() {
                    f(b);
                }
            }
            Command::Launch(l) => l.args.iter().for_each(|a| {
                if let ArgValue::Buffer(b) = a {
                    f(b);
                }
            }),
            _ => {}
        }
    }
}

/// Makes, on each part's GPU, the copies of the lanes past S of every virtual buffer
/// the part names, where it is laid out on more lanes than S, and on every other GPU a
/// spread part spans, the copies of its guest lanes; each where not made yet.
///
/// # Errors
/// [`Error::OutOfMemory`] where a GPU cannot hold them (what was made is given back).
pub(crate) fn make_lanes(machine: &Machine, parts: &[(usize, Window)]) -> Result<()> {
    for (gpu, w) in parts {
        for b in virtual_buffers(w.tasks.iter().map(|t| &**t)) {
            if w.lane_count > b.slots {
                make_buffer_lanes(machine, *gpu, &b)?;
            }
            for g in w.spans(*gpu).into_iter().filter(|g| g != gpu) {
                make_guest_lanes(machine, g, &b)?;
            }
        }
    }
    Ok(())
}

/// Makes buffer `b`'s copies of the lanes past S on GPU `gpu`, unless made already.
pub(crate) fn make_buffer_lanes(machine: &Machine, gpu: usize, b: &DeviceBufferInner) -> Result<()> {
    make_copies(machine, gpu, b, &b.lanes[gpu], RECORD_LANES.saturating_sub(b.slots))
}

/// Makes buffer `b`'s copies of the guest lanes on GPU `gpu` (as many as a part has
/// lanes at most), unless made already.
pub(crate) fn make_guest_lanes(machine: &Machine, gpu: usize, b: &DeviceBufferInner) -> Result<()> {
    make_copies(machine, gpu, b, &b.guests[gpu], RECORD_LANES)
}

/// Makes `n` copies of buffer `b` on GPU `gpu` into `into`, unless made already.
fn make_copies(
    machine: &Machine,
    gpu: usize,
    b: &DeviceBufferInner,
    into: &std::sync::OnceLock<Vec<crate::backend::device::PhysBuf>>,
    n: usize,
) -> Result<()> {
    if into.get().is_some() {
        return Ok(());
    }
    let mut copies = Vec::with_capacity(n);
    for _ in 0..n {
        match machine.alloc_device(gpu, b.bytes) {
            Ok(p) => copies.push(p),
            Err(e) => {
                machine.free_device(copies);
                return Err(e);
            }
        }
    }
    // Another recording may have made them meanwhile: its copies stay.
    if let Err(copies) = into.set(copies) {
        machine.free_device(copies);
    }
    Ok(())
}

/// Numbers of recorded parts (the backend's names for their kept graphs) and of
/// recorded graphs (their runs' claims), unique in the process.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A graph of tasks recorded once with [`Scheduler::record`](crate::Scheduler::record)
/// and run many times with [`RecordedGraph::run`]. A run's outcome is reported by the
/// scheduler's next [`synchronize`](crate::Scheduler::synchronize), as its tasks'
/// would be: one replayed window a part in the report, and a failed node as that
/// task's [`TaskFailure`](crate::report::TaskFailure).
pub struct RecordedGraph {
    shared: Arc<Shared>,
    /// Where an update's device buffer gets its copies of the lanes past S (`None` only
    /// in the model checks, whose graphs name no buffer).
    machine: Option<Arc<Machine>>,
    parts: Vec<Arc<Part>>,
    runs: Arc<Runs>,
    /// Per task: its part and its index there.
    index: rustc_hash::FxHashMap<TaskId, (u32, u32)>,
    tasks: usize,
}

impl RecordedGraph {
    /// The graph of the recorded windows `parts` (GPU, window).
    pub(crate) fn new(
        shared: Arc<Shared>,
        machine: Option<Arc<Machine>>,
        parts: Vec<(usize, Window)>,
    ) -> RecordedGraph {
        let holder = Holder::Run(NEXT.fetch_add(1, Ordering::Relaxed));
        let claims = graph_claims(parts.iter().flat_map(|(_, w)| w.tasks.iter().map(|t| &**t)));
        let mut index = rustc_hash::FxHashMap::default();
        let mut first = None;
        for (p, (_, w)) in parts.iter().enumerate() {
            for (t, task) in w.tasks.iter().enumerate() {
                index.insert(task.id, (p as u32, t as u32));
                first = Some(first.map_or(task.id, |f: TaskId| f.min(task.id)));
            }
        }
        let runs = Arc::new(Runs::new(holder, claims, first.unwrap_or(TaskId(0))));
        let tasks = index.len();
        let parts = parts
            .into_iter()
            .map(|(gpu, window)| Arc::new(Part::new(NEXT.fetch_add(1, Ordering::Relaxed), gpu, window, runs.clone())))
            .collect();
        RecordedGraph { shared, machine, parts, runs, index, tasks }
    }

    /// Tasks recorded.
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// The GPUs its parts were laid out for, a part's each: one part per GPU that got
    /// work (tasks joined by an edge share a part), and one for each connected part
    /// spread over the GPUs (see [`RecordedGraph::node_gpus`]), launched from the first
    /// GPU.
    pub fn gpus(&self) -> Vec<usize> {
        self.parts.iter().map(|p| p.gpu).collect()
    }

    /// The GPUs its tasks run on, each once, ascending. Beyond [`RecordedGraph::gpus`]
    /// where a connected part is wide enough to keep one GPU busy (its launches' summed
    /// share of a GPU, blocks over one full wave, at least a fifth of its longest chain
    /// of tasks) and the scheduler has several: that part is spread over every GPU
    /// level by level, as MUSTARD splits a graph's levels, its edges between GPUs kept
    /// inside its one graph (a multi-GPU CUDA graph), so that no task waits on the host
    /// between GPUs.
    pub fn node_gpus(&self) -> Vec<usize> {
        let mut on: Vec<usize> = self.parts.iter().flat_map(|p| p.window.lock().spans(p.gpu)).collect();
        on.sort_unstable();
        on.dedup();
        on
    }

    /// Queues one run of the whole graph and returns: each part goes to its GPU as one
    /// graph launch behind the windows and runs queued there; the scheduler's next
    /// `synchronize` waits for it. The host's work does not depend on the number of
    /// tasks (a claim per host buffer the graph copies from or to, a shell per part);
    /// the first run of a part, and the first after an update, also lower the part
    /// (on the dispatcher's thread). A later run is launched by the calling thread
    /// where the part's GPU has nothing else to do (its dispatcher waits), as a
    /// hand-written graph is; else by the dispatcher, behind what runs there.
    ///
    /// # Errors
    /// [`Error::HostConflict`] when a live guard holds bytes the graph copies (a run
    /// waits instead for tasks that touch them); [`Error::WaitInCallback`] in a
    /// callback of its scheduler; [`Error::Recording`] with
    /// [`RecordingProblem::ShutDown`] once the scheduler has shut down.
    pub fn run(&self) -> Result<()> {
        if let Some((_, task)) = crate::ids::current() {
            return Err(Error::WaitInCallback {
                task,
                call: "RecordedGraph::run",
                reason: "a run may wait for tasks that touch its host buffers; run graphs outside the callbacks".into(),
            });
        }
        if self.shared.stop.load(Ordering::SeqCst) {
            return Err(Error::Recording { task: None, problem: RecordingProblem::ShutDown });
        }
        self.runs.begin(self.parts.len())?;
        self.shared.batch.lock().outstanding += self.parts.len();
        for part in &self.parts {
            match self.shared.queue_window(part.gpu, Box::new(Window::shell(part.clone()))) {
                // Launched here where the dispatcher waits (its wake-up would come
                // first; the turn rings it to poll the run, which nobody may wait
                // for), else by the dispatcher, rung here.
                Ok(gpu) => {
                    if !self.shared.windows.take_turn(gpu) {
                        self.shared.signals[gpu].notify();
                    }
                }
                Err(mut shell) => self.shared.fail_recorded(&mut shell, "no GPU left to run the recorded graph"),
            }
        }
        Ok(())
    }

    /// The declared kind of argument `arg` of the kernel launch that is command
    /// `command` of recorded task `task`: what [`RecordedGraph::set_arg`] takes there
    /// (for a caller that holds values of several kinds, such as a binding to another
    /// language).
    ///
    /// # Errors
    /// [`Error::Recording`] naming the task: [`RecordingProblem::UnknownTask`],
    /// [`RecordingProblem::NoSuchArgument`].
    pub fn param(&self, task: TaskId, command: usize, arg: usize) -> Result<crate::Param> {
        let fail = |problem| Error::Recording { task: Some(task), problem };
        let &(p, t) = self.index.get(&task).ok_or_else(|| fail(RecordingProblem::UnknownTask))?;
        let w = self.parts[p as usize].window.lock();
        let Some(Command::Launch(launch)) = w.tasks[t as usize].commands.get(command) else {
            return Err(fail(RecordingProblem::NoSuchArgument { command, arg }));
        };
        launch
            .kernel
            .def
            .params
            .get(arg)
            .copied()
            .ok_or_else(|| fail(RecordingProblem::NoSuchArgument { command, arg }))
    }

    /// Sets argument `arg` of the kernel launch that is command `command` of recorded
    /// task `task` to `value`, in place: the next run sets the changed node of the kept
    /// graph, nothing is rebuilt. Waits until no run of the graph is queued or running.
    /// A scalar takes a scalar of its type; a device buffer takes a device buffer.
    ///
    /// # Errors
    /// [`Error::Recording`] naming the task: [`RecordingProblem::UnknownTask`],
    /// [`RecordingProblem::NoSuchArgument`], [`RecordingProblem::ArgumentKind`],
    /// [`RecordingProblem::OtherScheduler`] (a buffer another scheduler allocated);
    /// [`Error::OutOfMemory`] where the part runs on more lanes than S, or the task on
    /// a GPU the part is not launched from (its guest lanes), and the new buffer's
    /// copies for them do not fit.
    pub fn set_arg(&mut self, task: TaskId, command: usize, arg: usize, value: Arg) -> Result<()> {
        let fail = |problem| Error::Recording { task: Some(task), problem };
        let &(p, t) = self.index.get(&task).ok_or_else(|| fail(RecordingProblem::UnknownTask))?;
        self.runs.wait_idle();
        // Every shell of this graph has ended and let go of its share of the part
        // before counting itself out (`Runs::end_one`), so the part is this graph's alone.
        let part = Arc::get_mut(&mut self.parts[p as usize]).ok_or_else(|| fail(RecordingProblem::RunInFlight))?;
        let on = part.window.get_mut().gpus.get(t as usize).map_or(part.gpu, |&g| g as usize);
        let cmd = part.window.get_mut().tasks[t as usize].commands.get_mut(command);
        let Some(Command::Launch(launch)) = cmd else {
            return Err(fail(RecordingProblem::NoSuchArgument { command, arg }));
        };
        let old = launch.args.get(arg).ok_or_else(|| fail(RecordingProblem::NoSuchArgument { command, arg }))?;
        let (expected, given) = (kind(old), kind(&value.0));
        if expected != given {
            return Err(fail(RecordingProblem::ArgumentKind { arg, expected, given }));
        }
        if let (ArgValue::Buffer(was), ArgValue::Buffer(new)) = (old, &value.0) {
            if new.sched_id != was.sched_id {
                return Err(fail(RecordingProblem::OtherScheduler));
            }
            // The part's lanes past S need the new buffer's copies there too, and a
            // task on a GPU the part is not launched from its guest lanes'.
            if let Some(machine) = self.machine.as_ref() {
                if on != part.gpu {
                    make_guest_lanes(machine, on, new)?;
                } else if part.lane_count > new.slots {
                    make_buffer_lanes(machine, on, new)?;
                }
            }
        }
        let mut args = launch.args.to_vec();
        args[arg] = value.0;
        launch.args = args.into();
        if launch.twin.is_some() {
            launch.twin = Some(Arc::new(crate::task::lower::TwinCall {
                kernel: launch.kernel.clone(),
                shape: launch.shape,
                args: launch.args.clone(),
            }));
        }
        part.generation += 1;
        Ok(())
    }

    /// Moves the host side of the copy that is command `command` of recorded task
    /// `task` to `host`, from element `offset` on: the same shape (bytes a row, rows,
    /// the host pitch) over other host bytes, as a loop that downloads the next batch's
    /// inputs or reads back into another buffer would. Updated in place: the next run
    /// sets the changed copy node of the kept graph (a 2-D copy's graph is built anew)
    /// and claims the new bytes. Waits until no run of the graph is queued or running.
    ///
    /// Tasks recorded apart must stay apart: the new bytes may be written or read by
    /// another recorded task only where the two are ordered by the graph's edges (a
    /// task reading back where its successor downloads from, say); a graph never waits
    /// for more than it recorded.
    ///
    /// # Errors
    /// [`Error::Recording`] naming the task: [`RecordingProblem::UnknownTask`],
    /// [`RecordingProblem::NotACopy`], [`RecordingProblem::HostRange`] (the region would
    /// end past the buffer), [`RecordingProblem::HostOverlap`] (naming the unordered
    /// task whose bytes it would share). The graph is unchanged after an error.
    pub fn set_copy<T: Element>(
        &mut self,
        task: TaskId,
        command: usize,
        host: &HostBuffer<T>,
        offset: usize,
    ) -> Result<()> {
        let fail = |problem| Error::Recording { task: Some(task), problem };
        let &(p, t) = self.index.get(&task).ok_or_else(|| fail(RecordingProblem::UnknownTask))?;
        let (p, t) = (p as usize, t as usize);
        self.runs.wait_idle();
        let new_host = host.shared();
        // Checked with every part's window locked in turn (no run holds one: the runs
        // ended), before anything changes.
        let (region, write) = {
            let w = self.parts[p].window.lock();
            let Some(Command::Copy(c)) = w.tasks[t].commands.get(command) else {
                return Err(fail(RecordingProblem::NotACopy { command }));
            };
            let size = std::mem::size_of::<T>();
            let bytes = host.len() * size;
            let end = offset.checked_mul(size).and_then(|start| {
                c.height.checked_sub(1)?.checked_mul(c.host_pitch)?.checked_add(start)?.checked_add(c.width)
            });
            match end {
                Some(end) if end <= bytes => {}
                end => return Err(fail(RecordingProblem::HostRange { end, bytes })),
            }
            (Region { start: offset * size, ..copy_region(c) }, c.dir == Direction::Readback)
        };
        for (q, part) in self.parts.iter().enumerate() {
            let w = part.window.lock();
            for (u, other) in w.tasks.iter().enumerate() {
                let touches = other.commands.iter().enumerate().any(|(i, cmd)| {
                    let Command::Copy(c) = cmd else { return false };
                    !(q == p && u == t && i == command)
                        && Arc::ptr_eq(&c.host, new_host)
                        && (write || c.dir == Direction::Readback)
                        && copy_region(c).overlaps(&region)
                });
                if touches && !(q == p && (u == t || ordered(&w, t, u))) {
                    return Err(fail(RecordingProblem::HostOverlap { other: other.id }));
                }
            }
        }
        let part = Arc::get_mut(&mut self.parts[p]).ok_or_else(|| fail(RecordingProblem::RunInFlight))?;
        let window = part.window.get_mut();
        let recorded = &mut window.tasks[t];
        if let Some(Command::Copy(c)) = recorded.commands.get_mut(command) {
            c.host = new_host.clone();
            c.host_offset = region.start;
        }
        // The task's buffers, as admission listed them: those its copies name.
        recorded.hosts.clear();
        for cmd in recorded.commands.iter() {
            if let Command::Copy(c) = cmd {
                if !recorded.hosts.iter().any(|h| Arc::ptr_eq(h, &c.host)) {
                    recorded.hosts.push(c.host.clone());
                }
            }
        }
        part.generation += 1;
        let windows: Vec<_> = self.parts.iter().map(|part| part.window.lock()).collect();
        self.runs.set_claims(graph_claims(windows.iter().flat_map(|w| w.tasks.iter().map(|t| &**t))));
        Ok(())
    }
}

impl std::fmt::Debug for RecordedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordedGraph").field("tasks", &self.tasks).field("gpus", &self.gpus()).finish()
    }
}

/// Per host buffer `tasks` copy from or to: the span their copies touch
/// (one claim a buffer, however many copies), and whether any writes it.
fn graph_claims<'a>(tasks: impl Iterator<Item = &'a Task>) -> Vec<(Arc<HostShared>, Region, bool)> {
    let mut claims: Vec<(Arc<HostShared>, Region, bool)> = Vec::new();
    for c in tasks.flat_map(|t| t.commands.iter()) {
        let Command::Copy(c) = c else { continue };
        let (region, write) = (copy_region(c), c.dir == Direction::Readback);
        match claims.iter_mut().find(|(h, ..)| Arc::ptr_eq(h, &c.host)) {
            Some((_, span, w)) => {
                let (start, end) = (span.start.min(region.start), span.end().max(region.end()));
                *span = Region::linear(start, end - start);
                *w |= write;
            }
            None => claims.push((c.host.clone(), Region::linear(region.start, region.end() - region.start), write)),
        }
    }
    claims
}

/// The host bytes copy `c` touches.
fn copy_region(c: &CopyCmd) -> Region {
    Region { start: c.host_offset, width: c.width, pitch: c.host_pitch, height: c.height }
}

/// Whether task `a` of `w` runs before task `b` or after it, along the window's edges
/// (its own and its lanes'): an edge from the earlier to the later by index.
fn ordered(w: &Window, a: usize, b: usize) -> bool {
    let (from, to) = if a < b { (a, b) } else { (b, a) };
    let mut seen = vec![false; to + 1];
    let mut stack = vec![to];
    while let Some(t) = stack.pop() {
        for &p in &w.preds[t] {
            let p = p as usize;
            if p == from {
                return true;
            }
            if p > from && !std::mem::replace(&mut seen[p], true) {
                stack.push(p);
            }
        }
    }
    false
}

/// An argument's kind, as an update error names it.
fn kind(a: &ArgValue) -> &'static str {
    match a {
        ArgValue::Buffer(_) => "a device buffer",
        ArgValue::External { .. } => "external device memory",
        #[cfg(feature = "resident")]
        ArgValue::Resident { .. } | ArgValue::BadRange(_) => "a resident range",
        ArgValue::I32(_) => "an i32",
        ArgValue::U32(_) => "a u32",
        ArgValue::I64(_) => "an i64",
        ArgValue::U64(_) => "a u64",
        ArgValue::F32(_) => "an f32",
        ArgValue::F64(_) => "an f64",
    }
}
