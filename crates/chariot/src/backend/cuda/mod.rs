//! The CUDA backend: the safe layer over cudarc's raw (`sys`) and checked (`result`)
//! layers, loaded at run time (`dynamic-loading`), so the crate builds and its CPU
//! tests run where there is no CUDA at all.
//!
//! One primary context per GPU. Streams are non-blocking; each stream slot has a pair of
//! timing events recorded around its one command in flight: the end event is the idle
//! detection (paper §5.4 step 4, by `cuEventQuery`, never by synchronising a stream),
//! and the pair gives the command's span for the timeline. cudarc's safe layer (and
//! its cross-stream event tracking) is not used: the scheduler owns all ordering.

mod completion;
mod context;
pub(crate) mod cufft;
#[cfg(feature = "replay")]
mod device_window;
mod gpu;
mod kernel_cache;
pub(crate) mod nvrtc;
pub(crate) mod nvtx;
mod peer;
#[cfg(feature = "replay")]
mod replay;

pub(crate) use context::Machine;
pub(crate) use gpu::Gpu;

use cudarc::driver::result::DriverError;

/// The driver's name and text for an error, e.g. `CUDA_ERROR_OUT_OF_MEMORY (out of memory)`.
pub(crate) fn describe(e: DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
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
            name: e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0)),
            text: e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        }
    }
}
