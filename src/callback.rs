//! Callbacks (paper §4, `launchCallbackRoutine`): CPU callbacks run as stage-1 work on
//! executioner threads; GPU callbacks run as kernel-stage work on the task's stream,
//! with its resolved device pointers, on the dispatcher's thread.
//!
//! A panic in a callback is caught where it runs and becomes that task's failure;
//! the executioners and dispatchers live on.
//!
//! While a callback runs, its thread knows which task it serves ([`InCallback`]): a call
//! that would wait for that very task (`synchronize`, a host guard on a range the task
//! claims) asks [`current`] and refuses instead of waiting forever.

use crate::error::BoxError;
use crate::memory::{DeviceBuffer, Element};
use crate::task::TaskId;
use crossbeam_channel::{Receiver, Sender};
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::thread::JoinHandle;

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
    pub fn cuda_stream(&self) -> Option<cudarc::driver::sys::CUstream> {
        match self.on {
            GpuCallOn::Cuda { stream } => Some(stream),
            GpuCallOn::Sim { .. } => None,
        }
    }

    /// The device address of `buf`'s physical copy for this task (`None` on sim).
    pub fn device_ptr<T: Element>(&self, buf: &DeviceBuffer<T>) -> Option<u64> {
        match buf.inner().phys(self.info.gpu, self.info.stream) {
            crate::memory::PhysBuf::Cuda { ptr, .. } => Some(*ptr),
            crate::memory::PhysBuf::Sim(_) => None,
        }
    }

    /// `buf`'s physical copy for this task on the simulated GPU (`None` on CUDA), locked
    /// while the guard lives.
    pub fn sim_buffer<'b, T: Element>(
        &self,
        buf: &'b DeviceBuffer<T>,
    ) -> Option<parking_lot::MappedMutexGuard<'b, [T]>> {
        match buf.inner().phys(self.info.gpu, self.info.stream) {
            crate::memory::PhysBuf::Sim(mem) => {
                let len = buf.len();
                let guard = mem.data.lock();
                // Safe cast: 16-byte aligned words viewed as the buffer's elements.
                Some(parking_lot::MutexGuard::map(guard, move |words| {
                    &mut bytemuck::cast_slice_mut::<u128, T>(&mut words[..])[..len]
                }))
            }
            crate::memory::PhysBuf::Cuda { .. } => None,
        }
    }
}

impl std::fmt::Debug for GpuCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCall").field("info", &self.info).finish()
    }
}

thread_local! {
    /// The callback running on this thread: its scheduler's id and its task.
    static CURRENT: Cell<Option<(u64, TaskId)>> = const { Cell::new(None) };
}

/// Marks this thread as running a callback of `task` (of scheduler `sched`) until it is
/// dropped, unwinding included. Every user callback runs inside one (the task builder
/// wraps it), on whatever thread runs it: an executioner, a dispatcher, a simulated engine.
#[derive(Debug)]
pub(crate) struct InCallback {
    prev: Option<(u64, TaskId)>,
}

impl InCallback {
    pub(crate) fn enter(sched: u64, task: TaskId) -> Self {
        InCallback { prev: CURRENT.with(|c| c.replace(Some((sched, task)))) }
    }
}

impl Drop for InCallback {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

/// The scheduler id and task whose callback runs on this thread, if one does.
pub(crate) fn current() -> Option<(u64, TaskId)> {
    CURRENT.with(Cell::get)
}

/// A CPU callback as stored in a task.
pub(crate) type CpuFn = Box<dyn FnOnce(&CallInfo) -> Result<(), BoxError> + Send>;
/// A GPU callback as stored in a task.
pub(crate) type GpuFn = Box<dyn FnOnce(&mut GpuCall<'_>) -> Result<(), BoxError> + Send>;

/// Turns a caught panic's payload into a message.
pub(crate) fn panic_message(payload: Box<dyn Any + Send>) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".to_string());
    format!("panicked: {text}")
}

/// Runs `f`, turning an error or a panic into a message.
pub(crate) fn run_caught<R>(f: impl FnOnce() -> Result<R, BoxError>) -> Result<R, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(e.to_string()),
        Err(payload) => Err(panic_message(payload)),
    }
}

/// A CPU callback on its way to an executioner.
pub(crate) struct CpuJob {
    pub(crate) f: CpuFn,
    pub(crate) info: CallInfo,
    /// Where to say it is done: the owning dispatcher's completion channel.
    pub(crate) done: Sender<CpuDone>,
    pub(crate) wake: std::sync::Arc<crate::signal::Signal>,
    pub(crate) epoch: std::time::Instant,
}

/// A finished CPU callback.
#[derive(Debug)]
pub(crate) struct CpuDone {
    pub(crate) stream: usize,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) result: Result<(), String>,
}

/// The executioner threads: run CPU callbacks, report back to the dispatcher.
#[derive(Debug)]
pub(crate) struct Executioners {
    jobs: Option<Sender<CpuJob>>,
    threads: Vec<JoinHandle<()>>,
}

impl Executioners {
    /// Starts `count` executioners. The caller caps `count` at what can run at once
    /// (G_1, and never more than the D·S tasks that hold a stream slot).
    pub(crate) fn start(count: usize) -> crate::Result<Self> {
        let (tx, rx) = crossbeam_channel::unbounded::<CpuJob>();
        let mut pool = Executioners { jobs: Some(tx), threads: Vec::with_capacity(count) };
        for i in 0..count {
            let rx: Receiver<CpuJob> = rx.clone();
            let name = format!("chariot-exec-{i}");
            let handle = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || executioner(rx))
                .map_err(|e| crate::Error::Thread { name, message: e.to_string() })?;
            pool.threads.push(handle);
        }
        Ok(pool)
    }

    pub(crate) fn sender(&self) -> Sender<CpuJob> {
        self.jobs.clone().expect("executioners run until the scheduler drops")
    }

    /// Closes the job queue and joins every executioner.
    pub(crate) fn stop(&mut self) {
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Executioners {
    fn drop(&mut self) {
        self.stop();
    }
}

fn executioner(jobs: Receiver<CpuJob>) {
    // Ends when every sender (scheduler and dispatchers) is gone.
    for job in jobs {
        let start_ns = job.epoch.elapsed().as_nanos() as u64;
        let info = job.info;
        let f = job.f;
        let result = run_caught(|| f(&info));
        let end_ns = job.epoch.elapsed().as_nanos() as u64;
        // The dispatcher outlives its jobs (it waits for them); a closed channel only
        // happens after a dispatcher panic, and then nobody waits for this result.
        let _ = job.done.send(CpuDone { stream: info.stream, start_ns, end_ns, result });
        job.wake.notify();
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn in_callback_marks_the_thread_until_dropped_even_by_a_panic() {
        assert_eq!(current(), None);
        {
            let _outer = InCallback::enter(1, TaskId(7));
            assert_eq!(current(), Some((1, TaskId(7))));
            {
                let _inner = InCallback::enter(2, TaskId(8));
                assert_eq!(current(), Some((2, TaskId(8))));
            }
            assert_eq!(current(), Some((1, TaskId(7))), "the outer mark comes back");
            let r = run_caught(|| -> Result<(), BoxError> {
                let _in = InCallback::enter(3, TaskId(9));
                panic!("boom")
            });
            assert_eq!(r, Err("panicked: boom".to_string()));
            assert_eq!(current(), Some((1, TaskId(7))), "unwinding restores the mark");
        }
        assert_eq!(current(), None);
        // Another thread has its own mark.
        let _in = InCallback::enter(1, TaskId(7));
        assert_eq!(std::thread::spawn(current).join().ok(), Some(None));
    }
}
