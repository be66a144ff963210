//! Choosing a core for each dispatcher: distinct cores, near the GPU when the PCI
//! topology lists the GPU's local CPUs (`/sys/bus/pci/devices/*/local_cpulist`, which
//! the CUDA backend reads into [`GpuInfo::local_cpus`]).

use crate::backend::device::GpuInfo;

/// One core per GPU (`None`: leave the thread unpinned).
pub(crate) fn choose(gpus: &[GpuInfo], pin: bool) -> Vec<Option<core_affinity::CoreId>> {
    if !pin {
        return vec![None; gpus.len()];
    }
    let available = core_affinity::get_core_ids().unwrap_or_default();
    let mut taken: Vec<usize> = Vec::new();
    gpus.iter()
        .map(|g| {
            // Highest-numbered first: core 0 (and the low cores) usually carry the
            // host's interrupts and housekeeping, which would preempt a spinning dispatcher.
            let near = g.local_cpus.clone().unwrap_or_default();
            let pick = near
                .iter()
                .rev()
                .copied()
                .chain(available.iter().rev().map(|c| c.id))
                .find(|id| !taken.contains(id) && available.iter().any(|c| c.id == *id));
            pick.map(|id| {
                taken.push(id);
                core_affinity::CoreId { id }
            })
        })
        .collect()
}
