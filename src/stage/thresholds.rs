//! The local and global threshold vectors L and G of paper §5.3: at most `L_k` commands
//! of stage k run at once on one GPU, at most `G_k` on all GPUs together.

use super::Stage;

/// Threshold vectors L (per GPU) and G (all GPUs), indexed by [`Stage::index`].
///
/// The paper's defaults are `L = (min(C,S), 1, 1, 1)` and `G = (min(C,D·S), B, D, B)`
/// with C CPU cores, S streams per GPU, D GPUs and B host buses.
///
/// ```
/// use chariot::Stage;
/// use chariot::tuning::Thresholds;
/// let t = Thresholds::paper(16, 4, 2, 2);
/// assert_eq!(t.local, [4, 1, 1, 1]);
/// assert_eq!(t.global, [8, 2, 2, 2]);
/// // "depth 2": a stage may hold a second command queued behind the running one.
/// let d = t.with_depth(2);
/// assert_eq!(d.local[Stage::Kernel.index()], 2);
/// assert_eq!(d.global[Stage::Download.index()], 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// L: the most commands of each stage one GPU's dispatcher may have running.
    pub local: [usize; Stage::K],
    /// G: the most commands of each stage running on all GPUs together.
    pub global: [usize; Stage::K],
}

impl Thresholds {
    /// The paper's defaults for `cores` CPU cores, `streams` streams per GPU, `gpus`
    /// GPUs and `buses` host buses.
    pub fn paper(cores: usize, streams: usize, gpus: usize, buses: usize) -> Self {
        Thresholds { local: [cores.min(streams), 1, 1, 1], global: [cores.min(gpus * streams), buses, gpus, buses] }
    }

    /// The same thresholds with every GPU stage allowed `depth` commands where it
    /// allowed one: the second waits in the hardware queue behind the first, which
    /// hides the time of idle detection between two commands of a stage.
    pub fn with_depth(mut self, depth: usize) -> Self {
        for stage in [Stage::Download, Stage::Kernel, Stage::Readback] {
            let k = stage.index();
            self.local[k] = self.local[k].saturating_mul(depth);
            self.global[k] = self.global[k].saturating_mul(depth);
        }
        self
    }

    /// Condition (c) of §5.3 for the local counter.
    pub fn local_allows(&self, stage: Stage, running_here: usize) -> bool {
        running_here < self.local[stage.index()]
    }
}
