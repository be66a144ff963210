//! The prepared format's round trip: encoder and decoder, chunking, refusals.

use super::*;
use crate::matrix::Matrix;

/// The encoder and the decoder: every record comes back, under its original index,
/// with its name and residues; chunks hold consecutive sorted sequences, longest first.
#[test]
fn round_trip() {
    let dir = std::env::temp_dir().join(format!("chariot-align-prepared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (fa, out) = (dir.join("db.fa"), dir.join("db.cadb"));
    let text = ">a one\nAR\n>b\n\n>c\nWWW\nW\n>d x\nC\n>e\nAAAAA\n>f\nru*\n>g\nKK\n";
    std::fs::write(&fa, text).unwrap();
    let m = Matrix::blosum62();
    let s = make(&fa, &out, &m, false).unwrap();
    assert_eq!((s.layout.sequences, s.layout.residues, s.layout.max_len), (7, 17, 5));
    assert_eq!(std::fs::metadata(&out).unwrap().len(), s.bytes);
    assert!(looks_prepared(&out).unwrap() && !looks_prepared(&fa).unwrap());
    let want = crate::fasta::read_all(&fa, &m).unwrap();
    for chunk in [1, 2, 3, 100] {
        let idx = open(&out, &m, chunk).unwrap();
        assert_eq!((idx.sequences, idx.residues, idx.max_len), (7, 17, 5));
        let mut got = vec![None; 7];
        let mut lens_sorted = Vec::new();
        for (c, info) in idx.chunks.iter().enumerate() {
            assert!(info.nseq <= chunk);
            if c > 0 {
                assert_eq!(info.first_seq, idx.chunks[c - 1].first_seq + idx.chunks[c - 1].nseq as u64);
            }
            let (d, seqs) = read_chunk(&out, idx.prepared.as_ref().unwrap(), info).unwrap();
            let mut s = 0usize;
            for (r, &l) in d.lens.iter().enumerate() {
                lens_sorted.push(l);
                let codes = d.codes[s..s + l as usize].to_vec();
                s += l as usize;
                assert!(got[seqs[r] as usize].replace((d.ids[r].clone(), codes)).is_none());
            }
            assert_eq!(info.max_len, d.lens[0] as u64);
        }
        let got: Vec<_> = got.into_iter().map(Option::unwrap).collect();
        assert_eq!(got, want, "chunk {chunk}");
        assert_eq!(lens_sorted, [5, 4, 3, 2, 2, 1, 0], "longest first, ties in file order");
    }
    // The order of ties is the file's: a (2 residues) before g (2 residues).
    let idx = open(&out, &m, 100).unwrap();
    let (d, seqs) = read_chunk(&out, idx.prepared.as_ref().unwrap(), &idx.chunks[0]).unwrap();
    assert_eq!(d.ids, ["e", "c", "f", "a", "g", "d", "b"]);
    assert_eq!(seqs, [4, 2, 5, 0, 6, 3, 1]);
    // Another alphabet is refused, naming both.
    let other = Matrix::parse("tiny", "   A  R\nA  1 -1\nR -1  1\n").unwrap();
    let e = open(&out, &other, 2).unwrap_err();
    assert!(e.contains("db.cadb") && e.contains("`AR`") && e.contains("makedb"), "{e}");
    // A budget cut: chunks of long sequences hold fewer of them.
    let big: String = (0..41).map(|i| format!(">s{i}\n{}\n", "A".repeat(if i == 0 { 400 } else { 10 }))).collect();
    std::fs::write(&fa, big).unwrap();
    make(&fa, &out, &m, false).unwrap();
    let idx = open(&out, &m, 4).unwrap();
    // Mean 19.5 residues → budget 20 · 4 · 4 = 320: the 400 alone, then 4 by 4.
    assert_eq!(idx.chunks[0].nseq, 1);
    assert!(idx.chunks[1..].iter().all(|c| c.nseq == 4 && c.residues == 40), "{:?}", idx.chunks);
    std::fs::write(&fa, "").unwrap();
    assert!(make(&fa, &out, &m, false).unwrap_err().contains("no FASTA records"));
    std::fs::remove_dir_all(&dir).ok();
}
