//! End-to-end checks: every score of the pipeline (sim backend in CI, CUDA in the
//! `#[ignore]`d test) equals a plain scalar Gotoh reference written here, on a
//! generated database with empty, one-residue, long and unknown-letter records; and so
//! does every score of the hand-written in-order pipeline ([`chariot_align::hand`]: the
//! CPU twin in CI, CUDA in the `#[ignore]`d test), whose scores also equal chariot's.

use chariot::sim::SimProfile;
use chariot::{Backend, Order};
use chariot_align::db::DbIndex;
use chariot_align::hand;
use chariot_align::matrix::Matrix;
use chariot_align::search::{self, DbPlacement, Options, Query};
use chariot_align::sw::{pair_queries, Gaps, KernelChoice, KernelKind, Profile};
use chariot_align::{commands, generate, prepared};
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Gotoh's algorithm, plainly: full matrices H, E (gap in the query), F (gap in the
/// subject), local alignment, a gap of length k costs open + k·extend.
fn gotoh(query: &[u8], subject: &[u8], m: &Matrix, open: i64, extend: i64) -> i64 {
    const NEG: i64 = i64::MIN / 4;
    let (rows, cols) = (query.len() + 1, subject.len() + 1);
    let mut h = vec![vec![0i64; cols]; rows];
    let mut e = vec![vec![NEG; cols]; rows];
    let mut f = vec![vec![NEG; cols]; rows];
    let mut best = 0;
    for i in 1..rows {
        for j in 1..cols {
            e[i][j] = std::cmp::max(e[i][j - 1] - extend, h[i][j - 1] - open - extend);
            f[i][j] = std::cmp::max(f[i - 1][j] - extend, h[i - 1][j] - open - extend);
            let diag = h[i - 1][j - 1] + m.score(query[i - 1], subject[j - 1]) as i64;
            h[i][j] = [0, diag, e[i][j], f[i][j]].into_iter().max().unwrap();
            best = best.max(h[i][j]);
        }
    }
    best
}

struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("chariot-align-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

const AA: &[u8] = b"ARNDCQEGHILKMFPSTWYVBZX";

/// A database of `n` records: lengths mostly 0..400 with a few up to `long`, including
/// empty and one-residue records, lowercase, `U`/`O` (scored as X) and `*`.
fn write_db(path: &Path, n: usize, long: usize, seed: u64) -> Vec<(String, Vec<u8>)> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut recs = Vec::new();
    let mut text = String::new();
    for i in 0..n {
        let len = match i % 97 {
            0 => 0,
            1 => 1,
            2 if i % 3 == 0 => rng.random_range(long / 2..=long),
            _ => rng.random_range(2..400),
        };
        let mut s: Vec<u8> = (0..len).map(|_| AA[rng.random_range(0..AA.len())]).collect();
        if i % 13 == 5 && len > 3 {
            s[1] = b'U';
            s[2] = b'o';
            s[len - 1] = b'*';
        }
        let id = format!("s{i}");
        text += &format!(">{id} test record\n");
        for line in s.chunks(61) {
            text += std::str::from_utf8(line).unwrap();
            text += "\n";
        }
        recs.push((id, s));
    }
    std::fs::write(path, text).unwrap();
    recs
}

fn random_query(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| AA[rng.random_range(0..20)]).collect()
}

/// Which pipeline a check runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pipeline {
    /// chariot's tasks.
    Chariot,
    /// The hand-written in-order pipeline with this many read threads.
    Hand(usize),
    /// chariot's tasks on the database prepared by `makedb` (sorted by length).
    Prepared,
    /// `Chariot` with the database streamed (`--db-on-gpu no`): `Chariot` and
    /// `Prepared` take the default, which keeps these small databases on the GPUs.
    Streamed,
    /// `Prepared` with the database streamed.
    PreparedStreamed,
}

/// [`check_kernel`] with `--kernel auto` (DPX on sim and on an H100).
#[allow(clippy::too_many_arguments)]
fn check(
    pipeline: Pipeline,
    backend: Backend,
    gpus: usize,
    streams: usize,
    order: Order,
    n: usize,
    long: usize,
    qlens: &[usize],
    chunk: usize,
) -> u64 {
    check_kernel(KernelChoice::Auto, pipeline, backend, gpus, streams, order, n, long, qlens, chunk)
}

/// The kernel `choice` resolves to where it is not auto.
fn expected_kernel(choice: KernelChoice) -> Option<KernelKind> {
    match choice {
        KernelChoice::Auto => None,
        KernelChoice::Portable => Some(KernelKind::Portable),
        KernelChoice::Dpx => Some(KernelKind::Dpx),
    }
}

/// Runs the search with kernel `kernel` and compares every TSV score with the
/// reference; returns the outcome's score digest.
#[allow(clippy::too_many_arguments)]
fn check_kernel(
    kernel: KernelChoice,
    pipeline: Pipeline,
    backend: Backend,
    gpus: usize,
    streams: usize,
    order: Order,
    n: usize,
    long: usize,
    qlens: &[usize],
    chunk: usize,
) -> u64 {
    let dir = TempDir::new(&format!("e2e{n}-{long}-{chunk}-{pipeline:?}"));
    let dbp = dir.0.join("db.fa");
    let recs = write_db(&dbp, n, long, 7 + n as u64);
    let m = Matrix::blosum62();
    let queries: Vec<Query> = qlens
        .iter()
        .enumerate()
        .map(|(i, &l)| Query { id: format!("q{l}"), codes: m.encode(&random_query(l, i as u64)).unwrap() })
        .collect();
    let index = if matches!(pipeline, Pipeline::Prepared | Pipeline::PreparedStreamed) {
        let prepared = dir.0.join("db.cadb");
        prepared::make(&dbp, &prepared, &m, false).unwrap();
        let index = DbIndex::open(&prepared, &m, chunk).unwrap();
        assert!(index.prepared.is_some());
        index
    } else {
        DbIndex::build(&dbp, &m, chunk).unwrap()
    };
    assert_eq!(index.sequences as usize, n);
    let out = dir.0.join("hits.tsv");
    let streamed = matches!(pipeline, Pipeline::Streamed | Pipeline::PreparedStreamed);
    let placement = if streamed { DbPlacement::Streamed } else { DbPlacement::Auto };
    let opt = Options { out: Some(out.clone()), kernel, placement, ..test_options(backend, gpus, streams, order, 5) };
    let (hits, digest) = match pipeline {
        Pipeline::Chariot | Pipeline::Prepared | Pipeline::Streamed | Pipeline::PreparedStreamed => {
            let o = search::search(&index, &m, &queries, &opt).unwrap();
            assert!(expected_kernel(kernel).is_none_or(|k| k == o.kernel), "{kernel:?} ran {:?}", o.kernel);
            // The DPX kernel aligns queries of similar lengths in pairs.
            let profiles: Vec<Profile> = queries.iter().map(|q| Profile::new(&q.codes, &m).unwrap()).collect();
            let pairs =
                if o.kernel == KernelKind::Dpx && queries.len() > 1 { pair_queries(&profiles).0.len() } else { 0 };
            assert_eq!(o.query_pairs, pairs);
            // The default keeps a database this small on the GPUs: every chunk uploaded
            // once, then searched where it was loaded.
            match &o.load {
                Some(load) => {
                    assert!(!streamed, "{pipeline:?} loaded the database to the GPUs");
                    let bytes: u64 = index.chunks.iter().map(|c| c.packed_bytes() as u64).sum();
                    assert_eq!(load.bytes, bytes);
                    assert_eq!(load.report.tasks, index.chunks.len());
                    // No chunk crossed the host link again in the search: its downloads
                    // are the profiles' (a chunk's piece fetched from another GPU crosses
                    // no host link: its record counts 0 bytes).
                    let mut profiles = search::Profiles::new(&queries, &m).unwrap();
                    profiles.pair_up(o.kernel);
                    let prof = profiles.bytes.len() as u64;
                    for r in o.report.records.iter().filter(|r| r.stage == chariot::Stage::Download) {
                        assert!(r.bytes == prof || r.bytes == 0, "task {} downloaded {} bytes", r.task, r.bytes);
                    }
                }
                None => assert!(streamed, "{pipeline:?} streamed the database"),
            }
            (o.hits, o.digest)
        }
        Pipeline::Hand(readers) => {
            let o = hand::search(&index, &m, &queries, &opt, readers).unwrap();
            assert!(expected_kernel(kernel).is_none_or(|k| k == o.kernel), "{kernel:?} ran {:?}", o.kernel);
            let want = if opt.backend == Backend::Cuda {
                chariot_inorder::InOrderDevice::Cuda { ordinal: 0 }
            } else {
                chariot_inorder::InOrderDevice::CpuTwin
            };
            assert_eq!(o.device, want);
            // The TSV is written in file order, by the main thread: chunk by chunk,
            // each chunk's rows query by query.
            let text = std::fs::read_to_string(&out).unwrap();
            let rows: Vec<(&str, &str)> = text
                .lines()
                .skip(1)
                .map(|l| {
                    let mut f = l.split('\t');
                    (f.next().unwrap(), f.next().unwrap())
                })
                .collect();
            let mut want = Vec::new();
            for c in &index.chunks {
                for q in &queries {
                    for r in &recs[c.first_seq as usize..c.first_seq as usize + c.nseq] {
                        want.push((q.id.as_str(), r.0.as_str()));
                    }
                }
            }
            assert_eq!(rows, want);
            (o.hits, o.digest)
        }
    };
    let text = std::fs::read_to_string(&out).unwrap();
    let mut got: HashMap<(String, String), i64> = HashMap::new();
    for line in text.lines().skip(1) {
        let v: Vec<&str> = line.split('\t').collect();
        assert!(got.insert((v[0].to_string(), v[1].to_string()), v[2].parse().unwrap()).is_none(), "dup {line}");
    }
    assert_eq!(got.len(), n * queries.len());
    for q in &queries {
        let mut all = Vec::new();
        for (k, (id, s)) in recs.iter().enumerate() {
            let want = gotoh(&q.codes, &m.encode(s).unwrap(), &m, 11, 1);
            assert_eq!(got[&(q.id.clone(), id.clone())], want, "query {} subject {id} (length {})", q.id, s.len());
            all.push((want as i32, k as u64));
        }
        all.sort_by_key(|&(s, k)| (std::cmp::Reverse(s), k));
        let top: Vec<(i32, u64)> =
            hits[queries.iter().position(|x| x.id == q.id).unwrap()].iter().map(|h| (h.score, h.seq)).collect();
        assert_eq!(top, all[..5.min(n)].to_vec());
    }
    digest
}

/// Every score equals the reference, on FASTA and on the database prepared by `makedb`:
/// sorted by length, every score still equals the reference under its subject's original
/// name, the top hits are the FASTA search's (ties in file order), and so is the digest.
#[test]
fn every_score_matches_gotoh_on_sim() {
    let sim = || Backend::SimWith(SimProfile::instant());
    let fasta = check(Pipeline::Chariot, sim(), 2, 3, Order::LargestFirst, 2000, 3000, &[1, 37, 130], 97);
    let prepared = check(Pipeline::Prepared, sim(), 2, 3, Order::LargestFirst, 2000, 3000, &[1, 37, 130], 97);
    // Queries that pair (200 with 130, 40 with 37; 1 alone), as FASTA and prepared.
    let paired = [1, 37, 40, 130, 200];
    let a = check(Pipeline::Chariot, sim(), 1, 3, Order::LargestFirst, 700, 3000, &paired, 97);
    assert_eq!(check(Pipeline::Prepared, sim(), 1, 3, Order::LargestFirst, 700, 3000, &paired, 97), a);
    // Runs of several queries (one pair of runs: 700, 260, 129 | 450, 300, 150).
    let runs = [129, 150, 260, 300, 450, 700];
    check(Pipeline::Prepared, sim(), 1, 3, Order::LargestFirst, 300, 3000, &runs, 97);
    assert_eq!(prepared, fasta);
    // The database streamed, as before it was kept on the GPUs: the same scores.
    let streamed = check(Pipeline::Streamed, sim(), 2, 3, Order::LargestFirst, 2000, 3000, &[1, 37, 130], 97);
    assert_eq!(streamed, fasta);
    let prepared_streamed =
        check(Pipeline::PreparedStreamed, sim(), 2, 3, Order::LargestFirst, 2000, 3000, &[1, 37, 130], 97);
    assert_eq!(prepared_streamed, fasta);
    // Auto is the DPX kernel on sim; the portable one computes the same scores.
    let portable = check_kernel(
        KernelChoice::Portable,
        Pipeline::Chariot,
        sim(),
        1,
        2,
        Order::Fcfs,
        2000,
        3000,
        &[1, 37, 130],
        97,
    );
    assert_eq!(portable, fasta);
}

/// Gotoh's recurrence as [`gotoh`], with two rows instead of full matrices: for the
/// long alignments whose scores pass 16 bits.
fn gotoh_linear(query: &[u8], subject: &[u8], m: &Matrix, open: i64, extend: i64) -> i64 {
    const NEG: i64 = i64::MIN / 4;
    let cols = subject.len() + 1;
    let (mut h_prev, mut f_prev) = (vec![0i64; cols], vec![NEG; cols]);
    let (mut h, mut f) = (vec![0i64; cols], vec![NEG; cols]);
    let mut best = 0;
    for &q in query {
        let mut e = NEG;
        h[0] = 0;
        for j in 1..cols {
            e = std::cmp::max(e - extend, h[j - 1] - open - extend);
            f[j] = std::cmp::max(f_prev[j] - extend, h_prev[j] - open - extend);
            let diag = h_prev[j - 1] + m.score(q, subject[j - 1]) as i64;
            h[j] = [0, diag, e, f[j]].into_iter().max().unwrap();
            best = best.max(h[j]);
        }
        std::mem::swap(&mut h, &mut h_prev);
        std::mem::swap(&mut f, &mut f_prev);
    }
    best
}

/// BLOSUM62 with every score times `k` (BLOSUM62 itself for 1).
fn blosum62_times(k: i32) -> Matrix {
    let b = Matrix::blosum62();
    let n = b.letters.len();
    let mut text: String = b.letters.iter().map(|&l| format!("  {}", l as char)).collect::<String>() + "\n";
    for a in 0..n {
        text += &format!("{}", b.letters[a] as char);
        text += &(0..n).map(|c| format!(" {}", b.scores[a][c] as i32 * k)).collect::<String>();
        text += "\n";
    }
    Matrix::parse("BLOSUM62 x k", &text).unwrap()
}

/// Scores past what 16 bits hold: a query of high-scoring residues (W, C, H, Y, P, F;
/// 4400 of them with BLOSUM62, `scale` = 1; 440 with BLOSUM62 × 10, which gives the same
/// scores in a hundredth of the cells, for the sim test in debug builds) against a
/// database holding it, a copy with an insertion, prefixes just under and just over the
/// DPX kernel's threshold (32767 − the largest score), and short random records,
/// searched with a short query too, on a FASTA database and a prepared one. Every score
/// equals the two-row Gotoh; the DPX kernel re-ran in 32 bits exactly the (query,
/// subject) pairs at or above the threshold (its twin emulates the 16-bit arithmetic,
/// so the re-pass path runs on sim too); the portable kernel re-ran none; same digest.
fn check_past_16_bits(backend: Backend, kernels: &[KernelChoice], scale: i32) {
    let dir = TempDir::new(&format!("past16-{}-{scale}", kernels.len()));
    let m = blosum62_times(scale);
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let strong = b"WCHYPF";
    let long: Vec<u8> = (0..4400 / scale).map(|_| strong[rng.random_range(0..strong.len())]).collect();
    let short = random_query(50, 3);
    let sat = Profile::new(&m.encode(&long).unwrap(), &m).unwrap().sat();
    assert_eq!(sat, 32767 - 11 * scale);
    // The longest prefix of `long` whose diagonal stays under / the shortest that reaches the threshold.
    let diag =
        |k: usize| long[..k].iter().map(|&c| m.score(m.code[c as usize], m.code[c as usize]) as i64).sum::<i64>();
    let under = (1..long.len()).take_while(|&k| diag(k) < sat as i64 - 40).last().unwrap();
    let over = (1..long.len()).find(|&k| diag(k) >= sat as i64).unwrap();
    let mut inserted = long.clone();
    inserted.splice(long.len() / 2..long.len() / 2, b"GGAGS".iter().copied());
    let mut recs: Vec<(String, Vec<u8>)> = vec![
        ("same".into(), long.clone()),
        ("inserted".into(), inserted),
        ("under".into(), long[..under].to_vec()),
        ("over".into(), long[..over].to_vec()),
    ];
    for i in 0..21 {
        let len = rng.random_range(0..300);
        recs.push((format!("r{i}"), (0..len).map(|_| AA[rng.random_range(0..20)]).collect()));
    }
    let text: String = recs.iter().map(|(id, s)| format!(">{id}\n{}\n", std::str::from_utf8(s).unwrap())).collect();
    let fa = dir.0.join("db.fa");
    std::fs::write(&fa, text).unwrap();
    let cadb = dir.0.join("db.cadb");
    prepared::make(&fa, &cadb, &m, false).unwrap();
    // "again" (the inserted copy as a query) pairs with "long" in the DPX kernel.
    let queries = vec![
        Query { id: "long".into(), codes: m.encode(&long).unwrap() },
        Query { id: "short".into(), codes: m.encode(&short).unwrap() },
        Query { id: "again".into(), codes: m.encode(&recs[1].1).unwrap() },
    ];
    let mut want: HashMap<(String, String), i64> = HashMap::new();
    for q in &queries {
        for (id, s) in &recs {
            want.insert((q.id.clone(), id.clone()), gotoh_linear(&q.codes, &m.encode(s).unwrap(), &m, 11, 1));
            if scale == 1 && s.len() < 400 {
                assert_eq!(want[&(q.id.clone(), id.clone())], gotoh(&q.codes, &m.encode(s).unwrap(), &m, 11, 1));
            }
        }
    }
    let score = |r: &str| want[&("long".to_string(), r.to_string())];
    assert!(score("same") > 32767 && score("inserted") > 32767, "{} {}", score("same"), score("inserted"));
    assert!(score("under") < sat as i64 && (sat as i64..=32767).contains(&score("over")));
    assert_eq!(want.iter().filter(|(k, &v)| k.0 == "long" && v >= sat as i64).count(), 3);
    let sats: HashMap<String, i64> =
        queries.iter().map(|q| (q.id.clone(), Profile::new(&q.codes, &m).unwrap().sat() as i64)).collect();
    let at_or_over = want.iter().filter(|(k, &v)| v >= sats[&k.0]).count() as u64;
    assert!(want.iter().filter(|(k, &v)| k.0 == "again" && v >= sats[&k.0]).count() >= 2);
    let mut digests = Vec::new();
    for &kernel in kernels {
        for db in [&fa, &cadb] {
            let index = DbIndex::open(db, &m, 3).unwrap();
            let out = dir.0.join("hits.tsv");
            let opt = Options {
                out: Some(out.clone()),
                kernel,
                ..test_options(backend.clone(), 1, 2, Order::LargestFirst, 3)
            };
            let o = search::search(&index, &m, &queries, &opt).unwrap();
            assert!(expected_kernel(kernel).is_none_or(|k| k == o.kernel), "{kernel:?} ran {:?}", o.kernel);
            let text = std::fs::read_to_string(&out).unwrap();
            let mut rows = 0;
            for line in text.lines().skip(1) {
                let v: Vec<&str> = line.split('\t').collect();
                let got: i64 = v[2].parse().unwrap();
                assert_eq!(got, want[&(v[0].to_string(), v[1].to_string())], "{kernel:?} {line}");
                rows += 1;
            }
            assert_eq!(rows, recs.len() * queries.len());
            let expect = if o.kernel == KernelKind::Dpx { at_or_over } else { 0 };
            assert_eq!(o.repassed, expect, "{kernel:?} ran {:?}", o.kernel);
            assert_eq!(o.query_pairs, usize::from(o.kernel == KernelKind::Dpx), "long and again pair");
            assert_eq!(o.hits[0][0].score as i64, want[&("long".to_string(), "same".to_string())]);
            digests.push(o.digest);
        }
        // The hand pipeline, DPX kernel or not, gives the same scores.
        let index = DbIndex::open(&cadb, &m, 3).unwrap();
        let opt = Options { kernel, ..test_options(backend.clone(), 1, 2, Order::Fcfs, 3) };
        let o = hand::search(&index, &m, &queries, &opt, 2).unwrap();
        assert_eq!(o.repassed, if o.kernel == KernelKind::Dpx { at_or_over } else { 0 });
        digests.push(o.digest);
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:x?}");
}

#[test]
fn scores_past_16_bits_match_gotoh_on_sim() {
    check_past_16_bits(Backend::SimWith(SimProfile::instant()), &[KernelChoice::Auto, KernelChoice::Portable], 10);
}

/// A generated database searched as FASTA and as a prepared database: the same TSV rows
/// (rows come chunk by chunk in completion order, so both are compared sorted), the same
/// top hits and the same digest, with chariot and with the hand pipeline.
#[test]
fn generated_database_searched_as_fasta_and_prepared_gives_the_same_tsv() {
    let dir = TempDir::new("fasta-vs-prepared");
    let (fa, cadb, qf) = (dir.0.join("db.fa"), dir.0.join("db.cadb"), dir.0.join("q.fa"));
    let shape = generate::Shape { sequences: 3000, mean: 200.0, sigma: 0.7, min: 2, max: 4000, seed: 5, sorted: false };
    generate::database(&fa, shape).unwrap();
    generate::queries(&qf, &[20, 150], 5).unwrap();
    let m = Matrix::blosum62();
    let queries = commands::load_queries(&qf, &m).unwrap();
    let s = prepared::make(&fa, &cadb, &m, false).unwrap();
    assert_eq!(s.layout.sequences, 3000);
    let sim = || Backend::SimWith(SimProfile::instant());
    let mut runs = Vec::new();
    for (k, db) in [&fa, &cadb, &cadb].into_iter().enumerate() {
        let index = DbIndex::open(db, &m, 256).unwrap();
        assert_eq!(index.prepared.is_some(), k > 0);
        let out = dir.0.join(format!("hits{k}.tsv"));
        let opt = Options { out: Some(out.clone()), ..test_options(sim(), 1, 2, Order::LargestFirst, 10) };
        let (hits, digest) = if k < 2 {
            let o = search::search(&index, &m, &queries, &opt).unwrap();
            (o.hits, o.digest)
        } else {
            let o = hand::search(&index, &m, &queries, &opt, 2).unwrap();
            (o.hits, o.digest)
        };
        let text = std::fs::read_to_string(&out).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        assert_eq!(lines[0], "query\tsubject\tscore");
        assert_eq!(lines.len(), 1 + 3000 * 2);
        lines.sort();
        runs.push((lines, hits, digest));
    }
    for r in &runs[1..] {
        assert!(r.0 == runs[0].0, "the TSV rows differ");
        assert_eq!(r.1, runs[0].1, "top hits");
        assert_eq!(r.2, runs[0].2, "digest");
    }
}

#[test]
fn long_query_crosses_profile_tiles_on_sim() {
    check(Pipeline::Chariot, Backend::SimWith(SimProfile::instant()), 1, 2, Order::Fcfs, 60, 1500, &[1100], 16);
}

#[test]
fn hand_pipeline_matches_gotoh_and_chariot_on_the_twin() {
    let sim = || Backend::SimWith(SimProfile::instant());
    let chariot = check(Pipeline::Chariot, sim(), 1, 2, Order::LargestFirst, 300, 1500, &[1, 37, 130], 29);
    for (streams, readers) in [(2, 1), (2, 2), (3, 5)] {
        let hand = check(Pipeline::Hand(readers), sim(), 1, streams, Order::Fcfs, 300, 1500, &[1, 37, 130], 29);
        assert_eq!(hand, chariot, "S = {streams}, R = {readers}");
    }
}

/// Test options: the given machine, streams and order, `top` hits, stage depth 1, one
/// kernel at a time, no output file.
fn test_options(backend: Backend, gpus: usize, streams: usize, order: Order, top: usize) -> Options {
    Options {
        backend,
        gpus,
        streams: Some(streams),
        order,
        stage_depth: Some(1),
        kernels: Some(1),
        fills: None,
        adapt: false,
        slots: 0,
        top,
        gaps: Gaps { open: 11, extend: 1 },
        out: None,
        progress: false,
        sim_gcups: 300.0,
        kernel: Default::default(),
        placement: Default::default(),
        query_pairs: true,
    }
}

/// A database indexed, then rewritten under the index: what a search must notice.
fn changed_database(name: &str) -> (TempDir, DbIndex, Matrix) {
    let dir = TempDir::new(name);
    let dbp = dir.0.join("db.fa");
    write_db(&dbp, 300, 100, 3);
    let m = Matrix::blosum62();
    let index = DbIndex::build(&dbp, &m, 50).unwrap();
    std::fs::write(&dbp, ">x\nAC\n").unwrap();
    (dir, index, m)
}

#[test]
fn hand_pipeline_reports_a_changed_file() {
    let (_dir, index, m) = changed_database("hand-changed");
    let opt = test_options(Backend::SimWith(SimProfile::instant()), 1, 2, Order::Fcfs, 3);
    let q = [Query { id: "q".into(), codes: vec![0, 1, 2] }];
    let e = hand::search(&index, &m, &q, &opt, 2).unwrap_err();
    assert!(e.contains("chunk 0") && e.contains("changed"), "{e}");
}

#[test]
fn file_changed_under_the_search_is_an_error_not_a_hang() {
    let (_dir, index, m) = changed_database("changed");
    let opt = test_options(Backend::SimWith(SimProfile::instant()), 1, 2, Order::LargestFirst, 3);
    let q = [Query { id: "q".into(), codes: vec![0, 1, 2] }];
    let e = search::search(&index, &m, &q, &opt).unwrap_err();
    assert!(e.contains("changed") || e.contains("FASTA") || e.contains("sequence data"), "{e}");
}

#[test]
fn reference_known_values() {
    let m = Matrix::blosum62();
    let enc = |s: &[u8]| m.encode(s).unwrap();
    for (q, s) in [(&b"HEAGAWGHEE"[..], &b"PAWHEAE"[..]), (b"WWWWW", b"WWAAAWW"), (b"A", b""), (b"MKVLAAGW", b"KVLGW")]
    {
        assert_eq!(gotoh_linear(&enc(q), &enc(s), &m, 11, 1), gotoh(&enc(q), &enc(s), &m, 11, 1));
        assert_eq!(gotoh_linear(&enc(q), &enc(s), &m, 3, 2), gotoh(&enc(q), &enc(s), &m, 3, 2));
    }
    let q = random_query(300, 9);
    let s = random_query(250, 10);
    assert_eq!(gotoh_linear(&enc(&q), &enc(&s), &m, 11, 1), gotoh(&enc(&q), &enc(&s), &m, 11, 1));
    let m10 = blosum62_times(10);
    assert_eq!(m10.scores[17][17], 110);
    assert_eq!(gotoh(&enc(&q), &enc(&s), &m10, 110, 10), 10 * gotoh(&enc(&q), &enc(&s), &m, 11, 1));
    let enc = |s: &[u8]| m.encode(s).unwrap();
    assert_eq!(gotoh(&enc(b"WWWWW"), &enc(b"WWAAAWW"), &m, 11, 1), 30);
    assert_eq!(gotoh(&enc(b"A"), &enc(b""), &m, 11, 1), 0);
    assert_eq!(
        gotoh(&enc(b"HEAGAWGHEE"), &enc(b"PAWHEAE"), &m, 11, 1),
        gotoh(&enc(b"PAWHEAE"), &enc(b"HEAGAWGHEE"), &m, 11, 1)
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_score_matches_gotoh_on_gpu() {
    check(Pipeline::Chariot, Backend::Cuda, 1, 4, Order::LargestFirst, 4000, 6000, &[1, 37, 130, 511], 512);
    check(Pipeline::Chariot, Backend::Cuda, 1, 2, Order::Fcfs, 200, 3000, &[1100, 2500], 64);
    check(Pipeline::Prepared, Backend::Cuda, 1, 4, Order::LargestFirst, 4000, 6000, &[1, 37, 130, 511], 512);
    check(Pipeline::Prepared, Backend::Cuda, 1, 2, Order::Fcfs, 200, 3000, &[1100, 2500], 64);
    check(Pipeline::Streamed, Backend::Cuda, 1, 4, Order::LargestFirst, 4000, 6000, &[1, 37, 130, 511], 512);
    check(Pipeline::PreparedStreamed, Backend::Cuda, 1, 2, Order::Fcfs, 200, 3000, &[1100, 2500], 64);
}

/// Every score of the DPX kernel (chosen explicitly: on a GPU before sm_90 its DPX
/// instructions are emulated) and of the portable kernel equals the reference, on the
/// GPU, including subjects whose scores pass 16 bits (the DPX kernel's 32-bit re-pass).
#[test]
#[ignore = "needs a CUDA GPU"]
fn dpx_and_portable_kernels_match_gotoh_on_gpu() {
    check_past_16_bits(Backend::Cuda, &[KernelChoice::Dpx, KernelChoice::Portable, KernelChoice::Auto], 1);
    check_past_16_bits(Backend::Cuda, &[KernelChoice::Dpx], 10);
    for kernel in [KernelChoice::Dpx, KernelChoice::Portable] {
        // Pairs in the DPX kernel: runs 511, 200 | 500, 130; 40 | 37; 16 | 1 (17 alone).
        let qs = [1, 16, 17, 37, 40, 130, 200, 500, 511];
        let a = check_kernel(kernel, Pipeline::Chariot, Backend::Cuda, 1, 4, Order::LargestFirst, 4001, 6000, &qs, 511);
        let b =
            check_kernel(kernel, Pipeline::Prepared, Backend::Cuda, 1, 4, Order::LargestFirst, 4001, 6000, &qs, 511);
        assert_eq!(a, b);
        let long = [1100, 2500];
        check_kernel(kernel, Pipeline::Chariot, Backend::Cuda, 1, 2, Order::Fcfs, 201, 3000, &long, 63);
        // A pair across profile tiles (1280 rows: 5 of the pair's, 2 of the int8 re-pass's).
        check_kernel(kernel, Pipeline::Chariot, Backend::Cuda, 1, 2, Order::Fcfs, 201, 3000, &[1100, 1000], 63);
        // Runs of up to 5 queries, ends and starts in both halves at different passes.
        let runs = [129, 150, 256, 257, 300, 513, 700, 1024, 1100, 1500];
        check_kernel(kernel, Pipeline::Prepared, Backend::Cuda, 1, 2, Order::Fcfs, 1001, 3000, &runs, 63);
        check_kernel(kernel, Pipeline::Hand(2), Backend::Cuda, 1, 2, Order::Fcfs, 201, 3000, &long, 63);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn hand_pipeline_matches_gotoh_and_chariot_on_gpu() {
    let qs = [1, 37, 130, 511];
    let chariot = check(Pipeline::Chariot, Backend::Cuda, 1, 4, Order::LargestFirst, 4000, 6000, &qs, 512);
    for (streams, readers) in [(2, 1), (2, 2), (4, 4), (3, 2)] {
        let hand = check(Pipeline::Hand(readers), Backend::Cuda, 1, streams, Order::Fcfs, 4000, 6000, &qs, 512);
        assert_eq!(hand, chariot, "S = {streams}, R = {readers}");
    }
    let long = [1100, 2500];
    let chariot = check(Pipeline::Chariot, Backend::Cuda, 1, 2, Order::Fcfs, 200, 3000, &long, 64);
    assert_eq!(check(Pipeline::Hand(2), Backend::Cuda, 1, 2, Order::Fcfs, 200, 3000, &long, 64), chariot);
}
