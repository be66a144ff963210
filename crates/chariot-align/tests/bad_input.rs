//! Bad input to chariot-align's command line (the "Bad input" table of
//! `docs/bad-input.md`): values out of range and unknown order names are usage errors
//! (exit code 2) naming the option; a missing or malformed file is exit code 1 with a
//! message naming the file and the line. The demo's cases are the test of the same name
//! in the root package's `tests/bad_input.rs` (the studies crate).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// Runs the chariot-align binary; returns its exit code and stderr.
fn run_tool(args: &[&OsStr]) -> (Option<i32>, String) {
    let exe = env!("CARGO_BIN_EXE_chariot-align");
    let out = Command::new(exe).args(args).env("CHARIOT_BACKEND", "sim").output().expect("running the tool");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_tools_refuse_bad_arguments_and_files() {
    let os = |s: &'static str| OsStr::new(s);
    // Values out of range are clap's usage errors (exit code 2), naming the option.
    for (args, needle) in [
        (vec!["search", "-q", "q.fa", "-d", "db.fa", "--chunk", "0"], "--chunk"),
        (vec!["bench", "-q", "q.fa", "-d", "db.fa", "--gap-open=-1"], "--gap-open"),
    ] {
        let args: Vec<_> = args.into_iter().map(os).collect();
        let (code, err) = run_tool(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // An unknown order name, in --order or as a --configs entry, is a usage error
    // naming the option, the value and the order names allowed (never largest first).
    for (args, needle) in [
        (vec!["bench", "-q", "q.fa", "-d", "db.fa", "--configs", "auto,xx:8"], "invalid value 'xx:8' for '--configs"),
        (vec!["search", "-q", "q.fa", "-d", "db.fa", "--order", "LF"], "invalid value 'LF' for '--order"),
    ] {
        let args: Vec<_> = args.into_iter().map(os).collect();
        let (code, err) = run_tool(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle) && err.contains("fcfs, lf or sf"), "{args:?}: {err}");
    }
    // Files: missing, malformed FASTA, malformed matrix: exit code 1 and a message
    // naming the file and the line.
    let dir = std::env::temp_dir().join(format!("chariot-bad-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (good, bad, matrix) = (dir.join("good.fa"), dir.join("bad.fa"), dir.join("bad.mat"));
    std::fs::write(&good, ">q\nACDEFGHIKLMNPQRSTVWY\n").unwrap();
    std::fs::write(&bad, ">a\nACD\nA-C\n").unwrap();
    std::fs::write(&matrix, "   A  B\nA  1 -2\nB -2\n").unwrap();
    let missing = dir.join("missing.fa");
    let search = |q: &Path, d: &Path, m: Option<&Path>| {
        let mut args = vec![os("search"), os("-q"), q.as_os_str(), os("-d"), d.as_os_str(), os("--no-progress")];
        if let Some(m) = m {
            args.extend([os("--matrix"), m.as_os_str()]);
        }
        run_tool(&args)
    };
    let (code, err) = search(&good, &missing, None);
    assert!(code == Some(1) && err.contains("cannot open") && err.contains("missing.fa"), "{code:?}: {err}");
    let (code, err) = search(&bad, &good, None);
    assert!(code == Some(1) && err.contains("bad.fa") && err.contains("line 3, column 2"), "{code:?}: {err}");
    let (code, err) = search(&good, &bad, None);
    assert!(code == Some(1) && err.contains("line 3, column 2"), "{code:?}: {err}");
    let (code, err) = search(&good, &good, Some(&matrix));
    assert!(code == Some(1) && err.contains("bad.mat") && err.contains("line 3"), "{code:?}: {err}");
    std::fs::remove_dir_all(&dir).ok();
}
