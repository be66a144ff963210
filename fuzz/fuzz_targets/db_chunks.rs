//! chariot-align's database path on arbitrary bytes: the chunk index (one streaming
//! pass) and the per-chunk reader that the pipeline's file-read callback runs (a fast
//! path with the careful reader as fallback), then the packing the kernel reads.
//!
//! Differential: when the index accepts the file, every chunk must read back, and the
//! chunks together must hold exactly the records and residues that the plain reader
//! finds in the whole file; packing must keep every record's residues.

#![no_main]

use chariot_align::db;
use chariot_align::fasta::FastaReader;
use chariot_align::matrix::Matrix;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

fn blosum62() -> &'static Matrix {
    static M: OnceLock<Matrix> = OnceLock::new();
    M.get_or_init(Matrix::blosum62)
}

/// One file per fuzzing process (`-fork` and `-jobs` run several).
fn scratch() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| std::env::temp_dir().join(format!("chariot-fuzz-db-{}.fa", std::process::id())))
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, text)) = data.split_first() else { return };
    let chunk_seqs = (first % 8) as usize; // 0 is refused; 1..=7 cut small files into several chunks
    let m = blosum62();
    let path = scratch();
    std::fs::write(path, text).expect("the scratch file is writable");
    let index = match db::DbIndex::build(path, m, chunk_seqs) {
        Ok(index) => index,
        Err(message) => {
            assert!(!message.is_empty());
            return;
        }
    };
    assert!(chunk_seqs > 0, "a chunk size of 0 was accepted");
    // The plain reader over the whole file.
    let mut reader = FastaReader::new(text, "whole");
    let (mut ids, mut codes, mut seq) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(rec) = reader.next_record(m, &mut seq).expect("the index accepted the file") {
        ids.push(rec.id);
        codes.push(seq.clone());
    }
    assert_eq!(index.sequences as usize, ids.len());
    let mut seen = 0usize;
    for info in &index.chunks {
        assert!(info.nseq >= 1 && info.nseq <= chunk_seqs, "{info:?}");
        let d = db::read_chunk(path, info, m).unwrap_or_else(|e| panic!("chunk {info:?} of an accepted file: {e}"));
        assert_eq!(d.ids, ids[seen..seen + info.nseq], "chunk {info:?}: other records than the whole file's");
        let whole: Vec<u8> = codes[seen..seen + info.nseq].concat();
        assert_eq!(d.codes, whole, "chunk {info:?}: other residues than the whole file's");
        let mut out = vec![0u8; info.packed_bytes()];
        let perm = db::pack(&d, &mut out);
        let offset = |k: usize| u32::from_le_bytes(out[k * 4..k * 4 + 4].try_into().expect("4 bytes")) as usize;
        let res = info.res_off();
        for (k, &i) in perm.iter().enumerate() {
            let record = &codes[seen + i as usize];
            assert_eq!(&out[res + offset(k)..res + offset(k + 1)], &record[..], "packed record {k} (record {i})");
        }
        seen += info.nseq;
    }
    assert_eq!(seen, ids.len());
});
