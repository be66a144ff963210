//! What the invariant checker (`invariants.rs`) checks a report against: the tasks
//! submitted ([`TaskSpec`]), the limits the scheduler ran under ([`Limits`]), and how far
//! its clocks may be trusted ([`Clocks`]).

use chariot::tuning::{OverlapMatrix, Thresholds};
use chariot::{Scheduler, Stage};

/// What the checker expects of one submitted task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    /// The task's id.
    pub id: u64,
    /// The granularity it was submitted with.
    pub granularity: u64,
    /// The stage of each of its commands, in order.
    pub stages: Vec<Stage>,
    /// `Some(c)`: command `c` fails (so commands `0..=c` are recorded, `c` as failed).
    pub fails_at: Option<usize>,
}

impl TaskSpec {
    pub fn new(id: u64, granularity: u64, stages: &[Stage]) -> Self {
        TaskSpec { id, granularity, stages: stages.to_vec(), fails_at: None }
    }

    pub fn failing_at(mut self, command: usize) -> Self {
        self.fails_at = Some(command);
        self
    }
}

/// The configuration a report must respect.
#[derive(Clone, Debug)]
pub struct Limits {
    /// D.
    pub gpus: usize,
    /// S.
    pub streams: usize,
    /// L and G.
    pub thresholds: Thresholds,
    /// M of each GPU (`None`: not checked).
    pub matrices: Vec<Option<OverlapMatrix>>,
}

impl Limits {
    /// The limits a scheduler runs under.
    pub fn of(sched: &Scheduler) -> Self {
        let gpus = sched.gpu_count();
        Limits {
            gpus,
            streams: sched.streams(),
            thresholds: sched.thresholds(),
            matrices: (0..gpus).map(|g| sched.overlap_matrix(g)).collect(),
        }
    }
}

/// How far timestamps may be trusted.
///
/// On the sim backend, and on CUDA with host-observed spans (the default), every
/// timestamp is a host time since the scheduler started, and the checker is exact. It
/// then also checks the dispatcher's own view: a command counts as in flight from
/// `dispatched_ns` (the dispatcher's issue) to `end_ns`, which lies inside the time the
/// dispatcher counts it in `C_k` (a slot is given back only after its completion was
/// seen). That catches gating mistakes that serialising engines would otherwise hide.
///
/// With `Builder::device_timing(true)`, GPU commands are timed by CUDA events mapped
/// onto the host clock through a base event (about 0.5 µs resolution, plus a constant
/// offset of the order of the base event's synchronisation latency), while CPU
/// callbacks and `dispatched_ns` stay host times. Comparisons inside one GPU's event
/// clock then get `same_ns` of slack, comparisons across clocks (a readback's end
/// against the next CPU callback's start, or two GPUs' clocks) get `cross_ns`, and the
/// dispatcher's view is not checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clocks {
    /// Slack for comparisons within one clock.
    pub same_ns: u64,
    /// Slack for comparisons across clocks.
    pub cross_ns: u64,
    /// Whether `dispatched_ns..end_ns` is also checked (one clock for everything).
    pub issued: bool,
}

impl Clocks {
    /// One host clock for everything (sim; CUDA with host-observed spans): exact, with
    /// the dispatcher's view checked too.
    pub const HOST: Clocks = Clocks { same_ns: 0, cross_ns: 0, issued: true };
    /// The sim backend.
    pub const SIM: Clocks = Clocks::HOST;
    /// CUDA with device timing events: event resolution within a GPU, 200 µs across
    /// clocks.
    pub const CUDA_EVENTS: Clocks = Clocks { same_ns: 2_000, cross_ns: 200_000, issued: false };

    /// The slack for comparing a time of stage `a` with one of stage `b`.
    pub(super) fn between(&self, a: Stage, b: Stage) -> u64 {
        if a.on_gpu() == b.on_gpu() {
            self.same_ns
        } else {
            self.cross_ns
        }
    }
}
