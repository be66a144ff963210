//! The CUDA machine: driver initialisation, one retained primary context per GPU,
//! device attributes, allocation, and kernel loading.
//!
//! cudarc loads the driver library and each of its functions at first use, and panics
//! when the library lacks one. [`Machine::probe`], which every way into the CUDA backend
//! takes first, finds the library as cudarc does and looks up the functions the
//! backend calls, so that a library that is not a CUDA driver, or one too old, is
//! `CudaUnavailable` (and `Auto` falls back to sim) with nothing printed.

use super::handle::Module;
use super::{describe, driver, failed, nvrtc};
use crate::backend::device::{Function, GpuInfo, KernelCode, PhysBuf};
use crate::backend::host_alloc::HostAlloc;
use crate::config::Gpus;
use crate::report::Cleanup;
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// The driver functions every scheduler calls, named as cudarc loads them (its `sys`
/// functions' names, versioned: `cuMemAlloc_v2`). A driver call added to the backend
/// adds its function here. Left out on purpose, so that older drivers still run the
/// rest: `cuEventElapsedTime_v2` (CUDA 12.8; only `device_timing` needs it: see
/// [`times_events`]) and the graph and capture functions of the hand-written baselines.
const DRIVER_FUNCTIONS: [&str; 36] = [
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxReset_v2",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuCtxSynchronize",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemGetInfo_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpy2DAsync_v2",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
];

/// The optional driver function `device_timing` needs: the time between two events.
const ELAPSED_TIME: &str = "cuEventElapsedTime_v2";

/// Whether the driver library found has [`ELAPSED_TIME`] (false before it was checked,
/// or where none loads).
static TIMES_EVENTS: OnceLock<bool> = OnceLock::new();

/// Whether the driver can time a pair of events ([`ELAPSED_TIME`]): what
/// `device_timing` needs (the scheduler's builder checks it).
pub(crate) fn times_events() -> bool {
    TIMES_EVENTS.get().copied().unwrap_or(false)
}

/// Finds the driver library where cudarc will (the first of its candidate names that
/// loads) and checks it has [`DRIVER_FUNCTIONS`], and whether it has [`ELAPSED_TIME`].
/// Once per process: cudarc, too, loads its library once.
fn check_driver_library() -> Result<(), NoCuda> {
    static CHECKED: OnceLock<Result<(), NoCuda>> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let names = ["cuda", "nvcuda"].into_iter().flat_map(cudarc::get_lib_name_candidates);
            for name in names {
                // SAFETY: loading the driver library runs its initialisers, as cudarc's
                // own loading of the same file does; no function is called.
                let Ok(lib) = (unsafe { libloading::Library::new(&name) }) else { continue };
                let missing: Vec<&'static str> = DRIVER_FUNCTIONS
                    .into_iter()
                    // SAFETY: only the symbol's address is looked up; it is not called.
                    .filter(|f| unsafe { lib.get::<*const std::ffi::c_void>(f.as_bytes()) }.is_err())
                    .collect();
                if missing.is_empty() {
                    // SAFETY: as above, only the address is looked up.
                    let timed = unsafe { lib.get::<*const std::ffi::c_void>(ELAPSED_TIME.as_bytes()) }.is_ok();
                    let _ = TIMES_EVENTS.set(timed);
                    return Ok(());
                }
                return Err(NoCuda::MissingFunctions { library: name.to_string(), missing });
            }
            Err(NoCuda::NoLibrary)
        })
        .clone()
}

/// Why the CUDA backend cannot run here ([`Machine::probe`]); it becomes
/// `Error::CudaUnavailable`'s reason, or the line that says the sim is used instead.
#[derive(Clone, Debug)]
pub(crate) enum NoCuda {
    /// No driver library on the loader's path.
    NoLibrary,
    /// The first driver library found lacks functions chariot calls.
    MissingFunctions {
        /// The library's file name.
        library: String,
        /// The functions it lacks, of [`DRIVER_FUNCTIONS`].
        missing: Vec<&'static str>,
    },
    /// `cuInit` or `cuDeviceGetCount` failed.
    Driver(crate::report::DriverError),
    /// cudarc's loading of the driver panicked, with this text.
    LoadPanicked(String),
    /// The driver works and sees no device.
    NoDevice,
}

impl std::fmt::Display for NoCuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoCuda::NoLibrary => f.write_str("the CUDA driver library (libcuda.so) was not found"),
            NoCuda::MissingFunctions { library, missing } => {
                write!(f, "the CUDA driver library {library} (the first found on the loader's path) lacks ")?;
                // The first three, and how many more.
                write!(f, "{}", missing.iter().take(3).copied().collect::<Vec<_>>().join(", "))?;
                if missing.len() > 3 {
                    write!(f, " and {} more", missing.len() - 3)?;
                }
                write!(
                    f,
                    " of the {} driver functions chariot calls: it is not a CUDA driver, or one too old",
                    DRIVER_FUNCTIONS.len()
                )
            }
            NoCuda::Driver(e) => e.fmt(f),
            NoCuda::LoadPanicked(text) => write!(f, "loading the CUDA driver: panicked: {text}"),
            NoCuda::NoDevice => f.write_str("the CUDA driver reports no device"),
        }
    }
}

impl std::error::Error for NoCuda {}

/// Why the driver's occupancy calculator gave no figure ([`Machine::blocks_per_sm`]);
/// the caller falls back to the device's limits.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Occupancy {
    /// The machine has no GPU of that index.
    #[error("no GPU {gpu}")]
    NoGpu {
        /// The index asked for.
        gpu: usize,
    },
    /// The block's threads do not fit the driver's `int`.
    #[error("{threads} threads a block")]
    Threads {
        /// The threads asked for.
        threads: u32,
    },
    /// A driver call failed.
    #[error(transparent)]
    Driver(#[from] crate::report::DriverError),
}

/// A retained primary context.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) index: usize,
    pub(crate) dev: sys::CUdevice,
    pub(crate) ctx: sys::CUcontext,
    /// The machine's list of errors met while freeing or tearing down: whatever is
    /// freed in this context keeps its driver errors there.
    pub(crate) cleanup: Arc<Cleanup>,
}

// SAFETY: a CUcontext may be made current on any thread; the handle is plain data.
unsafe impl Send for Context {}
// SAFETY: as above; the driver serialises what needs serialising inside a context.
unsafe impl Sync for Context {}

impl Context {
    /// Makes the context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<(), crate::report::DriverError> {
        // SAFETY: the context was retained in `Machine::open` and is released only when
        // this value drops.
        unsafe { driver::ctx_set_current(self.ctx) }.map_err(|e| failed("cuCtxSetCurrent", e))
    }

    /// Whether a sticky error has poisoned this context, asked from a thread whose
    /// current context is `home`, current again after. The question is a memory query,
    /// which waits for none of the GPU's work.
    #[cfg(feature = "replay")]
    pub(crate) fn lost_seen_from(&self, home: &Context) -> bool {
        let lost = self.bind().is_ok()
            && driver::mem_get_info().is_err_and(|e| super::gpu::reach(e, false) != crate::backend::Reach::Task);
        // A home that cannot be made current again fails the caller's next call, which
        // takes its GPU out of the rotation: nothing to add here.
        let _ = home.bind();
        lost
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // A context poisoned by a sticky error stays poisoned while anyone retains it,
        // and the driver keeps a released primary context's state: reset it, so that a
        // later scheduler on this GPU gets a fresh one. Nothing runs on it by now (the
        // dispatchers are joined), and nobody can use a poisoned context anyway.
        let poisoned = self.bind().is_ok()
            && driver::ctx_synchronize().is_err_and(|e| super::gpu::reach(e, false) != crate::backend::Reach::Task);
        // SAFETY: retained once in `Machine::open`, released once here, when the last
        // holder of the context (whatever was made in it holds it too) is gone; the
        // reset only when the context is lost (see above).
        let (released, reset) = unsafe {
            let released = driver::device_primary_ctx_release(self.dev);
            (released, if poisoned { driver::device_primary_ctx_reset(self.dev) } else { Ok(()) })
        };
        // The last holder of the context is gone, so the scheduler is too: the errors
        // go to stderr (`cleanup` is closed, or reports them when it drops).
        let gpu = self.index;
        if let Err(e) = released {
            self.cleanup.push(failed(&format!("cuDevicePrimaryCtxRelease on GPU {gpu}"), e));
        }
        if let Err(e) = reset {
            self.cleanup.push(failed(&format!("cuDevicePrimaryCtxReset on GPU {gpu}"), e));
        }
    }
}

/// All CUDA GPUs this scheduler uses.
#[derive(Debug)]
pub(crate) struct Machine {
    contexts: Vec<Arc<Context>>,
    gpus: Vec<GpuInfo>,
    modules: Mutex<Vec<Module>>,
    /// Driver errors met while freeing or tearing down, for the next report.
    cleanup: Arc<Cleanup>,
}

fn attr(dev: sys::CUdevice, a: sys::CUdevice_attribute) -> Result<i32, crate::report::DriverError> {
    driver::device_get_attribute(dev, a).map_err(|e| failed("cuDeviceGetAttribute", e))
}

impl Machine {
    /// Loads the driver and counts devices, or says why CUDA cannot run here: no
    /// driver library, one without the functions chariot calls, a failing `cuInit`,
    /// no device.
    ///
    /// A panic in cudarc's loading (which the check above should leave no cause for:
    /// a library that changed since) is caught and reported the same way; the
    /// process's panic hook prints its message.
    pub(crate) fn probe() -> Result<usize, NoCuda> {
        check_driver_library()?;
        let count = std::panic::catch_unwind(|| {
            driver::init().map_err(|e| failed("cuInit", e))?;
            driver::device_get_count().map_err(|e| failed("cuDeviceGetCount", e))
        })
        .map_err(|payload| NoCuda::LoadPanicked(crate::error::panic_text(payload)))?
        .map_err(NoCuda::Driver)?;
        match usize::try_from(count) {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(NoCuda::NoDevice),
        }
    }

    pub(crate) fn open(selection: &Gpus) -> crate::Result<Self> {
        let count = Self::probe().map_err(|why| crate::Error::CudaUnavailable { reason: why.to_string() })?;
        let ordinals = selection.resolve(count, "cuda")?;
        let mut contexts = Vec::new();
        let mut gpus = Vec::new();
        let cleanup = Arc::new(Cleanup::default());
        for (index, &ordinal) in ordinals.iter().enumerate() {
            let on_gpu = |error: crate::report::DriverError| crate::Error::Driver { gpu: index, error };
            let dev = driver::device_get(ordinal as i32).map_err(|e| on_gpu(failed("cuDeviceGet", e)))?;
            // Released in Context::drop.
            let ctx =
                driver::device_primary_ctx_retain(dev).map_err(|e| on_gpu(failed("cuDevicePrimaryCtxRetain", e)))?;
            let context = Arc::new(Context { index, dev, ctx, cleanup: cleanup.clone() });
            context.bind().map_err(on_gpu)?;
            use sys::CUdevice_attribute::*;
            let engines = attr(dev, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT).map_err(on_gpu)?;
            let concurrent = attr(dev, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS).map_err(on_gpu)?;
            let major = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).map_err(on_gpu)?;
            let minor = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).map_err(on_gpu)?;
            let per_sm = [
                CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            ]
            .map(|a| attr(dev, a).map(|v| v.max(1) as u32));
            let [sm_count, max_threads_per_sm, max_blocks_per_sm, shared_bytes_per_sm] = per_sm;
            let name = driver::device_get_name(dev).map_err(|e| on_gpu(failed("cuDeviceGetName", e)))?;
            let memory = driver::device_total_mem(dev).map_err(|e| on_gpu(failed("cuDeviceTotalMem", e)))?;
            let pci =
                [CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]
                    .map(|a| attr(dev, a).unwrap_or(-1));
            let local_cpus = std::fs::read_to_string(format!(
                "/sys/bus/pci/devices/{:04x}:{:02x}:{:02x}.0/local_cpulist",
                pci[0], pci[1], pci[2]
            ))
            .ok()
            .map(|s| parse_cpulist(&s))
            .filter(|v| !v.is_empty());
            gpus.push(GpuInfo {
                local_cpus,
                name,
                ordinal,
                copy_engines: engines.max(0) as u32,
                concurrent_kernels: concurrent != 0,
                arch: format!("sm_{major}{minor}"),
                memory_bytes: memory as u64,
                sm_count: sm_count.map_err(on_gpu)?,
                max_threads_per_sm: max_threads_per_sm.map_err(on_gpu)?,
                max_blocks_per_sm: max_blocks_per_sm.map_err(on_gpu)?,
                shared_bytes_per_sm: shared_bytes_per_sm.map_err(on_gpu)?,
            });
            contexts.push(context);
        }
        super::peer::enable_peer_access(&contexts);
        Ok(Machine { contexts, gpus, modules: Mutex::new(Vec::new()), cleanup })
    }

    /// Copies `out.len()` bytes from device address `ptr` of GPU `gpu` to `out`, waiting
    /// for the copy (an eviction's write-back, on that GPU's dispatcher thread).
    pub(crate) fn read_device(&self, gpu: usize, ptr: u64, out: &mut [u8]) -> Result<(), crate::report::DriverError> {
        self.contexts[gpu].bind()?;
        // SAFETY: the context is current; `ptr` lies in a live allocation of this GPU
        // holding at least `out.len()` bytes from it (the caller's copy and range); the
        // call returns once the bytes are in `out`.
        unsafe { driver::memcpy_dtoh(out.as_mut_ptr() as *mut std::ffi::c_void, ptr, out.len()) }
            .map_err(|e| failed("cuMemcpyDtoH", e))
    }

    pub(crate) fn cleanup(&self) -> &Arc<Cleanup> {
        &self.cleanup
    }

    pub(crate) fn gpus(&self) -> &[GpuInfo] {
        &self.gpus
    }

    pub(crate) fn alloc_device(&self, gpu: usize, bytes: usize) -> crate::Result<PhysBuf> {
        self.contexts[gpu].bind().map_err(|error| crate::Error::Driver { gpu, error })?;
        // Freed once, in `free_device`.
        match driver::mem_alloc(bytes) {
            Ok(ptr) => Ok(PhysBuf::Cuda { gpu, ptr }),
            Err(e) => Err(crate::Error::OutOfMemory {
                what: crate::error::MemoryKind::Device { gpu },
                bytes,
                message: failed("cuMemAlloc", e).to_string(),
            }),
        }
    }

    /// Returns `bufs` to the driver; a failed free (or a context that cannot be made
    /// current for it) is kept in `cleanup` for the next report. Each is freed in its
    /// GPU's context, visited: the calling thread's own context is current again after
    /// (a dispatcher may free a batch's last tasks, and must keep its GPU's).
    pub(crate) fn free_device(&self, bufs: Vec<PhysBuf>) {
        for b in bufs {
            if let PhysBuf::Cuda { gpu, ptr } = b {
                let _visit = match super::gpu_context::visit(&self.contexts[gpu]) {
                    Ok(v) => v,
                    Err(e) => {
                        self.cleanup.push(crate::report::DriverError {
                            call: format!("{} for cuMemFree on GPU {gpu}", e.call),
                            ..e
                        });
                        continue;
                    }
                };
                // SAFETY: allocated by cuMemAlloc in `alloc_device`, in this context,
                // which is current (visited); freed once (a `PhysBuf` is given back
                // once); reaching the graveyard means no command names it any more.
                if let Err(e) = unsafe { driver::mem_free(ptr) } {
                    self.cleanup.push(failed(&format!("cuMemFree on GPU {gpu}"), e));
                }
            }
        }
    }

    /// GPU `gpu`'s context, for libraries working beside chariot ([`GpuContext`](super::GpuContext)).
    pub(crate) fn context(&self, gpu: usize) -> Option<&Arc<Context>> {
        self.contexts.get(gpu)
    }

    pub(crate) fn open_gpu(
        &self,
        gpu: usize,
        streams: usize,
        epoch: std::time::Instant,
        timing: bool,
        nvtx: Option<Arc<super::nvtx::Nvtx>>,
    ) -> crate::Result<super::Gpu> {
        let arch = self.gpus[gpu].arch.clone();
        super::Gpu::open(self.contexts[gpu].clone(), self.contexts.clone(), arch, streams, epoch, timing, nvtx)
            .map_err(|error| crate::Error::Driver { gpu, error })
    }

    pub(crate) fn memory_in_use(&self, gpu: usize) -> Option<u64> {
        self.contexts[gpu].bind().ok()?;
        let (free, total) = driver::mem_get_info().ok()?;
        Some((total - free) as u64)
    }

    /// Pinned, portable (every context sees it as pinned), not write-combined (fast for
    /// the CPU to read back), zeroed.
    pub(crate) fn alloc_host(&self, bytes: usize) -> crate::Result<HostAlloc> {
        let ctx = self.contexts[0].clone();
        ctx.bind().map_err(|error| crate::Error::Driver { gpu: 0, error })?;
        // Freed once, by the closure below.
        let ptr =
            driver::mem_host_alloc(bytes, sys::CU_MEMHOSTALLOC_PORTABLE).map_err(|e| crate::Error::OutOfMemory {
                what: crate::error::MemoryKind::PinnedHost,
                bytes,
                message: failed("cuMemHostAlloc", e).to_string(),
            })?;
        let ptr = NonNull::new(ptr as *mut u8).ok_or_else(|| crate::Error::OutOfMemory {
            what: crate::error::MemoryKind::PinnedHost,
            bytes,
            message: "cuMemHostAlloc returned null".into(),
        })?;
        // SAFETY: the block has `bytes` writable bytes and nobody else sees it yet.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
        let free = Box::new(move |p: *mut u8| {
            // Errors go to the next report (or stderr after the shutdown). The free is
            // tried even without the context: portable pinned memory is any context's.
            if let Err(e) = ctx.bind() {
                ctx.cleanup.push(crate::report::DriverError { call: format!("{} for cuMemFreeHost", e.call), ..e });
            }
            // SAFETY: `p` came from cuMemHostAlloc above and is freed once, when the
            // last task and handle referencing the HostAlloc are gone (so no copy of
            // it is queued: a copy's command holds the HostAlloc until it completes).
            if let Err(e) = unsafe { driver::mem_free_host(p as *mut std::ffi::c_void) } {
                ctx.cleanup.push(failed("cuMemFreeHost", e));
            }
        });
        Ok(HostAlloc::pinned(ptr, bytes, free))
    }

    /// Blocks of `function` (loaded on GPU `gpu`) that one SM holds at once with
    /// `block_threads` threads and `shared_bytes` of dynamic shared memory, by the
    /// driver's occupancy calculator (registers, shared memory, threads, blocks).
    pub(crate) fn blocks_per_sm(
        &self,
        gpu: usize,
        function: &Function,
        block_threads: u32,
        shared_bytes: u32,
    ) -> Result<u32, Occupancy> {
        let ctx = self.contexts.get(gpu).ok_or(Occupancy::NoGpu { gpu })?;
        ctx.bind()?;
        let threads = i32::try_from(block_threads).map_err(|_| Occupancy::Threads { threads: block_threads })?;
        // SAFETY: `function` was loaded in this GPU's context by `load_kernel`, and its
        // module stays loaded until the Machine drops.
        let n = unsafe {
            driver::occupancy_max_active_blocks_per_multiprocessor(function.func, threads, shared_bytes as usize)
        }
        .map_err(|e| failed("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        Ok(n.max(0) as u32)
    }

    /// Compiles `kernel` for each architecture present and loads it on every GPU.
    pub(crate) fn load_kernel(&self, kernel: KernelCode<'_>) -> crate::Result<Vec<Function>> {
        let entry = CString::new(kernel.name).map_err(|_| crate::Error::KernelInvalid {
            kernel: kernel.name.to_string(),
            message: "the name contains a NUL byte".into(),
        })?;
        let mut functions = Vec::with_capacity(self.gpus.len());
        for (gpu, info) in self.gpus.iter().enumerate() {
            let image = nvrtc::compile(kernel, &info.arch)?;
            let ctx = &self.contexts[gpu];
            ctx.bind().map_err(|error| crate::Error::Driver { gpu, error })?;
            // SAFETY: `image` is a complete cubin for this device's architecture, as
            // NVRTC made it; the module stays loaded until the Machine drops (see Drop).
            let module = unsafe { Module::load_data(ctx, &image) }
                .map_err(|e| crate::Error::Driver { gpu, error: failed("cuModuleLoadData", e) })?;
            let func = module.get_function(&entry);
            self.modules.lock().push(module);
            let func = func.map_err(|e| crate::Error::KernelInvalid {
                kernel: kernel.name.to_string(),
                message: format!(
                    "no entry point `{}` in the compiled module ({}); declare it extern \"C\" __global__",
                    kernel.name,
                    describe(e)
                ),
            })?;
            functions.push(Function { func });
        }
        Ok(functions)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // The scheduler is gone (it holds the Machine): `cleanup` is closed and writes
        // these to stderr, or keeps them until it drops and writes them then.
        // Each module unloads (its error kept by the handle) with its context current;
        // the dispatchers that launch from them have been joined before the Machine
        // drops.
        for module in self.modules.lock().drain(..) {
            if let Err(e) = module.context().bind() {
                self.cleanup.push(crate::report::DriverError { call: format!("{} for cuModuleUnload", e.call), ..e });
                module.leak();
                continue;
            }
            drop(module);
        }
    }
}

/// Parses a Linux CPU list such as `0-31,64-95`.
fn parse_cpulist(s: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.trim().parse::<usize>().ok()),
        }
    }
    cpus
}

#[cfg(test)]
mod test {
    #[test]
    fn cpulists() {
        assert_eq!(super::parse_cpulist("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert!(super::parse_cpulist("").is_empty());
    }

    /// The reason names the library, the first three functions it lacks and how many
    /// more, as the text did when it was built in place.
    #[test]
    fn missing_functions_are_named() {
        let missing = |n: usize| super::NoCuda::MissingFunctions {
            library: "libcuda.so.1".into(),
            missing: super::DRIVER_FUNCTIONS[..n].to_vec(),
        };
        let [a, b, c, d] = [0, 1, 2, 3].map(|i| super::DRIVER_FUNCTIONS[i]);
        let total = super::DRIVER_FUNCTIONS.len();
        assert_eq!(
            missing(5).to_string(),
            format!(
                "the CUDA driver library libcuda.so.1 (the first found on the loader's path) lacks {a}, {b}, {c} \
                 and 2 more of the {total} driver functions chariot calls: it is not a CUDA driver, or one too old"
            )
        );
        let two = missing(2).to_string();
        assert!(two.contains(&format!("lacks {a}, {b} of the {total}")) && !two.contains(d), "{two}");
    }
}
