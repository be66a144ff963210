//! Kernels: CUDA C source (what CuPy's `RawKernel` takes), their parameters as C
//! spells them (`"float*"`, `"unsigned"`), and a Python CPU twin that the simulated
//! backend runs on NumPy views of the task's device buffers.

use crate::calls::CallbackMark;
use crate::sched::Core;
use crate::{bad, failure_text, numpy_view, to_py, Dtype};
use chariot::kernel::TwinArgs;
use chariot::{BoxError, Kernel, Param};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One declared parameter: a buffer of a dtype (`None`: any, `void*`) or a scalar.
#[derive(Clone, Debug)]
pub(crate) enum PParam {
    Buffer(Option<Dtype>),
    Scalar(Param),
}

impl PParam {
    fn parse(py: Python<'_>, spec: &str) -> PyResult<PParam> {
        let s = spec.trim().trim_start_matches("const ").trim();
        if let Some(elem) = s.strip_suffix('*') {
            let elem = elem.trim().trim_end_matches("const").trim();
            if elem == "void" {
                return Ok(PParam::Buffer(None));
            }
            let dt = Dtype::from_py(&elem.into_pyobject(py)?.into_any()).map_err(|_| {
                PyTypeError::new_err(format!("kernel parameter {spec:?}: unknown element type {elem:?}"))
            })?;
            return Ok(PParam::Buffer(Some(dt)));
        }
        let dt = Dtype::from_py(&s.into_pyobject(py)?.into_any()).map_err(|_| {
            PyTypeError::new_err(format!(
                "kernel parameter {spec:?}: expected a pointer (\"float*\") or a 32- or 64-bit int or float"
            ))
        })?;
        let p = match dt.name.as_str() {
            "int32" => Param::I32,
            "uint32" => Param::U32,
            "int64" => Param::I64,
            "uint64" => Param::U64,
            "float32" => Param::F32,
            "float64" => Param::F64,
            other => {
                return Err(PyTypeError::new_err(format!(
                    "kernel parameter {spec:?} ({other}): scalars are int32, uint32, int64, uint64, float32 or float64"
                )))
            }
        };
        Ok(PParam::Scalar(p))
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            PParam::Buffer(Some(d)) => format!("{}*", d.name),
            PParam::Buffer(None) => "void*".into(),
            PParam::Scalar(p) => format!("{p:?}").to_lowercase(),
        }
    }
}

/// A kernel to register: `Kernel(name, source, params, twin=None)`.
#[pyclass(name = "Kernel", module = "gpu_chariot", frozen)]
pub struct PyKernel {
    name: String,
    source: String,
    params: Vec<PParam>,
    twin: Option<PyObject>,
    sm_share: Option<f64>,
}

#[pymethods]
impl PyKernel {
    /// `name`: the entry point (`extern "C" __global__`); `source`: CUDA C; `params`:
    /// each parameter as C spells it (`"float*"`, `"const float*"`, `"unsigned"`,
    /// `"int"`, `"double"`) or as NumPy does (`"float32*"`, `"uint32"`); `twin`: a
    /// callable the simulated backend runs instead, given the launch's arguments (each
    /// buffer as a NumPy view of the task's copy, each scalar as a number).
    #[new]
    #[pyo3(signature = (name, source, params, twin = None, sim_sm_share = None))]
    fn new(
        py: Python<'_>,
        name: String,
        source: String,
        params: Vec<String>,
        twin: Option<PyObject>,
        sim_sm_share: Option<f64>,
    ) -> PyResult<Self> {
        if let Some(t) = &twin {
            if !t.bind(py).is_callable() {
                return Err(PyTypeError::new_err(format!("kernel {name}: twin must be callable")));
            }
        }
        let params = params.iter().map(|p| PParam::parse(py, p)).collect::<PyResult<Vec<_>>>()?;
        Ok(PyKernel { name, source, params, twin, sm_share: sim_sm_share })
    }

    /// The entry point's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __repr__(&self) -> String {
        let ps: Vec<String> = self.params.iter().map(PParam::describe).collect();
        format!("Kernel({}({}))", self.name, ps.join(", "))
    }
}

impl PyKernel {
    pub(crate) fn register(&self, py: Python<'_>, core: &Arc<Core>) -> PyResult<PyKernelHandle> {
        let params: Vec<Param> = self
            .params
            .iter()
            .map(|p| match p {
                PParam::Buffer(_) => Param::Buffer,
                PParam::Scalar(s) => *s,
            })
            .collect();
        let mut k = Kernel::new(self.name.clone(), self.source.clone()).params(params);
        if let Some(s) = self.sm_share {
            k = k.sim_sm_share(s);
        }
        if let Some(twin) = &self.twin {
            let twin = twin.clone_ref(py);
            let decl = self.params.clone();
            let name = self.name.clone();
            let cancel = core.cancel.clone();
            k = k.cpu_twin(move |a: &mut TwinArgs<'_>| {
                if cancel.load(Ordering::SeqCst) {
                    return Err(format!("kernel {name}'s twin not run: interrupted (KeyboardInterrupt)").into());
                }
                run_twin(&twin, &decl, &name, a)
            });
        }
        let sched = core.sched()?;
        let handle = py.allow_threads(|| sched.register_kernel(k)).map_err(|e| to_py(py, e))?;
        Ok(PyKernelHandle { handle, name: self.name.clone(), params: self.params.clone() })
    }
}

/// One twin argument, gathered before the GIL is taken.
enum TwinVal {
    Buf(usize, usize),
    Int(i64),
    UInt(u64),
    Float(f64),
}

fn run_twin(twin: &PyObject, decl: &[PParam], name: &str, a: &mut TwinArgs<'_>) -> Result<(), BoxError> {
    let mut vals = Vec::with_capacity(decl.len());
    for (i, p) in decl.iter().enumerate() {
        vals.push(match p {
            PParam::Buffer(_) => {
                let b = a.buffer_mut::<u8>(i)?;
                TwinVal::Buf(b.as_mut_ptr() as usize, b.len())
            }
            PParam::Scalar(Param::I32) => TwinVal::Int(a.i32(i)?.into()),
            PParam::Scalar(Param::U32) => TwinVal::UInt(a.u32(i)?.into()),
            PParam::Scalar(Param::I64) => TwinVal::Int(a.i64(i)?),
            PParam::Scalar(Param::U64) => TwinVal::UInt(a.u64(i)?),
            PParam::Scalar(Param::F32) => TwinVal::Float(a.f32(i)?.into()),
            PParam::Scalar(Param::F64) => TwinVal::Float(a.f64(i)?),
            PParam::Scalar(other) => return Err(format!("kernel {name}: parameter {i} is {other:?}").into()),
        });
    }
    let _mark = CallbackMark::enter();
    Python::with_gil(|py| {
        let run = || -> PyResult<()> {
            let mut args: Vec<PyObject> = Vec::with_capacity(vals.len());
            for (v, p) in vals.iter().zip(decl) {
                args.push(match (v, p) {
                    (TwinVal::Buf(ptr, len), PParam::Buffer(dt)) => {
                        let u8s;
                        let dt = match dt {
                            Some(d) => d,
                            None => {
                                u8s = Dtype::from_py(&"uint8".into_pyobject(py)?.into_any())?;
                                &u8s
                            }
                        };
                        // The view is of the twin's own borrow of the task's buffer:
                        // valid while the twin runs, which is when Python uses it.
                        numpy_view(py, *ptr, *len, dt, false, None)?
                    }
                    (TwinVal::Int(i), _) => i.into_pyobject(py)?.into_any().unbind(),
                    (TwinVal::UInt(u), _) => u.into_pyobject(py)?.into_any().unbind(),
                    (TwinVal::Float(f), _) => f.into_pyobject(py)?.into_any().unbind(),
                    (TwinVal::Buf(..), _) => return Err(bad("twin argument kinds out of step")),
                });
            }
            let tuple = pyo3::types::PyTuple::new(py, args)?;
            twin.bind(py).call1(tuple)?;
            Ok(())
        };
        run().map_err(|e| failure_text(py, &format!("kernel {name}'s twin"), e).into())
    })
}

/// A kernel registered on every GPU of a scheduler; name it in `Task.launch`.
#[pyclass(name = "KernelHandle", module = "gpu_chariot", frozen)]
pub struct PyKernelHandle {
    pub(crate) handle: chariot::kernel::KernelHandle,
    pub(crate) name: String,
    pub(crate) params: Vec<PParam>,
}

#[pymethods]
impl PyKernelHandle {
    /// The kernel's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The declared parameters, as NumPy spells them.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.params.iter().map(PParam::describe))
    }

    fn __repr__(&self) -> String {
        let ps: Vec<String> = self.params.iter().map(PParam::describe).collect();
        format!("KernelHandle({}({}))", self.name, ps.join(", "))
    }
}
