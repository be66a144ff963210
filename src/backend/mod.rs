//! The backend layer: the only place that talks to a GPU, real or simulated, and the
//! only place with `unsafe` code.
//!
//! Two implementations behind one interface, chosen by matching an enum (not a trait
//! object): [`Machine`] owns the GPUs (allocation, kernel loading) and [`Gpu`] is one
//! dispatcher's handle on its GPU: issue a command's device operations (`op`: copies,
//! peer copies, fills, launches, host functions) on a stream slot, and poll whether
//! it completed. The dispatcher cannot tell the two apart. What a command or a fetch
//! means is lowered to those operations above the backend (`task::lower`), once for
//! both implementations.
//!
//! The backend has a low part, `device`, `host_alloc` and `op`: the values that memory,
//! kernels and the stage rules hold (a GPU's description, physical buffers, loaded
//! kernels, host blocks) and the operations made of them. Those are built on it, and
//! the rest of the backend runs them, so imports run one way (see
//! `scripts/ci/check-layers.py`).

pub(crate) mod cuda;
pub(crate) mod device;
pub(crate) mod host_alloc;
pub(crate) mod op;
pub(crate) mod op_failure;
pub(crate) mod sim;

use crate::config::Gpus;
use crate::memory::FreeDevice;
use crate::report::Cleanup;
use crate::signal::Signal;
use crate::stage::Stage;
use device::{Function, GpuInfo, KernelCode, PhysBuf};
use host_alloc::HostAlloc;
use op::{Op, Tag};
use std::sync::Arc;
use std::time::Instant;

pub use sim::{SimFaults, SimProfile};

/// Which backend a scheduler runs on.
///
/// ```
/// use chariot::Backend;
/// assert_eq!(Backend::default(), Backend::Auto);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum Backend {
    /// CUDA when a driver and a device are there, else the simulator (saying so in one
    /// line on stderr). `CHARIOT_BACKEND=cuda|sim` overrides it (`auto` or empty: no
    /// override).
    #[default]
    Auto,
    /// Real GPUs through the CUDA driver; an error where there is none.
    Cuda,
    /// Simulated GPUs with the default profile ([`SimProfile::h100`]).
    Sim,
    /// Simulated GPUs with the given profile.
    SimWith(SimProfile),
}

impl Backend {
    /// The CUDA devices the driver reports here: their count, or
    /// [`Error::CudaUnavailable`](crate::Error::CudaUnavailable) saying why there are none
    /// (no driver library, `cuInit` failed, no device). For code that drives CUDA beside
    /// chariot, such as the hand-written pipelines it is measured against.
    ///
    /// ```
    /// use chariot::Backend;
    /// match Backend::cuda_devices() {
    ///     Ok(n) => assert!(n > 0),
    ///     Err(e) => assert!(matches!(e, chariot::Error::CudaUnavailable { .. })),
    /// }
    /// ```
    pub fn cuda_devices() -> crate::Result<usize> {
        Machine::cuda_present().map_err(|why| crate::Error::CudaUnavailable { reason: why.to_string() })
    }

    /// The backend a command line names: `cuda`, `sim` (simulating `profile`), or `auto`
    /// (CUDA where a driver and a device are there, else `sim`), resolved now.
    ///
    /// ```
    /// use chariot::Backend;
    /// use chariot::sim::SimProfile;
    /// let sim = Backend::from_name("sim", SimProfile::instant())?;
    /// assert_eq!(sim, Backend::SimWith(SimProfile::instant()));
    /// assert!(Backend::from_name("gpu", SimProfile::h100()).is_err());
    /// # Ok::<(), chariot::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] for any other name.
    pub fn from_name(name: &str, profile: SimProfile) -> crate::Result<Backend> {
        // Each name here is in `Backend::NAMES`, which error messages list.
        match name {
            "cuda" => Ok(Backend::Cuda),
            "sim" => Ok(Backend::SimWith(profile)),
            "auto" => Ok(if Machine::cuda_present().is_ok() { Backend::Cuda } else { Backend::SimWith(profile) }),
            other => Err(crate::Error::InvalidConfig {
                name: "backend",
                value: format!("{other:?}"),
                allowed: Backend::allowed(),
            }),
        }
    }

    /// The names [`Backend::from_name`] and `CHARIOT_BACKEND` accept.
    const NAMES: [&'static str; 3] = ["auto", "cuda", "sim"];

    /// [`Backend::NAMES`] as an error message lists them.
    pub(crate) fn allowed() -> String {
        crate::error::one_of(Backend::NAMES)
    }
}

/// Start and end of a command, in nanoseconds since the scheduler started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
}

/// Why a command failed, and how far the failure reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    /// The driver's, callback's, twin's or injector's message.
    pub(crate) message: String,
    /// How far it reaches.
    pub(crate) reach: Reach,
    /// The driver's error, where a driver call failed.
    pub(crate) driver: Option<crate::report::DriverError>,
}

/// How far a fault reaches: one task, or the whole GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The task's command failed (a callback's error or panic, a bad argument); the GPU
    /// is fine.
    Task,
    /// The GPU's context is lost (a sticky CUDA error, a simulated death) and this
    /// task's own command caused it (a kernel that faulted): the task is failed, the
    /// GPU leaves the rotation.
    GpuByTask,
    /// The GPU's context is lost and nothing says which task caused it (the error
    /// surfaced on a copy, or the device itself failed): the GPU leaves the rotation
    /// and its tasks move where that is safe.
    Gpu,
    /// Another GPU than the one that issued the operation is lost: a graph spread over
    /// GPUs had nodes there (one faulted, or the device failed). The operation fails as
    /// a whole; the issuing GPU is fine, the other one leaves the rotation.
    Spanned(usize),
}

impl Fault {
    /// A fault of this task only, for the reason `why` (written out here, once: the
    /// message is what the task's failure shows).
    pub(crate) fn task(why: impl std::fmt::Display) -> Fault {
        Fault { message: why.to_string(), reach: Reach::Task, driver: None }
    }

    /// Whether the GPU that issued the operation is lost.
    pub(crate) fn loses_gpu(&self) -> bool {
        matches!(self.reach, Reach::Gpu | Reach::GpuByTask)
    }

    /// Whether the operation failed as a whole with its GPU or another it spans lost.
    pub(crate) fn loses_a_gpu(&self) -> bool {
        self.reach != Reach::Task
    }
}

impl From<String> for Fault {
    fn from(message: String) -> Fault {
        Fault::task(message)
    }
}

impl From<&str> for Fault {
    fn from(message: &str) -> Fault {
        Fault::task(message)
    }
}

impl From<op_failure::OpFailure> for Fault {
    fn from(why: op_failure::OpFailure) -> Fault {
        Fault::task(why)
    }
}

impl From<op_failure::CallbackFailure> for Fault {
    fn from(why: op_failure::CallbackFailure) -> Fault {
        Fault::task(why)
    }
}

/// How a replayed window's graph was had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GraphUse {
    /// Built and instantiated for this window (its structure was new here).
    Built,
    /// A kept graph of this structure, with this many nodes' parameters set anew.
    Updated(usize),
    /// A kept graph of this structure, unchanged.
    Reused,
    /// Run on the simulated engines (one launch, then node after node).
    Simulated,
    /// Run on the GPU by the persistent executor (`Execution::Device`).
    Device,
}

/// How one task of a replayed window ran.
#[derive(Debug)]
pub(crate) enum TaskRun {
    /// It ran: its commands' spans, in order.
    Ran(Vec<Span>),
    /// Its command `command` failed.
    Failed { command: usize, fault: Fault },
    /// It did not run: the task it runs after (in this window or an earlier one) failed.
    NotRun { cause: crate::TaskId },
}

/// How a replayed window ran.
#[derive(Debug)]
pub(crate) struct WindowRun {
    /// From its launch to its completion.
    pub(crate) span: Span,
    /// Its time on the GPU, measured there (CUDA, between events before and after it,
    /// where the driver times events; the sim, its engine's run): what a measure of the
    /// window's speed reads. `None` where only the span is known.
    pub(crate) gpu_ns: Option<u64>,
    /// Per task, where the backend runs the tasks one by one (sim). Empty where it
    /// times the window as a whole (CUDA): every task ran, untimed inside the window.
    pub(crate) tasks: Vec<TaskRun>,
}

/// Time the dispatcher spent inside driver calls for one command (for the overhead
/// figure: runtime time = dispatch time − driver time).
pub(crate) type DriverNs = u64;

/// All GPUs of one backend.
pub(crate) enum Machine {
    Cuda(cuda::Machine),
    Sim(sim::Machine),
}

impl Machine {
    /// Opens the backend with the GPUs of the given ordinals (`None`: the first `count`).
    pub(crate) fn open(backend: &Backend, ordinals: &Gpus) -> crate::Result<Machine> {
        match backend {
            Backend::Cuda => Ok(Machine::Cuda(cuda::Machine::open(ordinals)?)),
            Backend::Sim => Ok(Machine::Sim(sim::Machine::open(ordinals, SimProfile::h100())?)),
            Backend::SimWith(p) => Ok(Machine::Sim(sim::Machine::open(ordinals, p.clone())?)),
            Backend::Auto => unreachable!("the builder resolves Auto before opening"),
        }
    }

    /// Whether the CUDA backend can run here: a driver library and at least one device.
    pub(crate) fn cuda_present() -> Result<usize, cuda::NoCuda> {
        cuda::Machine::probe()
    }

    /// Whether the GPUs are simulated (launches run CPU twins).
    pub(crate) fn simulated(&self) -> bool {
        matches!(self, Machine::Sim(_))
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Machine::Cuda(_) => "cuda",
            Machine::Sim(_) => "sim",
        }
    }

    /// The CUDA machine, for library plans made outside a dispatcher (`cuda::GpuContext`).
    pub(crate) fn cuda(&self) -> Option<&cuda::Machine> {
        match self {
            Machine::Cuda(m) => Some(m),
            Machine::Sim(_) => None,
        }
    }

    pub(crate) fn gpus(&self) -> &[GpuInfo] {
        match self {
            Machine::Cuda(m) => m.gpus(),
            Machine::Sim(m) => m.gpus(),
        }
    }

    pub(crate) fn alloc_device(&self, gpu: usize, bytes: usize) -> crate::Result<PhysBuf> {
        match self {
            Machine::Cuda(m) => m.alloc_device(gpu, bytes),
            Machine::Sim(m) => m.alloc_device(gpu, bytes),
        }
    }

    /// Returns physical buffers to the driver. Only called when no command runs. A
    /// failed free is kept in [`cleanup`](Machine::cleanup) for the next report.
    pub(crate) fn free_device(&self, bufs: Vec<PhysBuf>) {
        match self {
            Machine::Cuda(m) => m.free_device(bufs),
            Machine::Sim(m) => m.free_device(bufs),
        }
    }

    /// Where frees and teardowns keep the driver errors they meet, for the next
    /// `synchronize`'s report (or stderr once the scheduler has shut down).
    pub(crate) fn cleanup(&self) -> &Arc<Cleanup> {
        match self {
            Machine::Cuda(m) => m.cleanup(),
            Machine::Sim(m) => m.cleanup(),
        }
    }

    pub(crate) fn alloc_host(&self, bytes: usize) -> crate::Result<HostAlloc> {
        match self {
            Machine::Cuda(m) => m.alloc_host(bytes),
            Machine::Sim(_) => HostAlloc::heap(bytes).map_err(|why| crate::Error::OutOfMemory {
                what: crate::error::MemoryKind::Host,
                bytes,
                message: why.to_string(),
            }),
        }
    }

    /// Compiles and loads `kernel` on every GPU (cuda), or checks it has a CPU twin
    /// (`twin`) and, where libnvrtc loads, that its source compiles as declared (sim).
    pub(crate) fn load_kernel(&self, kernel: KernelCode<'_>, twin: bool) -> crate::Result<Vec<Function>> {
        match self {
            Machine::Cuda(m) => m.load_kernel(kernel),
            Machine::Sim(_) if twin => sim::check_kernel(kernel).map(|_| Vec::new()),
            Machine::Sim(_) => Err(crate::Error::KernelInvalid {
                kernel: kernel.name.to_string(),
                message:
                    "the sim backend runs kernels through their CPU twin, and this one has none (Kernel::cpu_twin)"
                        .into(),
            }),
        }
    }

    /// The blocks of a kernel that one full wave of each GPU holds with this block and
    /// dynamic shared memory: SMs × resident blocks per SM (the driver's occupancy
    /// calculator on CUDA, where the kernel is loaded as `functions`, else the device
    /// limits).
    pub(crate) fn waves(&self, functions: &[Function], block_threads: u32, shared_bytes: u32) -> Box<[u32]> {
        self.gpus()
            .iter()
            .enumerate()
            .map(|(g, info)| {
                let by_limits = info.blocks_per_sm(block_threads, shared_bytes);
                let per_sm = match (self, functions.get(g)) {
                    // A refusal (a shape the kernel cannot launch with) fails at issue; the
                    // limits' figure stands in until then.
                    (Machine::Cuda(m), Some(f)) => {
                        m.blocks_per_sm(g, f, block_threads, shared_bytes).unwrap_or(by_limits)
                    }
                    _ => by_limits,
                };
                info.sm_count.saturating_mul(per_sm)
            })
            .collect()
    }

    /// One dispatcher's handle on GPU `gpu`, with `streams` stream slots.
    pub(crate) fn open_gpu(
        &self,
        gpu: usize,
        streams: usize,
        epoch: Instant,
        wake: Arc<Signal>,
        device_timing: bool,
        nvtx: Option<Arc<cuda::nvtx::Nvtx>>,
    ) -> crate::Result<Gpu> {
        match self {
            Machine::Cuda(m) => Ok(Gpu::Cuda(Box::new(m.open_gpu(gpu, streams, epoch, device_timing, nvtx)?))),
            Machine::Sim(m) => Ok(Gpu::Sim(Box::new(m.open_gpu(gpu, streams, epoch, wake)?))),
        }
    }

    /// The sim's modeled link and host rates (see `sim::Machine::rates`); `None` on CUDA,
    /// where they must be measured.
    pub(crate) fn modeled_rates(&self) -> Option<(crate::report::LinkRates, crate::report::LinkRates)> {
        match self {
            Machine::Cuda(_) => None,
            Machine::Sim(m) => m.rates(m.gpus().len()),
        }
    }

    /// Device memory in use on `gpu` right now (bytes), where the backend can tell.
    pub(crate) fn memory_in_use(&self, gpu: usize) -> Option<u64> {
        match self {
            Machine::Cuda(m) => m.memory_in_use(gpu),
            Machine::Sim(m) => Some(m.memory_in_use(gpu)),
        }
    }
}

/// Resident copies are made and freed by the machine, on the dispatchers' threads.
#[cfg(feature = "resident")]
impl crate::seam::ResidentMemory for Machine {
    fn alloc_copy(&self, gpu: usize, bytes: usize) -> crate::Result<PhysBuf> {
        self.alloc_device(gpu, bytes)
    }

    fn free_copy(&self, buf: PhysBuf) {
        self.free_device(vec![buf])
    }

    fn read_copy(&self, buf: &PhysBuf, offset: usize, out: &mut [u8]) -> Result<(), crate::seam::ReadBackFailure> {
        match (self, buf) {
            (Machine::Cuda(m), PhysBuf::Cuda { gpu, ptr }) => Ok(m.read_device(*gpu, *ptr + offset as u64, out)?),
            (Machine::Sim(_), PhysBuf::Sim(mem)) => {
                let words = mem.data.lock();
                let bytes: &[u8] = bytemuck::cast_slice(&words[..]);
                out.copy_from_slice(&bytes[offset..offset + out.len()]);
                Ok(())
            }
            _ => Err(crate::seam::ReadBackFailure::OtherBackend),
        }
    }
}

/// Buried device buffers go back to the driver through the machine that made them.
impl FreeDevice for Machine {
    fn free_device(&self, bufs: Vec<PhysBuf>) {
        Machine::free_device(self, bufs)
    }
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine").field("backend", &self.name()).field("gpus", &self.gpus()).finish()
    }
}

/// One dispatcher's GPU.
pub(crate) enum Gpu {
    // Boxed: the CUDA handle carries its launch-argument pointers inline, the sim's
    // the command being gathered.
    Cuda(Box<cuda::Gpu>),
    Sim(Box<sim::Gpu>),
}

/// A GPU's context made current on a thread other than its dispatcher's
/// ([`Gpu::visit`]); the thread's own is current again when this drops.
#[cfg(feature = "replay")]
pub(crate) enum Visit {
    Cuda(#[allow(dead_code)] cuda::Visit),
    /// The sim has no context.
    Sim,
}

impl Gpu {
    /// Makes the GPU's context current on the calling thread, which is not its
    /// dispatcher's, until the answer drops (CUDA; nothing on the sim).
    ///
    /// # Errors
    /// The driver's, asking for or binding the context.
    #[cfg(feature = "replay")]
    pub(crate) fn visit(&self) -> Result<Visit, crate::report::DriverError> {
        match self {
            Gpu::Cuda(g) => g.visit().map(Visit::Cuda),
            Gpu::Sim(_) => Ok(Visit::Sim),
        }
    }

    /// Runs on the dispatcher's thread before anything else (CUDA: makes the context current).
    pub(crate) fn bind_thread(&self) -> Result<(), crate::report::DriverError> {
        match self {
            Gpu::Cuda(g) => g.bind_thread(),
            Gpu::Sim(_) => Ok(()),
        }
    }

    /// Begins a command of stage `stage` on stream slot `slot`, which has nothing in
    /// flight; its operations follow ([`Gpu::op`]), then [`Gpu::end`] issues it
    /// without waiting for it (or [`Gpu::abandon`] where lowering it failed).
    #[inline]
    pub(crate) fn begin(&mut self, slot: usize, tag: Tag, stage: Stage) -> Result<Instant, Fault> {
        let t0 = Instant::now();
        match self {
            Gpu::Cuda(g) => g.begin(slot, tag, stage),
            Gpu::Sim(g) => g.begin(slot, tag),
        }
        .map(|()| t0)
    }

    /// One operation of the command begun on `slot`.
    #[inline]
    pub(crate) fn op(&mut self, slot: usize, op: Op<'_>) -> Result<(), Fault> {
        match self {
            Gpu::Cuda(g) => g.op(slot, op),
            Gpu::Sim(g) => g.op(op),
        }
    }

    /// Ends the command begun on `slot` (begun at `t0`). Returns the time spent in
    /// driver calls (sim: the hand-off to the engine thread, the simulated driver call).
    #[inline]
    pub(crate) fn end(&mut self, slot: usize, t0: Instant) -> Result<DriverNs, Fault> {
        match self {
            Gpu::Cuda(g) => g.end(slot),
            Gpu::Sim(g) => g.end().map(|()| t0.elapsed().as_nanos() as u64),
        }
    }

    /// The command begun on `slot` failed before its end.
    pub(crate) fn abandon(&mut self, slot: usize) {
        match self {
            Gpu::Cuda(g) => g.abandon(slot),
            Gpu::Sim(g) => g.abandon(),
        }
    }

    /// The GPU's index in the machine's list.
    pub(crate) fn index(&self) -> usize {
        match self {
            Gpu::Cuda(g) => g.index(),
            Gpu::Sim(g) => g.index(),
        }
    }

    /// Whether launches take their arguments as the driver's words (CUDA); the sim
    /// runs a launch's twin on the arguments themselves.
    #[inline]
    pub(crate) fn takes_words(&self) -> bool {
        matches!(self, Gpu::Cuda(_))
    }

    /// Whether the command in flight on `stream` has completed, and when it ran.
    pub(crate) fn poll(&mut self, stream: usize) -> Option<Result<Span, Fault>> {
        match self {
            Gpu::Cuda(g) => g.poll(stream),
            Gpu::Sim(g) => g.poll(stream),
        }
    }

    /// Launches a replay window's graph operation (every slot idle). Returns the time
    /// spent in driver calls and how the graph was had. The sim takes the nodes out of
    /// `g` (the caller keeps its emptied lists for the next graph).
    #[cfg(feature = "replay")]
    pub(crate) fn issue_window<N: op::GraphSource>(
        &mut self,
        g: &mut op::GraphOp<'_, N>,
    ) -> Result<(DriverNs, GraphUse), Fault> {
        match self {
            Gpu::Cuda(gpu) => gpu.issue_window(g),
            Gpu::Sim(gpu) => {
                let t0 = Instant::now();
                gpu.issue_window(g).map(|()| (t0.elapsed().as_nanos() as u64, GraphUse::Simulated))
            }
        }
    }

    /// Launches again the graph kept under `name` (see [`op::GraphOp::recorded`]) if
    /// this GPU keeps it, as it was last set: `None` where it does not (the sim keeps
    /// none), and the caller lowers it.
    #[cfg(feature = "replay")]
    pub(crate) fn relaunch(&mut self, name: (u64, u64)) -> Option<Result<(DriverNs, GraphUse), Fault>> {
        match self {
            Gpu::Cuda(gpu) => gpu.relaunch(name),
            Gpu::Sim(_) => None,
        }
    }

    /// Runs on the device again the recorded part `name` if this GPU keeps its image
    /// (its last run ran there, unchanged since): `None` where it does not (the sim
    /// keeps none), and the caller lowers it.
    #[cfg(feature = "replay")]
    pub(crate) fn relaunch_device(&mut self, name: (u64, u64)) -> Option<Result<(DriverNs, GraphUse), Fault>> {
        match self {
            Gpu::Cuda(gpu) => gpu.relaunch_device(name),
            Gpu::Sim(_) => None,
        }
    }

    /// Whether a window (`device`: to run on the device) may be issued now, behind the
    /// windows in flight (CUDA: not a device-side run with another window, whose image
    /// and executor it would share).
    #[cfg(feature = "replay")]
    pub(crate) fn can_issue_window(&self, device: bool) -> bool {
        match self {
            Gpu::Cuda(g) => g.can_issue_window(device),
            Gpu::Sim(_) => true,
        }
    }

    /// Whether GPU `gpu` (another than this one, which a graph of this one spans) is
    /// lost: its context poisoned (CUDA), or a fault fired there (sim).
    #[cfg(feature = "replay")]
    pub(crate) fn other_gpu_lost(&self, gpu: usize) -> bool {
        match self {
            Gpu::Cuda(g) => g.other_gpu_lost(gpu),
            Gpu::Sim(g) => g.gpu_lost(gpu),
        }
    }

    /// Whether the first window in flight completed, and how it ran.
    pub(crate) fn poll_window(&mut self) -> Option<Result<WindowRun, Fault>> {
        match self {
            Gpu::Cuda(g) => g
                .poll_window()
                .map(|r| r.map(|ran| WindowRun { span: ran.span, gpu_ns: ran.gpu_ns, tasks: Vec::new() })),
            Gpu::Sim(g) => g.poll_window(),
        }
    }

    /// Waits until nothing issued on this GPU is still running (before a dying
    /// dispatcher releases the buffers its commands use).
    pub(crate) fn quiesce(&self) {
        match self {
            Gpu::Cuda(g) => g.quiesce(),
            // Simulated engines hold their own references to the buffers they touch.
            Gpu::Sim(_) => {}
        }
    }

    /// Whether completions must be found by polling (CUDA) rather than announced on the
    /// dispatcher's signal (sim).
    pub(crate) fn polls(&self) -> bool {
        matches!(self, Gpu::Cuda(_))
    }

    /// Whether the dispatcher should spin briefly before parking: a CUDA dispatcher owns
    /// its core; a simulated one does when its profile asks (predictions).
    pub(crate) fn spins(&self) -> bool {
        match self {
            Gpu::Cuda(_) => true,
            Gpu::Sim(g) => g.spin,
        }
    }
}
