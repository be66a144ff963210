//! A streaming FASTA reader: one record at a time, residues encoded as they are read,
//! byte offsets and line numbers kept so that a database can be cut into chunks and
//! every error names its line.
//!
//! Format handled: a record is a `>` header line (its name is the first word after
//! `>`, which must not be empty) and any number of sequence lines. Blank lines are
//! skipped. Blanks and `\r` inside sequence lines are skipped; a trailing `*` is kept
//! as a residue when the matrix has `*`. A record with no residues is valid (its score
//! is 0). Errors: sequence data before the first header, a header without a name, a
//! byte that is no residue of the matrix (see [`crate::matrix`]).

use crate::matrix::{Matrix, INVALID, SKIP};
use std::io::BufRead;

/// One record's header: its name, where it starts in the file and on which line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// First word of the header.
    pub id: String,
    /// Byte offset of the `>`.
    pub offset: u64,
    /// Line number of the header (1-based).
    pub line: u64,
}

/// Reads records from `reader`, which starts at byte `offset` and line `line` of `source`.
pub struct FastaReader<R> {
    reader: R,
    source: String,
    pos: u64,
    line_no: u64,
    buf: Vec<u8>,
    pending: Option<Record>,
}

impl<R: BufRead> FastaReader<R> {
    /// A reader of the whole of `source`.
    pub fn new(reader: R, source: &str) -> Self {
        Self::at(reader, source, 0, 1)
    }

    /// A reader whose first byte is byte `offset`, on line `line`, of `source`.
    pub fn at(reader: R, source: &str, offset: u64, line: u64) -> Self {
        FastaReader {
            reader,
            source: source.to_string(),
            pos: offset,
            line_no: line - 1,
            buf: Vec::new(),
            pending: None,
        }
    }

    /// The next record, its residues (codes of `matrix`) appended to `seq` after
    /// clearing it; `None` at the end.
    pub fn next_record(&mut self, matrix: &Matrix, seq: &mut Vec<u8>) -> Result<Option<Record>, String> {
        seq.clear();
        loop {
            self.buf.clear();
            let start = self.pos;
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| format!("{}: read error after line {}: {e}", self.source, self.line_no))?;
            if n == 0 {
                return Ok(self.pending.take());
            }
            self.pos += n as u64;
            self.line_no += 1;
            if self.buf[0] == b'>' {
                let name = self.buf[1..].split(|b| b.is_ascii_whitespace()).find(|w| !w.is_empty()).unwrap_or(&[]);
                if name.is_empty() {
                    return Err(format!("{}: line {}: FASTA header without a name", self.source, self.line_no));
                }
                let rec = Record { id: String::from_utf8_lossy(name).into_owned(), offset: start, line: self.line_no };
                if let Some(done) = self.pending.replace(rec) {
                    return Ok(Some(done));
                }
                continue;
            }
            let body = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
            if self.pending.is_none() {
                if body.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                return Err(format!(
                    "{}: line {}: sequence data before the first `>` header (not FASTA?)",
                    self.source, self.line_no
                ));
            }
            for (col, &b) in body.iter().enumerate() {
                match matrix.code[b as usize] {
                    SKIP => {}
                    INVALID => {
                        let id = &self.pending.as_ref().map(|r| r.id.clone()).unwrap_or_default();
                        return Err(format!(
                            "{}: line {}, column {}: `{}` in record `{id}` is not a residue of {} (letters {}; other ASCII letters score as X)",
                            self.source,
                            self.line_no,
                            col + 1,
                            b.escape_ascii(),
                            matrix.name,
                            String::from_utf8_lossy(&matrix.letters)
                        ));
                    }
                    c => seq.push(c),
                }
            }
        }
    }
}

/// Reads every record of a small FASTA file (queries) into memory.
pub fn read_all(path: &std::path::Path, matrix: &Matrix) -> Result<Vec<(String, Vec<u8>)>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut r = FastaReader::new(std::io::BufReader::new(f), &path.display().to_string());
    let mut out = Vec::new();
    let mut seq = Vec::new();
    while let Some(rec) = r.next_record(matrix, &mut seq)? {
        out.push((rec.id, seq.clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<(Record, Vec<u8>)>, String> {
        let m = Matrix::blosum62();
        let mut r = FastaReader::new(text.as_bytes(), "t.fa");
        let mut out = Vec::new();
        let mut seq = Vec::new();
        while let Some(rec) = r.next_record(&m, &mut seq)? {
            out.push((rec, seq.clone()));
        }
        Ok(out)
    }

    #[test]
    fn records_offsets_and_lines() {
        let t = "\n>a desc\nAR\nnd\r\n>b\n>c x\nW*\n";
        let v = parse(t).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].0, Record { id: "a".into(), offset: 1, line: 2 });
        assert_eq!(v[0].1, vec![0, 1, 2, 3]);
        assert_eq!(v[1].0.id, "b");
        assert!(v[1].1.is_empty(), "an empty record is kept");
        assert_eq!(v[2].0.offset, t.find(">c").unwrap() as u64);
        assert_eq!(v[2].1, vec![17, 23]);
        assert_eq!(parse("").unwrap().len(), 0);
        assert_eq!(parse(">x\nAC").unwrap()[0].1.len(), 2, "no final newline");
    }

    #[test]
    fn malformed_input_is_an_error() {
        assert!(parse("ACGT\n>a\nA\n").unwrap_err().contains("line 1: sequence data before"));
        assert!(parse(">a\nA\n> \nA\n").unwrap_err().contains("line 3: FASTA header without a name"));
        let e = parse(">a\nAC\nA-C\n").unwrap_err();
        assert!(e.contains("line 3, column 2") && e.contains("`-`"), "{e}");
        assert!(parse(">a\nA1\n").is_err());
        assert_eq!(parse(">a\nAUO\n").unwrap()[0].1, vec![0, 22, 22], "U and O score as X");
    }
}
