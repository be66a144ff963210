//! Choosing a core for each dispatcher: distinct cores, near the GPU when the PCI
//! topology lists the GPU's local CPUs (`/sys/bus/pci/devices/*/local_cpulist`).

use crate::backend::GpuInfo;

/// Parses a Linux CPU list such as `0-31,64-95`.
pub(crate) fn parse_cpulist(s: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.trim().parse::<usize>().ok()),
        }
    }
    cpus
}

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

#[cfg(test)]
mod test {
    #[test]
    fn cpulists() {
        assert_eq!(super::parse_cpulist("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert!(super::parse_cpulist("").is_empty());
    }
}
