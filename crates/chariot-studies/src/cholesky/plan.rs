//! The right-looking tiled Cholesky factorisation as a list of tile operations, the
//! classic task graph (Buttari et al.; StarPU's `cholesky` example): for each k,
//!
//! * POTRF(k): L_kk ← chol(A_kk);
//! * TRSM(i, k), i > k: A_ik ← A_ik·L_kk⁻ᵀ;
//! * SYRK(i, k), i > k: A_ii ← A_ii − A_ik·A_ikᵀ;
//! * GEMM(i, j, k), i > j > k: A_ij ← A_ij − A_ik·A_jkᵀ;
//!
//! and, where the TRSMs multiply by L_kk⁻¹ ([`Trsm::Inverse`]), INVERSE(k): L_kk⁻¹ into
//! step k's inverse tile.
//!
//! Each operation reads some tiles and writes one. The dependencies are what chariot
//! infers from those declarations at tile (piece) granularity: read after write, write
//! after read, write after write. [`Plan`] computes them too, for each task's priority:
//! its bottom level, the flops of the heaviest chain from the task to the end (its own
//! included), so that chariot's largest-first order runs the critical path first.

use super::{Tile, Tiling};

/// One tile operation (block (i, j) is row i, column j of blocks, i ≥ j).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// L_kk ← chol(A_kk).
    Potrf {
        /// The step.
        k: usize,
    },
    /// Step k's inverse tile ← L_kk⁻¹, for the step's TRSMs that multiply by it
    /// ([`Trsm::Inverse`]). On the GPU a kernel inverts the tile's diagonal blocks of
    /// order 32 and batched GEMMs join them; on the CPU, a solve against the identity.
    Inverse {
        /// The step.
        k: usize,
    },
    /// A_ik ← A_ik·L_kk⁻ᵀ.
    Trsm {
        /// The tile row.
        i: usize,
        /// The step.
        k: usize,
        /// By a multiply with step k's inverse tile (else a solve against L_kk).
        by_inverse: bool,
    },
    /// A_ii ← A_ii − A_ik·A_ikᵀ (lower triangle).
    Syrk {
        /// The tile row.
        i: usize,
        /// The step.
        k: usize,
    },
    /// A_ij ← A_ij − A_ik·A_jkᵀ.
    Gemm {
        /// The tile row.
        i: usize,
        /// The tile column.
        j: usize,
        /// The step.
        k: usize,
    },
}

impl Op {
    /// The tiles it reads besides the one it writes.
    pub fn reads(&self) -> Vec<Tile> {
        match *self {
            Op::Potrf { .. } => vec![],
            Op::Inverse { k } | Op::Trsm { k, by_inverse: false, .. } => vec![Tile::Block(k, k)],
            Op::Trsm { k, by_inverse: true, .. } => vec![Tile::Inverse(k)],
            Op::Syrk { i, k } => vec![Tile::Block(i, k)],
            Op::Gemm { i, j, k } => vec![Tile::Block(i, k), Tile::Block(j, k)],
        }
    }

    /// The tile it writes: read and written, except an inverse's, written whole.
    pub fn writes(&self) -> Tile {
        match *self {
            Op::Potrf { k } => Tile::Block(k, k),
            Op::Inverse { k } => Tile::Inverse(k),
            Op::Trsm { i, k, .. } => Tile::Block(i, k),
            Op::Syrk { i, .. } => Tile::Block(i, i),
            Op::Gemm { i, j, .. } => Tile::Block(i, j),
        }
    }

    /// Its flops on tiles of order b (LAPACK's counts, leading terms): POTRF b³/3, TRSM
    /// and SYRK b³, GEMM 2b³; the inverse b³, a solve against the identity's (the GPU's
    /// joins by GEMM do about 2b³/3, the upper triangles' zeros included).
    pub fn flops(&self, b: usize) -> f64 {
        let b3 = (b as f64).powi(3);
        match self {
            Op::Potrf { .. } => b3 / 3.0,
            Op::Inverse { .. } | Op::Trsm { .. } | Op::Syrk { .. } => b3,
            Op::Gemm { .. } => 2.0 * b3,
        }
    }

    /// Whether it lies on the path from its step to the next: a POTRF, an INVERSE, a
    /// step's first TRSM (row k + 1, which the next diagonal tile's SYRK waits for), and
    /// every TRSM that solves. They run on a high-priority stream: on a GPU that the
    /// GEMMs of 16 streams keep busy, a kernel on a stream of default priority waits
    /// behind their blocks. On two H200s at N = 32 k, b = 2,048, D = 2, the
    /// factorisation took 0.147 s with them there against 0.1575 s without
    /// (`results/nvidia-h200-x2/2026-11-30-cholesky-trsm-by-inverse/`); putting the next
    /// diagonal tile's SYRK there too, or every update of the next column, changed
    /// nothing measurable (`results/nvidia-h200-x2/2026-12-01-cholesky-inverse-kernel/`).
    pub fn on_the_path(&self) -> bool {
        match *self {
            Op::Potrf { .. } | Op::Inverse { .. } => true,
            Op::Trsm { i, k, by_inverse } => !by_inverse || i == k + 1,
            Op::Syrk { .. } | Op::Gemm { .. } => false,
        }
    }

    /// Short name: POTRF, INVERSE, TRSM, SYRK, GEMM.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Potrf { .. } => "POTRF",
            Op::Inverse { .. } => "INVERSE",
            Op::Trsm { .. } => "TRSM",
            Op::Syrk { .. } => "SYRK",
            Op::Gemm { .. } => "GEMM",
        }
    }
}

/// One operation of the plan with its priority.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Planned {
    /// The operation.
    pub op: Op,
    /// Its bottom level: the flops of the heaviest chain of operations from it to the
    /// end, its own included (the task's granularity).
    pub bottom_level: f64,
    /// Whether it runs on its slot's high-priority stream ([`Op::on_the_path`]).
    pub urgent: bool,
}

/// The tiled factorisation's operations in the right-looking order (a topological
/// order of the graph), with what the uploads and readbacks of tiles need.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The tiling.
    pub tiling: Tiling,
    /// The operations, in the order a serial loop runs them.
    pub ops: Vec<Planned>,
    /// Per block (by [`Tiling::index`]): the operation (index in `ops`) that writes it
    /// last, after which its L is final.
    pub last_writer: Vec<usize>,
    /// Per block: the bottom level of the first operation that touches it (the uploads'
    /// priorities: `tiled::Uploads::FirstUse` orders the blocks by it).
    pub first_use_level: Vec<f64>,
    /// Predecessors of each operation (indices in `ops`), as chariot infers them at
    /// tile granularity (the uploads left out).
    pub predecessors: Vec<Vec<usize>>,
}

impl Plan {
    /// The plan of `tiling`, its TRSMs done the `trsm` way. With [`Trsm::Inverse`], every
    /// step with a TRSM gets an [`Op::Inverse`], and every TRSM of the step multiplies
    /// by the inverse.
    pub fn new(tiling: Tiling, trsm: Trsm) -> Plan {
        let nt = tiling.nt;
        let mut ops = Vec::new();
        for k in 0..nt {
            ops.push(Op::Potrf { k });
            let inverse = trsm == Trsm::Inverse && k + 1 < nt;
            if inverse {
                ops.push(Op::Inverse { k });
            }
            for i in k + 1..nt {
                ops.push(Op::Trsm { i, k, by_inverse: inverse });
            }
            for i in k + 1..nt {
                ops.push(Op::Syrk { i, k });
                for j in k + 1..i {
                    ops.push(Op::Gemm { i, j, k });
                }
            }
        }
        // Dependencies per tile (by slot): the last writer, the readers since.
        let slots = tiling.tiles() + nt;
        let mut writer: Vec<Option<usize>> = vec![None; slots];
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); slots];
        let mut first_use: Vec<Option<usize>> = vec![None; slots];
        let mut predecessors = vec![Vec::new(); ops.len()];
        for (o, op) in ops.iter().enumerate() {
            let mut pred = Vec::new();
            for tile in op.reads() {
                let t = tiling.slot(tile);
                pred.extend(writer[t]);
                readers[t].push(o);
                first_use[t].get_or_insert(o);
            }
            let t = tiling.slot(op.writes());
            pred.extend(writer[t]);
            pred.append(&mut readers[t]);
            writer[t] = Some(o);
            first_use[t].get_or_insert(o);
            pred.sort_unstable();
            pred.dedup();
            predecessors[o] = pred;
        }
        let mut level: Vec<f64> = ops.iter().map(|op| op.flops(tiling.b)).collect();
        for o in (0..ops.len()).rev() {
            for &p in &predecessors[o] {
                let through = ops[p].flops(tiling.b) + level[o];
                if through > level[p] {
                    level[p] = through;
                }
            }
        }
        // The blocks only: every one is written and used; an inverse tile may be neither.
        let blocks = tiling.tiles();
        Plan {
            tiling,
            ops: ops
                .iter()
                .zip(&level)
                .map(|(&op, &bottom_level)| Planned { op, bottom_level, urgent: op.on_the_path() })
                .collect(),
            last_writer: writer[..blocks].iter().map(|w| w.expect("every block is written")).collect(),
            first_use_level: first_use[..blocks].iter().map(|f| level[f.expect("every block is used")]).collect(),
            predecessors,
        }
    }

    /// Flops of all operations (≈ N³/3 of the padded order, plus lower-order terms, and
    /// the inverses' where the plan has them).
    pub fn flops(&self) -> f64 {
        self.ops.iter().map(|p| p.op.flops(self.tiling.b)).sum()
    }

    /// Operations of each kind: POTRF, TRSM, SYRK, GEMM, INVERSE.
    pub fn counts(&self) -> [usize; 5] {
        let mut c = [0; 5];
        for p in &self.ops {
            c[match p.op {
                Op::Potrf { .. } => 0,
                Op::Trsm { .. } => 1,
                Op::Syrk { .. } => 2,
                Op::Gemm { .. } => 3,
                Op::Inverse { .. } => 4,
            }] += 1;
        }
        c
    }
}

/// How each TRSM (A_ik ← A_ik·L_kk⁻ᵀ) is done. Both give L to rounding here (on the GPU
/// the two factors agreed within 1e-12·max|L|); a multiply by an explicit inverse is
/// not backward stable as the solve is, so a badly conditioned L_kk loses more by it.
/// The default is [`Trsm::Inverse`]: cuBLAS's solve is a chain of small kernels, which
/// a GPU busy with GEMMs slows most. On one H200 at b = 2,048, on a high-priority
/// stream, the solve took 0.91 ms alone and 6.0 ms beside 15 streams of GEMMs; the
/// inverse and a multiply by it took 0.45 ms alone and 1.3 ms beside them
/// (`scripts/gpu/probes/panel_chain.cu`). On two H200s at N = 32 k the factorisation
/// took 0.2395 s at D = 1 and 0.130–0.132 s at D = 2 by the inverse
/// (`results/nvidia-h200-x2/2026-12-01-cholesky-inverse-kernel/`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Trsm {
    /// A triangular solve against L_kk (cuBLAS's `cublasDtrsm`).
    Solve,
    /// A multiply by L_kk⁻¹: an [`Op::Inverse`] task writes L_kk⁻¹ into the step's
    /// inverse tile ([`Tile::Inverse`]), and each TRSM of the step multiplies by it
    /// (cuBLAS's `cublasDtrmm` into a scratch tile, copied back). On one H200, 16 TRSMs
    /// of order 2,048 at once ran at 20–22 TF/s as solves and 53–56 as multiplies
    /// (`scripts/gpu/probes/tile_kernels.cu`).
    #[default]
    Inverse,
}

impl Trsm {
    /// Its name on the command line: `solve` or `inverse`.
    pub fn name(self) -> &'static str {
        match self {
            Trsm::Solve => "solve",
            Trsm::Inverse => "inverse",
        }
    }

    /// Elements the resident tiles need beyond [`Tiling::len`]: the inverse tiles.
    pub fn extra_len(self, tiling: &Tiling) -> usize {
        match self {
            Trsm::Solve => 0,
            Trsm::Inverse => tiling.nt * tiling.tile_len(),
        }
    }
}

/// A bottom level as a task granularity (flops, rounded; at least 1).
pub fn granularity(level: f64) -> u64 {
    level.round().clamp(1.0, u64::MAX as f64) as u64
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_graph_of_three_tiles() {
        let t = Tiling::new(30, 10).unwrap();
        let p = Plan::new(t, Trsm::Solve);
        assert_eq!(p.counts(), [3, 3, 3, 1, 0]);
        let names: Vec<_> = p.ops.iter().map(|o| o.op).collect();
        let trsm = |i, k| Op::Trsm { i, k, by_inverse: false };
        assert_eq!(names[..4], [Op::Potrf { k: 0 }, trsm(1, 0), trsm(2, 0), Op::Syrk { i: 1, k: 0 }]);
        // GEMM(2,1,0) after TRSM(1,0) and TRSM(2,0); POTRF(1) after SYRK(1,0).
        let gemm = names.iter().position(|o| *o == Op::Gemm { i: 2, j: 1, k: 0 }).unwrap();
        assert_eq!(p.predecessors[gemm], vec![1, 2]);
        let potrf1 = names.iter().position(|o| *o == Op::Potrf { k: 1 }).unwrap();
        assert_eq!(p.predecessors[potrf1], vec![3]);
        // TRSM(2,1) writes tile (2,1): after GEMM(2,1,0) (WAW) and POTRF(1) (RAW).
        let trsm21 = names.iter().position(|o| *o == trsm(2, 1)).unwrap();
        assert_eq!(p.predecessors[trsm21], vec![gemm, potrf1]);
        // The critical path: POTRF(0), TRSM(2,0), GEMM(2,1,0), TRSM(2,1), SYRK(2,1),
        // POTRF(2): b³(1/3 + 1 + 2 + 1 + 1 + 1/3).
        let b3 = 1000.0;
        assert!((p.ops[0].bottom_level - b3 * 17.0 / 3.0).abs() < 1e-6, "{}", p.ops[0].bottom_level);
        assert!(p.ops.iter().all(|o| o.bottom_level <= p.ops[0].bottom_level));
        assert_eq!(p.last_writer[t.index(2, 2)], p.ops.len() - 1);
        assert_eq!(p.first_use_level[t.index(0, 0)], p.ops[0].bottom_level);
        let n = 30.0f64;
        assert!((p.flops() - (n * n * n / 3.0)).abs() < 0.2 * n * n * n / 3.0);
    }

    /// By the inverse, four tiles a side: steps 0, 1 and 2 (three, two and one TRSM)
    /// get an INVERSE after their POTRF, and every TRSM multiplies by it (after the
    /// INVERSE); the last step has none.
    #[test]
    fn the_inverse_plan_of_four_tiles() {
        let t = Tiling::new(40, 10).unwrap();
        let p = Plan::new(t, Trsm::Inverse);
        assert_eq!(p.counts(), [4, 6, 6, 4, 3]);
        let at = |op: Op| p.ops.iter().position(|o| o.op == op).unwrap();
        let (potrf0, inv0) = (at(Op::Potrf { k: 0 }), at(Op::Inverse { k: 0 }));
        assert_eq!(p.predecessors[inv0], vec![potrf0]);
        for i in 1..4 {
            assert_eq!(p.predecessors[at(Op::Trsm { i, k: 0, by_inverse: true })], vec![inv0]);
        }
        assert!(!p.ops.iter().any(|o| matches!(o.op, Op::Trsm { by_inverse: false, .. })));
        // TRSM(3, 2): after step 1's update of its tile and step 2's INVERSE.
        let (gemm, inv2) = (at(Op::Gemm { i: 3, j: 2, k: 1 }), at(Op::Inverse { k: 2 }));
        assert_eq!(p.predecessors[at(Op::Trsm { i: 3, k: 2, by_inverse: true })], vec![gemm, inv2]);
        assert!(!p.ops.iter().any(|o| o.op == Op::Inverse { k: 3 }));
        assert_eq!(Op::Inverse { k: 1 }.writes().block(), (1, 1));
        // The same blocks' last writers as the solving plan's operations.
        let solve = Plan::new(t, Trsm::Solve);
        for (w, v) in p.last_writer.iter().zip(&solve.last_writer) {
            assert_eq!(p.ops[*w].op.writes(), solve.ops[*v].op.writes());
        }
    }

    /// On the path: POTRF, INVERSE and a step's first TRSM by the inverse; every TRSM by
    /// the solve; never a SYRK or GEMM.
    #[test]
    fn what_runs_on_the_path() {
        let t = Tiling::new(40, 10).unwrap();
        let urgent = |trsm| -> Vec<Op> { Plan::new(t, trsm).ops.iter().filter(|o| o.urgent).map(|o| o.op).collect() };
        let inverse = urgent(Trsm::Inverse);
        assert!(inverse.contains(&Op::Potrf { k: 3 }) && inverse.contains(&Op::Inverse { k: 0 }));
        assert!(inverse.contains(&Op::Trsm { i: 1, k: 0, by_inverse: true }));
        assert!(!inverse.contains(&Op::Trsm { i: 2, k: 0, by_inverse: true }));
        assert!(!inverse.iter().any(|o| matches!(o, Op::Syrk { .. } | Op::Gemm { .. })));
        assert_eq!(inverse.len(), 4 + 3 + 3);
        let solve = urgent(Trsm::Solve);
        assert_eq!(solve.len(), 4 + 6);
    }
}
