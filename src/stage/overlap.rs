//! The K×K overlap matrix M of paper §5.3: `M[a][b]` says whether a command at stage
//! `a` may start on a GPU while a command at stage `b` runs there. It is symmetric and
//! built from hardware inspection, so the dispatcher never asks the driver.

use super::Stage;

/// Which pairs of stages may run at the same time on one GPU.
///
/// With one copy engine (`CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT` = 1) a download and a
/// readback share the DMA engine and never overlap; with two or more they may. Two
/// kernels overlap only where the device runs kernels concurrently. CPU callbacks
/// overlap everything.
///
/// ```
/// use chariot::Stage;
/// use chariot::tuning::OverlapMatrix;
/// let geforce = OverlapMatrix::from_hardware(1, true);
/// assert!(!geforce.allows(Stage::Download, Stage::Readback));
/// let hopper = OverlapMatrix::from_hardware(3, true);
/// assert!(hopper.allows(Stage::Download, Stage::Readback));
/// assert!(hopper.allows(Stage::Cpu, Stage::Kernel));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverlapMatrix {
    m: [[bool; Stage::K]; Stage::K],
}

impl OverlapMatrix {
    /// Every pair may overlap (only the thresholds limit concurrency).
    pub const fn all() -> Self {
        OverlapMatrix { m: [[true; Stage::K]; Stage::K] }
    }

    /// The matrix the paper derives from a device's copy-engine count and its
    /// concurrent-kernel flag.
    pub fn from_hardware(copy_engines: u32, concurrent_kernels: bool) -> Self {
        let mut m = Self::all();
        if copy_engines <= 1 {
            m.set(Stage::Download, Stage::Readback, false);
        }
        if !concurrent_kernels {
            m.set(Stage::Kernel, Stage::Kernel, false);
        }
        m
    }

    /// Sets whether stages `a` and `b` may overlap (both orders: M stays symmetric).
    pub fn set(&mut self, a: Stage, b: Stage, may_overlap: bool) {
        self.m[a.index()][b.index()] = may_overlap;
        self.m[b.index()][a.index()] = may_overlap;
    }

    /// Whether a command at stage `a` may start while one at stage `b` runs.
    pub fn allows(&self, a: Stage, b: Stage) -> bool {
        self.m[a.index()][b.index()]
    }

    /// Conditions (a) and (b) of §5.3: nothing runs, or everything that runs
    /// (`running[k]` commands at stage k on this GPU) may overlap with `stage`.
    pub fn can_overlap(&self, stage: Stage, running: &[usize; Stage::K]) -> bool {
        Stage::ALL.iter().all(|&other| running[other.index()] == 0 || self.allows(stage, other))
    }
}
