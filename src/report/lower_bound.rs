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

/// A bound that holds on a GPU with separate upload, download and compute engines and
/// its own link: no schedule beats the busiest engine plus what must come before and
/// after it, nor the link moving all bytes at its both-ways rate.
///
/// Inputs are per-task times measured alone (no contention): `d_i`, `k_i`, `r_i`, and
/// the link's both-ways rate as a factor `duplex` = (rate both ways at once) / (sum of
/// the one-way rates), 1.0 when the directions do not slow each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HardwareBound {
    /// The bound, ns.
    pub t_ns: u64,
    /// Which resource sets it: `upload`, `compute`, `download` or `link`.
    pub limit: &'static str,
}

impl HardwareBound {
    /// The bound for one GPU from per-task `(d_i, k_i, r_i)` in ns.
    ///
    /// ```
    /// use chariot::HardwareBound;
    /// // 48 equal tasks, every stage 100 ns: (N + 2) · 100 = 5000 ns.
    /// let b = HardwareBound::one_gpu(&vec![(100, 100, 100); 48], 1.0);
    /// assert_eq!(b.t_ns, 5000);
    /// ```
    pub fn one_gpu(tasks: &[(u64, u64, u64)], duplex: f64) -> Self {
        if tasks.is_empty() {
            return HardwareBound::default();
        }
        let sum = |f: fn(&(u64, u64, u64)) -> u64| tasks.iter().map(f).sum::<u64>();
        let min = |f: fn(&(u64, u64, u64)) -> u64| tasks.iter().map(f).min().unwrap_or(0);
        let (sd, sk, sr) = (sum(|t| t.0), sum(|t| t.1), sum(|t| t.2));
        let (md, mk, mr) = (min(|t| t.0), min(|t| t.1), min(|t| t.2));
        // Uploads: nothing before the first, the last task's kernel and readback after.
        let upload = sd + mk + mr;
        // Compute: a download before the first kernel, a readback after the last.
        let compute = md + sk + mr;
        // Downloads: a download and a kernel before the first readback.
        let download = md + mk + sr;
        // The link: all bytes at the both-ways rate, except what runs alone at the ends.
        let duplex = duplex.clamp(0.5, 1.0);
        let link = (md + mr) + (((sd - md) + (sr - mr)) as f64 * 0.5 / duplex) as u64;
        let link = link.max(md + mr);
        let candidates = [(upload, "upload"), (compute, "compute"), (download, "download"), (link, "link")];
        let (t_ns, limit) = candidates.into_iter().max_by_key(|c| c.0).unwrap_or((0, "none"));
        HardwareBound { t_ns, limit }
    }
}
