//! The zero-overhead schedule (the ideal): a run's tasks, in the order it dispatched them, on a GPU
//! whose engines start each command the moment it may start. The hardware bound
//! ([`super::HardwareBound`]) holds for every order and so is loose where chunk sizes
//! differ: then even a perfect runtime following the same order stays above it. The
//! ideal is what such a runtime would reach, so `T / T_ideal − 1` is the runtime's own
//! overhead (dispatch latency, completion detection), apart from the order's.

use super::lower_bound::{LinkRates, TaskWork};

/// The makespan, in ns, of `tasks` in this order on one GPU with an upload, a compute
/// and a download engine, each running one command at a time, and `slots` stream slots:
/// a task starts its upload once the upload engine is free and the task `slots` places
/// earlier has been read back (its slot is free). Uploads and readbacks move at
/// `link.up` and `link.down` alone and share `link.both` in proportion when both run.
/// No host time is spent anywhere. Rates are bytes per ns; 0 slots count as 1.
///
/// Assumptions, as for the hardware bound: a kernel fills its GPU (kernels run one at a
/// time), a command starts as soon as the one before it in its task has ended, and
/// queued commands of a stage run in dispatch order.
///
/// ```
/// use chariot::report::{zero_overhead_makespan, LinkRates, TaskWork};
/// // Two tasks of 100 bytes each way and 50 ns of kernel, on a link moving 1 byte/ns
/// // each way and 2 both ways: the second upload (100..200) runs beside the first
/// // kernel and readback (100..250); its kernel ends at 250, its readback at 350.
/// let t = [TaskWork { up_bytes: 100, kernel_ns: 50, down_bytes: 100 }; 2];
/// let link = LinkRates { up: 1.0, down: 1.0, both: 2.0 };
/// assert_eq!(zero_overhead_makespan(&t, link, 2), 350);
/// // With one slot nothing overlaps: 2 × 250 ns.
/// assert_eq!(zero_overhead_makespan(&t, link, 1), 500);
/// ```
pub fn zero_overhead_makespan(tasks: &[TaskWork], link: LinkRates, slots: usize) -> u64 {
    if tasks.is_empty() || !link.positive() {
        return 0;
    }
    let slots = slots.max(1);
    let n = tasks.len();
    let shared = (link.both / (link.up + link.down)).min(1.0);
    // In flight: (task, bytes left) on each copy engine; (task, end time) on the kernel.
    let mut up: Option<(usize, f64)> = None;
    let mut down: Option<(usize, f64)> = None;
    let mut kernel: Option<(usize, f64)> = None;
    let mut kernel_queue = std::collections::VecDeque::new();
    let mut readback_queue = std::collections::VecDeque::new();
    let mut read_back = vec![false; n];
    let (mut next, mut t) = (0usize, 0.0f64);
    loop {
        if up.is_none() && next < n && (next < slots || read_back[next - slots]) {
            up = Some((next, tasks[next].up_bytes as f64));
            next += 1;
        }
        if kernel.is_none() {
            if let Some(i) = kernel_queue.pop_front() {
                kernel = Some((i, t + tasks[i].kernel_ns as f64));
            }
        }
        if down.is_none() {
            if let Some(i) = readback_queue.pop_front() {
                down = Some((i, tasks[i].down_bytes as f64));
            }
        }
        if up.is_none() && down.is_none() && kernel.is_none() {
            // Nothing runs: everything is done (a waiting upload always has a running
            // readback ahead of it, so it cannot be stuck here).
            break;
        }
        let (ru, rd) =
            if up.is_some() && down.is_some() { (link.up * shared, link.down * shared) } else { (link.up, link.down) };
        let dt = [up.map(|(_, b)| b / ru), down.map(|(_, b)| b / rd), kernel.map(|(_, end)| end - t)]
            .into_iter()
            .flatten()
            .fold(f64::INFINITY, f64::min)
            .max(0.0);
        t += dt;
        // A command ends when what is left of it is below a thousandth of a byte or ns.
        if let Some((i, b)) = up.as_mut() {
            *b -= ru * dt;
            if *b <= 1e-3 {
                kernel_queue.push_back(*i);
                up = None;
            }
        }
        if let Some((i, b)) = down.as_mut() {
            *b -= rd * dt;
            if *b <= 1e-3 {
                read_back[*i] = true;
                down = None;
            }
        }
        if let Some((i, end)) = kernel {
            if end <= t + 1e-3 {
                readback_queue.push_back(i);
                kernel = None;
            }
        }
    }
    // `as` saturates: a makespan past u64::MAX ns is u64::MAX.
    t.ceil() as u64
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::report::HardwareBound;

    const LINK: LinkRates = LinkRates { up: 50.0, down: 50.0, both: 90.0 };

    fn random_tasks(seed: u64, n: usize, kernel_per_byte: f64) -> Vec<TaskWork> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let bytes = 3_000_000 + (x >> 33) % 27_000_000;
                TaskWork { up_bytes: bytes, kernel_ns: (bytes as f64 * kernel_per_byte) as u64, down_bytes: bytes }
            })
            .collect()
    }

    /// One task runs its three commands back to back.
    #[test]
    fn one_task_is_its_chain() {
        let t = [TaskWork { up_bytes: 500, kernel_ns: 70, down_bytes: 250 }];
        assert_eq!(zero_overhead_makespan(&t, LINK, 4), 10 + 70 + 5);
    }

    /// One slot allows no overlap at all: the serial run.
    #[test]
    fn one_slot_is_serial() {
        let t = random_tasks(1, 10, 0.02);
        let serial: f64 =
            t.iter().map(|w| w.up_bytes as f64 / 50.0 + w.kernel_ns as f64 + w.down_bytes as f64 / 50.0).sum();
        let m = zero_overhead_makespan(&t, LINK, 1) as f64;
        assert!((m - serial).abs() <= 1.0, "{m} against {serial}");
    }

    /// The ideal is a schedule, so it never beats the bound, and with equal chunks it
    /// comes close to it (the bound is tight for equal chunks).
    #[test]
    fn the_ideal_is_never_below_the_bound_and_meets_it_on_equal_chunks() {
        for seed in 1..20 {
            for per_byte in [0.0001, 0.01, 0.02, 0.05] {
                let t = random_tasks(seed, 48, per_byte);
                let b = HardwareBound::one_gpu(&t, LINK).t_ns;
                for slots in [2, 4, 8] {
                    let m = zero_overhead_makespan(&t, LINK, slots);
                    assert!(m + 1 >= b, "seed {seed}, {per_byte} ns/byte, S {slots}: {m} < bound {b}");
                }
            }
        }
        let equal = vec![TaskWork { up_bytes: 16_000_000, kernel_ns: 60_000, down_bytes: 16_000_000 }; 48];
        let (m, b) = (zero_overhead_makespan(&equal, LINK, 4), HardwareBound::one_gpu(&equal, LINK).t_ns);
        assert!(m as f64 <= 1.01 * b as f64, "equal chunks: {m} against bound {b}");
    }

    /// Order matters where sizes differ: a readback that ends before the next, larger,
    /// upload leaves the download engine idle, which no bound over all orders can see.
    #[test]
    fn uneven_chunks_leave_the_ideal_above_the_bound() {
        let t = random_tasks(7, 48, 0.002);
        let (m, b) = (zero_overhead_makespan(&t, LINK, 8), HardwareBound::one_gpu(&t, LINK).t_ns);
        assert!(m > b, "{m} against {b}");
    }

    #[test]
    fn nothing_or_no_link_is_zero() {
        assert_eq!(zero_overhead_makespan(&[], LINK, 2), 0);
        let t = [TaskWork { up_bytes: 1, kernel_ns: 1, down_bytes: 1 }];
        assert_eq!(zero_overhead_makespan(&t, LinkRates { up: 0.0, down: 1.0, both: 1.0 }, 2), 0);
    }
}
