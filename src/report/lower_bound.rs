//! Lower bounds on the makespan.
//!
//! [`LowerBound`] is the paper's Appendix C, kept exactly as written for comparison
//! with its figures: `T_LB = min(T1, T2)` with `T1 = Σ(d_i + r_i)/B` (transfer-bound)
//! and `T2 = T_head + T_body + T_tail`, `T_body = Σk_i/D`, `T_head` the ⌈D/B⌉ smallest
//! downloads, `T_tail` the smallest readback. (Taking the min of two bounds makes a
//! weaker bound than the max would; that is the paper's choice.)
//!
//! [`HardwareBound`] treats each engine of each GPU as its own resource, which is how
//! today's GPUs (one link per GPU, separate upload and download engines) behave.

use super::CommandRecord;
use crate::stage::Stage;
use crate::task::TaskId;
use serde::Serialize;
use std::collections::HashMap;

/// Per task: (granularity, d_i, k_i, r_i) in ns, from the records.
pub(crate) fn per_task(records: &[CommandRecord]) -> Vec<(u64, u64, u64, u64)> {
    let mut m: HashMap<TaskId, (u64, u64, u64, u64)> = HashMap::new();
    for r in records {
        let e = m.entry(r.task).or_insert((r.granularity, 0, 0, 0));
        match r.stage {
            Stage::Download => e.1 += r.duration_ns(),
            Stage::Kernel => e.2 += r.duration_ns(),
            Stage::Readback => e.3 += r.duration_ns(),
            Stage::Cpu => {}
        }
    }
    let mut v: Vec<_> = m.into_values().collect();
    // Ascending size, as Appendix C assumes (granularity, then the task's own times).
    v.sort_unstable();
    v
}

/// The paper's bound (Appendix C), all times in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LowerBound {
    /// T1 = Σ(d_i + r_i)/B.
    pub t1_ns: u64,
    /// T2 = T_head + T_body + T_tail.
    pub t2_ns: u64,
    /// T_LB = min(T1, T2).
    pub t_lb_ns: u64,
}

impl LowerBound {
    /// The bound for the measured `records` on `gpus` GPUs and `buses` buses.
    ///
    /// ```
    /// use chariot::LowerBound;
    /// let b = LowerBound::from_times(&[(1, 10, 30, 10), (2, 10, 30, 10)], 1, 1);
    /// assert_eq!(b.t1_ns, 40);          // all transfers on one bus
    /// assert_eq!(b.t2_ns, 10 + 60 + 10); // head + kernels + tail
    /// assert_eq!(b.t_lb_ns, 40);
    /// ```
    pub fn paper(records: &[CommandRecord], gpus: usize, buses: usize) -> Self {
        Self::from_times(&per_task(records), gpus, buses)
    }

    /// The bound from per-task `(size, d_i, k_i, r_i)` in ns.
    pub fn from_times(tasks: &[(u64, u64, u64, u64)], gpus: usize, buses: usize) -> Self {
        if tasks.is_empty() {
            return LowerBound::default();
        }
        let mut tasks = tasks.to_vec();
        tasks.sort_unstable();
        let (d, b) = (gpus.max(1) as u64, buses.max(1) as u64);
        let t1 = tasks.iter().map(|t| t.1 + t.3).sum::<u64>() / b;
        let head_n = (d.div_ceil(b)) as usize;
        let head: u64 = tasks.iter().take(head_n).map(|t| t.1).sum();
        let body = tasks.iter().map(|t| t.2).sum::<u64>() / d;
        let tail = tasks[0].3;
        let t2 = head + body + tail;
        LowerBound { t1_ns: t1, t2_ns: t2, t_lb_ns: t1.min(t2) }
    }
}

/// Sustained rates of one GPU's link, bytes per nanosecond (= GB/s).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LinkRates {
    /// Host to device alone.
    pub up: f64,
    /// Device to host alone.
    pub down: f64,
    /// Both directions together, when both run at once.
    pub both: f64,
}

/// One task's work for [`HardwareBound`]: bytes each way and kernel time alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TaskWork {
    /// Bytes downloaded.
    pub up_bytes: u64,
    /// Nanoseconds of kernel work.
    pub kernel_ns: u64,
    /// Bytes read back.
    pub down_bytes: u64,
}

/// A makespan bound for one GPU with separate upload, download and compute engines and
/// a link whose two directions share `both` bytes/ns when both run. It is the largest of:
///
/// * each engine's work plus what must precede and follow it: uploads + k_min + r_min;
///   d_min + kernels + r_min; d_min + k_min + readbacks;
/// * the link: no readback can start before d_min + k_min (only uploads move, at most at
///   `up`), and no upload can run in the last k_min + r_min (only readbacks, at most at
///   `down`); everything else moves at most at `both`. With N ≥ 2 tasks on one compute
///   engine the two end phases cannot overlap, so
///   `T ≥ a + z + (U + R − up·a − down·z) / both` with `a = d_min + k_min`,
///   `z = k_min + r_min`.
///
/// Valid for any schedule given the rates (measured, sustained); the README derives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HardwareBound {
    /// The bound, ns.
    pub t_ns: u64,
    /// Which resource sets it: `upload`, `compute`, `download` or `link`.
    pub limit: &'static str,
}

impl HardwareBound {
    /// The bound for `tasks` on one GPU with link `rates`.
    ///
    /// ```
    /// use chariot::{HardwareBound, LinkRates, TaskWork};
    /// // 48 equal tasks of 100 bytes at 1 byte/ns each way, kernels of 100 ns, and a
    /// // link that carries both ways at once at full speed: (N + 2) · 100 ns.
    /// let t = vec![TaskWork { up_bytes: 100, kernel_ns: 100, down_bytes: 100 }; 48];
    /// let b = HardwareBound::one_gpu(&t, LinkRates { up: 1.0, down: 1.0, both: 2.0 });
    /// assert_eq!(b.t_ns, 5000);
    /// ```
    pub fn one_gpu(tasks: &[TaskWork], rates: LinkRates) -> Self {
        if tasks.is_empty() || !(rates.up > 0.0 && rates.down > 0.0 && rates.both > 0.0) {
            return HardwareBound::default();
        }
        let d: Vec<f64> = tasks.iter().map(|t| t.up_bytes as f64 / rates.up).collect();
        let r: Vec<f64> = tasks.iter().map(|t| t.down_bytes as f64 / rates.down).collect();
        let k: Vec<f64> = tasks.iter().map(|t| t.kernel_ns as f64).collect();
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        let (md, mk, mr) = (min(&d), min(&k), min(&r));
        let mut candidates =
            vec![(sum(&d) + mk + mr, "upload"), (md + sum(&k) + mr, "compute"), (md + mk + sum(&r), "download")];
        let total: f64 = tasks.iter().map(|t| (t.up_bytes + t.down_bytes) as f64).sum();
        let both = rates.both.max(rates.up).max(rates.down);
        let link = if tasks.len() >= 2 {
            let (a, z) = (md + mk, mk + mr);
            a + z + ((total - rates.up * a - rates.down * z) / both).max(0.0)
        } else {
            md + mk + mr
        };
        candidates.push((link, "link"));
        let (t, limit) = candidates.into_iter().fold((0.0, "none"), |best, c| if c.0 > best.0 { c } else { best });
        HardwareBound { t_ns: t.ceil() as u64, limit }
    }
}
