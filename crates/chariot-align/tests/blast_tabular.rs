//! `search --tabular` against BLAST+: our BLAST tabular output on a small fixture equals
//! what `blastp` 2.12.0+ printed for it (CI has no blastp, so its output is committed).
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
    let opt = Options {
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
    };
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

/// The search and its tabular text with `stats`, on the fixture.
fn ours(stats: tabular::Statistics) -> HashMap<(String, String), Vec<String>> {
    let m = Matrix::blosum62();
    let gaps = Gaps { open: 11, extend: 1 };
    let queries = load_queries(&data("q.fa"), &m).unwrap();
    let index = DbIndex::open(&data("db.fa"), &m, 16).unwrap();
    let opt = Options {
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
    };
    let o = search::search(&index, &m, &queries, &opt).unwrap();
    let (text, _) = tabular::text(&index, &m, &queries, &o.hits, gaps, stats).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<String> = l.split('\t').map(String::from).collect();
            ((f[0].clone(), f[1].clone()), f)
        })
        .collect()
}

/// blastp's tabular lines (13 columns, the raw score last) on the fixture with `extra`
/// options, or why it cannot be run here.
fn blastp(extra: &[&str]) -> Result<Vec<Vec<String>>, String> {
    use std::process::Command;
    let found = |tool: &str| Command::new(tool).arg("-version").output().is_ok_and(|o| o.status.success());
    if !found("blastp") || !found("makeblastdb") {
        return Err("blastp or makeblastdb is not installed (Debian: apt-get install ncbi-blast+)".into());
    }
    let dir = std::env::temp_dir().join(format!("chariot-align-blastp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let db = dir.join("db");
    let mk = Command::new("makeblastdb")
        .args(["-in", data("db.fa").to_str().unwrap(), "-dbtype", "prot", "-out", db.to_str().unwrap()])
        .output()
        .map_err(|e| e.to_string())?;
    assert!(mk.status.success(), "makeblastdb: {}", String::from_utf8_lossy(&mk.stderr));
    let out = Command::new("blastp")
        .args(["-query", data("q.fa").to_str().unwrap(), "-db", db.to_str().unwrap()])
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

/// `--comp-based-stats 1` against `blastp -comp_based_stats 1 -seg no`, run here when
/// blastp is installed (else skipped, saying so). For every pair both report with the
/// same alignment (coordinates, identities, gaps), the bit score is within 2% of
/// blastp's and the E-value within a factor 4, and closer to blastp's than the
/// unadjusted E-value is. (Not every column equal: blastp 2.12's rescaled scores run
/// about 1% below ours, whose cause is not found yet; see docs/align-statistics.md.)
#[test]
fn composition_based_statistics_near_blastp() {
    let blast = match blastp(&["-comp_based_stats", "1", "-seg", "no"]) {
        Ok(b) => b,
        Err(why) => {
            eprintln!("composition_based_statistics_near_blastp: skipped: {why}");
            return;
        }
    };
    let adjusted = ours(tabular::Statistics { comp_based: true });
    let plain = ours(tabular::Statistics::default());
    let (mut compared, mut max_bits, mut max_e, mut closer) = (0, 0.0f64, 0.0f64, 0);
    for f in &blast {
        let key = (f[0].clone(), f[1].clone());
        let Some(a) = adjusted.get(&key) else { continue };
        if a[2..10] != f[2..10] {
            continue;
        }
        let num = |s: &str| s.parse::<f64>().unwrap();
        let (eb, ea) = (num(&f[10]), num(&a[10]));
        let (bb, ba) = (num(&f[11]), num(&a[11]));
        let rel_bits = (ba - bb).abs() / bb;
        let e_factor = (ea.max(1e-300) / eb.max(1e-300)).ln().abs();
        assert!(rel_bits <= 0.02, "{key:?}: bits {ba} vs blastp's {bb}");
        assert!(e_factor <= 4f64.ln(), "{key:?}: E-value {ea} vs blastp's {eb}");
        if let Some(p) = plain.get(&key) {
            let e0 = (num(&p[10]).max(1e-300) / eb.max(1e-300)).ln().abs();
            if e_factor <= e0 {
                closer += 1;
            }
        }
        compared += 1;
        max_bits = max_bits.max(rel_bits);
        max_e = max_e.max(e_factor.exp());
    }
    eprintln!(
        "composition-based statistics: {compared} of blastp's {} pairs with the same alignment; \
         bit scores within {:.2}%, E-values within a factor {max_e:.2}; {closer} closer than without",
        blast.len(),
        100.0 * max_bits
    );
    assert!(compared >= 20, "{compared} pairs compared");
    assert!(closer * 10 >= compared * 9, "{closer} of {compared} closer to blastp's than the unadjusted E-values");
}
