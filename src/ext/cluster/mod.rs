//! Beyond one machine (the cluster form): chariot over MPI, one scheduler per rank, one task
//! stream for all. Behind the `mpi` feature (the default build needs no MPI).
//!
//! Every rank runs the same program: the same loop submits the same tasks, in the same
//! order. Each rank's [`Scheduler`](crate::Scheduler) runs only the tasks it takes:
//! positions in the batch's submit order are handed out one block at a time by rank 0
//! (`handout`), and a rank asks for the next block only when its own GPUs have room
//! for more (its tasks in flight below its stream slots, D · S). A rank that finishes
//! early takes more: the balance is dynamic, not a static split. The others skip the
//! task at submit: it costs them building it, not running it.
//!
//! At `synchronize` the ranks exchange what failed (`exchange`): every rank's
//! `synchronize` names every failed task of the batch, each with the rank that held it.
//!
//! ```no_run
//! # #[cfg(feature = "mpi")] {
//! use chariot::{Backend, Scheduler};
//! use chariot::cluster::Cluster;
//! let cluster = Cluster::init()?; // once per process, under `mpirun -np N`
//! let s = Scheduler::builder().backend(Backend::Sim).cluster(&cluster).build()?;
//! // ... the loop, unchanged: each rank runs its share of the tasks.
//! s.synchronize()?;
//! # }
//! # Ok::<(), chariot::Error>(())
//! ```

pub(crate) mod exchange;
pub(crate) mod gate;
pub(crate) mod handout;
mod process;
pub(crate) mod ranks;

pub use process::Cluster;
