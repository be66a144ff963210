//! Bad input on the sim backend: every mistake gets the right `chariot::Error` variant,
//! with a message naming the offending value, and failures stay confined to their task.
//! Also the host-buffer guards: a read waits for an in-flight task writing its range.
//!
//! The "Bad input" table of `docs/bad-input.md` lists every public entry point and bad
//! value with the test here that shows what it gets. Tests of inputs that once hung, aborted or
//! panicked run under a deadline or in a child process, so that a regression is
//! reported as a failure and the suite goes on. Tests that need a CUDA GPU are ignored
//! here and run on the GPU machine with `--include-ignored`.
//!
//! The tests follow the order of that table, one module per group of entry points:
//! builder, backends and profiles, allocation, kernels, commands, submit, callbacks,
//! guards, queries and bounds (FFT plans' are crates/chariot-fft's). This file holds
//! what they share: the helpers below.
//! The studies' rows (baselines, plots, the demo's command line) are tested in the root
//! package's `tests/bad_input.rs`.

// The shared helpers of every test target, one directory up from this one's.
#[path = "../common/mod.rs"]
mod common;

mod allocation;
mod backends;
mod bounds;
mod builder;
mod callbacks;
mod commands;
mod guards;
mod kernels;
mod queries;
mod submit;

use chariot::callback::Resource;
use chariot::error::{ConflictHolder, MemoryKind};
use chariot::report::{HardwareBound, LinkRates, LowerBound, TaskWork};
use chariot::sim::{SimFaults, SimProfile};
use chariot::{Arg, Backend, Copy2d, Error, Kernel, Param, Scheduler, Stage, TaskId};
use common::*;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const DEADLINE_S: u64 = 60;

/// Deadline for tests of inputs that once hung: short, so a regression fails fast.
const HANG_S: u64 = 20;

fn sim() -> Backend {
    Backend::SimWith(SimProfile::instant().with_gpus(8))
}

fn sched(gpus: usize, streams: usize) -> Scheduler {
    Scheduler::builder().backend(sim()).gpus(gpus).streams(streams).build().unwrap()
}

/// A sim backend whose GPUs have `bytes` of memory each.
fn sim_with_memory(gpus: usize, bytes: u64) -> Backend {
    let mut p = SimProfile::instant().with_gpus(gpus);
    p.memory_bytes = bytes;
    Backend::SimWith(p)
}
