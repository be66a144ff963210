//! The `gotoh_check` example (`examples/gotoh_check.rs`), the independent GPU reference
//! that checks every score `chariot-align search -o` writes: on the sim backend (its
//! CPU twin in place of the kernel) it passes a search's TSV, and fails one with a
//! score altered, a row dropped or repeated, scores of other gap costs; bad input is a
//! named error. Its kernel's strip recurrence, emulated here row for row, equals the
//! textbook Gotoh.

use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::Command;

const AA: &[u8] = b"ARNDCQEGHILKMFPSTWYV";

struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("chariot-gotoh-check-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// The example's binary: beside this test (where test executables were copied, as to
/// the GPU machines), else in the target directory's `examples/`, built first by
/// cargo where the test runs under cargo (so that it is never stale).
fn example() -> PathBuf {
    static EXE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        let name = format!("gotoh_check{}", std::env::consts::EXE_SUFFIX);
        let me = std::env::current_exe().unwrap();
        let beside = me.parent().unwrap().join(&name);
        if beside.exists() {
            return beside;
        }
        let profile_dir = me.parent().unwrap().parent().unwrap(); // target/<profile>/deps/..
        if let Ok(cargo) = std::env::var("CARGO") {
            let mut build = Command::new(cargo);
            build.args(["build", "-q", "-p", "chariot-align", "--example", "gotoh_check"]);
            if profile_dir.file_name().is_some_and(|p| p == "release") {
                build.arg("--release");
            }
            let status = build.status().expect("running cargo build --example gotoh_check");
            assert!(status.success(), "cargo build --example gotoh_check failed");
        }
        let built = profile_dir.join("examples").join(&name);
        assert!(built.exists(), "no {} (cargo build -p chariot-align --example gotoh_check)", built.display());
        built
    })
    .clone()
}

/// The chariot-align binary (as `bad_input.rs` finds it).
fn chariot_align() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_chariot-align"));
    if exe.exists() {
        return exe;
    }
    let beside = std::env::current_exe().ok().and_then(|t| Some(t.parent()?.join(exe.file_name()?)));
    beside.filter(|p| p.exists()).unwrap_or(exe)
}

/// Exit code, stdout, stderr.
fn run(exe: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(exe).args(args).output().expect("running a tool");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_fasta(path: &Path, recs: &[(String, Vec<u8>)]) {
    let mut text = String::new();
    for (id, s) in recs {
        text += &format!(">{id} a description\n");
        for line in s.chunks(60) {
            text += std::str::from_utf8(line).unwrap();
            text += "\n";
        }
    }
    std::fs::write(path, text).unwrap();
}

fn random_seq(rng: &mut impl Rng, len: usize) -> Vec<u8> {
    (0..len).map(|_| AA[rng.random_range(0..AA.len())]).collect()
}

/// A database of `n` records (an empty one, one-residue ones, lowercase, `*`, `U`, a
/// long one) and queries of `qlens`, with a homolog of each query in the database so
/// that scores are high as well as low.
fn fixtures(dir: &TempDir, n: usize, qlens: &[usize]) -> (PathBuf, PathBuf) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let queries: Vec<(String, Vec<u8>)> =
        qlens.iter().enumerate().map(|(i, &l)| (format!("q{i}_{l}"), random_seq(&mut rng, l))).collect();
    let mut db = Vec::new();
    for i in 0..n {
        let mut s = match i {
            0 => Vec::new(),
            1 | 2 => random_seq(&mut rng, 1),
            3 => random_seq(&mut rng, 700),
            _ if i - 4 < queries.len() => {
                // A homolog: the query with a few substitutions and an insertion.
                let mut s = queries[i - 4].1.clone();
                for _ in 0..s.len() / 10 {
                    let k = rng.random_range(0..s.len());
                    s[k] = AA[rng.random_range(0..AA.len())];
                }
                let at = rng.random_range(0..=s.len());
                s.splice(at..at, random_seq(&mut rng, 5));
                s
            }
            _ => {
                let l = rng.random_range(2..200);
                random_seq(&mut rng, l)
            }
        };
        if i % 7 == 5 && s.len() > 3 {
            s[0] = s[0].to_ascii_lowercase();
            s[1] = b'U';
            let l = s.len();
            s[l - 1] = b'*';
        }
        db.push((format!("s{i}"), s));
    }
    let (q, d) = (dir.path("q.fa"), dir.path("db.fa"));
    write_fasta(&q, &queries);
    write_fasta(&d, &db);
    (q, d)
}

/// `chariot-align search` on the sim: its TSV at `out`.
fn search(q: &Path, db: &Path, out: &Path, gaps: &[&str]) {
    let mut args = vec!["search", "-q", q.to_str().unwrap(), "-d", db.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend(["--backend", "sim-instant", "--no-progress", "--quiet"]);
    args.extend(gaps);
    let (code, _, err) = run(&chariot_align(), &args);
    assert_eq!(code, 0, "search failed: {err}");
}

/// `gotoh_check` on the sim (a CPU sample of 4 subjects unless `more` sets one):
/// exit code, stdout, stderr.
fn check(q: &Path, db: &Path, scores: &Path, more: &[&str]) -> (i32, String, String) {
    let mut args = vec!["-q", q.to_str().unwrap(), "-d", db.to_str().unwrap(), "--scores", scores.to_str().unwrap()];
    args.extend(["--backend", "sim-instant"]);
    if !more.contains(&"--cpu-sample") {
        args.extend(["--cpu-sample", "4"]);
    }
    args.extend(more);
    run(&example(), &args)
}

/// The TSV's lines.
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn a_search_passes_and_every_fault_in_its_tsv_is_found() {
    let dir = TempDir::new("faults");
    let qlens = [1, 7, 8, 9, 64, 150];
    let (q, db) = fixtures(&dir, 120, &qlens);
    let s = dir.path("s.tsv");
    search(&q, &db, &s, &[]);
    let pairs = qlens.len() * 120;

    let (code, out, err) = check(&q, &db, &s, &["--cpu-sample", "48"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.starts_with(&format!("gotoh_check OK: pairs {pairs}, mismatches 0, missing 0, extra 0,")), "{out}");
    assert!(out.contains(&format!("CPU sample {} pairs equal", 48 * qlens.len())), "{out}");
    assert!(err.contains("query 6 of 6 (`q5_150`, 150 residues)"), "{err}");
    // The homologs score high: the check is not only of zeros and small scores.
    let best = lines(&s)[1..].iter().map(|l| l.rsplit('\t').next().unwrap().parse::<i32>().unwrap()).max().unwrap();
    assert!(best > 500, "best score {best}");

    // One score altered.
    let mut rows = lines(&s);
    let k = rows.iter().position(|l| l.starts_with("q5_150\ts9\t")).unwrap_or(rows.len() / 2);
    let f: Vec<String> = rows[k].split('\t').map(str::to_string).collect();
    let score: i32 = f[2].parse().unwrap();
    rows[k] = format!("{}\t{}\t{}", f[0], f[1], score + 1);
    let altered = dir.path("altered.tsv");
    write_lines(&altered, &rows);
    let (code, out, err) = check(&q, &db, &altered, &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.starts_with("gotoh_check FAIL: ") && out.contains("mismatches 1, missing 0, extra 0"), "{out}");
    let named = format!("query {} subject {}: chariot-align {}, reference {score}", f[0], f[1], score + 1);
    assert!(out.contains(&named), "{out}");

    // One row dropped, another repeated.
    let mut rows = lines(&s);
    let dropped = rows.remove(7);
    let dropped: Vec<&str> = dropped.split('\t').collect();
    let dropped_tsv = dir.path("dropped.tsv");
    write_lines(&dropped_tsv, &rows);
    let (code, out, err) = check(&q, &db, &dropped_tsv, &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("mismatches 0, missing 1, extra 0"), "{out}");
    assert!(out.contains(&format!("query {} subject {}\n", dropped[0], dropped[1])), "{out}");
    let mut rows = lines(&s);
    rows.push(rows[3].clone());
    let n = rows.len();
    let repeated = dir.path("repeated.tsv");
    write_lines(&repeated, &rows);
    let (code, out, err) = check(&q, &db, &repeated, &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("mismatches 0, missing 0, extra 1"), "{out}");
    assert!(out.contains(&format!("line {n}: query")), "{out}");

    // Other gap costs: the same search's TSV fails, a search with them passes.
    let (code, out, _) = check(&q, &db, &s, &["--gap-open", "5", "--gap-extend", "2"]);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("mismatches 0,"), "{out}");
    let s52 = dir.path("s52.tsv");
    search(&q, &db, &s52, &["--gap-open", "5", "--gap-extend", "2"]);
    let (code, out, err) = check(&q, &db, &s52, &["--gap-open", "5", "--gap-extend", "2", "--rows", "3"]);
    assert_eq!(code, 0, "{out}\n{err}");
}

#[test]
fn bad_input_is_a_named_error() {
    let dir = TempDir::new("bad");
    let (q, db) = fixtures(&dir, 12, &[5, 20]);
    let s = dir.path("s.tsv");
    search(&q, &db, &s, &[]);
    let rows = lines(&s);
    let cases: Vec<(&str, Vec<String>, String)> = vec![
        ("header", rows[1..].to_vec(), "line 1: expected the header".into()),
        ("fields", [&rows[..3], &["q0_5\ts3".to_string()], &rows[3..]].concat(), "line 4: expected 3 tab".into()),
        ("score", [&rows[..2], &["q0_5\ts3\tten".to_string()]].concat(), "line 3: the score is not".into()),
        ("subject", [&rows[..], &["q0_5\tnope\t3".to_string()]].concat(), "unknown subject `nope`".into()),
        ("query", [&rows[..], &["q9\ts3\t3".to_string()]].concat(), "unknown query `q9`".into()),
    ];
    for (name, text, needle) in cases {
        let path = dir.path(&format!("{name}.tsv"));
        write_lines(&path, &text);
        let (code, out, err) = check(&q, &db, &path, &[]);
        assert_eq!(code, 2, "{name}: {out}\n{err}");
        assert!(err.contains(&needle) && err.contains(&format!("{name}.tsv: line ")), "{name}: {err}");
    }
    std::fs::write(dir.path("empty.tsv"), "").unwrap();
    let (code, _, err) = check(&q, &db, &dir.path("empty.tsv"), &[]);
    assert!(code == 2 && err.contains("empty.tsv: empty"), "{err}");
    let (code, _, err) = check(&q, &db, &dir.path("none.tsv"), &[]);
    assert!(code == 2 && err.contains("cannot open scores"), "{err}");
    let (code, _, err) = check(&q, &dir.path("none.fa"), &s, &[]);
    assert!(code == 2 && err.contains("cannot open database"), "{err}");
    // Repeated ids in the database and in the queries.
    let dup = dir.path("dup.fa");
    std::fs::write(&dup, ">a\nACD\n>b\nKL\n>a x\nW\n").unwrap();
    let (code, _, err) = check(&q, &dup, &s, &[]);
    assert!(code == 2 && err.contains("line 5: subject id `a` is also the record's on line 1"), "{err}");
    let (code, _, err) = check(&dup, &db, &s, &[]);
    assert!(code == 2 && err.contains("query id `a` is that of queries 1 and 3"), "{err}");
    // clap: --help names every option; a bad backend is a usage error.
    let (code, out, _) = run(&example(), &["--help"]);
    assert_eq!(code, 0);
    for opt in ["--query", "--db", "--scores", "--matrix", "--gap-open", "--gap-extend", "--backend", "--rows"] {
        assert!(out.contains(opt), "{opt}: {out}");
    }
    let (code, _, err) = run(&example(), &["-q", "a", "-d", "b", "--scores", "c", "--backend", "gpu"]);
    assert!(code == 2 && err.contains("--backend"), "{err}");
}

/// The textbook Gotoh (full rows, 64-bit), as the example's CPU twin computes it.
fn textbook(query: &[u8], subject: &[u8], s: &dyn Fn(u8, u8) -> i64, open: i64, ext: i64) -> i64 {
    const NEG: i64 = i64::MIN / 4;
    let n = subject.len();
    let (mut hp, mut fp) = (vec![0i64; n + 1], vec![NEG; n + 1]);
    let mut best = 0;
    for &a in query {
        let (mut h, mut f) = (vec![0i64; n + 1], vec![NEG; n + 1]);
        let mut e = NEG;
        for j in 1..=n {
            e = (e - ext).max(h[j - 1] - open - ext);
            f[j] = (fp[j] - ext).max(hp[j] - open - ext);
            h[j] = 0.max(hp[j - 1] + s(a, subject[j - 1])).max(e).max(f[j]);
            best = best.max(h[j]);
        }
        (hp, fp) = (h, f);
    }
    best
}

/// The CUDA kernel's loop (`gotoh_ref` in the example), statement for statement, for a
/// strip of `rows` rows: strips of the query in registers, the strip's last row left in
/// the scratch row for the strip below, rows past the query's end not counted.
fn strips(query: &[u8], subject: &[u8], s: &dyn Fn(u8, u8) -> i32, open: i32, ext: i32, rows: usize) -> i32 {
    const NEG: i32 = -(1 << 29);
    let (m, n) = (query.len(), subject.len());
    let mut scratch = vec![(123_456, -7); n]; // stale values from an earlier query
    let oe = open + ext;
    let mut best = 0;
    let mut i0 = 0;
    while i0 < m {
        let live = (m - i0).min(rows);
        let (first, last) = (i0 == 0, i0 + rows >= m);
        let q: Vec<u8> = (0..rows).map(|r| if i0 + r < m { query[i0 + r] } else { 0 }).collect();
        let (mut h, mut e) = (vec![0; rows], vec![NEG; rows]);
        let mut diag_top = 0;
        for j in 0..n {
            let c = subject[j];
            let up = if first { (0, NEG) } else { scratch[j] };
            let (mut hup, mut f, mut diag) = (up.0, up.1, diag_top);
            diag_top = up.0;
            for r in 0..rows {
                e[r] = (e[r] - ext).max(h[r] - oe);
                f = (f - ext).max(hup - oe);
                let hn = (diag + s(q[r], c)).max(0).max(e[r].max(f));
                diag = h[r];
                h[r] = hn;
                hup = hn;
                if r < live {
                    best = best.max(hn);
                }
            }
            if !last {
                scratch[j] = (hup, f);
            }
        }
        i0 += rows;
    }
    best
}

#[test]
fn the_kernels_strips_equal_the_textbook_gotoh() {
    let m = chariot_align::matrix::Matrix::blosum62();
    let s64 = |a: u8, b: u8| m.score(a, b) as i64;
    let s32 = |a: u8, b: u8| m.score(a, b);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let code = |rng: &mut rand::rngs::StdRng, len: usize| -> Vec<u8> {
        (0..len).map(|_| m.code[AA[rng.random_range(0..AA.len())] as usize]).collect()
    };
    let mut cases = 0;
    for (qlen, slen) in [(1, 1), (1, 30), (5, 0), (7, 40), (8, 40), (9, 40), (17, 3), (63, 80), (130, 200)] {
        for rep in 0..4 {
            let q = code(&mut rng, qlen);
            let mut sub = code(&mut rng, slen);
            if rep % 2 == 1 && slen >= qlen {
                sub[..qlen].copy_from_slice(&q); // a match: high scores, long diagonals
            }
            for (open, ext) in [(11, 1), (0, 0), (5, 3), (1000, 1000)] {
                let want = textbook(&q, &sub, &s64, open, ext);
                for rows in [1, 3, 8, 16] {
                    let got = strips(&q, &sub, &s32, open as i32, ext as i32, rows);
                    assert_eq!(got as i64, want, "query {qlen}, subject {slen}, gaps {open}/{ext}, rows {rows}");
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 9 * 4 * 4 * 4);
}
