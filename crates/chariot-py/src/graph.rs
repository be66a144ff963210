//! Recorded graphs from Python: `Scheduler.record(body)` runs `body(scheduler)`, whose
//! submits the runtime keeps instead of running, and returns a `RecordedGraph` whose
//! `run()` queues them all at a cost to the host that does not grow with their number.
//! Its updates (`set_arg`, `set_copy`) change a node in place, as in Rust.

use crate::args::{arg_of, host_of};
use crate::kernel::PParam;
use crate::sched::Core;
use crate::{bad, to_py};
use chariot::graph::RecordedGraph;
use chariot::{Param, TaskId};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex, MutexGuard};

/// A graph of tasks recorded once with `Scheduler.record` and run many times.
#[pyclass(name = "RecordedGraph", module = "gpu_chariot", frozen)]
pub struct PyRecordedGraph {
    /// Keeps the scheduler (and its threads) alive while the graph is.
    _core: Arc<Core>,
    /// Locked for each call, always outside the GIL: a run holds it while it waits for
    /// tasks whose Python callbacks need the GIL, so a thread waiting for the lock must
    /// not hold the GIL.
    graph: Mutex<RecordedGraph>,
}

impl PyRecordedGraph {
    pub(crate) fn new(core: Arc<Core>, graph: RecordedGraph) -> Self {
        PyRecordedGraph { _core: core, graph: Mutex::new(graph) }
    }

    fn graph(&self) -> MutexGuard<'_, RecordedGraph> {
        // A panic under the lock left the graph whole: every update checks before it changes.
        self.graph.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl PyRecordedGraph {
    /// Queues one run of the whole graph and returns; the scheduler's next
    /// `synchronize` waits for it and reports it. Raises ChariotError where a live
    /// guard (a NumPy view taken for writing, say) holds bytes the graph copies.
    fn run(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.graph().run()).map_err(|e| to_py(py, e))
    }

    /// Sets argument `arg` of the launch that is command `command` of task `task` to
    /// `value` (a DeviceBuffer for a buffer, a number for a scalar of the kernel's
    /// declared type), in place: the next run sets that node only. Waits until no run
    /// of the graph is queued or running.
    fn set_arg(&self, py: Python<'_>, task: u64, command: usize, arg: usize, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = TaskId(task);
        let param = py.allow_threads(|| self.graph().param(id, command, arg)).map_err(|e| to_py(py, e))?;
        let p = match param {
            Param::Buffer => PParam::Buffer(None),
            scalar => PParam::Scalar(scalar),
        };
        let value = arg_of(&format!("(task {task}, command {command})"), arg, &p, value)?;
        py.allow_threads(|| self.graph().set_arg(id, command, arg, value)).map_err(|e| to_py(py, e))
    }

    /// Moves the host side of the copy that is command `command` of task `task` to
    /// `host` from element `offset` on (the same shape over other elements), in place.
    /// `host` should hold the copy's dtype: the runtime copies bytes, and `offset`
    /// counts `host`'s elements.
    /// Waits until no run of the graph is queued or running. Raises ChariotError where
    /// the region would end past `host`, or share written bytes with a recorded task
    /// the graph does not order with this one.
    fn set_copy(
        &self,
        py: Python<'_>,
        task: u64,
        command: usize,
        host: &Bound<'_, PyAny>,
        offset: usize,
    ) -> PyResult<()> {
        let host = host_of(host, "set_copy")?;
        let h = host.get();
        let bytes = offset
            .checked_mul(h.dtype.size)
            .ok_or_else(|| bad(format!("set_copy: offset {offset} elements of {} bytes overflows", h.dtype.size)))?;
        py.allow_threads(|| self.graph().set_copy(TaskId(task), command, &h.buf, bytes)).map_err(|e| to_py(py, e))
    }

    /// Tasks recorded.
    #[getter]
    fn tasks(&self, py: Python<'_>) -> usize {
        py.allow_threads(|| self.graph().tasks())
    }

    /// The GPUs its parts were laid out for (one part per GPU that got work).
    #[getter]
    fn gpus(&self, py: Python<'_>) -> Vec<usize> {
        py.allow_threads(|| self.graph().gpus())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        py.allow_threads(|| {
            let g = self.graph();
            format!("RecordedGraph(tasks={}, gpus={:?})", g.tasks(), g.gpus())
        })
    }
}
