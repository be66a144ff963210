//! Why a command could not become its device operations, or one of them failed where
//! it ran on the host ([`OpFailure`]): what lowering (`task::lower`), a kernel's CPU
//! twin and a GPU callback report, and the caught failure of a callback or twin
//! ([`CallbackFailure`]). Each variant names what failed with its values; it is written
//! out once, where it becomes a task's fault (`backend::Fault`). Beside the operations
//! (`backend::op`), below the backend and the callbacks that both name these.

/// Why a callback (or a kernel's CPU twin) did not return `Ok`: the error it returned,
/// or the text of its panic (`callback::run_caught` catches both). It crosses threads
/// as this value (to the dispatcher, from an executioner) and is written out once,
/// where a task's failure is made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallbackFailure {
    /// It returned this error (the callbacks' `BoxError`).
    #[error("{0}")]
    Returned(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// It panicked with this text.
    #[error("panicked: {0}")]
    Panicked(String),
}

/// Why a command's operation could not be made or run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpFailure {
    /// A launch has more arguments than a launch takes.
    #[error("{given} kernel arguments; at most {max} are supported")]
    TooManyArgs {
        /// The launch's arguments.
        given: usize,
        /// What a launch takes (`op::MAX_PARAMS`).
        max: usize,
    },
    /// A launch on CUDA names a buffer whose memory is simulated.
    #[error("simulated buffer passed to a CUDA kernel")]
    SimBufferOnCuda,
    /// A resident argument, or a fetch's buffer, has no copy on the launch's GPU.
    #[error("resident buffer without a copy on this GPU")]
    NoResidentCopy,
    /// A fetch's source GPU no longer holds the copy its plan names.
    #[error("resident source copy gone")]
    SourceCopyGone,
    /// A fetch's plan names host bytes past the end of the buffer's host shadow.
    #[error("resident shadow too short")]
    ShadowShort,
    /// A resident argument's range is out of bounds (refused when the launch is added;
    /// the text is the one that refusal gives).
    #[error("{0}")]
    ArgRange(String),
    /// A sim launch names a buffer (or a resident copy) whose memory is not simulated.
    #[error("{what} is not simulated memory")]
    NotSimMemory {
        /// `device buffer` or `resident copy`.
        what: &'static str,
    },
    /// A copy's device buffer has no memory on the GPU the copy runs on.
    #[error("a copy's device buffer has no copy on this GPU")]
    NoDeviceCopy,
    /// The GPU callback was taken by an earlier lowering: it runs once.
    #[error("GPU callback already ran")]
    CallbackRan,
    /// A GPU callback was asked for where commands are lowered without being taken (a
    /// replay window).
    #[error("a GPU callback is taken to run, not shared")]
    CallbackShared,
    /// A CPU callback was lowered for a GPU.
    #[error("CPU callbacks do not run on a GPU")]
    CpuOnGpu,
    /// A fetch was lowered as a plain command (fetches are lowered where planned).
    #[error("a fetch is lowered where it is planned")]
    FetchUnplanned,
    /// A replay window holds a command that a graph does not take.
    #[error("a replayed task holds a command a graph does not take")]
    NotReplayable,
    /// The sim was asked to run a kernel that has no CPU twin.
    #[error("kernel has no CPU twin")]
    NoTwin,
    /// A kernel's CPU twin returned an error or panicked.
    #[error("CPU twin of `{kernel}`: {failure}")]
    Twin {
        /// The kernel's name.
        kernel: String,
        /// What the twin returned, or its panic.
        failure: CallbackFailure,
    },
    /// A GPU callback returned an error or panicked (its text, as the callback gave it).
    #[error(transparent)]
    Callback(#[from] CallbackFailure),
}
