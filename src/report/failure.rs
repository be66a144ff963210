//! What went wrong, as a report lists it and an error carries it: a failed task
//! ([`TaskFailure`]) and the driver call behind it ([`DriverError`]).

use crate::ids::TaskId;
use crate::stage::Stage;

/// A CUDA driver call that failed: the call, the driver's code (a `CUresult`) to match
/// on, and the driver's name and text for it.
///
/// ```
/// use chariot::DriverError;
/// let e = DriverError { call: "cuMemAlloc".into(), code: 2, name: "CUDA_ERROR_OUT_OF_MEMORY".into(), text: "out of memory".into() };
/// assert_eq!(e.to_string(), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
/// assert!(e.is(2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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

/// One failed task: which command failed, where, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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

impl std::fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "task {} command {} ({}) on GPU {} stream {}: {}",
            self.task, self.command, self.stage, self.gpu, self.stream, self.message
        )
    }
}
