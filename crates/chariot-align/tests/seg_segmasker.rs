//! SEG against NCBI's `segmasker` (BLAST+ 2.12's SEG): on random sequences with
//! low-complexity stretches put in (runs of one residue, repeats of short motifs,
//! stretches of few letters, X runs), the masked ranges equal segmasker's with blastp's
//! query parameters (12, 2.2, 2.5) and with the subject parameters of its
//! composition-based statistics (10, 1.8, 2.1). Skipped, saying so, where segmasker is
//! not installed (Debian: ncbi-blast+).

use chariot_align::matrix::Matrix;
use chariot_align::seg::{self, Params};
use rand::{Rng, SeedableRng};
use std::process::Command;

/// Random sequences, most with a low-complexity stretch.
fn sequences(n: usize) -> Vec<Vec<u8>> {
    let aa = b"ACDEFGHIKLMNPQRSTVWY";
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    (0..n)
        .map(|k| {
            let len = rng.random_range(5..300);
            let mut s: Vec<u8> = (0..len).map(|_| aa[rng.random_range(0..20)]).collect();
            for _ in 0..rng.random_range(0..4) {
                let at = rng.random_range(0..=s.len());
                let run: Vec<u8> = match k % 5 {
                    0 => vec![aa[rng.random_range(0..20)]; rng.random_range(3..30)],
                    1 => {
                        let motif: Vec<u8> = (0..rng.random_range(2..5)).map(|_| aa[rng.random_range(0..20)]).collect();
                        motif.iter().cycle().take(rng.random_range(6..40)).copied().collect()
                    }
                    2 => {
                        let few: Vec<u8> = (0..3).map(|_| aa[rng.random_range(0..20)]).collect();
                        (0..rng.random_range(8..40)).map(|_| few[rng.random_range(0..3)]).collect()
                    }
                    3 => vec![b'X'; rng.random_range(1..6)],
                    _ => Vec::new(),
                };
                s.splice(at..at, run);
            }
            s
        })
        .collect()
}

#[test]
fn seg_equals_segmasker() {
    if !Command::new("segmasker").arg("-version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("seg_equals_segmasker: skipped: segmasker is not installed (Debian: apt-get install ncbi-blast+)");
        return;
    }
    let m = Matrix::blosum62();
    let seqs = sequences(300);
    let dir = std::env::temp_dir().join(format!("chariot-align-seg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fa = dir.join("s.fa");
    let text: String =
        seqs.iter().enumerate().map(|(i, s)| format!(">s{i}\n{}\n", String::from_utf8_lossy(s))).collect();
    std::fs::write(&fa, text).unwrap();
    let (mut masked_seqs, mut ranges) = (0, 0);
    for p in [Params::QUERY, Params::SUBJECT] {
        let out = Command::new("segmasker")
            .args(["-in", fa.to_str().unwrap(), "-outfmt", "interval"])
            .args(["-window", &p.window.to_string(), "-locut", &p.locut.to_string(), "-hicut", &p.hicut.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut theirs: Vec<Vec<(usize, usize)>> = vec![Vec::new(); seqs.len()];
        let mut cur = 0;
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(id) = l.strip_prefix(">s") {
                cur = id.trim().parse().unwrap();
            } else if let Some((a, b)) = l.split_once(" - ") {
                theirs[cur].push((a.trim().parse().unwrap(), b.trim().parse().unwrap()));
            }
        }
        for (i, s) in seqs.iter().enumerate() {
            let mut ours = seg::mask_ranges(&m.encode(s).unwrap(), &m, p);
            // segmasker reports overlapping or touching segments merged.
            ours = merge(ours);
            assert_eq!(ours, merge(theirs[i].clone()), "s{i} {:?}: {}", p, String::from_utf8_lossy(s));
            masked_seqs += usize::from(!ours.is_empty());
            ranges += ours.len();
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    eprintln!(
        "SEG: {} sequences x 2 parameter sets; {masked_seqs} masked, {ranges} ranges, all equal to segmasker's",
        seqs.len()
    );
    assert!(masked_seqs > 100, "too few masked to tell: {masked_seqs}");
}

fn merge(mut r: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    r.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (a, b) in r {
        match out.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}
