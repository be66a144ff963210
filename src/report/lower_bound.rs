//! Lower bounds on the makespan.
//!
//! [`LowerBound`] is the paper's Appendix C, kept exactly as written for comparison
//! with its figures: `T_LB = min(T1, T2)` with `T1 = Σ(d_i + r_i)/B` (transfer-bound)
//! and `T2 = T_head + T_body + T_tail`, `T_body = Σk_i/D`, `T_head` the ⌈D/B⌉ smallest
//! downloads, `T_tail` the smallest readback. (Taking the min of two bounds makes a
//! weaker bound than the max would; that is the paper's choice.) On today's GPUs it is
//! an estimate, not a bound, and it is shown as "the paper's estimate": T1 assumes the
//! two copy directions never overlap, and T2 adds up kernels that run side by side, so
//! a run can end before T_LB (ε < 0).
//!
//! [`HardwareBound`] treats each engine of each GPU as its own resource, which is how
//! today's GPUs (one link per GPU, separate upload and download engines) behave:
//! [`HardwareBound::one_gpu`] for one GPU, [`HardwareBound::multi_gpu`] for D GPUs
//! whose links may share host buses.
//!
//! Any input gives a number: sums are taken wide (u128 for times, f64 for bytes) and a
//! bound past `u64::MAX` ns saturates there.

use super::CommandRecord;
use crate::ids::TaskId;
use crate::stage::Stage;
use serde::Serialize;

/// Per task: (granularity, d_i, k_i, r_i) in ns, from the records.
pub(crate) fn per_task(records: &[CommandRecord]) -> Vec<(u64, u64, u64, u64)> {
    let mut m: rustc_hash::FxHashMap<TaskId, (u64, u64, u64, u64)> = Default::default();
    m.reserve(records.len() / 2);
    for r in records {
        let e = m.entry(r.task).or_insert((r.granularity, 0, 0, 0));
        match r.stage {
            Stage::Download => e.1 = e.1.saturating_add(r.duration_ns()),
            Stage::Kernel => e.2 = e.2.saturating_add(r.duration_ns()),
            Stage::Readback => e.3 = e.3.saturating_add(r.duration_ns()),
            Stage::Cpu => {}
        }
    }
    m.into_values().collect()
}

/// The paper's T_LB (Appendix C), all times in ns. Its Display calls it what it is on
/// today's GPUs, an estimate (see the module's comment); the bound no run beats is
/// [`HardwareBound`].
///
/// Displayed as `the paper's estimate T_LB = 2.000 ms (T1 2.000, T2 3.000; not a bound)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
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
    /// use chariot::report::LowerBound;
    /// let b = LowerBound::from_times(&[(1, 10, 30, 10), (2, 10, 30, 10)], 1, 1);
    /// assert_eq!(b.t1_ns, 40);          // all transfers on one bus
    /// assert_eq!(b.t2_ns, 10 + 60 + 10); // head + kernels + tail
    /// assert_eq!(b.t_lb_ns, 40);
    /// ```
    pub fn paper(records: &[CommandRecord], gpus: usize, buses: usize) -> Self {
        Self::from_times(&per_task(records), gpus, buses)
    }

    /// The bound from per-task `(size, d_i, k_i, r_i)` in ns. Sums are exact (taken in
    /// u128); a bound past `u64::MAX` ns is `u64::MAX`.
    ///
    /// ```
    /// use chariot::report::LowerBound;
    /// let b = LowerBound::from_times(&[(1, u64::MAX, 1, 1), (2, 1, u64::MAX, 1)], 1, 1);
    /// assert_eq!(b.t_lb_ns, u64::MAX);
    /// ```
    pub fn from_times(tasks: &[(u64, u64, u64, u64)], gpus: usize, buses: usize) -> Self {
        if tasks.is_empty() {
            return LowerBound::default();
        }
        let mut tasks = tasks.to_vec();
        let (d, b) = (gpus.max(1) as u128, buses.max(1) as u128);
        let head_n = usize::try_from(d.div_ceil(b)).unwrap_or(usize::MAX).min(tasks.len());
        // Ascending size, as Appendix C assumes (granularity, then the task's own
        // times), where order counts: the head's tasks, the first of them the tail's.
        // The rest enter sums only, so they need not be sorted (`synchronize` waits
        // for this, and a batch may hold many thousands of tasks).
        tasks.select_nth_unstable(head_n - 1);
        tasks[..head_n].sort_unstable();
        // Sums in u128 cannot overflow (fewer than 2^63 tasks of times below 2^64).
        let sum = |f: fn(&(u64, u64, u64, u64)) -> u64, n: usize| -> u128 {
            tasks.iter().take(n).map(|t| f(t) as u128).sum()
        };
        let all = tasks.len();
        let t1: u128 = (sum(|t| t.1, all) + sum(|t| t.3, all)) / b;
        let head: u128 = sum(|t| t.1, head_n);
        let body = sum(|t| t.2, all) / d;
        let tail = tasks[0].3 as u128;
        let ns = |t: u128| u64::try_from(t).unwrap_or(u64::MAX);
        let (t1, t2) = (ns(t1), ns(head + body + tail));
        LowerBound { t1_ns: t1, t2_ns: t2, t_lb_ns: t1.min(t2) }
    }
}

impl std::fmt::Display for LowerBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        write!(
            f,
            "the paper's estimate T_LB = {:.3} ms (T1 {:.3}, T2 {:.3}; not a bound)",
            ms(self.t_lb_ns),
            ms(self.t1_ns),
            ms(self.t2_ns)
        )
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

impl LinkRates {
    /// The rates of `k` such links side by side, none sharing anything: what `k` GPUs
    /// on their own links move together (the host rates of [`HardwareBound::multi_gpu`]
    /// on a machine without shared buses).
    ///
    /// ```
    /// use chariot::report::LinkRates;
    /// let two = LinkRates { up: 50.0, down: 55.0, both: 90.0 }.times(2.0);
    /// assert_eq!(two, LinkRates { up: 100.0, down: 110.0, both: 180.0 });
    /// ```
    pub fn times(self, k: f64) -> LinkRates {
        LinkRates { up: self.up * k, down: self.down * k, both: self.both * k }
    }

    pub(crate) fn positive(&self) -> bool {
        self.up > 0.0 && self.down > 0.0 && self.both > 0.0
    }

    /// The larger of each rate here and in `other`: probed rates raised to what a run
    /// achieved (see [`LinkRates::observed`]), so that a bound taking them is one that
    /// run cannot beat.
    ///
    /// ```
    /// use chariot::report::LinkRates;
    /// let probe = LinkRates { up: 50.0, down: 55.0, both: 90.0 };
    /// let run = LinkRates { up: 52.0, down: 54.0, both: 0.0 };
    /// assert_eq!(probe.at_least(run), LinkRates { up: 52.0, down: 55.0, both: 90.0 });
    /// ```
    pub fn at_least(self, other: LinkRates) -> LinkRates {
        LinkRates { up: self.up.max(other.up), down: self.down.max(other.down), both: self.both.max(other.both) }
    }

    /// The fastest rates a run's copies sustained on one GPU's link: each direction, and
    /// both together, the most bytes moved in any window of the run (each copy's bytes
    /// spread evenly over its span), over the window's length. The window is four times
    /// the median copy (at least 100 µs): long enough that a span observed a few
    /// microseconds short or late (the dispatcher sees completions, not the engine's
    /// clock) changes the rate by a few per mille only, short enough to catch a burst.
    /// A bound that takes `probed.at_least(observed)` thus holds for the run: no run
    /// moves more in a window than it moved.
    ///
    /// ```
    /// use chariot::{Stage, TaskId};
    /// use chariot::report::{CommandRecord, LinkRates};
    /// let copy = |stage, start_ns, end_ns, bytes| {
    ///     let mut r = CommandRecord::new(TaskId(0), 0, stage, 0, 0, start_ns, end_ns);
    ///     r.bytes = bytes;
    ///     r
    /// };
    /// // Uploads at 50 bytes/ns back to back, readbacks at 40 beside them.
    /// let mut records = Vec::new();
    /// for i in 0..8u64 {
    ///     records.push(copy(Stage::Download, i * 100_000, (i + 1) * 100_000, 5_000_000));
    ///     records.push(copy(Stage::Readback, i * 100_000, (i + 1) * 100_000, 4_000_000));
    /// }
    /// let r = LinkRates::observed(&records);
    /// assert!((r.up - 50.0).abs() < 1e-9 && (r.down - 40.0).abs() < 1e-9 && (r.both - 90.0).abs() < 1e-9);
    /// ```
    pub fn observed(records: &[CommandRecord]) -> LinkRates {
        let mut gpus: Vec<u16> = copies(records).map(|r| r.gpu).collect();
        gpus.sort_unstable();
        gpus.dedup();
        let window = window_ns(records);
        gpus.into_iter().map(|g| windowed(records, Some(g), window)).fold(
            LinkRates { up: 0.0, down: 0.0, both: 0.0 },
            |a, b| LinkRates { up: a.up.max(b.up), down: a.down.max(b.down), both: a.both.max(b.both) },
        )
    }

    /// The same for the copies of all GPUs together: what the host carried at most in
    /// any window, each direction and both. `probed_host.at_least(observed_host)` gives
    /// host rates that a bound for the run may take.
    ///
    /// ```
    /// use chariot::{Stage, TaskId};
    /// use chariot::report::{CommandRecord, LinkRates};
    /// let copy = |gpu, start_ns, end_ns, bytes| {
    ///     let mut r = CommandRecord::new(TaskId(0), 0, Stage::Download, gpu, 0, start_ns, end_ns);
    ///     r.bytes = bytes;
    ///     r
    /// };
    /// // Two GPUs uploading at 50 and 40 bytes/ns at the same time.
    /// let records: Vec<_> = (0..8u64)
    ///     .flat_map(|i| [copy(0, i * 100_000, (i + 1) * 100_000, 5_000_000), copy(1, i * 100_000, (i + 1) * 100_000, 4_000_000)])
    ///     .collect();
    /// let r = LinkRates::observed_host(&records);
    /// assert!((r.up - 90.0).abs() < 1e-9 && r.down == 0.0);
    /// ```
    pub fn observed_host(records: &[CommandRecord]) -> LinkRates {
        windowed(records, None, window_ns(records))
    }
}

/// The copies of `records` that moved bytes over a span of time.
fn copies(records: &[CommandRecord]) -> impl Iterator<Item = &CommandRecord> {
    records.iter().filter(|r| r.bytes > 0 && !r.failed && r.end_ns > r.start_ns)
}

/// The window of [`LinkRates::observed`]: four median copies, at least 100 µs.
fn window_ns(records: &[CommandRecord]) -> u64 {
    let mut spans: Vec<u64> = copies(records).map(|r| r.duration_ns()).collect();
    spans.sort_unstable();
    spans.get(spans.len() / 2).map_or(100_000, |&m| (4 * m).max(100_000))
}

/// The most bytes per ns the copies of `gpu` (all GPUs for `None`) moved in any window
/// of `window` ns, each copy's bytes spread evenly over its span: uploads, readbacks,
/// and both together. Windows start at each copy's start and end at each copy's end,
/// where the sums change slope; a run shorter than a window is one window.
fn windowed(records: &[CommandRecord], gpu: Option<u16>, window: u64) -> LinkRates {
    let mine: Vec<&CommandRecord> = copies(records).filter(|r| gpu.is_none_or(|g| r.gpu == g)).collect();
    let (Some(first), Some(last)) = (mine.iter().map(|r| r.start_ns).min(), mine.iter().map(|r| r.end_ns).max()) else {
        return LinkRates { up: 0.0, down: 0.0, both: 0.0 };
    };
    let window = window.min(last - first).max(1);
    let starts = mine.iter().map(|r| r.start_ns).chain(mine.iter().map(|r| r.end_ns.saturating_sub(window)));
    let mut most = LinkRates { up: 0.0, down: 0.0, both: 0.0 };
    for t in starts.map(|t| t.clamp(first, last - window)) {
        let (mut up, mut down) = (0.0, 0.0);
        for r in &mine {
            let overlap = r.end_ns.min(t + window).saturating_sub(r.start_ns.max(t));
            let bytes = r.bytes as f64 * overlap as f64 / r.duration_ns() as f64;
            match r.stage {
                Stage::Download => up += bytes,
                _ => down += bytes,
            }
        }
        let w = window as f64;
        most.up = most.up.max(up / w);
        most.down = most.down.max(down / w);
        most.both = most.both.max((up + down) / w);
    }
    most
}

/// One task's work for [`HardwareBound`]: bytes each way and kernel time alone.
///
/// `kernel_ns` is the kernel's time on a whole GPU. Where kernels of one GPU can run
/// side by side (a kernel that fills only part of the SMs), give its time alone times
/// the share of the SMs it keeps busy: the bound adds the kernels of one GPU up.
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
/// Valid for any schedule given the rates (measured, sustained); `docs/bounds.md` derives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HardwareBound {
    /// The bound, ns.
    pub t_ns: u64,
    /// Which resource sets it: `upload`, `compute`, `download` or `link`.
    pub limit: &'static str,
}

impl std::fmt::Display for HardwareBound {
    /// `the bound T_hw = 5.000 ms (link)`: no run of the tasks at these rates ends
    /// sooner.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the bound T_hw = {:.3} ms ({})", self.t_ns as f64 / 1e6, self.limit)
    }
}

impl HardwareBound {
    /// The bound for `tasks` on one GPU with link `rates`.
    ///
    /// ```
    /// use chariot::report::{HardwareBound, LinkRates, TaskWork};
    /// // 48 equal tasks of 100 bytes at 1 byte/ns each way, kernels of 100 ns, and a
    /// // link that carries both ways at once at full speed: (N + 2) · 100 ns.
    /// let t = vec![TaskWork { up_bytes: 100, kernel_ns: 100, down_bytes: 100 }; 48];
    /// let b = HardwareBound::one_gpu(&t, LinkRates { up: 1.0, down: 1.0, both: 2.0 });
    /// assert_eq!(b.t_ns, 5000);
    /// assert_eq!(b.to_string(), "the bound T_hw = 0.005 ms (upload)"); // ties: the first named
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
        let total: f64 = tasks.iter().map(|t| t.up_bytes as f64 + t.down_bytes as f64).sum();
        let both = rates.both.max(rates.up).max(rates.down);
        let link = if tasks.len() >= 2 {
            let (a, z) = (md + mk, mk + mr);
            a + z + ((total - rates.up * a - rates.down * z) / both).max(0.0)
        } else {
            md + mk + mr
        };
        candidates.push((link, "link"));
        let (t, limit) = candidates.into_iter().fold((0.0, "none"), |best, c| if c.0 > best.0 { c } else { best });
        // `as` saturates: a bound past u64::MAX ns is u64::MAX.
        HardwareBound { t_ns: t.ceil() as u64, limit }
    }

    /// The bound for `tasks` on `gpus` GPUs, whatever GPU each task runs on: it bounds
    /// the best schedule, not only the one a run chose.
    ///
    /// `link` is one GPU's link alone (as for [`HardwareBound::one_gpu`]). `host` is
    /// what all `gpus` GPUs move together when they copy at once: totals over the
    /// machine up, down and both ways. On a machine where each GPU has its own link it
    /// is `link.times(gpus)`; where they share B host buses it is what those buses
    /// carry, measured with every GPU copying (the studies' `demo::probe_host_rates`).
    /// Host rates are taken within one link's (one GPU copying alone moves that much,
    /// so a probe that saw less was disturbed) and `gpus` links' worth.
    ///
    /// Assumptions: the GPUs are alike (a task's kernel takes as long on any of them
    /// and a kernel fills its GPU, so kernels of one GPU add up); each GPU has an
    /// upload, a download and a compute engine; the rates are sustained maxima (one
    /// direction moves at most `up` or `down`, both together at most `both`, on each
    /// link and, summed over the GPUs, on the host); a task's commands run in order.
    /// With `d_i, k_i, r_i` a task's upload, kernel and readback times alone,
    /// `a = d_min + k_min`, `z = k_min + r_min`, `U, R` the bytes each way and
    /// `W = U + R`, the bound is the largest of:
    ///
    /// * `task`: the longest task, `max(d_i + k_i + r_i)`;
    /// * `upload`, `compute`, `download`: the engines of one kind share their work, so
    ///   one of them does at least its D-th part: `Σd/D + k_min + r_min`,
    ///   `d_min + Σk/D + r_min`, `d_min + k_min + Σr/D`;
    /// * `host-up`, `host-down`: every upload ends by `T − z` and every readback
    ///   starts after `a`, at the host's rate: `U/host.up + z`, `a + R/host.down`;
    /// * `link`: some GPU moves `W_g ≥ W/D` bytes. If it runs two tasks or more, the
    ///   one-GPU link argument holds on its link: `a + z + (W/D − up·a − down·z)/both`;
    ///   if it runs one, that task carries `W/D` bytes or more and the makespan is at
    ///   least its chain. The smaller of the two cases bounds both;
    /// * `host`: with N > D tasks some GPU runs two, so `T ≥ a + z`; no readback
    ///   anywhere before `a`, no upload in the last `z`, and the host carries at most
    ///   `host.both` meanwhile: `a + z + (W − host.up·a − host.down·z)/host.both`.
    ///
    /// With `gpus = 1` and `host = link` it is [`HardwareBound::one_gpu`] or, where one
    /// task alone is longer, that task.
    ///
    /// ```
    /// use chariot::report::{HardwareBound, LinkRates, TaskWork};
    /// let t = vec![TaskWork { up_bytes: 100, kernel_ns: 100, down_bytes: 100 }; 48];
    /// let link = LinkRates { up: 1.0, down: 1.0, both: 2.0 };
    /// // Two GPUs on their own links: (N/2 + 2) · 100 ns.
    /// assert_eq!(HardwareBound::multi_gpu(&t, 2, link, link.times(2.0)).t_ns, 2600);
    /// // Two GPUs behind one bus that carries what one link does: no faster than one GPU.
    /// assert_eq!(HardwareBound::multi_gpu(&t, 2, link, link).t_ns, 5000);
    /// ```
    pub fn multi_gpu(tasks: &[TaskWork], gpus: usize, link: LinkRates, host: LinkRates) -> Self {
        if tasks.is_empty() || !link.positive() || !host.positive() {
            return HardwareBound::default();
        }
        let (n, g) = (tasks.len(), gpus.max(1));
        let dn = g as f64;
        let d: Vec<f64> = tasks.iter().map(|t| t.up_bytes as f64 / link.up).collect();
        let r: Vec<f64> = tasks.iter().map(|t| t.down_bytes as f64 / link.down).collect();
        let k: Vec<f64> = tasks.iter().map(|t| t.kernel_ns as f64).collect();
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        let (md, mk, mr) = (min(&d), min(&k), min(&r));
        let (a, z) = (md + mk, mk + mr);
        let chain: Vec<f64> = (0..n).map(|i| d[i] + k[i] + r[i]).collect();
        let up_bytes: f64 = tasks.iter().map(|t| t.up_bytes as f64).sum();
        let down_bytes: f64 = tasks.iter().map(|t| t.down_bytes as f64).sum();
        let w = up_bytes + down_bytes;
        // The host moves at least what one GPU alone does and at most what D links do.
        let both = link.both.max(link.up).max(link.down);
        let (hu, hd) = (host.up.clamp(link.up, dn * link.up), host.down.clamp(link.down, dn * link.down));
        let hb = host.both.clamp(both, dn * both).max(hu).max(hd);
        let mut candidates = vec![
            (chain.iter().copied().fold(0.0, f64::max), "task"),
            (sum(&d) / dn + mk + mr, "upload"),
            (md + sum(&k) / dn + mr, "compute"),
            (md + mk + sum(&r) / dn, "download"),
            (up_bytes / hu + z, "host-up"),
            (a + down_bytes / hd, "host-down"),
        ];
        if n >= 2 && w > 0.0 {
            let share = w / dn;
            let mut link_t = a + z + ((share - link.up * a - link.down * z) / both).max(0.0);
            if g >= 2 {
                // The GPU that moves the most may hold a single task: then that task
                // alone carries a D-th of the bytes, and the run lasts its chain.
                let heavy = tasks
                    .iter()
                    .zip(&chain)
                    .filter(|(t, _)| t.up_bytes as f64 + t.down_bytes as f64 >= share)
                    .map(|(_, c)| *c)
                    .fold(f64::INFINITY, f64::min);
                link_t = link_t.min(heavy);
            }
            candidates.push((link_t, "link"));
        }
        if n > g && w > 0.0 {
            candidates.push((a + z + ((w - hu * a - hd * z) / hb).max(0.0), "host"));
        }
        let (t, limit) = candidates.into_iter().fold((0.0, "none"), |best, c| if c.0 > best.0 { c } else { best });
        // `as` saturates: a bound past u64::MAX ns is u64::MAX.
        HardwareBound { t_ns: t.ceil() as u64, limit }
    }
}

// The tests, with a sim run against the bound, are in `lower_bound/test.rs`.
#[cfg(test)]
mod test;
