//! What the layers above the backend hold of a GPU without driving it: its description
//! ([`GpuInfo`]), a physical buffer ([`PhysBuf`], a simulated GPU's memory being a
//! [`SimMemory`]) and a kernel loaded on it ([`Function`]). With `host_alloc`, this is
//! the backend's low part: `memory`, `kernel` and the stage rules sit above it and
//! below the rest of the backend (see `scripts/ci/check-layers.py`), which makes and
//! drives these values. The `unsafe` it needs stays here, in `backend/`.

use cudarc::driver::sys;
use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Kind of one kernel parameter (what the driver takes for it; kept here, with the
/// loaded kernels, as the backend checks compiled kernels against it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Param {
    /// A device buffer (passed as a device pointer).
    Buffer,
    /// `int`
    I32,
    /// `unsigned int`
    U32,
    /// `long long`
    I64,
    /// `unsigned long long`
    U64,
    /// `float`
    F32,
    /// `double`
    F64,
}

/// What the backend compiles, loads and checks of a kernel: its entry point's name,
/// its CUDA C and its declared parameters (borrowed from the kernel's definition).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelCode<'a> {
    pub(crate) name: &'a str,
    pub(crate) source: &'a str,
    pub(crate) params: &'a [Param],
}

/// What the dispatcher needs to know about a GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GpuInfo {
    /// Device name.
    pub name: String,
    /// Ordinal on its backend (CUDA device number).
    pub ordinal: usize,
    /// `CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT`.
    pub copy_engines: u32,
    /// `CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS`.
    pub concurrent_kernels: bool,
    /// Compute architecture, e.g. `sm_90` (`sim` on the simulator).
    pub arch: String,
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// CPU cores local to the GPU, where the PCI topology says.
    pub local_cpus: Option<Vec<usize>>,
    /// Streaming multiprocessors (`CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`).
    pub sm_count: u32,
    /// Resident threads one SM holds at most.
    pub max_threads_per_sm: u32,
    /// Resident blocks one SM holds at most.
    pub max_blocks_per_sm: u32,
    /// Shared memory of one SM, bytes.
    pub shared_bytes_per_sm: u32,
}

impl GpuInfo {
    /// A GPU with `copy_engines` copy engines and 132 SMs of Hopper's limits, for the
    /// unit tests of the choices made from it.
    #[cfg(test)]
    pub(crate) fn for_tests(copy_engines: u32, concurrent_kernels: bool) -> GpuInfo {
        GpuInfo {
            name: "test".into(),
            ordinal: 0,
            copy_engines,
            concurrent_kernels,
            arch: "sim".into(),
            memory_bytes: 1 << 30,
            local_cpus: None,
            sm_count: 132,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            shared_bytes_per_sm: 228 << 10,
        }
    }

    /// Blocks of `block_threads` threads and `shared_bytes` of dynamic shared memory
    /// that one SM holds at once, by the device's limits alone (threads, blocks, shared
    /// memory; registers are not known here). The CUDA backend asks the driver instead
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`), which also counts registers; the
    /// sim backend uses this.
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let h100 = &s.gpu_info()[0];
    /// assert_eq!(h100.blocks_per_sm(256, 0), 8);          // 2048 threads an SM
    /// assert_eq!(h100.blocks_per_sm(32, 0), 32);          // 32 blocks an SM
    /// assert_eq!(h100.blocks_per_sm(256, 64 << 10), 3);   // 228 KiB of shared memory
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn blocks_per_sm(&self, block_threads: u32, shared_bytes: u32) -> u32 {
        // Threads are granted by whole warps.
        let warps = block_threads.max(1).div_ceil(32) * 32;
        let by_threads = self.max_threads_per_sm / warps;
        let by_shared = self.shared_bytes_per_sm.checked_div(shared_bytes).unwrap_or(u32::MAX);
        by_threads.min(by_shared).min(self.max_blocks_per_sm)
    }
}

/// One physical buffer of a virtual one.
#[derive(Debug)]
pub(crate) enum PhysBuf {
    /// A `cuMemAlloc` block on a GPU (index in the scheduler's list).
    Cuda { gpu: usize, ptr: u64 },
    /// A simulated GPU's memory.
    Sim(Arc<SimMemory>),
}

impl PhysBuf {
    /// The device address of a CUDA block (`None` on sim).
    pub(crate) fn cuda_ptr(&self) -> Option<u64> {
        match self {
            PhysBuf::Cuda { ptr, .. } => Some(*ptr),
            PhysBuf::Sim(_) => None,
        }
    }

    /// The first `len` elements of a simulated GPU's memory, viewed as `T` and locked
    /// while the guard lives (`None` on CUDA).
    pub(crate) fn sim_slice<T: bytemuck::Pod>(&self, len: usize) -> Option<MappedMutexGuard<'_, [T]>> {
        match self {
            PhysBuf::Sim(mem) => {
                let guard = mem.data.lock();
                // Safe cast: 16-byte aligned words viewed as the buffer's elements.
                Some(MutexGuard::map(guard, move |words| {
                    &mut bytemuck::cast_slice_mut::<u128, T>(&mut words[..])[..len]
                }))
            }
            PhysBuf::Cuda { .. } => None,
        }
    }
}

/// A simulated GPU's memory: 16-byte words, so any element type casts safely.
#[derive(Debug)]
pub(crate) struct SimMemory {
    pub(crate) data: Mutex<Vec<u128>>,
    /// The bytes allocated (the words hold them rounded up to 16).
    pub(crate) bytes: usize,
    in_use: Arc<AtomicU64>,
}

impl SimMemory {
    /// `words` as the memory of a simulated GPU, `bytes` of which are counted in
    /// `in_use` until it drops.
    pub(crate) fn new(words: Vec<u128>, bytes: usize, in_use: Arc<AtomicU64>) -> Self {
        SimMemory { data: Mutex::new(words), bytes, in_use }
    }
}

impl Drop for SimMemory {
    fn drop(&mut self) {
        self.in_use.fetch_sub(self.bytes as u64, Ordering::SeqCst);
    }
}

/// A kernel's loaded entry point on one GPU.
#[derive(Debug)]
pub(crate) struct Function {
    pub(crate) func: sys::CUfunction,
}

// SAFETY: a CUfunction is a handle the driver lets any thread use once its context is
// current; the module it belongs to stays loaded until the Machine drops.
unsafe impl Send for Function {}
// SAFETY: as above; launching through a shared handle is thread-safe in the driver.
unsafe impl Sync for Function {}
