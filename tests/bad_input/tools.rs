//! The tools' command lines.

use super::*;

/// Runs one of the crate's binaries; returns its exit code and stderr.
fn run_tool(exe: &str, args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let out = Command::new(exe).args(args).env("CHARIOT_BACKEND", "sim").output().expect("running the tool");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The demo's command line; chariot-align's cases are the test of the same name in
/// `crates/chariot-align/tests/bad_input.rs` (cargo gives a test the path of its own
/// package's binaries only).
#[test]
fn the_tools_refuse_bad_arguments_and_files() {
    let demo = env!("CARGO_BIN_EXE_chariot");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    // Values out of range are clap's usage errors (exit code 2), naming the option.
    for (args, needle) in [(vec!["--chunks", "0"], "--chunks"), (vec!["--backend", "gpu"], "--backend")] {
        let args: Vec<_> = args.into_iter().map(os).collect();
        let (code, err) = run_tool(demo, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
