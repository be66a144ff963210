//! cuFFT plans (the raw calls are [`crate::cufft`]): single-precision complex-to-complex
//! plans (batched 1-D rows, strided columns, or one 2-D transform), made and destroyed
//! in their GPU's context (lent by the runtime as a [`GpuContext`]), bound to the task's
//! stream at execution.
//!
//! Invariant: a [`Plan`] holds the context it was made in, makes it current around
//! every call, and is destroyed exactly once (in `Drop`).

use crate::cufft::{self as raw, cufftComplex, cufftHandle, cufftType, CufftError};
use chariot::callback::GpuCall;
use chariot::cuda::GpuContext;
use std::ffi::c_int;

/// Whether libcufft can be loaded here; an error saying how to fix it otherwise.
pub(crate) fn present() -> Result<(), String> {
    if raw::is_present() {
        Ok(())
    } else {
        Err("libcufft was not found: add the CUDA toolkit's lib64 to LD_LIBRARY_PATH".into())
    }
}

/// `CUFFT_FORWARD`: the exponent's sign, −1 (cuFFT's header defines it as a macro).
const CUFFT_FORWARD: c_int = -1;

/// Bytes of one complex `f32` pair (`cufftComplex`).
const COMPLEX_BYTES: usize = 8;

fn cufft(call: &'static str) -> impl Fn(CufftError) -> String {
    move |e| format!("{call} failed: {:?}", e.0)
}

fn int(v: usize, what: &str) -> Result<c_int, String> {
    c_int::try_from(v).map_err(|_| format!("{what} = {v} does not fit cuFFT's 32-bit plan interface"))
}

/// A cuFFT C2C plan made in one GPU's context.
#[derive(Debug)]
pub(crate) struct Plan {
    handle: cufftHandle,
    ctx: GpuContext,
    /// Complex elements one execution reads and writes.
    elements: usize,
    /// Held from `cufftSetStream` to `cufftExecC2C`, so that two threads sharing the
    /// plan cannot enqueue on each other's stream.
    exec: parking_lot::Mutex<()>,
}

// SAFETY: a cuFFT handle may be used from any thread once its context is current; every
// method makes the plan's context current first.
unsafe impl Send for Plan {}
// SAFETY: `&Plan` only executes, and an execution (set stream, then enqueue) holds the
// plan's `exec` lock, so host calls on one handle never interleave. `FftPlans` keys plans
// by stream slot, which runs one command at a time, so executions do not overlap on the
// device either.
unsafe impl Sync for Plan {}

/// Runs `make` with `ctx` current: a plan is made in the current context.
fn in_context(ctx: &GpuContext, make: impl FnOnce() -> Result<cufftHandle, String>) -> Result<cufftHandle, String> {
    ctx.with_current(make).map_err(String::from)?
}

impl Plan {
    /// `batch` transforms of length `n` over contiguous rows (row `b` starts at `b·n`).
    pub(crate) fn rows(ctx: GpuContext, n: usize, batch: usize) -> Result<Plan, String> {
        present()?;
        let (n_i, batch_i) = (int(n, "row length")?, int(batch, "batch")?);
        let elements = n.checked_mul(batch).ok_or("plan size overflows")?;
        int(elements, "elements")?;
        let handle = in_context(&ctx, || {
            let mut dims = [n_i];
            // SAFETY: `dims` holds `rank` = 1 readable ints; null embeds mean the basic
            // contiguous layout (strides and distances then ignored).
            unsafe {
                raw::plan_many(
                    1,
                    dims.as_mut_ptr(),
                    std::ptr::null_mut(),
                    1,
                    n_i,
                    std::ptr::null_mut(),
                    1,
                    n_i,
                    cufftType::CUFFT_C2C,
                    batch_i,
                )
            }
            .map_err(cufft("cufftPlanMany"))
        })?;
        Ok(Plan { handle, ctx, elements, exec: parking_lot::Mutex::new(()) })
    }

    /// `batch` transforms of length `len` over strided columns: element k of column c at
    /// `c + k·stride` (a row-major matrix of `stride` columns).
    pub(crate) fn columns(ctx: GpuContext, len: usize, batch: usize, stride: usize) -> Result<Plan, String> {
        present()?;
        let (n_i, batch_i, stride_i) = (int(len, "column length")?, int(batch, "columns")?, int(stride, "stride")?);
        let elements = len.checked_mul(stride).ok_or("plan size overflows")?;
        let handle = in_context(&ctx, || {
            let mut dims = [n_i];
            let mut embed = [n_i];
            // SAFETY: `dims` and `embed` each hold `rank` = 1 readable ints and live
            // across the call.
            unsafe {
                raw::plan_many(
                    1,
                    dims.as_mut_ptr(),
                    embed.as_mut_ptr(),
                    stride_i,
                    1,
                    embed.as_mut_ptr(),
                    stride_i,
                    1,
                    cufftType::CUFFT_C2C,
                    batch_i,
                )
            }
            .map_err(cufft("cufftPlanMany"))
        })?;
        Ok(Plan { handle, ctx, elements, exec: parking_lot::Mutex::new(()) })
    }

    /// One 2-D transform of `rows` rows of `cols` contiguous elements.
    pub(crate) fn two_d(ctx: GpuContext, rows: usize, cols: usize) -> Result<Plan, String> {
        present()?;
        let (r, c) = (int(rows, "rows")?, int(cols, "columns")?);
        let elements = rows.checked_mul(cols).ok_or("plan size overflows")?;
        // nx is the slowest-varying dimension (rows), ny the contiguous one.
        let handle = in_context(&ctx, || raw::plan_2d(r, c, cufftType::CUFFT_C2C).map_err(cufft("cufftPlan2d")))?;
        Ok(Plan { handle, ctx, elements, exec: parking_lot::Mutex::new(()) })
    }

    /// The plan's GPU (index in the scheduler's list).
    pub(crate) fn gpu(&self) -> usize {
        self.ctx.gpu()
    }

    /// Enqueues the forward transform in place at device address `ptr` on the task's
    /// stream. `ptr` is what the runtime gave `call` for one of the task's buffers
    /// ([`GpuCall::device_ptr`], [`GpuCall::resident_ptr`]), with `bytes` of it from
    /// `ptr` on (checked against the plan's span here).
    pub(crate) fn forward_at(&self, call: &GpuCall<'_>, ptr: u64, bytes: usize) -> Result<(), String> {
        let info = call.info();
        if info.gpu != self.gpu() {
            return Err(format!("a plan of GPU {} used on GPU {}", self.gpu(), info.gpu));
        }
        let need = self.elements.checked_mul(COMPLEX_BYTES).ok_or("plan size overflows")?;
        if bytes < need {
            return Err(format!("the plan transforms {need} bytes but the buffer has {bytes}"));
        }
        let stream = call.cuda_stream().ok_or("a cuFFT plan used on the sim backend")?;
        let data = ptr as *mut cufftComplex;
        let done = self.ctx.with_current(|| {
            let _exec = self.exec.lock();
            // SAFETY: the plan is live (destroyed only in Drop) and `stream` is the task's
            // stream, of the GPU the plan's context is (checked above); the runtime's
            // `CUstream` is cuFFT's `cudaStream_t` (the same `CUstream_st`).
            unsafe { raw::set_stream(self.handle, stream.as_raw().cast()) }.map_err(cufft("cufftSetStream"))?;
            // SAFETY: the plan is live and its context current; `data` is one of the
            // task's buffers on this GPU with the plan's span behind it (checked above),
            // kept alive by the runtime until the task ends, and the task's stream slot
            // runs nothing else meanwhile.
            unsafe { raw::exec_c2c(self.handle, data, data, CUFFT_FORWARD) }.map_err(cufft("cufftExecC2C"))
        });
        done.map_err(String::from)?
    }
}

impl Drop for Plan {
    fn drop(&mut self) {
        let handle = self.handle;
        let destroyed = self.ctx.with_current(|| {
            // SAFETY: made once in `rows`, `columns` or `two_d`, destroyed once here with
            // its context current; the cache drops plans only when their work is done.
            unsafe { raw::destroy(handle) }
        });
        // A context that cannot be made current leaves the plan to the context's
        // teardown, as the runtime's own handles do.
        if let Ok(Err(e)) = destroyed {
            // A cuFFT code, not a driver one: kept under its own name.
            self.ctx.note_cleanup_failure(
                format!("cufftDestroy on GPU {}", self.gpu()),
                e.0 as i32,
                format!("{:?}", e.0),
            );
        }
    }
}
