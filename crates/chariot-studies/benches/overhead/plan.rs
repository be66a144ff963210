//! What the study's runs are made of: the chunks of a point, the batch submitted to
//! chariot, each task's work and the hardware bound of a run, the check that no run fell
//! below its bound, and the machine and configuration a run uses.

use crate::csv::Row;
use chariot::report::{HardwareBound, LinkRates, TaskWork};
use chariot::{Arg, HostBuffer, Scheduler};
use chariot_studies::demo;
use indicatif::ProgressBar;
use std::ops::Range;

/// Chunk ranges: fixed or uniformly random sizes in [min, max] MiB (xorshift, seeded).
pub fn chunk_ranges(n: usize, min: usize, max: usize, random: bool, seed: u64) -> Vec<Range<usize>> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut at = 0;
    (0..n)
        .map(|_| {
            let len = if random {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                min + (s % (max - min + 1) as u64) as usize
            } else {
                (min + max) / 2
            };
            at += len;
            at - len..at
        })
        .collect()
}

/// u32 elements in `mib` MiB.
pub fn elements(mib: f64) -> usize {
    (mib * 262144.0) as usize
}

/// The static split: `parts` contiguous groups of equal count (the first N mod parts
/// groups one chunk more), as a programmer splits a loop over threads.
pub fn static_groups(chunks: &[Range<usize>], parts: usize) -> Vec<Vec<Range<usize>>> {
    let (base, extra) = (chunks.len() / parts, chunks.len() % parts);
    let mut at = 0;
    (0..parts)
        .map(|g| {
            let n = base + usize::from(g < extra);
            at += n;
            chunks[at - n..at].to_vec()
        })
        .collect()
}

/// The host rates the bound takes at `d` GPUs: the probe's totals where they fall
/// short of `d` links by more than a probe's noise (under 90% of them in some direction
/// or both ways: the host is a real limit), else `d` links. On 2 × H200 the probe read
/// the both-ways total at 0.87–0.90 of two links in six runs, and chariot at D = 2
/// moved the same 176–180 GB/s when all four copy engines ran. (A static-split baseline
/// seemed to move 193 GB/s, but its two GPUs' timed runs had not overlapped; fixed.)
pub fn host_for_bound(link: LinkRates, host: LinkRates, d: usize) -> LinkRates {
    let k = d as f64;
    if host.up < 0.9 * k * link.up || host.down < 0.9 * k * link.down || host.both < 0.9 * k * link.both {
        host
    } else {
        link.times(k)
    }
}

/// Submits one batch of the study: each chunk downloaded, shifted and read back.
#[allow(clippy::too_many_arguments)]
pub fn submit_batch(
    sched: &Scheduler,
    k: &chariot::kernel::KernelHandle,
    d_in: &chariot::DeviceBuffer<u32>,
    d_out: &chariot::DeviceBuffer<u32>,
    input: &HostBuffer<u32>,
    output: &HostBuffer<u32>,
    chunks: &[Range<usize>],
    iters: u32,
) -> Result<(), String> {
    for (i, c) in chunks.iter().enumerate() {
        let n = c.len();
        sched
            .task(i as u64, n as u64)
            .download(d_in, 0, input, c.clone())
            .launch(
                k,
                (n as u32).div_ceil(demo::BLOCK),
                demo::BLOCK,
                0,
                &[Arg::buffer(d_out), Arg::buffer(d_in), Arg::u32(n as u32), Arg::u32(iters)],
            )
            .readback(output, c.clone(), d_out, 0)
            .submit()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Each chunk's work for the bound, with the kernel model a + b·iters ns per element.
pub fn work(chunks: &[Range<usize>], iters: u32, (a, b): (f64, f64)) -> Vec<TaskWork> {
    chunks
        .iter()
        .map(|c| TaskWork {
            up_bytes: c.len() as u64 * 4,
            kernel_ns: (c.len() as f64 * (a + b * iters as f64)) as u64,
            down_bytes: c.len() as u64 * 4,
        })
        .collect()
}

/// `tasks` with each kernel's time at most `ns_per_element` times its chunk's length.
pub fn work_at_most(tasks: &[TaskWork], chunks: &[Range<usize>], ns_per_element: f64) -> Vec<TaskWork> {
    tasks
        .iter()
        .zip(chunks)
        .map(|(t, c)| TaskWork { kernel_ns: t.kernel_ns.min((c.len() as f64 * ns_per_element) as u64), ..*t })
        .collect()
}

/// The hardware-aware bound of `tasks` at `d` GPUs (the one-GPU bound at D = 1).
pub fn bound_for(tasks: &[TaskWork], d: usize, link: LinkRates, host: LinkRates) -> HardwareBound {
    if d == 1 {
        HardwareBound::one_gpu(tasks, link)
    } else {
        HardwareBound::multi_gpu(tasks, d, link, host_for_bound(link, host, d))
    }
}

/// Rows whose makespan falls below their bound (a tenth of a percent of slack).
pub fn below_bound(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.makespan_ms < r.bound_ms * 0.999)
        .map(|r| {
            format!(
                "{} seed {} r {} D {} {} S {}{}: makespan {:.3} ms < bound {:.3} ms ({})",
                r.sizes,
                r.seed,
                r.r_target,
                r.gpus,
                r.system,
                r.streams,
                if r.system == "chariot" {
                    format!(
                        " {} {} depth {} kernels {} pin {} B {} run {}",
                        r.config, r.order, r.depth, r.kernels, r.pin, r.buses, r.rep
                    )
                } else {
                    String::new()
                },
                r.makespan_ms,
                r.bound_ms,
                r.limit
            )
        })
        .collect()
}

/// What one GPU count runs with: the rates the bound needs, B calibrated, the GPUs.
#[derive(Clone, Debug)]
pub struct Machine {
    /// D: every rank's GPUs.
    pub gpus: usize,
    /// The ranks over which they are (1: one process).
    pub ranks: usize,
    /// Totals of all `gpus` GPUs copying at once (the link itself at D = 1).
    pub host: LinkRates,
    pub calibrated_buses: usize,
    pub ordinals: Vec<usize>,
}

/// One chariot configuration beside S, order and depth.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub pin: bool,
    pub bus_mode: String,
    pub buses: usize,
}

/// A line above the progress bar. `ProgressBar::println` prints nothing when the bar
/// is hidden (output not a terminal, as on the GPU machines); this prints either way.
pub fn note(bar: &ProgressBar, line: String) {
    bar.suspend(|| eprintln!("{line}"));
}

pub fn bound_check(below: &[String]) {
    if below.is_empty() {
        println!("bound check: no makespan (chariot, baselines, static split) below its hardware bound");
    } else {
        println!("bound check FAILED for {} run(s):\n  {}", below.len(), below.join("\n  "));
    }
}
