//! Tasks built from Python: each call checks its command at once (raising what is
//! wrong, in elements and dtypes), keeps it here, and `submit` builds the runtime's
//! task from them without the GIL.

use crate::args::{arg_of, dim3, host_of, region_of};
use crate::buffers::{dev_of, Dev, PyDeviceBuffer, PyResidentBuffer, ResidentRange};
use crate::calls::{call_py, callable, run_gpu_callback, GpuBuf, PyCallInfo};
use crate::kernel::{PParam, PyKernelHandle};
use crate::sched::Core;
use crate::{bad, numpy_view, to_py, Dtype};
use chariot::callback::{CallInfo, GpuCall, Resource};
use chariot::kernel::Dim3;
use chariot::resident::ResidentBuffer;
use chariot::{Arg, HostBuffer, TaskId};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

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
    prefer: Option<usize>,
    submitted: bool,
}

impl PyTask {
    pub(crate) fn new(core: Arc<Core>, id: u64, granularity: u64) -> Self {
        let (cmds, after) = (Vec::new(), Vec::new());
        PyTask { core, id, granularity, cmds, after, refuse: false, prefer: None, submitted: false }
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

    /// Places the task on GPU `gpu` (0 .. gpu_count): it waits for that GPU, which
    /// another takes it from only when that GPU has more than S tasks waiting. A GPU
    /// the scheduler lacks raises ChariotError at submit.
    fn prefer_gpu(mut slf: PyRefMut<'_, Self>, gpu: usize) -> PyResult<PyRefMut<'_, Self>> {
        slf.open()?;
        slf.prefer = Some(gpu);
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
        let (core, id, granularity, cancel) = (slf.core.clone(), slf.id, slf.granularity, slf.cancel());
        let placing = Placing { refuse: slf.refuse, prefer: slf.prefer };
        drop(slf);
        let sched = core.sched()?;
        py.allow_threads(|| build(sched, id, granularity, cmds, after, placing, cancel))
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

/// How a task meets others: `refuse_conflicts`, and the GPU `prefer_gpu` placed it on.
#[derive(Clone, Copy)]
struct Placing {
    refuse: bool,
    prefer: Option<usize>,
}

fn build(
    sched: &chariot::Scheduler,
    id: u64,
    granularity: u64,
    cmds: Vec<Cmd>,
    after: Vec<u64>,
    placing: Placing,
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
    if placing.refuse {
        t = t.refuse_conflicts();
    }
    if let Some(gpu) = placing.prefer {
        t = t.prefer_gpu(gpu);
    }
    t.submit()
}
