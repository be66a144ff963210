//! A database prepared once (`chariot-align makedb`): the residues encoded as the
//! kernel reads them, the sequences sorted by length (longest first), and an index, so
//! that a search's file read stage is a copy instead of a parse.
//!
//! # The file (version 1, every integer little-endian)
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `\x89CADB\r\n\x1a` (a binary file; the `\r\n` and `\x1a` catch text-mode copies) |
//! | 8..12 | format version, `u32` (1) |
//! | 12..16 | alphabet size L, `u32` (1..=32) |
//! | 16..48 | the alphabet: the L letters, in code order, of the matrix whose codes the residues are (zero padded) |
//! | 48..56 | sequences n, `u64` |
//! | 56..64 | residues R, `u64` |
//! | 64..72 | longest sequence, `u64` |
//! | 72..80 | bytes of the names B, `u64` |
//! | 80..128 | reserved, zero |
//!
//! Then five sections, each right after the one before, every table in sorted order
//! (position k is the k-th longest sequence; ties keep the FASTA file's order):
//! residue offsets `[u64; n + 1]` (into the residues; offset 0 first, R last, lengths
//! never growing), original indices `[u64; n]` (the record's position in the FASTA file, a
//! permutation of 0..n), name offsets `[u64; n + 1]` (into the names), the names (B
//! bytes, the first word of each header), and the residues (R bytes, one code each). The
//! file's size is exactly the sum; anything else is an error naming the file.
//!
//! The codes are positions in the alphabet, so a prepared database does not depend on
//! the scores or the gap costs, only on the matrix's letters: a search with a matrix of
//! the same letters in the same order reads it; another is refused, naming both
//! alphabets (run `makedb --matrix`). Letters that the matrix lacks were stored as `X`
//! (see [`crate::matrix`]).
//!
//! # Reading
//!
//! Opening reads the header and streams the three tables once (24 bytes a sequence),
//! checking them and cutting the sorted sequences into chunks: at most `--chunk`
//! sequences and at most [`BUDGET`] × the mean chunk's residues (a chunk of long
//! sequences holds fewer of them, so that slots stay near the FASTA search's size); a
//! sequence longer than that is a chunk of its own. Consecutive sorted sequences have
//! similar lengths, so the kernel's lanes rarely wait for a chunk's longest subject. The
//! file read stage of a chunk ([`read_into`]) reads its slice of each table and its
//! residues with one `read_exact` straight into the pinned host slot, then checks that
//! every code is in the alphabet (the kernel indexes its profile by them). Nothing else
//! of the file is held, so a database larger than host memory streams.
//!
//! # Costs
//!
//! `makedb` holds the encoded residues and the names in memory while it sorts (about one
//! byte per residue); preparing a database larger than memory is not supported yet. A
//! search's host slots (and the GPU's chunk and scratch buffers) are sized by the largest
//! chunk, which sorting makes larger: on the paper-shaped database (`generate`, 536,000
//! sequences, 405 M residues, 66 chunks either way) the largest prepared chunk holds
//! 24.8 M residues (6,632 sequences of 35,213 down to about 2,850) against a mean of
//! 6.1 M, so 24 slots pin about 600 MB; a smaller `--chunk` or `--slots` pins less.
//! Measured on the 2-core development host (sim-instant backend, an 8-residue query,
//! files in the page cache): `makedb` 2.1 s (430 MB resident); `search` indexed in
//! 0.55 s (FASTA) against 0.01 s (prepared), its file read stage summed 1,776 ms against
//! 105 ms, and it was resident in 246 MB against 722 MB, with the same TSV rows and top
//! hits. No GPU measurement yet.

use crate::db::{ChunkData, ChunkInfo, DbIndex};
use crate::fasta::FastaReader;
use crate::matrix::{Matrix, MAX_LETTERS};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The first eight bytes of a prepared database.
pub const MAGIC: [u8; 8] = *b"\x89CADB\r\n\x1a";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Bytes of the header.
pub const HEADER: u64 = 128;
/// A chunk holds at most this many times the mean chunk's residues (see the module docs).
pub const BUDGET: u64 = 4;

/// The header's counts and where the sections start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Letters of the alphabet, in code order.
    pub alphabet: Vec<u8>,
    /// Sequences n.
    pub sequences: u64,
    /// Residues R.
    pub residues: u64,
    /// Longest sequence.
    pub max_len: u64,
    /// Bytes of the names.
    pub name_bytes: u64,
}

impl Layout {
    /// Start of the residue offsets.
    pub fn offsets_at(&self) -> u64 {
        HEADER
    }
    /// Start of the original indices.
    pub fn orig_at(&self) -> u64 {
        self.offsets_at() + 8 * (self.sequences + 1)
    }
    /// Start of the name offsets.
    pub fn name_offsets_at(&self) -> u64 {
        self.orig_at() + 8 * self.sequences
    }
    /// Start of the names.
    pub fn names_at(&self) -> u64 {
        self.name_offsets_at() + 8 * (self.sequences + 1)
    }
    /// Start of the residues.
    pub fn residues_at(&self) -> u64 {
        self.names_at() + self.name_bytes
    }
    /// The file's size.
    pub fn file_bytes(&self) -> u64 {
        self.residues_at() + self.residues
    }

    /// The header's bytes.
    pub fn header(&self) -> [u8; HEADER as usize] {
        let mut h = [0u8; HEADER as usize];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&(self.alphabet.len() as u32).to_le_bytes());
        h[16..16 + self.alphabet.len()].copy_from_slice(&self.alphabet);
        for (i, v) in [self.sequences, self.residues, self.max_len, self.name_bytes].into_iter().enumerate() {
            h[48 + 8 * i..56 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        h
    }

    /// Parses and checks a header (`what` names the file in errors).
    pub fn parse(h: &[u8], what: &str) -> Result<Layout, String> {
        if h.len() < 8 || h[0..8] != MAGIC {
            return Err(format!(
                "{what}: not a chariot-align prepared database (its first bytes are not the magic `\\x89CADB\\r\\n\\x1a`)"
            ));
        }
        if h.len() < HEADER as usize {
            return Err(format!("{what}: truncated prepared database: {} bytes, shorter than its header", h.len()));
        }
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
        let version = u32_at(8);
        if version != VERSION {
            return Err(format!(
                "{what}: prepared database format version {version} is not supported (this chariot-align reads version {VERSION}); run `chariot-align makedb` again"
            ));
        }
        let l = u32_at(12) as usize;
        if l == 0 || l > MAX_LETTERS {
            return Err(format!("{what}: corrupt header: alphabet of {l} letters (1 to {MAX_LETTERS} allowed)"));
        }
        let layout = Layout {
            alphabet: h[16..16 + l].to_vec(),
            sequences: u64_at(48),
            residues: u64_at(56),
            max_len: u64_at(64),
            name_bytes: u64_at(72),
        };
        // Counts that cannot describe a file (their sizes overflow) are corrupt.
        let ok = layout
            .sequences
            .checked_add(1)
            .and_then(|n1| n1.checked_mul(24))
            .and_then(|t| t.checked_add(HEADER))
            .and_then(|t| t.checked_add(layout.name_bytes))
            .and_then(|t| t.checked_add(layout.residues))
            .is_some();
        if !ok || layout.sequences == 0 {
            return Err(format!(
                "{what}: corrupt header: {} sequences, {} residues, {} name bytes",
                layout.sequences, layout.residues, layout.name_bytes
            ));
        }
        Ok(layout)
    }
}

/// What `makedb` wrote.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The file's layout.
    pub layout: Layout,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Prepares the FASTA database `fasta` as `out` with the codes of `matrix`, showing
/// progress when asked. The file is written beside `out` and renamed at the end, so a
/// failed run leaves no partial database under that name.
///
/// # Errors
/// What [`DbIndex::build`] refuses (unreadable or malformed FASTA, a bad residue, no
/// records), and an unwritable output.
pub fn make(fasta: &Path, out: &Path, matrix: &Matrix, progress: bool) -> Result<Summary, String> {
    let f = std::fs::File::open(fasta).map_err(|e| format!("cannot open database {}: {e}", fasta.display()))?;
    let bytes_in = f.metadata().map(|m| m.len()).unwrap_or(0);
    let reading = progress_bar(progress, bytes_in, "reading");
    let mut r = FastaReader::new(BufReader::with_capacity(1 << 20, f), &fasta.display().to_string());
    let (mut codes, mut names) = (Vec::<u8>::new(), Vec::<u8>::new());
    // Per record in file order: residue start, length, name start.
    let (mut starts, mut lens, mut name_starts) = (Vec::<u64>::new(), Vec::<u64>::new(), Vec::<u64>::new());
    let mut seq = Vec::new();
    while let Some(rec) = r.next_record(matrix, &mut seq)? {
        starts.push(codes.len() as u64);
        lens.push(seq.len() as u64);
        name_starts.push(names.len() as u64);
        codes.extend_from_slice(&seq);
        names.extend_from_slice(rec.id.as_bytes());
        if starts.len() % 4096 == 0 {
            reading.set_position(rec.offset);
        }
    }
    name_starts.push(names.len() as u64);
    reading.finish_and_clear();
    let n = starts.len();
    if n == 0 {
        return Err(format!("{}: the database holds no FASTA records", fasta.display()));
    }
    let mut order: Vec<u64> = (0..n as u64).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lens[i as usize]));
    let layout = Layout {
        alphabet: matrix.letters.clone(),
        sequences: n as u64,
        residues: codes.len() as u64,
        max_len: lens.iter().copied().max().unwrap_or(0),
        name_bytes: names.len() as u64,
    };
    let tmp = PathBuf::from(format!("{}.partial", out.display()));
    let werr = |e: std::io::Error| format!("cannot write {}: {e}", tmp.display());
    let file = std::fs::File::create(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let mut w = BufWriter::with_capacity(8 << 20, file);
    let bar = progress_bar(progress, layout.file_bytes(), "writing");
    let result = (|| {
        w.write_all(&layout.header()).map_err(werr)?;
        let table = |w: &mut BufWriter<std::fs::File>, values: &mut dyn Iterator<Item = u64>| {
            for v in values {
                w.write_all(&v.to_le_bytes()).map_err(werr)?;
            }
            Ok::<(), String>(())
        };
        let mut off = 0u64;
        let mut offsets = order.iter().map(|&i| {
            let o = off;
            off += lens[i as usize];
            o
        });
        table(&mut w, &mut offsets)?;
        table(&mut w, &mut std::iter::once(layout.residues))?;
        table(&mut w, &mut order.iter().copied())?;
        let mut noff = 0u64;
        let mut name_offsets = order.iter().map(|&i| {
            let (i, o) = (i as usize, noff);
            noff += name_starts[i + 1] - name_starts[i];
            o
        });
        table(&mut w, &mut name_offsets)?;
        table(&mut w, &mut std::iter::once(layout.name_bytes))?;
        for &i in &order {
            let i = i as usize;
            w.write_all(&names[name_starts[i] as usize..name_starts[i + 1] as usize]).map_err(werr)?;
        }
        bar.set_position(layout.residues_at());
        for (k, &i) in order.iter().enumerate() {
            let (s, l) = (starts[i as usize] as usize, lens[i as usize] as usize);
            w.write_all(&codes[s..s + l]).map_err(werr)?;
            if k % 4096 == 0 {
                bar.set_position(layout.residues_at() + s as u64);
            }
        }
        w.flush().map_err(werr)?;
        w.get_ref().sync_all().map_err(werr)?;
        Ok::<(), String>(())
    })();
    bar.finish_and_clear();
    if let Err(e) = result {
        std::fs::remove_file(&tmp).ok();
        return Err(e);
    }
    std::fs::rename(&tmp, out).map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), out.display()))?;
    let bytes = layout.file_bytes();
    Ok(Summary { layout, bytes })
}

fn progress_bar(progress: bool, len: u64, what: &str) -> indicatif::ProgressBar {
    if !progress {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    let t = format!("{{spinner}} [{{elapsed_precise}}] {what} {{wide_bar}} {{bytes}}/{{total_bytes}}, eta {{eta}}");
    b.set_style(indicatif::ProgressStyle::with_template(&t).expect("template"));
    b
}

/// Whether `path` starts as a prepared database does: the magic, or a first byte of
/// 0x89 (no FASTA file starts so), which [`open`] then refuses with the reason.
pub fn looks_prepared(path: &Path) -> Result<bool, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open database {}: {e}", path.display()))?;
    let mut first = [0u8; 1];
    let n = f.read(&mut first).map_err(|e| format!("{}: read error: {e}", path.display()))?;
    Ok(n == 1 && first[0] == MAGIC[0])
}

/// Reads `n` little-endian `u64`s.
fn read_u64s(r: &mut impl Read, n: usize, out: &mut Vec<u64>) -> std::io::Result<()> {
    let mut bytes = vec![0u8; n * 8];
    r.read_exact(&mut bytes)?;
    out.clear();
    out.extend(bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))));
    Ok(())
}

/// Opens a prepared database: checks the header against `matrix`'s alphabet and the
/// tables, and cuts the sequences into chunks of at most `chunk_seqs` (see the module docs).
///
/// # Errors
/// A missing file, another magic, another version, another alphabet, a size other than
/// the header's, offsets out of range or out of order, original indices that are no
/// permutation; each names the file.
pub fn open(path: &Path, matrix: &Matrix, chunk_seqs: usize) -> Result<DbIndex, String> {
    if chunk_seqs == 0 {
        return Err("chunk size must be at least 1 sequence".into());
    }
    let what = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open database {what}: {e}"))?;
    let bytes = f.metadata().map(|m| m.len()).map_err(|e| format!("{what}: {e}"))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut h = Vec::with_capacity(HEADER as usize);
    (&mut r).take(HEADER).read_to_end(&mut h).map_err(|e| format!("{what}: read error: {e}"))?;
    let layout = Layout::parse(&h, &what)?;
    if layout.alphabet != matrix.letters {
        return Err(format!(
            "{what}: prepared for the alphabet `{}`, but the matrix {} has `{}`; run `chariot-align makedb --matrix` with this matrix",
            String::from_utf8_lossy(&layout.alphabet),
            matrix.name,
            String::from_utf8_lossy(&matrix.letters)
        ));
    }
    if bytes != layout.file_bytes() {
        return Err(format!(
            "{what}: {} prepared database: {bytes} bytes, its header describes {} ({} sequences, {} residues)",
            if bytes < layout.file_bytes() { "truncated" } else { "corrupt" },
            layout.file_bytes(),
            layout.sequences,
            layout.residues
        ));
    }
    let n = layout.sequences;
    let corrupt = |table: &str, k: u64, why: String| format!("{what}: corrupt prepared database: {table} {k}: {why}");
    let rerr = |e: std::io::Error| format!("{what}: read error: {e}");
    // The residue offsets: cut into chunks while checking them.
    let budget = (layout.residues.div_ceil(n).saturating_mul(chunk_seqs as u64).saturating_mul(BUDGET)).max(1);
    let mut chunks: Vec<ChunkInfo> = Vec::new();
    let mut block = Vec::new();
    let (mut prev, mut prev_len) = (0u64, u64::MAX);
    let mut k = 0u64;
    while k <= n {
        let take = (n + 1 - k).min(1 << 16) as usize;
        read_u64s(&mut r, take, &mut block).map_err(rerr)?;
        for &off in &block {
            if k == 0 {
                if off != 0 {
                    return Err(corrupt("residue offset", 0, format!("{off}, not 0")));
                }
            } else {
                if off < prev || off > layout.residues {
                    return Err(corrupt(
                        "residue offset",
                        k,
                        format!("{off} out of range (previous {prev}, residues {})", layout.residues),
                    ));
                }
                let (len, at) = (off - prev, k - 1);
                if len > prev_len || len > layout.max_len {
                    return Err(corrupt(
                        "residue offset",
                        k,
                        format!(
                            "sequence {at} of {len} residues is out of order (previous {prev_len}, longest {})",
                            layout.max_len
                        ),
                    ));
                }
                let start = layout.residues_at() + prev;
                let full = chunks.last().is_none_or(|c| c.nseq == chunk_seqs || c.residues + len > budget);
                if full {
                    chunks.push(ChunkInfo {
                        start,
                        end: start,
                        first_line: 0,
                        first_seq: at,
                        nseq: 0,
                        residues: 0,
                        max_len: len,
                    });
                }
                let c = chunks.last_mut().expect("a chunk");
                c.nseq += 1;
                c.residues += len;
                c.end = start + len;
                if c.residues >= u32::MAX as u64 - 64 {
                    return Err(format!("{what}: sequence {at} makes a chunk of over 4 GiB of residues"));
                }
                prev_len = len;
            }
            prev = off;
            k += 1;
        }
    }
    if prev != layout.residues {
        return Err(corrupt("residue offset", n, format!("{prev}, not the residues {}", layout.residues)));
    }
    // The original indices: a permutation of 0..n.
    let mut seen = vec![0u64; n.div_ceil(64) as usize];
    let mut k = 0u64;
    while k < n {
        let take = (n - k).min(1 << 16) as usize;
        read_u64s(&mut r, take, &mut block).map_err(rerr)?;
        for &i in &block {
            if i >= n || seen[(i / 64) as usize] & (1 << (i % 64)) != 0 {
                return Err(corrupt("original index", k, format!("{i} is out of range or repeated ({n} sequences)")));
            }
            seen[(i / 64) as usize] |= 1 << (i % 64);
            k += 1;
        }
    }
    // The name offsets.
    let (mut k, mut prev) = (0u64, 0u64);
    while k <= n {
        let take = (n + 1 - k).min(1 << 16) as usize;
        read_u64s(&mut r, take, &mut block).map_err(rerr)?;
        for &off in &block {
            if (k == 0 && off != 0) || off < prev || off > layout.name_bytes || (k == n && off != layout.name_bytes) {
                return Err(corrupt(
                    "name offset",
                    k,
                    format!("{off} out of range (previous {prev}, name bytes {})", layout.name_bytes),
                ));
            }
            prev = off;
            k += 1;
        }
    }
    Ok(DbIndex {
        path: path.to_path_buf(),
        chunks,
        sequences: n,
        residues: layout.residues,
        max_len: layout.max_len,
        bytes,
        prepared: Some(layout),
    })
}

/// One chunk of a prepared database as its read stage leaves it: the residue offsets
/// packed (the layout of [`crate::db`]), and the names and original indices aside.
#[derive(Debug, Default)]
pub struct ChunkRead {
    /// Names, in sorted order.
    pub ids: Vec<String>,
    /// Original indices, in sorted order.
    pub seqs: Vec<u64>,
}

/// The file read stage of chunk `info` of the prepared database `layout` at `path`:
/// writes the packed chunk into `buf` (offsets, then the residues with one `read_exact`)
/// and returns the names and original indices. The sequences are already longest
/// first, so packed position = position in the chunk.
pub fn read_into(path: &Path, layout: &Layout, info: &ChunkInfo, buf: &mut [u8]) -> Result<ChunkRead, String> {
    let what = path.display();
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open database {what}: {e}"))?;
    let rerr = |e: std::io::Error| format!("{what}: read error (the file changed since it was opened?): {e}");
    let at = |f: &mut std::fs::File, pos: u64| f.seek(SeekFrom::Start(pos)).map(|_| ()).map_err(rerr);
    let (k0, n) = (info.first_seq, info.nseq);
    let mut v = Vec::with_capacity(n + 1);
    at(&mut f, layout.offsets_at() + 8 * k0)?;
    read_u64s(&mut f, n + 1, &mut v).map_err(rerr)?;
    let base = v[0];
    let changed = || format!("{what}: the file changed since it was opened (chunk of sequence {k0})");
    if base != info.start - layout.residues_at() || v[n] - base != info.residues {
        return Err(changed());
    }
    for (k, &off) in v.iter().enumerate() {
        let rel = off.checked_sub(base).filter(|&r| r <= info.residues).ok_or_else(changed)?;
        buf[k * 4..k * 4 + 4].copy_from_slice(&(rel as u32).to_le_bytes());
    }
    let res = info.res_off();
    at(&mut f, info.start)?;
    let residues = &mut buf[res..res + info.residues as usize];
    f.read_exact(residues).map_err(rerr)?;
    let top = residues.iter().copied().max().unwrap_or(0);
    if top as usize >= layout.alphabet.len() {
        return Err(format!(
            "{what}: corrupt prepared database: residue code {top} in the chunk of sequence {k0} (alphabet of {})",
            layout.alphabet.len()
        ));
    }
    let mut seqs = Vec::with_capacity(n);
    at(&mut f, layout.orig_at() + 8 * k0)?;
    read_u64s(&mut f, n, &mut seqs).map_err(rerr)?;
    at(&mut f, layout.name_offsets_at() + 8 * k0)?;
    read_u64s(&mut f, n + 1, &mut v).map_err(rerr)?;
    if v.windows(2).any(|w| w[1] < w[0]) || v[n] > layout.name_bytes {
        return Err(changed());
    }
    let mut names = vec![0u8; (v[n] - v[0]) as usize];
    at(&mut f, layout.names_at() + v[0])?;
    f.read_exact(&mut names).map_err(rerr)?;
    let ids = v
        .windows(2)
        .map(|w| String::from_utf8_lossy(&names[(w[0] - v[0]) as usize..(w[1] - v[0]) as usize]).into_owned())
        .collect();
    Ok(ChunkRead { ids, seqs })
}

/// Chunk `info` of a prepared database as [`ChunkData`] (sorted order) and the original
/// indices: what the CPU baseline and the round-trip test read.
pub fn read_chunk(path: &Path, layout: &Layout, info: &ChunkInfo) -> Result<(ChunkData, Vec<u64>), String> {
    let mut buf = vec![0u8; info.packed_bytes()];
    let r = read_into(path, layout, info, &mut buf)?;
    let off = |k: usize| u32::from_le_bytes(buf[k * 4..k * 4 + 4].try_into().expect("4 bytes"));
    let lens = (0..info.nseq).map(|k| off(k + 1) - off(k)).collect();
    let codes = buf[info.res_off()..].to_vec();
    Ok((ChunkData { ids: r.ids, codes, lens }, r.seqs))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
