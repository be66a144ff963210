//! What the dispatchers record for the batch's report: one recorder per GPU, which
//! only that GPU's dispatcher writes (and `synchronize` takes), beside the two logs the
//! GPUs and the scheduler share (the adaptation's changes, the kernels launched);
//! merged at `synchronize`.

use crate::report::{Adapted, CommandRecord, DispatchStats, KernelUse};
use parking_lot::Mutex;

/// One GPU's records since the last `synchronize`, and its kernel capacity in force.
#[derive(Debug, Default)]
pub(crate) struct GpuRecorder {
    pub(crate) timeline: Vec<CommandRecord>,
    pub(crate) stats: DispatchStats,
    /// The kernel stage's capacity in GPU-fills in force now, where the stage is
    /// counted by fill (the adaptation moves it), for the report's kernel lines.
    pub(crate) kernel_fills: Option<f64>,
}

/// The report's recorders.
#[derive(Debug)]
pub(crate) struct Recorders {
    pub(crate) gpus: Vec<Mutex<GpuRecorder>>,
    /// The adaptation's changes since the last `synchronize`, in the order made.
    pub(crate) adaptations: Mutex<Vec<Adapted>>,
    /// Every kernel launched so far and the fill of its launches.
    pub(crate) kernels: Mutex<KernelUses>,
}

/// Every kernel launched so far, and how many times that list changed (the report's
/// lines about them are made again only then).
#[derive(Debug, Default)]
pub(crate) struct KernelUses {
    pub(crate) uses: Vec<KernelUse>,
    pub(crate) changes: u64,
}

impl Recorders {
    /// Recorders for `gpus` GPUs whose kernel capacity starts at `kernel_fills`.
    pub(crate) fn new(gpus: usize, kernel_fills: Option<f64>) -> Recorders {
        Recorders {
            gpus: (0..gpus).map(|_| Mutex::new(GpuRecorder { kernel_fills, ..GpuRecorder::default() })).collect(),
            adaptations: Mutex::new(Vec::new()),
            kernels: Mutex::new(KernelUses::default()),
        }
    }

    /// Takes the batch's command records (GPU after GPU) and its dispatch counts, summed.
    pub(crate) fn take_batch(&self) -> (Vec<CommandRecord>, DispatchStats) {
        let mut records = Vec::new();
        let mut stats = DispatchStats::default();
        for g in &self.gpus {
            let mut g = g.lock();
            records.append(&mut g.timeline);
            stats.add(&std::mem::take(&mut g.stats));
        }
        (records, stats)
    }

    /// The kernel capacity in force now: the largest of the GPUs' (each GPU's own
    /// adaptation is listed among the changes).
    pub(crate) fn kernel_fills_now(&self) -> Option<f64> {
        self.gpus.iter().filter_map(|g| g.lock().kernel_fills).reduce(f64::max)
    }
}
