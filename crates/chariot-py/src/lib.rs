//! chariot for Python: the `gpu_chariot` extension module (PyO3; maturin builds the
//! wheel, for CPython's stable ABI from 3.8 on).
//!
//! The Python objects mirror the Rust API: a [`sched::PyScheduler`] from keyword
//! arguments (the builder's), pinned host buffers seen by NumPy through
//! `__array_interface__` (no copy), device and resident buffers, kernels of CUDA C
//! source with a Python CPU twin, tasks built by chained calls and submitted, and the
//! batch's report from `synchronize`.
//!
//! Buffers are bytes underneath (`u8` in the runtime) with their NumPy dtype kept here:
//! one Rust instantiation serves every dtype, and element ranges are checked here, in
//! elements, before they become byte ranges.
//!
//! The GIL is released wherever the runtime may wait (submit, synchronize, a buffer's
//! wait for its tasks, shutdown), since its threads take the GIL to run Python
//! callbacks and twins.

#![deny(missing_docs)]

mod args;
mod buffers;
mod calls;
mod graph;
mod kernel;
mod report;
mod sched;
mod task;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyDict;

create_exception!(
    gpu_chariot,
    ChariotError,
    PyException,
    "An error of the chariot runtime; its message is the runtime's."
);
create_exception!(
    gpu_chariot,
    TasksFailed,
    ChariotError,
    "Some tasks of the batch failed; `.failures` lists them (dicts) and `.report` is the batch's Report."
);

/// A runtime error as a Python exception: `TasksFailed` (with the failures and the
/// report attached) or `ChariotError`, with the runtime's message.
pub(crate) fn to_py(py: Python<'_>, e: chariot::Error) -> PyErr {
    match e {
        chariot::Error::TasksFailed { failures, report } => {
            let text = chariot::Error::TasksFailed { failures: failures.clone(), report: report.clone() }.to_string();
            let err = TasksFailed::new_err(text);
            let value = err.value(py);
            let r = report::PyReport { report: *report };
            let list: Vec<PyObject> = failures.iter().filter_map(|f| report::json_to_py(py, f).ok()).collect();
            // Attaching can only fail for want of memory; the message stands alone then.
            let _ = value.setattr("failures", list);
            if let Ok(obj) = Py::new(py, r) {
                let _ = value.setattr("report", obj);
            }
            err
        }
        other => ChariotError::new_err(other.to_string()),
    }
}

/// A NumPy dtype, as the bindings keep it: NumPy's `str` (`<f4`), its name and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dtype {
    pub(crate) typestr: String,
    pub(crate) name: String,
    pub(crate) size: usize,
}

/// C and Rust spellings of element types, as kernels' parameters and buffers name them,
/// and NumPy's names for them (NumPy reads `"float"` as float64, not as C does).
const ALIASES: &[(&str, &str)] = &[
    ("f32", "float32"),
    ("f64", "float64"),
    ("i8", "int8"),
    ("u8", "uint8"),
    ("i16", "int16"),
    ("u16", "uint16"),
    ("i32", "int32"),
    ("u32", "uint32"),
    ("i64", "int64"),
    ("u64", "uint64"),
    ("float", "float32"),
    ("double", "float64"),
    ("char", "int8"),
    ("unsigned char", "uint8"),
    ("short", "int16"),
    ("unsigned short", "uint16"),
    ("int", "int32"),
    ("unsigned", "uint32"),
    ("unsigned int", "uint32"),
    ("long long", "int64"),
    ("unsigned long long", "uint64"),
    ("size_t", "uint64"),
];

impl Dtype {
    /// `obj` (a dtype, a type such as `numpy.float32`, or a name) as a plain-data dtype.
    pub(crate) fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Dtype> {
        let py = obj.py();
        let numpy = py.import("numpy")?;
        let given = match obj.extract::<String>() {
            Ok(s) => {
                let s = s.trim();
                let name = ALIASES.iter().find(|(a, _)| *a == s).map_or(s, |(_, n)| n);
                name.into_pyobject(py)?.into_any()
            }
            Err(_) => obj.clone(),
        };
        let dt = numpy.getattr("dtype")?.call1((given,)).map_err(|_| {
            PyTypeError::new_err(format!(
                "dtype {}: not a NumPy dtype",
                obj.repr().map_or("?".into(), |r| r.to_string())
            ))
        })?;
        if dt.getattr("hasobject")?.extract::<bool>()? || dt.getattr("itemsize")?.extract::<usize>()? == 0 {
            return Err(PyTypeError::new_err(format!(
                "dtype {}: buffers hold plain data (numbers), not objects or empty items",
                dt.str()?
            )));
        }
        Ok(Dtype {
            typestr: dt.getattr("str")?.extract()?,
            name: dt.getattr("name")?.extract()?,
            size: dt.getattr("itemsize")?.extract()?,
        })
    }
}

/// A window on memory the runtime owns, which NumPy (`__array_interface__`) or CuPy
/// and PyTorch (`__cuda_array_interface__`) turn into an array without a copy. It keeps
/// `owner` alive, so that a host buffer lives as long as any array made of it.
#[pyclass(module = "gpu_chariot", frozen)]
pub(crate) struct View {
    ptr: usize,
    elems: usize,
    dtype: Dtype,
    readonly: bool,
    /// `Some(stream)` for device memory (the `__cuda_array_interface__`'s stream).
    cuda_stream: Option<usize>,
    #[allow(dead_code)] // held, never read: it keeps the memory alive
    owner: Option<PyObject>,
}

impl View {
    fn interface<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", (self.elems,))?;
        d.set_item("typestr", &self.dtype.typestr)?;
        d.set_item("data", (self.ptr, self.readonly))?;
        d.set_item("strides", py.None())?;
        d.set_item("version", 3)?;
        Ok(d)
    }
}

#[pymethods]
impl View {
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.cuda_stream.is_some() {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "device memory has no __array_interface__ (use __cuda_array_interface__)",
            ));
        }
        self.interface(py)
    }

    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        match self.cuda_stream {
            Some(stream) => {
                let d = self.interface(py)?;
                // No stream to wait on: the callback enqueues its work on the task's
                // stream (`GpuCall.stream`), after the task's earlier commands; a
                // consumer told of a stream would synchronize it, stalling the
                // dispatcher that runs the callback.
                let _ = stream;
                d.set_item("stream", py.None())?;
                Ok(d)
            }
            None => Err(pyo3::exceptions::PyAttributeError::new_err(
                "host memory has no __cuda_array_interface__ (use __array_interface__)",
            )),
        }
    }

    fn __repr__(&self) -> String {
        let place = if self.cuda_stream.is_some() { "device" } else { "host" };
        format!("<gpu_chariot view of {} {} on the {place}>", self.elems, self.dtype.name)
    }
}

/// A NumPy array over `bytes` bytes at `ptr` (a view: no copy), keeping `owner` alive.
pub(crate) fn numpy_view(
    py: Python<'_>,
    ptr: usize,
    bytes: usize,
    dtype: &Dtype,
    readonly: bool,
    owner: Option<PyObject>,
) -> PyResult<PyObject> {
    static ASARRAY: GILOnceCell<PyObject> = GILOnceCell::new();
    let view = View { ptr, elems: bytes / dtype.size, dtype: dtype.clone(), readonly, cuda_stream: None, owner };
    let asarray = ASARRAY.get_or_try_init(py, || py.import("numpy")?.getattr("asarray").map(Bound::unbind))?;
    asarray.call1(py, (Py::new(py, view)?,))
}

/// An object with `__cuda_array_interface__` over device memory at `ptr`, ordered on
/// `stream` (CuPy's `cupy.asarray` and PyTorch's `torch.as_tensor` take it, no copy).
pub(crate) fn cuda_view(py: Python<'_>, ptr: u64, bytes: usize, dtype: &Dtype, stream: usize) -> PyResult<PyObject> {
    let view = View {
        ptr: ptr as usize,
        elems: bytes / dtype.size,
        dtype: dtype.clone(),
        readonly: false,
        cuda_stream: Some(stream),
        owner: None,
    };
    Ok(Py::new(py, view)?.into_any())
}

/// A Python exception raised by a callback or twin, as the task's failure text.
pub(crate) fn failure_text(py: Python<'_>, what: &str, e: PyErr) -> String {
    let tb = e
        .traceback(py)
        .and_then(|t| t.format().ok())
        .map(|t| t.trim_end().lines().rev().find(|l| l.trim_start().starts_with("File ")).map(str::to_string))
        .unwrap_or(None);
    match tb {
        Some(at) => format!("{what} raised {e} ({})", at.trim()),
        None => format!("{what} raised {e}"),
    }
}

/// A value error naming the problem.
pub(crate) fn bad(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// chariot: out-of-order software pipelines for streaming applications over GPUs.
///
/// Build a Scheduler, allocate buffers, register kernels, then submit tasks (download,
/// launch, readback, callbacks) and synchronize.
#[pymodule]
fn gpu_chariot(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ChariotError", m.py().get_type::<ChariotError>())?;
    m.add("TasksFailed", m.py().get_type::<TasksFailed>())?;
    m.add_class::<sched::PyScheduler>()?;
    m.add_class::<buffers::PyHostBuffer>()?;
    m.add_class::<buffers::PyDeviceBuffer>()?;
    m.add_class::<buffers::PyResidentBuffer>()?;
    m.add_class::<buffers::ResidentRange>()?;
    m.add_class::<kernel::PyKernel>()?;
    m.add_class::<kernel::PyKernelHandle>()?;
    m.add_class::<task::PyTask>()?;
    m.add_class::<calls::PyCallInfo>()?;
    m.add_class::<calls::PyGpuCall>()?;
    m.add_class::<report::PyReport>()?;
    m.add_class::<graph::PyRecordedGraph>()?;
    m.add_class::<View>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
