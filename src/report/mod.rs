//! What a run produced (paper §6.1, Appendix C): the timeline of every command, the
//! makespan T, busy time per stage and GPU, tasks per GPU, the paper's T_LB and ε =
//! T/T_LB − 1 (an estimate: a run can beat it; [`HardwareBound`] is the bound no run
//! beats), the dependencies between the batch's tasks
//! and their critical path, and the dispatcher's own host cost.

mod adapted;
mod critical;
mod failure;
mod ideal;
mod lower_bound;
mod trace;
mod windows;

pub use adapted::Adapted;
pub(crate) use adapted::{kernel_lines, KernelUse};
pub use critical::CriticalPath;
pub(crate) use failure::{shutting_down, Cleanup};
pub use failure::{DriverError, TaskFailure};

pub use ideal::zero_overhead_makespan;
pub use lower_bound::{HardwareBound, LinkRates, LowerBound, TaskWork};
pub use windows::{BatchExecution, GraphSetup, HostReason, LaunchedBy, Pays, ReplayedWindow, WayChosen};

use crate::ids::TaskId;
use crate::stage::Stage;
use serde::Serialize;

/// One command as it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CommandRecord {
    /// Its task.
    pub task: TaskId,
    /// The task's granularity (as given to [`Scheduler::task`](crate::Scheduler::task)).
    pub granularity: u64,
    /// Index of the command in its task.
    pub command: u32,
    /// Its stage.
    pub stage: Stage,
    /// GPU (index in the scheduler's list).
    pub gpu: u16,
    /// Stream slot on that GPU.
    pub stream: u16,
    /// When the dispatcher issued it (ns since the scheduler started).
    pub dispatched_ns: u64,
    /// When it started running (device clock for GPU commands, mapped to the host's).
    pub start_ns: u64,
    /// When it ended.
    pub end_ns: u64,
    /// Bytes a copy moved (0 otherwise).
    pub bytes: u64,
    /// Whether it failed.
    pub failed: bool,
}

impl CommandRecord {
    /// A record of command `command` of `task` that ran on `gpu`, stream slot
    /// `stream`, from `start_ns` to `end_ns`; dispatched when it started, granularity
    /// 1, no bytes, not failed (set the public fields for other values). For timelines
    /// chariot did not record itself, such as a model's or a test's.
    pub fn new(task: TaskId, command: u32, stage: Stage, gpu: u16, stream: u16, start_ns: u64, end_ns: u64) -> Self {
        CommandRecord {
            task,
            granularity: 1,
            command,
            stage,
            gpu,
            stream,
            dispatched_ns: start_ns,
            start_ns,
            end_ns,
            bytes: 0,
            failed: false,
        }
    }

    /// `end_ns − start_ns`.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// A task that was moved off a lost GPU and ran again from `restart` on another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MovedTask {
    /// The task.
    pub task: TaskId,
    /// The GPU it left (index in the scheduler's list).
    pub from_gpu: usize,
    /// The command it ran again from: its first GPU command, or the one it had reached
    /// if it had not begun on the GPU. The records of its first attempt stay in the
    /// timeline, on `from_gpu`.
    pub restart: usize,
}

/// A GPU that left the rotation: its context hit a sticky error, or (sim) it died.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LostGpu {
    /// The GPU (index in the scheduler's list).
    pub gpu: usize,
    /// When its dispatcher saw the fault (ns since the scheduler started).
    pub at_ns: u64,
    /// The driver's (or injector's) message.
    pub message: String,
}

/// What went wrong in a batch: failed tasks, tasks moved off lost GPUs, lost GPUs.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) failures: Vec<TaskFailure>,
    pub(crate) moved: Vec<MovedTask>,
    pub(crate) lost_gpus: Vec<LostGpu>,
    /// (predecessor, successor), as the graph learnt them (`Shared::admit`).
    pub(crate) dependencies: Vec<(TaskId, TaskId)>,
    /// Windows replayed as graphs.
    pub(crate) windows: Vec<ReplayedWindow>,
    /// How the batch's tasks reached the GPU, and why (replay's capture).
    pub(crate) execution: Option<BatchExecution>,
}

/// Host time the dispatchers spent, per command, outside and inside driver calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DispatchStats {
    /// Commands dispatched.
    pub commands: u64,
    /// Host time in the runtime's own code for dispatch and completion (selection,
    /// queues, counters, records), driver calls excluded.
    pub runtime_ns: u64,
    /// Host time inside driver calls that issue commands.
    pub driver_ns: u64,
    /// Idle-detection queries made (event queries or completion checks).
    pub polls: u64,
    /// Of `commands`, those that ran in replayed windows (a graph launch each window).
    pub replayed: u64,
    /// Host time inside those queries.
    pub poll_ns: u64,
}

impl DispatchStats {
    pub(crate) fn add(&mut self, o: &DispatchStats) {
        self.commands += o.commands;
        self.runtime_ns += o.runtime_ns;
        self.driver_ns += o.driver_ns;
        self.polls += o.polls;
        self.poll_ns += o.poll_ns;
        self.replayed += o.replayed;
    }

    /// Runtime host time per command, ns (driver calls excluded).
    pub fn runtime_ns_per_command(&self) -> f64 {
        self.runtime_ns as f64 / self.commands.max(1) as f64
    }

    /// Driver host time per command, ns.
    pub fn driver_ns_per_command(&self) -> f64 {
        self.driver_ns as f64 / self.commands.max(1) as f64
    }
}

/// The report of one batch (everything between two `synchronize` calls). Its
/// `Default` is the report of an empty batch, on no backend.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// `cuda` or `sim`.
    pub backend: String,
    /// GPU names, in the scheduler's order.
    pub gpus: Vec<String>,
    /// Streams per GPU.
    pub streams: usize,
    /// Host buses B used for the thresholds and the bound.
    pub buses: usize,
    /// Every command, in completion order per GPU.
    pub records: Vec<CommandRecord>,
    /// Tasks completed (failed ones included).
    pub tasks: usize,
    /// First command's start (ns since the scheduler started).
    pub start_ns: u64,
    /// Last command's end.
    pub end_ns: u64,
    /// T: `end_ns − start_ns`.
    pub makespan_ns: u64,
    /// Busy time (union of intervals) per GPU and stage, ns.
    pub busy_ns: Vec<[u64; Stage::K]>,
    /// Tasks run on each GPU.
    pub tasks_per_gpu: Vec<usize>,
    /// The paper's T_LB (Appendix C) from the measured d_i, k_i, r_i: an estimate that
    /// a run can beat (see [`LowerBound`]), not a bound.
    pub lower_bound: LowerBound,
    /// ε = T/T_LB − 1 against the paper's estimate (`None` without GPU work); negative
    /// where the run beat it.
    pub epsilon: Option<f64>,
    /// The dispatchers' host cost.
    pub dispatch: DispatchStats,
    /// Tasks that failed.
    pub failures: Vec<TaskFailure>,
    /// Tasks moved off a lost GPU and run again on another.
    pub moved: Vec<MovedTask>,
    /// Windows of tasks replayed as one graph each ([`Execution`](crate::Execution)),
    /// in the order they completed.
    pub windows: Vec<ReplayedWindow>,
    /// How the batch's tasks reached the GPU under its [`Execution`](crate::Execution)
    /// mode, and why (`None` with `Execution::Host`, and without the `replay` feature).
    pub execution: Option<BatchExecution>,
    /// GPUs lost during the batch. They stay out of the rotation for the scheduler's
    /// life (see [`Scheduler::live_gpus`](crate::Scheduler::live_gpus)).
    pub lost_gpus: Vec<LostGpu>,
    /// The batch's dependencies, `(predecessor, successor)`: each task's predecessors,
    /// named with [`after`](crate::TaskBuilder::after) and inferred from host regions,
    /// once each, in submit order of the successors. A named task that had already
    /// ended is listed (it was no wait); empty for a batch of independent tasks.
    ///
    /// ```
    /// use chariot::{Backend, Scheduler, TaskId};
    /// use chariot::callback::Resource;
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let host = s.alloc_host::<u32>(16)?;
    /// s.task(1, 1).callback_writing(&host, .., |x, _| { x.fill(1); Ok(()) }).submit()?;
    /// s.task(2, 1).after(TaskId(1)).callback(Resource::Cpu, |_| Ok(())).submit()?;
    /// s.task(3, 1).after(TaskId(1)).callback(Resource::Cpu, |_| Ok(())).submit()?;
    /// // Reads what task 1 writes (inferred, if task 1 has not ended) and names task 3.
    /// s.task(4, 1).after(TaskId(3)).callback_reading(&host, .., |_, _| Ok(())).submit()?;
    /// let report = s.synchronize()?;
    /// let (one, three, four) = (TaskId(1), TaskId(3), TaskId(4));
    /// assert!(report.dependencies.contains(&(one, TaskId(2))) && report.dependencies.contains(&(three, four)));
    /// assert!(report.dependencies.iter().all(|&(p, s)| s != four || p == one || p == three));
    /// // Chain 1 -> 2 or 1 -> 3 -> 4 or 1 -> 4: the one whose recorded spans add up most.
    /// let path = report.critical_path().expect("the batch has dependencies");
    /// assert_eq!(path.tasks[0], one);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub dependencies: Vec<(TaskId, TaskId)>,
    /// What `build` chose and why, one line per choice (see [`Tuning`](crate::stage::Tuning)),
    /// then one line per kernel launched so far: how many run at once, from its fill.
    pub tuning: Vec<String>,
    /// The changes the online adaptation made to the stage limits in this batch.
    pub adaptations: Vec<Adapted>,
    /// Driver errors met since the last report while freeing or tearing down: device
    /// memory of dropped buffers, pinned host memory, streams and events of a retired
    /// GPU; from `shutdown`, also the teardown of the GPUs' streams and events. Each is
    /// listed once (a repeat before this report is not listed again). The work of the
    /// batch is not affected; memory whose free failed may be lost until the process
    /// ends.
    pub cleanup: Vec<DriverError>,
}

/// Union length of `[start, end)` intervals.
pub(crate) fn union_ns(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.sort_unstable();
    let (mut total, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in spans {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build(
        backend: &str,
        gpus: Vec<String>,
        streams: usize,
        buses: usize,
        records: Vec<CommandRecord>,
        dispatch: DispatchStats,
        outcome: Outcome,
        tuning: Vec<String>,
        adaptations: Vec<Adapted>,
        cleanup: Vec<DriverError>,
    ) -> Report {
        let d = gpus.len();
        // Windows whose commands are not timed one by one (CUDA) count by their span.
        let untimed: Vec<&ReplayedWindow> = outcome.windows.iter().filter(|w| !w.timed).collect();
        let start_ns =
            records.iter().map(|r| r.start_ns).chain(untimed.iter().map(|w| w.launched_ns)).min().unwrap_or(0);
        let end_ns = records.iter().map(|r| r.end_ns).chain(untimed.iter().map(|w| w.end_ns)).max().unwrap_or(0);
        // One pass sorts the spans by GPU and stage (`synchronize` waits for this).
        let mut spans: Vec<Vec<(u64, u64)>> = vec![Vec::new(); d * Stage::K];
        for r in records.iter().filter(|r| (r.gpu as usize) < d) {
            spans[r.gpu as usize * Stage::K + r.stage.index()].push((r.start_ns, r.end_ns));
        }
        let mut busy_ns = vec![[0u64; Stage::K]; d];
        for (i, s) in spans.into_iter().enumerate() {
            busy_ns[i / Stage::K][i % Stage::K] = union_ns(s);
        }
        let mut per_task: rustc_hash::FxHashMap<TaskId, u16> = Default::default();
        for r in &records {
            per_task.insert(r.task, r.gpu);
        }
        let mut tasks_per_gpu = vec![0; d];
        for g in per_task.values() {
            tasks_per_gpu[*g as usize] += 1;
        }
        for w in &untimed {
            if let Some(n) = tasks_per_gpu.get_mut(w.gpu) {
                *n += w.tasks;
            }
        }
        let untimed_tasks: usize = untimed.iter().map(|w| w.tasks).sum();
        let lower_bound = LowerBound::paper(&records, d.max(1), buses.max(1));
        let makespan_ns = end_ns - start_ns;
        let epsilon = (lower_bound.t_lb_ns > 0).then(|| makespan_ns as f64 / lower_bound.t_lb_ns as f64 - 1.0);
        Report {
            backend: backend.to_string(),
            gpus,
            streams,
            buses,
            tasks: per_task.len() + untimed_tasks,
            records,
            start_ns,
            end_ns,
            makespan_ns,
            busy_ns,
            tasks_per_gpu,
            lower_bound,
            epsilon,
            dispatch,
            failures: outcome.failures,
            moved: outcome.moved,
            windows: outcome.windows,
            execution: outcome.execution,
            lost_gpus: outcome.lost_gpus,
            dependencies: outcome.dependencies,
            tuning,
            adaptations,
            cleanup,
        }
    }

    /// T in milliseconds.
    pub fn makespan_ms(&self) -> f64 {
        self.makespan_ns as f64 / 1e6
    }

    /// The records of one task, in command order.
    pub fn task_records(&self, task: TaskId) -> Vec<CommandRecord> {
        let mut v: Vec<_> = self.records.iter().filter(|r| r.task == task).copied().collect();
        v.sort_by_key(|r| r.command);
        v
    }

    /// The critical path of the batch's task graph: the chain of
    /// [`dependencies`](Report::dependencies) whose tasks' recorded spans (each its first
    /// command's start to its last command's end) add up to the most; a task with no
    /// dependency is a chain of one. Given those spans, no schedule of this batch could
    /// end sooner than its first task's start plus `ns`, as each task of the chain
    /// starts after the one before it ends: a bound on the graph's order, next to the
    /// hardware bounds, not one of them (the spans are what this run's schedule made of
    /// the tasks, waits between their commands included). `None` without dependencies.
    /// See `docs/graphs.md`.
    pub fn critical_path(&self) -> Option<CriticalPath> {
        critical::critical_path(&self.records, &self.dependencies)
    }

    /// The timeline as Chrome-trace JSON (open in Perfetto or chrome://tracing): one
    /// process per GPU, one track per stage engine and per stream, and one flow arrow
    /// per dependency, from the predecessor's last command to the successor's first on
    /// their streams' tracks.
    pub fn chrome_trace(&self) -> String {
        trace::chrome_trace(self)
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "backend {} | {} GPU(s) x {} stream(s) | {} tasks, {} commands",
            self.backend,
            self.gpus.len(),
            self.streams,
            self.tasks,
            self.records.len()
        )?;
        // The paper's T_LB is shown as what it is, an estimate that a run can beat;
        // the bound no run beats is `HardwareBound`, which needs the link's rates.
        writeln!(
            f,
            "T = {:.3} ms | {}, eps = {}",
            self.makespan_ms(),
            self.lower_bound,
            self.epsilon.map_or("n/a".into(), |e| format!("{:.1}%", e * 100.0))
        )?;
        if let Some(path) = self.critical_path() {
            writeln!(f, "critical path: {path}")?;
        }
        for (g, busy) in self.busy_ns.iter().enumerate() {
            write!(f, "GPU {g}: {} tasks, busy", self.tasks_per_gpu[g])?;
            for s in Stage::ALL {
                write!(f, " {} {:.3} ms", s, busy[s.index()] as f64 / 1e6)?;
            }
            writeln!(f)?;
        }
        write!(
            f,
            "dispatch: {} commands, runtime {:.2} us/command, driver {:.2} us/command, {} polls",
            self.dispatch.commands,
            self.dispatch.runtime_ns_per_command() / 1e3,
            self.dispatch.driver_ns_per_command() / 1e3,
            self.dispatch.polls
        )?;
        if self.dispatch.replayed > 0 {
            write!(f, " ({} of them replayed as graphs)", self.dispatch.replayed)?;
        }
        if let Some(e) = &self.execution {
            write!(f, "\nexecution: {e}")?;
        }
        for w in &self.windows {
            write!(f, "\nreplayed: {w}")?;
        }
        for line in &self.tuning {
            write!(f, "\nchosen: {line}")?;
        }
        for a in &self.adaptations {
            write!(f, "\nadapted: {a}")?;
        }
        for l in &self.lost_gpus {
            write!(f, "\nGPU {} lost at {:.3} ms: {}", l.gpu, l.at_ns as f64 / 1e6, l.message)?;
        }
        if !self.moved.is_empty() {
            write!(f, "\n{} task(s) moved off lost GPUs", self.moved.len())?;
        }
        if !self.failures.is_empty() {
            write!(f, "\n{} task(s) failed", self.failures.len())?;
        }
        for e in &self.cleanup {
            write!(f, "\ncleanup: {e}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn cleanup_errors_are_shown_one_a_line() {
        let build = |cleanup| {
            let names = vec!["sim #0".into()];
            let (stats, outcome) = (DispatchStats::default(), Outcome::default());
            Report::build("sim", names, 1, 1, vec![], stats, outcome, vec![], vec![], cleanup)
        };
        assert!(!build(vec![]).to_string().contains("cleanup:"));
        let e = DriverError {
            call: "cuMemFree on GPU 0".into(),
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            text: "an illegal memory access was encountered".into(),
        };
        let shown = build(vec![e.clone(), DriverError { call: "cuEventDestroy on GPU 1".into(), ..e }]).to_string();
        let lines: Vec<&str> = shown.lines().filter(|l| l.starts_with("cleanup: ")).collect();
        assert_eq!(
            lines,
            [
                "cleanup: cuMemFree on GPU 0 failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)",
                "cleanup: cuEventDestroy on GPU 1 failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)",
            ],
            "{shown}"
        );
    }
}
