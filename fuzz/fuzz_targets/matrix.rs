//! chariot-align's substitution-matrix parser (NCBI text format) on arbitrary text: a
//! matrix or a message, never a panic. A matrix it accepts must be consistent (at most
//! 32 letters, every byte coded as a letter of it, skipped or invalid), and the FASTA
//! reader must work with it on the rest of the input.

#![no_main]

use chariot_align::fasta::FastaReader;
use chariot_align::matrix::{Matrix, INVALID, MAX_LETTERS, SKIP};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The matrix text, then after a NUL byte (if any) a FASTA text to read with it.
    let (text, fasta) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(text) else { return };
    let m = match Matrix::parse("fuzz.mat", text) {
        Ok(m) => m,
        Err(message) => {
            assert!(!message.is_empty());
            return;
        }
    };
    let n = m.letters.len();
    assert!((1..=MAX_LETTERS).contains(&n), "{n} letters accepted");
    for (i, &l) in m.letters.iter().enumerate() {
        assert!(l.is_ascii_uppercase() || l == b'*', "letter {l:#x} in the header");
        assert_eq!(m.code[l as usize] as usize, i, "letter {} does not code to its column", l as char);
        assert_eq!(m.code[l.to_ascii_lowercase() as usize] as usize, i, "lower-case {} differs", l as char);
    }
    for (b, &c) in m.code.iter().enumerate() {
        assert!(c == INVALID || c == SKIP || (c as usize) < n, "byte {b:#x} codes to {c}");
        if c == SKIP {
            assert!([b' ', b'\t', b'\r'].contains(&(b as u8)), "byte {b:#x} is skipped");
        }
    }
    let mut reader = FastaReader::new(fasta, "fuzz.fa");
    let mut seq = Vec::new();
    while let Ok(Some(_)) = reader.next_record(&m, &mut seq) {
        assert!(seq.iter().all(|&c| (c as usize) < n));
    }
});
