//! Tiled Cholesky factorisation (task graphs and resident data, benchmark 2): the classic StarPU benchmark
//! and MUSTARD's Table 4, as a chariot task graph over device-resident tiles, measured
//! against cuSOLVER's dense single-GPU `cusolverDnDpotrf`.
//!
//! * [`Spd`]: a symmetric positive definite test matrix, any entry on demand (a hash of
//!   its seed and position, with a dominant diagonal), written in tiles or dense;
//! * [`Tiling`]: the tile layout, the lower triangle's tiles one after the other, each
//!   b×b column-major (one resident piece per tile), the order padded to a multiple of b
//!   with the identity;
//! * [`cpu`]: the four tile operations on the CPU (what the sim backend runs) and the
//!   dense reference;
//! * [`plan`]: the right-looking tiled algorithm as a list of tile operations, with the
//!   dependencies between them and each task's priority (its bottom level in flops);
//! * [`residual`]: ‖A − LLᵀ‖_F/‖A‖_F exactly (small N) or by random vectors (large N);
//! * [`baseline`]: cuSOLVER's dense potrf on the whole matrix, on one GPU;
//! * [`tiled`]: the factorisation as chariot tasks over resident tiles.
//!
//! ```
//! use chariot_studies::cholesky::{cpu, residual, Spd, Tiling};
//! let (spd, t) = (Spd::new(96, 7), Tiling::new(96, 32).unwrap());
//! let mut tiles = spd.tiles(&t);
//! cpu::factor_tiles(&t, &mut tiles).unwrap();
//! let l = t.lower_dense(&tiles);
//! assert!(residual::exact(&spd, &l) < 1e-14);
//! ```

pub mod baseline;
pub mod cpu;
pub mod plan;
pub mod residual;
pub mod tiled;

use std::ops::Range;

/// Flops of a Cholesky factorisation of order `n`, n³/3, the count GFLOP/s are quoted on.
pub fn flops(n: usize) -> f64 {
    let n = n as f64;
    n * n * n / 3.0
}

/// Runs `f(index, chunk)` over the `chunk`-element chunks of `out` on all cores.
pub(crate) fn par_chunks_mut<T: Send>(out: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let chunk = chunk.max(1);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunks = out.len().div_ceil(chunk);
    if threads <= 1 || chunks <= 1 {
        out.chunks_mut(chunk).enumerate().for_each(|(i, c)| f(i, c));
        return;
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<parking_lot::Mutex<Option<&mut [T]>>> =
        out.chunks_mut(chunk).map(|c| parking_lot::Mutex::new(Some(c))).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(chunks) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(slot) = slots.get(i) else { break };
                if let Some(c) = slot.lock().take() {
                    f(i, c);
                }
            });
        }
    });
}

/// `f(i)` for `i` in `0..n` on all cores, collected in order.
pub(crate) fn par_map<R: Send + Default + Clone>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let mut out = vec![R::default(); n];
    par_chunks_mut(&mut out, 1, |i, o| o[0] = f(i));
    out
}

/// A symmetric positive definite matrix of order `n`, any entry on demand: off the
/// diagonal a uniform value in [−1, 1) hashed from the seed and the (unordered) position,
/// on it the same plus `n`, so that every row is strictly diagonally dominant (hence
/// SPD, and well conditioned: its eigenvalues lie within n ± 2√n or so).
///
/// Beyond the order (the padding of a [`Tiling`]) it is the identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spd {
    /// Order N.
    pub n: usize,
    /// Seed of the entries.
    pub seed: u64,
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform value in [−1, 1) from a hash of `seed` and `k`.
pub(crate) fn uniform(seed: u64, k: u64) -> f64 {
    let h = splitmix(seed ^ splitmix(k));
    (h >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0
}

impl Spd {
    /// The matrix of order `n` drawn from `seed`.
    pub fn new(n: usize, seed: u64) -> Spd {
        Spd { n, seed }
    }

    /// Entry (i, j) (= (j, i)).
    #[inline]
    pub fn entry(&self, i: usize, j: usize) -> f64 {
        if i >= self.n || j >= self.n {
            return if i == j { 1.0 } else { 0.0 };
        }
        let (hi, lo) = if i >= j { (i, j) } else { (j, i) };
        let v = uniform(self.seed, (hi as u64) << 32 | lo as u64);
        if i == j {
            v + self.n as f64
        } else {
            v
        }
    }

    /// The lower triangle's tiles of `t` (which must have this order), as
    /// [`Tiling::len`] elements; diagonal tiles are written whole (both triangles).
    pub fn tiles(&self, t: &Tiling) -> Vec<f64> {
        let mut out = vec![0.0; t.len()];
        self.fill_tiles(t, &mut out);
        out
    }

    /// Writes the tiles of `t` into `out` ([`Tiling::len`] elements), on all cores.
    ///
    /// # Panics
    /// If `out` has another length or `t` another order.
    pub fn fill_tiles(&self, t: &Tiling, out: &mut [f64]) {
        assert_eq!(t.n, self.n, "tiling of another order");
        assert_eq!(out.len(), t.len(), "tile buffer of another length");
        let b = t.b;
        par_chunks_mut(out, b * b, |tile, x| {
            let (ti, tj) = t.position(tile);
            for c in 0..b {
                for r in 0..b {
                    x[r + c * b] = self.entry(ti * b + r, tj * b + c);
                }
            }
        });
    }

    /// The whole matrix, n×n column-major (both triangles), on all cores.
    pub fn dense(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.n * self.n];
        self.fill_dense(&mut out);
        out
    }

    /// Writes the whole matrix into `out` (n×n column-major), on all cores.
    ///
    /// # Panics
    /// If `out` does not hold n² elements.
    pub fn fill_dense(&self, out: &mut [f64]) {
        let n = self.n;
        assert_eq!(out.len(), n * n, "dense buffer of another length");
        if n == 0 {
            return;
        }
        par_chunks_mut(out, n * 64, |block, x| {
            for (c, col) in x.chunks_mut(n).enumerate() {
                let j = block * 64 + c;
                for (i, v) in col.iter_mut().enumerate() {
                    *v = self.entry(i, j);
                }
            }
        });
    }

    /// ‖A‖_F, on all cores.
    pub fn frobenius(&self) -> f64 {
        let n = self.n;
        par_map(n, |i| (0..n).map(|j| self.entry(i, j).powi(2)).sum::<f64>()).iter().sum::<f64>().sqrt()
    }

    /// A·x (x of length n), on all cores.
    ///
    /// # Panics
    /// If `x` does not have length n.
    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        assert_eq!(x.len(), self.n, "vector of another length");
        par_map(self.n, |i| x.iter().enumerate().map(|(j, &xj)| self.entry(i, j) * xj).sum())
    }
}

/// A tile the factorisation keeps, b×b column-major: a block of the lower triangle, or
/// the inverse of a diagonal block's factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tile {
    /// Block (i, j) of the matrix, i ≥ j: A's, then L's.
    Block(usize, usize),
    /// Step k's L_kk⁻¹ (lower triangular), which the step's TRSMs may multiply by.
    Inverse(usize),
}

impl Tile {
    /// The block it belongs to, where a layout places it: itself, or for step k's
    /// inverse the diagonal block (k, k).
    pub fn block(self) -> (usize, usize) {
        match self {
            Tile::Block(i, j) => (i, j),
            Tile::Inverse(k) => (k, k),
        }
    }
}

/// The tile layout: order `n` padded to `nt`·`b`, the lower triangle's nt(nt+1)/2 tiles
/// one after the other row by row (tile (i, j), i ≥ j, is number i(i+1)/2 + j), each
/// b×b column-major and contiguous: one resident piece per tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// Order N of the matrix.
    pub n: usize,
    /// Tile order b.
    pub b: usize,
    /// Tiles per row and column, ⌈N/b⌉.
    pub nt: usize,
}

impl Tiling {
    /// Order `n` in tiles of order `b`.
    ///
    /// # Errors
    /// A message for `n` or `b` zero, or a tile order beyond what cuBLAS takes (2³¹/b²).
    pub fn new(n: usize, b: usize) -> Result<Tiling, String> {
        if n == 0 || b == 0 {
            return Err(format!("order {n} in tiles of {b}: both must be positive"));
        }
        if b.checked_mul(b).is_none_or(|bb| bb > i32::MAX as usize) {
            return Err(format!("tile order {b} is too large"));
        }
        Ok(Tiling { n, b, nt: n.div_ceil(b) })
    }

    /// The padded order nt·b.
    pub fn padded(&self) -> usize {
        self.nt * self.b
    }

    /// Tiles stored, nt(nt+1)/2.
    pub fn tiles(&self) -> usize {
        self.nt * (self.nt + 1) / 2
    }

    /// Elements of one tile, b².
    pub fn tile_len(&self) -> usize {
        self.b * self.b
    }

    /// Elements stored, tiles × b².
    pub fn len(&self) -> usize {
        self.tiles() * self.tile_len()
    }

    /// Whether nothing is stored (never: n and b are positive).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of tile (i, j), i ≥ j.
    ///
    /// # Panics
    /// If i < j or i ≥ nt.
    pub fn index(&self, i: usize, j: usize) -> usize {
        assert!(j <= i && i < self.nt, "tile ({i}, {j}) is not in the lower triangle of {} tiles", self.nt);
        i * (i + 1) / 2 + j
    }

    /// (i, j) of tile number `tile`.
    pub fn position(&self, tile: usize) -> (usize, usize) {
        let mut i = (((8 * tile + 1) as f64).sqrt() as usize).saturating_sub(1) / 2;
        while (i + 1) * (i + 2) / 2 <= tile {
            i += 1;
        }
        while i * (i + 1) / 2 > tile {
            i -= 1;
        }
        (i, tile - i * (i + 1) / 2)
    }

    /// First element of tile (i, j).
    pub fn offset(&self, i: usize, j: usize) -> usize {
        self.index(i, j) * self.tile_len()
    }

    /// Elements of tile (i, j).
    pub fn range(&self, i: usize, j: usize) -> Range<usize> {
        let o = self.offset(i, j);
        o..o + self.tile_len()
    }

    /// Where `tile` lies in the storage, in tiles: a block's [`Tiling::index`]; step k's
    /// inverse the k-th tile after the blocks (kept there only where the TRSMs multiply
    /// by it, [`plan::Trsm::Inverse`]).
    pub fn slot(&self, tile: Tile) -> usize {
        match tile {
            Tile::Block(i, j) => self.index(i, j),
            Tile::Inverse(k) => self.tiles() + k,
        }
    }

    /// Elements of `tile` in the storage.
    pub fn tile_range(&self, tile: Tile) -> Range<usize> {
        let o = self.slot(tile) * self.tile_len();
        o..o + self.tile_len()
    }

    /// The factor L held in `tiles` (the lower triangle; above the diagonal of the
    /// diagonal tiles is ignored) as an n×n column-major matrix with zeros above the
    /// diagonal, the padding dropped.
    ///
    /// # Panics
    /// If `tiles` does not hold [`Tiling::len`] elements.
    pub fn lower_dense(&self, tiles: &[f64]) -> Vec<f64> {
        assert_eq!(tiles.len(), self.len(), "tile buffer of another length");
        let (n, b) = (self.n, self.b);
        let mut out = vec![0.0; n * n];
        for c in 0..n {
            for r in c..n {
                let t = &tiles[self.range(r / b, c / b)];
                out[r + c * n] = t[r % b + (c % b) * b];
            }
        }
        out
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn positions_invert_indices() {
        let t = Tiling::new(1000, 7).unwrap();
        for i in 0..t.nt {
            for j in 0..=i {
                assert_eq!(t.position(t.index(i, j)), (i, j));
            }
        }
        assert_eq!(t.nt, 143);
        assert_eq!(t.padded(), 1001);
        assert_eq!(t.len(), 143 * 144 / 2 * 49);
    }

    #[test]
    fn the_matrix_is_symmetric_and_dominant() {
        let a = Spd::new(50, 3);
        for i in 0..50 {
            let off: f64 = (0..50).filter(|&j| j != i).map(|j| a.entry(i, j).abs()).sum();
            assert!(a.entry(i, i) > off);
            for j in 0..50 {
                assert_eq!(a.entry(i, j), a.entry(j, i));
                assert!(i == j || a.entry(i, j).abs() < 1.0);
            }
        }
        assert_eq!(a.entry(50, 50), 1.0);
        assert_eq!(a.entry(51, 3), 0.0);
        let t = Tiling::new(50, 16).unwrap();
        let tiles = a.tiles(&t);
        assert_eq!(tiles[t.range(3, 1)][(49 - 48) + (20 - 16) * 16], a.entry(49, 20));
        assert_eq!(tiles[t.range(3, 3)][2 + 2 * 16], 1.0);
        let dense = a.dense();
        assert_eq!(dense[7 + 3 * 50], a.entry(7, 3));
        let x: Vec<f64> = (0..50).map(|i| i as f64).collect();
        let y = a.apply(&x);
        let want: f64 = (0..50).map(|j| dense[4 + j * 50] * x[j]).sum();
        assert!((y[4] - want).abs() < 1e-9);
        let f: f64 = dense.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((a.frobenius() - f).abs() < 1e-9 * f);
    }
}
