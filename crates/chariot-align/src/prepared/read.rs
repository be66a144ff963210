//! Reading a prepared database: its index (header and tables, checked) and each chunk's
//! tables and residues, the residues straight into the pinned host slot.

use super::*;
use crate::db::{ChunkData, ChunkInfo, DbIndex};
use crate::matrix::Matrix;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

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
        warnings: crate::fasta::Warnings {
            empty: layout.empty_records,
            duplicates: layout.duplicate_ids,
            examples: Vec::new(),
        },
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
    // The checksums: every byte of the chunk read above, checked.
    let mut sums = vec![0u8; 4 * n];
    at(&mut f, layout.checksums_at() + 4 * k0)?;
    f.read_exact(&mut sums).map_err(rerr)?;
    let offsets = |k: usize| u32::from_le_bytes(buf[k * 4..k * 4 + 4].try_into().expect("4 bytes")) as usize;
    let mut ids = Vec::with_capacity(n);
    for k in 0..n {
        let name = &names[(v[k] - v[0]) as usize..(v[k + 1] - v[0]) as usize];
        let (r0, r1) = (offsets(k), offsets(k + 1));
        let stored = u32::from_le_bytes(sums[4 * k..4 * k + 4].try_into().expect("4 bytes"));
        if checksum(seqs[k], (r1 - r0) as u64, name, &buf[res + r0..res + r1]) != stored {
            return Err(format!(
                "{what}: corrupt prepared database: checksum mismatch in the chunk of sorted sequences {k0}..{} \
                 (bytes {}..{}), at sequence {} (its residues at byte {}, its checksum at byte {}); run `chariot-align makedb` again",
                k0 + n as u64,
                info.start,
                info.end,
                k0 + k as u64,
                info.start + r0 as u64,
                layout.checksums_at() + 4 * (k0 + k as u64)
            ));
        }
        ids.push(String::from_utf8_lossy(name).into_owned());
    }
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
