//! A streaming FASTA reader: one record at a time, residues encoded as they are read,
//! byte offsets and line numbers kept so that a database can be cut into chunks and
//! every error names its line.
//!
//! Format handled: a record is a `>` header line (its name is the first word after
//! `>`, which must not be empty) and any number of sequence lines. Lines end with `\n`,
//! `\r\n` or a lone `\r` (old Mac files), and a UTF-8 byte-order mark before the first
//! line is skipped. Blank lines are skipped. Blanks inside sequence lines are skipped; a
//! trailing `*` is kept as a residue when the matrix has `*`. A record with no residues
//! is valid (its score is 0) but counted in [`Warnings`], as is an id that an earlier
//! record has. Errors: sequence data before the first header, a header without a name,
//! a byte that is no residue of the matrix (see [`crate::matrix`]).
//!
//! [`open`] reads a file as it is or, when it starts with gzip's magic bytes (whatever
//! its name), through a gzip decoder.

use crate::matrix::{Matrix, INVALID, SKIP};
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The first two bytes of a gzip file.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// "cannot open" `path`, which is `what` (`database`, or empty).
fn cannot_open(what: &str, path: &Path, e: std::io::Error) -> String {
    let sep = if what.is_empty() { "" } else { " " };
    format!("cannot open {what}{sep}{}: {e}", path.display())
}

/// Whether the file at `path` (a `what`: `database`, or empty) starts with gzip's magic bytes.
///
/// # Errors
/// An unreadable file, naming it.
pub fn is_gzip(path: &Path, what: &str) -> Result<bool, String> {
    let mut f = std::fs::File::open(path).map_err(|e| cannot_open(what, path, e))?;
    let mut head = [0u8; 2];
    let mut n = 0;
    while n < 2 {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("{}: read error: {e}", path.display())),
        }
    }
    Ok(n == 2 && head == GZIP_MAGIC)
}

/// The text of `path` (a `what`: `database`, or empty) as a buffered reader:
/// decompressed when the file is gzip (told by its magic bytes), as it is otherwise.
///
/// # Errors
/// An unreadable file, naming it.
pub fn open(path: &Path, what: &str) -> Result<Box<dyn BufRead + Send>, String> {
    let gz = is_gzip(path, what)?;
    let f = std::fs::File::open(path).map_err(|e| cannot_open(what, path, e))?;
    Ok(if gz {
        Box::new(BufReader::with_capacity(1 << 20, flate2::read::MultiGzDecoder::new(BufReader::new(f))))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, f))
    })
}

/// What a FASTA file held that is valid but likely a mistake: records with no residues
/// (their score is 0) and ids that an earlier record has (their rows are told apart only
/// by their order). Counted as the file is read; the first few are kept as messages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Warnings {
    /// Records with no residues.
    pub empty: u64,
    /// Records whose id an earlier record has.
    pub duplicates: u64,
    /// The first [`Warnings::KEPT`] of them, in words.
    pub examples: Vec<String>,
}

impl Warnings {
    /// Messages kept.
    pub const KEPT: usize = 5;

    /// Whether there is nothing to warn of.
    pub fn is_empty(&self) -> bool {
        self.empty == 0 && self.duplicates == 0
    }

    /// The counts in words, e.g. `2 records with no residues, 1 duplicate id`.
    pub fn summary(&self) -> String {
        let s = |n: u64| if n == 1 { "" } else { "s" };
        format!(
            "{} record{} with no residues (scored 0), {} duplicate id{} (told apart only by order)",
            self.empty,
            s(self.empty),
            self.duplicates,
            s(self.duplicates)
        )
    }

    /// Prints the kept messages and the counts to stderr, as warnings about `what`
    /// (nothing when there is nothing to warn of).
    pub fn print(&self, what: &str) {
        if self.is_empty() {
            return;
        }
        for m in &self.examples {
            eprintln!("chariot-align: warning: {m}");
        }
        let more = (self.empty + self.duplicates).saturating_sub(self.examples.len() as u64);
        eprintln!(
            "chariot-align: warning: {what}: {}{}",
            self.summary(),
            if more > 0 { format!(" ({more} more not shown)") } else { String::new() }
        );
    }

    /// Counts record `id`, on line `line` of `source`, as one with no residues.
    pub fn empty_record(&mut self, source: &str, line: u64, id: &str) {
        self.empty += 1;
        self.note(|| format!("{source}: line {line}: record `{id}` has no residues (its score is 0)"));
    }

    /// Counts the record on line `line` of `source` as one whose id (`id()`, asked only
    /// for a kept message) an earlier record has.
    pub fn duplicate_id(&mut self, source: &str, line: u64, id: impl FnOnce() -> String) {
        self.duplicates += 1;
        self.note(|| {
            format!(
                "{source}: line {line}: id `{}` is an earlier record's too (their rows are told apart only by order)",
                id()
            )
        });
    }

    fn note(&mut self, m: impl FnOnce() -> String) {
        if self.examples.len() < Self::KEPT {
            self.examples.push(m());
        }
    }
}

/// The hash duplicate ids are found by (64 bits: a false duplicate needs a collision).
pub fn id_hash(id: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

/// The name of a header line: its first word after `>` (`None`: no name).
pub fn header_name(line: &[u8]) -> Option<&[u8]> {
    line.get(1..)?.split(|b| b.is_ascii_whitespace()).find(|w| !w.is_empty())
}

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
    warnings: Warnings,
    /// Hashes of the ids seen (a 64-bit hash: a false duplicate needs a collision).
    ids: HashSet<u64>,
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
            warnings: Warnings::default(),
            ids: HashSet::new(),
        }
    }

    /// What the records read so far held that is valid but likely a mistake.
    pub fn warnings(&self) -> &Warnings {
        &self.warnings
    }

    /// Reads one line and its end (`\n`, `\r\n` or a lone `\r`) into `self.buf`;
    /// returns the bytes read (0 at the end).
    fn read_line(&mut self) -> std::io::Result<usize> {
        let mut n = 0;
        loop {
            let avail = match self.reader.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok(n);
            }
            match memchr::memchr2(b'\n', b'\r', avail) {
                Some(i) => {
                    let cr = avail[i] == b'\r';
                    self.buf.extend_from_slice(&avail[..=i]);
                    self.reader.consume(i + 1);
                    n += i + 1;
                    if cr {
                        // `\r\n` is one line end, even across the reader's buffers.
                        let next = loop {
                            match self.reader.fill_buf() {
                                Ok(a) => break a.first().copied(),
                                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                                Err(e) => return Err(e),
                            }
                        };
                        if next == Some(b'\n') {
                            self.buf.push(b'\n');
                            self.reader.consume(1);
                            n += 1;
                        }
                    }
                    return Ok(n);
                }
                None => {
                    let k = avail.len();
                    self.buf.extend_from_slice(avail);
                    self.reader.consume(k);
                    n += k;
                }
            }
        }
    }

    /// Counts the finished record `rec` of `len` residues in the warnings.
    fn check(&mut self, rec: &Record, len: usize) {
        if len == 0 {
            self.warnings.empty_record(&self.source, rec.line, &rec.id);
        }
        if !self.ids.insert(id_hash(rec.id.as_bytes())) {
            self.warnings.duplicate_id(&self.source, rec.line, || rec.id.clone());
        }
    }

    /// Hands out the pending record (if any), counting it in the warnings.
    fn finish_pending(&mut self, seq_len: usize) -> Option<Record> {
        let done = self.pending.take()?;
        self.check(&done, seq_len);
        Some(done)
    }

    /// The next record, its residues (codes of `matrix`) appended to `seq` after
    /// clearing it; `None` at the end.
    pub fn next_record(&mut self, matrix: &Matrix, seq: &mut Vec<u8>) -> Result<Option<Record>, String> {
        seq.clear();
        loop {
            self.buf.clear();
            let start = self.pos;
            let n = self
                .read_line()
                .map_err(|e| format!("{}: read error after line {}: {e}", self.source, self.line_no))?;
            if n == 0 {
                let len = seq.len();
                return Ok(self.finish_pending(len));
            }
            self.pos += n as u64;
            self.line_no += 1;
            let skip = if start == 0 && self.buf.starts_with(BOM) { BOM.len() } else { 0 };
            let line = &self.buf[skip..];
            if line.first() == Some(&b'>') {
                let Some(name) = header_name(line) else {
                    return Err(format!("{}: line {}: FASTA header without a name", self.source, self.line_no));
                };
                let rec = Record {
                    id: String::from_utf8_lossy(name).into_owned(),
                    offset: start + skip as u64,
                    line: self.line_no,
                };
                let len = seq.len();
                if self.pending.is_some() {
                    let done = self.finish_pending(len).expect("a pending record");
                    self.pending = Some(rec);
                    return Ok(Some(done));
                }
                self.pending = Some(rec);
                continue;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
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

/// Reads every record of a small FASTA file (queries; gzip too, see [`open`]) into memory.
pub fn read_all(path: &std::path::Path, matrix: &Matrix) -> Result<Records, String> {
    Ok(read_all_warning(path, matrix)?.0)
}

/// Records read whole: name and residues (matrix codes).
pub type Records = Vec<(String, Vec<u8>)>;

/// [`read_all`], and what the file held that is valid but likely a mistake.
pub fn read_all_warning(path: &Path, matrix: &Matrix) -> Result<(Records, Warnings), String> {
    let mut r = FastaReader::new(open(path, "")?, &path.display().to_string());
    let mut out = Vec::new();
    let mut seq = Vec::new();
    while let Some(rec) = r.next_record(matrix, &mut seq)? {
        out.push((rec.id, seq.clone()));
    }
    Ok((out, r.warnings))
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

    /// Lines ending with `\n`, `\r\n` or a lone `\r`, and a byte-order mark, read the
    /// same records, offsets and line numbers (a `\r\n` split across the reader's
    /// buffers is one line end).
    #[test]
    fn line_ends_and_a_byte_order_mark() {
        let lf = ">a desc\nAR\nnd\n\n>b\n>c x\nW*\n";
        let want = parse(lf).unwrap();
        for text in [lf.replace('\n', "\r\n"), lf.replace('\n', "\r"), format!("\u{feff}{lf}")] {
            let got = parse(&text).unwrap();
            assert_eq!(got.len(), 3, "{text:?}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((&g.0.id, g.0.line, &g.1), (&w.0.id, w.0.line, &w.1), "{text:?}");
                assert_eq!(
                    &text.as_bytes()[g.0.offset as usize..g.0.offset as usize + 2],
                    &lf.as_bytes()[w.0.offset as usize..w.0.offset as usize + 2]
                );
            }
        }
        // A one-byte buffer: every `\r\n` is split.
        let m = Matrix::blosum62();
        let text = lf.replace('\n', "\r\n");
        let mut r = FastaReader::new(std::io::BufReader::with_capacity(1, text.as_bytes()), "t.fa");
        let mut seq = Vec::new();
        let mut lines = Vec::new();
        while let Some(rec) = r.next_record(&m, &mut seq).unwrap() {
            lines.push((rec.line, seq.clone()));
        }
        assert_eq!(lines, want.iter().map(|w| (w.0.line, w.1.clone())).collect::<Vec<_>>());
        // A BOM elsewhere than the start is no residue.
        assert!(parse(">a\n\u{feff}A\n").is_err());
    }

    /// Empty records and repeated ids are counted (valid, but likely mistakes).
    #[test]
    fn warnings_count_empty_records_and_duplicate_ids() {
        let m = Matrix::blosum62();
        let text = ">a\nAR\n>b\n>a x\nW\n>c\n>a\nK\n";
        let mut r = FastaReader::new(text.as_bytes(), "t.fa");
        let mut seq = Vec::new();
        while r.next_record(&m, &mut seq).unwrap().is_some() {}
        let w = r.warnings();
        assert_eq!((w.empty, w.duplicates), (2, 2));
        assert_eq!(w.examples.len(), 4);
        assert!(w.examples[0].contains("line 3: record `b` has no residues"), "{:?}", w.examples);
        assert!(w.examples[1].contains("line 4: id `a`"), "{:?}", w.examples);
        assert!(w.summary().starts_with("2 records with no residues (scored 0), 2 duplicate ids"));
        let mut r = FastaReader::new(">a\nA\n>b\nC\n".as_bytes(), "t.fa");
        while r.next_record(&m, &mut seq).unwrap().is_some() {}
        assert!(r.warnings().is_empty());
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
