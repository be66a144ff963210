//! The K = 4 pipeline stages of a task (paper §3.1) and the rules that gate them:
//! which stages may overlap on one GPU ([`OverlapMatrix`]), how many commands a stage
//! may run at once ([`Thresholds`]), and the shared per-stage request queues P_k.

pub(crate) mod adaptation;
mod overlap;
pub(crate) mod queues;
mod thresholds;
pub(crate) mod tuning;

pub use overlap::OverlapMatrix;
pub use thresholds::Thresholds;
pub use tuning::{Choice, Tuning};

use serde::Serialize;

/// A pipeline stage: every command of a task belongs to exactly one.
///
/// ```
/// use chariot::Stage;
/// assert_eq!(Stage::Download.index(), 1);
/// assert_eq!(Stage::ALL.len(), Stage::K);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Stage {
    /// CPU callbacks (file I/O, parsing, planning), run by executioner threads.
    Cpu = 0,
    /// Host-to-device copies (1-D and 2-D).
    Download = 1,
    /// Kernel launches and GPU callbacks (library calls such as cuFFT).
    Kernel = 2,
    /// Device-to-host copies (1-D and 2-D).
    Readback = 3,
}

impl Stage {
    /// Number of stages, the paper's K.
    pub const K: usize = 4;
    /// All stages in pipeline order.
    pub const ALL: [Stage; 4] = [Stage::Cpu, Stage::Download, Stage::Kernel, Stage::Readback];

    /// Position of the stage in [`Stage::ALL`] (0-based; the paper counts from 1).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Short lower-case name, as used in reports and traces.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Cpu => "cpu",
            Stage::Download => "download",
            Stage::Kernel => "kernel",
            Stage::Readback => "readback",
        }
    }

    /// Whether commands of this stage run on the GPU (on a CUDA stream).
    pub const fn on_gpu(self) -> bool {
        !matches!(self, Stage::Cpu)
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
