//! Choosing a core for each dispatcher: distinct cores, near the GPU when the PCI
//! topology lists the GPU's local CPUs (`/sys/bus/pci/devices/*/local_cpulist`, which
//! the CUDA backend reads into [`GpuInfo::local_cpus`]).

use crate::backend::device::GpuInfo;

/// One core per GPU (`None`: leave the thread unpinned), after leaving `skip` cores of
/// the same choice to processes before this one on the host (each rank of a cluster
/// picks the cores its predecessors on the host did not).
pub(crate) fn choose(gpus: &[GpuInfo], pin: bool, skip: usize) -> Vec<Option<core_affinity::CoreId>> {
    if !pin {
        return vec![None; gpus.len()];
    }
    let available = core_affinity::get_core_ids().unwrap_or_default();
    let mut taken: Vec<usize> = Vec::new();
    // The cores the earlier processes took, chosen as they chose them (from the first
    // GPU's list, as theirs are alike on one host).
    if let Some(first) = gpus.first() {
        let near = first.local_cpus.clone().unwrap_or_default();
        let order: Vec<usize> = near.iter().rev().copied().chain(available.iter().rev().map(|c| c.id)).collect();
        for id in order {
            if taken.len() >= skip {
                break;
            }
            if !taken.contains(&id) && available.iter().any(|c| c.id == id) {
                taken.push(id);
            }
        }
    }
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
