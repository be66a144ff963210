//! What runs Python from the runtime's threads: the mark of a thread in a callback,
//! what a callback gets (`CallInfo`, `GpuCall`), and the running of Python callables
//! and GPU callbacks with the GIL taken, their exceptions made the task's failure.

use crate::{cuda_view, failure_text, numpy_view, Dtype};
use chariot::callback::{CallInfo, GpuCall};
use chariot::resident::ResidentBuffer;
use chariot::{BoxError, DeviceBuffer};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    static IN_CALLBACK: Cell<u32> = const { Cell::new(0) };
}

/// Marks this thread as running a Python callback or twin while it lives, so that a
/// `synchronize` called from one asks the runtime on this thread (which refuses it).
pub(crate) struct CallbackMark;

impl CallbackMark {
    pub(crate) fn enter() -> CallbackMark {
        IN_CALLBACK.with(|c| c.set(c.get() + 1));
        CallbackMark
    }
}

impl Drop for CallbackMark {
    fn drop(&mut self) {
        IN_CALLBACK.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// Whether this thread runs a Python callback or twin of chariot's.
pub(crate) fn in_callback() -> bool {
    IN_CALLBACK.with(|c| c.get() > 0)
}

/// Where a callback runs: its task, and the GPU and stream slot the task is bound to.
#[pyclass(name = "CallInfo", module = "gpu_chariot", frozen, get_all)]
pub struct PyCallInfo {
    /// The task's id.
    task: u64,
    /// The GPU (index in the scheduler's list).
    gpu: usize,
    /// The stream slot on that GPU.
    stream: usize,
}

impl From<&CallInfo> for PyCallInfo {
    fn from(i: &CallInfo) -> Self {
        PyCallInfo { task: i.task.0, gpu: i.gpu, stream: i.stream }
    }
}

#[pymethods]
impl PyCallInfo {
    fn __repr__(&self) -> String {
        format!("CallInfo(task={}, gpu={}, stream={})", self.task, self.gpu, self.stream)
    }
}

/// What a GPU callback gets: its place, the task's CUDA stream (an int, `None` on the
/// sim) and the buffers it named, each as an array of the task's copy: objects with
/// `__cuda_array_interface__` on CUDA (`cupy.asarray`, `torch.as_tensor` take them
/// without a copy), NumPy views on the sim. Valid only while the callback runs.
#[pyclass(name = "GpuCall", module = "gpu_chariot", frozen, get_all)]
pub struct PyGpuCall {
    /// Task, GPU and stream slot.
    info: Py<PyCallInfo>,
    /// The task's `CUstream` as an int (`None` on the sim backend).
    stream: Option<usize>,
    /// The buffers named, in order.
    arrays: Vec<PyObject>,
}

#[pymethods]
impl PyGpuCall {
    /// The CUDA stream protocol: `(0, stream)`, for libraries that take any object
    /// with `__cuda_stream__` as a stream (CUDA Python's `cuda.core`, recent CuPy).
    fn __cuda_stream__(&self) -> PyResult<(u32, usize)> {
        match self.stream {
            Some(s) => Ok((0, s)),
            None => Err(pyo3::exceptions::PyAttributeError::new_err("the simulated backend has no CUDA stream")),
        }
    }

    fn __repr__(&self) -> String {
        let i = self.info.get();
        format!("GpuCall(task={}, gpu={}, stream={:?}, arrays={})", i.task, i.gpu, self.stream, self.arrays.len())
    }
}

/// A buffer a GPU callback names.
pub(crate) enum GpuBuf {
    Dev(DeviceBuffer<u8>, usize, Dtype),
    /// The buffer, the byte range named, its dtype.
    Res(ResidentBuffer<u8>, Range<usize>, Dtype),
}

/// A Python callable run by a runtime thread: with the GIL, marked as a callback,
/// its exception the task's failure.
pub(crate) fn call_py(
    cancel: &AtomicBool,
    what: &str,
    f: impl FnOnce(Python<'_>) -> PyResult<()>,
) -> Result<(), BoxError> {
    if cancel.load(Ordering::SeqCst) {
        return Err(format!("{what} not run: interrupted (KeyboardInterrupt)").into());
    }
    let _mark = CallbackMark::enter();
    Python::with_gil(|py| f(py).map_err(|e| failure_text(py, what, e).into()))
}

pub(crate) fn callable(f: &Bound<'_, PyAny>, what: &str) -> PyResult<PyObject> {
    if !f.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected a callable, got {}",
            f.get_type().name().map_or("?".into(), |n| n.to_string())
        )));
    }
    Ok(f.clone().unbind())
}

pub(crate) fn run_gpu_callback(
    cancel: &AtomicBool,
    f: &PyObject,
    bufs: &[GpuBuf],
    call: &mut GpuCall<'_>,
) -> Result<(), BoxError> {
    let info = call.info();
    let what = "the GPU callback";
    if let Some(stream) = call.cuda_stream() {
        let stream = stream.as_raw() as usize;
        let mut ptrs = Vec::with_capacity(bufs.len());
        for (i, b) in bufs.iter().enumerate() {
            let p = match b {
                GpuBuf::Dev(d, _, _) => call.device_ptr(d),
                GpuBuf::Res(r, bytes, _) => call.resident_ptr(r, bytes.start),
            };
            ptrs.push(p.ok_or_else(|| format!("{what}: buffers[{i}] has no copy on GPU {}", info.gpu))?);
        }
        return call_py(cancel, what, |py| {
            let mut arrays = Vec::with_capacity(bufs.len());
            for (b, p) in bufs.iter().zip(&ptrs) {
                arrays.push(match b {
                    GpuBuf::Dev(_, len, dt) => cuda_view(py, *p, *len, dt, stream)?,
                    GpuBuf::Res(_, bytes, dt) => cuda_view(py, *p, bytes.len(), dt, stream)?,
                });
            }
            let gc = PyGpuCall { info: Py::new(py, PyCallInfo::from(&info))?, stream: Some(stream), arrays };
            f.call1(py, (gc,)).map(drop)
        });
    }
    // The sim: each buffer's copy is locked while the callback runs; one named twice is
    // locked once.
    let mut bases: Vec<(u64, bool, usize)> = Vec::new();
    with_sim(call, bufs, 0, &mut bases, &mut |bases| {
        call_py(cancel, what, |py| {
            let mut arrays = Vec::with_capacity(bufs.len());
            for b in bufs {
                let (id, res, len, start, dt) = match b {
                    GpuBuf::Dev(d, len, dt) => (d.id(), false, *len, 0, dt),
                    GpuBuf::Res(r, bytes, dt) => (r.id(), true, bytes.len(), bytes.start, dt),
                };
                let base = bases.iter().find(|(i, r, _)| *i == id && *r == res).map_or(0, |b| b.2);
                arrays.push(numpy_view(py, base + start, len, dt, false, None)?);
            }
            let gc = PyGpuCall { info: Py::new(py, PyCallInfo::from(&info))?, stream: None, arrays };
            f.call1(py, (gc,)).map(drop)
        })
    })
}

type SimBases = Vec<(u64, bool, usize)>;

/// Locks the sim copies of `bufs[i..]` one by one (recursing, as a resident copy is
/// lent to a closure), then runs `body` with every base address.
fn with_sim(
    call: &GpuCall<'_>,
    bufs: &[GpuBuf],
    i: usize,
    bases: &mut SimBases,
    body: &mut dyn FnMut(&SimBases) -> Result<(), BoxError>,
) -> Result<(), BoxError> {
    let Some(b) = bufs.get(i) else { return body(bases) };
    match b {
        GpuBuf::Dev(d, _, _) => {
            if bases.iter().any(|(id, r, _)| *id == d.id() && !*r) {
                return with_sim(call, bufs, i + 1, bases, body);
            }
            let mut guard =
                call.sim_buffer(d).ok_or_else(|| format!("buffers[{i}] has no copy on this simulated GPU"))?;
            bases.push((d.id(), false, guard.as_mut_ptr() as usize));
            let r = with_sim(call, bufs, i + 1, bases, body);
            drop(guard);
            r
        }
        GpuBuf::Res(r, _, _) => {
            if bases.iter().any(|(id, res, _)| *id == r.id() && *res) {
                return with_sim(call, bufs, i + 1, bases, body);
            }
            call.sim_resident(r, 0, |all: &mut [u8]| {
                bases.push((r.id(), true, all.as_mut_ptr() as usize));
                with_sim(call, bufs, i + 1, bases, body)
            })
            .ok_or_else(|| format!("buffers[{i}] (resident buffer {}) has no copy on this simulated GPU", r.id()))?
        }
    }
}
