//! chariot-align's streaming FASTA reader on arbitrary bytes, with BLOSUM62: it must
//! return records or a message naming a line, never panic, and what it returns must be
//! true of the input (headers where it says, residues that are codes of the matrix).

#![no_main]

use chariot_align::fasta::FastaReader;
use chariot_align::matrix::Matrix;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn blosum62() -> &'static Matrix {
    static M: OnceLock<Matrix> = OnceLock::new();
    M.get_or_init(Matrix::blosum62)
}

fuzz_target!(|data: &[u8]| {
    let m = blosum62();
    let mut reader = FastaReader::new(data, "fuzz.fa");
    let mut seq = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    let mut residues = 0usize;
    loop {
        match reader.next_record(m, &mut seq) {
            Ok(Some(rec)) => {
                let at = rec.offset as usize;
                assert_eq!(data.get(at), Some(&b'>'), "record {rec:?} does not start at a `>`");
                assert!(at == 0 || data[at - 1] == b'\n', "record {rec:?} does not start a line");
                let line = 1 + data[..at].iter().filter(|&&b| b == b'\n').count() as u64;
                assert_eq!(rec.line, line, "record {rec:?}: wrong line number");
                assert!(!rec.id.is_empty(), "record {rec:?} has an empty name");
                if let Some((offset, line)) = last {
                    assert!(rec.offset > offset && rec.line > line, "records out of order: {rec:?}");
                }
                last = Some((rec.offset, rec.line));
                assert!(seq.iter().all(|&c| (c as usize) < m.letters.len()), "a residue code outside the matrix");
                residues += seq.len();
                // A record's residues come from its own bytes, so never more than the input has.
                assert!(residues <= data.len());
            }
            Ok(None) => break,
            Err(message) => {
                assert!(message.starts_with("fuzz.fa: "), "an error that does not name the file: {message}");
                assert!(message.contains("line "), "an error that does not name the line: {message}");
                break;
            }
        }
    }
});
