//! The CUDA backend, over cudarc's raw (`sys`) layer loaded at run time
//! (`dynamic-loading`), so the crate builds and its CPU tests run where there is no
//! CUDA at all. In layers, as cudarc's own `result` layer: `driver.rs` holds every raw
//! call (driver, NVRTC), one thin `unsafe fn` each with its preconditions;
//! `handle.rs` owns the driver's objects (streams, events, modules, graphs), destroyed
//! once on drop with the errors kept for the report; the rest is safe code over those
//! two, each `unsafe` block saying why its call's preconditions hold.
//!
//! One primary context per GPU. Streams are non-blocking; each stream slot has a pair of
//! timing events recorded around its one command in flight: the end event is the idle
//! detection (paper §5.4 step 4, by `cuEventQuery`, never by synchronising a stream),
//! and the pair gives the command's span for the timeline. cudarc's safe layer (and
//! its cross-stream event tracking) is not used: the scheduler owns all ordering.

mod completion;
mod context;
#[cfg(feature = "replay")]
mod device_window;
mod driver;
/// Whether libnvrtc loads here: the sim compiles kernels with NVRTC where it does.
pub(crate) use driver::nvrtc::is_present as nvrtc_present;
#[cfg(feature = "replay")]
mod executor_source;
mod gpu;
mod gpu_context;
/// A GPU's context as the public door (`chariot::cuda`) lends it to libraries.
pub use gpu_context::GpuContext;
mod handle;
mod kernel_cache;
pub(crate) mod nvrtc;
pub(crate) mod nvtx;
mod peer;
#[cfg(feature = "replay")]
mod replay;

pub(crate) use context::{times_events, Machine, NoCuda};
pub(crate) use gpu::Gpu;
#[cfg(feature = "replay")]
pub(crate) use gpu_context::Visit;

use cudarc::driver::result::DriverError;

/// The driver's name for an error's code, e.g. `CUDA_ERROR_OUT_OF_MEMORY` (its code's
/// Rust name where the driver has none).
fn error_name(e: DriverError) -> String {
    driver::get_error_name(e.0).map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0))
}

/// The driver's name and text for an error, e.g. `CUDA_ERROR_OUT_OF_MEMORY (out of memory)`.
pub(crate) fn describe(e: DriverError) -> String {
    let name = error_name(e);
    match driver::get_error_string(e.0) {
        Ok(text) => format!("{name} ({})", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// `call` failed with `e`: the call, the driver's code, name and text.
pub(crate) fn failed(call: &str, e: DriverError) -> crate::report::DriverError {
    crate::report::DriverError::from_cuda(call, e)
}

impl crate::report::DriverError {
    /// The error of driver call `call` (e.g. `"cuMemAlloc"`): its code, name and text,
    /// as chariot reports them.
    pub(crate) fn from_cuda(call: &str, e: DriverError) -> Self {
        crate::report::DriverError {
            call: call.to_string(),
            code: e.0 as i32,
            name: error_name(e),
            text: driver::get_error_string(e.0).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        }
    }
}
