//! NVRTC: CUDA C to a cubin for one architecture, once per (kernel source, arch) in
//! the process, and kept on disk for later processes (`kernel_cache.rs`); compile
//! errors come back with NVRTC's log.

use super::driver::nvrtc as raw;
use crate::backend::device::KernelCode;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, OnceLock};

type Cache = Mutex<HashMap<(String, String, String), Arc<Vec<u8>>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The cubin of `kernel` for `arch` (e.g. `"sm_90"`), compiled by NVRTC with the
/// options chariot loads kernels with, once per (name, source, arch) in the process, and
/// kept on disk for later processes (see `chariot::cuda::compile_cubin`).
pub(crate) fn compile(kernel: KernelCode<'_>, arch: &str) -> crate::Result<Arc<Vec<u8>>> {
    let key = (kernel.name.to_string(), kernel.source.to_string(), arch.to_string());
    if let Some(image) = cache().lock().get(&key) {
        return Ok(image.clone());
    }
    let fail =
        |log: String| crate::Error::KernelCompile { kernel: kernel.name.to_string(), arch: arch.to_string(), log };
    if !raw::is_present() {
        return Err(fail("libnvrtc was not found: add the CUDA toolkit's lib64 to LD_LIBRARY_PATH".into()));
    }
    let options = [format!("--gpu-architecture={arch}"), "--std=c++17".to_string()];
    let disk_key = raw::version()
        .ok()
        .map(|version| super::kernel_cache::Key::new(kernel.name, kernel.source, arch, &options, version));
    if let Some(image) = disk_key.as_ref().and_then(super::kernel_cache::load) {
        let image = Arc::new(image);
        cache().lock().insert(key, image.clone());
        return Ok(image);
    }
    let src = CString::new(kernel.source).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let name = CString::new(format!("{}.cu", kernel.name)).map_err(|_| fail("the name contains a NUL byte".into()))?;
    // SAFETY: `src` and `name` live until the end of this function, after the program
    // is destroyed below.
    let prog = unsafe { raw::create_program(&src, &name) }.map_err(|e| fail(format!("nvrtcCreateProgram: {e:?}")))?;
    // SAFETY: `prog` is live until destroyed below.
    let compiled = unsafe { raw::compile_program(prog, &options) };
    let image = match compiled {
        // SAFETY: `prog` is live and compiled for `arch`, a real architecture
        // (`--gpu-architecture=sm_*`; a virtual one fails in NVRTC, with its error).
        Ok(()) => unsafe { raw::get_cubin(prog) }.map_err(|(call, e)| fail(format!("{call}: {e:?}"))),
        Err(e) => {
            // SAFETY: `prog` is live.
            let log = unsafe { raw::get_program_log(prog) }
                .map(|raw| raw.iter().map(|&c| c as u8).take_while(|&c| c != 0).map(char::from).collect::<String>())
                .unwrap_or_default();
            Err(fail(format!("{e:?}\n{log}")))
        }
    };
    // Not a driver resource, and it only fails for an invalid program (this one is
    // live): at worst the compiler's host memory for it leaks; nothing to report.
    // SAFETY: created above, destroyed once.
    let _ = unsafe { raw::destroy_program(prog) };
    let image = Arc::new(image?);
    if let Some(k) = &disk_key {
        super::kernel_cache::store(k, &image);
    }
    cache().lock().insert(key, image.clone());
    Ok(image)
}
