//! The SETI spectrometer of the paper (Fig. 1, §6.3, issue 5): the 2-D FFT of a complex
//! matrix in pinned host memory, in two phases of N tasks, streamed through the GPUs
//! chunk by chunk, so the matrix is bounded by host memory, not by GPU memory.
//!
//! * Column phase: task i downloads columns i·x/N.. of all y rows (`download_2d`), runs
//!   our column-FFT kernel (`kernels/fft_columns.cu`: a block per tile of adjacent
//!   columns, so that every warp access reads whole rows of the tile; radix-2 in shared
//!   memory, one global round trip per pass; cache-streaming loads and stores, because
//!   ordinary L2 traffic of that size slows the pitched copies that follow it by 68%,
//!   results/nvidia-h100-x1/SETI.md) and writes the block back (`readback_2d`).
//! * Row phase: task i takes y/N contiguous rows (`download`); a CPU callback makes or
//!   finds the cuFFT plan of its GPU and stream slot, a GPU callback runs the batched
//!   C2C transform on the task's stream, `readback` returns the rows.
//!
//! Alongside, in the same run: serial (S = 1, no overlap), the in-core way (upload the
//! whole matrix, one cuFFT 2-D plan, download) and rustfft on all CPU cores, which is
//! also the reference every result is checked against. `--diagnose` runs the column
//! phase alone with other work between its copies (none, a kernel that only waits, a
//! kernel that only moves data, each column kernel) and after other work (the row
//! phase), to find what slows it.
//!
//! `cargo run --release --example seti -- --help`

use chariot::fft::{cpu_forward_2d, FftPlans, FftShape};
use chariot::{
    Arg, Backend, Copy2d, DeviceBuffer, HardwareBound, HostBuffer, Kernel, KernelHandle, LinkRates, Order, Param,
    Report, Resource, Scheduler, SimProfile, Stage, TaskWork,
};
use clap::Parser;
use num_complex::Complex32;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

type C = Complex32;

/// CUDA C of the column-FFT kernels: `fft_columns` (tiled) and `fft_columns_strided`.
const COLUMN_KERNEL: &str = include_str!("../kernels/fft_columns.cu");
/// Complex values of the tiled kernel's shared tile (`TILE`).
const TILE: usize = 4096;
/// log2 of the largest radix a pass of the tiled kernel takes (`LOG_TW`: its twiddle table).
const LOG_TW: u32 = 11;
/// Threads per block of the tiled kernel.
const TILED_THREADS: u32 = 512;
/// Complex elements of one column the strided kernel transforms in shared memory (`SMEM`).
const SMEM: usize = 4096;

/// The diagnosis's kernels, put between the copies in place of the FFT. `spin` only
/// waits: it reads the GPU's nanosecond timer until `ns` have passed and touches no
/// memory. `touch` reads and rewrites `n` complex values of a buffer the copies never
/// use (each value + 1), cache-streaming when `streaming` is set, as the FFT would.
const DIAG_KERNELS: &str = r#"extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
extern "C" __global__ void touch(float2* buf, unsigned long long n, unsigned streaming) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float2 v = streaming ? __ldcs(buf + i) : buf[i];
        v.x += 1.0f;
        if (streaming) __stcs(buf + i, v); else buf[i] = v;
    }
}"#;

/// One configuration of the pipelined runs: chariot's defaults (`auto`), or S and,
/// where given, the stage depth and the kernel concurrency set by hand.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shape {
    streams: Option<usize>,
    depth: Option<usize>,
    kernels: Option<usize>,
    /// The kernel stage's capacity in GPU-fills (`Builder::kernel_fills`).
    fills: Option<f64>,
}

impl Shape {
    const AUTO: Shape = Shape { streams: None, depth: None, kernels: None, fills: None };

    /// S streams, the rest chosen by chariot.
    fn streams(s: usize) -> Shape {
        Shape { streams: Some(s), ..Shape::AUTO }
    }

    /// This shape with `depth` where it gives none.
    fn or_depth(self, depth: Option<usize>) -> Shape {
        Shape { depth: self.depth.or(depth), ..self }
    }

    /// `auto`, `S4`, `S4 d2`, `S4 d2 k1`.
    fn name(&self) -> String {
        let Some(s) = self.streams else { return "auto".into() };
        let mut name = format!("S{s}");
        if let Some(d) = self.depth {
            name += &format!(" d{d}");
        }
        if let Some(k) = self.kernels {
            name += &format!(" k{k}");
        }
        if let Some(f) = self.fills {
            name += &format!(" f{f}");
        }
        name
    }

    fn builder(&self, mut b: chariot::Builder) -> chariot::Builder {
        if let Some(s) = self.streams {
            b = b.streams(s);
        }
        if let Some(d) = self.depth {
            b = b.stage_depth(d);
        }
        if let Some(k) = self.kernels {
            b = b.kernel_concurrency(k);
        }
        if let Some(f) = self.fills {
            b = b.kernel_fills(f);
        }
        // Set by hand throughout: no adaptation.
        if self.streams.is_some() && self.depth.is_some() && (self.kernels.is_some() || self.fills.is_some()) {
            b = b.adapt(false);
        }
        b
    }
}

impl std::str::FromStr for Shape {
    type Err = String;

    fn from_str(text: &str) -> Result<Shape, String> {
        if text == "auto" {
            return Ok(Shape::AUTO);
        }
        let parts: Vec<&str> = text.split(':').collect();
        let number = |p: &str| {
            p.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{text}`: `{p}` is not a positive number (auto or S[:DEPTH[:KERNELS]])"))
        };
        if parts.len() > 3 {
            return Err(format!("`{text}`: at most S:DEPTH:KERNELS"));
        }
        // The third part: a kernel count (`4` or `k4`) or GPU-fills (`f2`, `f0.5`).
        let (mut kernels, mut fills) = (None, None);
        match parts.get(2) {
            Some(p) if p.starts_with('f') => {
                let f = p[1..].parse::<f64>().ok().filter(|f| f.is_finite() && *f > 0.0);
                fills = Some(f.ok_or_else(|| format!("`{text}`: `{p}` is not f and a positive number of fills"))?);
            }
            Some(p) => kernels = Some(number(p.trim_start_matches('k'))?),
            None => {}
        }
        Ok(Shape {
            streams: Some(number(parts[0])?),
            depth: parts.get(1).map(|p| number(p)).transpose()?,
            kernels,
            fills,
        })
    }
}

/// Two-phase 2-D FFT of an x × y complex matrix streamed through D GPUs × S streams,
/// against serial, in-core cuFFT and rustfft on the CPU.
#[derive(Parser, Debug, Clone)]
#[command(name = "seti", long_about = None)]
struct Cli {
    /// Columns x (power of two).
    #[arg(long, default_value_t = 8192)]
    x: usize,
    /// Rows y (power of two).
    #[arg(long, default_value_t = 8192)]
    y: usize,
    /// Tasks per phase N (power of two, at most x and y).
    #[arg(long, default_value_t = 16)]
    tasks: usize,
    /// GPUs D.
    #[arg(long, default_value_t = 1)]
    gpus: usize,
    /// Pipelined configurations to run, comma-separated: `auto` (chariot's defaults,
    /// chosen from the hardware), or S with, where given, the stage depth and kernel
    /// concurrency (a count, or `f` and GPU-fills) set by hand, `S[:DEPTH[:KERNELS]]`
    /// (e.g. `4`, `4:2`, `8:2:1`, `16:2:f2`; all three set: no adaptation). The serial
    /// baseline (S = 1) always runs first.
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    streams: Vec<Shape>,
    /// Stage depth of the configurations that give none (default: chariot's choice).
    #[arg(long)]
    depth: Option<usize>,
    /// Timed repetitions of each configuration after one warm-up, alternated between
    /// the configurations; the median is reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Column kernel of the two-phase runs: tiled (a block per tile of adjacent
    /// columns), tiled-cs (the same with cache-streaming loads and stores) or strided
    /// (the first kernel, a block per column).
    #[arg(long, default_value = "tiled-cs", value_parser = ["tiled", "tiled-cs", "strided"])]
    kernel: String,
    /// Backend: auto, cuda or sim.
    #[arg(long, default_value = "auto", value_parser = ["auto", "cuda", "sim"])]
    backend: String,
    /// On sim: modeled time at this factor of the modeled H100 (0: no modeled time).
    #[arg(long, default_value_t = 1.0)]
    sim_scale: f64,
    /// Skip the in-core cuFFT 2-D comparison.
    #[arg(long)]
    no_incore: bool,
    /// Also run each S with the same copies and no FFT at all (diagnosis: what the
    /// copies alone cost in the pipeline).
    #[arg(long)]
    copies_only: bool,
    /// Diagnosis of the column phase, run alone for each S: its copies with nothing
    /// between them; with a kernel that waits as long as the strided kernel and touches
    /// no memory; with a kernel that reads and rewrites a buffer the copies never use
    /// (2 chunks or 4 MiB, plain or cache-streaming); with each column kernel; and each
    /// column kernel with no copies (on device-resident data); and the tiled-cs phase
    /// after the row phase or after the plain touching kernel. Prints the makespan, the
    /// median command of each stage (each task's copies after other work), and the
    /// pitches of the 2-D copies.
    #[arg(long)]
    diagnose: bool,
    /// Run the diagnosis alone: no rustfft reference, copy-rate probe, two-phase runs,
    /// in-core run or checks.
    #[arg(long)]
    diagnose_only: bool,
    /// Timestamp commands on the device (chariot's `device_timing`) in every scheduler of
    /// the run; it serialises streams, so use it for command times, not makespans.
    #[arg(long)]
    device_timing: bool,
    /// CPU threads for rustfft (default: every core).
    #[arg(long)]
    cpu_threads: Option<usize>,
    /// Directory for seti.csv (appended to; created if missing).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seed of the noise.
    #[arg(long, default_value_t = 2013)]
    seed: u64,
}

// ---------------------------------------------------------------------------------
// The column FFT: the tiled kernel's algorithm on the CPU (its twin, and the test of
// its indexing), and the registration of the kernels.

fn bitrev(v: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        v.reverse_bits() >> (usize::BITS - bits)
    }
}

/// `e^{−2πi e/2^log_n}`.
fn unit_root(e: usize, log_n: u32) -> C {
    let (s, c) = (-2.0 * std::f64::consts::PI * e as f64 / (1u64 << log_n) as f64).sin_cos();
    C::new(c as f32, s as f32)
}

/// log2 of the largest radix of one pass with tiles of 2^log2tile columns (`LMAX`):
/// the tile holds TILE values, the twiddle table serves radices up to 2^LOG_TW.
fn log_lmax(log2tile: u32) -> u32 {
    (TILE.trailing_zeros() - log2tile).min(LOG_TW)
}

/// log2 of each pass's radix: log2rows split into as few passes of at most log_lmax as
/// will do, as evenly as possible, the first ones one larger (`pass_log`).
fn pass_logs(log2rows: u32, log_lmax: u32) -> Vec<u32> {
    let p = if log2rows == 0 { 1 } else { log2rows.div_ceil(log_lmax) };
    (0..p).map(|j| log2rows / p + u32::from(j < log2rows % p)).collect()
}

/// Line λ's digits k_0 (top bits) … k_{p−2} turned around: k_0 + L_0·k_1 + ….
fn digit_reverse(lam: usize, logs: &[u32]) -> usize {
    let inner = &logs[..logs.len() - 1];
    let mut hi: u32 = inner.iter().sum();
    let (mut rev, mut pos) = (0, 0);
    for &li in inner {
        hi -= li;
        rev |= ((lam >> hi) & ((1 << li) - 1)) << pos;
        pos += li;
    }
    rev
}

/// The tiled kernel's algorithm on one column `col` (scratch afterwards), written to
/// `out` (same length): four-step passes of radix at most 2^log_lmax in place, each an
/// L-point DFT of every line (bit-reversed load, radix-2 decimation in time) and the
/// twiddle W_{L·M}^{n2·k1}; the last pass writes to `out` in digit-reversed rows.
fn column_fft(col: &mut [C], out: &mut [C], log_lmax: u32) {
    let n = col.len();
    let log2rows = n.trailing_zeros();
    let logs = pass_logs(log2rows, log_lmax);
    let mut s = Vec::new();
    let mut log_ls = log2rows;
    for (j, &lg) in logs.iter().enumerate() {
        let log_m = log_ls - lg;
        let last = j + 1 == logs.len();
        for lam in 0..n >> lg {
            let n2 = lam & ((1 << log_m) - 1);
            let row = |n1: usize| ((lam >> log_m) << log_ls) + (n1 << log_m) + n2;
            s.clear();
            s.resize(1 << lg, C::default());
            for n1 in 0..1 << lg {
                s[bitrev(n1, lg)] = col[row(n1)];
            }
            for lh in 0..lg {
                let half = 1 << lh;
                for t in 0..s.len() / 2 {
                    let jj = t & (half - 1);
                    let i0 = ((t - jj) << 1) + jj;
                    let (a, b) = (s[i0], s[i0 + half] * unit_root(jj, lh + 1));
                    s[i0] = a + b;
                    s[i0 + half] = a - b;
                }
            }
            for (k1, &v) in s.iter().enumerate() {
                if last {
                    out[digit_reverse(lam, &logs) + (k1 << (log2rows - lg))] = v;
                } else {
                    col[row(k1)] = v * unit_root(n2 * k1, log_ls);
                }
            }
        }
        log_ls = log_m;
    }
}

/// The kernel on the CPU: every column of a `rows × width` row-major block, with the
/// pass radices of tiles of 2^log2tile columns.
fn columns_twin(input: &[C], out: &mut [C], width: usize, rows: usize, log2tile: u32) {
    let (mut col, mut res) = (vec![C::default(); rows], vec![C::default(); rows]);
    for c in 0..width {
        for r in 0..rows {
            col[r] = input[r * width + c];
        }
        column_fft(&mut col, &mut res, log_lmax(log2tile));
        for r in 0..rows {
            out[r * width + c] = res[r];
        }
    }
}

/// log2 of the columns a block of the tiled kernel takes: enough blocks to fill an H100
/// (about 128 from 512 columns on), but at least 4 columns (a 32-byte sector of each
/// row) and at most 16 (a 128-byte line), and never more than the block has.
fn column_tile(width: usize) -> u32 {
    (width / 128).clamp(4, 16).min(width).ilog2()
}

/// Threads per block of the strided kernel.
fn column_block(rows: usize) -> u32 {
    (rows / 2).clamp(32, 1024) as u32
}

/// Checks the column kernels' common arguments on the CPU; (width, rows).
fn column_args(a: &chariot::TwinArgs<'_>) -> Result<(usize, usize), chariot::BoxError> {
    let (width, rows) = (a.u32(2)? as usize, a.u32(3)? as usize);
    if !rows.is_power_of_two() || a.u32(4)? != rows.trailing_zeros() {
        return Err(format!("rows {rows} must be a power of two given with its log2").into());
    }
    Ok((width, rows))
}

/// The tiled column kernel: `fft_columns(out, in, width, rows, log2rows, log2tile,
/// streaming)`, launched as `width / 2^log2tile` blocks of [`TILED_THREADS`]. The cache
/// hint changes nothing the twin computes.
fn column_kernel() -> Kernel {
    Kernel::new("fft_columns", COLUMN_KERNEL)
        .params([Param::Buffer, Param::Buffer, Param::U32, Param::U32, Param::U32, Param::U32, Param::U32])
        .cpu_twin(|a| {
            let (width, rows) = column_args(a)?;
            let log2tile = a.u32(5)?;
            if log2tile >= TILE.trailing_zeros() || width % (1 << log2tile) != 0 {
                return Err(
                    format!("a tile of 2^{log2tile} columns does not divide {width} columns or fill the tile").into()
                );
            }
            let (input, out) = a.in_out::<C, C>(1, 0)?;
            if width * rows > input.len().min(out.len()) {
                return Err("the block exceeds the buffers".into());
            }
            columns_twin(input, out, width, rows, log2tile);
            Ok(())
        })
        // Modeled: each pass reads and writes the block at 2 TB/s.
        .sim_cost(|_, s| {
            let (w, rows, lt) = (s.u32(2).unwrap_or(0) as f64, s.u32(3).unwrap_or(1), s.u32(5).unwrap_or(0));
            let passes = pass_logs(rows.max(1).trailing_zeros(), log_lmax(lt.min(TILE.trailing_zeros() - 1))).len();
            Duration::from_secs_f64(passes as f64 * 2.0 * 8.0 * w * rows as f64 / 2e12)
        })
}

/// The strided column kernel (the first one, one block a column), kept for the
/// diagnosis: `fft_columns_strided(out, in, width, rows, log2rows)`. Its twin is the
/// tiled kernel's: the same transform.
fn strided_kernel() -> Kernel {
    Kernel::new("fft_columns_strided", COLUMN_KERNEL)
        .params([Param::Buffer, Param::Buffer, Param::U32, Param::U32, Param::U32])
        .cpu_twin(|a| {
            let (width, rows) = column_args(a)?;
            let (input, out) = a.in_out::<C, C>(1, 0)?;
            if width * rows > input.len().min(out.len()) {
                return Err("the block exceeds the buffers".into());
            }
            columns_twin(input, out, width, rows, 0);
            Ok(())
        })
        // Modeled: each global DIF stage and the shared pass read and write the block
        // at 2 TB/s.
        .sim_cost(|_, s| {
            let (w, rows) = (s.u32(2).unwrap_or(0) as f64, s.u32(3).unwrap_or(1) as usize);
            let passes = 1 + (rows / SMEM).max(1).trailing_zeros() as usize;
            Duration::from_secs_f64(passes as f64 * 2.0 * 8.0 * w * rows as f64 / 2e12)
        })
}

/// The waiting kernel: `spin(ns)`, one block; on sim it does nothing for `ns`.
fn spin_kernel() -> Kernel {
    Kernel::new("spin", DIAG_KERNELS)
        .params([Param::U64])
        .cpu_twin(|_| Ok(()))
        .sim_cost(|_, s| Duration::from_nanos(s.u64(0).unwrap_or(0)))
}

/// The touching kernel: `touch(buf, n, streaming)` adds 1 to the real part of the first
/// `n` values of `buf`.
fn touch_kernel() -> Kernel {
    Kernel::new("touch", DIAG_KERNELS)
        .params([Param::Buffer, Param::U64, Param::U32])
        .cpu_twin(|a| {
            let n = usize::try_from(a.u64(1)?)?;
            let buf = a.buffer_mut::<C>(0)?;
            let part = buf.get_mut(..n).ok_or("n exceeds the buffer")?;
            part.iter_mut().for_each(|v| v.re += 1.0);
            Ok(())
        })
        // Modeled: one read and one write of each value at 2 TB/s.
        .sim_cost(|_, s| Duration::from_secs_f64(16.0 * s.u64(1).unwrap_or(0) as f64 / 2e12))
}

// ---------------------------------------------------------------------------------
// The test signal: tones at known bins plus uniform noise.

/// (row bin, column bin, amplitude) of each tone; bins are distinct for x, y ≥ 16.
fn tones(x: usize, y: usize) -> Vec<(usize, usize, f32)> {
    vec![(y / 8, x / 4, 1.0), ((3 * y / 4 + 1) % y, 5 % x, 0.5), (7 % y, x - 3, 0.25)]
}

/// Noise amplitude: each part uniform in [−NOISE, NOISE].
const NOISE: f32 = 0.5;

fn threads_default() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Fills the `y × x` row-major matrix: Σ a·e^{2πi(ky·r/y + kx·c/x)} + noise, on
/// `threads` threads; the same for a given seed, whatever the thread count.
fn fill_signal(m: &mut [C], x: usize, y: usize, seed: u64, threads: usize) {
    let tones = tones(x, y);
    let phasor = |k: usize, n: usize, i: usize| {
        let (s, c) = (2.0 * std::f64::consts::PI * ((k * i) % n) as f64 / n as f64).sin_cos();
        C::new(c as f32, s as f32)
    };
    let cols: Vec<Vec<C>> = tones.iter().map(|&(_, kx, a)| (0..x).map(|c| phasor(kx, x, c) * a).collect()).collect();
    let per = y.div_ceil(threads.max(1)) * x;
    std::thread::scope(|s| {
        for (t, chunk) in m[..x * y].chunks_mut(per).enumerate() {
            let (cols, tones) = (&cols, &tones);
            s.spawn(move || {
                for (i, row) in chunk.chunks_mut(x).enumerate() {
                    let r = t * per / x + i;
                    let rp: Vec<C> = tones.iter().map(|&(ky, _, _)| phasor(ky, y, r)).collect();
                    let mut state = seed ^ (r as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d;
                    let mut uniform = || {
                        state ^= state >> 12;
                        state ^= state << 25;
                        state ^= state >> 27;
                        let v = state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40;
                        (v as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * NOISE
                    };
                    for (c, v) in row.iter_mut().enumerate() {
                        let mut z = C::new(uniform(), uniform());
                        for (tone, p) in cols.iter().zip(&rp) {
                            z += tone[c] * p;
                        }
                        *v = z;
                    }
                }
            });
        }
    });
}

// ---------------------------------------------------------------------------------
// Checks.

/// ‖a − b‖₂ / ‖b‖₂, on `threads` threads.
fn rel_l2(a: &[C], b: &[C], threads: usize) -> f64 {
    let per = a.len().div_ceil(threads.max(1)).max(1);
    let (num, den) = std::thread::scope(|s| {
        let hs: Vec<_> = a
            .chunks(per)
            .zip(b.chunks(per))
            .map(|(a, b)| {
                s.spawn(move || {
                    a.iter()
                        .zip(b)
                        .fold((0f64, 0f64), |(n, d), (p, q)| (n + (*p - *q).norm_sqr() as f64, d + q.norm_sqr() as f64))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("a check thread panicked"))
            .fold((0.0, 0.0), |x, y| (x.0 + y.0, x.1 + y.1))
    });
    (num / den.max(f64::MIN_POSITIVE)).sqrt()
}

/// The error bound checked: 1e-5 · log2(x·y), relative, in L2.
fn error_bound(x: usize, y: usize) -> f64 {
    1e-5 * ((x * y) as f64).log2()
}

/// Relative error allowed at a tone's bin: six standard deviations of the noise there
/// (each noise part has variance NOISE²/3, so a bin's noise has norm about
/// NOISE·√(2xy/3)), plus 1e-4 for rounding.
fn peak_tolerance(x: usize, y: usize) -> f32 {
    let xy = (x * y) as f32;
    6.0 * NOISE * (2.0 * xy / 3.0).sqrt() / xy + 1e-4
}

/// Whether the largest bins of `spec` are exactly the tones' bins, each within
/// [`peak_tolerance`] of its expected value x·y·a (relative to x·y). `Err` says what is wrong.
fn check_peaks(spec: &[C], x: usize, y: usize) -> Result<(), String> {
    let tones = tones(x, y);
    let mut top: Vec<(f32, usize)> = Vec::new();
    for (i, v) in spec[..x * y].iter().enumerate() {
        let m = v.norm_sqr();
        if top.len() < tones.len() || m > top[top.len() - 1].0 {
            top.push((m, i));
            top.sort_by(|a, b| b.0.total_cmp(&a.0));
            top.truncate(tones.len());
        }
    }
    let scale = (x * y) as f32;
    for &(ky, kx, a) in &tones {
        let at = ky * x + kx;
        if !top.iter().any(|&(_, i)| i == at) {
            return Err(format!("tone at bin (row {ky}, column {kx}) is not among the {} largest bins", tones.len()));
        }
        let err = (spec[at] - C::new(a * scale, 0.0)).norm() / scale;
        if err > peak_tolerance(x, y) {
            return Err(format!(
                "tone at (row {ky}, column {kx}): {} against {}, error {err:.2e}",
                spec[at],
                a * scale
            ));
        }
    }
    Ok(())
}

/// Both checks of `result` against `reference`; returns the relative L2 error.
fn check(result: &[C], reference: &[C], x: usize, y: usize, threads: usize) -> Result<f64, String> {
    let e = rel_l2(&result[..x * y], &reference[..x * y], threads);
    if e.is_nan() || e > error_bound(x, y) {
        return Err(format!("relative L2 error {e:.3e} exceeds the bound {:.3e}", error_bound(x, y)));
    }
    check_peaks(result, x, y)?;
    Ok(e)
}

// ---------------------------------------------------------------------------------
// The two phases.

/// Which column kernel a column phase runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnKernel {
    /// `fft_columns`: a block per tile of adjacent columns.
    Tiled,
    /// `fft_columns` with cache-streaming loads and stores.
    TiledStreaming,
    /// `fft_columns_strided`: a block per column (the first kernel).
    Strided,
}

impl ColumnKernel {
    /// The kernel `--kernel` names.
    fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "tiled" => Ok(ColumnKernel::Tiled),
            "tiled-cs" => Ok(ColumnKernel::TiledStreaming),
            "strided" => Ok(ColumnKernel::Strided),
            other => Err(format!("--kernel {other}: not tiled, tiled-cs or strided")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ColumnKernel::Tiled => "tiled",
            ColumnKernel::TiledStreaming => "tiled-cs",
            ColumnKernel::Strided => "strided",
        }
    }
}

/// What the column phase runs between its copies; the diagnosis varies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnWork {
    /// The column FFT with this kernel (the example's phase).
    Fft(ColumnKernel),
    /// No kernel: the readback returns what was downloaded. With it the row phase runs
    /// its copies only too.
    CopiesOnly,
    /// The waiting kernel for this many ns, then the readback of what was downloaded.
    Spin(u64),
    /// The touching kernel on this many values of a buffer the copies never use
    /// (cache-streaming or not), then the readback of what was downloaded.
    Touch { values: usize, streaming: bool },
    /// The kernel alone, on what the device buffers hold: no copies.
    KernelOnly(ColumnKernel),
}

impl ColumnWork {
    /// The name in the diagnosis table and the CSV's `way` (after `diag_`).
    fn name(self) -> String {
        match self {
            ColumnWork::Fft(k) => format!("copies+{}", k.name()),
            ColumnWork::CopiesOnly => "copies".into(),
            ColumnWork::Spin(_) => "copies+spin".into(),
            ColumnWork::Touch { values, streaming } => {
                format!("copies+touch{}{}", size_name(values), if streaming { "-cs" } else { "" })
            }
            ColumnWork::KernelOnly(k) => format!("{}_alone", k.name()),
        }
    }
}

/// `values` complex values in MiB (`64M`) or, under 1 MiB, KiB (`8K`).
fn size_name(values: usize) -> String {
    let bytes = values * std::mem::size_of::<C>();
    if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else {
        format!("{}K", bytes >> 10)
    }
}

/// What one scheduler needs for the two-phase FFT.
///
/// Fields drop in order: the buffers and plans before the scheduler, whose shutdown
/// returns the buffers' memory to the driver.
struct Pipeline {
    d_in: DeviceBuffer<C>,
    d_out: DeviceBuffer<C>,
    /// The touching kernel's buffer (the diagnosis allocates it).
    d_touch: Option<DeviceBuffer<C>>,
    plans: Arc<FftPlans>,
    tiled: KernelHandle,
    strided: KernelHandle,
    spin: KernelHandle,
    touch: KernelHandle,
    sched: Scheduler,
    /// What the column phase runs (the FFT with the tiled kernel unless changed).
    work: ColumnWork,
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The shape of column task `i`'s 2-D copies: columns i·w.. of all y rows, packed w wide
/// on the device.
fn column_copy(i: usize, w: usize, x: usize, y: usize) -> Copy2d {
    Copy2d { host_offset: i * w, host_pitch: x, dev_offset: 0, dev_pitch: w, width: w, height: y }
}

impl Pipeline {
    #[allow(clippy::too_many_arguments)]
    fn new(
        backend: &Backend,
        gpus: usize,
        shape: Shape,
        device_timing: bool,
        x: usize,
        y: usize,
        n: usize,
    ) -> Result<Self, String> {
        let builder =
            Scheduler::builder().backend(backend.clone()).gpus(gpus).device_timing(device_timing).order(Order::Fcfs);
        let sched = shape.builder(builder).build().map_err(|e| format!("{}: {e}", shape.name()))?;
        let chunk = x * y / n;
        let tiled = sched.register_kernel(column_kernel()).map_err(err)?;
        let strided = sched.register_kernel(strided_kernel()).map_err(err)?;
        let spin = sched.register_kernel(spin_kernel()).map_err(err)?;
        let touch = sched.register_kernel(touch_kernel()).map_err(err)?;
        let plans = FftPlans::new(&sched).map_err(err)?;
        let d_in = sched.alloc::<C>(chunk).map_err(err)?;
        let d_out = sched.alloc::<C>(chunk).map_err(err)?;
        Ok(Pipeline {
            d_in,
            d_out,
            d_touch: None,
            plans,
            tiled,
            strided,
            spin,
            touch,
            sched,
            work: ColumnWork::Fft(ColumnKernel::TiledStreaming),
        })
    }

    /// The share of GPU 0's SMs a launch of column kernel `k` on `w` columns fills.
    fn column_fill(&self, k: ColumnKernel, w: usize, y: usize) -> f64 {
        let fill = match k {
            ColumnKernel::Tiled | ColumnKernel::TiledStreaming => {
                self.sched.launch_fill(0, &self.tiled, (w >> column_tile(w)) as u32, TILED_THREADS, 0)
            }
            ColumnKernel::Strided => self.sched.launch_fill(0, &self.strided, w as u32, column_block(y), 0),
        };
        fill.unwrap_or(1.0)
    }

    /// Adds the launch of column kernel `k` on the `y` rows of `w` columns of `d_in` to `t`.
    fn launch_columns<'a>(
        &self,
        t: chariot::TaskBuilder<'a>,
        k: ColumnKernel,
        w: usize,
        y: usize,
    ) -> chariot::TaskBuilder<'a> {
        let mut args = vec![
            Arg::buffer(&self.d_out),
            Arg::buffer(&self.d_in),
            Arg::u32(w as u32),
            Arg::u32(y as u32),
            Arg::u32(y.trailing_zeros()),
        ];
        match k {
            ColumnKernel::Tiled | ColumnKernel::TiledStreaming => {
                let lt = column_tile(w);
                args.push(Arg::u32(lt));
                args.push(Arg::u32(u32::from(k == ColumnKernel::TiledStreaming)));
                t.launch(&self.tiled, (w >> lt) as u32, TILED_THREADS, 0, &args)
            }
            ColumnKernel::Strided => t.launch(&self.strided, w as u32, column_block(y), 0, &args),
        }
    }

    /// The column phase: `input` → `work`, column FFTs (or what `self.work` says).
    fn columns(
        &self,
        input: &HostBuffer<C>,
        work: &HostBuffer<C>,
        x: usize,
        y: usize,
        n: usize,
    ) -> Result<Report, String> {
        let w = x / n;
        for i in 0..n {
            let shape = column_copy(i, w, x, y);
            let t = self.sched.task(i as u64, (w * y) as u64);
            let t = match self.work {
                ColumnWork::Fft(k) => self
                    .launch_columns(t.download_2d(&self.d_in, input, shape), k, w, y)
                    .readback_2d(work, &self.d_out, shape),
                ColumnWork::CopiesOnly => t.download_2d(&self.d_in, input, shape).readback_2d(work, &self.d_in, shape),
                ColumnWork::Spin(ns) => t
                    .download_2d(&self.d_in, input, shape)
                    .launch(&self.spin, 1, 32, 0, &[Arg::u64(ns)])
                    .readback_2d(work, &self.d_in, shape),
                ColumnWork::Touch { values, streaming } => {
                    let d = self.d_touch.as_ref().ok_or("the touching kernel has no buffer")?;
                    let args = [Arg::buffer(d), Arg::u64(values as u64), Arg::u32(u32::from(streaming))];
                    t.download_2d(&self.d_in, input, shape)
                        .launch(&self.touch, 264, 1024, 0, &args)
                        .readback_2d(work, &self.d_in, shape)
                }
                ColumnWork::KernelOnly(k) => self.launch_columns(t, k, w, y),
            };
            t.submit().map_err(err)?;
        }
        self.sched.synchronize().map_err(err)
    }

    /// The row phase: row FFTs of `work` in place, cuFFT through the plan cache.
    fn rows(&self, work: &HostBuffer<C>, x: usize, y: usize, n: usize) -> Result<Report, String> {
        let h = y / n;
        let shape = FftShape::Rows { len: x, batch: h };
        for i in 0..n {
            let r = i * h * x..(i + 1) * h * x;
            let (p1, p2, d) = (self.plans.clone(), self.plans.clone(), self.d_in.clone());
            let t = self.sched.task((n + i) as u64, (h * x) as u64);
            let t = if self.work == ColumnWork::CopiesOnly {
                t.download(&self.d_in, 0, work, r.clone())
            } else {
                t.callback(Resource::Cpu, move |info| p1.prepare(info, shape))
                    .download(&self.d_in, 0, work, r.clone())
                    .gpu_callback(move |call| p2.forward(call, &d, shape))
            };
            t.readback(work, r, &self.d_in, 0).submit().map_err(err)?;
        }
        self.sched.synchronize().map_err(err)
    }

    /// Both phases; (column report, row report, wall time of both).
    fn run(&self, input: &HostBuffer<C>, work: &HostBuffer<C>, x: usize, y: usize, n: usize) -> Result<Run, String> {
        let t0 = Instant::now();
        let col = self.columns(input, work, x, y, n)?;
        let row = self.rows(work, x, y, n)?;
        Ok(Run { wall_ns: t0.elapsed().as_nanos() as u64, col, row })
    }
}

/// The hardware-aware bounds of one run's two phases: `n` chunks of `chunk_bytes` each
/// way, the kernels' SM-times `k_col` and `k_row`, at the probed rates raised to what the
/// run's own copies achieved (no run can beat its own copies).
#[allow(clippy::too_many_arguments)]
fn run_bounds(
    run: &Run,
    k_col: u64,
    k_row: u64,
    chunk_bytes: u64,
    n: usize,
    gpus: usize,
    rates_col: LinkRates,
    rates_row: LinkRates,
) -> (HardwareBound, HardwareBound) {
    let bound = |k: u64, probe: LinkRates, r: &Report| {
        let work = vec![TaskWork { up_bytes: chunk_bytes, kernel_ns: k, down_bytes: chunk_bytes }; n];
        let rates = probe.at_least(LinkRates::observed(&r.records));
        if gpus > 1 {
            HardwareBound::multi_gpu(&work, gpus, rates, rates.times(gpus as f64))
        } else {
            HardwareBound::one_gpu(&work, rates)
        }
    };
    (bound(k_col, rates_col, &run.col), bound(k_row, rates_row, &run.row))
}

#[derive(Clone)]
struct Run {
    wall_ns: u64,
    col: Report,
    row: Report,
}

impl Run {
    /// T: both phases' makespans.
    fn t_ns(&self) -> u64 {
        self.col.makespan_ns + self.row.makespan_ns
    }
}

/// Σ of command durations of `stage`, ns.
fn stage_sum(r: &Report, stage: Stage) -> u64 {
    r.records.iter().filter(|c| c.stage == stage).map(|c| c.duration_ns()).sum()
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Sustained copy rates of one phase's copies (bytes/ns): uploads alone, readbacks
/// alone, both at once, each the slope between 2 and n back-to-back chunks (4 streams,
/// depth 2, so that engines never wait for the dispatcher and fixed costs cancel).
fn probe_rates(
    p: &Pipeline,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    x: usize,
    y: usize,
    n: usize,
    columns: bool,
) -> Result<LinkRates, String> {
    let chunk = x * y / n;
    let w = x / n;
    let makespan = |kind: u8, count: usize| -> Result<f64, String> {
        for i in 0..count {
            let (t_up, t_down) = (2 * i as u64, 2 * i as u64 + 1);
            if kind != 1 {
                let t = p.sched.task(t_up, 1);
                let t = if columns {
                    t.download_2d(&p.d_in, input, column_copy(i, w, x, y))
                } else {
                    t.download(&p.d_in, 0, input, i * chunk..(i + 1) * chunk)
                };
                t.submit().map_err(err)?;
            }
            if kind != 0 {
                let t = p.sched.task(t_down, 1);
                let t = if columns {
                    t.readback_2d(work, &p.d_out, column_copy(i, w, x, y))
                } else {
                    t.readback(work, i * chunk..(i + 1) * chunk, &p.d_out, 0)
                };
                t.submit().map_err(err)?;
            }
        }
        Ok(p.sched.synchronize().map_err(err)?.makespan_ns as f64)
    };
    let bytes = (chunk * 8) as f64;
    let (short, long) = (2.min(n), n.max(3).min(n.max(2)));
    let slope = |kind: u8| -> Result<f64, String> {
        if long > short {
            let (a, b) = (makespan(kind, short)?, makespan(kind, long)?);
            Ok(((b - a) / (long - short) as f64).max(1.0))
        } else {
            Ok((makespan(kind, long)? / long as f64).max(1.0))
        }
    };
    makespan(2, short)?; // warm-up
    Ok(LinkRates { up: bytes / slope(0)?, down: bytes / slope(1)?, both: 2.0 * bytes / slope(2)? })
}

/// The median of `repeat` runs of the column phase after a warm-up, by makespan.
fn median_columns(
    p: &Pipeline,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    cli: &Cli,
    before: Before,
) -> Result<Report, String> {
    let mut runs = Vec::new();
    for i in 0..=cli.repeat {
        match before {
            Before::Nothing => {}
            Before::Rows => {
                p.rows(work, cli.x, cli.y, cli.tasks)?;
            }
            Before::Touch(values) => {
                let d = p.d_touch.as_ref().ok_or("the touching kernel has no buffer")?;
                let args = [Arg::buffer(d), Arg::u64(values as u64), Arg::u32(0)];
                p.sched.task(u64::MAX, 1).launch(&p.touch, 264, 1024, 0, &args).submit().map_err(err)?;
                p.sched.synchronize().map_err(err)?;
            }
        }
        let r = p.columns(input, work, cli.x, cli.y, cli.tasks)?;
        if i > 0 {
            runs.push(r);
        }
    }
    runs.sort_by_key(|r| r.makespan_ns);
    Ok(runs.swap_remove(runs.len() / 2))
}

/// What the diagnosis runs before each column phase it measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Before {
    Nothing,
    /// The row phase (cuFFT), as in the two-phase runs.
    Rows,
    /// The touching kernel, plain, on this many values of its buffer.
    Touch(usize),
}

impl Before {
    /// The suffix of the column work's name.
    fn suffix(self) -> String {
        match self {
            Before::Nothing => String::new(),
            Before::Rows => "_after_rows".into(),
            Before::Touch(values) => format!("_after_touch{}", size_name(values)),
        }
    }
}

/// The duration of each command of `stage` in task order, ms, for a log line.
fn stage_list(r: &Report, stage: Stage) -> String {
    let mut v: Vec<(u64, u64)> =
        r.records.iter().filter(|c| c.stage == stage).map(|c| (c.task.0, c.duration_ns())).collect();
    v.sort_unstable();
    v.iter().map(|&(_, d)| format!("{:.2}", ms(d))).collect::<Vec<_>>().join(" ")
}

/// Median duration of one command of `stage`, ns (0 when there is none).
fn stage_median(r: &Report, stage: Stage) -> u64 {
    median(r.records.iter().filter(|c| c.stage == stage).map(|c| c.duration_ns()).collect())
}

/// The diagnosis of the column phase (`--diagnose`): for each S, the phase alone with
/// each [`ColumnWork`]; prints the makespan and the median and total command time of
/// each stage, against the phase's bound `col_bound_ns` where known. Returns CSV rows.
fn diagnose(
    cli: &Cli,
    backend: &Backend,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    shapes: &[Shape],
    base: &dyn Fn(usize, usize, &str) -> String,
    col_bound_ns: Option<u64>,
) -> Result<Vec<String>, String> {
    let (x, y, n) = (cli.x, cli.y, cli.tasks);
    let (w, size) = (x / n, std::mem::size_of::<C>());
    let of512 = |b: usize| if b % 512 == 0 { "a multiple of 512" } else { "not a multiple of 512" };
    println!(
        "\ndiagnosis of the column phase, run alone (depth {:?}{}): each 2-D copy moves {y} rows of {} B; host pitch {} B ({}), device pitch {} B ({}); task i starts at host byte i·{} ({}) and device byte 0",
        cli.depth,
        if cli.device_timing { ", device timing" } else { "" },
        w * size,
        x * size,
        of512(x * size),
        w * size,
        of512(w * size),
        w * size,
        of512(w * size),
    );
    println!(
        "tiled kernel: {} blocks of {TILED_THREADS} threads, {} columns each, passes of radix 2^{:?}; strided kernel: {w} blocks of {} threads",
        w >> column_tile(w),
        1 << column_tile(w),
        pass_logs(y.trailing_zeros(), log_lmax(column_tile(w))),
        column_block(y)
    );
    if let Some(b) = col_bound_ns {
        println!("hardware-aware bound of the column phase (with the tiled kernel's serial time): {:.3} ms", ms(b));
    }
    println!(
        "{:>10} {:>31} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "config", "column work", "T ms", "down ms", "kernel ms", "read ms", "Σ down", "Σ kernel", "Σ read"
    );
    let mut rows = Vec::new();
    // The waiting kernel waits as long as the strided kernel takes alone (S = 1 comes first).
    let mut spin_ns = 0;
    for &shape in shapes {
        let mut p = Pipeline::new(backend, cli.gpus, shape, cli.device_timing, x, y, n)?;
        let (s, depth, config) = (p.sched.streams(), p.sched.tuning().stage_depth, shape.name());
        let chunk = x * y / n;
        p.d_touch = Some(p.sched.alloc::<C>(2 * chunk).map_err(err)?);
        // Fills every stream slot's device buffers, so the kernels alone work on data.
        p.work = ColumnWork::CopiesOnly;
        p.columns(input, work, x, y, n)?;
        let kernels = [ColumnKernel::Strided, ColumnKernel::Tiled, ColumnKernel::TiledStreaming];
        let small = chunk.min(1 << 19);
        let works = kernels
            .map(ColumnWork::KernelOnly)
            .into_iter()
            .chain([
                ColumnWork::CopiesOnly,
                ColumnWork::Spin(0),
                ColumnWork::Touch { values: 2 * chunk, streaming: false },
                ColumnWork::Touch { values: 2 * chunk, streaming: true },
                ColumnWork::Touch { values: small, streaming: false },
            ])
            .chain(kernels.map(ColumnWork::Fft))
            .map(|w| (w, Before::Nothing))
            .chain([
                // The two-phase runs' column phase follows the row phase; then after a
                // plain kernel that moves as much data, with the copies only.
                (ColumnWork::Fft(ColumnKernel::TiledStreaming), Before::Rows),
                (ColumnWork::Fft(ColumnKernel::TiledStreaming), Before::Touch(2 * chunk)),
                (ColumnWork::CopiesOnly, Before::Touch(2 * chunk)),
            ]);
        for (mut what, before) in works {
            if let ColumnWork::Spin(_) = what {
                what = ColumnWork::Spin(spin_ns);
            }
            p.work = what;
            let r = median_columns(&p, input, work, cli, before)?;
            let name = format!("{}{}", what.name(), before.suffix());
            if what == ColumnWork::KernelOnly(ColumnKernel::Strided) && spin_ns == 0 {
                spin_ns = stage_median(&r, Stage::Kernel);
            }
            let stages = [Stage::Download, Stage::Kernel, Stage::Readback];
            let med = stages.map(|st| ms(stage_median(&r, st)));
            let sum = stages.map(|st| ms(stage_sum(&r, st)));
            println!(
                "{config:>10} {:>31} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                name,
                r.makespan_ms(),
                med[0],
                med[1],
                med[2],
                sum[0],
                sum[1],
                sum[2]
            );
            rows.push(format!(
                "{},{:.4},{:.4},,,,,,,,{:.4},{:.4},{:.4},,,,,,,,,",
                base(s, depth, &format!("diag_{name}")),
                r.makespan_ms(),
                r.makespan_ms(),
                sum[0],
                sum[1],
                sum[2]
            ));
            if before != Before::Nothing {
                println!("{:>35} each task's download, ms: {}", "", stage_list(&r, Stage::Download));
                println!("{:>35} each task's readback, ms: {}", "", stage_list(&r, Stage::Readback));
            }
        }
    }
    if spin_ns > 0 {
        println!("copies+spin: a kernel of one block that waits {:.3} ms (the strided kernel's median alone, S = 1) and touches no memory", ms(spin_ns));
    }
    println!("copies+touch<size>[-cs]: a kernel that reads and rewrites that much of a buffer the copies never use (-cs: cache-streaming)");
    println!("_after_rows, _after_touch<size>: the row phase (cuFFT) or the plain touching kernel runs before each column phase");
    Ok(rows)
}

/// The in-core way: upload the whole matrix, one 2-D transform, download. Returns its
/// report (median of `repeat` after a warm-up) and leaves the spectrum in `work`.
fn in_core(
    backend: &Backend,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    x: usize,
    y: usize,
    repeat: usize,
) -> Result<Report, String> {
    let sched = Scheduler::builder().backend(backend.clone()).streams(1).build().map_err(err)?;
    let plans = FftPlans::new(&sched).map_err(err)?;
    let d = sched.alloc::<C>(x * y).map_err(err)?;
    let shape = FftShape::TwoD { rows: y, cols: x };
    let mut reports = Vec::new();
    for i in 0..=repeat.max(1) {
        let (p, dd) = (plans.clone(), d.clone());
        sched
            .task(i as u64, (x * y) as u64)
            .download(&d, 0, input, ..)
            .gpu_callback(move |call| p.forward(call, &dd, shape))
            .readback(work, .., &d, 0)
            .submit()
            .map_err(err)?;
        let r = sched.synchronize().map_err(err)?;
        if i > 0 {
            reports.push(r);
        }
    }
    reports.sort_by_key(|r| r.makespan_ns);
    Ok(reports.swap_remove(reports.len() / 2))
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn main() -> ExitCode {
    match real_main(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn validate(cli: &Cli) -> Result<(), String> {
    let pow2 = |v: usize, name: &str| {
        if v.is_power_of_two() {
            Ok(())
        } else {
            Err(format!("--{name} {v} must be a power of two"))
        }
    };
    pow2(cli.x, "x")?;
    pow2(cli.y, "y")?;
    pow2(cli.tasks, "tasks")?;
    if cli.x < 16 || cli.y < 16 || cli.tasks > cli.x.min(cli.y) {
        return Err(format!("need x, y ≥ 16 and tasks ≤ min(x, y); got {} × {}, {} tasks", cli.x, cli.y, cli.tasks));
    }
    // x·y elements of 8 bytes must be addressable: checked before any product is formed.
    let elements = cli.x.checked_mul(cli.y).filter(|&e| e.checked_mul(8).is_some_and(|b| b <= isize::MAX as usize));
    let Some(elements) = elements else {
        return Err(format!("--x {} × --y {} complex elements do not fit in memory's address space", cli.x, cli.y));
    };
    if (elements / cli.tasks) > i32::MAX as usize || cli.y > u32::MAX as usize {
        return Err("a chunk must stay under 2^31 elements (cuFFT's 32-bit plans)".into());
    }
    ColumnKernel::from_name(&cli.kernel)?;
    if cli.streams.is_empty() || cli.gpus == 0 || cli.depth == Some(0) || cli.repeat == 0 {
        return Err("--streams must name a configuration; --gpus, --depth and --repeat must be positive".into());
    }
    Ok(())
}

/// Outcome of a whole run, also used by the tests.
struct Outcome {
    /// CSV rows, each with every column of [`CSV_HEADER`].
    rows: Vec<String>,
}

impl Outcome {
    /// The rows with the last column: the column kernel of the two-phase runs.
    fn with_kernel(rows: Vec<String>, kernel: &str) -> Self {
        Outcome { rows: rows.into_iter().map(|r| format!("{r},{kernel}")).collect() }
    }
}

fn real_main(cli: Cli) -> Result<(), String> {
    let out = run_all(&cli)?;
    if let Some(dir) = &cli.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let path = dir.join("seti.csv");
        let fresh = !path.exists();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(err)?;
        if fresh {
            writeln!(f, "{CSV_HEADER}").map_err(err)?;
        }
        for r in out.rows {
            writeln!(f, "{r}").map_err(err)?;
        }
        println!("appended to {}", path.display());
    }
    Ok(())
}

const CSV_HEADER: &str = "backend,device,x,y,tasks,gpus,streams,depth,way,t_ms,t_col_ms,t_row_ms,wall_ms,speedup_vs_serial,hw_bound_ms,eps_hw,paper_tlb_ms,eps_paper,col_download_ms,col_kernel_ms,col_readback_ms,row_download_ms,row_kernel_ms,row_readback_ms,rel_l2_error,device_buffers_mib,gpu_mem_in_use_mib,cpu_threads,hw1_bound_ms,eps_hw1,column_kernel";

fn run_all(cli: &Cli) -> Result<Outcome, String> {
    validate(cli)?;
    let (x, y, n) = (cli.x, cli.y, cli.tasks);
    let threads = cli.cpu_threads.unwrap_or_else(threads_default).max(1);
    let kernel = ColumnKernel::from_name(&cli.kernel)?;
    let backend = Backend::from_name(&cli.backend, SimProfile::h100().with_time_scale(cli.sim_scale))
        .map_err(|e| e.to_string())?;
    // The serial baseline first, then each configuration once.
    let mut shapes = vec![Shape::streams(1).or_depth(cli.depth)];
    for sh in cli.streams.iter().map(|sh| sh.or_depth(cli.depth)) {
        if !shapes.contains(&sh) {
            shapes.push(sh);
        }
    }

    // Host memory: the input, the working matrix (both pinned) and the reference.
    let owner = Scheduler::builder().backend(backend.clone()).gpus(cli.gpus).streams(1).build().map_err(err)?;
    let device = owner.gpu_info()[0].name.clone();
    let bytes = x * y * 8;
    println!(
        "seti: {x} × {y} complex f32 ({:.1} MiB), N = {n} tasks per phase, D = {}, backend {} ({device}), {threads} CPU threads, column kernel {}",
        bytes as f64 / 1048576.0,
        cli.gpus,
        owner.backend_name(),
        kernel.name()
    );
    let t0 = Instant::now();
    let mut input = owner.alloc_host::<C>(x * y).map_err(err)?;
    let mut work = owner.alloc_host::<C>(x * y).map_err(err)?;
    fill_signal(&mut input.write(), x, y, cli.seed, threads);
    println!("pinned host buffers allocated and filled in {:.2} s", t0.elapsed().as_secs_f64());

    let chunk_bytes = x * y / n * 8;
    let mut rows = Vec::new();
    let base = |s: usize, depth: usize, way: &str| {
        format!("{},{},{x},{y},{n},{},{s},{depth},{way}", owner.backend_name(), device.replace(',', " "), cli.gpus)
    };
    if cli.diagnose_only {
        rows.extend(diagnose(cli, &backend, &input, &work, &shapes, &base, None)?);
        return Ok(Outcome::with_kernel(rows, &cli.kernel));
    }

    // (c) rustfft on every core: also the reference.
    let mut reference: Vec<C> = input.read().to_vec();
    let t0 = Instant::now();
    cpu_forward_2d(&mut reference, y, x, threads);
    let t_cpu = t0.elapsed().as_nanos() as u64;
    check_peaks(&reference, x, y).map_err(|e| format!("the CPU reference itself: {e}"))?;
    println!("rustfft 2-D on {threads} threads: {:.1} ms (the reference; its peaks check)", ms(t_cpu));

    rows.push(format!("{},{:.4},,,{:.4},,,,,,,,,,,,,,,{threads},,", base(0, 0, "cpu_rustfft"), ms(t_cpu), ms(t_cpu)));

    // Copy rates for the hardware-aware bound, per phase (one GPU).
    // On sim the profile's own rates are what no run can beat: the probe is raised to
    // them. A sim with no modeled time models no hardware (its times are the CPU's real
    // work), so there is nothing to bound and the check is not made.
    let (rates_col, rates_row, bounded) = {
        let p = Pipeline::new(&backend, 1, Shape::AUTO, false, x, y, n)?;
        let (col, row) =
            (probe_rates(&p, &input, &work, x, y, n, true)?, probe_rates(&p, &input, &work, x, y, n, false)?);
        match (p.sched.backend_name(), p.sched.modeled_rates()) {
            ("sim", Some((link, _))) => (col.at_least(link), row.at_least(link), true),
            ("sim", None) => (col, row, false),
            _ => (col, row, true),
        }
    };
    println!(
        "sustained copy rates (GB/s) column phase (pitched): up {:.1}, down {:.1}, both {:.1}; row phase: up {:.1}, down {:.1}, both {:.1}",
        rates_col.up, rates_col.down, rates_col.both, rates_row.up, rates_row.down, rates_row.both
    );

    let mut serial: Option<Run> = None;
    let mut bound: Option<(HardwareBound, HardwareBound)> = None;
    // The same bound at the rates of one copy at a time (the serial run's median copy
    // times; both directions together at most the probe's both-ways rate).
    let mut bound1: Option<(HardwareBound, HardwareBound)> = None;
    // Each phase against its own bound, per S (one GPU).
    let mut phases: Vec<String> = Vec::new();
    println!();
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>8} {:>10} {:>8} {:>10} {:>8} {:>11} {:>10}",
        "config",
        "T ms",
        "col ms",
        "row ms",
        "wall ms",
        "speedup",
        "T_hw ms",
        "eps_hw",
        "T_hw1 ms",
        "eps_hw1",
        "T_LB ms",
        "eps_LB",
        "dev buf MiB",
        "GPU MiB"
    );
    // Every configuration built and warmed up once, then timed `repeat` times in turn,
    // each repetition starting from another one; every run's result is checked.
    let mut pipelines = Vec::with_capacity(shapes.len());
    for &shape in &shapes {
        let mut p = Pipeline::new(&backend, cli.gpus, shape, cli.device_timing, x, y, n)?;
        p.work = ColumnWork::Fft(kernel);
        p.run(&input, &work, x, y, n)?;
        pipelines.push(p);
    }
    let mut timed: Vec<Vec<(Run, f64)>> = shapes.iter().map(|_| Vec::new()).collect();
    for rep in 0..cli.repeat {
        for i in 0..shapes.len() {
            let c = (i + rep) % shapes.len();
            let r = pipelines[c].run(&input, &work, x, y, n)?;
            let e = check(&work.read(), &reference, x, y, threads).map_err(|e| format!("{}: {e}", shapes[c].name()))?;
            timed[c].push((r, e));
        }
    }
    for runs in timed.iter_mut() {
        runs.sort_by_key(|(r, _)| r.t_ns());
    }
    // Each run against its bound: the probed rates raised to what its own copies did.
    let mut below = Vec::new();
    let mut alone: Option<(u64, u64)> = None;
    let mut medians = Vec::new();
    let mut chosen: Vec<String> = Vec::new();
    for (c, runs) in timed.into_iter().enumerate() {
        let p = &pipelines[c];
        let name = shapes[c].name();
        let s = p.sched.streams();
        let depth = p.sched.tuning().stage_depth;
        let gpu_mem = p.sched.device_memory_in_use(0);
        let e = runs.iter().map(|(_, e)| *e).fold(0.0, f64::max);
        let runs: Vec<Run> = runs.into_iter().map(|(r, _)| r).collect();
        let run = runs[runs.len() / 2].clone();
        medians.push(run.t_ns());
        if shapes[c] == Shape::AUTO {
            // What chariot chose and why, as its reports print it (the median run's).
            for line in run.col.tuning.iter().chain(&run.row.tuning) {
                if !chosen.contains(line) {
                    chosen.push(line.clone());
                }
            }
            let adapted = run.col.adaptations.iter().chain(&run.row.adaptations);
            chosen.extend(adapted.map(|a| format!("adapted: {a}")));
        }
        if c == 0 {
            // The bound: each phase's chunks at the sustained rates, kernels at their
            // median time alone (from the serial run, where nothing overlaps them).
            let k = |r: &Report| {
                median(r.records.iter().filter(|c| c.stage == Stage::Kernel).map(|c| c.duration_ns()).collect())
            };
            let work_of = |kn: u64| {
                vec![TaskWork { up_bytes: chunk_bytes as u64, kernel_ns: kn, down_bytes: chunk_bytes as u64 }; n]
            };
            // On D GPUs, each on its own link at the one-GPU rates (the host carrying D
            // links' worth): optimistic where the host carries less, so still a bound.
            let d = cli.gpus;
            let hw = |w: &[TaskWork], r: LinkRates| {
                if d > 1 {
                    HardwareBound::multi_gpu(w, d, r, r.times(d as f64))
                } else {
                    HardwareBound::one_gpu(w, r)
                }
            };
            // The column kernel fills part of the GPU and may run beside another: its
            // SM-time (time alone × fill) is what kernels of one GPU add up to.
            let fill = p.column_fill(kernel, x / n, y);
            let k_col = (k(&run.col) as f64 * fill) as u64;
            alone = Some((k_col, k(&run.row)));
            bound = Some((hw(&work_of(k_col), rates_col), hw(&work_of(k(&run.row)), rates_row)));
            let one_at_a_time = |r: &Report, probe: LinkRates| {
                let rate = |stage: Stage| {
                    let ns = median(r.records.iter().filter(|c| c.stage == stage).map(|c| c.duration_ns()).collect());
                    chunk_bytes as f64 / ns.max(1) as f64
                };
                let (up, down) = (rate(Stage::Download), rate(Stage::Readback));
                LinkRates { up, down, both: probe.both.min(up + down).max(up.max(down)) }
            };
            bound1 = Some((
                hw(&work_of(k_col), one_at_a_time(&run.col, rates_col)),
                hw(&work_of(k(&run.row)), one_at_a_time(&run.row, rates_row)),
            ));
        }
        if let Some((k_col, k_row)) = alone.filter(|_| bounded) {
            for r in &runs {
                let (col, row) = run_bounds(r, k_col, k_row, chunk_bytes as u64, n, cli.gpus, rates_col, rates_row);
                if r.col.makespan_ns < col.t_ns || r.row.makespan_ns < row.t_ns {
                    below.push(format!(
                        "{name}: column phase {:.3} ms (bound {:.3}, {}), row phase {:.3} ms (bound {:.3}, {})",
                        r.col.makespan_ms(),
                        ms(col.t_ns),
                        col.limit,
                        r.row.makespan_ms(),
                        ms(row.t_ns),
                        row.limit
                    ));
                }
            }
        }
        let t = run.t_ns();
        let t_serial = serial.as_ref().map_or(t, |r| r.t_ns());
        // This run's own bound (the probed rates raised to its copies'), as checked above.
        let own = alone.map(|(k_col, k_row)| {
            run_bounds(&run, k_col, k_row, chunk_bytes as u64, n, cli.gpus, rates_col, rates_row)
        });
        let (hw_ms, eps_hw) = match own.as_ref().or(bound.as_ref()) {
            Some((bc, br)) => {
                let b = bc.t_ns + br.t_ns;
                (format!("{:.4}", ms(b)), Some(t as f64 / b.max(1) as f64 - 1.0))
            }
            _ => (String::new(), None),
        };
        let (hw1_ms, eps_hw1) = match &bound1 {
            Some((bc, br)) => {
                let b = bc.t_ns + br.t_ns;
                (format!("{:.4}", ms(b)), Some(t as f64 / b.max(1) as f64 - 1.0))
            }
            _ => (String::new(), None),
        };
        if let Some((bc, br)) = own.as_ref() {
            let eps = |t: u64, b: u64| 100.0 * (t as f64 / b.max(1) as f64 - 1.0);
            let (tc, tr) = (run.col.makespan_ns, run.row.makespan_ns);
            phases.push(format!(
                "  {name}: column phase {:.3} ms against {:.3} (eps_hw {:.1}%), row phase {:.3} ms against {:.3} (eps_hw {:.1}%)",
                ms(tc),
                ms(bc.t_ns),
                eps(tc, bc.t_ns),
                ms(tr),
                ms(br.t_ns),
                eps(tr, br.t_ns)
            ));
        }
        let tlb = run.col.lower_bound.t_lb_ns + run.row.lower_bound.t_lb_ns;
        let eps_lb = t as f64 / tlb.max(1) as f64 - 1.0;
        let dev_mib = (2 * cli.gpus * s * chunk_bytes) as f64 / 1048576.0;
        let gpu_mib = gpu_mem.map_or(f64::NAN, |b| b as f64 / 1048576.0);
        println!(
            "{name:>10} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>7.2}x {:>10} {:>7} {:>10} {:>7} {:>10.3} {:>7.1}% {:>11.0} {:>10.0}",
            ms(t),
            run.col.makespan_ms(),
            run.row.makespan_ms(),
            ms(run.wall_ns),
            t_serial as f64 / t as f64,
            if hw_ms.is_empty() { "n/a".to_string() } else { hw_ms.clone() },
            eps_hw.map_or("n/a".to_string(), |e| format!("{:.1}%", e * 100.0)),
            if hw1_ms.is_empty() { "n/a".to_string() } else { hw1_ms.clone() },
            eps_hw1.map_or("n/a".to_string(), |e| format!("{:.1}%", e * 100.0)),
            ms(tlb),
            eps_lb * 100.0,
            dev_mib,
            gpu_mib
        );
        if cli.diagnose {
            println!("{:>8} column phase, each task's download, ms: {}", "", stage_list(&run.col, Stage::Download));
            println!("{:>8} column phase, each task's readback, ms: {}", "", stage_list(&run.col, Stage::Readback));
        }
        let sums = [
            stage_sum(&run.col, Stage::Download),
            stage_sum(&run.col, Stage::Kernel),
            stage_sum(&run.col, Stage::Readback),
            stage_sum(&run.row, Stage::Download),
            stage_sum(&run.row, Stage::Kernel),
            stage_sum(&run.row, Stage::Readback),
        ];
        rows.push(format!(
            "{},{:.4},{:.4},{:.4},{:.4},{:.4},{hw_ms},{},{:.4},{:.5},{},{e:.3e},{dev_mib:.1},{gpu_mib:.0},{threads},{hw1_ms},{}",
            base(s, depth, &if c == 0 { "serial".to_string() } else { format!("pipelined {name}") }),
            ms(t),
            run.col.makespan_ms(),
            run.row.makespan_ms(),
            ms(run.wall_ns),
            t_serial as f64 / t as f64,
            eps_hw.map_or(String::new(), |e| format!("{e:.5}")),
            ms(tlb),
            eps_lb,
            sums.iter().map(|&v| format!("{:.4}", ms(v))).collect::<Vec<_>>().join(","),
            eps_hw1.map_or(String::new(), |e| format!("{e:.5}")),
        ));
        if c == 0 {
            serial = Some(run);
        }
    }
    if medians.len() > 2 {
        let auto = shapes.iter().position(|sh| *sh == Shape::AUTO);
        let best = (1..medians.len()).filter(|&c| Some(c) != auto).min_by_key(|&c| medians[c]);
        if let (Some(a), Some(b)) = (auto, best) {
            println!(
                "\ndefault (auto) {:.3} ms against the best configuration set by hand ({}) {:.3} ms: {:+.1}% (medians of {})",
                ms(medians[a]),
                shapes[b].name(),
                ms(medians[b]),
                (medians[a] as f64 / medians[b].max(1) as f64 - 1.0) * 100.0,
                cli.repeat
            );
        }
    }
    if !chosen.is_empty() {
        println!("\nchariot's choices (auto), as its report gives them:");
        chosen.iter().for_each(|l| println!("  {l}"));
    }
    if !bounded {
        println!(
            "bound check: not made (sim with no modeled time: no hardware is modeled, the times are the CPU's work)"
        );
    } else if below.is_empty() {
        println!("bound check: no phase of the {} timed runs below its hardware bound", cli.repeat * shapes.len());
    } else {
        for b in &below {
            println!("BOUND VIOLATED: {b}");
        }
        return Err(format!("{} run(s) below the hardware bound: the bound is not one", below.len()));
    }

    // Table 2 of the paper, for this GPU: the serial run's breakdown.
    if let Some(r) = &serial {
        // With D > 1 the stage times are summed over the GPUs; show them per GPU so the
        // shares stay shares of the phase.
        let d = r.col.gpus.len().max(1) as f64;
        let per_gpu = if d > 1.0 { format!(", per GPU (mean of {d})") } else { String::new() };
        println!("\nTable 2 (S = 1): time per stage{per_gpu}, ms and share of the phase");
        println!("{:>10} {:>16} {:>16} {:>16}", "stage", "column phase", "row phase", "total");
        let (tc, tr) = (r.col.makespan_ns as f64, r.row.makespan_ns as f64);
        for (name, stage) in [("download", Stage::Download), ("kernel", Stage::Kernel), ("readback", Stage::Readback)] {
            let (a, b) = (stage_sum(&r.col, stage) as f64 / d, stage_sum(&r.row, stage) as f64 / d);
            println!(
                "{name:>10} {:>9.3} ({:>4.1}%) {:>9.3} ({:>4.1}%) {:>9.3} ({:>4.1}%)",
                a / 1e6,
                100.0 * a / tc,
                b / 1e6,
                100.0 * b / tr,
                (a + b) / 1e6,
                100.0 * (a + b) / (tc + tr)
            );
        }
        println!("{:>10} {:>9.3}          {:>9.3}          {:>9.3}", "total", tc / 1e6, tr / 1e6, (tc + tr) / 1e6);
        if let Some((bc, br)) = &bound1 {
            println!(
                "the same at the rates of one copy at a time (serial run): column phase {:.3} ms ({}), row phase {:.3} ms ({}), both {:.3} ms",
                ms(bc.t_ns),
                bc.limit,
                ms(br.t_ns),
                br.limit,
                ms(bc.t_ns + br.t_ns)
            );
        }
        if let Some((bc, br)) = &bound {
            println!(
                "hardware-aware bound: column phase {:.3} ms ({}), row phase {:.3} ms ({}), both {:.3} ms",
                ms(bc.t_ns),
                bc.limit,
                ms(br.t_ns),
                br.limit,
                ms(bc.t_ns + br.t_ns)
            );
        }
    }

    if !phases.is_empty() {
        println!("each phase against its hardware-aware bound:");
        for l in &phases {
            println!("{l}");
        }
    }

    if cli.copies_only {
        println!("\ncopies only (no FFT; the result must equal the input):");
        for &shape in &shapes {
            let mut p = Pipeline::new(&backend, cli.gpus, shape, cli.device_timing, x, y, n)?;
            let (s, depth, name) = (p.sched.streams(), p.sched.tuning().stage_depth, shape.name());
            p.work = ColumnWork::CopiesOnly;
            let mut runs = Vec::new();
            for i in 0..=cli.repeat {
                let r = p.run(&input, &work, x, y, n)?;
                if i > 0 {
                    runs.push(r);
                }
            }
            if work.read()[..] != input.read()[..] {
                return Err(format!("copies only, {name}: the result differs from the input"));
            }
            runs.sort_by_key(|r| r.t_ns());
            let run = runs.swap_remove(runs.len() / 2);
            println!(
                "  {name}: T = {:.3} ms (column phase {:.3}, row phase {:.3})",
                ms(run.t_ns()),
                run.col.makespan_ms(),
                run.row.makespan_ms()
            );
            rows.push(format!(
                "{},{:.4},{:.4},{:.4},{:.4},,,,,,,,,,,,,,,{threads},,",
                base(s, depth, "copies_only"),
                ms(run.t_ns()),
                run.col.makespan_ms(),
                run.row.makespan_ms(),
                ms(run.wall_ns)
            ));
        }
    }

    if cli.diagnose {
        let col_bound = bound.as_ref().filter(|_| cli.gpus == 1).map(|(bc, _)| bc.t_ns);
        rows.extend(diagnose(cli, &backend, &input, &work, &shapes, &base, col_bound)?);
    }

    // (b) the in-core way, where the GPU holds the matrix.
    if !cli.no_incore {
        work.write().fill(C::default());
        match in_core(&backend, &input, &work, x, y, cli.repeat) {
            Ok(r) => {
                let e = check(&work.read(), &reference, x, y, threads).map_err(|e| format!("in-core: {e}"))?;
                let (d, k, rb) =
                    (stage_sum(&r, Stage::Download), stage_sum(&r, Stage::Kernel), stage_sum(&r, Stage::Readback));
                let t_serial = serial.as_ref().map_or(0, |s| s.t_ns());
                println!(
                    "\nin-core (upload whole, cuFFT 2-D, download): T = {:.3} ms (upload {:.3}, FFT {:.3}, download {:.3}); serial two-phase / in-core = {:.2}",
                    r.makespan_ms(),
                    ms(d),
                    ms(k),
                    ms(rb),
                    t_serial as f64 / r.makespan_ns.max(1) as f64
                );
                rows.push(format!(
                    "{},{:.4},,,,{:.4},,,,,{:.4},{:.4},{:.4},,,,{e:.3e},{:.1},,{threads},,",
                    base(1, 1, "incore_cufft2d"),
                    r.makespan_ms(),
                    t_serial as f64 / r.makespan_ns.max(1) as f64,
                    ms(d),
                    ms(k),
                    ms(rb),
                    bytes as f64 / 1048576.0
                ));
            }
            Err(e) => println!("\nin-core: could not run ({e})"),
        }
    }
    println!(
        "all results match rustfft within {:.2e} (relative L2) and show the tones at their bins",
        error_bound(x, y)
    );
    Ok(Outcome::with_kernel(rows, &cli.kernel))
}

#[cfg(test)]
mod test {
    use super::*;

    fn reference(x: usize, y: usize, seed: u64) -> (Vec<C>, Vec<C>) {
        let mut m = vec![C::default(); x * y];
        fill_signal(&mut m, x, y, seed, 2);
        let mut r = m.clone();
        cpu_forward_2d(&mut r, y, x, 2);
        (m, r)
    }

    #[test]
    fn column_algorithm_matches_rustfft_in_one_pass_and_many() {
        // A small largest radix forces several passes: (rows, log2 of the largest radix).
        let mut planner = rustfft::FftPlanner::<f32>::new();
        for (rows, log_lmax) in
            [(1, 11), (2, 11), (64, 11), (64, 3), (256, 2), (1024, 1), (512, 4), (8192, 10), (32768, 8), (2048, 11)]
        {
            let col: Vec<C> = (0..rows).map(|i| C::new((i as f32 * 0.37).sin(), (i as f32 * 1.3).cos())).collect();
            let mut expect = col.clone();
            planner.plan_fft_forward(rows).process(&mut expect);
            let (mut scratch, mut out) = (col.clone(), vec![C::new(f32::NAN, 0.0); rows]);
            column_fft(&mut scratch, &mut out, log_lmax);
            let e = rel_l2(&out, &expect, 1);
            assert!(e < 1e-5, "rows {rows}, largest radix 2^{log_lmax}: relative error {e:.2e}");
        }
    }

    #[test]
    fn passes_split_the_column_evenly_and_digits_turn_around() {
        assert_eq!(pass_logs(0, 10), [0]);
        assert_eq!(pass_logs(10, 10), [10]);
        assert_eq!(pass_logs(13, 10), [7, 6]);
        assert_eq!(pass_logs(15, 8), [8, 7]);
        assert_eq!(pass_logs(21, 10), [7, 7, 7]);
        assert_eq!(pass_logs(22, 10), [8, 7, 7]);
        // λ = k0·2 + k1 with k0 of 2 bits, k1 of 1 (the last pass's 3 bits are not λ's).
        assert_eq!(digit_reverse((2 << 1) | 1, &[2, 1, 3]), 2 + 4);
        assert_eq!(digit_reverse(1 << 1, &[2, 1, 3]), 1);
        assert_eq!(digit_reverse(0, &[5]), 0);
        // Shared memory holds TILE values: the radix shrinks as the tile widens.
        assert_eq!((log_lmax(0), log_lmax(2), log_lmax(4)), (11, 10, 8));
        for (width, log2tile) in [(1, 0), (2, 1), (4, 2), (64, 2), (512, 2), (1024, 3), (2048, 4), (8192, 4)] {
            assert_eq!(column_tile(width), log2tile, "width {width}");
        }
    }

    #[test]
    fn twin_transforms_every_column_of_a_block() {
        let mut planner = rustfft::FftPlanner::<f32>::new();
        let (width, rows) = (8, 2048);
        let input: Vec<C> =
            (0..width * rows).map(|i| C::new((i as f32 * 0.11).cos(), (i as f32 * 0.7).sin())).collect();
        for log2tile in [0, 3] {
            let mut out = vec![C::default(); width * rows];
            columns_twin(&input, &mut out, width, rows, log2tile);
            for c in 0..width {
                let mut expect: Vec<C> = (0..rows).map(|r| input[r * width + c]).collect();
                planner.plan_fft_forward(rows).process(&mut expect);
                let got: Vec<C> = (0..rows).map(|r| out[r * width + c]).collect();
                let e = rel_l2(&got, &expect, 1);
                assert!(e < 1e-5, "column {c}, tile 2^{log2tile}: relative error {e:.2e}");
            }
        }
    }

    #[test]
    fn signal_is_reproducible_and_its_spectrum_has_the_tones() {
        let (a, r) = reference(64, 32, 7);
        let mut b = vec![C::default(); 64 * 32];
        fill_signal(&mut b, 64, 32, 7, 1);
        assert_eq!(a, b, "the signal must not depend on the thread count");
        check_peaks(&r, 64, 32).unwrap();
    }

    fn run_sim(x: usize, y: usize, n: usize, gpus: usize, streams: usize) {
        let backend = Backend::SimWith(SimProfile::instant());
        let owner = Scheduler::builder().backend(backend.clone()).build().unwrap();
        let (m, r) = reference(x, y, 11);
        let mut input = owner.alloc_host::<C>(x * y).unwrap();
        input.write().copy_from_slice(&m);
        let work = owner.alloc_host::<C>(x * y).unwrap();
        let shape = Shape { streams: Some(streams), depth: Some(1), ..Shape::AUTO };
        let p = Pipeline::new(&backend, gpus, shape, false, x, y, n).unwrap();
        let run = p.run(&input, &work, x, y, n).unwrap();
        assert_eq!(run.col.tasks + run.row.tasks, 2 * n);
        // Element by element against rustfft: |a − b| ≤ 1e-5·log2(xy)·‖b‖∞ plus the L2 bound.
        let out = work.read();
        let max = r.iter().map(|v| v.norm()).fold(0f32, f32::max);
        for (i, (a, b)) in out.iter().zip(&r).enumerate() {
            assert!((a - b).norm() <= error_bound(x, y) as f32 * max, "bin {i}: {a} against {b}");
        }
        check(&out, &r, x, y, 2).unwrap();
        // The input is untouched (the column phase reads it, writes `work`).
        assert_eq!(&input.read()[..], &m[..]);
    }

    #[test]
    fn two_phase_matches_rustfft_on_sim_square() {
        run_sim(64, 64, 4, 1, 2);
    }

    #[test]
    fn two_phase_matches_rustfft_on_sim_wide_two_gpus() {
        run_sim(256, 128, 8, 2, 3);
    }

    #[test]
    fn in_core_matches_rustfft_on_sim() {
        let backend = Backend::SimWith(SimProfile::instant());
        let owner = Scheduler::builder().backend(backend.clone()).build().unwrap();
        let (x, y) = (128, 64);
        let (m, r) = reference(x, y, 3);
        let mut input = owner.alloc_host::<C>(x * y).unwrap();
        input.write().copy_from_slice(&m);
        let work = owner.alloc_host::<C>(x * y).unwrap();
        in_core(&backend, &input, &work, x, y, 1).unwrap();
        check(&work.read(), &r, x, y, 2).unwrap();
    }

    #[test]
    fn whole_example_runs_on_sim() {
        let cli = Cli::parse_from([
            "seti",
            "--backend",
            "sim",
            "--sim-scale",
            "0",
            "--x",
            "64",
            "--y",
            "32",
            "--tasks",
            "4",
            "--streams",
            "2",
            "--repeat",
            "1",
            "--copies-only",
            "--diagnose",
        ]);
        let out = run_all(&cli).unwrap();
        // cpu, serial, pipelined, copies only (S = 1, 2), the diagnosis (14 kinds of
        // column work at S = 1, 2), in-core; each row has every CSV column.
        assert_eq!(out.rows.len(), 6 + 28);
        let cols = CSV_HEADER.split(',').count();
        for r in &out.rows {
            assert_eq!(r.split(',').count(), cols, "{r}");
        }
        let diag: Vec<&String> = out.rows.iter().filter(|r| r.contains(",diag_")).collect();
        assert_eq!(diag.len(), 28);
        // 64 × 32 / 4 values a chunk: 2 chunks are 8 KiB, the small buffer 4 KiB.
        for name in [
            "copies",
            "copies+spin",
            "copies+touch8K",
            "copies+touch8K-cs",
            "copies+touch4K",
            "copies+strided",
            "copies+tiled",
            "copies+tiled-cs",
            "strided_alone",
            "tiled_alone",
            "tiled-cs_alone",
            "copies+tiled-cs_after_rows",
            "copies+tiled-cs_after_touch8K",
            "copies_after_touch8K",
        ] {
            assert_eq!(diag.iter().filter(|r| r.contains(&format!(",diag_{name},"))).count(), 2, "{name}");
        }
    }

    #[test]
    fn diagnosis_runs_alone_and_each_column_work_leaves_its_result() {
        let cli = Cli::parse_from([
            "seti",
            "--backend",
            "sim",
            "--sim-scale",
            "0",
            "--x",
            "32",
            "--y",
            "64",
            "--tasks",
            "2",
            "--streams",
            "1",
            "--repeat",
            "1",
            "--diagnose-only",
        ]);
        assert_eq!(run_all(&cli).unwrap().rows.len(), 14);
        // What each kind of column work leaves in `work`: the column FFTs for every
        // kernel, the input for the copies with or without the waiting or touching kernel.
        let backend = Backend::SimWith(SimProfile::instant());
        let owner = Scheduler::builder().backend(backend.clone()).build().unwrap();
        let (x, y, n) = (32, 64, 2);
        let mut m = vec![C::default(); x * y];
        fill_signal(&mut m, x, y, 1, 1);
        let mut expect = vec![C::default(); x * y];
        columns_twin(&m, &mut expect, x, y, 0);
        let mut input = owner.alloc_host::<C>(x * y).unwrap();
        input.write().copy_from_slice(&m);
        let work = owner.alloc_host::<C>(x * y).unwrap();
        let mut p = Pipeline::new(&backend, 1, Shape::streams(2).or_depth(Some(1)), false, x, y, n).unwrap();
        p.d_touch = Some(p.sched.alloc::<C>(x * y / n).unwrap());
        for what in [
            ColumnWork::Fft(ColumnKernel::Tiled),
            ColumnWork::Fft(ColumnKernel::TiledStreaming),
            ColumnWork::Fft(ColumnKernel::Strided),
            ColumnWork::CopiesOnly,
            ColumnWork::Spin(1000),
            ColumnWork::Touch { values: x * y / n, streaming: true },
        ] {
            p.work = what;
            p.columns(&input, &work, x, y, n).unwrap();
            let want = if matches!(what, ColumnWork::Fft(_)) { &expect } else { &m };
            assert!(rel_l2(&work.read(), want, 1) < 1e-6, "{what:?}");
        }
        p.work = ColumnWork::KernelOnly(ColumnKernel::Tiled);
        let r = p.columns(&input, &work, x, y, n).unwrap();
        assert!(r.records.iter().all(|c| c.stage == Stage::Kernel), "no copies when the kernel runs alone");
    }

    #[test]
    fn bad_arguments_are_refused() {
        let huge = (1usize << 32).to_string();
        for args in [
            &["seti", "--x", "100"][..],
            &["seti", "--tasks", "3"],
            &["seti", "--x", "16", "--tasks", "32"],
            &["seti", "--x", &huge, "--y", &huge],
        ] {
            assert!(validate(&Cli::parse_from(args)).is_err(), "{args:?}");
        }
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn two_phase_and_in_core_match_rustfft_on_gpu() {
        let backend = Backend::Cuda;
        let owner = Scheduler::builder().backend(backend.clone()).build().unwrap();
        // 8192 rows: two passes of the tiled kernel (2^7 · 2^6 at 4 columns a block),
        // and the strided kernel's global DIF stage; 512 rows: one pass.
        for (x, y, n, s) in [(1024, 8192, 16, 2), (2048, 512, 8, 4)] {
            let (m, r) = reference(x, y, 5);
            let mut input = owner.alloc_host::<C>(x * y).unwrap();
            input.write().copy_from_slice(&m);
            let mut work = owner.alloc_host::<C>(x * y).unwrap();
            let mut p = Pipeline::new(&backend, 1, Shape::streams(s).or_depth(Some(1)), false, x, y, n).unwrap();
            let mut errors = Vec::new();
            for k in [ColumnKernel::Strided, ColumnKernel::Tiled, ColumnKernel::TiledStreaming] {
                work.write().fill(C::default());
                p.work = ColumnWork::Fft(k);
                p.run(&input, &work, x, y, n).unwrap();
                let e = check(&work.read(), &r, x, y, 4).unwrap_or_else(|e| panic!("{} kernel: {e}", k.name()));
                errors.push(format!("{e:.2e} ({})", k.name()));
            }
            assert!(p.plans.len() <= s, "one plan per stream slot at most, got {}", p.plans.len());
            work.write().fill(C::default());
            in_core(&backend, &input, &work, x, y, 1).unwrap();
            let e2 = check(&work.read(), &r, x, y, 4).unwrap();
            println!("{x} × {y}: two-phase error {}, in-core error {e2:.2e}", errors.join(", "));
        }
    }
}
