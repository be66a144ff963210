//! The invariant suite on the sim backend: for D GPUs x S streams x every ordering rule,
//! pipelines of downloads, kernels, readbacks and CPU/GPU callbacks must run every task
//! exactly once, in order on one slot, within the thresholds and the overlap matrix,
//! and produce exactly the CPU reference's output. Plus the ordering rules themselves,
//! one copy engine, stage depth 2, shared buses, 10,000 tasks, 2-D copies, batches and
//! device memory, and tests of the checker itself.
//!
//! One module per part, in that order; this file holds the backends they share.

// The shared helpers of every test target, one directory up from this one's.
#[path = "../common/mod.rs"]
mod common;

mod batches;
mod checker;
mod hardware;
mod ordering;
mod pipelines;

use chariot::callback::Resource;
use chariot::report::{CommandRecord, Report};
use chariot::sim::SimProfile;
use chariot::tuning::{OverlapMatrix, Thresholds};
use chariot::{Backend, Order, Scheduler, Stage, TaskId};
use common::*;
use std::sync::mpsc;
use std::time::Duration;

const DEADLINE_S: u64 = 60;

/// H100-like engines and links, with modeled time stretched 10x so that commands last
/// tens to hundreds of microseconds and really overlap.
fn timed(gpus: usize) -> Backend {
    Backend::SimWith(SimProfile::h100().with_gpus(gpus).with_time_scale(10.0))
}

fn instant(gpus: usize) -> Backend {
    Backend::SimWith(SimProfile::instant().with_gpus(gpus))
}
