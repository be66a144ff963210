//! What the studies' tests share: a deadline for a test body (a hang fails the test
//! instead of stalling the run) and re-running a test in a child process (for what can
//! kill a process). The runtime's tests have the same helpers in
//! `crates/chariot/tests/common/timeout.rs` and `crates/chariot/tests/bad_input/main.rs`: test
//! crates of two packages share no module.

#![allow(dead_code)] // each test binary uses a part

use std::process::{Command, Output};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

/// Runs `body` on a fresh thread and waits at most `secs` seconds for it. A panic in the
/// body is re-raised here; running past the deadline panics saying the run hung.
pub fn with_timeout<F>(secs: u64, body: F)
where
    F: FnOnce() + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name("test-body".into())
        .spawn(move || {
            body();
            let _ = tx.send(());
        })
        .expect("spawning the test body thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => handle.join().expect("the body finished"),
        // The sender was dropped without sending: the body panicked.
        Err(RecvTimeoutError::Disconnected) => {
            if let Err(payload) = handle.join() {
                std::panic::resume_unwind(payload);
            }
        }
        Err(RecvTimeoutError::Timeout) => panic!("the test did not finish within {secs} s: the run hung"),
    }
}

/// Set in a child run of a test (see [`in_child`]).
const CHILD: &str = "CHARIOT_BAD_INPUT_CHILD";

/// Whether this process is a child run of a test.
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs test `name` of this binary again in a child process, with `env` set, for
/// behaviour that can kill a process.
pub fn in_child(name: &str, env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let exe = std::env::current_exe().expect("the test binary's path");
    Command::new(exe)
        .args([name, "--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("CHARIOT_BACKEND")
        .envs(env.iter().copied())
        .output()
        .expect("running the test binary again")
}

/// Asserts that the child run of a test passed, showing its output if not.
pub fn assert_child_passed(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: the child process ended with {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
