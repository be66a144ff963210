//! Inputs and checks of the image benchmark: reproducible images, the reference
//! outputs of a stream of them, and the pixel-by-pixel comparison with a tolerance.

use super::reference;

/// Fills `images` (consecutive `n × n` images) with reproducible pseudo-random pixels
/// in [0, 1) (xorshift64*, seeded).
pub fn fill_images(images: &mut [f32], seed: u64) {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for x in images.iter_mut() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        *x = (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32;
    }
}

/// The tolerance of the check: `|gpu − reference| ≤ TOLERANCE · max(1, |reference|)`
/// per pixel (outputs lie in [0, 1], so 1e-4 absolute there).
pub const TOLERANCE: f32 = 1e-4;

/// What comparing outputs with the reference found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Check {
    /// Pixels compared.
    pub pixels: usize,
    /// Pixels outside the tolerance (NaN counts).
    pub mismatches: usize,
    /// The largest absolute difference seen (NaN if a pixel was NaN).
    pub max_abs_err: f32,
}

impl Check {
    /// No mismatch, something compared.
    pub fn ok(&self) -> bool {
        self.mismatches == 0 && self.pixels > 0
    }
}

/// Compares `output` with `reference` pixel by pixel on all cores ([`TOLERANCE`]).
///
/// ```
/// use chariot_studies::images::compare;
/// let c = compare(&[0.5, 1.0], &[0.5, 1.00001]);
/// assert!(c.ok() && c.pixels == 2);
/// assert_eq!(compare(&[f32::NAN], &[0.0]).mismatches, 1);
/// ```
pub fn compare(output: &[f32], reference: &[f32]) -> Check {
    let len = output.len().min(reference.len());
    let (output, reference) = (&output[..len], &reference[..len]);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(len.div_ceil(1 << 16)).max(1);
    let per = len.div_ceil(threads).max(1);
    let part = |o: &[f32], r: &[f32]| {
        let mut c = Check { pixels: o.len(), ..Check::default() };
        for (&o, &r) in o.iter().zip(r) {
            let e = (o - r).abs();
            if e.is_nan() || e > TOLERANCE * r.abs().max(1.0) {
                c.mismatches += 1;
            }
            c.max_abs_err = if e.is_nan() || c.max_abs_err.is_nan() { f32::NAN } else { c.max_abs_err.max(e) };
        }
        c
    };
    let parts: Vec<Check> = std::thread::scope(|s| {
        let handles: Vec<_> =
            output.chunks(per).zip(reference.chunks(per)).map(|(o, r)| s.spawn(move || part(o, r))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Check { pixels: 1, mismatches: 1, max_abs_err: f32::NAN }))
            .collect()
    });
    parts.into_iter().fold(Check::default(), |a, b| Check {
        pixels: a.pixels + b.pixels,
        mismatches: a.mismatches + b.mismatches,
        max_abs_err: if a.max_abs_err.is_nan() || b.max_abs_err.is_nan() {
            f32::NAN
        } else {
            a.max_abs_err.max(b.max_abs_err)
        },
    })
}

/// The reference outputs of `count` consecutive `n × n` images of `input`, computed on
/// all cores.
pub fn references(input: &[f32], n: usize, count: usize) -> Vec<f32> {
    let len = n * n;
    let mut out = vec![0.0f32; len * count];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(count).max(1);
    let per = count.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (t, chunk) in out.chunks_mut(per * len.max(1)).enumerate() {
            s.spawn(move || {
                for (j, o) in chunk.chunks_mut(len.max(1)).enumerate() {
                    let i = t * per + j;
                    o.copy_from_slice(&reference::pipeline(&input[i * len..(i + 1) * len], n));
                }
            });
        }
    });
    out
}
