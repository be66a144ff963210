//! cuFFT, loaded at run time (its raw calls are `driver::cufft`): single-precision
//! complex-to-complex plans (batched 1-D rows, or one 2-D transform), bound to a stream
//! at execution, destroyed with their GPU's context current.
//!
//! Invariant: a [`Plan`] holds an `Arc` of the context it was made in, binds it before
//! every call, and is destroyed exactly once (in `Drop`).

use super::context::Context;
use super::driver::cufft::{self as raw, CufftError};
use cudarc::cufft::sys::{cudaStream_t, cufftComplex, cufftHandle, cufftType};
use std::ffi::c_int;
use std::sync::Arc;

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
    ctx: Arc<Context>,
    /// Complex elements one execution reads and writes.
    pub(crate) elements: usize,
    /// Held from `cufftSetStream` to `cufftExecC2C`, so that two threads sharing the
    /// plan cannot enqueue on each other's stream.
    exec: parking_lot::Mutex<()>,
}

// SAFETY: a cuFFT handle may be used from any thread once its context is current; every
// method binds the context first.
unsafe impl Send for Plan {}
// SAFETY: `&Plan` only executes, and an execution (set stream, then enqueue) holds the
// plan's `exec` lock, so host calls on one handle never interleave. The caches key plans
// by stream slot, which runs one command at a time, so executions do not overlap on the
// device either.
unsafe impl Sync for Plan {}

impl Plan {
    /// `batch` transforms of length `n` over contiguous rows (row `b` starts at `b·n`).
    pub(crate) fn rows(ctx: Arc<Context>, n: usize, batch: usize) -> Result<Plan, String> {
        present()?;
        ctx.bind()?;
        let (n_i, batch_i) = (int(n, "row length")?, int(batch, "batch")?);
        int(n.checked_mul(batch).ok_or("plan size overflows")?, "elements")?;
        let mut dims = [n_i];
        // SAFETY: `dims` holds `rank` = 1 readable ints; null embeds mean the basic
        // contiguous layout (strides and distances then ignored); the context is current.
        let handle = unsafe {
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
        .map_err(cufft("cufftPlanMany"))?;
        Ok(Plan { handle, ctx, elements: n * batch, exec: parking_lot::Mutex::new(()) })
    }

    /// One 2-D transform of `rows` rows of `cols` contiguous elements.
    /// `batch` transforms of length `len` over strided columns: element k of column c at
    /// `c + k·stride` (a row-major matrix of `stride` columns).
    pub(crate) fn columns(ctx: Arc<Context>, len: usize, batch: usize, stride: usize) -> Result<Plan, String> {
        present()?;
        ctx.bind()?;
        let (n_i, batch_i, stride_i) = (int(len, "column length")?, int(batch, "columns")?, int(stride, "stride")?);
        let elements = len.checked_mul(stride).ok_or("plan size overflows")?;
        let mut dims = [n_i];
        let mut embed = [n_i];
        // SAFETY: `dims` and `embed` each hold `rank` = 1 readable ints and live across
        // the call; the context is current.
        let handle = unsafe {
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
        .map_err(cufft("cufftPlanMany"))?;
        Ok(Plan { handle, ctx, elements, exec: parking_lot::Mutex::new(()) })
    }

    pub(crate) fn two_d(ctx: Arc<Context>, rows: usize, cols: usize) -> Result<Plan, String> {
        present()?;
        ctx.bind()?;
        let (r, c) = (int(rows, "rows")?, int(cols, "columns")?);
        // nx is the slowest-varying dimension (rows), ny the contiguous one.
        let handle = raw::plan_2d(r, c, cufftType::CUFFT_C2C).map_err(cufft("cufftPlan2d"))?;
        Ok(Plan { handle, ctx, elements: rows * cols, exec: parking_lot::Mutex::new(()) })
    }

    /// Enqueues the forward transform on `stream`, in place on `data`.
    ///
    /// # Safety
    /// 1. `data` is a live device allocation of this plan's GPU with at least
    ///    `self.elements` complex `f32` pairs, and nothing else uses it until the work
    ///    enqueued on `stream` completes.
    /// 2. `stream` is a live stream of this plan's context.
    pub(crate) unsafe fn forward(&self, stream: cudarc::driver::sys::CUstream, data: u64) -> Result<(), String> {
        self.ctx.bind()?;
        let _exec = self.exec.lock();
        // SAFETY: the plan is live (destroyed only in Drop); `stream` is of this
        // context (precondition 2); the two stream types are the same CUstream_st.
        unsafe { raw::set_stream(self.handle, stream as cudaStream_t) }.map_err(cufft("cufftSetStream"))?;
        let p = data as *mut cufftComplex;
        // SAFETY: the plan is live and its context current (bound above); precondition
        // 1 covers the data the plan reads and writes.
        unsafe { raw::exec_c2c(self.handle, p, p, CUFFT_FORWARD) }.map_err(cufft("cufftExecC2C"))
    }
}

impl Plan {
    /// The plan's GPU (index in the scheduler's list).
    pub(crate) fn gpu(&self) -> usize {
        self.ctx.index
    }

    /// Enqueues the forward transform in place on `buf`'s physical copy for the task
    /// that `call` runs, on the task's stream. Safe: the pointer is the task's own
    /// buffer on the plan's GPU, large enough (checked), alive until the task ends
    /// (commands and the graveyard keep it), and the task's slot runs nothing else.
    pub(crate) fn forward_in(
        &self,
        call: &crate::callback::GpuCall<'_>,
        buf: &crate::memory::DeviceBufferInner,
        buf_bytes: usize,
    ) -> Result<(), String> {
        let info = call.info();
        if info.gpu != self.gpu() {
            return Err(format!("a plan of GPU {} used on GPU {}", self.gpu(), info.gpu));
        }
        let need = self.elements.checked_mul(8).ok_or("plan size overflows")?;
        if buf_bytes < need {
            return Err(format!("the plan transforms {need} bytes but the buffer has {buf_bytes}"));
        }
        let stream = call.cuda_stream().ok_or("a cuFFT plan used on the sim backend")?;
        let ptr = match buf.phys(info.gpu, info.stream) {
            crate::backend::device::PhysBuf::Cuda { ptr, .. } => *ptr,
            crate::backend::device::PhysBuf::Sim(_) => return Err("simulated buffer given to cuFFT".into()),
        };
        // SAFETY: see above: `ptr` is a live allocation of this GPU with at least
        // `elements` complex pairs, used only by this task's stream, and `stream` is
        // the task's stream in this GPU's context.
        unsafe { self.forward(stream.raw(), ptr) }
    }
}

impl Plan {
    /// Enqueues the transform on the task's stream in place at device address `ptr`,
    /// which the caller got for this task's GPU with at least the plan's span behind it.
    pub(crate) fn forward_at(&self, call: &crate::callback::GpuCall<'_>, ptr: u64) -> Result<(), String> {
        let info = call.info();
        if info.gpu != self.gpu() {
            return Err(format!("a plan of GPU {} used on GPU {}", self.gpu(), info.gpu));
        }
        let stream = call.cuda_stream().ok_or("a cuFFT plan used on the sim backend")?;
        // SAFETY: the caller checked that `ptr` has the plan's span of this GPU's memory
        // behind it (a resident copy the task holds); the stream is the task's.
        unsafe { self.forward(stream.raw(), ptr) }
    }
}

impl Drop for Plan {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: made once in `rows`/`two_d`, destroyed once here; cuFFT waits for
            // nothing here, and the callers drop plans only when their work is done.
            if let Err(e) = unsafe { raw::destroy(self.handle) } {
                // A cuFFT code, not a driver one: kept under its own name.
                self.ctx.cleanup.push(crate::report::DriverError {
                    call: format!("cufftDestroy on GPU {}", self.ctx.index),
                    code: e.0 as i32,
                    name: format!("{:?}", e.0),
                    text: String::new(),
                });
            }
        }
    }
}
