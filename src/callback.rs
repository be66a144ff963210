//! Callbacks (paper §4, `launchCallbackRoutine`): CPU callbacks run as stage-1 work on
//! executioner threads; GPU callbacks run as kernel-stage work on the task's stream,
//! with its resolved device pointers, on the dispatcher's thread.
//!
//! A panic in a callback is caught where it runs and becomes that task's failure;
//! the executioners and dispatchers live on.
//!
//! This module is what a callback is and gets; the executioner threads that run CPU
//! callbacks are the dispatcher's (`crate::dispatch::executioners`), and the mark of a
//! thread running a callback is `crate::ids::InCallback`.

use crate::backend::op::{HostAt, HostFunc};
pub(crate) use crate::backend::op_failure::CallbackFailure;
use crate::error::BoxError;
use crate::ids::TaskId;
use crate::memory::{DeviceBuffer, Element};
#[cfg(feature = "resident")]
use crate::seam::ResidentBuffer;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Which resource a callback uses (the paper's `flagCPU` / `flagGPU`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// A CPU function: runs on an executioner thread as a [`Stage::Cpu`](crate::Stage) command.
    Cpu,
    /// A GPU library call: runs as a [`Stage::Kernel`](crate::Stage) command on the task's stream.
    Gpu,
}

/// Where a callback runs: its task, and the GPU and stream slot the task is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallInfo {
    /// The task.
    pub task: TaskId,
    /// The GPU (index in the scheduler's list).
    pub gpu: usize,
    /// The stream slot on that GPU.
    pub stream: usize,
}

/// What a GPU callback gets: its place, and the task's stream and device memory on the
/// backend that runs it.
///
/// On the CUDA backend, enqueue library work on [`GpuCall::cuda_stream`] with the
/// pointers of [`GpuCall::device_ptr`]; on the sim backend, work on the buffers of
/// [`GpuCall::sim_buffer`].
pub struct GpuCall<'a> {
    pub(crate) info: CallInfo,
    pub(crate) on: GpuCallOn<'a>,
    /// The resident buffers (ids) its task declared: the only ones it may reach.
    #[cfg(feature = "resident")]
    pub(crate) resident: Option<std::sync::Arc<[u64]>>,
}

pub(crate) enum GpuCallOn<'a> {
    Cuda { stream: cudarc::driver::sys::CUstream },
    Sim { _life: std::marker::PhantomData<&'a ()> },
}

impl GpuCall<'_> {
    /// Task, GPU and stream slot.
    pub fn info(&self) -> CallInfo {
        self.info
    }

    /// The task's CUDA stream (`None` on the sim backend). Work enqueued on it is
    /// ordered with the task's other commands.
    pub fn cuda_stream(&self) -> Option<CudaStream> {
        match self.on {
            GpuCallOn::Cuda { stream } => Some(CudaStream(stream)),
            GpuCallOn::Sim { .. } => None,
        }
    }

    /// The device address of `buf`'s physical copy for this task (`None` on sim).
    pub fn device_ptr<T: Element>(&self, buf: &DeviceBuffer<T>) -> Option<u64> {
        buf.inner().phys(self.info.gpu, self.info.stream).cuda_ptr()
    }

    /// `buf`'s physical copy for this task on the simulated GPU (`None` on CUDA), locked
    /// while the guard lives.
    pub fn sim_buffer<'b, T: Element>(&self, buf: &'b DeviceBuffer<T>) -> Option<SimBuffer<'b, T>> {
        buf.inner().phys(self.info.gpu, self.info.stream).sim_slice(buf.len()).map(SimBuffer)
    }
}

/// A task's CUDA stream, as a GPU callback gets it ([`GpuCall::cuda_stream`]): the
/// driver's `CUstream`, for enqueueing library work (cuBLAS, cuFFT, driver calls)
/// ordered with the task's other commands. It is valid while the callback runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaStream(cudarc::driver::sys::CUstream);

impl CudaStream {
    /// The driver's handle (`CUstream`, which is `cudaStream_t` too), as an untyped
    /// pointer: cast it to the stream type of the library that takes it.
    pub fn as_raw(self) -> *mut std::ffi::c_void {
        self.0.cast()
    }

    /// Whether the handle is null (the legacy default stream; chariot never gives it).
    pub fn is_null(self) -> bool {
        self.0.is_null()
    }
}

/// A task's physical copy of a device buffer on the simulated GPU, as a GPU callback
/// gets it ([`GpuCall::sim_buffer`]): the buffer's elements, locked while it lives.
pub struct SimBuffer<'b, T>(parking_lot::MappedMutexGuard<'b, [T]>);

impl<T> std::ops::Deref for SimBuffer<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> std::ops::DerefMut for SimBuffer<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

impl<T> std::fmt::Debug for SimBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimBuffer").field("len", &self.0.len()).finish()
    }
}

#[cfg(feature = "resident")]
impl GpuCall<'_> {
    /// Whether the task declared a use of resident buffer `id` (its copy on this GPU is
    /// then bound to the task until it ends, and the data is ordered and fetched).
    fn declared(&self, id: u64) -> bool {
        self.resident.as_ref().is_some_and(|ids| ids.contains(&id))
    }

    /// The device address of element `offset` of `buf`'s copy on this task's GPU
    /// (`None` on sim, for an offset past the end, or for a buffer the task did not
    /// declare with [`TaskBuilder::reads`](crate::TaskBuilder::reads), `writes` or
    /// `reads_writes` (or name in a copy or launch): only a declared use orders the
    /// task, fetches the data and keeps the copy from eviction while the task runs).
    pub fn resident_ptr<T: Element>(&self, buf: &ResidentBuffer<T>, offset: usize) -> Option<u64> {
        if !self.declared(buf.id()) {
            return None;
        }
        let size = std::mem::size_of::<T>() as u64;
        let copy = buf.inner().copy(self.info.gpu)?;
        copy.cuda_ptr().filter(|_| offset <= buf.len()).map(|p| p + offset as u64 * size)
    }

    /// Runs `f` on elements `offset..` of `buf`'s copy on this simulated GPU, locked
    /// while `f` runs (`None` on CUDA, for an offset past the end, or for a buffer the
    /// task did not declare: see [`resident_ptr`](GpuCall::resident_ptr)).
    pub fn sim_resident<T: Element, R>(
        &self,
        buf: &ResidentBuffer<T>,
        offset: usize,
        f: impl FnOnce(&mut [T]) -> R,
    ) -> Option<R> {
        if !self.declared(buf.id()) {
            return None;
        }
        let copy = buf.inner().copy(self.info.gpu)?;
        let mut all = copy.sim_slice::<T>(buf.len())?;
        let part = all.get_mut(offset..)?;
        Some(f(part))
    }
}

impl std::fmt::Debug for GpuCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCall").field("info", &self.info).finish()
    }
}

/// A CPU callback as stored in a task.
pub(crate) type CpuFn = Box<dyn FnOnce(&CallInfo) -> Result<(), BoxError> + Send>;
/// A GPU callback as stored in a task.
pub(crate) type GpuFn = Box<dyn FnOnce(&mut GpuCall<'_>) -> Result<(), BoxError> + Send>;

/// A GPU callback as a task's command holds it: the user's function and what its
/// [`GpuCall`] will say beyond where it runs (the task, set when it is lowered; the
/// resident buffers the task declared). Lowered, it is the backend's host function.
pub(crate) struct GpuCallback {
    pub(crate) task: TaskId,
    #[cfg(feature = "resident")]
    pub(crate) resident: Option<std::sync::Arc<[u64]>>,
    f: GpuFn,
}

impl GpuCallback {
    pub(crate) fn new(f: GpuFn) -> Box<GpuCallback> {
        Box::new(GpuCallback {
            task: TaskId(0),
            #[cfg(feature = "resident")]
            resident: None,
            f,
        })
    }
}

impl HostFunc for GpuCallback {
    fn run(self: Box<Self>, at: HostAt) -> Result<(), CallbackFailure> {
        let me = *self;
        let mut call = GpuCall {
            info: CallInfo { task: me.task, gpu: at.gpu, stream: at.slot },
            on: match at.stream {
                Some(stream) => GpuCallOn::Cuda { stream },
                None => GpuCallOn::Sim { _life: std::marker::PhantomData },
            },
            #[cfg(feature = "resident")]
            resident: me.resident,
        };
        let f = me.f;
        run_caught(|| f(&mut call))
    }
}

pub(crate) use crate::error::panic_message;

/// Runs `f`, catching its error or its panic as a [`CallbackFailure`].
pub(crate) fn run_caught<R>(f: impl FnOnce() -> Result<R, BoxError>) -> Result<R, CallbackFailure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(CallbackFailure::Returned(e)),
        Err(payload) => Err(CallbackFailure::Panicked(crate::error::panic_text(payload))),
    }
}
