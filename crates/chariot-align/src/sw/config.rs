//! Kernel configurations: the strip height (query rows a lane holds in registers,
//! `SW_R`, fixed when NVRTC compiles the kernel: one compiled kernel per height) and the
//! lane group (lanes per subject, or per pair of subjects for DPX: a launch parameter),
//! chosen per query length and per chunk's subject lengths, as CUDASW++ 4.0 picks a
//! kernel configuration per length partition of its database.
//!
//! CUDASW++ holds a subject in a lane group's registers (`group_size` × `numRegs`
//! columns: 2 × 24 for subjects up to 48, 4 × 16 up to 64, 8 × 10 … 8 × 32 up to 256,
//! 16 × 18 … 16 × 32 up to 512, 32 × 18 … 32 × 40 up to 1,280, longer ones in passes
//! of 32 × 22) and streams the query past it. chariot-align's kernel holds the query
//! (`group` × `SW_R` rows a pass) and streams the subject, so the same reasoning applies
//! with the roles swapped: a pass as tall as the query where it fits (no scratch row
//! traffic), as little padding as possible, and a lane group no larger than the subject
//! needs (a pass takes `n + group − 1` steps for `n` columns). The default is the
//! configuration of least modelled cost ([`cost`]); `--kernel-config` forces one.

use super::{KernelKind, TILE};

/// Strip heights a kernel is compiled for (`SW_R`).
pub const STRIPS: [u32; 4] = [8, 16, 24, 32];
/// Lane group sizes (lanes per subject, or per pair for DPX).
pub const GROUPS: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// The cost model's per-step overhead of a lane, in row updates: the two shuffles, the
/// subject code and profile loads, the loop and bounds arithmetic (about 8 instructions
/// against about 7 per row update of the DPX kernel). To confirm on the GPU
/// (`scripts/gpu/align-configs.sh`).
pub const STEP_COST: f64 = 8.0;
/// The cost model's per-column cost of a pass beyond the first row of the query: the
/// scratch row read by lane 0 and written by the last lane (global memory), in row updates.
pub const PASS_COST: f64 = 24.0;
/// Lanes a launch should have at least (128 blocks of 256 threads: about a block on
/// every SM of an H100 or H200), where the chunk has subjects enough: smaller lane groups
/// are not considered below it. Each launch is one query over one chunk; chariot runs
/// several at once, but one that fills a fraction of the GPU leans on that. To confirm
/// on the GPU.
pub const MIN_LANES: u64 = 32_768;

/// Register pressure: a taller strip holds 3 registers a row (DPX: H, H − open − extend,
/// E) and leaves fewer warps an SM to hide latency. A guess to confirm on the GPU: 32
/// rows (about 126 registers, two blocks of 256 an SM) costed 10 % more per update.
pub fn register_factor(strip: u32) -> f64 {
    match strip {
        32 => 1.10,
        24 => 1.05,
        _ => 1.0,
    }
}

/// One launch's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    /// Query rows a lane holds (`SW_R`: one of [`STRIPS`]).
    pub strip: u32,
    /// Lanes per subject (or per pair; one of [`GROUPS`]).
    pub group: u32,
}

impl Shape {
    /// Query rows of one pass: `group × strip`.
    pub fn rows_per_pass(self) -> usize {
        (self.group * self.strip) as usize
    }
    /// The unit the computed rows and a profile tile are multiples of: a pass, and 16
    /// (the tile is staged in 16-byte vectors).
    pub fn unit(self) -> usize {
        let p = self.rows_per_pass();
        p / gcd(p, 16) * 16
    }
    /// Rows the kernel computes for a query of `m` residues: `m` padded to [`Shape::unit`].
    pub fn rows(self, m: usize) -> usize {
        m.max(1).next_multiple_of(self.unit())
    }
    /// Rows of a shared-memory profile tile for a query of `m` residues: all of them, or
    /// the most whole units in [`TILE`].
    pub fn tile(self, m: usize) -> usize {
        let u = self.unit();
        self.rows(m).min(TILE / u * u)
    }
    /// Dynamic shared memory of a launch for a query of `m` residues, bytes.
    pub fn shared_bytes(self, m: usize) -> u32 {
        (super::LETTERS * self.tile(m)) as u32
    }
    /// Passes over the subject for a query of `m` residues.
    pub fn passes(self, m: usize) -> usize {
        self.rows(m) / self.rows_per_pass()
    }
    /// The grid (blocks of [`super::BLOCK`] threads) of a launch of `kind` over `nseq`
    /// subjects: a group of lanes a subject (portable) or a pair of subjects (DPX).
    pub fn grid(self, kind: KernelKind, nseq: usize) -> u32 {
        let groups = nseq.div_ceil(kind.subjects_per_group()) as u64;
        ((groups * self.group as u64).div_ceil(super::BLOCK as u64)).max(1) as u32
    }
    /// `r<strip>:g<group>`, as `--kernel-config` takes it.
    pub fn name(self) -> String {
        format!("r{}:g{}", self.strip, self.group)
    }
    /// Whether the kernel can run it: a strip of [`STRIPS`], a group of [`GROUPS`].
    pub fn valid(self) -> bool {
        STRIPS.contains(&self.strip) && GROUPS.contains(&self.group)
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The modelled time of a launch of `shape` per cell, for a query of `m` residues and
/// subjects of `n` residues (a chunk's mean), in row updates a cell: lane steps of all
/// passes (a pass takes `n + group − 1` steps of `strip` row updates and
/// [`STEP_COST`] overhead on each of `group` lanes, scaled by [`register_factor`]),
/// plus [`PASS_COST`] a column for every pass after the first, over the `m·n` cells.
pub fn cost(shape: Shape, m: usize, n: f64) -> f64 {
    let (g, r) = (shape.group as f64, shape.strip as f64);
    let n = n.max(1.0);
    let passes = shape.passes(m) as f64;
    let lanes = passes * (n + g - 1.0) * g * (r + STEP_COST) * register_factor(shape.strip);
    let scratch = (passes - 1.0) * n * PASS_COST;
    (lanes + scratch) / (m.max(1) as f64 * n)
}

/// What `--kernel-config` forces: a strip height, a group size, both or neither.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forced {
    /// `SW_R` (`r<rows>`).
    pub strip: Option<u32>,
    /// Lanes per subject (`g<lanes>`).
    pub group: Option<u32>,
}

impl Forced {
    /// Parses `auto`, `r<rows>`, `g<lanes>` or `r<rows>:g<lanes>` (rows 8, 16, 24 or 32;
    /// lanes 1, 2, 4, 8, 16 or 32).
    ///
    /// # Errors
    /// Anything else, naming the value and what is allowed.
    pub fn parse(text: &str) -> Result<Forced, String> {
        let allowed =
            "allowed: auto, r<rows>, g<lanes> or r<rows>:g<lanes>, rows 8, 16, 24 or 32, lanes 1, 2, 4, 8, 16 \
                       or 32 (e.g. r32:g8)";
        let bad = || format!("kernel-config = {text:?}; {allowed}");
        if text == "auto" {
            return Ok(Forced::default());
        }
        let mut f = Forced::default();
        for part in text.split(':') {
            let (key, num) = part.split_at(part.len().min(1));
            let v: u32 = num.parse().map_err(|_| bad())?;
            match key {
                "r" if f.strip.is_none() && STRIPS.contains(&v) => f.strip = Some(v),
                "g" if f.group.is_none() && GROUPS.contains(&v) => f.group = Some(v),
                _ => return Err(bad()),
            }
        }
        Ok(f)
    }
}

/// The configuration of a launch of `kind` for a query of `m` residues over a chunk of
/// `nseq` subjects and `residues` residues: what `forced` fixes, and the rest of least
/// [`cost`] (ties: the taller strip, then the smaller group) among the groups that give
/// the launch [`MIN_LANES`] lanes (or the most it can have).
pub fn choose(kind: KernelKind, m: usize, nseq: usize, residues: u64, forced: Forced) -> Shape {
    let n = residues as f64 / nseq.max(1) as f64;
    let units = nseq.max(1).div_ceil(kind.subjects_per_group()) as u64;
    let want_lanes = MIN_LANES.min(units * 32);
    let fills = |g: u32| units * g as u64 >= want_lanes;
    let groups: Vec<u32> = match forced.group {
        Some(g) => vec![g],
        None => GROUPS.iter().copied().filter(|&g| fills(g)).collect(),
    };
    let mut best: Option<(f64, Shape)> = None;
    for &strip in forced.strip.as_ref().map_or(&STRIPS[..], std::slice::from_ref) {
        for &group in &groups {
            let s = Shape { strip, group };
            let c = cost(s, m, n);
            let better = match best {
                None => true,
                Some((bc, bs)) => {
                    let key = |s: Shape| (s.strip, u32::MAX - s.group);
                    c < bc * (1.0 - 1e-9) || (c <= bc * (1.0 + 1e-9) && key(s) > key(bs))
                }
            };
            if better {
                best = Some((c, s));
            }
        }
    }
    best.expect("at least one strip and group").1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_rows_and_tiles() {
        let s = Shape { strip: 16, group: 32 };
        assert_eq!(
            (s.rows_per_pass(), s.unit(), s.rows(5000), s.tile(5000), s.passes(5000)),
            (512, 512, 5120, 1024, 10)
        );
        let s = Shape { strip: 24, group: 32 };
        assert_eq!((s.unit(), s.rows(567), s.tile(567), s.tile(5000)), (768, 768, 768, 768));
        let s = Shape { strip: 24, group: 1 };
        assert_eq!((s.unit(), s.rows(1), s.rows(49), s.passes(49)), (48, 48, 96, 4));
        let s = Shape { strip: 8, group: 1 };
        assert_eq!((s.unit(), s.rows(63), s.passes(63), s.shared_bytes(63)), (16, 64, 8, 32 * 64));
        for strip in STRIPS {
            for group in GROUPS {
                let s = Shape { strip, group };
                assert!(s.valid());
                assert!(TILE / s.unit() >= 1, "{s:?}");
                for m in [1, 15, 63, 144, 1000, 5478] {
                    assert_eq!(s.rows(m) % s.rows_per_pass(), 0);
                    assert_eq!(s.tile(m) % s.unit(), 0);
                    assert!(s.rows(m) >= m && s.tile(m) <= TILE);
                }
            }
        }
        assert_eq!(Shape { strip: 16, group: 4 }.grid(KernelKind::Dpx, 8192), 64);
        assert_eq!(Shape { strip: 16, group: 4 }.grid(KernelKind::Portable, 8192), 128);
    }

    #[test]
    fn forced_parse() {
        assert_eq!(Forced::parse("auto"), Ok(Forced::default()));
        assert_eq!(Forced::parse("r32:g8"), Ok(Forced { strip: Some(32), group: Some(8) }));
        assert_eq!(Forced::parse("g4"), Ok(Forced { strip: None, group: Some(4) }));
        assert_eq!(Forced::parse("r24"), Ok(Forced { strip: Some(24), group: None }));
        for bad in ["", "r12", "g64", "r16:r16", "x", "r16:g8:g8", "r", "g3", "16"] {
            let e = Forced::parse(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")) && e.contains("r<rows>:g<lanes>"), "{bad:?}: {e}");
        }
    }

    /// The choices the module documents: a pass as tall as a short query, small groups
    /// for short subjects, launches that fill the GPU, and what is forced kept.
    #[test]
    fn default_choices() {
        let dpx = KernelKind::Dpx;
        let pick = |m, n: u64| choose(dpx, m, 8192, n * 8192, Forced::default());
        // q63 over subjects of a few hundred residues: the whole query in one pass.
        let s = pick(63, 350);
        assert_eq!(s.passes(63), 1, "{s:?}");
        assert!(s.rows(63) <= 64, "{s:?}");
        for m in [63, 144, 567, 1000, 5478] {
            // Shorter subjects never get larger groups.
            let gs: Vec<u32> = [128, 256, 512, 1024, 2048].iter().map(|&n| pick(m, n).group).collect();
            assert!(gs.windows(2).all(|w| w[0] <= w[1]), "m {m}: {gs:?}");
            // 4,096 pairs: at least 8 lanes each for 32,768 lanes.
            assert!(gs[0] >= 8, "m {m}: {gs:?}");
        }
        // A chunk of 10 subjects cannot fill the GPU: the largest group is allowed.
        assert_eq!(choose(dpx, 5000, 10, 30_000, Forced::default()).group, 32);
        let f = Forced { strip: Some(16), group: None };
        assert_eq!(choose(dpx, 5000, 10, 3000, f).strip, 16);
        let f = Forced { strip: Some(8), group: Some(2) };
        assert_eq!(choose(KernelKind::Portable, 5000, 10, 3000, f), Shape { strip: 8, group: 2 });
        // The cost of padding: 567 rows by 512-row passes computes 1024.
        assert!(
            cost(Shape { strip: 16, group: 32 }, 567, 256.0) > 1.7 * cost(Shape { strip: 16, group: 32 }, 1024, 256.0)
        );
    }
}
