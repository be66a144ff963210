//! What went wrong, as a report lists it and an error carries it: a failed task
//! ([`TaskFailure`]) and the driver call behind it ([`DriverError`]).

use crate::ids::TaskId;
use crate::stage::Stage;
use parking_lot::Mutex;

/// A CUDA driver call that failed: the call, the driver's code (a `CUresult`) to match
/// on, and the driver's name and text for it. It prints as
/// `cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct DriverError {
    /// The driver function, e.g. `cuMemAlloc`, or the step that made the call.
    pub call: String,
    /// The driver's code (`CUresult` as a number; 0 is success and never appears).
    pub code: i32,
    /// The code's name, e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
    pub name: String,
    /// The driver's text for it, e.g. `out of memory`.
    pub text: String,
}

impl DriverError {
    /// Whether the driver returned `code` (a `CUresult` as a number).
    pub fn is(&self, code: i32) -> bool {
        self.code == code
    }
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {}", self.call, self.name)?;
        if !self.text.is_empty() {
            write!(f, " ({})", self.text)?;
        }
        Ok(())
    }
}

impl std::error::Error for DriverError {}

impl From<DriverError> for String {
    fn from(e: DriverError) -> String {
        e.to_string()
    }
}

/// Driver errors met while freeing or tearing down (device and pinned memory, modules,
/// streams and events, contexts), shared by the backend and the scheduler: kept for the
/// next `synchronize`, whose report lists them ([`Report::cleanup`](crate::report::Report::cleanup)).
/// An error repeated before that is kept once. After the scheduler's shutdown (`close`)
/// no report follows: later errors, and any left when the last holder drops, go to
/// stderr (see [`shutting_down`]).
#[derive(Debug, Default)]
pub(crate) struct Cleanup {
    pending: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    errors: Vec<DriverError>,
    closed: bool,
}

impl Cleanup {
    /// Keeps `error` for the next report, or writes it to stderr after `close`.
    pub(crate) fn push(&self, error: DriverError) {
        let mut pending = self.pending.lock();
        if pending.closed {
            drop(pending);
            shutting_down(&error);
        } else if !pending.errors.contains(&error) {
            pending.errors.push(error);
        }
    }

    /// The errors kept since the last call, for a report.
    pub(crate) fn take(&self) -> Vec<DriverError> {
        std::mem::take(&mut self.pending.lock().errors)
    }

    /// The scheduler has shut down: returns what is kept, and from now on writes every
    /// error to stderr as it comes.
    pub(crate) fn close(&self) -> Vec<DriverError> {
        let mut pending = self.pending.lock();
        pending.closed = true;
        std::mem::take(&mut pending.errors)
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        // No report will list them (a scheduler that failed to start, or a teardown
        // after the last report): shown rather than lost.
        for e in self.pending.get_mut().errors.drain(..) {
            shutting_down(&e);
        }
    }
}

/// Writes an error met while the scheduler shuts down (or after), which no report can
/// carry, to stderr with a prefix that names chariot.
pub(crate) fn shutting_down(what: &dyn std::fmt::Display) {
    eprintln!("chariot: while shutting down: {what}");
}

/// One failed task: which command failed, where, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct TaskFailure {
    /// The task.
    pub task: TaskId,
    /// Index of the failing command in the task.
    pub command: usize,
    /// Its stage.
    pub stage: Stage,
    /// The GPU the task was bound to.
    pub gpu: usize,
    /// The stream slot on that GPU.
    pub stream: usize,
    /// The driver's, the callback's or the panic's message.
    pub message: String,
    /// Where a CUDA driver call failed: the call and the driver's code.
    pub driver: Option<DriverError>,
}

impl TaskFailure {
    /// The failure of command `command` (of stage `stage`) of `task`, bound to `gpu`
    /// and stream slot `stream`, with `message` and no driver error.
    pub fn new(
        task: TaskId,
        command: usize,
        stage: Stage,
        gpu: usize,
        stream: usize,
        message: impl Into<String>,
    ) -> Self {
        TaskFailure { task, command, stage, gpu, stream, message: message.into(), driver: None }
    }
}

impl std::fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "task {} command {} ({}) on GPU {} stream {}: {}",
            self.task, self.command, self.stage, self.gpu, self.stream, self.message
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_driver_error_prints_its_call_name_and_text_and_matches_its_code() {
        let e = DriverError {
            call: "cuMemAlloc".into(),
            code: 2,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            text: "out of memory".into(),
        };
        assert_eq!(e.to_string(), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
        assert!(e.is(2) && !e.is(1));
    }
}
