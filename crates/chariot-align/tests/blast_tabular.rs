//! `search --tabular` against BLAST+: our BLAST tabular output on a small fixture equals
//! what `blastp` 2.12.0+ printed for it (its output is committed, so this runs
//! everywhere); where blastp is installed (CI installs Debian's ncbi-blast+), every
//! combination of `--comp-based-stats 0|1` and `--seg no|yes` is run against blastp
//! itself, on the fixture and on generated pairs (`options_agree_with_blastp`).
//!
//! Fixture (`tests/data/blast/`): `db.fa`, 45 random proteins (Robinson–Robinson
//! residue frequencies) and, for each of the 3 queries of `q.fa`, 5 relatives (the query
//! mutated at 10…60% with short indels, between random flanks); `blastp.m8` is
//!
//! ```text
//! makeblastdb -in db.fa -dbtype prot -out db
//! blastp -query q.fa -db db -matrix BLOSUM62 -gapopen 11 -gapextend 1 \
//!   -comp_based_stats 0 -seg no -max_target_seqs 10 -max_hsps 1 \
//!   -outfmt "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore score"
//! ```
//!
//! (the 12 columns of `-outfmt 6` and BLAST's raw score). For every pair both report
//! whose raw scores are equal, every column is equal: the alignment (pident, length,
//! mismatch, gapopen, coordinates), the bit score and the E-value as printed. Where
//! BLAST's heuristic found a lower score than Smith-Waterman's, ours must be higher.

use chariot::sim::SimProfile;
use chariot::{Backend, Order};
use chariot_align::commands::load_queries;
use chariot_align::db::DbIndex;
use chariot_align::matrix::Matrix;
use chariot_align::search::{self, Options};
use chariot_align::sw::Gaps;
use chariot_align::tabular;
use std::collections::HashMap;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/blast").join(name)
}

#[test]
fn tabular_output_equals_blastp() {
    let m = Matrix::blosum62();
    let gaps = Gaps { open: 11, extend: 1 };
    let queries = load_queries(&data("q.fa"), &m).unwrap();
    let index = DbIndex::open(&data("db.fa"), &m, 16).unwrap();
    let opt = sim_options(gaps);
    let o = search::search(&index, &m, &queries, &opt).unwrap();
    let (text, rows) = tabular::text(&index, &m, &queries, &o.hits, gaps, Default::default()).unwrap();
    assert_eq!(rows, text.lines().count());
    let ours: HashMap<(String, String), Vec<String>> = text
        .lines()
        .map(|l| {
            let f: Vec<String> = l.split('\t').map(String::from).collect();
            assert_eq!(f.len(), 12, "{l}");
            ((f[0].clone(), f[1].clone()), f)
        })
        .collect();
    let score: HashMap<(String, String), i32> = queries
        .iter()
        .zip(&o.hits)
        .flat_map(|(q, hs)| hs.iter().map(move |h| ((q.id.clone(), h.id.clone()), h.score)))
        .collect();
    let blast = std::fs::read_to_string(data("blastp.m8")).unwrap();
    let (mut equal, mut lower) = (0, 0);
    for l in blast.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        let key = (f[0].to_string(), f[1].to_string());
        let (Some(ours), Some(&s)) = (ours.get(&key), score.get(&key)) else { continue };
        let blast_score: i32 = f[12].parse().unwrap();
        if blast_score == s {
            assert_eq!(ours[..], f[..12], "{key:?}");
            equal += 1;
        } else {
            assert!(s > blast_score, "{key:?}: Smith-Waterman's {s} below BLAST's {blast_score}");
            lower += 1;
        }
    }
    assert!(equal >= 24 && lower == 0, "{equal} pairs equal, {lower} where BLAST's score is lower");
}

/// Tabular output needs statistics: another matrix or gap cost is an error naming
/// what is supported (the score-only search needs none).
#[test]
fn unsupported_statistics_are_named() {
    let m = Matrix::blosum62();
    let queries = load_queries(&data("q.fa"), &m).unwrap();
    let index = DbIndex::open(&data("db.fa"), &m, 16).unwrap();
    let e =
        tabular::text(&index, &m, &queries, &[vec![], vec![], vec![]], Gaps { open: 5, extend: 2 }, Default::default())
            .unwrap_err();
    assert!(e.contains("5/2") && e.contains("11/1") && e.contains("6/2"), "{e}");
}

/// A data set: the query and database FASTA files.
struct Data {
    q: PathBuf,
    db: PathBuf,
}

/// Generated pairs for the options' comparisons: 8 queries of 60 to 200 random
/// residues, 5 of them with a low-complexity stretch (a run of one residue, a short
/// motif repeated, a stretch of three letters) that SEG masks, and a database of 60
/// random proteins, 4 relatives of each query (mutated 10–50% with short indels between
/// random flanks; a relative keeps the stretch, as homologues do) and 6 proteins of
/// biased composition (rich in a few residues).
fn generated(dir: &std::path::Path) -> Data {
    use rand::{Rng, SeedableRng};
    let aa = b"ACDEFGHIKLMNPQRSTVWY";
    let mut rng = rand::rngs::StdRng::seed_from_u64(2001);
    let random =
        |n: usize, rng: &mut rand::rngs::StdRng| -> Vec<u8> { (0..n).map(|_| aa[rng.random_range(0..20)]).collect() };
    let (mut q, mut db) = (String::new(), String::new());
    for k in 0..8 {
        let mut s = random(rng.random_range(60..200), &mut rng);
        let at = rng.random_range(0..s.len());
        let stretch: Vec<u8> = match k % 8 {
            0 => vec![aa[rng.random_range(0..20)]; rng.random_range(12..25)],
            1 | 5 => {
                let motif = random(rng.random_range(2..4), &mut rng);
                motif.iter().cycle().take(rng.random_range(15..30)).copied().collect()
            }
            2 | 6 => {
                let few = random(3, &mut rng);
                (0..rng.random_range(15..30)).map(|_| few[rng.random_range(0..3)]).collect()
            }
            _ => Vec::new(),
        };
        s.splice(at..at, stretch);
        q += &format!(">g{k}\n{}\n", String::from_utf8_lossy(&s));
        for r in 0..4 {
            let rate = [0.1, 0.25, 0.4, 0.5][r];
            let mut m = random(rng.random_range(0..20), &mut rng);
            for &c in &s {
                let x: f64 = rng.random();
                if x < rate * 0.1 {
                    continue;
                } else if x < rate * 0.2 {
                    m.extend(random(rng.random_range(1..4), &mut rng));
                    m.push(c);
                } else if x < rate {
                    m.push(aa[rng.random_range(0..20)]);
                } else {
                    m.push(c);
                }
            }
            m.extend(random(rng.random_range(0..20), &mut rng));
            db += &format!(">g{k}_{r}\n{}\n", String::from_utf8_lossy(&m));
        }
    }
    for k in 0..60 {
        db += &format!(">r{k:02}\n{}\n", String::from_utf8_lossy(&random(rng.random_range(40..300), &mut rng)));
    }
    for k in 0..6 {
        let few = random(4, &mut rng);
        let s: Vec<u8> = (0..rng.random_range(80..200))
            .map(|_| if rng.random_bool(0.5) { few[rng.random_range(0..4)] } else { aa[rng.random_range(0..20)] })
            .collect();
        db += &format!(">b{k}\n{}\n", String::from_utf8_lossy(&s));
    }
    let data = Data { q: dir.join("q.fa"), db: dir.join("db.fa") };
    std::fs::write(&data.q, q).unwrap();
    std::fs::write(&data.db, db).unwrap();
    data
}

/// Our tabular lines for `data` with `stats` (keyed by query and subject), and the
/// search's raw scores.
fn ours(data: &Data, stats: tabular::Statistics) -> HashMap<(String, String), Vec<String>> {
    let m = if stats.seg { chariot_align::seg::blast_x(&Matrix::blosum62()) } else { Matrix::blosum62() };
    let gaps = Gaps { open: 11, extend: 1 };
    let queries = load_queries(&data.q, &m).unwrap();
    let index = DbIndex::open(&data.db, &m, 16).unwrap();
    let opt = sim_options(gaps);
    let searched = if stats.seg { tabular::mask_queries(&queries, &m).unwrap() } else { queries.clone() };
    let o = search::search(&index, &m, &searched, &opt).unwrap();
    let (text, _) = tabular::text(&index, &m, &queries, &o.hits, gaps, stats).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<String> = l.split('\t').map(String::from).collect();
            ((f[0].clone(), f[1].clone()), f)
        })
        .collect()
}

/// blastp's tabular lines (13 columns, the raw score last) for `data` with `extra`
/// options, or why it cannot be run here.
fn blastp(data: &Data, extra: &[&str]) -> Result<Vec<Vec<String>>, String> {
    use std::process::Command;
    let found = |tool: &str| Command::new(tool).arg("-version").output().is_ok_and(|o| o.status.success());
    if !found("blastp") || !found("makeblastdb") {
        return Err("blastp or makeblastdb is not installed (Debian: apt-get install ncbi-blast+)".into());
    }
    let dir = std::env::temp_dir().join(format!("chariot-align-blastp-{}-{}", std::process::id(), extra.join("")));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let db = dir.join("db");
    let mk = Command::new("makeblastdb")
        .args(["-in", data.db.to_str().unwrap(), "-dbtype", "prot", "-out", db.to_str().unwrap()])
        .output()
        .map_err(|e| e.to_string())?;
    assert!(mk.status.success(), "makeblastdb: {}", String::from_utf8_lossy(&mk.stderr));
    let out = Command::new("blastp")
        .args(["-query", data.q.to_str().unwrap(), "-db", db.to_str().unwrap()])
        .args(["-matrix", "BLOSUM62", "-gapopen", "11", "-gapextend", "1", "-max_target_seqs", "10", "-max_hsps", "1"])
        .args(extra)
        .args([
            "-outfmt",
            "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore score",
        ])
        .output()
        .map_err(|e| e.to_string())?;
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "blastp: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(|l| l.split('\t').map(String::from).collect()).collect())
}

/// How our lines compare with blastp's, over the pairs both report: those equal in
/// every column; those with the same E-value and bit score as printed (the equal ones,
/// and co-optimal alignments placed otherwise in their sequences); those where
/// blastp's alignment scores lower (its X-drop heuristic against Smith-Waterman) and
/// those where it scores higher (none may); and the largest relative E-value and
/// bit-score differences among the pairs whose scores agree.
#[derive(Debug, Default)]
struct Agreement {
    both: usize,
    equal: usize,
    same_score: usize,
    blast_lower: usize,
    blast_higher: Vec<String>,
    max_rel_e: f64,
    max_rel_bits: f64,
}

fn agreement(blast: &[Vec<String>], ours: &HashMap<(String, String), Vec<String>>) -> Agreement {
    let mut a = Agreement::default();
    for f in blast {
        let key = (f[0].clone(), f[1].clone());
        let Some(o) = ours.get(&key) else { continue };
        a.both += 1;
        let num = |s: &str| s.parse::<f64>().unwrap();
        let (eb, eo, bb, bo) = (num(&f[10]), num(&o[10]), num(&f[11]), num(&o[11]));
        if o[..] == f[..12] {
            a.equal += 1;
        }
        if bo > bb {
            a.blast_lower += 1;
        } else if bo < bb {
            a.blast_higher.push(format!("{f:?} vs ours {o:?}"));
        } else {
            if o[10..12] == f[10..12] {
                a.same_score += 1;
            }
            if eb > 0.0 {
                a.max_rel_e = a.max_rel_e.max((eo - eb).abs() / eb);
            }
            a.max_rel_bits = a.max_rel_bits.max((bo - bb).abs() / bb);
        }
    }
    a
}

/// Every option against blastp run with the same options (`-comp_based_stats 0|1`,
/// `-seg no|yes`), on the fixture and on the generated pairs: run where blastp is
/// installed (skipped, saying so, elsewhere). For each combination, every pair both
/// report has blastp's E-value and bit score as printed, unless blastp's alignment
/// scores lower (its X-drop heuristic against Smith-Waterman; never higher), and at
/// least 80% of the lines are equal in every column (the others: co-optimal
/// alignments whose gaps blastp places elsewhere).
#[test]
fn options_agree_with_blastp() {
    let dir = std::env::temp_dir().join(format!("chariot-align-blast-options-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fixture = Data { q: data("q.fa"), db: data("db.fa") };
    let gen = generated(&dir);
    for (name, set) in [("fixture", &fixture), ("generated", &gen)] {
        for (cbs, seg) in [(false, false), (true, false), (false, true), (true, true)] {
            let extra = ["-comp_based_stats", if cbs { "1" } else { "0" }, "-seg", if seg { "yes" } else { "no" }];
            let blast = match blastp(set, &extra) {
                Ok(b) => b,
                Err(why) => {
                    eprintln!("options_agree_with_blastp: skipped: {why}");
                    std::fs::remove_dir_all(&dir).ok();
                    return;
                }
            };
            let a = agreement(&blast, &ours(set, tabular::Statistics { comp_based: cbs, seg }));
            let line = format!(
                "{name}, -comp_based_stats {} -seg {}: {} pairs; {} equal in every column; {} with the same \
                 E-value and bit score (max relative difference {:.1e}, {:.1e}); {} where blastp's alignment scores lower",
                extra[1], extra[3], a.both, a.equal, a.same_score, a.max_rel_e, a.max_rel_bits, a.blast_lower
            );
            eprintln!("{line}");
            assert!(a.blast_higher.is_empty(), "{line}: blastp scores higher: {:#?}", a.blast_higher);
            assert_eq!(a.same_score + a.blast_lower, a.both, "{line}: E-values or bit scores differ");
            assert!(a.equal * 10 >= a.both * 8, "{line}: too few lines equal in every column");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The search options these tests use: one simulated GPU (instant profile), 2 streams,
/// the 10 best hits, gap costs `gaps`.
fn sim_options(gaps: Gaps) -> Options {
    Options {
        backend: Backend::SimWith(SimProfile::instant()),
        gpus: 1,
        streams: Some(2),
        order: Order::LargestFirst,
        stage_depth: None,
        kernels: None,
        fills: None,
        adapt: false,
        slots: 0,
        top: 10,
        gaps,
        out: None,
        progress: false,
        sim_gcups: 300.0,
        kernel: Default::default(),
        placement: Default::default(),
        query_pairs: true,
    }
}
