//! Query pairs of runs (`sw_search_qp`): which queries pair ([`pair_queries`]), a pair's
//! packed profile and plan ([`PairProfile`], [`plan_runs`]), its launch arguments and the
//! kernel with its CPU twin ([`pair_args`], [`pair_kernel`]).

use super::twin::{dpx_score, TwinRows};
use super::{blocks, chunk_subject, Gaps, Profile, Role, LETTERS, PAD, SOURCE};
use chariot::{Kernel, Param};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

/// Most query rows of a query pair's shared-memory profile tile (`sw_search_qp`'s `qt`): a
/// long query's pass (8 lanes of 32 rows), in 38 KB with the pair's 32-bit words, so that
/// two blocks share an SM.
pub const PAIR_TILE: usize = 256;
/// The most rows a query pair may compute, over its queries' own: both runs take the
/// longer run's rows, and a pair is taken where that costs at most this much more than
/// launches of the subject-pair kernel (on an H200, pairs of two queries ran CUDASW++'s
/// 20 queries 1.12-1.14x as fast as the subject-pair kernel over pseudo databases, their
/// padded rows included).
pub const PAIR_GAIN: f64 = 1.15;

/// Two runs of queries aligned at once against each subject by `sw_search_qp` (a lane
/// group a subject, the low run in the low halfwords, the high run in the high ones). A
/// run is queries end to end, each over its own padded rows (a whole number of passes),
/// so that two runs of several queries take about the same rows where two queries alone
/// seldom do; the kernel starts each query's alignment afresh where it starts, and takes
/// its score where it ends.
#[derive(Clone, Debug)]
pub struct PairProfile {
    /// The runs' queries, low run first (indexes of the profiles given to
    /// [`PairProfile::new`]); a launch's segments are the low run's, then the high run's.
    pub runs: [Vec<usize>; 2],
    /// Rows of a lane's strip: every query's.
    pub strip: usize,
    /// Lanes a subject: every query's.
    pub group: u32,
    /// Rows both runs take: the longer run's, to a whole number of tiles.
    pub mpad: usize,
    /// Rows of a shared-memory tile (the kernel's `qt`).
    pub qt: usize,
    /// Residues of all the runs' queries (the cost model's cells a subject residue).
    pub query_residues: u64,
    /// Dynamic shared memory of a launch: a packed tile, or the largest query's 32-bit
    /// re-pass tile.
    pub shared: u32,
    /// Tiles of [`PairProfile::qt`] rows: per letter, strips of `strip` rows, each `strip`
    /// little-endian words (the low run's score in the low halfword, the high run's in the
    /// high) then 16 zero bytes (see `kernels/sw.cu`).
    pub packed: Vec<u8>,
    /// The kernel's `passes`: per pass of `group · strip` rows, where a query ends
    /// (1 + its segment, bits 0-5 low, 6-11 high) or starts ([`LOW_STARTS`],
    /// [`HIGH_STARTS`]; never on pass 0) in each half.
    pub passes: Vec<u32>,
}

/// A pass word's bit: a query of the low run starts with this pass.
pub const LOW_STARTS: u32 = 1 << 12;
/// A pass word's bit: a query of the high run starts with this pass.
pub const HIGH_STARTS: u32 = 1 << 13;
/// Most queries a query-pair launch: the kernel's fields of a pass word hold 1 + a
/// segment in 6 bits.
pub const MAX_PAIRED: usize = 32;

impl PairProfile {
    /// The pair of `runs` of `profiles`, each run's queries in order.
    ///
    /// # Panics
    /// Where a run is empty, the queries are more than [`MAX_PAIRED`], or their layouts
    /// (strip, lanes) differ: [`pair_queries`] forms none of these.
    pub fn new(profiles: &[Profile], runs: [Vec<usize>; 2]) -> PairProfile {
        let first = &profiles[runs[0][0]];
        let (strip, group) = (first.strip, first.group);
        let all = || runs.iter().flatten().map(|&q| &profiles[q]);
        assert!(!runs[1].is_empty() && all().count() <= MAX_PAIRED, "a pair of runs of 1 to {MAX_PAIRED} queries");
        assert!(all().all(|p| p.strip == strip && p.group == group), "one layout for every query of a pair");
        let rows = |run: &Vec<usize>| run.iter().map(|&q| profiles[q].mpad).sum::<usize>();
        let longer = rows(&runs[0]).max(rows(&runs[1]));
        let qt = longer.min(PAIR_TILE);
        let mpad = longer.next_multiple_of(qt);
        // Each run's profile rows, query after query, then padding.
        let column = |run: &Vec<usize>, l: usize| {
            let mut c: Vec<i8> = Vec::with_capacity(mpad);
            for &q in run {
                let p = &profiles[q];
                c.extend_from_slice(&p.scores[l * p.mpad..(l + 1) * p.mpad]);
            }
            c.resize(mpad, PAD);
            c
        };
        let mut packed = vec![0u8; mpad / qt * LETTERS * pair_row_bytes(strip, qt)];
        let row_bytes = pair_row_bytes(strip, qt);
        for l in 0..LETTERS {
            let (lo, hi) = (column(&runs[0], l), column(&runs[1], l));
            for r in 0..mpad {
                let (tile, t) = (r / qt, r % qt);
                let at = (tile * LETTERS + l) * row_bytes + t / strip * (4 * strip + 16) + 4 * (t % strip);
                let word = lo[r] as i16 as u16 as u32 | (hi[r] as i16 as u16 as u32) << 16;
                packed[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
        let rows_per_pass = group as usize * strip;
        let mut passes = vec![0u32; mpad / rows_per_pass];
        let mut segment = 0;
        for (half, run) in runs.iter().enumerate() {
            let mut pass = 0;
            for &q in run {
                if pass > 0 {
                    passes[pass] |= [LOW_STARTS, HIGH_STARTS][half];
                }
                pass += profiles[q].mpad / rows_per_pass;
                segment += 1;
                passes[pass - 1] |= (segment as u32) << (6 * half);
            }
        }
        let query_residues = all().map(|p| p.m as u64).sum();
        let packed_shared = (LETTERS + 1) * pair_row_bytes(strip, qt);
        let shared = all().map(|p| p.shared_bytes()).max().unwrap_or(0).max(packed_shared as u32);
        PairProfile { runs, strip, group, mpad, qt, query_residues, shared, packed, passes }
    }

    /// The queries in segment order: the low run's, then the high run's.
    pub fn segments(&self) -> impl Iterator<Item = usize> + '_ {
        self.runs.iter().flatten().copied()
    }

    /// The kernel's `table`, a row per segment: its query, the offset of its int8 profile
    /// (`offsets[query]`, in the buffer of all profiles; the kernel reads it unsigned, as
    /// every offset argument), its padded rows and its sat.
    pub fn table(&self, profiles: &[Profile], offsets: &[usize]) -> Vec<[i32; 4]> {
        self.segments()
            .map(|q| [q as i32, offsets[q] as u32 as i32, profiles[q].mpad as i32, profiles[q].sat()])
            .collect()
    }

    /// The grid of a launch over `nseq` subjects: a group of lanes a subject.
    pub fn grid(&self, nseq: usize) -> u32 {
        blocks(nseq, self.group)
    }
}

/// The segments of each half of a query-pair launch, in order, as its plan (`passes`, and
/// `table`'s padded rows) lays them out for passes of `rows_per_pass` rows; checked: every
/// segment once, each over its own rows from where the one before it ends, a start bit
/// exactly where a later segment starts. The CPU twin reads the launch's plan by this.
///
/// # Errors
/// The first inconsistency, named.
pub fn plan_runs(passes: &[u32], table: &[[i32; 4]], rows_per_pass: usize) -> Result<[Vec<usize>; 2], String> {
    let mut runs: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    let mut seen = vec![false; table.len()];
    for half in 0..2 {
        let field = |word: u32| (word >> (6 * half) & 63) as usize;
        let last = passes.iter().rposition(|&w| field(w) != 0).unwrap_or(0);
        let mut from = 0;
        for (pass, &word) in passes.iter().enumerate() {
            let starts = word & [LOW_STARTS, HIGH_STARTS][half] != 0;
            if starts != (pass > 0 && pass == from && pass <= last) {
                return Err(format!("pass {pass}: half {half}'s start bit is {starts}, its segments say otherwise"));
            }
            let k = field(word);
            if k == 0 {
                continue;
            }
            let seg = k - 1;
            let rows = (pass + 1 - from) * rows_per_pass;
            match table.get(seg) {
                None => return Err(format!("pass {pass}: segment {seg} is not in the table of {}", table.len())),
                Some(_) if seen[seg] => return Err(format!("pass {pass}: segment {seg} ends twice")),
                Some(row) if row[2] as usize != rows => {
                    return Err(format!(
                        "pass {pass}: segment {seg} ends after {rows} rows, its profile has {}",
                        row[2]
                    ))
                }
                Some(_) => {}
            }
            seen[seg] = true;
            runs[half].push(seg);
            from = pass + 1;
        }
    }
    match seen.iter().position(|s| !s) {
        Some(seg) => Err(format!("segment {seg} ends on no pass")),
        None => Ok(runs),
    }
}

/// Bytes of one letter's row of a packed tile of `qt` rows in strips of `strip`.
fn pair_row_bytes(strip: usize, qt: usize) -> usize {
    qt / strip * (4 * strip + 16)
}

/// Which queries `sw_search_qp` aligns in pairs of runs. Queries of one layout (strip and
/// lanes, which follow from the length) are taken longest first, [`MAX_PAIRED`] at a
/// time, and laid in two runs, each query on the run with fewer rows so far; the pair is
/// kept where its rows (the longer run's) are at most [`PAIR_GAIN`] times the queries'
/// own, else its longest query runs alone and the rest are tried again. Returns the pairs
/// of runs and the queries left alone (a layout with one query, or one far longer than
/// the others).
pub fn pair_queries(profiles: &[Profile]) -> (Vec<[Vec<usize>; 2]>, Vec<usize>) {
    let mut order: Vec<usize> = (0..profiles.len()).collect();
    order.sort_by_key(|&q| (profiles[q].strip, profiles[q].group, std::cmp::Reverse(profiles[q].m)));
    let (mut pairs, mut alone) = (Vec::new(), Vec::new());
    for layout in
        order.chunk_by(|&a, &b| (profiles[a].strip, profiles[a].group) == (profiles[b].strip, profiles[b].group))
    {
        for block in layout.chunks(MAX_PAIRED) {
            let mut rest = block;
            while rest.len() >= 2 {
                let mut runs: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
                let mut rows = [0usize; 2];
                for &q in rest {
                    let half = usize::from(rows[1] < rows[0]);
                    runs[half].push(q);
                    rows[half] += profiles[q].mpad;
                }
                if 2.0 * rows[0].max(rows[1]) as f64 <= PAIR_GAIN * (rows[0] + rows[1]) as f64 {
                    pairs.push(runs);
                    rest = &[];
                } else {
                    alone.push(rest[0]);
                    rest = &rest[1..];
                }
            }
            alone.extend_from_slice(rest);
        }
    }
    // The longest launches first.
    pairs.sort_by_key(|runs: &[Vec<usize>; 2]| {
        std::cmp::Reverse(runs.iter().map(|r| r.iter().map(|&q| profiles[q].mpad).sum::<usize>()).max())
    });
    (pairs, alone)
}

/// Where a query pair's parts are in the buffer of all profiles: its packed profile, its
/// pass words and its table (each 16-byte aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairAt {
    /// [`PairProfile::packed`].
    pub packed: usize,
    /// [`PairProfile::passes`], `u32` little-endian.
    pub passes: usize,
    /// [`PairProfile::table`], `i32` little-endian, 4 a segment.
    pub table: usize,
}

/// The arguments of the launch of query pair `pair` (its parts at `at` in the profiles)
/// over a packed chunk of `nseq` subjects and `residues` residues, in the order of
/// [`pair_kernel`]'s parameters.
pub fn pair_args(pair: &PairProfile, at: PairAt, nseq: usize, res_off: usize, residues: u64, gaps: Gaps) -> [Role; 17] {
    [
        Role::Chunk,
        Role::U32(nseq as u32),
        Role::U32(res_off as u32),
        Role::Profiles,
        Role::U32(at.packed as u32),
        Role::U32(at.passes as u32),
        Role::U32(at.table as u32),
        Role::U32(pair.segments().count() as u32),
        Role::U32(pair.mpad as u32),
        Role::U32(pair.group),
        Role::I32(gaps.open + gaps.extend),
        Role::I32(gaps.extend),
        Role::Scratch,
        Role::Scores,
        Role::U32(pair.qt as u32),
        Role::U64(pair.query_residues * residues),
        Role::U32(pair.strip as u32),
    ]
}

/// `sw_search_qp`, the query-pair kernel (16-bit DPX arithmetic), with its parameters,
/// CPU twin and simulated cost. The twin reads the launch's plan from the profiles buffer
/// and checks it ([`plan_runs`], and each segment's table row against `profiles` and
/// their `offsets` there), then gives each query's score as the kernel does: its 16-bit
/// score by [`align16`] (the kernel starts a query's alignment afresh where it starts in
/// its run, so it is the query's alignment alone), and the 32-bit [`align`] where that
/// reached the query's [`Profile::sat`]. Also returns the count of scores its twin
/// aligned again in 32 bits.
pub fn pair_kernel(profiles: Arc<Vec<Profile>>, offsets: Vec<usize>, sim_gcups: f64) -> (Kernel, Arc<AtomicU64>) {
    let repassed = Arc::new(AtomicU64::new(0));
    let count = repassed.clone();
    let k = Kernel::new(PAIR_ENTRY, format!("#define SW_ONLY_QP\n{SOURCE}"))
        .params([
            Param::Buffer, // chunk
            Param::U32,    // nseq
            Param::U32,    // res_off
            Param::Buffer, // profile
            Param::U32,    // pair_off
            Param::U32,    // passes_off
            Param::U32,    // table_off
            Param::U32,    // nseg
            Param::U32,    // mpad
            Param::U32,    // group
            Param::I32,    // gap_oe
            Param::I32,    // gap_e
            Param::Buffer, // scratch
            Param::Buffer, // scores
            Param::U32,    // qt
            Param::U64,    // cells (cost model only)
            Param::U32,    // strip
        ])
        .cpu_twin(move |a| {
            let (nseq, res_off) = (a.u32(1)? as usize, a.u32(2)? as usize);
            let (passes_off, table_off, nseg) = (a.u32(5)? as usize, a.u32(6)? as usize, a.u32(7)? as usize);
            let (mpad, group, strip) = (a.u32(8)? as usize, a.u32(9)?, a.u32(16)? as usize);
            let (goe, ge) = (a.i32(10)?, a.i32(11)?);
            let profile_bytes = a.buffer::<i8>(3)?;
            let words = |at: usize, n: usize| -> Result<Vec<u32>, String> {
                let bytes = profile_bytes.get(at..at + 4 * n).ok_or("a plan outside the profiles")?;
                Ok(bytes
                    .chunks(4)
                    .map(|w| u32::from_le_bytes([w[0] as u8, w[1] as u8, w[2] as u8, w[3] as u8]))
                    .collect())
            };
            let rows_per_pass = group as usize * strip;
            if rows_per_pass == 0 || mpad % rows_per_pass != 0 {
                return Err(format!("{mpad} rows are not whole passes of {group} lanes × {strip}").into());
            }
            let passes = words(passes_off, mpad / rows_per_pass)?;
            let table: Vec<[i32; 4]> =
                words(table_off, 4 * nseg)?.chunks(4).map(|r| [r[0], r[1], r[2], r[3]].map(|x| x as i32)).collect();
            plan_runs(&passes, &table, rows_per_pass)?;
            let gaps = Gaps { open: goe - ge, extend: ge };
            let chunk = a.buffer::<u8>(0)?;
            let mut twin_rows = TwinRows::default();
            let mut out = Vec::with_capacity(nseg * nseq);
            for &[q, prof_off, rows, sat] in &table {
                let q = q as usize;
                let p = profiles.get(q).ok_or("a segment of an unknown query")?;
                if offsets[q] != prof_off as u32 as usize
                    || p.mpad != rows as usize
                    || p.sat() != sat
                    || p.strip != strip
                    || p.group != group
                {
                    return Err(
                        format!("segment of query {q}: its table row does not match the registered profile").into()
                    );
                }
                for k in 0..nseq {
                    let subject = chunk_subject(chunk, res_off, k).ok_or("a subject outside the chunk")?;
                    out.push(dpx_score(p, subject, subject.len(), gaps, sat, &mut twin_rows, &count));
                }
            }
            let scores = a.buffer_mut::<i32>(13)?;
            for (seg, &[q, ..]) in table.iter().enumerate() {
                let at = q as usize * nseq;
                scores
                    .get_mut(at..at + nseq)
                    .ok_or("scores outside the buffer")?
                    .copy_from_slice(&out[seg * nseq..(seg + 1) * nseq]);
            }
            Ok(())
        })
        .sim_cost(move |_, s| Duration::from_secs_f64(s.u64(15).unwrap_or(0) as f64 / (sim_gcups * 1e9)));
    (k, repassed)
}

/// The query-pair kernel's entry point in `kernels/sw.cu`.
pub const PAIR_ENTRY: &str = "sw_search_qp";
