//! The right-looking tiled Cholesky factorisation as a list of tile operations, the
//! classic task graph (Buttari et al.; StarPU's `cholesky` example): for each k,
//!
//! * POTRF(k): L_kk ← chol(A_kk);
//! * TRSM(i, k), i > k: A_ik ← A_ik·L_kk⁻ᵀ;
//! * SYRK(i, k), i > k: A_ii ← A_ii − A_ik·A_ikᵀ;
//! * GEMM(i, j, k), i > j > k: A_ij ← A_ij − A_ik·A_jkᵀ.
//!
//! Each operation reads some tiles and writes one. The dependencies are what chariot
//! infers from those declarations at tile (piece) granularity: read after write, write
//! after read, write after write. [`Plan`] computes them too, for each task's priority:
//! its bottom level, the flops of the heaviest chain from the task to the end (its own
//! included), so that chariot's largest-first order runs the critical path first.

use super::Tiling;

/// One tile operation (tile (i, j) is row i, column j of tiles, i ≥ j).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// L_kk ← chol(A_kk).
    Potrf {
        /// The step.
        k: usize,
    },
    /// A_ik ← A_ik·L_kk⁻ᵀ.
    Trsm {
        /// The tile row.
        i: usize,
        /// The step.
        k: usize,
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
    pub fn reads(&self) -> Vec<(usize, usize)> {
        match *self {
            Op::Potrf { .. } => vec![],
            Op::Trsm { k, .. } => vec![(k, k)],
            Op::Syrk { i, k } => vec![(i, k)],
            Op::Gemm { i, j, k } => vec![(i, k), (j, k)],
        }
    }

    /// The tile it reads and writes.
    pub fn writes(&self) -> (usize, usize) {
        match *self {
            Op::Potrf { k } => (k, k),
            Op::Trsm { i, k } => (i, k),
            Op::Syrk { i, .. } => (i, i),
            Op::Gemm { i, j, .. } => (i, j),
        }
    }

    /// Its flops on tiles of order b (LAPACK's counts, leading terms): POTRF b³/3, TRSM
    /// and SYRK b³, GEMM 2b³.
    pub fn flops(&self, b: usize) -> f64 {
        let b3 = (b as f64).powi(3);
        match self {
            Op::Potrf { .. } => b3 / 3.0,
            Op::Trsm { .. } | Op::Syrk { .. } => b3,
            Op::Gemm { .. } => 2.0 * b3,
        }
    }

    /// Short name: POTRF, TRSM, SYRK, GEMM.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Potrf { .. } => "POTRF",
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
}

/// The tiled factorisation's operations in the right-looking order (a topological
/// order of the graph), with what the uploads and readbacks of tiles need.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The tiling.
    pub tiling: Tiling,
    /// The operations, in the order a serial loop runs them.
    pub ops: Vec<Planned>,
    /// Per tile (by [`Tiling::index`]): the operation (index in `ops`) that writes it
    /// last, after which its L is final.
    pub last_writer: Vec<usize>,
    /// Per tile: the bottom level of the first operation that touches it (the upload's
    /// priority: tiles needed early and on the critical path go first).
    pub first_use_level: Vec<f64>,
    /// Predecessors of each operation (indices in `ops`), as chariot infers them at
    /// tile granularity (the uploads left out).
    pub predecessors: Vec<Vec<usize>>,
}

impl Plan {
    /// The plan of `tiling`.
    pub fn new(tiling: Tiling) -> Plan {
        let nt = tiling.nt;
        let mut ops = Vec::new();
        for k in 0..nt {
            ops.push(Op::Potrf { k });
            for i in k + 1..nt {
                ops.push(Op::Trsm { i, k });
            }
            for i in k + 1..nt {
                ops.push(Op::Syrk { i, k });
                for j in k + 1..i {
                    ops.push(Op::Gemm { i, j, k });
                }
            }
        }
        let tiles = tiling.tiles();
        // Dependencies per tile: the last writer, the readers since.
        let mut writer: Vec<Option<usize>> = vec![None; tiles];
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); tiles];
        let mut first_use: Vec<Option<usize>> = vec![None; tiles];
        let mut predecessors = vec![Vec::new(); ops.len()];
        for (o, op) in ops.iter().enumerate() {
            let mut pred = Vec::new();
            for (i, j) in op.reads() {
                let t = tiling.index(i, j);
                pred.extend(writer[t]);
                readers[t].push(o);
                first_use[t].get_or_insert(o);
            }
            let (i, j) = op.writes();
            let t = tiling.index(i, j);
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
        Plan {
            tiling,
            ops: ops.iter().zip(&level).map(|(&op, &bottom_level)| Planned { op, bottom_level }).collect(),
            last_writer: writer.iter().map(|w| w.expect("every tile is written")).collect(),
            first_use_level: first_use.iter().map(|f| level[f.expect("every tile is used")]).collect(),
            predecessors,
        }
    }

    /// Flops of all operations (≈ N³/3 of the padded order, plus lower-order terms).
    pub fn flops(&self) -> f64 {
        self.ops.iter().map(|p| p.op.flops(self.tiling.b)).sum()
    }

    /// Operations of each kind: POTRF, TRSM, SYRK, GEMM.
    pub fn counts(&self) -> [usize; 4] {
        let mut c = [0; 4];
        for p in &self.ops {
            c[match p.op {
                Op::Potrf { .. } => 0,
                Op::Trsm { .. } => 1,
                Op::Syrk { .. } => 2,
                Op::Gemm { .. } => 3,
            }] += 1;
        }
        c
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
        let p = Plan::new(t);
        assert_eq!(p.counts(), [3, 3, 3, 1]);
        let names: Vec<_> = p.ops.iter().map(|o| o.op).collect();
        assert_eq!(
            names[..4],
            [Op::Potrf { k: 0 }, Op::Trsm { i: 1, k: 0 }, Op::Trsm { i: 2, k: 0 }, Op::Syrk { i: 1, k: 0 }]
        );
        // GEMM(2,1,0) after TRSM(1,0) and TRSM(2,0); POTRF(1) after SYRK(1,0).
        let gemm = names.iter().position(|o| *o == Op::Gemm { i: 2, j: 1, k: 0 }).unwrap();
        assert_eq!(p.predecessors[gemm], vec![1, 2]);
        let potrf1 = names.iter().position(|o| *o == Op::Potrf { k: 1 }).unwrap();
        assert_eq!(p.predecessors[potrf1], vec![3]);
        // TRSM(2,1) writes tile (2,1): after GEMM(2,1,0) (WAW) and POTRF(1) (RAW).
        let trsm = names.iter().position(|o| *o == Op::Trsm { i: 2, k: 1 }).unwrap();
        assert_eq!(p.predecessors[trsm], vec![gemm, potrf1]);
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
}
