//! # chariot
//!
//! Out-of-order software pipelines for stream applications over D GPUs × S CUDA
//! streams: GPU-chariot (Ino, Nakagawa, Hagihara, IEICE 2013), rebuilt in Rust for
//! today's GPUs.
//!
//! Write the plain serial loop — for each chunk: download, launch, read back, call
//! back — as tasks; the runtime binds each task to a GPU and stream, and dispatches
//! commands out of order across tasks (never inside one) so that copies, kernels and
//! CPU work overlap and the bottleneck stage never idles.
//!
//! ## The model
//!
//! A [`Scheduler`] owns D GPUs with S stream slots each. A *task* (built by
//! [`Scheduler::task`], a [`TaskBuilder`], named by a [`TaskId`]) is a short sequence of
//! commands, each of one [`Stage`]: a download (host → device), a kernel launch (or a
//! GPU callback), a readback (device → host), a CPU callback. Commands of one task run
//! in order; commands of different tasks run in whatever order keeps every stage busy:
//! each GPU's dispatcher picks the next command by the paper's Algorithm 1 (the
//! overlap matrix) and binds tasks to GPUs and slots by Algorithm 2 (the stage
//! thresholds), taking tasks in the [`Order`] asked for. Tasks may name others to run
//! after ([`TaskBuilder::after`]); tasks whose host regions conflict run one after the
//! other on their own. [`Scheduler::synchronize`] waits for the batch and returns its
//! [`Report`](report::Report). Where a batch repeats, the runtime may replay it as CUDA
//! graphs ([`Execution`]).
//!
//! Memory is named by the user: pinned [`HostBuffer`]s, which tasks claim by region;
//! virtual [`DeviceBuffer`]s, one physical copy per GPU and stream slot; and
//! [`ResidentBuffer`](resident::ResidentBuffer)s, kept on the GPUs between tasks.
//! Kernels are CUDA C ([`Kernel`]), compiled by NVRTC at registration, with a CPU twin
//! that the simulated backend runs; a launch's arguments are [`Arg`]s checked against
//! the kernel's [`Param`]s when the command is added.
//!
//! ## A first pipeline
//!
//! Four chunks of 1,024 floats, each downloaded, doubled on a GPU and read back, over
//! two simulated GPUs of two streams each:
//!
//! ```
//! use chariot::{Arg, Backend, Kernel, Param, Scheduler};
//! let sched = Scheduler::builder().backend(Backend::Sim).gpus(2).streams(2).build()?;
//! let mut host = sched.alloc_host::<f32>(4096)?;
//! host.write().fill(1.0);
//! let d = sched.alloc::<f32>(1024)?;
//! let twice = sched.register_kernel(
//!     Kernel::new("twice", r#"extern "C" __global__ void twice(float* x, unsigned n) {
//!         unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }"#)
//!         .params([Param::Buffer, Param::U32])
//!         .cpu_twin(|a| { let n = a.u32(1)? as usize; a.buffer_mut::<f32>(0)?[..n].iter_mut().for_each(|x| *x *= 2.0); Ok(()) }),
//! )?;
//! for i in 0..4u64 {
//!     let r = (i as usize) * 1024..(i as usize + 1) * 1024;
//!     sched.task(i, 1024)
//!         .download(&d, 0, &host, r.clone())
//!         .launch(&twice, 4u32, 256u32, 0, &[Arg::buffer(&d), Arg::u32(1024)])
//!         .readback(&host, r, &d, 0)
//!         .submit()?;
//! }
//! let report = sched.synchronize()?;
//! assert!(host.read().iter().all(|&x| x == 2.0));
//! println!("{report}");
//! # Ok::<(), chariot::Error>(())
//! ```
//!
//! ## The modules
//!
//! The root holds what a pipeline needs; the rest is grouped by what it is for:
//!
//! | module | what it holds |
//! |---|---|
//! | [`report`] | what a run produced: [`Report`](report::Report), [`CommandRecord`](report::CommandRecord), failures ([`TaskFailure`](report::TaskFailure), [`DriverError`](report::DriverError)), the bounds ([`LowerBound`](report::LowerBound), [`HardwareBound`](report::HardwareBound), [`zero_overhead_makespan`](report::zero_overhead_makespan)), the [`CriticalPath`](report::CriticalPath), the replayed windows and the adaptation's changes |
//! | [`tuning`] | how stages are limited and commands chosen: [`Thresholds`](tuning::Thresholds), [`OverlapMatrix`](tuning::OverlapMatrix), the automatic [`Tuning`](tuning::Tuning) and its [`Choice`](tuning::Choice)s |
//! | [`sim`] | the simulated backend's model: [`SimProfile`](sim::SimProfile), [`SimFaults`](sim::SimFaults) |
//! | [`callback`] | what a callback gets: [`CallInfo`](callback::CallInfo), [`GpuCall`](callback::GpuCall) (with the task's [`CudaStream`](callback::CudaStream) or [`SimBuffer`](callback::SimBuffer)), [`Resource`](callback::Resource) |
//! | [`kernel`] | kernels and launches: [`Kernel`], [`KernelHandle`](kernel::KernelHandle), [`Arg`], [`Param`], [`Dim3`](kernel::Dim3), [`LaunchShape`](kernel::LaunchShape), and the CPU twin's [`TwinArgs`](kernel::TwinArgs) |
//! | [`memory`] | buffers and their guards: [`HostBuffer`], [`HostRead`](memory::HostRead), [`HostWrite`](memory::HostWrite), [`DeviceBuffer`], [`DeviceData`](memory::DeviceData), [`Element`](memory::Element) |
//! | [`resident`] | [`ResidentBuffer`](resident::ResidentBuffer): device data shared by tasks and kept on the GPUs |
//! | `cluster` | with the `mpi` feature: `Cluster`, one scheduler per MPI rank running one task stream |
//! | [`cuda`] | the door for code that drives CUDA beside chariot: [`compile_cubin`](cuda::compile_cubin), [`GpuInfo`](cuda::GpuInfo), a GPU's [`GpuContext`](cuda::GpuContext) for libraries' plans (the `chariot-fft` crate's FFTs in GPU callbacks) |
//! | [`error`] | [`Error`], [`Result`], [`BoxError`] and the typed details of errors ([`LengthProblem`](error::LengthProblem), [`HostRegion`](error::HostRegion), [`ConflictHolder`](error::ConflictHolder), [`MemoryKind`](error::MemoryKind)) |
//!
//! ## Backends
//!
//! [`Backend::Cuda`] runs on NVIDIA GPUs through the CUDA driver, loaded at run time
//! (the crate builds without CUDA). [`Backend::Sim`] and [`Backend::SimWith`] run on a
//! simulated machine ([`sim::SimProfile`]): copy engines, a link, SMs and memory, with
//! modeled time and injected faults ([`sim::SimFaults`]), kernels running as their CPU
//! twins, so that a pipeline's results and its schedule can be checked without a GPU.
//! [`Backend::Auto`] takes CUDA where it is present, else the simulator.
//!
//! ## Features
//!
//! * `mpi`: the cluster form, chariot over MPI (`cluster::Cluster`,
//!   `Builder::cluster`); needs an MPI to build against.
//! * `model-check`: swaps the dispatcher's shared structures onto shuttle's primitives
//!   for the crate's model-checking tests; not for use otherwise.
//!
//! ## Errors
//!
//! Every fallible call returns [`Result`]; an [`Error`] names the thing, the value and
//! what was allowed. Bad input is refused where it is given: a builder parameter at
//! [`Builder::build`] ([`Error::InvalidConfig`]), a bad command when it is added or at
//! [`TaskBuilder::submit`] ([`Error::InvalidCommand`], [`Error::UnknownDependency`],
//! [`Error::HostConflict`]), a bad length at allocation ([`Error::InvalidLength`]).
//! A task that fails while running (its callback's error, a driver error, a lost GPU)
//! fails alone: the batch's other tasks complete, and
//! [`synchronize`](Scheduler::synchronize) returns [`Error::TasksFailed`] with each
//! failure and the batch's report. Callbacks and CPU twins return any error as a
//! [`BoxError`].

#![deny(missing_docs, missing_debug_implementations)]
// Built without an extension (`--no-default-features`), the backends' and the task
// graph's support for it stays compiled but unused: the default build checks it.
#![cfg_attr(not(all(feature = "replay", feature = "resident")), allow(dead_code))]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

// The modules run in layers, lowest first (the table and its picture are in
// scripts/ci/check-layers.py, which CI runs): a module imports only from its own layer
// and those below it.
mod backend;
mod builder;
pub mod callback;
mod config;
mod dispatch;
pub mod error;
mod execution;
mod ext;
mod ids;
pub mod kernel;
pub mod memory;
pub mod report;
mod scheduler;
mod seam;
mod signal;
mod stage;
mod sync;
mod task;

#[cfg(all(test, feature = "model-check"))]
mod model_check;

pub use backend::Backend;
pub use builder::Builder;
pub use error::{BoxError, Error, Result};
pub use execution::Execution;
pub use ids::TaskId;
pub use kernel::{Arg, Kernel, Param};
pub use memory::{DeviceBuffer, HostBuffer};
pub use scheduler::Scheduler;
pub use stage::Stage;
pub use task::builder::TaskBuilder;
pub use task::{Copy2d, Order};

/// How the scheduler chooses each task's GPU and stream, and each GPU's next command:
/// the thresholds of Algorithm 2, the overlap matrix of Algorithm 1 and the choice of
/// both, measured or given (what was chosen: [`Scheduler::tuning`]).
pub mod tuning {
    pub use crate::stage::{Choice, OverlapMatrix, Thresholds, Tuning};
}

/// The simulated backend's model ([`Backend::Sim`]): a GPU's engines, link and memory
/// ([`SimProfile`](sim::SimProfile)) and the faults it injects ([`SimFaults`](sim::SimFaults)).
pub mod sim {
    pub use crate::backend::{SimFaults, SimProfile};
}

/// Recorded graphs: a loop's tasks recorded once with
/// [`Scheduler::record`](crate::Scheduler::record) and run many times, each run one
/// graph launch a GPU whatever the tasks' number, updated in place between runs.
#[cfg(feature = "replay")]
pub mod graph {
    pub use crate::error::RecordingProblem;
    pub use crate::ext::replay::recorded::RecordedGraph;
}

/// Resident buffers: device data shared by tasks and kept on the GPUs between them,
/// fetched where a task needs it and evicted when memory runs short.
#[cfg(feature = "resident")]
pub mod resident {
    pub use crate::ext::resident::memory::ResidentBuffer;
}

/// The cluster form: chariot over MPI, one scheduler per rank and one task stream for
/// all of them ([`Cluster`](cluster::Cluster), [`Builder::cluster`]).
#[cfg(feature = "mpi")]
pub mod cluster {
    pub use crate::ext::cluster::Cluster;
}

/// The door to the CUDA backend for code that drives CUDA beside chariot (the studies'
/// hand-written pipelines, libraries called from GPU callbacks): NVRTC compilation,
/// what a GPU is, and a GPU's context for plans made in it. A GPU callback gets the
/// rest from its [`GpuCall`](crate::callback::GpuCall): the task's stream and its
/// buffers' device addresses.
pub mod cuda {
    pub use crate::backend::cuda::GpuContext;
    pub use crate::backend::device::GpuInfo;
    pub use crate::kernel::cubin::compile_cubin;
}

/// The README's Rust examples, compiled and run by `cargo test` so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The example of docs/graphs.md, compiled and run the same way (it uses resident data).
#[cfg(all(doctest, feature = "resident"))]
#[doc = include_str!("../docs/graphs.md")]
struct GraphsDoctests;

/// The example of docs/replay.md, compiled and run the same way.
#[cfg(all(doctest, feature = "replay"))]
#[doc = include_str!("../docs/replay.md")]
struct ReplayDoctests;
