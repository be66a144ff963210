//! What a scheduler tells about itself: its backend and GPUs, the configuration in
//! force (S, thresholds, the automatic choice, overlap matrices, buses), the sim's
//! modeled rates and device memory in use.

use super::Scheduler;
use crate::backend::device::GpuInfo;
use crate::stage::Thresholds;
use std::sync::atomic::Ordering;

impl Scheduler {
    /// `cuda` or `sim`.
    pub fn backend_name(&self) -> &'static str {
        self.machine.name()
    }

    /// D, the number of GPUs.
    pub fn gpu_count(&self) -> usize {
        self.machine.gpus().len()
    }

    /// What each GPU is (name, engines, architecture).
    pub fn gpu_info(&self) -> &[GpuInfo] {
        self.machine.gpus()
    }

    /// The GPUs still in the rotation (indices in the scheduler's list). A GPU whose
    /// context hit a sticky error leaves it for good; see `docs/faults.md`.
    pub fn live_gpus(&self) -> Vec<usize> {
        (0..self.gpu_count()).filter(|&g| self.shared.alive[g].load(Ordering::SeqCst)).collect()
    }

    /// S, streams per GPU.
    pub fn streams(&self) -> usize {
        self.config.streams
    }

    /// The thresholds in force: the hard caps L and G that no stage exceeds (the
    /// adaptation moves the limits below them; see [`tuning`](Scheduler::tuning)).
    pub fn thresholds(&self) -> Thresholds {
        self.config.thresholds
    }

    /// How tasks reach the GPU: host dispatch, replay as graphs, or the choice per
    /// batch (see [`Execution`](crate::Execution)).
    pub fn execution(&self) -> crate::Execution {
        self.config.execution
    }

    /// What `build` chose for each knob left unset, and why (see [`Tuning`](crate::stage::Tuning)).
    pub fn tuning(&self) -> &crate::stage::Tuning {
        &self.config.tuning
    }

    /// The overlap matrix of GPU `gpu`.
    pub fn overlap_matrix(&self, gpu: usize) -> Option<crate::stage::OverlapMatrix> {
        self.config.matrices.get(gpu).copied()
    }

    /// On the sim backend, the rates its model moves bytes at (bytes per ns of real
    /// time): one GPU's link alone, and the host with every GPU of this scheduler
    /// copying at once. No copy runs faster, so bounds built on them hold (the
    /// [`HardwareBound`](crate::report::HardwareBound)s take them). `None` on CUDA, where rates
    /// must be measured, and on a sim without modeled time.
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// use chariot::report::LinkRates;
    /// use chariot::sim::SimProfile;
    /// let s = Scheduler::builder().backend(Backend::SimWith(SimProfile::h100().with_time_scale(2.0))).gpus(2).build()?;
    /// let (link, host) = s.modeled_rates().unwrap();
    /// assert_eq!(link, LinkRates { up: 27.5, down: 27.5, both: 45.0 });
    /// assert_eq!(host, link.times(2.0));
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn modeled_rates(&self) -> Option<(crate::report::LinkRates, crate::report::LinkRates)> {
        self.machine.modeled_rates()
    }

    /// Host buses B in force.
    pub fn buses(&self) -> usize {
        self.config.buses
    }

    /// Device memory in use on `gpu` now, in bytes, where the backend can tell.
    pub fn device_memory_in_use(&self, gpu: usize) -> Option<u64> {
        (gpu < self.gpu_count()).then(|| self.machine.memory_in_use(gpu)).flatten()
    }
}
