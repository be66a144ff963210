//! Re-running one test in a child process, for behaviour that can kill a process (an
//! abort, a driver library) or needs its own environment from the start. Shared by the
//! runtime's tests and, through `#[path]`, the studies' (test crates of two
//! packages share no module otherwise).

use std::process::{Command, Output};

/// Set in a child process run by [`in_child`]: the test body runs there.
pub const CHILD: &str = "CHARIOT_BAD_INPUT_CHILD";

/// Whether this process is a child run of a test (see [`in_child`]).
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs test `name` of module `module` (the caller's `module_path!()`) of this binary
/// again in a child process, with `env` set, for behaviour that can kill a process (an
/// abort, a driver library) or needs its own environment from the start
/// (`LD_LIBRARY_PATH`).
pub fn in_child(module: &str, name: &str, env: &[(&str, &std::ffi::OsStr)]) -> Output {
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
pub fn assert_child_passed(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: the child process ended with {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
