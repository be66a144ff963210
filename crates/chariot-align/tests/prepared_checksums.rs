//! A prepared database's checksums: a damaged byte is an error, never a different score
//! or subject name. A small generated database is prepared (2,817 bytes), then every
//! byte is damaged in turn (one bit flipped, and the byte inverted; all 8 bits for a
//! sample of bytes); each damaged file must either be refused (on opening or when a
//! chunk is read) or read back exactly as the undamaged one, and every one is refused. A deterministic sample of
//! the flips also runs the whole search on the simulated backend, whose hits, TSV and
//! score digest must then be the undamaged search's, or the search must fail.

use chariot::sim::SimProfile;
use chariot::{Backend, Order};
use chariot_align::db::{self, DbIndex};
use chariot_align::matrix::Matrix;
use chariot_align::search::{self, Options, Query};
use chariot_align::sw::Gaps;
use chariot_align::{generate, prepared};
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// Every chunk of the database at `path` as read: (names, residues, lengths, original
/// indices) per chunk, or the first error.
type Chunk = (Vec<String>, Vec<u8>, Vec<u32>, Vec<u64>);

fn read_all(path: &Path, m: &Matrix) -> Result<Vec<Chunk>, String> {
    let index = DbIndex::open(path, m, 7)?;
    index
        .chunks
        .iter()
        .map(|c| db::read_subjects(&index, c, m).map(|(d, seqs)| (d.ids, d.codes, d.lens, seqs)))
        .collect()
}

fn options(out: PathBuf) -> Options {
    Options {
        backend: Backend::SimWith(SimProfile::instant()),
        gpus: 1,
        streams: Some(2),
        order: Order::LargestFirst,
        stage_depth: Some(1),
        kernels: Some(1),
        fills: None,
        adapt: false,
        slots: 0,
        top: 5,
        gaps: Gaps { open: 11, extend: 1 },
        out: Some(out),
        progress: false,
        sim_gcups: 300.0,
        kernel: Default::default(),
        placement: Default::default(),
        query_pairs: true,
    }
}

/// The search's hits, its TSV rows (sorted: chunks finish in any order) and its digest.
type Searched = (Vec<Vec<(i32, String)>>, Vec<String>, u64);

fn run_search(path: &Path, m: &Matrix, queries: &[Query], out: &Path) -> Result<Searched, String> {
    let index = DbIndex::open(path, m, 7)?;
    let o = search::search(&index, m, queries, &options(out.to_path_buf()))?;
    let hits = o.hits.iter().map(|l| l.iter().map(|h| (h.score, h.id.clone())).collect()).collect();
    let mut rows: Vec<String> = std::fs::read_to_string(out).unwrap().lines().map(String::from).collect();
    rows.sort();
    Ok((hits, rows, o.digest))
}

#[test]
fn every_flipped_byte_is_refused_or_harmless() {
    let dir = TempDir(std::env::temp_dir().join(format!("chariot-align-flips-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let (fa, cadb, bad) = (dir.0.join("db.fa"), dir.0.join("db.cadb"), dir.0.join("bad.cadb"));
    let shape = generate::Shape { sequences: 40, mean: 30.0, sigma: 0.6, min: 1, max: 120, seed: 11, sorted: false };
    generate::database(&fa, shape).unwrap();
    let m = Matrix::blosum62();
    prepared::make(&fa, &cadb, &m, false).unwrap();
    let good = std::fs::read(&cadb).unwrap();
    let want = read_all(&cadb, &m).unwrap();
    let queries: Vec<Query> = [(b"MKVLAAGIVGLLLAWHQ".as_slice(), "q1"), (b"WWCCPHKRDE".as_slice(), "q2")]
        .iter()
        .map(|(s, id)| Query { id: id.to_string(), codes: m.encode(s).unwrap() })
        .collect();
    let tsv = dir.0.join("hits.tsv");
    let want_search = run_search(&cadb, &m, &queries, &tsv).unwrap();
    assert!(want_search.0.iter().all(|l| !l.is_empty()));

    // Every byte with one bit flipped (bit i mod 8) and inverted, and all 8 bits of a
    // deterministic sample of 128 bytes, each read back through the reader the search
    // uses. (All 8 bits of every byte, 25,353 files, were refused too: 85 s here, too
    // long for every run.)
    let mut rng = rand::rngs::StdRng::seed_from_u64(2026);
    let sample: Vec<usize> = (0..128).map(|_| rng.random_range(0..good.len())).collect();
    let (mut refused, mut harmless, mut files) = (0usize, 0usize, 0usize);
    for i in 0..good.len() {
        let masks: Vec<u8> = if sample.contains(&i) {
            (0..8).map(|k| 1u8 << k).chain([0xff]).collect()
        } else {
            vec![1 << (i % 8), 0xff]
        };
        for mask in masks {
            files += 1;
            let mut data = good.clone();
            data[i] ^= mask;
            std::fs::write(&bad, &data).unwrap();
            match read_all(&bad, &m) {
                Err(e) => {
                    assert!(e.contains("bad.cadb"), "byte {i} ^ {mask:#04x}: the error names no file: {e}");
                    refused += 1;
                }
                Ok(got) => {
                    assert!(got == want, "byte {i} ^ {mask:#04x}: read back differently without an error");
                    harmless += 1;
                }
            }
        }
    }
    assert_eq!(refused + harmless, files);
    // No byte of the file is unchecked: every flip was refused.
    assert_eq!(harmless, 0, "{harmless} of {files} damaged files were read without an error");
    eprintln!("{} bytes, {} damaged files: all refused", good.len(), refused);

    // The whole search on the simulated backend, for 40 random bytes inverted.
    for _ in 0..40 {
        let i = rng.random_range(0..good.len());
        let mut data = good.clone();
        data[i] ^= 0xff;
        std::fs::write(&bad, &data).unwrap();
        let out = dir.0.join("bad.tsv");
        std::fs::remove_file(&out).ok();
        match run_search(&bad, &m, &queries, &out) {
            Err(e) => {
                assert!(e.contains("bad.cadb"), "byte {i}: {e}");
                assert!(!out.exists(), "byte {i}: a failed search leaves no TSV");
                assert!(!dir.0.join("bad.tsv.partial").exists(), "byte {i}: nor its .partial");
            }
            Ok(got) => assert!(got == want_search, "byte {i} inverted: the search's results differ without an error"),
        }
    }
}
