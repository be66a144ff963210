//! The crate's one error type, [`Error`] (with [`Result`] and the callbacks' [`BoxError`]),
//! and the typed details some of its variants carry: [`LengthProblem`], [`HostRegion`],
//! [`ConflictHolder`], [`MemoryKind`]. Every error that comes from a command carries the
//! task id, the stage and (where known) the GPU; driver errors carry the driver's own text.
//!
//! [`Error::TasksFailed`] carries the batch's [`Report`], which lists the batch's
//! [`TaskFailure`]s; the report, the failures and the [`DriverError`] a failure carries
//! are defined in `report`, below this module, so that the error names the report and
//! never the other way round.

use crate::ids::TaskId;
use crate::report::{DriverError, Report, TaskFailure};
use crate::stage::Stage;

/// Result with chariot's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Error a callback or a kernel's CPU twin returns; any error type converts into it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The accepted names of a setting as an error message lists them: `a, b or c`. Each
/// setting builds its list from its one table of names, so the message cannot drift
/// from what is accepted.
pub(crate) fn one_of<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.to_string(),
        None => String::new(),
    }
}

/// Everything that can go wrong in chariot.
///
/// ```
/// use chariot::{Error, Scheduler};
/// let err = Scheduler::builder().streams(0).build().unwrap_err();
/// assert!(matches!(err, Error::InvalidConfig { name: "streams", .. }));
/// assert!(err.to_string().contains("streams"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A builder parameter is out of range.
    #[error("invalid configuration: {name} = {value}; allowed: {allowed}")]
    InvalidConfig {
        /// The parameter's name (the builder method).
        name: &'static str,
        /// The value given.
        value: String,
        /// What would have been accepted.
        allowed: String,
    },
    /// A GPU ordinal that does not exist was asked for.
    #[error("GPU {ordinal} was requested, but the {backend} backend has {available} GPU(s) (ordinals 0..{available})")]
    NoSuchGpu {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many GPUs the backend has.
        available: usize,
        /// Which backend was asked.
        backend: &'static str,
    },
    /// The CUDA backend was asked for but cannot run here.
    #[error("the CUDA backend is not available: {reason}")]
    CudaUnavailable {
        /// Why (no driver library, no device, driver error).
        reason: String,
    },
    /// A CUDA driver call failed outside any task (allocation, set-up).
    #[error("on GPU {gpu}, {error}")]
    Driver {
        /// The GPU (index in the scheduler's list, or the device ordinal where no
        /// scheduler is involved).
        gpu: usize,
        /// The call, the driver's code, and its name and text.
        error: DriverError,
    },
    /// A kernel's CUDA C did not compile; `log` is NVRTC's log.
    #[error("kernel `{kernel}` failed to compile for {arch}:\n{log}")]
    KernelCompile {
        /// The kernel's name.
        kernel: String,
        /// The target architecture, e.g. `sm_90`.
        arch: String,
        /// NVRTC's program log.
        log: String,
    },
    /// A kernel registration is inconsistent (no CPU twin on the sim backend, bad name).
    #[error("kernel `{kernel}`: {message}")]
    KernelInvalid {
        /// The kernel's name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// A command added to a task is invalid (out of range, bad pitch, bad arguments).
    #[error("task {task}: command {command} ({stage}): {message}")]
    InvalidCommand {
        /// The task being built.
        task: TaskId,
        /// Index of the command in the task (0-based).
        command: usize,
        /// The command's stage.
        stage: Stage,
        /// What is wrong, with the values and what was allowed.
        message: String,
    },
    /// A task asked for a GPU the scheduler does not have
    /// ([`TaskBuilder::prefer_gpu`](crate::TaskBuilder::prefer_gpu)).
    #[error("task {task}: prefer_gpu({gpu}), but the scheduler has {gpus} GPU(s) (0..{gpus})")]
    NoSuchPlacement {
        /// The task being built.
        task: TaskId,
        /// The GPU asked for (an index among the scheduler's GPUs).
        gpu: usize,
        /// The scheduler's GPUs.
        gpus: usize,
    },
    /// A task was submitted with no commands.
    #[error("task {task} has no commands")]
    EmptyTask {
        /// The task.
        task: TaskId,
    },
    /// Two tasks of one batch carry the same id: the id was submitted since the last
    /// `synchronize`, whether that task is still in flight or has ended (the batch's
    /// report counts tasks by id).
    #[error(
        "task {task}: a task with this id was already submitted in this batch (ids must be unique until synchronize)"
    )]
    DuplicateTask {
        /// The id given twice.
        task: TaskId,
    },
    /// A task names, in [`TaskBuilder::after`](crate::TaskBuilder::after), an id that was
    /// not submitted in this batch (since the last `synchronize`): a task runs only
    /// after tasks submitted before it.
    ///
    /// ```
    /// use chariot::{Backend, Error, Scheduler, TaskId};
    /// use chariot::callback::Resource;
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let e = s.task(2, 1).after(TaskId(7)).callback(Resource::Cpu, |_| Ok(())).submit().unwrap_err();
    /// assert!(matches!(e, Error::UnknownDependency { task: TaskId(2), dependency: TaskId(7) }));
    /// # Ok::<(), chariot::Error>(())
    /// ```
    #[error(
        "task {task} runs after task {dependency}, which was not submitted in this batch (a task may run only after \
         tasks submitted before it, since the last synchronize)"
    )]
    UnknownDependency {
        /// The task refused.
        task: TaskId,
        /// The id it named.
        dependency: TaskId,
    },
    /// A task names itself in [`TaskBuilder::after`](crate::TaskBuilder::after): the only
    /// cycle there can be, as a task runs only after tasks submitted before it.
    ///
    /// ```
    /// use chariot::{Backend, Error, Scheduler, TaskId};
    /// use chariot::callback::Resource;
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let e = s.task(3, 1).after(TaskId(3)).callback(Resource::Cpu, |_| Ok(())).submit().unwrap_err();
    /// assert!(matches!(e, Error::DependencyCycle { task: TaskId(3) }));
    /// # Ok::<(), chariot::Error>(())
    /// ```
    #[error("task {task} runs after itself: a dependency cycle")]
    DependencyCycle {
        /// The task refused.
        task: TaskId,
    },
    /// A task's host region conflicts with a region a live read guard holds, or with an
    /// unended task's where the task asked for the error
    /// ([`TaskBuilder::refuse_conflicts`](crate::TaskBuilder::refuse_conflicts)); by
    /// default such a task runs after the other task instead.
    #[error("task {task}: host buffer {buffer}, {region}, conflicts with {holder}")]
    HostConflict {
        /// The task refused.
        task: TaskId,
        /// The host buffer's id.
        buffer: u64,
        /// The bytes of the buffer the task asked for.
        region: HostRegion,
        /// Who holds the conflicting region.
        holder: ConflictHolder,
    },
    /// A graph cannot be recorded, run or updated as asked
    /// ([`Scheduler::record`](crate::Scheduler::record)); `task` names the task where one
    /// is at fault.
    #[cfg(feature = "replay")]
    #[error("recorded graph{}: {problem}", task.map(|t| format!(", task {t}")).unwrap_or_default())]
    Recording {
        /// The task at fault, if one is.
        task: Option<TaskId>,
        /// What is wrong.
        problem: RecordingProblem,
    },
    /// Host or device memory could not be allocated.
    #[error("allocation of {bytes} bytes of {what} failed: {message}")]
    OutOfMemory {
        /// Which memory: a GPU's, pinned host memory or the heap.
        what: MemoryKind,
        /// Bytes asked for.
        bytes: usize,
        /// The driver's or allocator's message.
        message: String,
    },
    /// A buffer of zero elements, or one whose size overflows, or a range of elements
    /// outside a buffer, was asked for.
    #[error("invalid buffer length {len} of {elem_size}-byte elements: {problem}")]
    InvalidLength {
        /// Elements asked for (for a range: the buffer's length).
        len: usize,
        /// Size of one element.
        elem_size: usize,
        /// What is wrong.
        problem: LengthProblem,
    },
    /// A call made in a callback would wait for the callback's own task, which cannot
    /// end until the callback returns: [`Scheduler::synchronize`](crate::Scheduler::synchronize)
    /// or [`Scheduler::shutdown`](crate::Scheduler::shutdown) of the task's scheduler, or a
    /// [`HostBuffer`](crate::HostBuffer) guard on a range the task itself claims against
    /// it (a read guard on a range the task writes, a write guard on a range it touches).
    /// Nothing waits and nothing changes; a callback that gets it and returns it fails
    /// its task.
    #[error("task {task}: {call} was called in a callback of this task and would wait for the task itself, which cannot end until the callback returns ({reason})")]
    WaitInCallback {
        /// The task whose callback made the call.
        task: TaskId,
        /// The call, e.g. `Scheduler::synchronize` or `HostBuffer::read`.
        call: &'static str,
        /// What it would have waited for, and what to do instead.
        reason: String,
    },
    /// The cluster form (the `mpi` feature) refused: MPI could not be set up as
    /// chariot needs it, or the ranks did not run the same task stream.
    #[error("cluster{}: {message}", rank.map(|r| format!(" (rank {r})")).unwrap_or_default())]
    Cluster {
        /// This process's rank, once known.
        rank: Option<usize>,
        /// What went wrong, and what to do.
        message: String,
    },
    /// The scheduler was shut down; it takes no more work.
    #[error("the scheduler has shut down; it takes no more work")]
    ShutDown,
    /// A runtime thread could not be started or pinned.
    #[error("could not start thread {name}: {message}")]
    Thread {
        /// The thread's name.
        name: String,
        /// The OS error.
        message: String,
    },
    /// Some tasks of the batch failed; the others completed. `report` covers the batch.
    #[error("{} task(s) failed, first: {}", failures.len(), failures.first().map(|f| f.to_string()).unwrap_or_default())]
    TasksFailed {
        /// Every failed task, in the order the failures were seen.
        failures: Vec<TaskFailure>,
        /// The report of the whole batch.
        report: Box<Report>,
    },
}

/// Which memory an allocation asked for ([`Error::OutOfMemory`]).
///
/// ```
/// use chariot::error::MemoryKind;
/// assert_eq!(MemoryKind::Device { gpu: 1 }.to_string(), "device memory on GPU 1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryKind {
    /// Device memory of one GPU (its index in the scheduler, real or simulated).
    Device {
        /// The GPU.
        gpu: usize,
    },
    /// Page-locked host memory from the CUDA driver (what `alloc_host` gives on CUDA).
    PinnedHost,
    /// Host memory from the heap (what `alloc_host` gives on the sim backend).
    Host,
}

impl std::fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemoryKind::Device { gpu } => write!(f, "device memory on GPU {gpu}"),
            MemoryKind::PinnedHost => f.write_str("pinned host memory"),
            MemoryKind::Host => f.write_str("host memory"),
        }
    }
}

/// What is wrong with a length or a range of elements ([`Error::InvalidLength`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LengthProblem {
    /// No elements: a buffer needs at least one.
    Empty,
    /// The element type is empty, or aligned to more than 16 bytes.
    ElementType,
    /// The size in bytes overflows (`isize::MAX`).
    Overflow,
    /// The range's excluded start is `usize::MAX`: its first element overflows.
    RangeStartOverflow,
    /// The range's included end is `usize::MAX`: its end overflows.
    RangeEndOverflow,
    /// The range `start..end` does not fit in the buffer's `0..len`.
    Range {
        /// First element asked for.
        start: usize,
        /// One past the last element asked for.
        end: usize,
        /// The buffer's length.
        len: usize,
    },
    /// A resident buffer's piece holds 1 to `max` elements (the buffer's length).
    Piece {
        /// The buffer's length.
        max: usize,
    },
}

impl std::fmt::Display for LengthProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            LengthProblem::Empty => f.write_str("a buffer needs at least one element"),
            LengthProblem::ElementType => f.write_str("element types must be non-empty and at most 16-byte aligned"),
            LengthProblem::Overflow => f.write_str("the size in bytes overflows"),
            LengthProblem::RangeStartOverflow => f.write_str("range start overflows"),
            LengthProblem::RangeEndOverflow => f.write_str("range end overflows"),
            LengthProblem::Range { start, end, len } => write!(f, "range {start}..{end} does not fit in 0..{len}"),
            LengthProblem::Piece { max } => write!(f, "a piece holds 1 to {max} elements (the buffer's length)"),
        }
    }
}

/// Why a graph cannot be recorded, run or updated ([`Error::Recording`]).
#[cfg(feature = "replay")]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordingProblem {
    /// Tasks submitted before the recording have not been synchronized: a recorded
    /// graph runs after nothing, so the batch must be closed first.
    BatchOpen {
        /// The batch's tasks (ended or not) since the last `synchronize`.
        tasks: usize,
    },
    /// A recording is under way already (recordings do not nest).
    Nested,
    /// The task holds what a graph does not take: a callback, resident data, or a GPU
    /// its user placed it on.
    NotRecordable,
    /// The recording's body submitted no task.
    Empty,
    /// The graph has no task of that id.
    UnknownTask,
    /// The task has no kernel launch at that index, or the launch no argument there.
    NoSuchArgument {
        /// The command's index in its task.
        command: usize,
        /// The argument's index.
        arg: usize,
    },
    /// The new argument is not of the old one's kind (a buffer for a buffer, a scalar
    /// of the same type for a scalar).
    ArgumentKind {
        /// The argument's index.
        arg: usize,
        /// The kind the launch has.
        expected: &'static str,
        /// The kind given.
        given: &'static str,
    },
    /// The scheduler the graph was recorded on has shut down.
    ShutDown,
    /// A run of the graph still holds it (an update waits for the runs to end first).
    RunInFlight,
    /// The new device buffer was allocated by another scheduler.
    OtherScheduler,
    /// The task has no copy at that index.
    NotACopy {
        /// The command's index in its task.
        command: usize,
    },
    /// The copy's new host region would end past its buffer.
    HostRange {
        /// The byte the region would end at (`None`: past `usize`).
        end: Option<usize>,
        /// The buffer's bytes.
        bytes: usize,
    },
    /// The copy's new host bytes are written or read by another recorded task that the
    /// graph's edges do not order with this one (a recorded graph never waits for more
    /// than it recorded).
    HostOverlap {
        /// The other task.
        other: TaskId,
    },
}

#[cfg(feature = "replay")]
impl std::fmt::Display for RecordingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordingProblem::BatchOpen { tasks } => {
                write!(f, "{tasks} task(s) were submitted since the last synchronize; call synchronize before record")
            }
            RecordingProblem::Nested => f.write_str("a recording is under way already; recordings do not nest"),
            RecordingProblem::NotRecordable => f.write_str(
                "it holds a callback, resident data or a GPU preference; a recorded graph takes copies between \
                 host buffers and device buffers, and kernel launches on device buffers, and places them itself",
            ),
            RecordingProblem::Empty => f.write_str("the recording's body submitted no task"),
            RecordingProblem::UnknownTask => f.write_str("no such task in the graph"),
            RecordingProblem::NoSuchArgument { command, arg } => {
                write!(f, "command {command} is not a kernel launch with an argument {arg}")
            }
            RecordingProblem::ArgumentKind { arg, expected, given } => {
                write!(f, "argument {arg} is {expected}; {given} given (an update keeps each argument's kind)")
            }
            RecordingProblem::ShutDown => f.write_str("its scheduler has shut down"),
            RecordingProblem::RunInFlight => f.write_str("a run of the graph still holds it"),
            RecordingProblem::OtherScheduler => {
                f.write_str("the new device buffer belongs to another scheduler; use one allocated by this graph's")
            }
            RecordingProblem::NotACopy { command } => write!(f, "command {command} is not a copy"),
            RecordingProblem::HostRange { end: Some(end), bytes } => {
                write!(f, "the copy's new host region would end at byte {end}, past the buffer's {bytes} bytes")
            }
            RecordingProblem::HostRange { end: None, bytes } => {
                write!(f, "the copy's new host region would end past usize bytes (the buffer has {bytes})")
            }
            RecordingProblem::HostOverlap { other } => write!(
                f,
                "the copy's new host bytes are also copied by task {other}, which the graph does not order with this \
                 one (one of the two writes them); record the two with an edge, or pick other bytes"
            ),
        }
    }
}

/// Bytes of a host buffer a task asked for ([`Error::HostConflict`]): `height` rows of
/// `width` bytes, `pitch` bytes apart, from byte `start` (a 1-D range has `height` 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostRegion {
    /// First byte.
    pub start: usize,
    /// Bytes in a row.
    pub width: usize,
    /// Bytes from one row's start to the next's.
    pub pitch: usize,
    /// Rows.
    pub height: usize,
}

impl HostRegion {
    /// One past the last byte.
    pub fn end(&self) -> usize {
        if self.height == 0 || self.width == 0 {
            self.start
        } else {
            self.start + (self.height - 1) * self.pitch + self.width
        }
    }
}

impl std::fmt::Display for HostRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.height == 1 {
            write!(f, "bytes {}..{}", self.start, self.end())
        } else {
            write!(f, "{} rows of {} bytes, pitch {}, from byte {}", self.height, self.width, self.pitch, self.start)
        }
    }
}

/// Who holds a host region a task conflicts with ([`Error::HostConflict`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConflictHolder {
    /// A submitted task that has not ended.
    Task(TaskId),
    /// A live read guard ([`HostBuffer::read`](crate::HostBuffer::read)).
    ReadGuard,
    /// A live write guard ([`HostBuffer::write`](crate::HostBuffer::write)).
    WriteGuard,
    /// A recorded graph's runs, queued or running
    /// ([`RecordedGraph::run`](crate::graph::RecordedGraph::run)).
    #[cfg(feature = "replay")]
    RecordedRun,
}

impl std::fmt::Display for ConflictHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConflictHolder::Task(t) => write!(f, "in-flight task {t}"),
            ConflictHolder::ReadGuard => f.write_str("a live read guard (HostBuffer::read)"),
            ConflictHolder::WriteGuard => f.write_str("a live write guard (HostBuffer::write)"),
            #[cfg(feature = "replay")]
            ConflictHolder::RecordedRun => f.write_str("a recorded graph's run in flight (RecordedGraph::run)"),
        }
    }
}
/// Turns a caught panic's payload into a message.
pub(crate) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    format!("panicked: {}", panic_text(payload))
}

/// A caught panic's own text (what `panic!` was given), or a placeholder where the
/// payload is not a string.
pub(crate) fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".to_string())
}
