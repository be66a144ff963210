//! The database: an index of chunks built by one streaming pass over the FASTA file
//! (no residues kept), and the per-chunk read-and-pack step that the pipeline's
//! file-read callback runs.
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

    /// Scans `path` once, checking every record (see [`crate::fasta`]).
    ///
    /// # Errors
    /// An unreadable file, malformed FASTA, a bad residue, an empty database, or a
    /// chunk over 4 GiB of residues.
    pub fn build(path: &Path, matrix: &Matrix, chunk_seqs: usize) -> Result<DbIndex, String> {
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
        let mut r = FastaReader::new(BufReader::with_capacity(1 << 20, f), &path.display().to_string());
        let mut seq = Vec::new();
        let mut chunks: Vec<ChunkInfo> = Vec::new();
        let (mut sequences, mut residues, mut max_len) = (0u64, 0u64, 0u64);
        while let Some(rec) = r.next_record(matrix, &mut seq)? {
            let len = seq.len() as u64;
            if chunks.last().is_none_or(|c| c.nseq == chunk_seqs) {
                if let Some(c) = chunks.last_mut() {
                    c.end = rec.offset;
                }
                chunks.push(ChunkInfo {
                    start: rec.offset,
                    end: bytes,
                    first_line: rec.line,
                    first_seq: sequences,
                    nseq: 0,
                    residues: 0,
                    max_len: 0,
                });
            }
            let c = chunks.last_mut().expect("a chunk");
            c.nseq += 1;
            c.residues += len;
            c.max_len = c.max_len.max(len);
            if c.residues >= u32::MAX as u64 - 64 {
                return Err(format!(
                    "{}: chunk {} holds over 4 GiB of residues; use a smaller --chunk",
                    path.display(),
                    chunks.len() - 1
                ));
            }
            sequences += 1;
            residues += len;
            max_len = max_len.max(len);
        }
        if let Some(c) = chunks.last_mut() {
            c.end = bytes;
        }
        if sequences == 0 {
            return Err(format!("{}: the database holds no FASTA records", path.display()));
        }
        Ok(DbIndex {
            path: path.to_path_buf(),
            chunks,
            sequences,
            residues,
            max_len,
            bytes,
            prepared: None,
            warnings: r.warnings().clone(),
        })
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
