//! The CPU reference of the image pipeline: each kernel of `kernels/images.cu` as a
//! plain function (the sim backend's CPU twins call these too), and the whole per-image
//! DAG ([`pipeline`]).
//!
//! Each function does the kernel's arithmetic in the kernel's order with the same
//! rounding (the kernels use explicitly rounded intrinsics, which are never fused), so
//! a GPU's output matches this reference to the last bit but for the Gaussian weights,
//! which both compute in `f64` with their own `exp`.

use super::{Filter, BLUR_LARGE, BLUR_SMALL, BLUR_UNSHARPEN, EXTEND_GAIN, UNSHARPEN_AMOUNT};

/// The normalised Gaussian weights of `filter`, row-major, `diameter²` of them:
/// `exp(-((i - r)² + (j - r)²) / (2σ²)) / Σ`, in `f64`, summed in row-major order,
/// then rounded to `f32` (as the kernel computes them).
///
/// ```
/// use chariot_studies::images::{reference::gaussian_weights, Filter};
/// let w = gaussian_weights(Filter { diameter: 3, sigma: 1.0 });
/// assert_eq!(w.len(), 9);
/// assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6);
/// assert!(w[4] > w[0]);
/// ```
pub fn gaussian_weights(filter: Filter) -> Vec<f32> {
    let d = filter.diameter as i64;
    let r = d / 2;
    let s = filter.sigma as f64;
    let raw: Vec<f64> = (0..d * d)
        .map(|t| {
            let (di, dj) = ((t / d - r) as f64, (t % d - r) as f64);
            (-0.5 * (di * di + dj * dj) / (s * s)).exp()
        })
        .collect();
    let mut sum = 0.0f64;
    for &v in &raw {
        sum += v;
    }
    raw.iter().map(|&v| (v / sum) as f32).collect()
}

/// The columns `x - r ..= x + r` clipped to `0..n`, as a range of columns.
fn clip(x: usize, r: usize, n: usize) -> std::ops::Range<usize> {
    x.saturating_sub(r)..(x + r + 1).min(n)
}

/// Gaussian blur of the `n × n` image `input` into `out` (kernel `gaussian_blur`):
/// pixels outside the image count as zero. Each pixel sums its taps row by row, column
/// by column, as the kernel does; the columns whose window lies inside the image are
/// summed a row of pixels at a time (the same order per pixel, vectorised).
pub fn gaussian_blur(input: &[f32], out: &mut [f32], n: usize, filter: Filter) {
    let w = gaussian_weights(filter);
    let d = filter.diameter;
    let r = d / 2;
    // The columns whose whole window lies inside the image (none for small images).
    let inner = if n > 2 * r { r..n - r } else { 0..0 };
    let mut acc = vec![0.0f32; n];
    for y in 0..n {
        let rows = clip(y, r, n);
        acc.fill(0.0);
        for yy in rows.clone().filter(|_| !inner.is_empty()) {
            let row = &input[yy * n..(yy + 1) * n];
            let wrow = &w[(yy + r - y) * d..(yy + r - y + 1) * d];
            for (k, &wk) in wrow.iter().enumerate() {
                // Columns x of the inner range read row[x + k - r].
                let src = &row[inner.start + k - r..inner.end + k - r];
                for (a, &v) in acc[inner.clone()].iter_mut().zip(src) {
                    *a += wk * v;
                }
            }
        }
        let line = &mut out[y * n..(y + 1) * n];
        line[inner.clone()].copy_from_slice(&acc[inner.clone()]);
        for x in (0..n).filter(|x| !inner.contains(x)) {
            let cols = clip(x, r, n);
            let mut a = 0.0f32;
            for yy in rows.clone() {
                let row = &input[yy * n..(yy + 1) * n];
                let wrow = &w[(yy + r - y) * d..(yy + r - y + 1) * d];
                for xx in cols.clone() {
                    a += wrow[xx + r - x] * row[xx];
                }
            }
            line[x] = a;
        }
    }
}

/// Sobel edge magnitude of `input` into `out` (kernel `sobel`): `sqrt(gx² + gy²)`,
/// the taps in the kernel's order; inner columns a row at a time, as in [`gaussian_blur`].
pub fn sobel(input: &[f32], out: &mut [f32], n: usize) {
    const KX: [f32; 9] = [-1.0, 0.0, 1.0, -2.0, 0.0, 2.0, -1.0, 0.0, 1.0];
    const KY: [f32; 9] = [-1.0, -2.0, -1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 1.0];
    let inner = if n > 2 { 1..n - 1 } else { 0..0 };
    let (mut gx, mut gy) = (vec![0.0f32; n], vec![0.0f32; n]);
    for y in 0..n {
        let rows = clip(y, 1, n);
        gx.fill(0.0);
        gy.fill(0.0);
        for yy in rows.clone().filter(|_| !inner.is_empty()) {
            let row = &input[yy * n..(yy + 1) * n];
            for k in 0..3 {
                let t = (yy + 1 - y) * 3 + k;
                let src = &row[inner.start + k - 1..inner.end + k - 1];
                for ((a, b), &v) in gx[inner.clone()].iter_mut().zip(&mut gy[inner.clone()]).zip(src) {
                    *a += KX[t] * v;
                    *b += KY[t] * v;
                }
            }
        }
        let line = &mut out[y * n..(y + 1) * n];
        for x in inner.clone() {
            line[x] = (gx[x] * gx[x] + gy[x] * gy[x]).sqrt();
        }
        for x in (0..n).filter(|x| !inner.contains(x)) {
            let cols = clip(x, 1, n);
            let (mut ax, mut ay) = (0.0f32, 0.0f32);
            for yy in rows.clone() {
                for xx in cols.clone() {
                    let v = input[yy * n + xx];
                    let k = (yy + 1 - y) * 3 + (xx + 1 - x);
                    ax += KX[k] * v;
                    ay += KY[k] * v;
                }
            }
            line[x] = (ax * ax + ay * ay).sqrt();
        }
    }
}

/// Per-block maxima of `input` as kernel `reduce_max` computes them with `blocks`
/// blocks of `threads` threads (grid-stride: chunk c of `threads` elements goes to
/// block c mod `blocks`); `-inf` for a block that sees nothing.
pub fn partial_max(input: &[f32], partial: &mut [f32], blocks: usize, threads: usize) {
    partial[..blocks].fill(f32::NEG_INFINITY);
    for (c, chunk) in input.chunks(threads.max(1)).enumerate() {
        let p = &mut partial[c % blocks];
        *p = chunk.iter().fold(*p, |m, &v| m.max(v));
    }
}

/// Per-block minima, as [`partial_max`] (`+inf` for a block that sees nothing).
pub fn partial_min(input: &[f32], partial: &mut [f32], blocks: usize, threads: usize) {
    partial[..blocks].fill(f32::INFINITY);
    for (c, chunk) in input.chunks(threads.max(1)).enumerate() {
        let p = &mut partial[c % blocks];
        *p = chunk.iter().fold(*p, |m, &v| m.min(v));
    }
}

/// Extends `mask` in place (kernel `extend`): with `mx`, `mn` the maximum and minimum of
/// the partials, `mask[i] = min(1, 5 (mask[i] − mn) / (mx − mn))`.
pub fn extend(mask: &mut [f32], max_partial: &[f32], min_partial: &[f32]) {
    let mx = max_partial.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let mn = min_partial.iter().fold(f32::INFINITY, |m, &v| m.min(v));
    let range = mx - mn;
    for v in mask.iter_mut() {
        let t = EXTEND_GAIN * (*v - mn) / range;
        *v = if t > 1.0 { 1.0 } else { t };
    }
}

/// Unsharp masking (kernel `unsharpen`): `clamp(x (1 + amount) − blurred · amount, 0, 1)`.
pub fn unsharpen(x: &[f32], blurred: &[f32], out: &mut [f32], amount: f32) {
    let gain = 1.0 + amount;
    for ((o, &x), &b) in out.iter_mut().zip(x).zip(blurred) {
        let t = x * gain - b * amount;
        let t = if t > 1.0 { 1.0 } else { t };
        *o = if t < 0.0 { 0.0 } else { t };
    }
}

/// `out = x · mask + y · (1 − mask)` (kernel `combine`).
pub fn combine(x: &[f32], y: &[f32], mask: &[f32], out: &mut [f32]) {
    for (((o, &x), &y), &m) in out.iter_mut().zip(x).zip(y).zip(mask) {
        *o = x * m + y * (1.0 - m);
    }
}

/// The whole per-image DAG on the CPU: the `n × n` image in, the combined image out.
///
/// ```
/// use chariot_studies::images::reference::pipeline;
/// let n = 8;
/// let image: Vec<f32> = (0..n * n).map(|i| ((i * 37 % 101) as f32) / 101.0).collect();
/// let out = pipeline(&image, n);
/// assert_eq!(out.len(), n * n);
/// assert!(out.iter().all(|v| v.is_finite()));
/// ```
pub fn pipeline(image: &[f32], n: usize) -> Vec<f32> {
    let len = n * n;
    let image = &image[..len];
    let blank = || vec![0.0f32; len];
    let (mut bs, mut bl, mut bu) = (blank(), blank(), blank());
    gaussian_blur(image, &mut bs, n, BLUR_SMALL);
    gaussian_blur(image, &mut bl, n, BLUR_LARGE);
    gaussian_blur(image, &mut bu, n, BLUR_UNSHARPEN);
    let (mut ms, mut ml) = (blank(), blank());
    sobel(&bs, &mut ms, n);
    sobel(&bl, &mut ml, n);
    // One partial each is the same maximum and minimum as any grid's partials.
    let (mut mx, mut mn) = ([0.0f32], [0.0f32]);
    partial_max(&ml, &mut mx, 1, len.max(1));
    partial_min(&ml, &mut mn, 1, len.max(1));
    extend(&mut ml, &mx, &mn);
    let mut sharp = blank();
    unsharpen(image, &bu, &mut sharp, UNSHARPEN_AMOUNT);
    let mut image2 = blank();
    combine(&sharp, &bl, &ml, &mut image2);
    let mut out = blank();
    combine(&image2, &bs, &ms, &mut out);
    out
}

#[cfg(test)]
mod test {
    use super::*;

    /// The blur as a loop over the whole window that skips pixels outside the image.
    fn skipping_blur(image: &[f32], n: usize, f: Filter) -> Vec<f32> {
        let w = gaussian_weights(f);
        let r = f.diameter as i64 / 2;
        let mut out = vec![0.0f32; n * n];
        for y in 0..n as i64 {
            for x in 0..n as i64 {
                let mut acc = 0.0f32;
                for dy in -r..=r {
                    for dx in -r..=r {
                        let (yy, xx) = (y + dy, x + dx);
                        if yy < 0 || xx < 0 || yy >= n as i64 || xx >= n as i64 {
                            continue;
                        }
                        acc +=
                            w[((dy + r) * f.diameter as i64 + dx + r) as usize] * image[(yy * n as i64 + xx) as usize];
                    }
                }
                out[(y * n as i64 + x) as usize] = acc;
            }
        }
        out
    }

    /// The row-at-a-time blur does what the skipping loop does, to the bit.
    #[test]
    fn blur_matches_the_skipping_loop() {
        let n = 23;
        let image: Vec<f32> = (0..n * n).map(|i| (i as f32 * 0.37).sin().abs()).collect();
        for f in [BLUR_SMALL, BLUR_LARGE, BLUR_UNSHARPEN] {
            let mut fast = vec![0.0; n * n];
            gaussian_blur(&image, &mut fast, n, f);
            let want = skipping_blur(&image, n, f);
            assert!(fast.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{f:?}");
        }
    }

    /// The Sobel magnitude matches the loop over the whole window that skips pixels
    /// outside the image, to the bit, for sides from 1 up; so does the blur.
    #[test]
    fn sobel_and_blur_match_the_skipping_loops_at_every_size() {
        const KX: [f32; 9] = [-1.0, 0.0, 1.0, -2.0, 0.0, 2.0, -1.0, 0.0, 1.0];
        const KY: [f32; 9] = [-1.0, -2.0, -1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 1.0];
        for n in [1usize, 2, 3, 4, 5, 6, 9, 17] {
            let image: Vec<f32> = (0..n * n).map(|i| (i as f32 * 0.61).cos().abs()).collect();
            let mut fast = vec![0.0; n * n];
            sobel(&image, &mut fast, n);
            for y in 0..n as i64 {
                for x in 0..n as i64 {
                    let (mut gx, mut gy) = (0.0f32, 0.0f32);
                    for dy in -1..=1i64 {
                        for dx in -1..=1i64 {
                            let (yy, xx) = (y + dy, x + dx);
                            if yy < 0 || xx < 0 || yy >= n as i64 || xx >= n as i64 {
                                continue;
                            }
                            let v = image[(yy * n as i64 + xx) as usize];
                            let k = ((dy + 1) * 3 + dx + 1) as usize;
                            gx += KX[k] * v;
                            gy += KY[k] * v;
                        }
                    }
                    let want = (gx * gx + gy * gy).sqrt();
                    assert_eq!(want.to_bits(), fast[(y * n as i64 + x) as usize].to_bits(), "n {n} ({y}, {x})");
                }
            }
            for f in [BLUR_SMALL, BLUR_LARGE] {
                let mut blurred = vec![0.0; n * n];
                gaussian_blur(&image, &mut blurred, n, f);
                assert_eq!(blurred, skipping_blur(&image, n, f), "n {n} {f:?}");
            }
        }
    }

    /// Sobel of a horizontal ramp: 8 × slope inside, and the partials of any grid
    /// reduce to the same extremes.
    #[test]
    fn sobel_and_partials() {
        let n = 6;
        let ramp: Vec<f32> = (0..n * n).map(|i| (i % n) as f32).collect();
        let mut out = vec![0.0; n * n];
        sobel(&ramp, &mut out, n);
        assert_eq!(out[2 * n + 2], 8.0);
        let mut p = vec![0.0; 5];
        partial_max(&out, &mut p, 5, 4);
        assert_eq!(p.iter().fold(f32::MIN, |a, &b| a.max(b)), out.iter().fold(f32::MIN, |a, &b| a.max(b)));
        let mut q = vec![0.0; 64];
        partial_min(&out[..3], &mut q, 64, 1);
        assert_eq!(q[3], f32::INFINITY);
    }
}
