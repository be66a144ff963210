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
//! guards, queries, FFT and bounds. This file holds what they share: the helpers below.
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
mod fft;
mod guards;
mod kernels;
mod queries;
mod submit;

use chariot::{
    Arg, Backend, Copy2d, Error, HardwareBound, Kernel, LinkRates, LowerBound, Param, Resource, Scheduler, SimFaults,
    SimProfile, Stage, TaskId, TaskWork,
};
use common::*;
use std::ops::Bound;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const DEADLINE_S: u64 = 60;

/// Deadline for tests of inputs that once hung: short, so a regression fails fast.
const HANG_S: u64 = 20;

/// Set in a child process run by [`in_child`]: the test body runs there.
const CHILD: &str = "CHARIOT_BAD_INPUT_CHILD";

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

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs test `name` of module `module` (the caller's `module_path!()`) of this binary
/// again in a child process, with `env` set, for behaviour that can kill a process (an
/// abort, a driver library) or needs its own environment from the start
/// (`LD_LIBRARY_PATH`).
fn in_child(module: &str, name: &str, env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let exe = std::env::current_exe().expect("the test binary's path");
    // The harness names a test by its path below the crate root: `plots::name`.
    let test = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    };
    Command::new(exe)
        .args([test.as_str(), "--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("CHARIOT_BACKEND")
        .envs(env.iter().copied())
        .output()
        .expect("running the test binary again")
}

/// Asserts that the child run of a test passed, showing its output if not.
fn assert_child_passed(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: the child process ended with {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts `e` is `InvalidConfig` for parameter `name` with a value containing `value`,
/// and that its message names both.
fn assert_invalid_config(e: Error, name: &str, value: &str) {
    let text = e.to_string();
    match e {
        Error::InvalidConfig { name: n, value: v, allowed } => {
            assert_eq!(n, name, "{text}");
            assert!(v.contains(value), "value {v:?} should name {value:?}");
            assert!(!allowed.is_empty());
            assert!(text.contains(name) && text.contains(value), "message {text:?} should name {name} and {value}");
        }
        other => panic!("expected InvalidConfig for {name}, got {other:?}"),
    }
}

/// Asserts `e` is `InvalidCommand` for `task`'s command `command` at `stage`, with a
/// message containing every one of `needles`.
fn assert_invalid_command(e: Error, task: u64, command: usize, stage: Stage, needles: &[&str]) {
    let text = e.to_string();
    match e {
        Error::InvalidCommand { task: t, command: c, stage: s, message } => {
            assert_eq!((t, c, s), (TaskId(task), command, stage), "{text}");
            for n in needles {
                assert!(message.contains(n), "message {message:?} should contain {n:?}");
            }
            assert!(text.contains(&format!("#{task}")), "{text}");
        }
        other => panic!("expected InvalidCommand, got {other:?}"),
    }
}
