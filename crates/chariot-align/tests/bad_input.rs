//! Bad input to chariot-align's command line (the "Bad input" table of
//! `docs/bad-input.md`): values out of range and unknown order names are usage errors
//! (exit code 2) naming the option; a missing or malformed file is exit code 1 with a
//! message naming the file and the line; a prepared database (`makedb`) that is not one,
//! of another version (version 1, before checksums, too), truncated, with offsets out
//! of range or a byte that its checksums do not match is exit code 1 with a message
//! naming the file and what is wrong. The demo's cases are the test of the same name
//! in the root package's `tests/bad_input.rs` (the studies crate).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// Runs the chariot-align binary; returns its exit code and stderr.
fn run_tool(args: &[&OsStr]) -> (Option<i32>, String) {
    // cargo's path for the binary; where the test executable was copied elsewhere (as to
    // the GPU machines), the binary of that name beside it.
    let mut exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_chariot-align"));
    if !exe.exists() {
        let beside = std::env::current_exe().ok().and_then(|t| Some(t.parent()?.join(exe.file_name()?)));
        exe = beside.filter(|p| p.exists()).unwrap_or(exe);
    }
    let out = Command::new(&exe).args(args).env("CHARIOT_BACKEND", "sim").output().expect("running the tool");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_tools_refuse_bad_arguments_and_files() {
    let os = |s: &'static str| OsStr::new(s);
    // Values out of range are clap's usage errors (exit code 2), naming the option.
    for (args, needle) in [
        (vec!["search", "-q", "q.fa", "-d", "db.fa", "--chunk", "0"], "--chunk"),
        (vec!["bench", "-q", "q.fa", "-d", "db.fa", "--gap-open=-1"], "--gap-open"),
        (vec!["search", "-q", "q.fa", "-d", "db.fa", "--comp-based-stats", "2"], "--comp-based-stats"),
        (vec!["search", "-q", "q.fa", "-d", "db.fa", "--seg", "maybe"], "--seg"),
        (vec!["search", "-q", "q.fa", "-d", "db.fa", "--db-on-gpu", "maybe"], "--db-on-gpu maybe: auto, yes or no"),
        (
            vec!["search", "-q", "q.fa", "-d", "db.fa", "--gpus", "0"],
            "gpus = \"0\"; allowed: all, or a count of 1 or more",
        ),
        (vec!["bench", "-q", "q.fa", "-d", "db.fa", "--gpus", "two"], "gpus = \"two\"; allowed: all"),
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
    // BLAST tabular output with gap costs (or a matrix) BLAST has no statistics for:
    // exit code 1 before any search, naming what is supported.
    let tab = dir.join("out.m8");
    let mut args = vec![os("search"), os("-q"), good.as_os_str(), os("-d"), good.as_os_str(), os("--no-progress")];
    args.extend([os("--gap-open"), os("5"), os("--tabular"), tab.as_os_str()]);
    let (code, err) = run_tool(&args);
    assert!(
        code == Some(1) && err.contains("--tabular") && err.contains("5/1") && err.contains("11/1"),
        "{code:?}: {err}"
    );
    assert!(!tab.exists(), "no output before the check");
    // A generated query of 0 residues (or over the limit): exit code 1 naming the length
    // and what is allowed, before anything is written.
    let (db, qs) = (dir.join("gen.fa"), dir.join("genq.fa"));
    for lengths in ["5,0", "100001"] {
        let mut args = vec![os("generate"), os("--sequences"), os("3"), os("--out"), db.as_os_str()];
        args.extend([os("--queries-out"), qs.as_os_str(), os("--query-lengths"), OsStr::new(lengths)]);
        let (code, err) = run_tool(&args);
        assert!(code == Some(1) && err.contains("--query-lengths") && err.contains("1 to 100000"), "{code:?}: {err}");
        assert!(!db.exists() && !qs.exists(), "{lengths}: nothing written");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn prepared_databases_refuse_bad_files() {
    let os = |s: &'static str| OsStr::new(s);
    let dir = std::env::temp_dir().join(format!("chariot-bad-prepared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (fa, good, q) = (dir.join("db.fa"), dir.join("good.cadb"), dir.join("q.fa"));
    std::fs::write(&fa, ">a\nACDEFG\n>b\nWW\n>c\nKLMNPQRST\n").unwrap();
    std::fs::write(&q, ">q\nACDEFGHIKLMNPQRSTVWY\n").unwrap();
    let (code, err) =
        run_tool(&[os("makedb"), os("-d"), fa.as_os_str(), os("-o"), good.as_os_str(), os("--no-progress")]);
    assert_eq!(code, Some(0), "{err}");
    let search = |d: &Path, extra: &[&OsStr]| {
        let mut args = vec![os("search"), os("-q"), q.as_os_str(), os("-d"), d.as_os_str(), os("--no-progress")];
        args.extend_from_slice(extra);
        run_tool(&args)
    };
    let (code, err) = search(&good, &[]);
    assert_eq!(code, Some(0), "{err}");
    let bytes = std::fs::read(&good).unwrap();
    // Each corruption: the file's name and what is wrong.
    let mut magic = bytes.clone();
    magic[1] = b'X';
    let mut version = bytes.clone();
    version[8..12].copy_from_slice(&99u32.to_le_bytes());
    let truncated = bytes[..bytes.len() - 3].to_vec();
    let mut offset = bytes.clone();
    offset[136..144].copy_from_slice(&1_000_000u64.to_le_bytes());
    let mut order = bytes.clone();
    order[136..144].copy_from_slice(&1u64.to_le_bytes()); // the longest first: 1 then 6 residues
    let mut repeated = bytes.clone();
    repeated.copy_within(160..168, 168); // original indices at 160: two the same
    let mut code = bytes.clone();
    // The last residue (the 3 sequences' checksums follow): a code past the alphabet,
    // found by the read stage.
    code[bytes.len() - 4 * 3 - 1] = 200;
    let mut residue = bytes.clone();
    residue[bytes.len() - 4 * 3 - 1] ^= 1; // another residue of the alphabet: its checksum differs
    let mut name = bytes.clone();
    let names_at = 128 + 8 * (3 + 1) + 8 * 3 + 8 * (3 + 1);
    name[names_at] ^= 0x20; // a name's case
    let mut header = bytes.clone();
    header[100] = 1; // reserved, covered by the header's checksum
    let mut v1 = bytes.clone();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    for (name, data, needle) in [
        ("magic.cadb", magic, "not a chariot-align prepared database"),
        ("version.cadb", version, "format version 99 is not supported"),
        ("truncated.cadb", truncated, "truncated prepared database"),
        ("offset.cadb", offset, "residue offset 1: 1000000 out of range"),
        ("order.cadb", order, "out of order"),
        ("repeated.cadb", repeated, "original index 1"),
        ("code.cadb", code, "residue code 200"),
        ("residue.cadb", residue, "checksum mismatch in the chunk of sorted sequences 0..3"),
        ("name.cadb", name, "checksum mismatch"),
        ("header.cadb", header, "the header's checksum (bytes 0..124) does not match"),
        ("v1.cadb", v1, "format version 1 has no checksums"),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, data).unwrap();
        let (code, err) = search(&p, &[]);
        assert!(code == Some(1) && err.contains(name) && err.contains(needle), "{name}: {code:?}: {err}");
    }
    // A matrix of another alphabet; makedb of a missing or malformed FASTA file.
    let matrix = dir.join("ar.mat");
    std::fs::write(&matrix, "   A  R  X\nA  1 -1  0\nR -1  1  0\nX  0  0  0\n").unwrap();
    let (code, err) = search(&good, &[os("--matrix"), matrix.as_os_str()]);
    assert!(code == Some(1) && err.contains("good.cadb") && err.contains("prepared for the alphabet"), "{err}");
    let out = dir.join("out.cadb");
    let makedb = |d: &Path| run_tool(&[os("makedb"), os("-d"), d.as_os_str(), os("-o"), out.as_os_str()]);
    let (code, err) = makedb(&dir.join("missing.fa"));
    assert!(code == Some(1) && err.contains("cannot open database") && err.contains("missing.fa"), "{err}");
    let bad = dir.join("bad.fa");
    std::fs::write(&bad, ">a\nACD\nA-C\n").unwrap();
    let (code, err) = makedb(&bad);
    assert!(code == Some(1) && err.contains("bad.fa") && err.contains("line 3, column 2"), "{err}");
    assert!(!out.exists() && !dir.join("out.cadb.partial").exists(), "no partial database left");
    std::fs::remove_dir_all(&dir).ok();
}
