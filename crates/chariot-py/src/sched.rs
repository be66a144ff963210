//! The scheduler as a Python object: built from keyword arguments (the Rust builder's
//! methods), shut down when it goes (without the GIL: its threads may need it to end).

use crate::buffers::{PyDeviceBuffer, PyHostBuffer, PyResidentBuffer};
use crate::calls::in_callback;
use crate::graph::PyRecordedGraph;
use crate::kernel::{PyKernel, PyKernelHandle};
use crate::report::PyReport;
use crate::task::PyTask;
use crate::{bad, to_py, ChariotError, Dtype};
use chariot::{Backend, Execution, Order, Scheduler};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

/// What every Python object that submits work shares: the scheduler, and the flag
/// Ctrl-C raises during `synchronize` so that Python callbacks and twins not yet begun
/// fail at once instead of running.
pub(crate) struct Core {
    sched: Option<Scheduler>,
    pub(crate) cancel: Arc<AtomicBool>,
}

impl Core {
    pub(crate) fn sched(&self) -> PyResult<&Scheduler> {
        self.sched.as_ref().ok_or_else(|| ChariotError::new_err("the scheduler is gone"))
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // Dropping the scheduler waits for its tasks, whose Python callbacks need the GIL.
        if let Some(s) = self.sched.take() {
            Python::with_gil(|py| py.allow_threads(move || drop(s)));
        }
    }
}

/// How often `synchronize` looks for a signal (Ctrl-C) while it waits.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// The runtime: D GPUs with S stream slots each, dispatching tasks out of order.
#[pyclass(name = "Scheduler", module = "gpu_chariot", frozen)]
pub struct PyScheduler {
    pub(crate) core: Arc<Core>,
}

fn backend_of(name: &str) -> PyResult<Backend> {
    match name {
        "auto" => Ok(Backend::Auto),
        "cuda" => Ok(Backend::Cuda),
        "sim" => Ok(Backend::Sim),
        other => Err(bad(format!("invalid configuration: backend = {other:?}; allowed: auto, cuda or sim"))),
    }
}

#[pymethods]
impl PyScheduler {
    /// Builds a scheduler; every argument left out takes the runtime's default, from
    /// the hardware where it depends on it (as `Scheduler::builder()` in Rust).
    #[new]
    #[pyo3(signature = (*, backend = "auto", gpus = None, gpu_list = None, streams = None, order = None,
        execution = None, adapt = None, kernel_concurrency = None, cpu_cores = None, buses = None,
        stage_depth = None, pin_dispatchers = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        backend: &str,
        gpus: Option<usize>,
        gpu_list: Option<Vec<usize>>,
        streams: Option<usize>,
        order: Option<&str>,
        execution: Option<&str>,
        adapt: Option<bool>,
        kernel_concurrency: Option<usize>,
        cpu_cores: Option<usize>,
        buses: Option<usize>,
        stage_depth: Option<usize>,
        pin_dispatchers: Option<bool>,
    ) -> PyResult<Self> {
        let mut b = Scheduler::builder().backend(backend_of(backend)?);
        if let Some(g) = gpus {
            b = b.gpus(g);
        }
        if let Some(l) = gpu_list {
            b = b.gpu_list(l);
        }
        if let Some(s) = streams {
            b = b.streams(s);
        }
        if let Some(o) = order {
            b = b.order(o.parse::<Order>().map_err(|e| bad(e.to_string()))?);
        }
        if let Some(e) = execution {
            b = b.execution(e.parse::<Execution>().map_err(|e| bad(e.to_string()))?);
        }
        if let Some(a) = adapt {
            b = b.adapt(a);
        }
        if let Some(k) = kernel_concurrency {
            b = b.kernel_concurrency(k);
        }
        if let Some(c) = cpu_cores {
            b = b.cpu_cores(c);
        }
        if let Some(n) = buses {
            b = b.buses(n);
        }
        if let Some(d) = stage_depth {
            b = b.stage_depth(d);
        }
        if let Some(p) = pin_dispatchers {
            b = b.pin_dispatchers(p);
        }
        let sched = py.allow_threads(|| b.build()).map_err(|e| to_py(py, e))?;
        Ok(PyScheduler { core: Arc::new(Core { sched: Some(sched), cancel: Arc::default() }) })
    }

    /// The backend's name: "cuda" or "sim".
    #[getter]
    fn backend(&self) -> PyResult<&'static str> {
        Ok(self.core.sched()?.backend_name())
    }

    /// Number of GPUs.
    #[getter]
    fn gpu_count(&self) -> PyResult<usize> {
        Ok(self.core.sched()?.gpu_count())
    }

    /// Stream slots per GPU.
    #[getter]
    fn streams(&self) -> PyResult<usize> {
        Ok(self.core.sched()?.streams())
    }

    /// The execution mode ("auto", "host", "replay" or "device").
    #[getter]
    fn execution(&self) -> PyResult<String> {
        Ok(self.core.sched()?.execution().to_string())
    }

    /// What each GPU is: a list of dicts (name, ordinal, arch, memory_bytes, sm_count, ...).
    #[getter]
    fn gpu_info<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut out = Vec::new();
        for g in self.core.sched()?.gpu_info() {
            let d = PyDict::new(py);
            d.set_item("name", &g.name)?;
            d.set_item("ordinal", g.ordinal)?;
            d.set_item("arch", &g.arch)?;
            d.set_item("memory_bytes", g.memory_bytes)?;
            d.set_item("copy_engines", g.copy_engines)?;
            d.set_item("sm_count", g.sm_count)?;
            out.push(d);
        }
        Ok(out)
    }

    /// A pinned host buffer of `len` elements of `dtype` (zeroed is not promised).
    #[pyo3(signature = (len, dtype = None))]
    fn alloc_host(&self, py: Python<'_>, len: usize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyHostBuffer> {
        PyHostBuffer::alloc(py, &self.core, len, dtype_or_f32(py, dtype)?)
    }

    /// A virtual device buffer of `len` elements of `dtype`.
    #[pyo3(signature = (len, dtype = None))]
    fn alloc(&self, py: Python<'_>, len: usize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyDeviceBuffer> {
        PyDeviceBuffer::alloc(py, &self.core, len, dtype_or_f32(py, dtype)?)
    }

    /// A resident buffer of `len` elements of `dtype`, kept in pieces of `piece_len`
    /// elements (one piece when left out).
    #[pyo3(signature = (len, dtype = None, piece_len = None))]
    fn alloc_resident(
        &self,
        py: Python<'_>,
        len: usize,
        dtype: Option<&Bound<'_, PyAny>>,
        piece_len: Option<usize>,
    ) -> PyResult<PyResidentBuffer> {
        PyResidentBuffer::alloc(py, &self.core, len, dtype_or_f32(py, dtype)?, piece_len)
    }

    /// Registers `kernel` on every GPU: NVRTC compiles it (CUDA), or its CPU twin is
    /// checked for (sim). A kernel that does not compile raises ChariotError with
    /// NVRTC's log.
    fn register_kernel(&self, py: Python<'_>, kernel: &PyKernel) -> PyResult<PyKernelHandle> {
        kernel.register(py, &self.core)
    }

    /// Records the tasks `body(scheduler)` submits as a graph, running none of them, and
    /// returns it (RecordedGraph): its `run()` then runs them all at a cost to the host
    /// that does not grow with their number. Call `synchronize` first (the batch must be
    /// closed). A task with a callback, resident data or a GPU preference raises
    /// ChariotError naming it; an exception raised by `body` propagates, and nothing
    /// stays recorded.
    fn record(slf: &Bound<'_, Self>, body: &Bound<'_, PyAny>) -> PyResult<PyRecordedGraph> {
        let py = slf.py();
        let core = slf.get().core.clone();
        let sched = core.sched()?;
        let mut raised = None;
        let recorded = sched.record(|_| {
            // The body submits through this scheduler's Python object; an exception it
            // raises ends the recording here, and the graph made of what it submitted
            // is dropped unrun below.
            if let Err(e) = body.call1((slf.clone(),)) {
                raised = Some(e);
            }
            Ok(())
        });
        if let Some(e) = raised {
            return Err(e);
        }
        let graph = recorded.map_err(|e| to_py(py, e))?;
        Ok(PyRecordedGraph::new(core.clone(), graph))
    }

    /// Starts building task `id` of granularity `granularity` (its chunk's size).
    #[pyo3(signature = (id, granularity = 1))]
    fn task(&self, id: u64, granularity: u64) -> PyTask {
        // Python builds a batch's first task slower than a sleeping dispatcher wakes:
        // wake them now, so that the first submit finds them hot. (A scheduler that is
        // gone says so at the submit.)
        if let Ok(s) = self.core.sched() {
            s.wake_for_batch();
        }
        PyTask::new(self.core.clone(), id, granularity)
    }

    /// Waits for every submitted task, then returns the batch's Report. Raises
    /// TasksFailed (with `.failures` and `.report`) when tasks failed. Ctrl-C stops the
    /// wait cleanly: Python callbacks and twins not yet begun fail at once, the batch
    /// drains, and KeyboardInterrupt is raised.
    fn synchronize(&self, py: Python<'_>) -> PyResult<PyReport> {
        if in_callback() {
            return self.wait(py, false);
        }
        // A wait given up at a second Ctrl-C left the flag up, to drain its batch fast.
        self.core.cancel.store(false, Ordering::SeqCst);
        let s = self.core.sched()?;
        // On this thread, in slices: no thread to start or hand the report over, which
        // cost more than the report itself.
        loop {
            match py.allow_threads(|| s.synchronize_within(SIGNAL_CHECK)) {
                Ok(Some(report)) => return Ok(PyReport { report }),
                Ok(None) => {
                    if let Err(interrupt) = py.check_signals() {
                        return Err(self.drain_after(py, interrupt));
                    }
                }
                Err(e) => return Err(to_py(py, e)),
            }
        }
    }

    /// Waits for all work, stops the runtime's threads and returns the last batch's
    /// Report; later submits raise ChariotError.
    fn shutdown(&self, py: Python<'_>) -> PyResult<PyReport> {
        self.wait(py, true)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.wait(py, true)?;
        Ok(false)
    }

    fn __repr__(&self) -> PyResult<String> {
        let s = self.core.sched()?;
        Ok(format!("Scheduler(backend={:?}, gpus={}, streams={})", s.backend_name(), s.gpu_count(), s.streams()))
    }
}

impl PyScheduler {
    /// After a Ctrl-C in `synchronize`: the batch drains (what is not begun fails at
    /// once) and its report is dropped with the interrupt, which is returned. A second
    /// signal stops this wait too (a callback that never returns), and a thread of its
    /// own waits for the batch to end instead.
    fn drain_after(&self, py: Python<'_>, interrupt: PyErr) -> PyErr {
        self.core.cancel.store(true, Ordering::SeqCst);
        let Ok(s) = self.core.sched() else { return interrupt };
        while let Ok(None) = py.allow_threads(|| s.synchronize_within(SIGNAL_CHECK)) {
            if let Err(again) = py.check_signals() {
                let core = self.core.clone();
                let drained = std::thread::Builder::new().name("chariot-py-drain".into()).spawn(move || {
                    if let Ok(s) = core.sched() {
                        let _ = s.synchronize();
                    }
                });
                // Without that thread the next `synchronize` takes this batch too.
                drop(drained);
                return again;
            }
        }
        self.core.cancel.store(false, Ordering::SeqCst);
        interrupt
    }

    /// `shutdown` (or `synchronize` in a callback) on a helper thread, this one waking every
    /// [`SIGNAL_CHECK`] to let Python handle signals.
    fn wait(&self, py: Python<'_>, shut: bool) -> PyResult<PyReport> {
        let end = move |s: &Scheduler| if shut { s.shutdown() } else { s.synchronize() };
        // In a callback the runtime refuses (it would wait for the callback's own task):
        // ask it on this thread, which it knows for a callback's.
        if in_callback() {
            let s = self.core.sched()?;
            return end(s).map(|report| PyReport { report }).map_err(|e| to_py(py, e));
        }
        // A wait given up at a second Ctrl-C left the flag up, to drain its batch fast.
        self.core.cancel.store(false, Ordering::SeqCst);
        let core = self.core.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("chariot-py-sync".into())
            .spawn(move || {
                let r = core.sched().map(end);
                // The receiver may be gone only if this thread outlived a panic there.
                let _ = tx.send(r.map_err(|e| e.to_string()));
            })
            .map_err(|e| ChariotError::new_err(format!("spawning the waiting thread: {e}")))?;
        // Behind a lock only to be shared with the GIL-free waits (it has one user).
        let rx = std::sync::Mutex::new(rx);
        let recv = |timeout: Duration| {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            rx.recv_timeout(timeout)
        };
        let outcome = loop {
            match py.allow_threads(|| recv(SIGNAL_CHECK)) {
                Ok(r) => break r,
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(interrupt) = py.check_signals() {
                        self.core.cancel.store(true, Ordering::SeqCst);
                        // The batch drains (what is not begun fails at once); its
                        // report is dropped with the interrupt. A second signal stops
                        // this wait too (a callback that never returns), leaving the
                        // batch to end on its own.
                        while let Err(RecvTimeoutError::Timeout) = py.allow_threads(|| recv(SIGNAL_CHECK)) {
                            py.check_signals()?;
                        }
                        self.core.cancel.store(false, Ordering::SeqCst);
                        return Err(interrupt);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    break Err("the waiting thread ended without an answer".to_string());
                }
            }
        };
        match outcome {
            Ok(Ok(report)) => Ok(PyReport { report }),
            Ok(Err(e)) => Err(to_py(py, e)),
            Err(text) => Err(ChariotError::new_err(text)),
        }
    }
}

fn dtype_or_f32(py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Dtype> {
    match dtype {
        Some(d) => Dtype::from_py(d),
        None => Dtype::from_py(&"float32".into_pyobject(py)?.into_any()),
    }
}
