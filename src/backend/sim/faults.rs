//! Fault injection for the sim backend: commands that fail, GPUs that die, GPUs that
//! run slow. What the runtime does about each (fail the task, move the lost GPU's
//! tasks, give the slow GPU fewer tasks) is then tested without a GPU.

use crate::ids::TaskId;
use std::time::Duration;

/// Faults a simulated machine injects. GPUs are named by their index in the scheduler
/// (0..D, as in reports); tasks by their id and commands by their index in the task.
///
/// ```
/// use chariot::sim::{SimFaults, SimProfile};
/// use chariot::TaskId;
/// use std::time::Duration;
/// let faults = SimFaults::default()
///     .fail_command(TaskId(7), 1)                 // task 7's second command fails
///     .crash_on_command(TaskId(9), 2)             // task 9's kernel takes its GPU down
///     .lose_gpu_on_command(TaskId(4), 3)          // GPU lost during task 4's readback
///     .gpu_dies_at(1, Duration::from_millis(5))   // GPU 1 is lost 5 ms into the run
///     .slow_gpu(2, 4.0);                          // GPU 2 runs 4 times slower
/// let profile = SimProfile::h100().with_faults(faults);
/// assert_eq!(profile.faults.slowdown(2), 4.0);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SimFaults {
    /// Commands `(task, command)` that fail, every time they run, with an error of
    /// their task only (as a callback's error or a bad launch would).
    pub failing: Vec<(TaskId, usize)>,
    /// Commands `(task, command)` that take their GPU down when they run, as a kernel
    /// that reads an illegal address does on CUDA: the task is blamed and failed, the
    /// GPU leaves the rotation.
    pub crashing: Vec<(TaskId, usize)>,
    /// Commands `(task, command)` during which their GPU is lost, as when a device
    /// falls off the bus: the command fails, no task is blamed. Each fires once (the
    /// task may move and run the command again elsewhere).
    pub losing: Vec<(TaskId, usize)>,
    /// GPUs `(gpu, at)` lost at `at` after the scheduler started (modeled time: the
    /// profile's `time_scale` stretches it too). Commands running then, or issued
    /// later, fail; no task is blamed.
    pub deaths: Vec<(usize, Duration)>,
    /// GPUs `(gpu, k)` on which every command takes `k` times as long.
    pub slow: Vec<(usize, f64)>,
    /// Whether freeing device memory fails, as a `cuMemFree` returning an error would:
    /// each free of a physical buffer reports an error, which the next `synchronize`
    /// lists in [`Report::cleanup`](crate::report::Report::cleanup) (the memory still returns).
    pub fail_frees: bool,
}

impl SimFaults {
    /// Also fails command `command` of task `task` (see [`SimFaults::failing`]).
    pub fn fail_command(mut self, task: TaskId, command: usize) -> Self {
        self.failing.push((task, command));
        self
    }

    /// Also makes command `command` of task `task` take its GPU down (see
    /// [`SimFaults::crashing`]).
    pub fn crash_on_command(mut self, task: TaskId, command: usize) -> Self {
        self.crashing.push((task, command));
        self
    }

    /// Also loses the GPU that runs command `command` of task `task`, while it runs
    /// (see [`SimFaults::losing`]).
    pub fn lose_gpu_on_command(mut self, task: TaskId, command: usize) -> Self {
        self.losing.push((task, command));
        self
    }

    /// Also loses GPU `gpu` at `at` after the start (see [`SimFaults::deaths`]).
    pub fn gpu_dies_at(mut self, gpu: usize, at: Duration) -> Self {
        self.deaths.push((gpu, at));
        self
    }

    /// Also makes GPU `gpu` run `k` times slower (see [`SimFaults::slow`]).
    pub fn slow_gpu(mut self, gpu: usize, k: f64) -> Self {
        self.slow.push((gpu, k));
        self
    }

    /// Also makes every free of device memory report an error (see
    /// [`SimFaults::fail_frees`](SimFaults#structfield.fail_frees)).
    pub fn fail_frees(mut self) -> Self {
        self.fail_frees = true;
        self
    }

    /// How many times slower GPU `gpu` runs (1 when it is not slowed).
    pub fn slowdown(&self, gpu: usize) -> f64 {
        self.slow.iter().filter(|&&(g, _)| g == gpu).map(|&(_, k)| k).product()
    }

    /// When GPU `gpu` dies, if it does (the earliest of its deaths).
    pub fn death(&self, gpu: usize) -> Option<Duration> {
        self.deaths.iter().filter(|&&(g, _)| g == gpu).map(|&(_, at)| at).min()
    }

    pub(crate) fn fails(&self, task: TaskId, command: usize) -> bool {
        self.failing.contains(&(task, command))
    }

    pub(crate) fn crashes(&self, task: TaskId, command: usize) -> bool {
        self.crashing.contains(&(task, command))
    }

    pub(crate) fn validate(&self) -> Result<(), super::profile::ProfileProblem> {
        if let Some(&(g, k)) = self.slow.iter().find(|&&(_, k)| !(k.is_finite() && k >= 1.0)) {
            return Err(super::profile::ProfileProblem::SlowFactor { gpu: g, factor: k });
        }
        Ok(())
    }
}
