//! The public door to NVRTC for code that runs a kernel beside chariot: a [`Kernel`]'s
//! cubin, compiled by the backend (`backend::cuda::nvrtc`), which takes a kernel's code
//! only (it sits below the kernels).

use super::Kernel;
use std::sync::Arc;

/// The cubin of `kernel` for `arch` (e.g. `"sm_90"`), compiled by NVRTC with the
/// options chariot loads kernels with, once per (name, source, arch) in the process, and
/// kept on disk for later processes (`CHARIOT_KERNEL_CACHE` names the directory, `off`
/// turns it off; by default `$XDG_CACHE_HOME/chariot/kernels` or
/// `~/.cache/chariot/kernels`): for
/// code that runs a kernel beside chariot, such as the hand-written pipelines it is
/// measured against. Needs libnvrtc at run time ([`Error::KernelCompile`](crate::Error::KernelCompile)
/// without it, or with NVRTC's log for a kernel that does not compile).
///
/// ```
/// use chariot::{Error, Kernel};
/// use chariot::cuda::compile_cubin;
/// let k = Kernel::new("nop", "extern \"C\" __global__ void nop() {}");
/// match compile_cubin(&k, "sm_90") {
///     Ok(cubin) => assert!(!cubin.is_empty()),
///     Err(e) => assert!(matches!(e, Error::KernelCompile { .. }), "{e}"), // no libnvrtc here
/// }
/// ```
pub fn compile_cubin(kernel: &Kernel, arch: &str) -> crate::Result<Arc<Vec<u8>>> {
    crate::backend::cuda::nvrtc::compile(kernel.code(), arch)
}
