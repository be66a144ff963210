//! The extensions: what chariot adds to the paper's pipeline, each behind a cargo
//! feature and in a folder of its own.
//!
//! * `replay` (feature `replay`): replay windows, the held-back runs of tasks issued
//!   as one graph (or one device-side runner) per window;
//! * `resident` (feature `resident`): device-resident data shared by tasks, its
//!   per-piece dependencies, fetches, copies and eviction;
//! * `cluster` (feature `mpi`): chariot over MPI, one task stream for many ranks.
//!
//! An extension may import the core; the core reaches an extension only through
//! `crate::seam` (scripts/check-layers.py checks both), which names every hook and
//! gives each a no-op stand-in when the feature is off.

#[cfg(feature = "mpi")]
pub(crate) mod cluster;
#[cfg(feature = "replay")]
pub(crate) mod replay;
#[cfg(feature = "resident")]
pub(crate) mod resident;
