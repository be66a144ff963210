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

// The modules run in layers, lowest first (the table and its picture are in
// scripts/check-layers.py, which CI runs): a module imports only from its own layer
// and those below it.
mod backend;
mod builder;
pub mod callback;
#[cfg(feature = "mpi")]
pub mod cluster;
#[cfg(not(feature = "mpi"))]
mod cluster;
mod config;
mod dispatch;
pub mod error;
mod execution;
mod ids;
pub mod kernel;
pub mod memory;
pub mod report;
mod scheduler;
mod signal;
mod stage;
mod sync;
mod task;

#[cfg(all(test, feature = "model-check"))]
mod model_check;

pub mod fft;

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

/// Resident buffers: device data shared by tasks and kept on the GPUs between them,
/// fetched where a task needs it and evicted when memory runs short.
pub mod resident {
    pub use crate::memory::ResidentBuffer;
}

/// The door to the CUDA backend for code that drives CUDA beside chariot (the studies'
/// hand-written pipelines): NVRTC compilation and what a GPU is.
pub mod cuda {
    pub use crate::backend::cuda::nvrtc::compile as compile_cubin;
    pub use crate::backend::device::GpuInfo;
}

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
