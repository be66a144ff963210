//! The CPU's transforms: rustfft over rows, a tiled transpose, and the 2-D transform
//! built of them; also what `FftPlans` runs on the simulated backend.

use num_complex::Complex32;
use rustfft::{Fft, FftPlanner};

/// `out[c·rows + r] = input[r·cols + c]`, on `threads` threads, in cache-sized tiles.
///
/// # Panics
/// If either buffer is shorter than `rows × cols`.
///
/// ```
/// let m: Vec<u32> = (0..6).collect(); // 2 rows × 3 columns
/// let mut t = vec![0; 6];
/// chariot_fft::transpose(&m, &mut t, 2, 3, 2);
/// assert_eq!(t, [0, 3, 1, 4, 2, 5]);
/// ```
pub fn transpose<T: Copy + Send + Sync>(input: &[T], out: &mut [T], rows: usize, cols: usize, threads: usize) {
    assert!(input.len() >= rows * cols && out.len() >= rows * cols, "transpose: buffers shorter than rows × cols");
    const TILE: usize = 32;
    let threads = threads.clamp(1, cols.max(1));
    let per = cols.div_ceil(threads).div_ceil(TILE) * TILE;
    std::thread::scope(|s| {
        for (t, chunk) in out[..rows * cols].chunks_mut(per * rows).enumerate() {
            s.spawn(move || {
                let c0 = t * per;
                let nc = chunk.len() / rows;
                for cb in (0..nc).step_by(TILE) {
                    for rb in (0..rows).step_by(TILE) {
                        for c in cb..(cb + TILE).min(nc) {
                            for r in rb..(rb + TILE).min(rows) {
                                chunk[c * rows + r] = input[r * cols + c0 + c];
                            }
                        }
                    }
                }
            });
        }
    });
}

/// Transforms the rows of `len` elements of `data` in place, on `threads` threads.
fn rows_parallel(data: &mut [Complex32], len: usize, threads: usize, fft: &dyn Fft<f32>) {
    let n = data.len() / len;
    let threads = threads.clamp(1, n.max(1));
    let per = n.div_ceil(threads) * len;
    std::thread::scope(|s| {
        for chunk in data.chunks_mut(per) {
            s.spawn(move || {
                let mut scratch = vec![Complex32::default(); fft.get_inplace_scratch_len()];
                fft.process_with_scratch(chunk, &mut scratch);
            });
        }
    });
}

/// The 2-D transform with the plans given: `f_rows` of length `rows` (the column
/// transforms), `f_cols` of length `cols` (the row transforms).
pub(crate) fn forward_2d_with(
    data: &mut [Complex32],
    rows: usize,
    cols: usize,
    threads: usize,
    f_rows: &dyn Fft<f32>,
    f_cols: &dyn Fft<f32>,
) {
    let data = &mut data[..rows * cols];
    rows_parallel(data, cols, threads, f_cols);
    let mut t = vec![Complex32::default(); rows * cols];
    transpose(data, &mut t, rows, cols, threads);
    rows_parallel(&mut t, rows, threads, f_rows);
    transpose(&t, data, cols, rows, threads);
}

/// Transforms `batch` strided columns of `data` (rows of `stride` elements) in place.
pub(crate) fn columns(data: &mut [Complex32], len: usize, batch: usize, stride: usize, fft: &dyn Fft<f32>) {
    let mut col = vec![Complex32::default(); len];
    for c in 0..batch {
        for (k, v) in col.iter_mut().enumerate() {
            *v = data[c + k * stride];
        }
        fft.process(&mut col);
        for (k, v) in col.iter().enumerate() {
            data[c + k * stride] = *v;
        }
    }
}

/// The forward 2-D transform of the `rows × cols` row-major matrix `data`, in place,
/// with rustfft on `threads` threads (row transforms, a tiled transpose, row
/// transforms, a transpose back). Unnormalised, like cuFFT.
///
/// # Panics
/// If `data` is shorter than `rows × cols`.
///
/// ```
/// use num_complex::Complex32;
/// let mut m = vec![Complex32::new(0.0, 0.0); 8 * 4];
/// m[0] = Complex32::new(1.0, 0.0); // an impulse has a flat spectrum
/// chariot_fft::cpu_forward_2d(&mut m, 4, 8, 2);
/// assert!(m.iter().all(|x| (x.re - 1.0).abs() < 1e-6 && x.im.abs() < 1e-6));
/// ```
pub fn cpu_forward_2d(data: &mut [Complex32], rows: usize, cols: usize, threads: usize) {
    assert!(data.len() >= rows * cols, "cpu_forward_2d: data shorter than rows × cols");
    let mut p = FftPlanner::new();
    let (fr, fc) = (p.plan_fft_forward(rows), p.plan_fft_forward(cols));
    forward_2d_with(data, rows, cols, threads, &*fr, &*fc);
}
