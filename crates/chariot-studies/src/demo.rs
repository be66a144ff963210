//! The demo of the README and `cargo run`: the paper's dummy shift kernel (§6.1) over N
//! chunks, run serially (S = 1) and pipelined, with its bound and its correctness check.
//!
//! The kernel maps each integer through `iters` rounds of `x = (x << 1) ^ (x >> 3) ^ k`.
//! Its CPU twin does not loop: each round is linear over GF(2) plus a constant, so `iters`
//! rounds are one 32×32 bit matrix (four byte tables) and one constant, which makes the
//! twin fast enough for the simulator. [`shift_reference`] is the plain loop the twin is
//! tested against.

use chariot::kernel::KernelHandle;
use chariot::report::{LinkRates, Report};
use chariot::{Arg, DeviceBuffer, HostBuffer, Kernel, Param, Result, Scheduler};
use std::sync::Arc;
use std::time::Duration;

/// CUDA C of the demo kernels (`shift`, `empty`).
pub const KERNELS: &str = include_str!("../kernels/shift.cu");

/// Element-iterations per second the simulator charges the shift kernel (an H100 runs
/// about this many: three integer instructions per round).
pub const SIM_SHIFT_RATE: f64 = 5.0e12;

/// Threads per block of the shift kernel.
pub const BLOCK: u32 = 256;

/// One round of the shift kernel.
fn round(x: u32, k: u32) -> u32 {
    (x << 1) ^ (x >> 3) ^ k
}

/// The kernel's result for one element, by the plain loop.
///
/// ```
/// assert_eq!(chariot_studies::demo::shift_reference(1, 0), 1);
/// assert_eq!(chariot_studies::demo::shift_reference(1, 1), 2);
/// ```
pub fn shift_reference(mut x: u32, iters: u32) -> u32 {
    for k in 0..iters {
        x = round(x, k);
    }
    x
}

/// `iters` rounds as byte tables and a constant: `f(x) = T0[x₀] ^ T1[x₁] ^ T2[x₂] ^ T3[x₃] ^ c`.
///
/// ```
/// use chariot_studies::demo::{shift_reference, ShiftTable};
/// let t = ShiftTable::new(1000);
/// for x in [0u32, 1, 0xdead_beef, u32::MAX] {
///     assert_eq!(t.apply(x), shift_reference(x, 1000));
/// }
/// ```
#[derive(Clone, Debug)]
pub struct ShiftTable {
    tables: Box<[[u32; 256]; 4]>,
    constant: u32,
}

impl ShiftTable {
    /// Tables for `iters` rounds (O(32·iters) to build).
    pub fn new(iters: u32) -> Self {
        let linear = |mut x: u32| {
            for _ in 0..iters {
                x = round(x, 0);
            }
            x
        };
        let columns: Vec<u32> = (0..32).map(|b| linear(1 << b)).collect();
        let mut tables = Box::new([[0u32; 256]; 4]);
        for (p, table) in tables.iter_mut().enumerate() {
            for (v, entry) in table.iter_mut().enumerate() {
                *entry = (0..8).filter(|i| v >> i & 1 == 1).fold(0, |acc, i| acc ^ columns[8 * p + i]);
            }
        }
        ShiftTable { tables, constant: shift_reference(0, iters) }
    }

    /// The kernel's result for `x`.
    pub fn apply(&self, x: u32) -> u32 {
        let t = &self.tables;
        t[0][(x & 255) as usize]
            ^ t[1][(x >> 8 & 255) as usize]
            ^ t[2][(x >> 16 & 255) as usize]
            ^ t[3][(x >> 24) as usize]
            ^ self.constant
    }
}

type TableCache = Option<(u32, Arc<ShiftTable>)>;

/// The `shift` kernel with its CPU twin and its simulated cost.
/// Parameters: `out`, `in`, `n`, `iters`.
pub fn shift_kernel() -> Kernel {
    shift_kernel_costing(0.0, 1e9 / SIM_SHIFT_RATE)
}

/// The `shift` kernel whose simulated cost is `a + b·iters` nanoseconds per element
/// (a model fitted to a real GPU, for the simulator's predictions).
pub fn shift_kernel_costing(a_ns: f64, b_ns: f64) -> Kernel {
    // The twin builds the tables once per iteration count.
    let cache: Arc<parking_lot::Mutex<TableCache>> = Default::default();
    Kernel::new("shift", KERNELS)
        .params([Param::Buffer, Param::Buffer, Param::U32, Param::U32])
        .cpu_twin(move |a| {
            let (n, iters) = (a.u32(2)? as usize, a.u32(3)?);
            let table = {
                let mut c = cache.lock();
                match &*c {
                    Some((i, t)) if *i == iters => t.clone(),
                    _ => {
                        let t = Arc::new(ShiftTable::new(iters));
                        *c = Some((iters, t.clone()));
                        t
                    }
                }
            };
            let (input, output) = a.in_out::<u32, u32>(1, 0)?;
            if n > input.len() || n > output.len() {
                return Err(format!("n = {n} exceeds the buffers ({} in, {} out)", input.len(), output.len()).into());
            }
            for (o, &x) in output[..n].iter_mut().zip(&input[..n]) {
                *o = table.apply(x);
            }
            Ok(())
        })
        .sim_cost(move |_, s| {
            let (n, iters) = (s.u32(2).unwrap_or(0) as f64, s.u32(3).unwrap_or(0) as f64);
            Duration::from_nanos((n * (a_ns + b_ns * iters)).max(0.0) as u64)
        })
}

/// The `empty` kernel (no parameters), for the cost of a command itself.
pub fn empty_kernel() -> Kernel {
    Kernel::new("empty", KERNELS).params([]).cpu_twin(|_| Ok(())).sim_cost(|_, _| Duration::ZERO)
}

/// Fills `host` with a reproducible pseudo-random sequence (xorshift64*, seeded).
pub fn fill(host: &mut HostBuffer<u32>, seed: u64) {
    let mut s = seed | 1;
    for x in host.write().iter_mut() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        *x = (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32;
    }
}

/// Submits chunk `i` of `len` elements for each `i` in `chunks`: download from `input`,
/// shift, read back into `output`; then synchronizes.
#[allow(clippy::too_many_arguments)]
pub fn run_shift(
    sched: &Scheduler,
    kernel: &KernelHandle,
    input: &HostBuffer<u32>,
    output: &HostBuffer<u32>,
    d_in: &DeviceBuffer<u32>,
    d_out: &DeviceBuffer<u32>,
    chunks: std::ops::Range<usize>,
    len: usize,
    iters: u32,
) -> Result<Report> {
    let grid = (len as u32).div_ceil(BLOCK);
    for i in chunks {
        let r = i * len..(i + 1) * len;
        sched
            .task(i as u64, len as u64)
            .download(d_in, 0, input, r.clone())
            .launch(
                kernel,
                grid,
                BLOCK,
                0,
                &[Arg::buffer(d_out), Arg::buffer(d_in), Arg::u32(len as u32), Arg::u32(iters)],
            )
            .readback(output, r, d_out, 0)
            .submit()?;
    }
    sched.synchronize()
}

/// Elements in `range` of `output` that differ from the kernel applied to `input`
/// (checked with the tables on all cores, and the first 64 with the plain loop too).
pub fn mismatches(
    input: &HostBuffer<u32>,
    output: &HostBuffer<u32>,
    range: std::ops::Range<usize>,
    iters: u32,
) -> usize {
    let table = ShiftTable::new(iters);
    let (input, output) = (input.read(), output.read());
    let (inp, out) = (&input[range.clone()], &output[range]);
    let plain = inp.iter().zip(out).take(64).filter(|(&x, &y)| shift_reference(x, iters) != y).count();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(inp.len().div_ceil(1 << 16)).max(1);
    let per = inp.len().div_ceil(threads).max(1);
    let table = &table;
    let wrong: usize = std::thread::scope(|scope| {
        let parts: Vec<_> = inp
            .chunks(per)
            .zip(out.chunks(per))
            .map(|(i, o)| scope.spawn(move || i.iter().zip(o).filter(|(&x, &y)| table.apply(x) != y).count()))
            .collect();
        parts.into_iter().map(|h| h.join().unwrap_or(usize::MAX / 2)).sum()
    });
    plain.max(wrong)
}

/// Fills `host` with `value` on all cores (poisoning outputs before a run).
pub fn poison(host: &mut HostBuffer<u32>, value: u32) {
    let mut guard = host.write();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = guard.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in guard.chunks_mut(per) {
            scope.spawn(move || part.fill(value));
        }
    });
}

/// Sustained rates of the GPU under a scheduler: its link (bytes per ns up alone, down
/// alone, both at once) and the shift kernel's time per chunk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// The link's rates.
    pub link: LinkRates,
    /// Nanoseconds per shift kernel of one chunk at the probed iteration count.
    pub kernel_ns: f64,
}

/// Measures [`Rates`] (with `kernel`, a shift kernel) with back-to-back commands of whole chunks of `len` elements on
/// `sched` (use several streams and stage depth 2 so no engine waits for the
/// dispatcher). Each rate is a slope between a batch of 2 chunks and one of `chunks`
/// (at least 3), so the fixed cost of starting and finishing a batch cancels out.
pub fn probe_rates(
    sched: &Scheduler,
    kernel: Kernel,
    input: &HostBuffer<u32>,
    output: &mut HostBuffer<u32>,
    len: usize,
    chunks: usize,
    iters: u32,
) -> Result<Rates> {
    let kernel = sched.register_kernel(kernel)?;
    let d_in = sched.alloc::<u32>(len)?;
    let d_out = sched.alloc::<u32>(len)?;
    let bytes = (len * 4) as f64;
    let grid = (len as u32).div_ceil(BLOCK);
    let args = [Arg::buffer(&d_out), Arg::buffer(&d_in), Arg::u32(len as u32), Arg::u32(iters)];
    let (short, long) = (2, chunks.max(3).min(input.len().min(output.len()) / len));
    let output = &*output;
    // The report of n chunks of one kind: 0 uploads, 1 readbacks, 2 both, 3 kernels.
    let batch = |kind: u8, n: usize| -> Result<Report> {
        for i in 0..n {
            let r = i * len..(i + 1) * len;
            let t = 2 * i as u64;
            if kind == 0 || kind == 2 {
                sched.task(t, 1).download(&d_in, 0, input, r.clone()).submit()?;
            }
            if kind == 1 || kind == 2 {
                sched.task(t + 1, 1).readback(output, r, &d_out, 0).submit()?;
            }
            if kind == 3 {
                sched.task(t, 1).launch(&kernel, grid, BLOCK, 0, &args).submit()?;
            }
        }
        sched.synchronize()
    };
    let slope = |kind: u8| -> Result<f64> {
        let (a, b) = (batch(kind, short)?.makespan_ns as f64, batch(kind, long)?.makespan_ns as f64);
        Ok(((b - a) / (long - short).max(1) as f64).max(1.0))
    };
    batch(2, short)?; // warm-up
    let (up, down) = (bytes / slope(0)?, bytes / slope(1)?);
    // Both at once: each direction's bytes over its own busy time while both run, summed
    // (a slope would measure the slower direction alone once the faster one is done).
    let joint = batch(2, long)?;
    let busy = |stage: chariot::Stage| joint.busy_ns.iter().map(|b| b[stage.index()]).sum::<u64>().max(1) as f64;
    let moved = bytes * long as f64;
    let both = moved / busy(chariot::Stage::Download) + moved / busy(chariot::Stage::Readback);
    Ok(Rates { link: LinkRates { up, down, both }, kernel_ns: slope(3)? })
}

/// Sustained rates of all the GPUs of `sched` copying at once: machine-wide totals up,
/// down and both ways, for [`HardwareBound::multi_gpu`](chariot::report::HardwareBound::multi_gpu)
/// and for choosing the host buses B.
///
/// Runs `chunks` copies of whole chunks of `len` elements back to back (spread over
/// the GPUs by the scheduler; use several streams and stage depth 2, and at least a
/// few chunks per GPU), uploads alone, readbacks alone, then both, each batch twice.
/// Each GPU's rate is its bytes over its own busy time in that direction, the totals
/// add the GPUs, and the higher of a batch's two readings is kept. A GPU that ran
/// part of a batch alone counts its faster solo rate, which errs high; a disturbed
/// batch reads low. Measured on 2 × H200, the both-ways total read 0.91 of two links
/// while two hand-written pipelines moved at least 0.97 of it, so a bound should take
/// these totals only where they show a clear shortfall (see the overhead study).
///
/// # Errors
/// Whatever submitting or synchronizing returns.
pub fn probe_host_rates(
    sched: &Scheduler,
    input: &HostBuffer<u32>,
    output: &mut HostBuffer<u32>,
    len: usize,
    chunks: usize,
) -> Result<LinkRates> {
    use chariot::Stage;
    let d_in = sched.alloc::<u32>(len)?;
    let d_out = sched.alloc::<u32>(len)?;
    let n = chunks.max(2).min(input.len().min(output.len()) / len.max(1));
    let output = &*output;
    // The report of n chunks of one kind: 0 uploads, 1 readbacks, 2 both.
    let batch = |kind: u8| -> Result<Report> {
        for i in 0..n {
            let r = i * len..(i + 1) * len;
            let t = 2 * i as u64;
            if kind != 1 {
                sched.task(t, 1).download(&d_in, 0, input, r.clone()).submit()?;
            }
            if kind != 0 {
                sched.task(t + 1, 1).readback(output, r, &d_out, 0).submit()?;
            }
        }
        sched.synchronize()
    };
    let total = |report: &Report, stage: Stage| summed_rate(&report.records, &report.busy_ns, stage);
    let both_ways = |report: &Report| total(report, Stage::Download) + total(report, Stage::Readback);
    batch(2)?; // warm-up
    let (mut up, mut down, mut both) = (0.0f64, 0.0f64, 0.0f64);
    for _ in 0..2 {
        up = up.max(total(&batch(0)?, Stage::Download));
        down = down.max(total(&batch(1)?, Stage::Readback));
        both = both.max(both_ways(&batch(2)?));
    }
    Ok(LinkRates { up, down, both })
}

/// Σ over GPUs of the bytes each moved in `stage` over its busy time in that stage
/// (bytes per ns); GPUs that moved nothing add nothing.
fn summed_rate(
    records: &[chariot::report::CommandRecord],
    busy_ns: &[[u64; chariot::Stage::K]],
    stage: chariot::Stage,
) -> f64 {
    busy_ns
        .iter()
        .enumerate()
        .filter(|(_, busy)| busy[stage.index()] > 0)
        .map(|(g, busy)| {
            let bytes: u64 = records.iter().filter(|r| r.gpu as usize == g && r.stage == stage).map(|r| r.bytes).sum();
            bytes as f64 / busy[stage.index()] as f64
        })
        .sum()
}

/// Host buses B for `gpus` GPUs, calibrated: how many GPUs' worth of one link
/// (`link`, one GPU copying alone) the host carries in each direction when all copy
/// at once (`host`, from [`probe_host_rates`]), rounded, the smaller direction, within
/// 1..=gpus. The scheduler's global thresholds of the copy stages follow it
/// (G_2 = G_4 = B).
///
/// ```
/// use chariot::report::LinkRates;
/// use chariot_studies::demo::calibrated_buses;
/// let link = LinkRates { up: 55.0, down: 55.0, both: 100.0 };
/// assert_eq!(calibrated_buses(link, link.times(1.9), 2), 2);  // a link per GPU
/// assert_eq!(calibrated_buses(link, link.times(1.2), 2), 1);  // one shared bus
/// assert_eq!(calibrated_buses(link, link.times(9.0), 4), 4);
/// ```
pub fn calibrated_buses(link: LinkRates, host: LinkRates, gpus: usize) -> usize {
    let ratio = (host.up / link.up).min(host.down / link.down);
    if ratio.is_finite() {
        (ratio.round() as usize).clamp(1, gpus.max(1))
    } else {
        gpus.max(1)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn tables_match_the_loop() {
        let mut s = 0x1234_5678u32;
        for iters in [0, 1, 2, 7, 64, 513] {
            let t = ShiftTable::new(iters);
            for _ in 0..200 {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                assert_eq!(t.apply(s), shift_reference(s, iters), "iters {iters}, x {s:#x}");
            }
        }
    }
}

#[cfg(test)]
mod probe_test {
    use super::*;
    use chariot::report::CommandRecord;
    use chariot::{Stage, TaskId};

    fn copy(gpu: u16, stage: Stage, start_ns: u64, end_ns: u64, bytes: u64) -> CommandRecord {
        let mut r = CommandRecord::new(TaskId(0), 0, stage, gpu, 0, start_ns, end_ns);
        r.bytes = bytes;
        r
    }

    /// Each GPU's bytes over its own busy time, added over the GPUs: the host total
    /// when they copy at once. Other stages and idle GPUs do not count.
    #[test]
    fn host_rate_adds_each_gpus_own_rate() {
        let records = [
            copy(0, Stage::Download, 0, 100, 100),
            copy(0, Stage::Download, 100, 200, 100),
            copy(1, Stage::Download, 50, 150, 300),
            copy(1, Stage::Readback, 150, 160, 1000),
        ];
        let mut busy = vec![[0u64; Stage::K]; 3];
        busy[0][Stage::Download.index()] = 200;
        busy[1][Stage::Download.index()] = 100;
        busy[1][Stage::Readback.index()] = 10;
        assert_eq!(summed_rate(&records, &busy, Stage::Download), 1.0 + 3.0);
        assert_eq!(summed_rate(&records, &busy, Stage::Readback), 100.0);
        assert_eq!(summed_rate(&records, &busy, Stage::Kernel), 0.0);
    }
}
