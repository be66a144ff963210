//! The soak run of the robustness work: many small tasks of random sizes through one scheduler, to
//! show that nothing accumulates. Tasks go in waves, and a `synchronize` ends each wave,
//! because a batch's report holds a record of every command of the batch: one batch of a
//! million tasks would hold some three million records. After each wave every output
//! element is checked against the CPU and the process is sampled: resident memory,
//! threads, the driver's mappings (pinned host memory on CUDA) and device memory in use.
//!
//! The host buffers (pinned on CUDA) are allocated once, with room for the largest
//! wave, and reused, as a streaming application does. Each wave allocates its own device
//! buffers and drops them before its `synchronize`, which frees them: device memory in
//! use must be back at its start value after every wave.
//!
//! It fails (exit status 1) when an output is wrong, when the thread count grows past its
//! value at the start, when device memory in use is not back at its start value after a
//! wave, when the driver's mappings are not back at their start value once the host
//! buffers are dropped, or when resident memory grows by more than `--rss-allowance-mib`
//! over its value after the first wave (a warm-up: allocator pools and the first batch's
//! vectors settle there).
//!
//! `cargo run --release --example soak -- --help` runs it; `tests/soak.rs` runs it shorter.
//!
//! Why this file is long: the soak is one procedure (waves, output checks, samples of
//! /proc and the driver, the verdict and its report); its command line is
//! examples/soak.rs.

use chariot::kernel::KernelHandle;
use chariot::{Arg, Backend, HostBuffer, Kernel, Param, Scheduler};
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a soak run does.
#[derive(Clone, Debug)]
pub struct Config {
    /// The backend.
    pub backend: Backend,
    /// D.
    pub gpus: usize,
    /// S.
    pub streams: usize,
    /// Tasks in all.
    pub tasks: u64,
    /// Tasks per wave.
    pub wave: usize,
    /// Largest task, elements.
    pub max_len: usize,
    /// Seed of the sizes and coefficients.
    pub seed: u64,
}

/// The process and the device, at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Waves done (0: the start, after the warm-up task).
    pub wave: usize,
    /// Tasks done.
    pub tasks: u64,
    /// Seconds since the first wave started.
    pub elapsed_s: f64,
    /// Resident set, KiB.
    pub rss_kib: Option<u64>,
    /// Threads of the process.
    pub threads: Option<u64>,
    /// Address space mapped from the NVIDIA driver's device files, KiB: pinned host
    /// memory among it (0 on sim).
    pub driver_mapped_kib: Option<u64>,
    /// Device memory in use, bytes, summed over the GPUs, with the wave's buffers dropped.
    pub device_bytes: Option<u64>,
    /// Device memory in use while the wave's buffers were allocated.
    pub device_bytes_in_wave: Option<u64>,
}

impl Sample {
    fn now(wave: usize, tasks: u64, elapsed_s: f64, sched: &Scheduler, device_bytes_in_wave: Option<u64>) -> Sample {
        let (rss_kib, threads) = proc_status();
        Sample {
            wave,
            tasks,
            elapsed_s,
            rss_kib,
            threads,
            driver_mapped_kib: driver_mapped_kib(),
            device_bytes: device_bytes(sched),
            device_bytes_in_wave,
        }
    }
}

/// A soak run's samples and findings.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The backend that ran (`sim` or `cuda`).
    pub backend: String,
    /// Samples: the start, then one per wave.
    pub samples: Vec<Sample>,
    /// Tasks run.
    pub tasks: u64,
    /// Output elements compared with the CPU.
    pub elements_checked: u64,
    /// The first wrong results (at most 20).
    pub wrong: Vec<String>,
    /// Wrong results in all.
    pub wrong_count: u64,
    /// Threads before the scheduler was built and after it was dropped.
    pub threads_before: Option<u64>,
    /// See `threads_before`.
    pub threads_after: Option<u64>,
    /// The driver's mappings before the host buffers were allocated and after they were
    /// dropped, KiB.
    pub mapped_before_kib: Option<u64>,
    /// See `mapped_before_kib`.
    pub mapped_after_kib: Option<u64>,
    /// Resident memory after the host buffers were dropped, KiB.
    pub rss_after_kib: Option<u64>,
    /// Size of the run's two host buffers, KiB.
    pub host_buffers_kib: u64,
    /// Seconds for all waves.
    pub seconds: f64,
}

/// `VmRSS` and `Threads` of `/proc/self/status` (Linux), which gives the resident set
/// in kB where `/proc/self/statm` gives pages of a size it does not state.
fn proc_status() -> (Option<u64>, Option<u64>) {
    let Ok(text) = std::fs::read_to_string("/proc/self/status") else { return (None, None) };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    (field("VmRSS:"), field("Threads:"))
}

/// Threads of this process now.
pub fn threads_now() -> Option<u64> {
    proc_status().1
}

/// The size of every mapping of `/dev/nvidia*` in `/proc/self/maps`, KiB. The CUDA
/// driver maps pinned host memory (`cuMemHostAlloc`) into the process from its device
/// files, and such mappings need not count in the resident set: this sum is where a
/// leak of pinned memory would show. The summary prints the host buffers' size beside
/// it, so a run on a GPU shows whether they appear there.
fn driver_mapped_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/maps").ok()?;
    let mut total = 0u64;
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let range = fields.next()?;
        if fields.nth(4).is_some_and(|path| path.starts_with("/dev/nvidia")) {
            let (lo, hi) = range.split_once('-')?;
            let (lo, hi) = (u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?);
            total += hi.saturating_sub(lo) / 1024;
        }
    }
    Some(total)
}

fn device_bytes(sched: &Scheduler) -> Option<u64> {
    (0..sched.gpu_count()).map(|g| sched.device_memory_in_use(g)).sum()
}

/// `out[i] = in[i] · a + b` (u32, wrapping).
const KERNEL: &str = r#"
extern "C" __global__ void soak_affine(const unsigned* in, unsigned* out, unsigned n, unsigned a, unsigned b) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * a + b;
}
"#;
const BLOCK: u32 = 256;

fn affine(x: u32, a: u32, b: u32) -> u32 {
    x.wrapping_mul(a).wrapping_add(b)
}

fn kernel() -> Kernel {
    Kernel::new("soak_affine", KERNEL)
        .params([Param::Buffer, Param::Buffer, Param::U32, Param::U32, Param::U32])
        .cpu_twin(|args| {
            let (n, a, b) = (args.u32(2)? as usize, args.u32(3)?, args.u32(4)?);
            let (input, output) = args.in_out::<u32, u32>(0, 1)?;
            if n > input.len() || n > output.len() {
                return Err(format!("n = {n} exceeds the buffers ({} and {})", input.len(), output.len()).into());
            }
            output[..n].iter_mut().zip(&input[..n]).for_each(|(o, &i)| *o = affine(i, a, b));
            Ok(())
        })
}

/// Input element `i` of wave `w`.
fn input(w: u64, i: usize) -> u32 {
    ((i as u32) ^ (w as u32).wrapping_mul(0x2545_f491)).wrapping_mul(0x9e37_79b1).rotate_left(13)
}

/// What a producing task's CPU callback writes into element `j` of its chunk instead.
fn produced(id: u64, j: usize) -> u32 {
    (j as u32).wrapping_mul(0x85eb_ca6b) ^ (id as u32)
}

/// Output elements before any task writes them.
const SENTINEL: u32 = 0xDEAD_BEEF;

/// The shapes of task the soak mixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// download, kernel, readback.
    Plain,
    /// A CPU callback writes the input chunk first (`callback_writing`).
    Produce,
    /// A CPU callback checks the output chunk last (`callback_reading`).
    Inspect,
}

#[derive(Clone, Copy, Debug)]
struct Planned {
    id: u64,
    offset: usize,
    len: usize,
    shape: Shape,
    a: u32,
    b: u32,
}

impl Planned {
    fn expected(&self, wave: u64, j: usize) -> u32 {
        let x = match self.shape {
            Shape::Produce => produced(self.id, j),
            _ => input(wave, self.offset + j),
        };
        affine(x, self.a, self.b)
    }
}

/// Host buffers of a run, reused by every wave.
struct Host {
    inp: HostBuffer<u32>,
    res: HostBuffer<u32>,
}

/// Runs one wave's tasks through `sched` over `host`, with device buffers of its own,
/// and checks every output. Returns the device memory in use while those were held.
fn wave(
    sched: &Scheduler,
    k: &KernelHandle,
    host: &mut Host,
    w: u64,
    plan: &[Planned],
    inspect_wrong: &Arc<AtomicU64>,
    out: &mut Outcome,
) -> chariot::Result<Option<u64>> {
    let total: usize = plan.iter().map(|p| p.len).sum();
    let max_len = plan.iter().map(|p| p.len).max().unwrap_or(1);
    let Host { inp, res } = host;
    inp.write()[..total].iter_mut().enumerate().for_each(|(i, x)| *x = input(w, i));
    res.write()[..total].fill(SENTINEL);
    let (inp, res) = (&*inp, &*res);
    let d_in = sched.alloc::<u32>(max_len)?;
    let d_out = sched.alloc::<u32>(max_len)?;
    let in_wave = device_bytes(sched);
    for p in plan {
        let (id, len, r) = (p.id, p.len, p.offset..p.offset + p.len);
        let args = [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(len as u32), Arg::u32(p.a), Arg::u32(p.b)];
        let mut t = sched.task(id, len as u64);
        if p.shape == Shape::Produce {
            t = t.callback_writing(inp, r.clone(), move |s, _| {
                s.iter_mut().enumerate().for_each(|(j, x)| *x = produced(id, j));
                Ok(())
            });
        }
        t = t.download(&d_in, 0, inp, r.clone()).launch(k, (len as u32).div_ceil(BLOCK), BLOCK, 0, &args).readback(
            res,
            r.clone(),
            &d_out,
            0,
        );
        if p.shape == Shape::Inspect {
            let (p, wrong) = (*p, inspect_wrong.clone());
            t = t.callback_reading(res, r, move |s, _| {
                if s.iter().enumerate().any(|(j, &x)| x != p.expected(w, j)) {
                    wrong.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            });
        }
        t.submit()?;
    }
    // The tasks hold the device buffers until they end; the synchronize below frees them.
    drop((d_in, d_out));
    let report = sched.synchronize()?;
    let commands: usize = plan.iter().map(|p| if p.shape == Shape::Plain { 3 } else { 4 }).sum();
    if report.tasks != plan.len() || report.records.len() != commands {
        out.wrong_count += 1;
        out.wrong.push(format!(
            "wave {w}: report has {} tasks and {} records, expected {} and {commands}",
            report.tasks,
            report.records.len(),
            plan.len()
        ));
    }
    let got = res.read();
    for p in plan {
        out.elements_checked += p.len as u64;
        if let Some(j) = (0..p.len).find(|&j| got[p.offset + j] != p.expected(w, j)) {
            out.wrong_count += 1;
            if out.wrong.len() < 20 {
                out.wrong.push(format!(
                    "wave {w} task #{} ({:?}, {} elements): element {j} = {:#x}, expected {:#x}",
                    p.id,
                    p.shape,
                    p.len,
                    got[p.offset + j],
                    p.expected(w, j)
                ));
            }
        }
    }
    Ok(in_wave)
}

/// Runs the soak: builds a scheduler, runs a warm-up task, allocates the host
/// buffers, samples the start, runs `cfg.tasks` tasks in waves of `cfg.wave` with a
/// sample after each, drops the host buffers and then the scheduler, sampling again.
/// `bar` shows progress (`ProgressBar::hidden()` where none is wanted).
///
/// # Errors
/// Whatever the scheduler returns: building it, allocating, submitting, a failed task.
pub fn run(cfg: &Config, bar: &ProgressBar) -> chariot::Result<Outcome> {
    let mut out = Outcome { threads_before: threads_now(), ..Outcome::default() };
    let sched = Scheduler::builder().backend(cfg.backend.clone()).gpus(cfg.gpus).streams(cfg.streams).build()?;
    out.backend = sched.backend_name().to_string();
    let k = sched.register_kernel(kernel())?;
    let inspect_wrong = Arc::new(AtomicU64::new(0));
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let mut next_id = 0u64;
    let mut make_plan = |n: usize, max_len: usize| {
        let mut offset = 0;
        (0..n)
            .map(|_| {
                let len = rng.random_range(1..=max_len);
                let shape = match rng.random_range(0..8) {
                    0 => Shape::Produce,
                    1 => Shape::Inspect,
                    _ => Shape::Plain,
                };
                let p = Planned { id: next_id, offset, len, shape, a: rng.random::<u32>() | 1, b: rng.random() };
                next_id += 1;
                offset += len;
                p
            })
            .collect::<Vec<_>>()
    };

    // Warm-up: a task of each shape, of the largest size, on buffers of their own, so
    // that what the backend sets up at its first commands (CUDA: module and launch
    // resources; executioner work) is already in the start values.
    let mut warm = Host {
        inp: sched.alloc_host(cfg.max_len.saturating_mul(3))?,
        res: sched.alloc_host(cfg.max_len.saturating_mul(3))?,
    };
    let plan = make_plan(3, 1)
        .into_iter()
        .zip([Shape::Plain, Shape::Produce, Shape::Inspect])
        .enumerate()
        .map(|(i, (p, shape))| Planned { len: cfg.max_len, offset: i * cfg.max_len, shape, ..p })
        .collect::<Vec<_>>();
    wave(&sched, &k, &mut warm, 0, &plan, &inspect_wrong, &mut out)?;
    drop(warm);
    out.elements_checked = 0;
    out.mapped_before_kib = driver_mapped_kib();

    // The run's host buffers, every page written once so that the start sample holds them.
    let capacity = cfg.wave.saturating_mul(cfg.max_len);
    let mut host = Host { inp: sched.alloc_host(capacity)?, res: sched.alloc_host(capacity)? };
    out.host_buffers_kib = (2 * capacity * std::mem::size_of::<u32>() / 1024) as u64;
    host.inp.write().fill(0);
    host.res.write().fill(SENTINEL);
    let t0 = Instant::now();
    out.samples.push(Sample::now(0, 0, 0.0, &sched, None));
    bar.set_length(cfg.tasks);
    let (mut done, mut w) = (0u64, 0usize);
    while done < cfg.tasks {
        w += 1;
        let n = (cfg.tasks - done).min(cfg.wave as u64) as usize;
        let plan = make_plan(n, cfg.max_len);
        let in_wave = wave(&sched, &k, &mut host, w as u64, &plan, &inspect_wrong, &mut out)?;
        done += n as u64;
        bar.inc(n as u64);
        let s = Sample::now(w, done, t0.elapsed().as_secs_f64(), &sched, in_wave);
        bar.set_message(format!(
            "RSS {} MiB, {} threads",
            s.rss_kib.map_or("?".into(), |k| (k / 1024).to_string()),
            s.threads.map_or("?".into(), |t| t.to_string())
        ));
        out.samples.push(s);
    }
    out.seconds = t0.elapsed().as_secs_f64();
    out.tasks = done;
    let bad_inspections = inspect_wrong.load(Ordering::Relaxed);
    if bad_inspections > 0 {
        out.wrong_count += bad_inspections;
        out.wrong.push(format!("{bad_inspections} reading callback(s) saw a wrong output chunk"));
    }
    drop(host);
    out.mapped_after_kib = driver_mapped_kib();
    out.rss_after_kib = proc_status().0;
    drop(sched);
    out.threads_after = threads_now();
    Ok(out)
}

impl Outcome {
    /// Everything that makes the run a failure; empty when it passed. `rss_allowance_kib`
    /// is the growth of resident memory allowed over the first wave's sample.
    pub fn problems(&self, rss_allowance_kib: u64) -> Vec<String> {
        let mut v = Vec::new();
        if self.wrong_count > 0 {
            v.push(format!("{} wrong result(s); first: {}", self.wrong_count, self.wrong.join("; ")));
        }
        let Some(start) = self.samples.first() else {
            v.push("no samples".into());
            return v;
        };
        if let Some(t0) = start.threads {
            if let Some(s) = self.samples.iter().find(|s| s.threads.is_some_and(|t| t > t0)) {
                v.push(format!("threads grew from {t0} at the start to {:?} after wave {}", s.threads, s.wave));
            }
        }
        if let Some(s) = self.samples.iter().find(|s| s.device_bytes != start.device_bytes) {
            v.push(format!(
                "device memory in use was {:?} bytes after wave {} (its buffers dropped), {:?} at the start",
                s.device_bytes, s.wave, start.device_bytes
            ));
        }
        if self.mapped_after_kib != self.mapped_before_kib {
            v.push(format!(
                "the driver's mappings (pinned host memory) were {:?} KiB before the host buffers and {:?} KiB after they were dropped",
                self.mapped_before_kib, self.mapped_after_kib
            ));
        }
        if let Some(base) = self.samples.get(1).and_then(|s| s.rss_kib) {
            let limit = base.saturating_add(rss_allowance_kib);
            if let Some(s) = self.samples.iter().skip(2).find(|s| s.rss_kib.is_some_and(|r| r > limit)) {
                v.push(format!(
                    "resident memory grew from {base} KiB after wave 1 to {:?} KiB after wave {}, more than the {rss_allowance_kib} KiB allowed",
                    s.rss_kib, s.wave
                ));
            }
        }
        v
    }

    /// Resident memory after wave 1 and the most after any later wave, KiB.
    pub fn rss_growth(&self) -> Option<(u64, u64)> {
        let base = self.samples.get(1)?.rss_kib?;
        Some((base, self.samples.iter().skip(1).filter_map(|s| s.rss_kib).max().unwrap_or(base)))
    }

    /// The summary printed at the end.
    pub fn summary(&self) -> String {
        let rss: Vec<u64> = self.samples.iter().filter_map(|s| s.rss_kib).collect();
        let threads: Vec<u64> = self.samples.iter().filter_map(|s| s.threads).collect();
        let mib = |k: Option<u64>| k.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
        let opt = |t: Option<u64>| t.map_or("n/a".into(), |t| t.to_string());
        let first = self.samples.first().copied().unwrap_or_default();
        let last = self.samples.last().copied().unwrap_or_default();
        let in_wave = self.samples.iter().filter_map(|s| s.device_bytes_in_wave).max();
        format!(
            "backend {} | {} tasks in {} waves, {:.1} s, {:.0} tasks/s | {} output elements checked, {} wrong\n\
             RSS: start {}, after wave 1 {}, last {}, max {} (growth after wave 1: {} KiB), after dropping the host buffers {}\n\
             threads: before build {}, start {}, last {}, max {}, after drop {}\n\
             driver mappings: before the host buffers ({} KiB) {} KiB, start {} KiB, last {} KiB, after dropping them {} KiB\n\
             device memory in use: start {} B, last {} B (buffers dropped); with a wave's buffers up to {} B",
            self.backend,
            self.tasks,
            self.samples.len().saturating_sub(1),
            self.seconds,
            self.tasks as f64 / self.seconds.max(1e-9),
            self.elements_checked,
            self.wrong_count,
            mib(rss.first().copied()),
            mib(self.samples.get(1).and_then(|s| s.rss_kib)),
            mib(rss.last().copied()),
            mib(rss.iter().max().copied()),
            self.rss_growth().map_or("n/a".into(), |(base, max)| (max - base).to_string()),
            mib(self.rss_after_kib),
            opt(self.threads_before),
            opt(threads.first().copied()),
            opt(threads.last().copied()),
            opt(threads.iter().max().copied()),
            opt(self.threads_after),
            self.host_buffers_kib,
            opt(self.mapped_before_kib),
            opt(first.driver_mapped_kib),
            opt(last.driver_mapped_kib),
            opt(self.mapped_after_kib),
            opt(first.device_bytes),
            opt(last.device_bytes),
            opt(in_wave),
        )
    }

    /// The samples as CSV.
    pub fn csv(&self) -> String {
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        let mut s =
            String::from("wave,tasks,elapsed_s,rss_kib,threads,driver_mapped_kib,device_bytes,device_bytes_in_wave\n");
        for x in &self.samples {
            s += &format!(
                "{},{},{:.3},{},{},{},{},{}\n",
                x.wave,
                x.tasks,
                x.elapsed_s,
                opt(x.rss_kib),
                opt(x.threads),
                opt(x.driver_mapped_kib),
                opt(x.device_bytes),
                opt(x.device_bytes_in_wave)
            );
        }
        s
    }
}
