//! The report's lines for replayed windows: tasks that ran as one graph.

use serde::Serialize;

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

/// A window of tasks that ran as one graph on one GPU
/// ([`Execution`](crate::Execution)). On a simulated GPU its commands are in the
/// report's records, timed one by one; on CUDA they are not (a graph's nodes are not
/// timed), and the window's span stands for them.
/// It prints as the report's replay lines do, e.g.
/// `GPU 0: 3 tasks, 9 commands on 2 lanes in 0.005 ms, graph reused, host 4.0 us`.
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
    /// How its graph was set up.
    pub setup: GraphSetup,
    /// Host time spent setting it up and launching it, in ns.
    pub host_ns: u64,
    /// Whether its commands are timed one by one in the records (sim).
    pub timed: bool,
    /// Whether a task of it failed (or the whole window did).
    pub failed: bool,
}

impl ReplayedWindow {
    /// `end_ns − launched_ns`.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.launched_ns)
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
        if self.launched_by == LaunchedBy::Caller {
            f.write_str(", launched by the calling thread")?;
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
            queued_ns: 400,
            launched_ns: 1_000,
            launched_by: LaunchedBy::Dispatcher,
            end_ns: 6_000,
            setup: GraphSetup::Reused,
            host_ns: 4_000,
            timed: false,
            failed: false,
        };
        assert_eq!(w.duration_ns(), 5_000);
        assert_eq!(w.waited_ns(), 600);
        assert_eq!(w.to_string(), "GPU 0: 3 tasks, 9 commands on 2 lanes in 0.005 ms, graph reused, host 4.0 us");
        let caller = ReplayedWindow { launched_by: LaunchedBy::Caller, ..w };
        assert!(caller.to_string().ends_with("host 4.0 us, launched by the calling thread"), "{caller}");
    }
}
