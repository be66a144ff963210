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
    let (text, rows) = tabular::text(&index, &m, &queries, &o.hits, gaps).unwrap();
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
    let e = tabular::text(&index, &m, &queries, &[vec![], vec![], vec![]], Gaps { open: 5, extend: 2 }).unwrap_err();
    assert!(e.contains("5/2") && e.contains("11/1") && e.contains("6/2"), "{e}");
}
