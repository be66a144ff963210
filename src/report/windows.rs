//! The report's lines for replayed windows: tasks that ran as one graph.

use crate::ids::TaskId;
use serde::Serialize;

/// How a batch's tasks reached the GPU under the scheduler's
/// [`Execution`](crate::Execution) mode (`Auto`, `Replay` or `Device`: under `Host` the
/// host dispatches all, and the report has none), and why: the runtime's choice for the
/// batch. A batch is held from its first task and replayed as windows while the mode
/// wants it; from the first task that is not (the reason given), the host dispatches
/// the rest.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BatchExecution {
    /// The tasks replayed as windows, from the batch's first.
    pub replayed: usize,
    /// `Execution::Auto`, where tasks were replayed: why replaying pays, as measured
    /// when the structure they repeat was learnt.
    pub pays: Option<Pays>,
    /// Where the structure's windows were let take lanes past S (up to 128, where their
    /// virtual buffers' copies for those lanes were made: each window's `lanes` says):
    /// the GPU time a step of its last measured batch's graphs (ns; the windows' GPU time
    /// over their depths), which two batches in a row took at 20 µs or more.
    pub wide_step_ns: Option<f64>,
    /// Where the batch's last cuts shrank towards its end (its last windows small, so
    /// that little runs after the last submit): the share of the time from its first
    /// window's queueing to its last's that its structure's last measured batch kept the
    /// GPU busy. Tapering starts after two batches in a row below 1 (the host set the
    /// pace) and stops after two at 1.25 or more.
    pub tapered: Option<f64>,
    /// The first task the host dispatched, and why it was not replayed (`None`: the
    /// host dispatched none).
    pub host_from: Option<(TaskId, HostReason)>,
}

/// What made `Execution::Auto` replay a structure: its GPU commands were short
/// against the host's cost of dispatching them (ns, each a mean per command, measured
/// on the batch the host dispatched when the structure was learnt).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Pays {
    /// A command's time on the GPU.
    pub gpu_ns: f64,
    /// The host's time to dispatch one (runtime and driver).
    pub host_ns: f64,
}

/// Why the host, not a replayed window, took a batch's task (and the rest after it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub enum HostReason {
    /// No structure learnt yet (`Execution::Auto`): the host dispatches this batch,
    /// and its structure is learnt from it.
    Learning,
    /// The task departs from the structure learnt (its commands, kernels or the tasks it
    /// names differ from the task in its place).
    Departs,
    /// The batch went on past the structure learnt, which its tasks before had repeated
    /// whole (and which went as windows).
    PastTheStructure,
    /// The batch repeats the structure learnt, but replaying it did not pay: its GPU
    /// commands took at least [`Execution::PAYS_BELOW`](crate::Execution::PAYS_BELOW) times the host's time to
    /// dispatch one (ns, means per command).
    DoesNotPay {
        /// A command's time on the GPU.
        gpu_ns: f64,
        /// The host's time to dispatch one.
        host_ns: f64,
    },
    /// The task cannot run in a graph: it has a callback (CPU or GPU library work), uses
    /// resident data or external device memory, was placed on a GPU, or has no command.
    NotInAGraph,
    /// The task runs after a task that is neither held nor in a window.
    AfterAHostTask,
    /// A guard on host memory that held tasks touch waited for them: they went, and the
    /// rest of the batch with them.
    GuardWaited,
    /// `synchronize` came before the batch had repeated the whole structure learnt.
    SynchronizedEarly,
    /// Tasks came (from another thread) while `synchronize` waited: the host took them
    /// and the rest of their batch (under `Replay` the tasks held then went as a
    /// window first).
    WhileSynchronizing,
}

impl std::fmt::Display for HostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            HostReason::Learning => f.write_str("no structure learnt yet: this batch's is learnt from it"),
            HostReason::Departs => f.write_str("it departs from the structure learnt"),
            HostReason::PastTheStructure => f.write_str("the batch went on past the structure learnt"),
            HostReason::DoesNotPay { gpu_ns, host_ns } => write!(
                f,
                "replaying does not pay: {:.2} us a command on the GPU against the host's {:.2} us to dispatch one",
                gpu_ns / 1e3,
                host_ns / 1e3
            ),
            HostReason::NotInAGraph => f.write_str("it cannot run in a graph"),
            HostReason::AfterAHostTask => f.write_str("it runs after a task outside the windows"),
            HostReason::GuardWaited => f.write_str("a guard on host memory waited for the tasks held"),
            HostReason::SynchronizedEarly => f.write_str("synchronize came before the structure learnt was whole"),
            HostReason::WhileSynchronizing => f.write_str("tasks came while synchronize waited"),
        }
    }
}

impl std::fmt::Display for BatchExecution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} tasks replayed", self.replayed)?;
        if let Some(p) = self.pays {
            write!(
                f,
                " (replaying pays: {:.2} us a command on the GPU against the host's {:.2} us to dispatch one)",
                p.gpu_ns / 1e3,
                p.host_ns / 1e3
            )?;
        }
        if let Some(ns) = self.wide_step_ns {
            write!(f, "; windows on lanes past S ({:.1} us of GPU time a step)", ns / 1e3)?;
        }
        if let Some(share) = self.tapered {
            write!(f, "; last cuts tapered (the GPU busy {share:.2} of the submit time)")?;
        }
        if let Some((task, why)) = self.host_from {
            write!(f, "; the host from task {task}: {why}")?;
        }
        Ok(())
    }
}

/// How a replayed window's graph was set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum GraphSetup {
    /// Built and instantiated for this window: its structure was new on this GPU.
    Built,
    /// A graph kept from an earlier window of the same structure, with this many
    /// nodes' parameters (pointers, sizes, grids, scalars) set anew.
    Updated {
        /// Nodes set.
        nodes: usize,
    },
    /// A graph kept from an earlier window of the same structure and parameters,
    /// launched as it was.
    Reused,
    /// Run on a simulated GPU: one graph launch, then the nodes one after another.
    Simulated,
    /// Run on the GPU by a persistent kernel that takes ready tasks from a queue in
    /// device memory (`Execution::Device`): no graph, no launch per task.
    Device,
}

impl std::fmt::Display for GraphSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GraphSetup::Built => f.write_str("built"),
            GraphSetup::Updated { nodes } => write!(f, "updated ({nodes} nodes set)"),
            GraphSetup::Reused => f.write_str("reused"),
            GraphSetup::Simulated => f.write_str("simulated"),
            GraphSetup::Device => f.write_str("none (run on the device)"),
        }
    }
}

/// Which thread launched a replayed window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum LaunchedBy {
    /// Its GPU's dispatcher.
    Dispatcher,
    /// The thread that queued or waited for it (a recorded graph's run whose kept graph,
    /// or image on the device, it launched again while the dispatcher waited, as a
    /// hand-written graph is launched).
    Caller,
}

/// Why a recorded graph's part ran the way it did: the runtime's choice between its kept
/// CUDA graph and the device-side executor (Giles' scheme), made from the part's first
/// runs, a warm-up and three measured each way, keeping the way of the faster best run.
/// Times are a run's [`ReplayedWindow::run_ns`], in ns: on the GPU where measured
/// there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum WayChosen {
    /// Still measuring: this was run `run` of the `of` tried this way (the first builds
    /// the graph or compiles the executor; the others are measured).
    Trying {
        /// On the device (else as the graph).
        device: bool,
        /// This run's number among those of its way.
        run: u8,
        /// Runs tried each way.
        of: u8,
    },
    /// The executor: its best measured run beat the graph's.
    Device {
        /// The executor's best measured run.
        device_ns: u64,
        /// The graph's best measured run.
        graph_ns: u64,
    },
    /// The graph: its best measured run was at most the executor's.
    Graph {
        /// The graph's best measured run.
        graph_ns: u64,
        /// The executor's best measured run.
        device_ns: u64,
    },
    /// The graph: the executor runs only a part on one GPU whose tasks are one kernel
    /// launch each, of one block shape, and this one is not.
    GraphOnly,
    /// The graph: the executor refused the part when asked (its kernels could not be
    /// built into one executor, or the GPU could not hold it).
    Refused,
}

impl std::fmt::Display for WayChosen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |ns: u64| ns as f64 / 1e3;
        match *self {
            WayChosen::Trying { device, run, of } => {
                let way = if device { "the device" } else { "the graph" };
                write!(f, "trying {way}: run {run} of {of}")
            }
            WayChosen::Device { device_ns, graph_ns } => write!(
                f,
                "on the device: its best run there took {:.1} us, the graph's {:.1} us",
                us(device_ns),
                us(graph_ns)
            ),
            WayChosen::Graph { graph_ns, device_ns } => write!(
                f,
                "as the graph: its best run took {:.1} us, the device's {:.1} us",
                us(graph_ns),
                us(device_ns)
            ),
            WayChosen::GraphOnly => f.write_str(
                "as the graph: the device executor runs only a part on one GPU of one-launch tasks of one block shape",
            ),
            WayChosen::Refused => f.write_str("as the graph: the device executor refused it"),
        }
    }
}

/// A window of tasks that ran as one graph on one GPU
/// ([`Execution`](crate::Execution)). On a simulated GPU its commands are in the
/// report's records, timed one by one; on CUDA they are not (a graph's nodes are not
/// timed), and the window's span stands for them.
/// It prints as the report's replay lines do, e.g.
/// `GPU 0: 3 tasks, 9 commands on 2 lanes in 0.005 ms, graph reused, host 4.0 us, 0.004
/// ms on the GPU`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReplayedWindow {
    /// The GPU (index in the scheduler's list).
    pub gpu: usize,
    /// Tasks in it.
    pub tasks: usize,
    /// Commands in it (graph nodes).
    pub commands: usize,
    /// Lanes (stream slots' buffer copies) it used.
    pub lanes: usize,
    /// The longest chain of its tasks, each after the one before by a dependency or by
    /// its lane's order: the steps its graph took one after another.
    pub depth: usize,
    /// How many GPUs its tasks ran on: 1, or more where it spans GPUs (a connected part
    /// wide enough to keep one GPU busy, spread over them in one graph launched from
    /// [`gpu`](ReplayedWindow::gpu)).
    pub gpu_count: usize,
    /// When it was queued for its GPU (ns since the scheduler started): by the
    /// submitting thread for a recorded graph's run, by the replay's window cutter
    /// otherwise.
    pub queued_ns: u64,
    /// When it was launched (ns since the scheduler started).
    pub launched_ns: u64,
    /// Which thread launched it.
    pub launched_by: LaunchedBy,
    /// When its completion was seen.
    pub end_ns: u64,
    /// Its time on the GPU, in ns, measured there: on CUDA between an event recorded
    /// before it on its stream and one after it, where the driver times events
    /// (`cuEventElapsedTime_v2`, CUDA 12.8); on the sim, its engine's run. Unlike
    /// [`duration_ns`](ReplayedWindow::duration_ns) it holds neither a wait behind the
    /// window before it nor the delay in seeing the end. `None` where not measured.
    pub gpu_ns: Option<u64>,
    /// How its graph was set up.
    pub setup: GraphSetup,
    /// Whether its completion event was made with timing (a batch's window on lanes
    /// past S: behind untimed events after such windows, the windows after them ran
    /// several times slower in some batches on an H200; see `docs/replay.md`).
    pub timed_end: bool,
    /// Host time spent setting it up and launching it, in ns.
    pub host_ns: u64,
    /// Whether its commands are timed one by one in the records (sim).
    pub timed: bool,
    /// Whether a task of it failed (or the whole window did).
    pub failed: bool,
    /// A recorded graph's part on CUDA: which way it ran, and why (`None`: a batch's
    /// window, or on the sim, where every part runs as a graph).
    pub way: Option<WayChosen>,
}

impl ReplayedWindow {
    /// `end_ns − launched_ns`.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.launched_ns)
    }

    /// How long it ran: [`gpu_ns`](ReplayedWindow::gpu_ns) where measured on the GPU,
    /// else [`duration_ns`](ReplayedWindow::duration_ns). What the runtime's measures of
    /// a window's speed read.
    pub fn run_ns(&self) -> u64 {
        self.gpu_ns.unwrap_or_else(|| self.duration_ns())
    }

    /// `launched_ns − queued_ns`: how long it waited for its dispatcher (to wake, to
    /// finish its turn) and for the windows ahead of it.
    pub fn waited_ns(&self) -> u64 {
        self.launched_ns.saturating_sub(self.queued_ns)
    }
}

impl std::fmt::Display for ReplayedWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GPU {}: {} tasks, {} commands on {} lanes in {:.3} ms, graph {}, host {:.1} us",
            self.gpu,
            self.tasks,
            self.commands,
            self.lanes,
            self.duration_ns() as f64 / 1e6,
            self.setup,
            self.host_ns as f64 / 1e3
        )?;
        if let Some(ns) = self.gpu_ns {
            write!(f, ", {:.3} ms on the GPU", ns as f64 / 1e6)?;
        }
        if self.gpu_count > 1 {
            write!(f, ", over {} GPUs", self.gpu_count)?;
        }
        if self.timed_end {
            f.write_str(", timed end")?;
        }
        if self.launched_by == LaunchedBy::Caller {
            f.write_str(", launched by the calling thread")?;
        }
        if let Some(way) = self.way {
            write!(f, ", {way}")?;
        }
        if self.failed {
            f.write_str(", failed")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_window_prints_its_tasks_lanes_span_and_setup() {
        let w = ReplayedWindow {
            gpu: 0,
            tasks: 3,
            commands: 9,
            lanes: 2,
            depth: 2,
            gpu_count: 1,
            queued_ns: 400,
            launched_ns: 1_000,
            launched_by: LaunchedBy::Dispatcher,
            end_ns: 6_000,
            gpu_ns: None,
            setup: GraphSetup::Reused,
            timed_end: false,
            host_ns: 4_000,
            timed: false,
            failed: false,
            way: None,
        };
        assert_eq!(w.duration_ns(), 5_000);
        assert_eq!(w.waited_ns(), 600);
        assert_eq!(w.to_string(), "GPU 0: 3 tasks, 9 commands on 2 lanes in 0.005 ms, graph reused, host 4.0 us");
        let caller = ReplayedWindow { launched_by: LaunchedBy::Caller, ..w };
        assert!(caller.to_string().ends_with("host 4.0 us, launched by the calling thread"), "{caller}");
        assert_eq!(w.run_ns(), 5_000);
        let spread = ReplayedWindow { gpu_count: 2, ..w.clone() };
        assert!(spread.to_string().ends_with("host 4.0 us, over 2 GPUs"), "{spread}");
        let timed_end = ReplayedWindow { timed_end: true, ..w.clone() };
        assert!(timed_end.to_string().ends_with("host 4.0 us, timed end"), "{timed_end}");
        let timed = ReplayedWindow { gpu_ns: Some(3_600), ..w.clone() };
        assert_eq!(timed.run_ns(), 3_600);
        assert!(timed.to_string().ends_with("host 4.0 us, 0.004 ms on the GPU"), "{timed}");
        let ways = [
            (WayChosen::Trying { device: true, run: 2, of: 4 }, "trying the device: run 2 of 4"),
            (
                WayChosen::Device { device_ns: 28_100, graph_ns: 262_000 },
                "on the device: its best run there took 28.1 us, the graph's 262.0 us",
            ),
            (
                WayChosen::Graph { graph_ns: 31_000, device_ns: 40_500 },
                "as the graph: its best run took 31.0 us, the device's 40.5 us",
            ),
            (WayChosen::Refused, "as the graph: the device executor refused it"),
        ];
        for (way, text) in ways {
            let part = ReplayedWindow { way: Some(way), ..w.clone() };
            assert!(part.to_string().ends_with(&format!("host 4.0 us, {text}")), "{part}");
        }
    }
}
