//! chariot-align: Smith-Waterman protein database search on chariot (seed 004
//! §6.3). A query (or several) is aligned against every sequence of a FASTA database,
//! read from disk in chunks of 8,192 sequences through the five-stage pipeline of
//! [`search`]: file read → download → kernel → readback → file write. Where the
//! database fits in half of each GPU's memory it is uploaded first and searched on the
//! GPUs (`--db-on-gpu`, [`search::DbPlacement`]); otherwise each chunk's read and
//! download overlap other chunks' kernels. The database is
//! FASTA or a database prepared once by `makedb` ([`prepared`]: residues encoded and
//! sorted by length, read with a copy).
//! The top hits of each query can also be written as BLAST tabular output
//! ([`tabular`]: alignments by a CPU traceback, [`traceback`]; E-values and bit scores
//! as BLAST+ computes them, [`karlin`]; blastp's composition-based statistics, [`compo`],
//! and SEG masking, [`seg`], as options).
//!
//! ```text
//! chariot-align generate --sequences 536000 --out db.fa --queries-out q.fa
//! chariot-align makedb -d db.fa -o db.cadb     # once: encoded, sorted by length
//! chariot-align search -q q.fa -d db.cadb -o hits.tsv --top 10   # or -d db.fa
//! chariot-align search -q q.fa -d db.fa --tabular hits.m8 --top 50  # BLAST -outfmt 6
//! chariot-align bench  -q q.fa -d db.fa --csv align.csv
//! ```
//!
//! Two Smith-Waterman kernels compute the same scores ([`sw`], `kernels/sw.cu`):
//! `--kernel dpx` (the CUDASW++ comparison) keeps 16-bit scores two to a 32-bit register, aligns two
//! subjects per lane group with Hopper's DPX instructions (`__viaddmax_s16x2`,
//! `__vimax3_s16x2_relu`: max(a + b, c) and max(a, b, c, 0) on both halves at once), and
//! aligns again with the 32-bit pass, in the same launch, the few subjects whose 16-bit
//! score reached 32767 minus the largest matrix score (where it may have saturated);
//! `--kernel portable` is the 32-bit kernel; `--kernel auto` (the default) runs DPX
//! where every GPU is sm_90 or later, and on the sim backends, whose CPU twin emulates
//! the 16-bit arithmetic and the re-pass. `search` prints the kernel that ran and how
//! many scores it re-ran in 32 bits.
//!
//! A search's start is what a short one mostly costs, and `search` prints where it went
//! (`startup … s before the first task: scheduler, kernel, buffers`): the kernel compiles
//! once and is then loaded from chariot's kernel cache on disk (`CHARIOT_KERNEL_CACHE`),
//! while the buffers are allocated; `--slots` defaults to D·S + 4 chunk slots, each
//! pinned at the largest chunk's size (3·D·S pinned 1.2 GB for the paper's database and
//! took 0.45 s of a 1 s start on an H100).
//!
//! No run harms a file it was given: every output goes through [`output`] (an output
//! that is an input is refused; each is written as `<path>.partial`, created before the
//! work and renamed only over a regular file or a missing path). FASTA files may end
//! lines with `\n`, `\r\n` or `\r`, start with a byte-order mark, or be gzip
//! ([`fasta`]); a prepared database carries a checksum per sequence ([`prepared`]). A
//! search prints its hits on stdout and its statistics and warnings on stderr.
//!
//! See `chariot-align <command> --help` for every option. This library holds all of the
//! tool: the binary (`src/main.rs`) is its command line, which [`commands`] and
//! [`bench`](mod@bench) run; the parsers ([`fasta`], [`matrix`], [`db`], [`prepared`]) are also the fuzz targets'.

#![warn(missing_docs)]

pub mod bench;
pub mod commands;
pub mod compo;
pub mod cpu;
pub mod db;
pub mod fasta;
pub mod generate;
pub mod hand;
pub mod hits;
pub mod karlin;
pub mod matrix;
pub mod output;
pub mod prepared;
pub mod ranks;
pub mod search;
pub mod seg;
pub mod sw;
pub mod tabular;
pub mod traceback;
