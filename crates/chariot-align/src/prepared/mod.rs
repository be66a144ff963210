//! A database prepared once (`chariot-align makedb`): the residues encoded as the
//! kernel reads them, the sequences sorted by length (longest first), and an index, so
//! that a search's file read stage is a copy instead of a parse.
//!
//! # The file (version 2, every integer little-endian)
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `\x89CADB\r\n\x1a` (a binary file; the `\r\n` and `\x1a` catch text-mode copies) |
//! | 8..12 | format version, `u32` (2) |
//! | 12..16 | alphabet size L, `u32` (1..=32) |
//! | 16..48 | the alphabet: the L letters, in code order, of the matrix whose codes the residues are (zero padded) |
//! | 48..56 | sequences n, `u64` |
//! | 56..64 | residues R, `u64` |
//! | 64..72 | longest sequence, `u64` |
//! | 72..80 | bytes of the names B, `u64` |
//! | 80..88 | records with no residues in the FASTA file, `u64` (`makedb`'s warning, repeated by `search`) |
//! | 88..96 | records whose id an earlier record has, `u64` (likewise) |
//! | 96..124 | reserved, zero |
//! | 124..128 | CRC-32 of bytes 0..124, `u32` |
//!
//! Then six sections, each right after the one before, every table in sorted order
//! (position k is the k-th longest sequence; ties keep the FASTA file's order):
//! residue offsets `[u64; n + 1]` (into the residues; offset 0 first, R last, lengths
//! never growing), original indices `[u64; n]` (the record's position in the FASTA file, a
//! permutation of 0..n), name offsets `[u64; n + 1]` (into the names), the names (B
//! bytes, the first word of each header), the residues (R bytes, one code each), and the
//! checksums `[u32; n]`: sequence k's is the CRC-32 (crc32fast) of its original index
//! and its length (`u64` each), its name and its residues. The file's size is exactly the
//! sum; anything else is an error naming the file.
//!
//! Every byte is covered: the header by its CRC, each sequence's table entries, name and
//! residues by its checksum, checked by the file read stage as each chunk is read
//! ([`read_into`]); a mismatch is an error naming the file, the chunk and the byte
//! offset, never a silently different score or name. Chunks are cut at search time (by
//! `--chunk`), so the checksums are per sequence (4 bytes each, 0.5% of a database of
//! 755-residue sequences) and a chunk's are one slice of the table. A file of version 1
//! (which had none) is refused with a message to run `makedb` again.
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
//! hits. On an H100 (2026-11-25, `results/nvidia-h100-x1/workspace/run3/`): makedb
//! 1.47 s; the 7-query search 1.708 s (2,140 GCUPS) against 1.786 s on FASTA, the whole
//! process 3.01 s against 3.43 s, the same TSV rows.
//!
//! The checksums (format version 2) cost the file read stage one CRC-32 pass over what
//! it read: `cargo run --release -p chariot-align --example checksum_cost -- db.cadb` on
//! the paper-shaped database (2-core development host, shared, load about 13; page
//! cache): reading all 66 chunks took 0.22 to 0.24 s of CPU time, of which the check
//! 0.04 to 0.09 s (17 to 38%; crc32fast at 4.5 to 10.6 GB/s of residues); the file is
//! 2.1 MB (0.5%) larger. A search's file read stage (sim-instant backend, an 8-residue
//! query, same host) summed 1.50 s on the prepared database against 14.66 s on FASTA.

mod make;
mod read;

pub use make::{make, Summary};
pub use read::{open, read_chunk, read_into, ChunkRead};

/// The checksum of one sequence: CRC-32 of its original index and length (`u64`
/// little-endian each), its name and its residues.
pub fn checksum(orig: u64, len: u64, name: &[u8], residues: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&orig.to_le_bytes());
    h.update(&len.to_le_bytes());
    h.update(name);
    h.update(residues);
    h.finalize()
}

use crate::matrix::MAX_LETTERS;
use std::io::Read;
use std::path::Path;

/// The first eight bytes of a prepared database.
pub const MAGIC: [u8; 8] = *b"\x89CADB\r\n\x1a";
/// The format version this build writes and reads (2: with checksums).
pub const VERSION: u32 = 2;
/// Where the header's CRC-32 is (it covers the bytes before).
pub const HEADER_CRC_AT: usize = 124;
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
    /// Records with no residues in the FASTA file (counted by `makedb`).
    pub empty_records: u64,
    /// Records whose id an earlier record has (counted by `makedb`).
    pub duplicate_ids: u64,
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
    /// Start of the checksums.
    pub fn checksums_at(&self) -> u64 {
        self.residues_at() + self.residues
    }
    /// The file's size.
    pub fn file_bytes(&self) -> u64 {
        self.checksums_at() + 4 * self.sequences
    }

    /// The header's bytes.
    pub fn header(&self) -> [u8; HEADER as usize] {
        let mut h = [0u8; HEADER as usize];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&(self.alphabet.len() as u32).to_le_bytes());
        h[16..16 + self.alphabet.len()].copy_from_slice(&self.alphabet);
        let counts =
            [self.sequences, self.residues, self.max_len, self.name_bytes, self.empty_records, self.duplicate_ids];
        for (i, v) in counts.into_iter().enumerate() {
            h[48 + 8 * i..56 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        let crc = crc32fast::hash(&h[..HEADER_CRC_AT]);
        h[HEADER_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
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
        if version == 1 {
            return Err(format!(
                "{what}: prepared database format version 1 has no checksums, so a damaged byte could change scores \
                 unseen; this chariot-align reads version {VERSION} only: run `chariot-align makedb` again"
            ));
        }
        if version != VERSION {
            return Err(format!(
                "{what}: prepared database format version {version} is not supported (this chariot-align reads version {VERSION}); run `chariot-align makedb` again"
            ));
        }
        let crc = crc32fast::hash(&h[..HEADER_CRC_AT]);
        if crc != u32_at(HEADER_CRC_AT) {
            return Err(format!(
                "{what}: corrupt prepared database: the header's checksum (bytes 0..{HEADER_CRC_AT}) does not match \
                 (stored {:#010x}, computed {crc:#010x}); run `chariot-align makedb` again",
                u32_at(HEADER_CRC_AT)
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
            empty_records: u64_at(80),
            duplicate_ids: u64_at(88),
        };
        // Counts that cannot describe a file (their sizes overflow) are corrupt.
        let ok = layout
            .sequences
            .checked_add(1)
            .and_then(|n1| n1.checked_mul(28))
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

/// Whether `path` starts as a prepared database does: the magic, or a first byte of
/// 0x89 (no FASTA file starts so), which [`open`] then refuses with the reason.
pub fn looks_prepared(path: &Path) -> Result<bool, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open database {}: {e}", path.display()))?;
    let mut first = [0u8; 1];
    let n = f.read(&mut first).map_err(|e| format!("{}: read error: {e}", path.display()))?;
    Ok(n == 1 && first[0] == MAGIC[0])
}

#[cfg(test)]
mod tests;
