//! Why a command failed on a simulated GPU ([`SimFailure`]): a modeled time past what
//! the simulated clock can count, an injected fault, a stopped engine, or the twin's or
//! callback's own failure. Each names what failed with its values; it is written out
//! once, where it becomes the command's fault (`backend::Fault`).

use crate::backend::op_failure::{CallbackFailure, OpFailure};
use crate::ids::TaskId;
use std::time::Duration;

/// Why a command failed on a simulated GPU.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SimFailure {
    /// A command's modeled time, scaled, ends past what the clock can count.
    #[error(
        "{what}: modeled time {modeled:?} × {factor} (time_scale × slowdown) ends past what the simulated clock can \
         count"
    )]
    PastClock {
        /// What was held for the time.
        what: Held,
        /// The modeled time, unscaled.
        modeled: Duration,
        /// The scale it took (`time_scale` × the GPU's slowdown).
        factor: f64,
    },
    /// A kernel's end, on the SMs the kernels before it leave, is past what the clock
    /// can count.
    #[error("`{kernel}`: kernel: its modeled end is past what the simulated clock can count")]
    KernelEnd {
        /// The kernel's name.
        kernel: String,
    },
    /// A copy's end, at the link's modeled rate, is past what the clock can count.
    #[error("copy of {bytes} modeled bytes: its modeled end is past what the simulated clock can count")]
    CopyEnd {
        /// The bytes the link model moves (scaled by the slowdown).
        bytes: f64,
    },
    /// A replay window was handed to an engine as a command of a window.
    #[error("a window inside a window")]
    WindowInWindow,
    /// The GPU died (an injected death or loss).
    #[error("simulated GPU {gpu} lost (injected fault)")]
    Lost {
        /// The GPU.
        gpu: usize,
    },
    /// An injected crash: the command takes its GPU down.
    #[error("simulated illegal address in command {command} of task {task} (injected fault)")]
    IllegalAddress {
        /// The task.
        task: TaskId,
        /// The command's index in it.
        command: usize,
    },
    /// An injected failure of the command alone.
    #[error("command {command} of task {task} failed (injected fault)")]
    Injected {
        /// The task.
        task: TaskId,
        /// The command's index in it.
        command: usize,
    },
    /// The GPU's engine threads have stopped: nothing more can be sent to them.
    #[error("simulated GPU {gpu} engine stopped")]
    EngineStopped {
        /// The GPU.
        gpu: usize,
    },
    /// The command's operation failed (its CPU twin, or what it names).
    #[error(transparent)]
    Op(#[from] OpFailure),
    /// A GPU callback returned an error or panicked.
    #[error(transparent)]
    Callback(#[from] CallbackFailure),
}

/// What an engine holds for a modeled time ([`SimFailure::PastClock`]).
#[derive(Debug)]
pub(crate) enum Held {
    /// A replay window's graph launch latency.
    GraphLaunch,
    /// One copy.
    Copy,
    /// A resident fetch (several copies, or a peer copy, an upload or a fill).
    Fetch,
    /// The peer-link time of a fetch's peer copies.
    PeerCopy,
    /// A GPU callback's latency.
    GpuCallback,
    /// A kernel launch, by the kernel's name.
    Kernel(String),
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Held::GraphLaunch => f.write_str("graph launch"),
            Held::Copy => f.write_str("copy"),
            Held::Fetch => f.write_str("fetch"),
            Held::PeerCopy => f.write_str("peer copy"),
            Held::GpuCallback => f.write_str("GPU callback"),
            Held::Kernel(name) => write!(f, "kernel `{name}`"),
        }
    }
}
