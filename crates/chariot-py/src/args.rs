//! Python's arguments to a task's commands, checked and made the runtime's: regions,
//! host buffers, launch shapes and launch arguments.

use crate::bad;
use crate::buffers::{PyDeviceBuffer, PyHostBuffer, PyResidentBuffer, ResidentRange};
use crate::kernel::PParam;
use crate::Dtype;
use chariot::kernel::Dim3;
use chariot::{Arg, Param};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PySlice;
use std::ops::Range;

/// `region` (None, a slice, a range or a `(start, stop)` pair) as elements of a buffer
/// of `len`.
pub(crate) fn region_of(region: Option<&Bound<'_, PyAny>>, what: &str, len: usize) -> PyResult<Range<usize>> {
    let Some(r) = region else { return Ok(0..len) };
    if r.is_none() {
        return Ok(0..len);
    }
    // The pair first: it is the common form, and the cheapest to recognise.
    let (start, stop): (isize, Option<isize>) = if let Ok((a, b)) = r.extract::<(isize, isize)>() {
        (a, Some(b))
    } else if let Ok(s) = r.downcast::<PySlice>() {
        if !s.getattr("step")?.is_none() && s.getattr("step")?.extract::<isize>()? != 1 {
            return Err(bad(format!("region of {what}: a slice with a step; regions are contiguous")));
        }
        let start = if s.getattr("start")?.is_none() { 0 } else { s.getattr("start")?.extract()? };
        (start, s.getattr("stop")?.extract()?)
    } else if r.get_type().name()?.to_cow()? == "range" {
        if r.getattr("step")?.extract::<isize>()? != 1 {
            return Err(bad(format!("region of {what}: a range with a step; regions are contiguous")));
        }
        (r.getattr("start")?.extract()?, Some(r.getattr("stop")?.extract()?))
    } else {
        return Err(PyTypeError::new_err(format!(
            "region of {what}: expected None, a slice, a range or a (start, stop) pair, got {}",
            r.get_type().name()?
        )));
    };
    crate::buffers::elements(what, len, start, stop)
}

pub(crate) fn host_of(obj: &Bound<'_, PyAny>, role: &str) -> PyResult<Py<PyHostBuffer>> {
    obj.downcast::<PyHostBuffer>().map(|b| b.clone().unbind()).map_err(|_| {
        PyTypeError::new_err(format!(
            "{role}: expected a HostBuffer (Scheduler.alloc_host), got {}",
            obj.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    })
}

pub(crate) fn dim3(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Dim3> {
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

/// Launch argument `i` of `kernel` as the runtime's, checked against its parameter. A
/// foreign GPU array (CuPy's, PyTorch's) is external device memory, which the runtime
/// holds (and so keeps allocated) until its task has ended.
pub(crate) fn arg_of(kernel: &str, i: usize, p: &PParam, v: &Bound<'_, PyAny>) -> PyResult<Arg> {
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
                let (address, ordinal, dtype) = foreign_array(v, &at)?;
                check(&dtype)?;
                return Ok(Arg::external(address, ordinal, v.clone().unbind()));
            }
            Err(PyTypeError::new_err(format!(
                "{}: expected a DeviceBuffer, ResidentBuffer, ResidentBuffer range or a GPU array (CuPy, PyTorch), \
                 got {type_name}",
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

/// Another library's GPU array as (its first element's address, its CUDA device, its
/// dtype), read from `__cuda_array_interface__` (version 2 or later) and DLPack's
/// `__dlpack_device__`. It must be contiguous: a kernel sees one address.
fn foreign_array(v: &Bound<'_, PyAny>, at: &dyn Fn() -> String) -> PyResult<(u64, usize, Dtype)> {
    let type_name = v.get_type().name().map_or("?".to_string(), |n| n.to_string());
    let refuse = |why: String| PyTypeError::new_err(format!("{}: the {type_name} array {why}", at()));
    let cai = v
        .getattr("__cuda_array_interface__")
        .map_err(|_| refuse("has no __cuda_array_interface__ (CuPy, PyTorch and Numba arrays have one)".into()))?;
    let (address, _readonly): (u64, bool) = cai
        .get_item("data")
        .and_then(|d| d.extract())
        .map_err(|_| refuse("gives no (address, readonly) data".into()))?;
    let shape: Vec<usize> =
        cai.get_item("shape").and_then(|s| s.extract()).map_err(|_| refuse("gives no shape".into()))?;
    let dtype = Dtype::from_py(&cai.get_item("typestr")?)?;
    // Contiguous: no strides, or C-order strides.
    if let Ok(strides) = cai.get_item("strides") {
        if !strides.is_none() {
            let strides: Vec<isize> =
                strides.extract().map_err(|_| refuse("gives strides that are not ints".into()))?;
            let mut want = dtype.size as isize;
            for (dim, &st) in shape.iter().zip(&strides).rev() {
                if *dim > 1 && st != want {
                    return Err(refuse(format!("is not contiguous (strides {strides:?}); pass a contiguous copy")));
                }
                want *= *dim as isize;
            }
        }
    }
    if shape.iter().product::<usize>() == 0 {
        return Err(refuse("is empty".into()));
    }
    // The device: DLPack says which (CUDA is 2); an array without it is on device 0 only
    // if the process sees one GPU, so it is refused.
    let (kind, ordinal): (i32, i64) = v
        .call_method0("__dlpack_device__")
        .and_then(|d| d.extract())
        .map_err(|_| refuse("does not say its device (no __dlpack_device__)".into()))?;
    if kind != 2 || ordinal < 0 {
        return Err(refuse(format!("is not in CUDA device memory (DLPack device ({kind}, {ordinal}))")));
    }
    Ok((address, ordinal as usize, dtype))
}
