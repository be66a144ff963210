//! The hand-written CUDA pipelines chariot is measured against, as a CUDA programmer
//! writes them without a scheduler: plain driver calls through cudarc on the primary
//! context. This is the studies crate's only `unsafe` code, as `backend/` is the
//! runtime's; `crate::baseline` is its safe face.

pub(crate) mod baseline;
pub(crate) mod cholesky;
pub(crate) mod device_graph;
pub(crate) mod flow;
pub(crate) mod images;

/// `call` failed with `e`, as a message (see [`chariot_inorder::rig::failed_text`]).
pub(crate) use chariot_inorder::rig::failed_text;

use cudarc::driver::{result, sys};

/// Compiles `source` (entry points named in it; `name` keys chariot's compile cache)
/// for device `dev` through chariot's NVRTC cache and loads it into the current
/// context, with the functions `entries` of it, in order. On failure nothing stays
/// loaded; on success the caller unloads the module.
pub(crate) fn load_module(
    dev: sys::CUdevice,
    name: &str,
    source: &str,
    entries: &[&str],
) -> Result<(sys::CUmodule, Vec<sys::CUfunction>), String> {
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
    let kernel = chariot::Kernel::new(name, source);
    let image = chariot::cuda::compile_cubin(&kernel, &format!("sm_{major}{minor}")).map_err(|e| e.to_string())?;
    // SAFETY: a complete cubin for this device; unloaded below on failure, else by the
    // caller.
    let module = unsafe { result::module::load_data(image.as_ptr() as *const std::ffi::c_void) }
        .map_err(|e| failed_text("cuModuleLoadData", e))?;
    let functions = entries
        .iter()
        .map(|entry| {
            let c = std::ffi::CString::new(*entry).map_err(|_| "kernel name has a NUL byte".to_string())?;
            // SAFETY: the module was just loaded.
            unsafe { result::module::get_function(module, c) }.map_err(|e| failed_text("cuModuleGetFunction", e))
        })
        .collect::<Result<Vec<_>, String>>();
    match functions {
        Ok(f) => Ok((module, f)),
        Err(e) => {
            // SAFETY: loaded above, used by nothing.
            let _ = unsafe { result::module::unload(module) };
            Err(e)
        }
    }
}
