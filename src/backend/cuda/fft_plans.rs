//! The cuFFT plans a CUDA machine makes for `crate::fft`: beside the backend, not part
//! of it (the plans are driven by GPU callbacks, above the backend; see
//! `scripts/ci/check-layers.py`), so they sit in a file of their own.

use super::context::Machine;

impl Machine {
    /// A cuFFT C2C plan in GPU `gpu`'s context, for `crate::fft` (any thread: the plan
    /// binds the context itself): `batch` rows of `n` elements, or with `two_d` one
    /// 2-D transform of `batch` rows by `n` columns.
    pub(crate) fn fft_plan(
        &self,
        gpu: usize,
        n: usize,
        batch: usize,
        two_d: bool,
    ) -> Result<super::cufft::Plan, String> {
        let ctx = self.context(gpu).ok_or_else(|| format!("no GPU {gpu}"))?.clone();
        if two_d {
            super::cufft::Plan::two_d(ctx, batch, n)
        } else {
            super::cufft::Plan::rows(ctx, n, batch)
        }
    }

    /// A cuFFT C2C plan of `batch` columns of `len` elements, `stride` elements apart
    /// (a row-major matrix's columns, transformed in place).
    pub(crate) fn fft_plan_columns(
        &self,
        gpu: usize,
        len: usize,
        batch: usize,
        stride: usize,
    ) -> Result<super::cufft::Plan, String> {
        let ctx = self.context(gpu).ok_or_else(|| format!("no GPU {gpu}"))?.clone();
        super::cufft::Plan::columns(ctx, len, batch, stride)
    }
}
