//! Every raw call this crate makes into cuFFT, one thin function each, named after the
//! call (`cufftPlanMany` is [`plan_many`]): the out-parameters become return values and
//! the status a `Result`. Nothing else in the crate names a `sys::cufft*` function.
//!
//! A function is `unsafe` where a wrong argument is undefined behaviour rather than an
//! error status: a dangling plan or pointer, memory the device then reads or writes.
//! Its `# Safety` section numbers what the caller must make hold. Functions that take
//! no handle and no pointer are safe.

use cudarc::cufft::sys;
use std::ffi::c_int;
use std::mem::MaybeUninit;

pub(crate) use cudarc::cufft::result::CufftError;
pub(crate) use sys::{cufftComplex, cufftHandle, cufftType};

/// A cuFFT call's outcome.
pub(crate) type Result<T> = std::result::Result<T, CufftError>;

/// Whether libcufft loads here (cudarc would panic at the first call otherwise).
pub(crate) fn is_present() -> bool {
    // SAFETY: opens the library (running its initialisers, as cudarc's own loading
    // does) and closes it; nothing is called.
    unsafe { sys::is_culib_present() }
}

/// `cufftPlanMany`: a plan in the current context (null embeds: the basic contiguous
/// layout, strides and distances ignored).
///
/// # Safety
/// 1. `n` holds `rank` readable ints, and each embed is null or holds `rank` readable
///    ints.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn plan_many(
    rank: c_int,
    n: *mut c_int,
    inembed: *mut c_int,
    istride: c_int,
    idist: c_int,
    onembed: *mut c_int,
    ostride: c_int,
    odist: c_int,
    kind: cufftType,
    batch: c_int,
) -> Result<cufftHandle> {
    let mut plan = MaybeUninit::uninit();
    // SAFETY: precondition 1; a live out-parameter, written on success.
    unsafe {
        sys::cufftPlanMany(plan.as_mut_ptr(), rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch)
            .result()?;
        Ok(plan.assume_init())
    }
}

/// `cufftPlan2d`: one `nx` by `ny` transform (`ny` contiguous), in the current context.
pub(crate) fn plan_2d(nx: c_int, ny: c_int, kind: cufftType) -> Result<cufftHandle> {
    let mut plan = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success.
    unsafe {
        sys::cufftPlan2d(plan.as_mut_ptr(), nx, ny, kind).result()?;
        Ok(plan.assume_init())
    }
}

/// `cufftSetStream`: later executions of `plan` enqueue on `stream`.
///
/// # Safety
/// 1. `plan` is live and `stream` a live stream of the plan's context.
pub(crate) unsafe fn set_stream(plan: cufftHandle, stream: sys::cudaStream_t) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cufftSetStream(plan, stream) }.result()
}

/// `cufftExecC2C`: enqueues the transform of `input` into `output`.
///
/// # Safety
/// 1. `plan` is live, with its context current.
/// 2. `input` and `output` are device memory of the plan's context holding the
///    elements the plan reads and writes, allocated and touched by nothing else until
///    the transform completes.
pub(crate) unsafe fn exec_c2c(
    plan: cufftHandle,
    input: *mut cufftComplex,
    output: *mut cufftComplex,
    direction: c_int,
) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cufftExecC2C(plan, input, output, direction) }.result()
}

/// `cufftDestroy`.
///
/// # Safety
/// 1. `plan` is live, destroyed once, and not used after.
pub(crate) unsafe fn destroy(plan: cufftHandle) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cufftDestroy(plan) }.result()
}
