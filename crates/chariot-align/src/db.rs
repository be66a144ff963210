//! The database: an index of chunks built by one streaming pass over the FASTA file
//! (no residues kept; a large plain file is read in parts, a thread each, and joined in
//! file order), and the per-chunk read-and-pack step that the pipeline's file-read
//! callback runs.
//!
//! A chunk is `chunk_seqs` consecutive records. The index keeps, per chunk, its byte
//! range, first line, record count and residue count, so that each task's size (for LF
//! ordering) and buffer ranges are known at submit, and the read callback reads just
//! its byte range. Memory: the index is a few dozen bytes per chunk; residues live only
//! in the chunk slots in flight.
//!
//! A database prepared by `makedb` has its own index ([`crate::prepared::open`]) of the
//! same [`ChunkInfo`]s: the byte range is the chunk's residues in the file, `first_seq`
//! its first sequence in sorted order, `first_line` 0; its read stage copies, with no parse.
//!
//! Packed chunk layout (what the kernel reads), in bytes:
//! `[u32 offsets; nseq + 1]` (little-endian residue offsets, sequences sorted by length,
//! longest first), padding to 16, then the residues (matrix codes, one byte each).

use crate::fasta::FastaReader;
use crate::matrix::Matrix;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One chunk of the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Byte range in the file.
    pub start: u64,
    /// End of the byte range.
    pub end: u64,
    /// Line of its first header (0 in a prepared database).
    pub first_line: u64,
    /// Index of its first record in the database (a prepared database's: in sorted order).
    pub first_seq: u64,
    /// Records.
    pub nseq: usize,
    /// Residues.
    pub residues: u64,
    /// Longest record.
    pub max_len: u64,
}

impl ChunkInfo {
    /// Offset of the residues in the packed chunk.
    pub fn res_off(&self) -> usize {
        ((self.nseq + 1) * 4).next_multiple_of(16)
    }
    /// Bytes of the packed chunk.
    pub fn packed_bytes(&self) -> usize {
        self.res_off() + self.residues as usize
    }
}

/// The chunk index of a FASTA database.
#[derive(Clone, Debug)]
pub struct DbIndex {
    /// The file.
    pub path: PathBuf,
    /// Its chunks, in file order.
    pub chunks: Vec<ChunkInfo>,
    /// Records.
    pub sequences: u64,
    /// Residues.
    pub residues: u64,
    /// Longest record.
    pub max_len: u64,
    /// File size.
    pub bytes: u64,
    /// The layout of a prepared database (`None`: FASTA).
    pub prepared: Option<crate::prepared::Layout>,
    /// Records with no residues and duplicate ids (a prepared database's as `makedb`
    /// counted them, with no messages).
    pub warnings: crate::fasta::Warnings,
}

impl DbIndex {
    /// Opens a database: a prepared one (`chariot-align makedb`, told by its first
    /// byte; see [`crate::prepared`]) or FASTA ([`DbIndex::build`]).
    ///
    /// # Errors
    /// Those of [`crate::prepared::open`] or [`DbIndex::build`].
    pub fn open(path: &Path, matrix: &Matrix, chunk_seqs: usize) -> Result<DbIndex, String> {
        if crate::prepared::looks_prepared(path)? {
            crate::prepared::open(path, matrix, chunk_seqs)
        } else {
            DbIndex::build(path, matrix, chunk_seqs)
        }
    }

    /// Scans `path` once, checking every record (see [`crate::fasta`]): in parts, one
    /// thread each, where the file is large and plain (`\n` or `\r\n` line ends, no
    /// byte-order mark, every byte a residue), else — and to name any error by its
    /// line — with one [`FastaReader`].
    ///
    /// # Errors
    /// An unreadable file, malformed FASTA, a bad residue, an empty database, or a
    /// chunk over 4 GiB of residues.
    pub fn build(path: &Path, matrix: &Matrix, chunk_seqs: usize) -> Result<DbIndex, String> {
        DbIndex::build_with(path, matrix, chunk_seqs, index_threads(path))
    }

    /// [`DbIndex::build`] in at most `threads` parts (1: one reader).
    pub fn build_with(path: &Path, matrix: &Matrix, chunk_seqs: usize, threads: usize) -> Result<DbIndex, String> {
        if chunk_seqs == 0 {
            return Err("chunk size must be at least 1 sequence".into());
        }
        if crate::fasta::is_gzip(path, "database")? {
            return Err(format!(
                "{}: a gzip-compressed database is read chunk by chunk at byte offsets, which gzip does not allow; \
                 `chariot-align search` decompresses it to a temporary file, or run `chariot-align makedb` on it once",
                path.display()
            ));
        }
        let f = std::fs::File::open(path).map_err(|e| format!("cannot open database {}: {e}", path.display()))?;
        let bytes = f.metadata().map(|m| m.len()).unwrap_or(0);
        if threads > 1 {
            if let Some(index) = parallel::index(path, matrix, chunk_seqs, bytes, threads)? {
                return Ok(index);
            }
        }
        let mut r = FastaReader::new(BufReader::with_capacity(1 << 20, f), &path.display().to_string());
        let mut seq = Vec::new();
        let mut chunker = Chunker::new(chunk_seqs, bytes);
        while let Some(rec) = r.next_record(matrix, &mut seq)? {
            chunker.add(rec.offset, rec.line, seq.len() as u64, path)?;
        }
        chunker.finish(path, r.warnings().clone())
    }
}

/// Threads for indexing `path`: one per core, each with at least 16 MiB of the file.
fn index_threads(path: &Path) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    cores.min((bytes >> 24) as usize).clamp(1, 64)
}

/// Records, in file order, cut into chunks of `chunk_seqs`.
struct Chunker {
    chunk_seqs: usize,
    bytes: u64,
    chunks: Vec<ChunkInfo>,
    sequences: u64,
    residues: u64,
    max_len: u64,
}

impl Chunker {
    fn new(chunk_seqs: usize, bytes: u64) -> Chunker {
        Chunker { chunk_seqs, bytes, chunks: Vec::new(), sequences: 0, residues: 0, max_len: 0 }
    }

    /// The next record: its `>` at byte `offset`, on line `line`, with `len` residues.
    fn add(&mut self, offset: u64, line: u64, len: u64, path: &Path) -> Result<(), String> {
        if self.chunks.last().is_none_or(|c| c.nseq == self.chunk_seqs) {
            if let Some(c) = self.chunks.last_mut() {
                c.end = offset;
            }
            self.chunks.push(ChunkInfo {
                start: offset,
                end: self.bytes,
                first_line: line,
                first_seq: self.sequences,
                nseq: 0,
                residues: 0,
                max_len: 0,
            });
        }
        let c = self.chunks.last_mut().expect("a chunk");
        c.nseq += 1;
        c.residues += len;
        c.max_len = c.max_len.max(len);
        if c.residues >= u32::MAX as u64 - 64 {
            return Err(format!(
                "{}: chunk {} holds over 4 GiB of residues; use a smaller --chunk",
                path.display(),
                self.chunks.len() - 1
            ));
        }
        self.sequences += 1;
        self.residues += len;
        self.max_len = self.max_len.max(len);
        Ok(())
    }

    fn finish(mut self, path: &Path, warnings: crate::fasta::Warnings) -> Result<DbIndex, String> {
        if let Some(c) = self.chunks.last_mut() {
            c.end = self.bytes;
        }
        if self.sequences == 0 {
            return Err(format!("{}: the database holds no FASTA records", path.display()));
        }
        Ok(DbIndex {
            path: path.to_path_buf(),
            chunks: self.chunks,
            sequences: self.sequences,
            residues: self.residues,
            max_len: self.max_len,
            bytes: self.bytes,
            prepared: None,
            warnings,
        })
    }
}

/// The index of a large plain FASTA file, built by threads that each read one part of
/// it (parts start at a header line), then joined in file order: line numbers from the
/// parts' line counts, duplicate ids across parts, chunks as one reader would cut them.
/// Anything unusual (a lone `\r`, a byte-order mark, a bad byte, a header without a
/// name, data before the first header) gives `None`, and [`FastaReader`] reads the file
/// to name it.
mod parallel {
    use super::{Chunker, DbIndex};
    use crate::fasta::{header_name, id_hash, Warnings};
    use crate::matrix::{Matrix, INVALID, SKIP};
    use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
    use std::path::Path;

    /// A record as a part saw it; `line` counts from the part's first line (1-based).
    struct Seen {
        offset: u64,
        line: u64,
        len: u64,
        id_hash: u64,
    }

    /// One part's records and its line ends.
    struct Part {
        records: Vec<Seen>,
        lines: u64,
    }

    pub(super) fn index(
        path: &Path,
        matrix: &Matrix,
        chunk_seqs: usize,
        bytes: u64,
        threads: usize,
    ) -> Result<Option<DbIndex>, String> {
        let io = |e: std::io::Error| format!("{}: read error: {e}", path.display());
        let starts = part_starts(path, bytes, threads).map_err(io)?;
        let parts: Vec<std::io::Result<Option<Part>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = starts
                .windows(2)
                .map(|w| {
                    let (from, to) = (w[0], w[1]);
                    scope.spawn(move || read_part(path, matrix, from, to))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        });
        let mut read = Vec::with_capacity(parts.len());
        for p in parts {
            match p.map_err(io)? {
                Some(part) => read.push(part),
                None => return Ok(None),
            }
        }
        let source = path.display().to_string();
        let (mut chunker, mut warnings) = (Chunker::new(chunk_seqs, bytes), Warnings::default());
        let mut ids = std::collections::HashSet::with_capacity(read.iter().map(|p| p.records.len()).sum());
        let mut line_base = 0;
        for part in &read {
            for r in &part.records {
                let line = line_base + r.line;
                let id = || header_id(path, r.offset);
                if r.len == 0 {
                    warnings.empty_record(&source, line, &id());
                }
                if !ids.insert(r.id_hash) {
                    warnings.duplicate_id(&source, line, id);
                }
                chunker.add(r.offset, line, r.len, path)?;
            }
            line_base += part.lines;
        }
        chunker.finish(path, warnings).map(Some)
    }

    /// Where the parts start: 0, then for each nominal cut the first header line after
    /// it (a cut with none before the next is dropped), and `bytes` to end the last.
    fn part_starts(path: &Path, bytes: u64, threads: usize) -> std::io::Result<Vec<u64>> {
        let mut starts = vec![0];
        let mut f = BufReader::with_capacity(1 << 16, std::fs::File::open(path)?);
        let mut line = Vec::new();
        for k in 1..threads as u64 {
            let (cut, next) = (bytes * k / threads as u64, bytes * (k + 1) / threads as u64);
            if cut <= *starts.last().expect("a start") {
                continue;
            }
            // From the byte before the cut: the first line read is the rest of the line
            // the cut falls in, so every later line starts at a line start.
            f.seek(SeekFrom::Start(cut - 1))?;
            let mut pos = cut - 1;
            line.clear();
            pos += f.read_until(b'\n', &mut line)? as u64;
            while pos < next {
                line.clear();
                let n = f.read_until(b'\n', &mut line)? as u64;
                if n == 0 {
                    break;
                }
                if line.first() == Some(&b'>') {
                    starts.push(pos);
                    break;
                }
                pos += n;
            }
        }
        starts.push(bytes);
        Ok(starts)
    }

    /// The records whose headers lie in bytes `[from, to)` (`from` starts a line, and a
    /// header unless it is 0); `None` where the part holds anything unusual.
    fn read_part(path: &Path, matrix: &Matrix, from: u64, to: u64) -> std::io::Result<Option<Part>> {
        let mut f = std::fs::File::open(path)?;
        f.seek(SeekFrom::Start(from))?;
        let mut r = BufReader::with_capacity(1 << 20, f.take(to - from));
        let mut part = Part { records: Vec::new(), lines: 0 };
        let (mut line, mut pos) = (Vec::new(), from);
        let mut current: Option<Seen> = None;
        loop {
            line.clear();
            let n = r.read_until(b'\n', &mut line)?;
            if n == 0 {
                break;
            }
            if pos == 0 && line.starts_with(b"\xef\xbb\xbf") {
                return Ok(None);
            }
            let at = pos;
            pos += n as u64;
            let mut body = &line[..];
            if let Some(b) = body.strip_suffix(b"\n") {
                part.lines += 1;
                body = b.strip_suffix(b"\r").unwrap_or(b);
            } else {
                // The file's last line, with no line end: a line all the same.
                part.lines += 1;
            }
            if memchr::memchr(b'\r', body).is_some() {
                return Ok(None);
            }
            if body.first() == Some(&b'>') {
                let Some(name) = header_name(body) else { return Ok(None) };
                part.records.extend(current.take());
                current = Some(Seen { offset: at, line: part.lines, len: 0, id_hash: id_hash(name) });
            } else if let Some(rec) = current.as_mut() {
                // Branch-free over the line: the bad byte, if any, is named by the reader.
                let (mut skipped, mut bad) = (0u32, false);
                for &b in body {
                    let c = matrix.code[b as usize];
                    skipped += (c == SKIP) as u32;
                    bad |= c == INVALID;
                }
                if bad {
                    return Ok(None);
                }
                rec.len += body.len() as u64 - skipped as u64;
            } else if !body.iter().all(|b| b.is_ascii_whitespace()) {
                return Ok(None);
            }
        }
        part.records.extend(current);
        Ok(Some(part))
    }

    /// The id of the record whose `>` is at byte `offset` (for a warning's words).
    fn header_id(path: &Path, offset: u64) -> String {
        let read = || -> std::io::Result<Vec<u8>> {
            let mut f = std::fs::File::open(path)?;
            f.seek(SeekFrom::Start(offset))?;
            let mut line = Vec::new();
            BufReader::new(f.take(1 << 16)).read_until(b'\n', &mut line)?;
            Ok(line)
        };
        match read() {
            Ok(line) => header_name(&line).map(|n| String::from_utf8_lossy(n).into_owned()).unwrap_or_default(),
            Err(e) => format!("(unreadable: {e})"),
        }
    }
}

/// A gzip-compressed FASTA database decompressed to a temporary file for a search
/// (whose chunks are read at byte offsets), removed when dropped.
#[derive(Debug)]
pub struct Decompressed {
    /// The temporary file.
    pub path: PathBuf,
}

impl Decompressed {
    /// Decompresses the gzip file `gz` into a new file in the temporary folder
    /// (`TMPDIR`); as large as the text.
    ///
    /// # Errors
    /// A gzip stream that is corrupt or cut short, or a temporary file that cannot be
    /// written (both named).
    pub fn new(gz: &Path) -> Result<Decompressed, String> {
        let stem = gz.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let path = std::env::temp_dir().join(format!("chariot-align-{}-{stem}", std::process::id()));
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| format!("cannot create {} to decompress {} into: {e}", path.display(), gz.display()))?;
        // Owned from here: an error below removes it.
        let d = Decompressed { path };
        let mut text = crate::fasta::open(gz, "database")?;
        std::io::copy(&mut text, &mut out)
            .map_err(|e| format!("{}: cannot decompress into {}: {e}", gz.display(), d.path.display()))?;
        Ok(d)
    }
}

impl Drop for Decompressed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One chunk as read: names, residues and lengths, in file order.
#[derive(Debug, Default)]
pub struct ChunkData {
    /// Record names.
    pub ids: Vec<String>,
    /// All residues, concatenated.
    pub codes: Vec<u8>,
    /// Record lengths.
    pub lens: Vec<u32>,
}

/// Reads chunk `info` of `path` and checks it against the index.
pub fn read_chunk(path: &Path, info: &ChunkInfo, matrix: &Matrix) -> Result<ChunkData, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open database {}: {e}", path.display()))?;
    f.seek(SeekFrom::Start(info.start)).map_err(|e| format!("{}: seek: {e}", path.display()))?;
    let mut bytes = Vec::with_capacity((info.end - info.start) as usize);
    f.take(info.end - info.start)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: read error: {e}", path.display()))?;
    let mut d = ChunkData {
        ids: Vec::with_capacity(info.nseq),
        codes: Vec::with_capacity(info.residues as usize),
        lens: Vec::with_capacity(info.nseq),
    };
    // The fast path splits lines at `\n` only: a chunk whose counts then differ from
    // the index's (lines ending with a lone `\r`) is read again by the careful reader,
    // as is anything unusual, which it finds and names by its line.
    if !parse_fast(&bytes, matrix, &mut d) || d.ids.len() != info.nseq || d.codes.len() as u64 != info.residues {
        d = ChunkData::default();
        let mut r = FastaReader::at(&bytes[..], &path.display().to_string(), info.start, info.first_line);
        let mut seq = Vec::new();
        while let Some(rec) = r.next_record(matrix, &mut seq)? {
            d.ids.push(rec.id);
            d.lens.push(seq.len() as u32);
            d.codes.extend_from_slice(&seq);
        }
    }
    if d.ids.len() != info.nseq || d.codes.len() as u64 != info.residues {
        return Err(format!(
            "{}: the file changed since it was indexed (chunk at byte {}: {} records, {} residues; indexed {}, {})",
            path.display(),
            info.start,
            d.ids.len(),
            d.codes.len(),
            info.nseq,
            info.residues
        ));
    }
    Ok(d)
}

/// Chunk `info` of either kind of database: its records (a prepared database's in
/// sorted order) and each one's index in the FASTA file.
pub fn read_subjects(index: &DbIndex, info: &ChunkInfo, matrix: &Matrix) -> Result<(ChunkData, Vec<u64>), String> {
    match &index.prepared {
        Some(layout) => crate::prepared::read_chunk(&index.path, layout, info),
        None => {
            let d = read_chunk(&index.path, info, matrix)?;
            let seqs = (info.first_seq..info.first_seq + info.nseq as u64).collect();
            Ok((d, seqs))
        }
    }
}

/// The fast path of [`read_chunk`]: plain well-formed FASTA only; `false` on anything
/// else (a bad byte, a nameless header, text before the first header), for which the
/// careful reader runs instead.
fn parse_fast(bytes: &[u8], matrix: &Matrix, d: &mut ChunkData) -> bool {
    let mut start = 0usize;
    for line in bytes.split(|&b| b == b'\n') {
        if line.first() == Some(&b'>') {
            if !d.ids.is_empty() {
                d.lens.push((d.codes.len() - start) as u32);
            }
            let Some(name) = line[1..].split(|b| b.is_ascii_whitespace()).find(|w| !w.is_empty()) else {
                return false;
            };
            d.ids.push(String::from_utf8_lossy(name).into_owned());
            start = d.codes.len();
        } else if d.ids.is_empty() {
            if !line.iter().all(|b| b.is_ascii_whitespace()) {
                return false;
            }
        } else {
            let at = d.codes.len();
            let mut flags = 0u8;
            d.codes.extend(line.iter().map(|&b| {
                let c = matrix.code[b as usize];
                flags |= c;
                c
            }));
            if flags & 0x80 != 0 {
                // Blanks or `\r` to drop, or a bad byte.
                let mut w = at;
                for k in at..d.codes.len() {
                    match d.codes[k] {
                        crate::matrix::SKIP => {}
                        crate::matrix::INVALID => return false,
                        c => {
                            d.codes[w] = c;
                            w += 1;
                        }
                    }
                }
                d.codes.truncate(w);
            }
        }
    }
    if !d.ids.is_empty() {
        d.lens.push((d.codes.len() - start) as u32);
    }
    true
}

/// Packs `d` into `out` (the layout above) and returns the permutation: packed
/// position → record index in the chunk.
pub fn pack(d: &ChunkData, out: &mut [u8]) -> Vec<u32> {
    let n = d.lens.len();
    let mut starts = Vec::with_capacity(n);
    let mut s = 0usize;
    for &l in &d.lens {
        starts.push(s);
        s += l as usize;
    }
    let mut perm: Vec<u32> = (0..n as u32).collect();
    perm.sort_by_key(|&i| std::cmp::Reverse(d.lens[i as usize]));
    let res_off = ((n + 1) * 4).next_multiple_of(16);
    let mut off = 0u32;
    for (k, &i) in perm.iter().enumerate() {
        out[k * 4..k * 4 + 4].copy_from_slice(&off.to_le_bytes());
        let (a, l) = (starts[i as usize], d.lens[i as usize] as usize);
        out[res_off + off as usize..res_off + off as usize + l].copy_from_slice(&d.codes[a..a + l]);
        off += l as u32;
    }
    out[n * 4..n * 4 + 4].copy_from_slice(&off.to_le_bytes());
    perm
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an index says: its chunks, counts and warnings (or its error).
    fn summary(r: Result<DbIndex, String>) -> Result<(Vec<ChunkInfo>, u64, u64, u64, crate::fasta::Warnings), String> {
        r.map(|i| (i.chunks, i.sequences, i.residues, i.max_len, i.warnings))
    }

    /// The index in parts (threads) is the one reader's, whatever the parts: chunks,
    /// line numbers, residue counts, warnings (empty records, duplicate ids across
    /// parts) and errors, for plain files and for those the parts hand back to the
    /// reader (a lone `\r`, a byte-order mark, a bad byte, a header without a name).
    #[test]
    fn index_in_parts_is_the_readers() {
        let dir = std::env::temp_dir().join(format!("chariot-align-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("db.fa");
        let m = Matrix::blosum62();
        let mut x = 7u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut plain = String::from("\n  \n");
        for i in 0..400 {
            let id = if rnd(40) == 0 { 3 } else { i };
            plain += &format!(">s{id} some words\n");
            for _ in 0..rnd(4) {
                let len = rnd(90) as usize;
                plain.extend((0..len).map(|k| {
                    if k % 17 == 16 {
                        ' '
                    } else {
                        "ARNDCQEGHILKMFPSTWYV"[k % 20..].chars().next().unwrap()
                    }
                }));
                plain += if rnd(3) == 0 { "\n\n" } else { "\n" };
            }
        }
        let crlf = plain.replace('\n', "\r\n");
        let no_end = plain.trim_end().to_string();
        let lone_cr = plain.replacen('\n', "\r", 30);
        let bom = format!("\u{feff}{plain}");
        let bad = plain.replacen("AR", "A#", 1);
        let nameless = plain.replacen(">s5 some words", ">  ", 1);
        let before = format!("XX\n{plain}");
        for (name, text) in [
            ("plain", &plain),
            ("crlf", &crlf),
            ("no final line end", &no_end),
            ("lone cr", &lone_cr),
            ("bom", &bom),
            ("bad byte", &bad),
            ("nameless", &nameless),
            ("data before", &before),
        ] {
            std::fs::write(&p, text).unwrap();
            let one = summary(DbIndex::build_with(&p, &m, 7, 1));
            let in_parts = parallel::index(&p, &m, 7, text.len() as u64, 8).unwrap().is_some();
            assert_eq!(in_parts, ["plain", "crlf", "no final line end"].contains(&name), "{name}: read in parts");
            for threads in [2, 3, 8, 64] {
                assert_eq!(summary(DbIndex::build_with(&p, &m, 7, threads)), one, "{name}, {threads} parts");
            }
            if name == "plain" {
                let w = &one.as_ref().unwrap().4;
                assert!(w.duplicates > 0 && w.empty > 0, "{w:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn index_chunks_and_pack() {
        let dir = std::env::temp_dir().join(format!("chariot-align-db-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("db.fa");
        std::fs::write(&p, ">a\nAR\n>b\n\n>c\nWWW\nW\n>d x\nC\n>e\nAAAAA\n").unwrap();
        let m = Matrix::blosum62();
        let idx = DbIndex::build(&p, &m, 2).unwrap();
        assert_eq!((idx.sequences, idx.residues, idx.max_len, idx.chunks.len()), (5, 12, 5, 3));
        assert_eq!(idx.chunks[1].first_seq, 2);
        assert_eq!(idx.chunks[1].first_line, 5);
        assert_eq!((idx.chunks[1].nseq, idx.chunks[1].residues), (2, 5));
        let d = read_chunk(&p, &idx.chunks[1], &m).unwrap();
        assert_eq!(d.ids, ["c", "d"]);
        let mut out = vec![0u8; idx.chunks[1].packed_bytes()];
        let perm = pack(&d, &mut out);
        assert_eq!(perm, [0, 1]);
        assert_eq!(&out[..12], &[0, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0]);
        assert_eq!(&out[16..], &[17, 17, 17, 17, 4]);
        let d0 = read_chunk(&p, &idx.chunks[0], &m).unwrap();
        let mut out = vec![0u8; idx.chunks[0].packed_bytes()];
        assert_eq!(pack(&d0, &mut out), [0, 1], "stable for ties, longest first");

        // A bad byte that appears after indexing is found by the careful reader.
        std::fs::write(&p, ">a\nAR\n>b\n\n>c\nW-W\nW\n>d x\nC\n>e\nAAAAA\n").unwrap();
        let e = read_chunk(&p, &idx.chunks[1], &m).unwrap_err();
        assert!(e.contains("line 6, column 2"), "{e}");
        std::fs::write(&p, "").unwrap();
        assert!(DbIndex::build(&p, &m, 2).unwrap_err().contains("no FASTA records"));
        assert!(DbIndex::build(&dir.join("missing.fa"), &m, 2).unwrap_err().contains("cannot open"));
        std::fs::write(&p, ">a\nAR\n>b\nA#\n").unwrap();
        assert!(DbIndex::build(&p, &m, 2).unwrap_err().contains("line 4"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
