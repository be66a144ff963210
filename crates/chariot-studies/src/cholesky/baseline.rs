//! The baseline: cuSOLVER's dense single-GPU Cholesky (`cusolverDnXpotrf`, lower) on the
//! whole matrix, as a CUDA programmer calls it: upload, factorise, download. Timed with
//! and without the transfers. (At D = 2 MUSTARD compares against cusolverMg; that
//! baseline is not built here.)

use super::residual::{self, DenseFactor};
use super::{flops, Spd};

/// One run of the baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PotrfRun {
    /// Host → device copy of A, ns.
    pub upload_ns: u64,
    /// The factorisation alone, ns.
    pub factor_ns: u64,
    /// Device → host copy of L, ns.
    pub download_ns: u64,
    /// The randomized residual of L (see [`residual::randomized`]), or NaN when not
    /// checked.
    pub residual: f64,
}

impl PotrfRun {
    /// Upload, factorisation and download, ns.
    pub fn total_ns(&self) -> u64 {
        self.upload_ns + self.factor_ns + self.download_ns
    }

    /// GFLOP/s of order `n` (n³/3 flops) over the whole run, transfers included.
    pub fn gflops_total(&self, n: usize) -> f64 {
        flops(n) / self.total_ns().max(1) as f64
    }

    /// GFLOP/s of order `n` over the factorisation alone.
    pub fn gflops_factor(&self, n: usize) -> f64 {
        flops(n) / self.factor_ns.max(1) as f64
    }
}

/// Factorises `a` with cuSOLVER's dense potrf on CUDA GPU `ordinal` and, with
/// `vectors` > 0, checks L with that many random vectors (‖A‖_F is `a_norm`).
///
/// # Errors
/// A message without CUDA or cuSOLVER, for a GPU that does not exist, a failed call, or
/// a matrix cuSOLVER finds not positive definite.
pub fn potrf(ordinal: usize, a: &Spd, a_norm: f64, vectors: usize) -> Result<PotrfRun, String> {
    let mut res = f64::NAN;
    let n = a.n;
    let t = crate::backend::cuda::cholesky::potrf_dense(ordinal, n, &|host| a.fill_dense(host), &mut |l| {
        if vectors > 0 {
            res = residual::randomized(a, a_norm, &DenseFactor { n, data: l }, vectors, 0x5eed);
        }
    })?;
    Ok(PotrfRun { upload_ns: t.upload_ns, factor_ns: t.factor_ns, download_ns: t.download_ns, residual: res })
}

#[cfg(test)]
mod test {
    /// Without CUDA the baseline says so, and never panics.
    #[test]
    fn without_cuda_it_is_an_error() {
        if chariot::Backend::cuda_devices().is_ok_and(|n| n > 0) {
            return;
        }
        let a = super::Spd::new(8, 1);
        assert!(super::potrf(0, &a, a.frobenius(), 1).is_err());
    }
}
