//! What every hand-written pipeline opens first: a GPU's retained primary context, a
//! kernel compiled and loaded from its CUDA C source, and driver errors as text (the
//! baselines' errors are messages, written as chariot writes a driver error).

pub use crate::primary::PrimaryContext;
use chariot::Kernel;
use cudarc::driver::result::DriverError;
use cudarc::driver::{result, sys};
use std::ffi::{c_void, CString};

/// `call` failed with `e`, as a message, with the driver's name and text as chariot writes them (`DriverError`'s
/// display).
pub fn failed_text(call: &str, e: DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(text) if !text.is_empty() => format!("{call} failed: {name} ({})", text.to_string_lossy()),
        _ => format!("{call} failed: {name}"),
    }
}

/// Compiles `kernel` for device `dev` (NVRTC, cached per process) and loads it into the
/// current context: the module (to unload when done) and its entry point. Shared by the
/// hand-written pipelines.
pub fn load_kernel(dev: sys::CUdevice, kernel: &Kernel) -> Result<(sys::CUmodule, sys::CUfunction), String> {
    use sys::CUdevice_attribute::*;
    // SAFETY: plain attribute queries on a valid device.
    let (major, minor) = unsafe {
        (
            result::device::get_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .map_err(|e| failed_text("cuDeviceGetAttribute", e))?,
            result::device::get_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                .map_err(|e| failed_text("cuDeviceGetAttribute", e))?,
        )
    };
    let image = chariot::cuda::compile_cubin(kernel, &format!("sm_{major}{minor}")).map_err(|e| e.to_string())?;
    // SAFETY: a complete cubin for this device; the caller unloads it.
    let module = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
        .map_err(|e| failed_text("cuModuleLoadData", e))?;
    let name = CString::new(kernel.name()).map_err(|_| "kernel name has a NUL byte".to_string())?;
    // SAFETY: the module was just loaded.
    match unsafe { result::module::get_function(module, name) } {
        Ok(func) => Ok((module, func)),
        Err(e) => {
            // SAFETY: loaded above, used by nothing.
            let _ = unsafe { result::module::unload(module) };
            Err(failed_text("cuModuleGetFunction", e))
        }
    }
}
