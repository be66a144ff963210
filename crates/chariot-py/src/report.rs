//! The batch's report: printed as Rust prints it, readable as a dict (its fields as
//! serde writes them).

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A value the runtime serializes, as Python objects (through JSON: the report's
/// fields are plain numbers, strings, lists and maps).
pub(crate) fn json_to_py<T: serde::Serialize>(py: Python<'_>, value: &T) -> PyResult<PyObject> {
    let text = serde_json::to_string(value)
        .map_err(|e| crate::ChariotError::new_err(format!("the report did not serialize: {e}")))?;
    Ok(py.import("json")?.getattr("loads")?.call1((text,))?.unbind())
}

/// What a batch produced: `str(report)` is the Rust report's text; `report.to_dict()`
/// (or `report["field"]`) its fields.
#[pyclass(name = "Report", module = "gpu_chariot", frozen)]
pub struct PyReport {
    pub(crate) report: chariot::report::Report,
}

#[pymethods]
impl PyReport {
    /// Number of tasks that ran.
    #[getter]
    fn tasks(&self) -> usize {
        self.report.tasks
    }

    /// The batch's makespan in milliseconds (first command's start to last's end).
    #[getter]
    fn makespan_ms(&self) -> f64 {
        self.report.makespan_ms()
    }

    /// The backend that ran it ("cuda" or "sim").
    #[getter]
    fn backend(&self) -> &str {
        &self.report.backend
    }

    /// The GPUs' names.
    #[getter]
    fn gpus(&self) -> Vec<String> {
        self.report.gpus.clone()
    }

    /// The dependencies the batch ran with (named and inferred), as (before, after) pairs.
    #[getter]
    fn dependencies(&self) -> Vec<(u64, u64)> {
        self.report.dependencies.iter().map(|(a, b)| (a.0, b.0)).collect()
    }

    /// Every field, as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(json_to_py(py, &self.report)?.into_bound(py).downcast_into::<PyDict>()?)
    }

    /// The batch's commands as Chrome trace JSON (chrome://tracing, Perfetto).
    fn chrome_trace(&self) -> String {
        self.report.chrome_trace()
    }

    fn __getitem__(&self, py: Python<'_>, key: &str) -> PyResult<PyObject> {
        let d = self.to_dict(py)?;
        match d.get_item(key)? {
            Some(v) => Ok(v.unbind()),
            None => Err(pyo3::exceptions::PyKeyError::new_err(key.to_string())),
        }
    }

    fn keys(&self, py: Python<'_>) -> PyResult<PyObject> {
        Ok(self.to_dict(py)?.call_method0("keys")?.unbind())
    }

    fn __str__(&self) -> String {
        self.report.to_string()
    }

    fn __repr__(&self) -> String {
        format!("<Report: {} tasks, {:.3} ms on {}>", self.report.tasks, self.report.makespan_ms(), self.report.backend)
    }
}
