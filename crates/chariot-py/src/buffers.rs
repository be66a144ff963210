//! Host, device and resident buffers as Python objects. Each is a byte buffer of the
//! runtime with its dtype and length in elements kept here.

use crate::sched::Core;
use crate::{bad, numpy_view, to_py, Dtype};
use chariot::resident::ResidentBuffer;
use chariot::{DeviceBuffer, HostBuffer};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use std::ops::Range;
use std::sync::Arc;

/// Resolves Python's `start`/`stop` (elements; `None` for the end, negatives counted from
/// the end as in slicing) against `len`, or says which buffer and range do not fit.
pub(crate) fn elements(what: &str, len: usize, start: isize, stop: Option<isize>) -> PyResult<Range<usize>> {
    let abs = |i: isize| if i < 0 { len as isize + i } else { i };
    let (s, e) = (abs(start), stop.map_or(len as isize, abs));
    if s < 0 || e < s || e as usize > len {
        return Err(bad(format!(
            "range {start}..{} of {what} of {len} elements: it must lie in 0..{len} and not run backwards",
            stop.map_or("end".to_string(), |v| v.to_string())
        )));
    }
    Ok(s as usize..e as usize)
}

/// A pinned host buffer: the user's side of every copy. `numpy.asarray(buf)` (or
/// `buf.numpy()`) is a view of its memory, made once no in-flight task writes it.
#[pyclass(name = "HostBuffer", module = "gpu_chariot", frozen)]
pub struct PyHostBuffer {
    pub(crate) buf: Arc<HostBuffer<u8>>,
    /// Its memory's address, taken under a write guard when it was allocated: the
    /// pinned allocation never moves.
    ptr: usize,
    pub(crate) len: usize,
    pub(crate) dtype: Dtype,
}

impl PyHostBuffer {
    pub(crate) fn alloc(py: Python<'_>, core: &Core, len: usize, dtype: Dtype) -> PyResult<Self> {
        nonempty("host buffer", len)?;
        let bytes = len
            .checked_mul(dtype.size)
            .ok_or_else(|| bad(format!("host buffer of {len} elements of {}: too large", dtype.name)))?;
        let sched = core.sched()?;
        let mut buf = py.allow_threads(|| sched.alloc_host::<u8>(bytes)).map_err(|e| to_py(py, e))?;
        let ptr = buf.write().as_mut_ptr() as usize;
        Ok(PyHostBuffer { buf: Arc::new(buf), ptr, len, dtype })
    }

    pub(crate) fn bytes(&self, r: &Range<usize>) -> Range<usize> {
        r.start * self.dtype.size..r.end * self.dtype.size
    }

    fn view(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        let py = slf.py();
        let me = slf.get();
        let buf = me.buf.clone();
        // Wait (without the GIL: the tasks' callbacks may need it) until no in-flight
        // task writes the buffer; the guard is let go at once, so later tasks may claim
        // it: what the array sees then is the user's business, as with any async copy.
        py.allow_threads(|| buf.read_range(..).map(drop)).map_err(|e| to_py(py, e))?;
        numpy_view(py, me.ptr, me.len * me.dtype.size, &me.dtype, false, Some(slf.clone().into_any().unbind()))
    }
}

#[pymethods]
impl PyHostBuffer {
    /// Number of elements.
    fn __len__(&self) -> usize {
        self.len
    }

    /// The elements' NumPy dtype.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?.getattr("dtype")?.call1((&self.dtype.typestr,))
    }

    /// Whether the memory is page-locked (always on the CUDA backend).
    #[getter]
    fn pinned(&self) -> bool {
        self.buf.is_pinned()
    }

    /// The buffer's id, as the runtime's messages name it.
    #[getter]
    fn id(&self) -> u64 {
        self.buf.id()
    }

    /// A NumPy array over the buffer (no copy), once no in-flight task writes it.
    fn numpy(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        Self::view(slf)
    }

    /// NumPy's array protocol: `numpy.asarray(buf)` is `buf.numpy()`.
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__(slf: &Bound<'_, Self>, dtype: Option<PyObject>, copy: Option<bool>) -> PyResult<PyObject> {
        let py = slf.py();
        let arr = Self::view(slf)?;
        let arr = match dtype {
            Some(d) => arr.bind(py).call_method1("astype", (d,))?.unbind(),
            None => arr,
        };
        if copy == Some(true) {
            return Ok(arr.bind(py).call_method0("copy")?.unbind());
        }
        Ok(arr)
    }

    fn __repr__(&self) -> String {
        format!("HostBuffer(id={}, len={}, dtype={})", self.buf.id(), self.len, self.dtype.name)
    }
}

/// A virtual device buffer: one physical copy per GPU and stream slot, chosen when a
/// task's command is dispatched. Name it in downloads, launches and readbacks.
#[pyclass(name = "DeviceBuffer", module = "gpu_chariot", frozen)]
pub struct PyDeviceBuffer {
    pub(crate) buf: DeviceBuffer<u8>,
    pub(crate) len: usize,
    pub(crate) dtype: Dtype,
}

impl PyDeviceBuffer {
    pub(crate) fn alloc(py: Python<'_>, core: &Core, len: usize, dtype: Dtype) -> PyResult<Self> {
        nonempty("device buffer", len)?;
        let bytes = len
            .checked_mul(dtype.size)
            .ok_or_else(|| bad(format!("device buffer of {len} elements of {}: too large", dtype.name)))?;
        let sched = core.sched()?;
        let buf = py.allow_threads(|| sched.alloc::<u8>(bytes)).map_err(|e| to_py(py, e))?;
        Ok(PyDeviceBuffer { buf, len, dtype })
    }
}

#[pymethods]
impl PyDeviceBuffer {
    /// Number of elements.
    fn __len__(&self) -> usize {
        self.len
    }

    /// The elements' NumPy dtype.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?.getattr("dtype")?.call1((&self.dtype.typestr,))
    }

    /// The buffer's id.
    #[getter]
    fn id(&self) -> u64 {
        self.buf.id()
    }

    /// A device buffer has one copy per GPU and stream slot, so it has no one address
    /// to export: inside a task, a GPU callback gets its copy's address (see
    /// `Task.gpu_callback`).
    #[getter]
    fn __cuda_array_interface__(&self) -> PyResult<PyObject> {
        Err(pyo3::exceptions::PyAttributeError::new_err(
            "a DeviceBuffer is virtual (one copy per GPU and stream slot): a GPU callback exports its task's copy",
        ))
    }

    fn __repr__(&self) -> String {
        format!("DeviceBuffer(id={}, len={}, dtype={})", self.buf.id(), self.len, self.dtype.name)
    }
}

/// Device data shared by tasks and kept on the GPUs between them. Pass it (or a range
/// of it: `reads`, `writes`, `reads_writes`) to a launch, or copy to and from it.
#[pyclass(name = "ResidentBuffer", module = "gpu_chariot", frozen)]
pub struct PyResidentBuffer {
    pub(crate) buf: ResidentBuffer<u8>,
    pub(crate) len: usize,
    pub(crate) dtype: Dtype,
}

impl PyResidentBuffer {
    pub(crate) fn alloc(
        py: Python<'_>,
        core: &Core,
        len: usize,
        dtype: Dtype,
        piece_len: Option<usize>,
    ) -> PyResult<Self> {
        nonempty("resident buffer", len)?;
        let too_large = || bad(format!("resident buffer of {len} elements of {}: too large", dtype.name));
        let bytes = len.checked_mul(dtype.size).ok_or_else(too_large)?;
        let sched = core.sched()?;
        let buf = match piece_len {
            None => py.allow_threads(|| sched.alloc_resident::<u8>(bytes)),
            Some(p) => {
                let piece = p.checked_mul(dtype.size).ok_or_else(too_large)?;
                py.allow_threads(|| sched.alloc_resident_pieces::<u8>(bytes, piece))
            }
        }
        .map_err(|e| to_py(py, e))?;
        Ok(PyResidentBuffer { buf, len, dtype })
    }

    fn range(
        slf: &Bound<'_, Self>,
        start: isize,
        stop: Option<isize>,
        read: bool,
        write: bool,
    ) -> PyResult<ResidentRange> {
        let me = slf.get();
        let what = format!("resident buffer {}", me.buf.id());
        let r = elements(&what, me.len, start, stop)?;
        if r.is_empty() {
            return Err(bad(format!("empty range {}..{} of {what}", r.start, r.end)));
        }
        Ok(ResidentRange { buf: slf.clone().unbind(), range: r, read, write })
    }
}

#[pymethods]
impl PyResidentBuffer {
    /// Number of elements.
    fn __len__(&self) -> usize {
        self.len
    }

    /// The elements' NumPy dtype.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?.getattr("dtype")?.call1((&self.dtype.typestr,))
    }

    /// The buffer's id.
    #[getter]
    fn id(&self) -> u64 {
        self.buf.id()
    }

    /// Pieces the buffer is kept in (moved and evicted piece by piece).
    #[getter]
    fn pieces(&self) -> usize {
        self.buf.pieces()
    }

    /// Elements `start:stop` that a kernel (or GPU callback) only reads.
    #[pyo3(signature = (start = 0, stop = None))]
    fn reads(slf: &Bound<'_, Self>, start: isize, stop: Option<isize>) -> PyResult<ResidentRange> {
        Self::range(slf, start, stop, true, false)
    }

    /// Elements `start:stop` that a kernel (or GPU callback) writes, every one of them.
    #[pyo3(signature = (start = 0, stop = None))]
    fn writes(slf: &Bound<'_, Self>, start: isize, stop: Option<isize>) -> PyResult<ResidentRange> {
        Self::range(slf, start, stop, false, true)
    }

    /// Elements `start:stop` that a kernel (or GPU callback) reads and writes.
    #[pyo3(signature = (start = 0, stop = None))]
    fn reads_writes(slf: &Bound<'_, Self>, start: isize, stop: Option<isize>) -> PyResult<ResidentRange> {
        Self::range(slf, start, stop, true, true)
    }

    fn __repr__(&self) -> String {
        format!("ResidentBuffer(id={}, len={}, dtype={})", self.buf.id(), self.len, self.dtype.name)
    }
}

/// A range of a resident buffer and how a kernel uses it (`ResidentBuffer.reads` and kin).
#[pyclass(module = "gpu_chariot", frozen)]
pub struct ResidentRange {
    pub(crate) buf: Py<PyResidentBuffer>,
    pub(crate) range: Range<usize>,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

impl ResidentRange {
    pub(crate) fn arg(&self) -> chariot::Arg {
        let b = self.buf.get();
        let bytes = self.range.start * b.dtype.size..self.range.end * b.dtype.size;
        match (self.read, self.write) {
            (true, false) => chariot::Arg::reads(&b.buf, bytes),
            (false, true) => chariot::Arg::writes(&b.buf, bytes),
            _ => chariot::Arg::reads_writes(&b.buf, bytes),
        }
    }
}

#[pymethods]
impl ResidentRange {
    fn __repr__(&self) -> String {
        let how = match (self.read, self.write) {
            (true, false) => "reads",
            (false, true) => "writes",
            _ => "reads_writes",
        };
        format!("{how}(resident buffer {}, {}..{})", self.buf.get().buf.id(), self.range.start, self.range.end)
    }
}

/// Where a copy lands or comes from on the device: a virtual device buffer or a
/// resident one.
#[derive(Clone)]
pub(crate) enum Dev {
    Device(DeviceBuffer<u8>),
    Resident(ResidentBuffer<u8>),
}

/// `obj` as a copy's device side, with its length and dtype.
pub(crate) fn dev_of(obj: &Bound<'_, PyAny>, role: &str) -> PyResult<(Dev, usize, Dtype, String)> {
    if let Ok(d) = obj.downcast::<PyDeviceBuffer>() {
        let d = d.get();
        return Ok((Dev::Device(d.buf.clone()), d.len, d.dtype.clone(), format!("device buffer {}", d.buf.id())));
    }
    if let Ok(r) = obj.downcast::<PyResidentBuffer>() {
        let r = r.get();
        return Ok((Dev::Resident(r.buf.clone()), r.len, r.dtype.clone(), format!("resident buffer {}", r.buf.id())));
    }
    if on_gpu(obj) {
        return Err(PyTypeError::new_err(format!(
            "{role}: a foreign GPU array ({}) cannot be a copy's device side: copies move the runtime's buffers \
             (a foreign array, external device memory, can be a launch's argument, or be filled through a GPU \
             callback)",
            obj.get_type().name()?
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{role}: expected a DeviceBuffer or ResidentBuffer, got {}",
        obj.get_type().name()?
    )))
}

/// Whether `obj` is another library's GPU array (CuPy, PyTorch, Numba, JAX): it has
/// `__cuda_array_interface__`, or DLPack says it lives on a CUDA device.
pub(crate) fn on_gpu(obj: &Bound<'_, PyAny>) -> bool {
    if obj.hasattr("__cuda_array_interface__").unwrap_or(false) {
        return true;
    }
    // DLPack's device types: 1 is the CPU (NumPy has `__dlpack__` too); 2, 3 and 13
    // are CUDA, pinned CUDA host memory and CUDA managed memory.
    obj.call_method0("__dlpack_device__")
        .and_then(|d| d.extract::<(i32, i32)>())
        .is_ok_and(|(kind, _)| matches!(kind, 2 | 3 | 13))
}

/// Refuses an empty buffer in elements (the runtime would count bytes).
pub(crate) fn nonempty(what: &str, len: usize) -> PyResult<()> {
    if len == 0 {
        return Err(bad(format!("{what} of 0 elements: a buffer needs at least one element")));
    }
    Ok(())
}
