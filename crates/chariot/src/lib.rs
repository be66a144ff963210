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

#![deny(missing_docs, missing_debug_implementations)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

// The modules run in layers, lowest first (the table and its picture are in
// scripts/check-layers.py, which CI runs): a module imports only from its own layer
// and those below it.
mod backend;
mod builder;
mod callback;
mod cluster;
mod config;
mod dispatch;
mod error;
mod execution;
mod ids;
mod kernel;
mod memory;
mod report;
mod scheduler;
mod signal;
mod stage;
mod sync;
mod task;

#[cfg(all(test, feature = "model-check"))]
mod model_check;

pub mod fft;

pub use backend::cuda::nvrtc::compile as compile_cubin;
pub use backend::device::GpuInfo;
pub use backend::{Backend, SimFaults, SimProfile};
pub use builder::Builder;
pub use callback::{CallInfo, GpuCall, Resource};
#[cfg(feature = "mpi")]
pub use cluster::Cluster;
pub use config::Gpus;
pub use error::{BoxError, Error, Result};
pub use execution::Execution;
pub use ids::TaskId;
pub use kernel::{Arg, Dim3, Kernel, KernelHandle, LaunchShape, Param, ScalarArgs, TwinArg, TwinArgs};
pub use memory::{DeviceBuffer, DeviceData, Element, HostBuffer, HostRead, HostWrite, ResidentBuffer};
pub use report::{
    zero_overhead_makespan, Adapted, CommandRecord, CriticalPath, DispatchStats, DriverError, GraphSetup,
    HardwareBound, LinkRates, LostGpu, LowerBound, MovedTask, ReplayedWindow, Report, TaskFailure, TaskWork,
};
pub use scheduler::Scheduler;
pub use stage::{Choice, OverlapMatrix, Stage, Thresholds, Tuning};
pub use task::builder::TaskBuilder;
pub use task::{Copy2d, Order};

/// The README's Rust examples, compiled and run by `cargo test` so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The example of docs/graphs.md, compiled and run the same way.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/graphs.md")]
struct GraphsDoctests;

/// The example of docs/replay.md, compiled and run the same way.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/replay.md")]
struct ReplayDoctests;
