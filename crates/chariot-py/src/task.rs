//! Tasks built from Python: each call checks its command at once (raising what is
//! wrong, in elements and dtypes), keeps it here, and `submit` builds the runtime's
//! task from them without the GIL.

use crate::buffers::{dev_of, Dev, PyDeviceBuffer, PyHostBuffer, PyResidentBuffer, ResidentRange};
use crate::kernel::{PParam, PyKernelHandle};
use crate::sched::Core;
use crate::{bad, cuda_view, failure_text, numpy_view, to_py, Dtype};
use chariot::callback::{CallInfo, GpuCall, Resource};
use chariot::kernel::Dim3;
use chariot::resident::ResidentBuffer;
use chariot::{Arg, BoxError, DeviceBuffer, HostBuffer, Param, TaskId};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PySlice;
use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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

/// A buffer a GPU callback names.
enum GpuBuf {
    Dev(DeviceBuffer<u8>, usize, Dtype),
    /// The buffer, the byte range named, its dtype.
    Res(ResidentBuffer<u8>, Range<usize>, Dtype),
}

enum Cmd {
    Download { dst: Dev, dst_off: usize, src: Arc<HostBuffer<u8>>, bytes: Range<usize> },
    Readback { dst: Arc<HostBuffer<u8>>, bytes: Range<usize>, src: Dev, src_off: usize },
    Launch { kernel: chariot::kernel::KernelHandle, grid: Dim3, block: Dim3, shared: u32, args: Vec<Arg> },
    Cpu(PyObject),
    CpuOn { host: Arc<HostBuffer<u8>>, bytes: Range<usize>, dtype: Dtype, write: bool, f: PyObject },
    Gpu { f: PyObject, bufs: Vec<GpuBuf> },
    Declare { buf: ResidentBuffer<u8>, bytes: Range<usize>, read: bool, write: bool },
}

/// A task being built: add commands in the order they must run, then `submit()`.
/// Every method returns the task, so calls chain.
#[pyclass(name = "Task", module = "gpu_chariot")]
pub struct PyTask {
    core: Arc<Core>,
    id: u64,
    granularity: u64,
    cmds: Vec<Cmd>,
    after: Vec<u64>,
    refuse: bool,
    submitted: bool,
}

impl PyTask {
    pub(crate) fn new(core: Arc<Core>, id: u64, granularity: u64) -> Self {
        PyTask { core, id, granularity, cmds: Vec::new(), after: Vec::new(), refuse: false, submitted: false }
    }

    fn open(&self) -> PyResult<()> {
        if self.submitted {
            return Err(bad(format!("task {} is already submitted: build a new one", self.id)));
        }
        Ok(())
    }

    fn cancel(&self) -> Arc<AtomicBool> {
        self.core.cancel.clone()
    }
}

/// `region` (None, a slice, a range or a `(start, stop)` pair) as elements of a buffer
/// of `len`.
fn region_of(region: Option<&Bound<'_, PyAny>>, what: &str, len: usize) -> PyResult<Range<usize>> {
    let Some(r) = region else { return Ok(0..len) };
    if r.is_none() {
        return Ok(0..len);
    }
    let (start, stop): (isize, Option<isize>) = if let Ok(s) = r.downcast::<PySlice>() {
        if !s.getattr("step")?.is_none() && s.getattr("step")?.extract::<isize>()? != 1 {
            return Err(bad(format!("region of {what}: a slice with a step; regions are contiguous")));
        }
        let start = if s.getattr("start")?.is_none() { 0 } else { s.getattr("start")?.extract()? };
        (start, s.getattr("stop")?.extract()?)
    } else if r.is_instance(&r.py().import("builtins")?.getattr("range")?)? {
        let rg = r;
        if rg.getattr("step")?.extract::<isize>()? != 1 {
            return Err(bad(format!("region of {what}: a range with a step; regions are contiguous")));
        }
        (rg.getattr("start")?.extract()?, Some(rg.getattr("stop")?.extract()?))
    } else if let Ok((a, b)) = r.extract::<(isize, isize)>() {
        (a, Some(b))
    } else {
        return Err(PyTypeError::new_err(format!(
            "region of {what}: expected None, a slice, a range or a (start, stop) pair, got {}",
            r.get_type().name()?
        )));
    };
    crate::buffers::elements(what, len, start, stop)
}

fn host_of(obj: &Bound<'_, PyAny>, role: &str) -> PyResult<Py<PyHostBuffer>> {
    obj.downcast::<PyHostBuffer>().map(|b| b.clone().unbind()).map_err(|_| {
        PyTypeError::new_err(format!(
            "{role}: expected a HostBuffer (Scheduler.alloc_host), got {}",
            obj.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    })
}

fn dim3(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Dim3> {
    if let Ok(x) = obj.extract::<u32>() {
        return Ok(Dim3 { x, y: 1, z: 1 });
    }
    if let Ok(v) = obj.extract::<Vec<u32>>() {
        match v[..] {
            [x] => return Ok(Dim3 { x, y: 1, z: 1 }),
            [x, y] => return Ok(Dim3 { x, y, z: 1 }),
            [x, y, z] => return Ok(Dim3 { x, y, z }),
            _ => {}
        }
    }
    Err(PyTypeError::new_err(format!(
        "{what}: expected an int or a tuple of 1 to 3 ints (each 0..2^32), got {}",
        obj.repr().map_or("?".into(), |r| r.to_string())
    )))
}

/// Launch argument `i` of `kernel` as the runtime's, checked against its parameter.
fn arg_of(kernel: &str, i: usize, p: &PParam, v: &Bound<'_, PyAny>) -> PyResult<Arg> {
    let at = || format!("kernel {kernel}, argument {i} ({})", p.describe());
    let type_name = v.get_type().name().map_or("?".to_string(), |n| n.to_string());
    match p {
        PParam::Buffer(want) => {
            let check = |got: &Dtype| match want {
                Some(w) if w != got => {
                    Err(PyTypeError::new_err(format!("{}: the buffer holds {}, not {}", at(), got.name, w.name)))
                }
                _ => Ok(()),
            };
            if let Ok(d) = v.downcast::<PyDeviceBuffer>() {
                let d = d.get();
                check(&d.dtype)?;
                return Ok(Arg::buffer(&d.buf));
            }
            if let Ok(r) = v.downcast::<PyResidentBuffer>() {
                let r = r.get();
                check(&r.dtype)?;
                return Ok(Arg::reads_writes(&r.buf, ..));
            }
            if let Ok(r) = v.downcast::<ResidentRange>() {
                check(&r.get().buf.get().dtype)?;
                return Ok(r.get().arg());
            }
            if crate::buffers::on_gpu(v) {
                return Err(PyTypeError::new_err(format!(
                    "{}: a foreign GPU array ({type_name}) cannot be a launch argument yet: the runtime has no \
                     external device memory; use a DeviceBuffer or ResidentBuffer, and reach CuPy or PyTorch \
                     through a GPU callback",
                    at()
                )));
            }
            Err(PyTypeError::new_err(format!(
                "{}: expected a DeviceBuffer, ResidentBuffer or ResidentBuffer range, got {type_name}",
                at()
            )))
        }
        PParam::Scalar(s) => {
            let is_num = v.extract::<f64>().is_ok() && !v.is_instance_of::<pyo3::types::PyBool>();
            if !is_num {
                return Err(PyTypeError::new_err(format!("{}: expected a number, got {type_name}", at())));
            }
            let float = v.is_instance_of::<pyo3::types::PyFloat>();
            let int_err = |e: PyErr| {
                if float {
                    PyTypeError::new_err(format!("{}: expected an int, got a float", at()))
                } else {
                    bad(format!("{}: {} out of range ({e})", at(), v.repr().map_or("?".into(), |r| r.to_string())))
                }
            };
            Ok(match s {
                Param::I32 => Arg::i32(v.extract().map_err(int_err)?),
                Param::U32 => Arg::u32(v.extract().map_err(int_err)?),
                Param::I64 => Arg::i64(v.extract().map_err(int_err)?),
                Param::U64 => Arg::u64(v.extract().map_err(int_err)?),
                Param::F32 => Arg::f32(v.extract::<f64>()? as f32),
                Param::F64 => Arg::f64(v.extract()?),
                other => return Err(bad(format!("{}: parameter kind {other:?} is not supported here", at()))),
            })
        }
    }
}

/// A Python callable run by a runtime thread: with the GIL, marked as a callback,
/// its exception the task's failure.
fn call_py(cancel: &AtomicBool, what: &str, f: impl FnOnce(Python<'_>) -> PyResult<()>) -> Result<(), BoxError> {
    if cancel.load(Ordering::SeqCst) {
        return Err(format!("{what} not run: interrupted (KeyboardInterrupt)").into());
    }
    let _mark = CallbackMark::enter();
    Python::with_gil(|py| f(py).map_err(|e| failure_text(py, what, e).into()))
}

fn callable(f: &Bound<'_, PyAny>, what: &str) -> PyResult<PyObject> {
    if !f.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected a callable, got {}",
            f.get_type().name().map_or("?".into(), |n| n.to_string())
        )));
    }
    Ok(f.clone().unbind())
}

#[pymethods]
impl PyTask {
    /// The task's id.
    #[getter]
    fn id(&self) -> u64 {
        self.id
    }

    /// Downloads elements `region` of host buffer `src` (None: all of it) into `dst`
    /// (a DeviceBuffer or ResidentBuffer) from element `dst_offset` on.
    #[pyo3(signature = (dst, dst_offset, src, region = None))]
    fn download<'py>(
        mut slf: PyRefMut<'py, Self>,
        dst: &Bound<'py, PyAny>,
        dst_offset: usize,
        src: &Bound<'py, PyAny>,
        region: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        slf.open()?;
        let (dev, dlen, ddt, dname) = dev_of(dst, "download's dst")?;
        let host = host_of(src, "download's src")?;
        let h = host.get();
        let r = region_of(region, &format!("host buffer {}", h.buf.id()), h.len)?;
        copy_checks("download", &h.dtype, &ddt, &dname, dlen, dst_offset, r.len(), h.buf.id())?;
        let bytes = h.bytes(&r);
        slf.cmds.push(Cmd::Download { dst: dev, dst_off: dst_offset * ddt.size, src: h.buf.clone(), bytes });
        Ok(slf)
    }

    /// Reads back into elements `region` of host buffer `dst` (None: all of it) from
    /// `src` (a DeviceBuffer or ResidentBuffer) at element `src_offset`.
    #[pyo3(signature = (dst, region, src, src_offset = 0))]
    fn readback<'py>(
        mut slf: PyRefMut<'py, Self>,
        dst: &Bound<'py, PyAny>,
        region: Option<&Bound<'py, PyAny>>,
        src: &Bound<'py, PyAny>,
        src_offset: usize,
    ) -> PyResult<PyRefMut<'py, Self>> {
        slf.open()?;
        let host = host_of(dst, "readback's dst")?;
        let h = host.get();
        let (dev, dlen, ddt, dname) = dev_of(src, "readback's src")?;
        let r = region_of(region, &format!("host buffer {}", h.buf.id()), h.len)?;
        copy_checks("readback", &h.dtype, &ddt, &dname, dlen, src_offset, r.len(), h.buf.id())?;
        let bytes = h.bytes(&r);
        slf.cmds.push(Cmd::Readback { dst: h.buf.clone(), bytes, src: dev, src_off: src_offset * ddt.size });
        Ok(slf)
    }

    /// Launches `kernel` (a KernelHandle) on `grid` blocks of `block` threads (ints or
    /// tuples of up to 3), with `args` matching its parameters, and `shared_bytes` of
    /// dynamic shared memory.
    #[pyo3(signature = (kernel, grid, block, args, shared_bytes = 0))]
    fn launch<'py>(
        mut slf: PyRefMut<'py, Self>,
        kernel: &Bound<'py, PyAny>,
        grid: &Bound<'py, PyAny>,
        block: &Bound<'py, PyAny>,
        args: &Bound<'py, PyAny>,
        shared_bytes: u32,
    ) -> PyResult<PyRefMut<'py, Self>> {
        slf.open()?;
        let k = kernel.downcast::<PyKernelHandle>().map_err(|_| {
            PyTypeError::new_err(format!(
                "launch: expected a KernelHandle (Scheduler.register_kernel), got {}",
                kernel.get_type().name().map_or("?".into(), |n| n.to_string())
            ))
        })?;
        let k = k.get();
        let args: Vec<Bound<'py, PyAny>> = args.try_iter()?.collect::<PyResult<_>>()?;
        if args.len() != k.params.len() {
            return Err(PyTypeError::new_err(format!(
                "kernel {} takes {} arguments ({}), {} given",
                k.name,
                k.params.len(),
                k.params.iter().map(PParam::describe).collect::<Vec<_>>().join(", "),
                args.len()
            )));
        }
        let args = k
            .params
            .iter()
            .zip(&args)
            .enumerate()
            .map(|(i, (p, v))| arg_of(&k.name, i, p, v))
            .collect::<PyResult<Vec<_>>>()?;
        let (grid, block) = (dim3(grid, "launch's grid")?, dim3(block, "launch's block")?);
        slf.cmds.push(Cmd::Launch { kernel: k.handle.clone(), grid, block, shared: shared_bytes, args });
        Ok(slf)
    }

    /// Adds a CPU callback: `f(info)` runs on an executioner thread (info: CallInfo).
    /// An exception it raises fails the task, naming it.
    fn callback<'py>(mut slf: PyRefMut<'py, Self>, f: &Bound<'py, PyAny>) -> PyResult<PyRefMut<'py, Self>> {
        slf.open()?;
        let f = callable(f, "callback")?;
        slf.cmds.push(Cmd::Cpu(f));
        Ok(slf)
    }

    /// Adds a CPU callback that reads elements `region` of `host`: `f(view, info)`,
    /// `view` a read-only NumPy view of the region, claimed for the task.
    #[pyo3(signature = (host, region, f))]
    fn callback_reading<'py>(
        slf: PyRefMut<'py, Self>,
        host: &Bound<'py, PyAny>,
        region: Option<&Bound<'py, PyAny>>,
        f: &Bound<'py, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        Self::callback_on(slf, host, region, f, false)
    }

    /// Adds a CPU callback that writes elements `region` of `host`: `f(view, info)`,
    /// `view` a writable NumPy view of the region, claimed for the task.
    #[pyo3(signature = (host, region, f))]
    fn callback_writing<'py>(
        slf: PyRefMut<'py, Self>,
        host: &Bound<'py, PyAny>,
        region: Option<&Bound<'py, PyAny>>,
        f: &Bound<'py, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        Self::callback_on(slf, host, region, f, true)
    }

    /// Adds a GPU callback: `f(call)` (call: GpuCall) runs on the dispatcher's thread
    /// as kernel-stage work, with the task's CUDA stream and `buffers` (DeviceBuffers,
    /// ResidentBuffers or their ranges) as arrays of the task's copies. It must only
    /// enqueue work on the stream, never wait for it. Resident buffers named are
    /// declared for the task (whole buffers as read and written).
    #[pyo3(signature = (f, buffers = None))]
    fn gpu_callback<'py>(
        mut slf: PyRefMut<'py, Self>,
        f: &Bound<'py, PyAny>,
        buffers: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        slf.open()?;
        let f = callable(f, "gpu_callback")?;
        let mut bufs = Vec::new();
        if let Some(list) = buffers {
            for (i, b) in list.try_iter()?.enumerate() {
                let b = b?;
                if let Ok(d) = b.downcast::<PyDeviceBuffer>() {
                    let d = d.get();
                    bufs.push(GpuBuf::Dev(d.buf.clone(), d.len * d.dtype.size, d.dtype.clone()));
                } else if let Ok(r) = b.downcast::<PyResidentBuffer>() {
                    let r = r.get();
                    let bytes = 0..r.len * r.dtype.size;
                    slf.cmds.push(Cmd::Declare { buf: r.buf.clone(), bytes: bytes.clone(), read: true, write: true });
                    bufs.push(GpuBuf::Res(r.buf.clone(), bytes, r.dtype.clone()));
                } else if let Ok(r) = b.downcast::<ResidentRange>() {
                    let r = r.get();
                    let rb = r.buf.get();
                    let bytes = r.range.start * rb.dtype.size..r.range.end * rb.dtype.size;
                    slf.cmds.push(Cmd::Declare {
                        buf: rb.buf.clone(),
                        bytes: bytes.clone(),
                        read: r.read,
                        write: r.write,
                    });
                    bufs.push(GpuBuf::Res(rb.buf.clone(), bytes, rb.dtype.clone()));
                } else {
                    return Err(PyTypeError::new_err(format!(
                        "gpu_callback's buffers[{i}]: expected a DeviceBuffer, ResidentBuffer or ResidentBuffer range, got {}",
                        b.get_type().name()?
                    )));
                }
            }
        }
        slf.cmds.push(Cmd::Gpu { f, bufs });
        Ok(slf)
    }

    /// Runs this task after each of the tasks `ids` ends (ids submitted in this batch).
    #[pyo3(signature = (*ids))]
    fn after<'py>(mut slf: PyRefMut<'py, Self>, ids: Vec<u64>) -> PyResult<PyRefMut<'py, Self>> {
        slf.open()?;
        slf.after.extend(ids);
        Ok(slf)
    }

    /// Runs this task after every task in `ids` (an iterable of ids).
    fn after_all<'py>(mut slf: PyRefMut<'py, Self>, ids: Vec<u64>) -> PyResult<PyRefMut<'py, Self>> {
        slf.open()?;
        slf.after.extend(ids);
        Ok(slf)
    }

    /// Refuses the task at submit where a host region conflicts with an unended task's,
    /// instead of running it after that task.
    fn refuse_conflicts(mut slf: PyRefMut<'_, Self>) -> PyResult<PyRefMut<'_, Self>> {
        slf.open()?;
        slf.refuse = true;
        Ok(slf)
    }

    /// Seals the task and hands it to the runtime; returns its id. Raises ChariotError
    /// with the runtime's message (an invalid command, an empty task, a duplicate id,
    /// an unknown dependency, a host conflict refused).
    fn submit(mut slf: PyRefMut<'_, Self>) -> PyResult<u64> {
        slf.open()?;
        slf.submitted = true;
        let py = slf.py();
        let cmds = std::mem::take(&mut slf.cmds);
        let after = std::mem::take(&mut slf.after);
        let (core, id, granularity, refuse, cancel) =
            (slf.core.clone(), slf.id, slf.granularity, slf.refuse, slf.cancel());
        drop(slf);
        let sched = core.sched()?;
        py.allow_threads(|| build(sched, id, granularity, cmds, after, refuse, cancel))
            .map(|t| t.0)
            .map_err(|e| to_py(py, e))
    }

    fn __repr__(&self) -> String {
        format!("Task(id={}, commands={})", self.id, self.cmds.len())
    }
}

impl PyTask {
    fn callback_on<'py>(
        mut slf: PyRefMut<'py, Self>,
        host: &Bound<'py, PyAny>,
        region: Option<&Bound<'py, PyAny>>,
        f: &Bound<'py, PyAny>,
        write: bool,
    ) -> PyResult<PyRefMut<'py, Self>> {
        slf.open()?;
        let what = if write { "callback_writing" } else { "callback_reading" };
        let host = host_of(host, what)?;
        let h = host.get();
        let r = region_of(region, &format!("host buffer {}", h.buf.id()), h.len)?;
        let f = callable(f, what)?;
        let bytes = h.bytes(&r);
        slf.cmds.push(Cmd::CpuOn { host: h.buf.clone(), bytes, dtype: h.dtype.clone(), write, f });
        Ok(slf)
    }
}

#[allow(clippy::too_many_arguments)]
fn copy_checks(
    what: &str,
    host_dt: &Dtype,
    dev_dt: &Dtype,
    dev_name: &str,
    dev_len: usize,
    offset: usize,
    n: usize,
    host_id: u64,
) -> PyResult<()> {
    if host_dt != dev_dt {
        return Err(PyTypeError::new_err(format!(
            "{what} between host buffer {host_id} ({}) and {dev_name} ({}): the dtypes differ",
            host_dt.name, dev_dt.name
        )));
    }
    if n == 0 {
        return Err(bad(format!("{what} of no elements (an empty region of host buffer {host_id})")));
    }
    if offset.checked_add(n).is_none_or(|end| end > dev_len) {
        return Err(bad(format!(
            "{what} of {n} elements at element {offset} of {dev_name}: it holds {dev_len} elements (buffer too small)"
        )));
    }
    Ok(())
}

fn build(
    sched: &chariot::Scheduler,
    id: u64,
    granularity: u64,
    cmds: Vec<Cmd>,
    after: Vec<u64>,
    refuse: bool,
    cancel: Arc<AtomicBool>,
) -> chariot::Result<TaskId> {
    let mut t = sched.task(id, granularity);
    for c in cmds {
        t = match c {
            Cmd::Download { dst: Dev::Device(d), dst_off, src, bytes } => t.download(&d, dst_off, &src, bytes),
            Cmd::Download { dst: Dev::Resident(d), dst_off, src, bytes } => t.download(&d, dst_off, &src, bytes),
            Cmd::Readback { dst, bytes, src: Dev::Device(s), src_off } => t.readback(&dst, bytes, &s, src_off),
            Cmd::Readback { dst, bytes, src: Dev::Resident(s), src_off } => t.readback(&dst, bytes, &s, src_off),
            Cmd::Launch { kernel, grid, block, shared, args } => t.launch(&kernel, grid, block, shared, &args),
            Cmd::Cpu(f) => {
                let cancel = cancel.clone();
                t.callback(Resource::Cpu, move |info: &CallInfo| {
                    call_py(&cancel, "the callback", |py| f.call1(py, (PyCallInfo::from(info),)).map(drop))
                })
            }
            Cmd::CpuOn { host, bytes, dtype, write, f } => {
                let cancel = cancel.clone();
                let run = move |ptr: usize, len: usize, ro: bool, info: &CallInfo| {
                    call_py(&cancel, "the callback", |py| {
                        // The region is claimed for the task while the callback runs.
                        let view = numpy_view(py, ptr, len, &dtype, ro, None)?;
                        f.call1(py, (view, PyCallInfo::from(info))).map(drop)
                    })
                };
                if write {
                    t.callback_writing(&host, bytes, move |s: &mut [u8], info| {
                        run(s.as_mut_ptr() as usize, s.len(), false, info)
                    })
                } else {
                    t.callback_reading(&host, bytes, move |s: &[u8], info| {
                        run(s.as_ptr() as usize, s.len(), true, info)
                    })
                }
            }
            Cmd::Gpu { f, bufs } => {
                let cancel = cancel.clone();
                t.gpu_callback(move |call: &mut GpuCall<'_>| run_gpu_callback(&cancel, &f, &bufs, call))
            }
            Cmd::Declare { buf, bytes, read, write } => match (read, write) {
                (true, false) => t.reads(&buf, bytes),
                (false, true) => t.writes(&buf, bytes),
                _ => t.reads_writes(&buf, bytes),
            },
        };
    }
    t = t.after_all(after.into_iter().map(TaskId));
    if refuse {
        t = t.refuse_conflicts();
    }
    t.submit()
}

fn run_gpu_callback(
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
