//! Shared helpers of chariot's integration tests:
//!
//! * [`with_timeout`]: runs a test body on its own thread and fails the test if it does
//!   not finish in time, so a hang in the runtime is a failure, never a stuck CI run;
//! * [`violations`] / [`check`]: the invariant checker over a [`Report`] (every task
//!   exactly once, in order on one slot, thresholds L and G, overlap matrix M);
//! * [`Workload`]: a deterministic pipeline of tasks (downloads, kernels with CPU twins,
//!   readbacks, CPU and GPU callbacks) with its CPU reference, for both backends.
//!
//! Every test binary uses part of this module only.
#![allow(dead_code)]

mod child;
mod errors;
mod expect;
mod faults;
mod invariants;
mod kernels;
mod scenarios;
mod spans;
mod timeout;
mod workload;

// Each test binary imports part of these only, hence the allows.
#[allow(unused_imports)]
pub use child::*;
#[allow(unused_imports)]
pub use errors::*;
#[allow(unused_imports)]
pub use expect::*;
#[allow(unused_imports)]
pub use faults::*;
#[allow(unused_imports)]
pub use invariants::*;
#[allow(unused_imports)]
pub use kernels::*;
#[allow(unused_imports)]
pub use scenarios::*;
#[allow(unused_imports)]
pub use spans::*;
#[allow(unused_imports)]
pub use timeout::*;
#[allow(unused_imports)]
pub use workload::*;
