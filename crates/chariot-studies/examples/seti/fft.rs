//! The column FFT: the tiled kernel's algorithm on the CPU (its twin, and the test of its
//! indexing), the column kernels' registration, and which of them `--kernel` names.

use chariot::{HostBuffer, Kernel, Param};
use chariot_fft::cpu_forward_2d;
use std::time::{Duration, Instant};

use crate::C;

/// CUDA C of the column-FFT kernels: `fft_columns` (tiled) and `fft_columns_strided`.
pub(crate) const COLUMN_KERNEL: &str = include_str!("../../kernels/fft_columns.cu");
/// Complex values of the tiled kernel's shared tile (`TILE`).
pub(crate) const TILE: usize = 4096;
/// log2 of the largest radix a pass of the tiled kernel takes (`LOG_TW`: its twiddle table).
pub(crate) const LOG_TW: u32 = 11;
/// Threads per block of the tiled kernel.
pub(crate) const TILED_THREADS: u32 = 512;
/// Complex elements of one column the strided kernel transforms in shared memory (`SMEM`).
pub(crate) const SMEM: usize = 4096;

pub(crate) fn bitrev(v: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        v.reverse_bits() >> (usize::BITS - bits)
    }
}

/// `e^{−2πi e/2^log_n}`.
pub(crate) fn unit_root(e: usize, log_n: u32) -> C {
    let (s, c) = (-2.0 * std::f64::consts::PI * e as f64 / (1u64 << log_n) as f64).sin_cos();
    C::new(c as f32, s as f32)
}

/// log2 of the largest radix of one pass with tiles of 2^log2tile columns (`LMAX`):
/// the tile holds TILE values, the twiddle table serves radices up to 2^LOG_TW.
pub(crate) fn log_lmax(log2tile: u32) -> u32 {
    (TILE.trailing_zeros() - log2tile).min(LOG_TW)
}

/// log2 of each pass's radix: log2rows split into as few passes of at most log_lmax as
/// will do, as evenly as possible, the first ones one larger (`pass_log`).
pub(crate) fn pass_logs(log2rows: u32, log_lmax: u32) -> Vec<u32> {
    let p = if log2rows == 0 { 1 } else { log2rows.div_ceil(log_lmax) };
    (0..p).map(|j| log2rows / p + u32::from(j < log2rows % p)).collect()
}

/// Line λ's digits k_0 (top bits) … k_{p−2} turned around: k_0 + L_0·k_1 + ….
pub(crate) fn digit_reverse(lam: usize, logs: &[u32]) -> usize {
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
pub(crate) fn column_fft(col: &mut [C], out: &mut [C], log_lmax: u32) {
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
pub(crate) fn columns_twin(input: &[C], out: &mut [C], width: usize, rows: usize, log2tile: u32) {
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
pub(crate) fn column_tile(width: usize) -> u32 {
    (width / 128).clamp(4, 16).min(width).ilog2()
}

/// Threads per block of the strided kernel.
pub(crate) fn column_block(rows: usize) -> u32 {
    (rows / 2).clamp(32, 1024) as u32
}

/// Checks the column kernels' common arguments on the CPU; (width, rows).
pub(crate) fn column_args(a: &chariot::kernel::TwinArgs<'_>) -> Result<(usize, usize), chariot::BoxError> {
    let (width, rows) = (a.u32(2)? as usize, a.u32(3)? as usize);
    if !rows.is_power_of_two() || a.u32(4)? != rows.trailing_zeros() {
        return Err(format!("rows {rows} must be a power of two given with its log2").into());
    }
    Ok((width, rows))
}

/// The tiled column kernel: `fft_columns(out, in, width, rows, log2rows, log2tile,
/// streaming)`, launched as `width / 2^log2tile` blocks of [`TILED_THREADS`]. The cache
/// hint changes nothing the twin computes.
pub(crate) fn column_kernel() -> Kernel {
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
pub(crate) fn strided_kernel() -> Kernel {
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

/// Which column kernel a column phase runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColumnKernel {
    /// `fft_columns`: a block per tile of adjacent columns.
    Tiled,
    /// `fft_columns` with cache-streaming loads and stores.
    TiledStreaming,
    /// `fft_columns_strided`: a block per column (the first kernel).
    Strided,
}

impl ColumnKernel {
    /// The kernel `--kernel` names.
    pub(crate) fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "tiled" => Ok(ColumnKernel::Tiled),
            "tiled-cs" => Ok(ColumnKernel::TiledStreaming),
            "strided" => Ok(ColumnKernel::Strided),
            other => Err(format!("--kernel {other}: not tiled, tiled-cs or strided")),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            ColumnKernel::Tiled => "tiled",
            ColumnKernel::TiledStreaming => "tiled-cs",
            ColumnKernel::Strided => "strided",
        }
    }
}

/// rustfft on every core, on a copy of `input`: the reference every result is checked
/// against, and its time, ns.
pub(crate) fn cpu_reference(input: &HostBuffer<C>, x: usize, y: usize, threads: usize) -> (Vec<C>, u64) {
    let mut reference: Vec<C> = input.read().to_vec();
    let t0 = Instant::now();
    cpu_forward_2d(&mut reference, y, x, threads);
    (reference, t0.elapsed().as_nanos() as u64)
}
