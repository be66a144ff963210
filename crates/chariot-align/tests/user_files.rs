//! chariot-align run as a new user would: it never harms a file it was given, and it
//! reads the FASTA files users have.
//!
//! * An output that is an input (directly, through a symlink or a hard link) is refused
//!   for every output flag of every subcommand, naming both flags and the path, and the
//!   input is left as it was; two outputs naming one file are refused too.
//! * An output is renamed only over a regular file or a missing path: a symlink, a FIFO,
//!   a device or a directory there is an error naming its kind, and is left as it was.
//! * Every output is created before the work: a missing folder for `--tabular` or
//!   `--report-json` fails before the search; a failed run leaves no `.partial` and the
//!   old file as it was.
//! * FASTA with CR-only or CRLF line ends, a UTF-8 byte-order mark, or gzip (told by its
//!   bytes, whatever its name) gives the same hits as plain FASTA; empty records and
//!   duplicate ids are warned of on stderr and counted.
//! * The hits go to stdout, the statistics to stderr; `--quiet` silences them; the
//!   limits are in `--help`.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: Option<i32>,
    out: String,
    err: String,
}

/// Runs the chariot-align binary on the simulated backend.
fn tool<S: AsRef<OsStr>>(args: &[S]) -> Run {
    let mut exe = PathBuf::from(env!("CARGO_BIN_EXE_chariot-align"));
    if !exe.exists() {
        let beside = std::env::current_exe().ok().and_then(|t| Some(t.parent()?.join(exe.file_name()?)));
        exe = beside.filter(|p| p.exists()).unwrap_or(exe);
    }
    let o = Command::new(&exe).args(args).env("CHARIOT_BACKEND", "sim").output().expect("running the tool");
    Run {
        code: o.status.code(),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("chariot-align-user-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn file(&self, name: &str, text: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

const DB: &str =
    ">s1 first\nMKVLAAGIVGLLLAWHQ\nKRDECC\n>s2\nWWCCPHKRDEMKV\n>s3 third one\nACDEFGHIKLMNPQRSTVWY\n>s4\nMKVLAAGIVG\n";
const QUERY: &str = ">q1\nMKVLAAGIVGLLLAW\n>q2\nWWCCPHKRDE\n";

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn search_args<'a>(q: &'a Path, d: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["search", "-q", p(q), "-d", p(d), "--backend", "sim-instant", "--no-progress", "--chunk", "2"];
    v.extend_from_slice(extra);
    v
}

/// Every output flag that names an input (directly or through a link) is refused, and the input is intact.
#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = TempDir::new("same");
    let (db, q) = (dir.file("db.fa", DB.as_bytes()), dir.file("q.fa", QUERY.as_bytes()));
    let cadb = dir.0.join("db.cadb");
    let r = tool(&["makedb", "-d", p(&db), "-o", p(&cadb), "--no-progress"]);
    assert_eq!(r.code, Some(0), "{}", r.err);
    let hard = dir.0.join("hard.fa");
    std::fs::hard_link(&db, &hard).unwrap();
    let soft = dir.0.join("soft.fa");
    std::os::unix::fs::symlink(&db, &soft).unwrap();
    let dotted = dir.0.join(".").join("db.fa");
    let cases: Vec<(Vec<&str>, &str, &str, &Path)> = vec![
        (search_args(&q, &db, &["-o", p(&db)]), "-o", "-d", &db),
        (search_args(&q, &db, &["-o", p(&q)]), "-o", "-q", &q),
        (search_args(&q, &db, &["--tabular", p(&db)]), "--tabular", "-d", &db),
        (search_args(&q, &db, &["--report-json", p(&q)]), "--report-json", "-q", &q),
        (search_args(&q, &cadb, &["-o", p(&cadb)]), "-o", "-d", &cadb),
        (search_args(&q, &db, &["-o", p(&hard)]), "-o", "-d", &db),
        (search_args(&q, &db, &["--tabular", p(&soft)]), "--tabular", "-d", &db),
        (search_args(&q, &db, &["-o", p(&dotted)]), "-o", "-d", &db),
        (vec!["makedb", "-d", p(&db), "-o", p(&db)], "-o", "-d", &db),
        (vec!["makedb", "-d", p(&db), "-o", p(&soft)], "-o", "-d", &db),
    ];
    for (args, oflag, iflag, input) in cases {
        let before = std::fs::read(input).unwrap();
        let r = tool(&args);
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.err);
        assert!(
            r.err.contains(&format!("{oflag} ")) && r.err.contains(&format!("same file as {iflag} ")),
            "{args:?}: {}",
            r.err
        );
        assert!(r.err.contains(p(input)), "{args:?}: the error names the path: {}", r.err);
        assert_eq!(std::fs::read(input).unwrap(), before, "{args:?}: the input changed");
        assert!(r.out.is_empty(), "{args:?}: {}", r.out);
    }
    // Two outputs naming one file.
    let out = dir.0.join("out.txt");
    let r = tool(&search_args(&q, &db, &["-o", p(&out), "--tabular", p(&out)]));
    assert!(r.code == Some(1) && r.err.contains("-o") && r.err.contains("--tabular"), "{}", r.err);
    let r = tool(&["generate", "--sequences", "3", "--out", p(&out), "--queries-out", p(&out)]);
    assert!(r.code == Some(1) && r.err.contains("--out") && r.err.contains("--queries-out"), "{}", r.err);
    assert!(!out.exists());
    // The database's .partial is no place to write either.
    let partial_input = dir.file("x.partial", DB.as_bytes());
    let r = tool(&["makedb", "-d", p(&partial_input), "-o", p(&dir.0.join("x"))]);
    assert!(r.code == Some(1) && r.err.contains("x.partial"), "{}", r.err);
    assert_eq!(std::fs::read_to_string(&partial_input).unwrap(), DB);
}

/// Only a regular file or a missing path is replaced; a bad output path fails before any work.
#[test]
fn outputs_replace_only_regular_files_and_fail_at_once() {
    let dir = TempDir::new("kinds");
    let (db, q) = (dir.file("db.fa", DB.as_bytes()), dir.file("q.fa", QUERY.as_bytes()));
    let target = dir.file("target.cadb", b"keep me");
    let link = dir.0.join("link.cadb");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let fifo = dir.0.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let sub = dir.0.join("folder");
    std::fs::create_dir(&sub).unwrap();
    for (path, kind) in [(&link, "symbolic link"), (&fifo, "FIFO"), (&sub, "directory")] {
        for args in [
            vec!["makedb", "-d", p(&db), "-o", p(path), "--no-progress"],
            search_args(&q, &db, &["-o", p(path)]),
            search_args(&q, &db, &["--tabular", p(path)]),
            search_args(&q, &db, &["--report-json", p(path)]),
            vec!["generate", "--sequences", "3", "--out", p(path)],
        ] {
            let r = tool(&args);
            assert!(r.code == Some(1) && r.err.contains(kind) && r.err.contains(p(path)), "{args:?}: {}", r.err);
        }
    }
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    let r = tool(&["makedb", "-d", p(&db), "-o", "/dev/full"]);
    assert!(r.code == Some(1) && r.err.contains("character device") && r.err.contains("/dev/full"), "{}", r.err);
    assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device());
    // A missing folder for an output written after the search: refused before the search.
    let missing = dir.0.join("no-such-folder");
    for flag in ["--tabular", "--report-json", "-o"] {
        let out = missing.join("x");
        let tsv = dir.0.join("first.tsv");
        let mut extra = vec![flag, p(&out)];
        if flag != "-o" {
            extra.extend(["-o", p(&tsv)]);
        }
        let r = tool(&search_args(&q, &db, &extra));
        assert!(r.code == Some(1) && r.err.contains(flag) && r.err.contains("no-such-folder"), "{flag}: {}", r.err);
        assert!(!r.err.contains("database ") && !r.err.contains("backend"), "{flag}: searched first: {}", r.err);
        assert!(!tsv.exists() && !dir.0.join("first.tsv.partial").exists(), "{flag}: an output was left");
    }
    // A failed run keeps the old file and leaves no .partial.
    let old = dir.file("old.tsv", b"old rows");
    let badq = dir.file("bad.fa", b">q\nAC-D\n");
    let r = tool(&search_args(&badq, &db, &["-o", p(&old)]));
    assert!(r.code == Some(1) && r.err.contains("bad.fa"), "{}", r.err);
    assert_eq!(std::fs::read(&old).unwrap(), b"old rows");
    assert!(!dir.0.join("old.tsv.partial").exists());
    let r = tool(&["makedb", "-d", p(&badq), "-o", p(&target)]);
    assert_eq!(r.code, Some(1), "{}", r.err);
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    assert!(!dir.0.join("target.cadb.partial").exists());
    // A successful run replaces a regular file.
    let r = tool(&search_args(&q, &db, &["-o", p(&old)]));
    assert_eq!(r.code, Some(0), "{}", r.err);
    assert!(std::fs::read_to_string(&old).unwrap().starts_with("query\tsubject\tscore\n"));
}

/// The ranked hits a search prints on stdout.
fn hits(q: &Path, db: &Path, extra: &[&str]) -> String {
    let r = tool(&search_args(q, db, extra));
    assert_eq!(r.code, Some(0), "{}", r.err);
    assert!(r.out.contains("query q1") && r.out.contains("query q2"), "{}", r.out);
    r.out
}

/// CR-only, CRLF, a byte-order mark and gzip read as plain FASTA does, in search and makedb.
#[test]
fn fasta_files_as_users_have_them() {
    let dir = TempDir::new("fasta");
    let (db, q) = (dir.file("db.fa", DB.as_bytes()), dir.file("q.fa", QUERY.as_bytes()));
    let want = hits(&q, &db, &[]);
    let gz = |text: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text).unwrap();
        e.finish().unwrap()
    };
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(DB.as_bytes());
    let variants: Vec<(&str, Vec<u8>)> = vec![
        ("cr.fa", DB.replace('\n', "\r").into_bytes()),
        ("crlf.fa", DB.replace('\n', "\r\n").into_bytes()),
        ("bom.fa", bom),
        ("db.fa.gz", gz(DB.as_bytes())),
        ("gzip-without-the-name.fa", gz(DB.replace('\n', "\r\n").as_bytes())),
    ];
    for (name, bytes) in variants {
        let v = dir.file(name, &bytes);
        assert_eq!(hits(&q, &v, &[]), want, "{name} as the database");
        let qv = dir.file(&format!("q-{name}"), &bytes);
        let r = tool(&search_args(&qv, &db, &["--quiet"]));
        assert_eq!(r.code, Some(0), "{name} as the queries: {}", r.err);
        assert!(["s1", "s2", "s3", "s4"].iter().all(|s| r.out.contains(&format!("query {s} "))), "{name}: {}", r.out);
        let cadb = dir.0.join(format!("{name}.cadb"));
        let r = tool(&["makedb", "-d", p(&v), "-o", p(&cadb), "--quiet"]);
        assert!(r.code == Some(0) && r.err.is_empty() && r.out.is_empty(), "{name}: {}", r.err);
        assert_eq!(hits(&q, &cadb, &[]), want, "{name} prepared");
    }
    // Queries in CR-only FASTA: the same hits.
    let qcr = dir.file("q-cr.fa", QUERY.replace('\n', "\r").as_bytes());
    assert_eq!(hits(&qcr, &db, &[]), want);
}

/// Empty records and duplicate ids: warned of on stderr and counted, in search and makedb.
#[test]
fn empty_records_and_duplicate_ids_are_warned_of() {
    let dir = TempDir::new("warn");
    let q = dir.file("q.fa", QUERY.as_bytes());
    let db = dir.file("db.fa", format!("{DB}>empty\n>s2 again\nMKV\n>s2\nAC\n").as_bytes());
    let r = tool(&search_args(&q, &db, &[]));
    assert_eq!(r.code, Some(0), "{}", r.err);
    assert!(r.err.contains("warning") && r.err.contains("record `empty` has no residues"), "{}", r.err);
    assert!(r.err.contains("id `s2` is an earlier record's too"), "{}", r.err);
    let summary = "1 record with no residues (scored 0), 2 duplicate ids";
    assert!(r.err.contains(summary), "{}", r.err);
    assert!(r.err.contains("  warnings: queries: 0 records"), "counted in the statistics: {}", r.err);
    // --quiet keeps the warnings.
    let r = tool(&search_args(&q, &db, &["--quiet"]));
    assert!(r.code == Some(0) && r.err.contains(summary), "{}", r.err);
    let cadb = dir.0.join("db.cadb");
    let r = tool(&["makedb", "-d", p(&db), "-o", p(&cadb), "--quiet"]);
    assert!(r.code == Some(0) && r.err.contains(summary), "{}", r.err);
    // The prepared database keeps the counts: its search warns too.
    let r = tool(&search_args(&q, &cadb, &[]));
    assert!(r.code == Some(0) && r.err.contains(summary), "{}", r.err);
    // Duplicate query ids.
    let q2 = dir.file("q2.fa", format!("{QUERY}>q1\nKRDE\n").as_bytes());
    let r = tool(&search_args(&q2, &dir.file("plain.fa", DB.as_bytes()), &[]));
    assert!(r.code == Some(0) && r.err.contains("id `q1` is an earlier record's too"), "{}", r.err);
}

/// Hits on stdout only; statistics on stderr, silenced by --quiet; the limits in --help.
#[test]
fn hits_on_stdout_statistics_on_stderr() {
    let dir = TempDir::new("streams");
    let (db, q) = (dir.file("db.fa", DB.as_bytes()), dir.file("q.fa", QUERY.as_bytes()));
    let tsv = dir.0.join("hits.tsv");
    let r = tool(&search_args(&q, &db, &["-o", p(&tsv)]));
    assert_eq!(r.code, Some(0), "{}", r.err);
    for line in r.out.lines().filter(|l| !l.is_empty()) {
        assert!(
            line.starts_with("query ") || line.starts_with("  rank") || line.trim_start().starts_with(char::is_numeric),
            "not a hit line on stdout: {line:?}"
        );
    }
    assert!(r.out.starts_with("query q1"), "{}", r.out);
    for s in ["database ", "backend ", "kernel ", "startup ", "file read", "scores written to"] {
        assert!(r.err.contains(s), "{s:?} not on stderr: {}", r.err);
    }
    let quiet = tool(&search_args(&q, &db, &["-o", p(&tsv), "--quiet"]));
    assert_eq!(quiet.code, Some(0));
    assert_eq!(quiet.out, r.out);
    // --quiet silences the statistics, not warnings: the runtime's one-line notes
    // (`chariot: …`, e.g. that the sim could not compile kernels without libnvrtc) stay.
    let said: Vec<&str> = quiet.err.lines().filter(|l| !l.starts_with("chariot: ")).collect();
    assert!(said.is_empty(), "--quiet: nothing but the runtime's notes on stderr: {}", quiet.err);
    let help = tool(&["search", "--help"]);
    assert_eq!(help.code, Some(0));
    for s in ["100,000 residues", "1,000,000", "4 GiB", "32 letters", "--quiet", "gzip", "<path>.partial"] {
        assert!(help.out.contains(s), "search --help lacks {s:?}: {}", help.out);
    }
    let help = tool(&["makedb", "--help"]);
    assert!(help.out.contains("checksum") && help.out.contains("--quiet"), "{}", help.out);
}

/// `bench --csv` goes through the same guard as the other outputs: an input is refused,
/// only a regular file or a missing path is replaced, a bad path fails before any run,
/// and a complete CSV replaces the old file with no `.partial` left.
#[test]
fn bench_csv_is_guarded() {
    let dir = TempDir::new("bench-csv");
    let (db, q) = (dir.file("db.fa", DB.as_bytes()), dir.file("q.fa", QUERY.as_bytes()));
    let bench = |csv: &Path| {
        let args = [
            "bench",
            "-q",
            p(&q),
            "-d",
            p(&db),
            "--backend",
            "sim-instant",
            "--configs",
            "auto",
            "--cpu-seqs",
            "0",
            "--chunk",
            "2",
            "--csv",
            p(csv),
        ];
        tool(&args)
    };
    for (input, flag) in [(&db, "-d"), (&q, "-q")] {
        let before = std::fs::read(input).unwrap();
        let r = bench(input);
        assert!(
            r.code == Some(1) && r.err.contains(&format!("--csv {} is the same file as {flag}", p(input))),
            "{}",
            r.err
        );
        assert_eq!(std::fs::read(input).unwrap(), before);
        assert!(!r.out.contains("database "), "benched before refusing: {}", r.out);
    }
    let target = dir.file("target.csv", b"keep me");
    let link = dir.0.join("link.csv");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let sub = dir.0.join("folder");
    std::fs::create_dir(&sub).unwrap();
    for (path, kind) in [(&link, "symbolic link"), (&sub, "directory")] {
        let r = bench(path);
        assert!(r.code == Some(1) && r.err.contains(kind) && r.err.contains("--csv"), "{}", r.err);
        assert!(!r.out.contains("database "), "benched before refusing: {}", r.out);
    }
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let r = bench(&dir.0.join("no-such-folder").join("x.csv"));
    assert!(r.code == Some(1) && r.err.contains("--csv") && r.err.contains("no-such-folder"), "{}", r.err);
    // A complete run replaces the regular file and leaves no `.partial`.
    let r = bench(&target);
    assert_eq!(r.code, Some(0), "{}", r.err);
    let csv = std::fs::read_to_string(&target).unwrap();
    assert!(csv.starts_with("query,m,config,") && csv.lines().count() == 3, "{csv}");
    assert!(!dir.0.join("target.csv.partial").exists());
    assert_eq!(std::fs::read(&link).unwrap(), csv.as_bytes(), "the link still points at the target");
}

/// `--tabular` with the statistics options, through the binary: each combination
/// writes BLAST's 12 columns a hit; a query's run of one residue matches a subject's
/// by 40 bits and more, and by chance only once SEG masks it (`--seg yes`, the query's
/// run) or composition-based statistics do (`--comp-based-stats 1`, the subject's).
#[test]
fn tabular_statistics_options() {
    let dir = TempDir::new("tabular-stats");
    let db = dir.file(
        "db.fa",
        b">plain\nMKVLAAGIVGLLLAWHQKRDECCWWCCPHKRDEMKVACDEFGHIKLMNPQRSTVWY\n>run\nACDQQQQQQQQQQQQQQQQQQQQQQQQWYK\n",
    );
    let q = dir.file("q.fa", b">q\nMKVLAAGIVGLLLAWHQKRDECCWWQQQQQQQQQQQQQQQQQQQQ\n");
    let mut lines = Vec::new();
    for (cbs, seg) in [("0", "no"), ("1", "no"), ("0", "yes"), ("1", "yes")] {
        let out = dir.0.join(format!("t{cbs}{seg}.m8"));
        let r =
            tool(&search_args(&q, &db, &["--tabular", p(&out), "--comp-based-stats", cbs, "--seg", seg, "--quiet"]));
        assert_eq!(r.code, Some(0), "{cbs} {seg}: {}", r.err);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.lines().all(|l| l.split('\t').count() == 12), "{text}");
        lines.push(text);
    }
    let bits = |t: &str, s: &str| -> f64 {
        t.lines().find(|l| l.split('\t').nth(1) == Some(s)).unwrap().split('\t').nth(11).unwrap().parse().unwrap()
    };
    // The run of Q scores 40 bits and more as given; masked (the query's by --seg, the
    // subject's by composition-based statistics) it is left with chance matches.
    assert!(bits(&lines[0], "run") > 40.0, "{lines:?}");
    for masked in &lines[1..] {
        assert!(bits(masked, "run") < 15.0, "{lines:?}");
    }
}
