//! The input signal (tones at known bins plus uniform noise) and the correctness checks
//! against the rustfft reference (relative L2 error, the tones' peaks).

use crate::C;

/// (row bin, column bin, amplitude) of each tone; bins are distinct for x, y ≥ 16.
pub(crate) fn tones(x: usize, y: usize) -> Vec<(usize, usize, f32)> {
    vec![(y / 8, x / 4, 1.0), ((3 * y / 4 + 1) % y, 5 % x, 0.5), (7 % y, x - 3, 0.25)]
}

/// Noise amplitude: each part uniform in [−NOISE, NOISE].
pub(crate) const NOISE: f32 = 0.5;

pub(crate) fn threads_default() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Fills the `y × x` row-major matrix: Σ a·e^{2πi(ky·r/y + kx·c/x)} + noise, on
/// `threads` threads; the same for a given seed, whatever the thread count.
pub(crate) fn fill_signal(m: &mut [C], x: usize, y: usize, seed: u64, threads: usize) {
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

/// ‖a − b‖₂ / ‖b‖₂, on `threads` threads.
pub(crate) fn rel_l2(a: &[C], b: &[C], threads: usize) -> f64 {
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
pub(crate) fn error_bound(x: usize, y: usize) -> f64 {
    1e-5 * ((x * y) as f64).log2()
}

/// Relative error allowed at a tone's bin: six standard deviations of the noise there
/// (each noise part has variance NOISE²/3, so a bin's noise has norm about
/// NOISE·√(2xy/3)), plus 1e-4 for rounding.
pub(crate) fn peak_tolerance(x: usize, y: usize) -> f32 {
    let xy = (x * y) as f32;
    6.0 * NOISE * (2.0 * xy / 3.0).sqrt() / xy + 1e-4
}

/// Whether the largest bins of `spec` are exactly the tones' bins, each within
/// [`peak_tolerance`] of its expected value x·y·a (relative to x·y). `Err` says what is wrong.
pub(crate) fn check_peaks(spec: &[C], x: usize, y: usize) -> Result<(), String> {
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
pub(crate) fn check(result: &[C], reference: &[C], x: usize, y: usize, threads: usize) -> Result<f64, String> {
    let e = rel_l2(&result[..x * y], &reference[..x * y], threads);
    if e.is_nan() || e > error_bound(x, y) {
        return Err(format!("relative L2 error {e:.3e} exceeds the bound {:.3e}", error_bound(x, y)));
    }
    check_peaks(result, x, y)?;
    Ok(e)
}
