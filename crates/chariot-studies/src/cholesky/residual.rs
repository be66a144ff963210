//! How good a factor L is: ‖A − LLᵀ‖_F/‖A‖_F exactly (O(N³): small N), or estimated
//! from random vectors, ‖Ax − L(Lᵀx)‖₂/(‖A‖_F‖x‖₂) (O(N²) each: any N). Both in f64 on
//! the CPU's cores; A comes from its generator, never from a copy that the factorisation
//! may have overwritten.

use super::{par_map, uniform, Spd, Tiling};

/// A lower-triangular factor L that can be multiplied with vectors.
pub trait Factor: Sync {
    /// Its order N.
    fn order(&self) -> usize;
    /// Lᵀ·x.
    fn lt_mul(&self, x: &[f64]) -> Vec<f64>;
    /// L·z.
    fn l_mul(&self, z: &[f64]) -> Vec<f64>;
}

/// L as n×n column-major: only the lower triangle is read (cuSOLVER's potrf leaves A's
/// upper triangle above the diagonal).
#[derive(Clone, Copy, Debug)]
pub struct DenseFactor<'a> {
    /// Order.
    pub n: usize,
    /// n² elements, column-major.
    pub data: &'a [f64],
}

impl Factor for DenseFactor<'_> {
    fn order(&self) -> usize {
        self.n
    }

    fn lt_mul(&self, x: &[f64]) -> Vec<f64> {
        let n = self.n;
        par_map(n, |j| self.data[j + j * n..(j + 1) * n].iter().zip(&x[j..]).map(|(l, x)| l * x).sum())
    }

    fn l_mul(&self, z: &[f64]) -> Vec<f64> {
        let n = self.n;
        let block = 256;
        let parts = par_map(n.div_ceil(block), |p| {
            let (r0, r1) = (p * block, ((p + 1) * block).min(n));
            let mut y = vec![0.0; r1 - r0];
            for (j, &zj) in z.iter().enumerate().take(r1) {
                let from = r0.max(j);
                for (y, l) in y[from - r0..].iter_mut().zip(&self.data[from + j * n..r1 + j * n]) {
                    *y += l * zj;
                }
            }
            y
        });
        parts.concat()
    }
}

/// L in tiles (see [`Tiling`]): above the diagonal of the diagonal tiles is not read.
#[derive(Clone, Copy, Debug)]
pub struct TiledFactor<'a> {
    /// The layout.
    pub tiling: Tiling,
    /// [`Tiling::len`] elements.
    pub tiles: &'a [f64],
}

impl TiledFactor<'_> {
    fn tile(&self, i: usize, j: usize) -> &[f64] {
        &self.tiles[self.tiling.range(i, j)]
    }
}

impl Factor for TiledFactor<'_> {
    fn order(&self) -> usize {
        self.tiling.n
    }

    fn lt_mul(&self, x: &[f64]) -> Vec<f64> {
        let Tiling { n, b, nt } = self.tiling;
        let mut xp = x.to_vec();
        xp.resize(nt * b, 0.0);
        let parts = par_map(nt, |tj| {
            let mut z = vec![0.0; b];
            for ti in tj..nt {
                let t = self.tile(ti, tj);
                let xi = &xp[ti * b..(ti + 1) * b];
                for (c, zc) in z.iter_mut().enumerate() {
                    let from = if ti == tj { c } else { 0 };
                    *zc += t[from + c * b..(c + 1) * b].iter().zip(&xi[from..]).map(|(l, x)| l * x).sum::<f64>();
                }
            }
            z
        });
        let mut z = parts.concat();
        z.truncate(n);
        z
    }

    fn l_mul(&self, z: &[f64]) -> Vec<f64> {
        let Tiling { n, b, nt } = self.tiling;
        let mut zp = z.to_vec();
        zp.resize(nt * b, 0.0);
        let parts = par_map(nt, |ti| {
            let mut y = vec![0.0; b];
            for tj in 0..=ti {
                let t = self.tile(ti, tj);
                for c in 0..b {
                    let f = zp[tj * b + c];
                    let from = if ti == tj { c } else { 0 };
                    for (y, l) in y[from..].iter_mut().zip(&t[from + c * b..(c + 1) * b]) {
                        *y += l * f;
                    }
                }
            }
            y
        });
        let mut y = parts.concat();
        y.truncate(n);
        y
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// ‖A − LLᵀ‖_F/‖A‖_F with `l` n×n column-major, zeros above the diagonal (as
/// [`Tiling::lower_dense`] and [`super::cpu::reference`] write it). O(N³).
///
/// # Panics
/// If `l` does not hold n² elements.
pub fn exact(a: &Spd, l: &[f64]) -> f64 {
    let n = a.n;
    assert_eq!(l.len(), n * n, "factor of another order");
    let cols = par_map(n, |j| {
        let mut s = 0.0;
        for i in 0..n {
            let llt: f64 = (0..=i.min(j)).map(|k| l[i + k * n] * l[j + k * n]).sum();
            s += (a.entry(i, j) - llt).powi(2);
        }
        s
    });
    cols.iter().sum::<f64>().sqrt() / a.frobenius()
}

/// The largest of ‖Ax − L(Lᵀx)‖₂/(‖A‖_F‖x‖₂) over `vectors` random vectors x (entries
/// uniform in [−1, 1) from `seed`); `a_norm` is ‖A‖_F ([`Spd::frobenius`], computed
/// once per matrix). An estimate of the residual from below, of its size in practice.
///
/// # Panics
/// If `l` has another order than `a`.
pub fn randomized(a: &Spd, a_norm: f64, l: &dyn Factor, vectors: usize, seed: u64) -> f64 {
    let n = a.n;
    assert_eq!(l.order(), n, "factor of another order");
    let mut worst = 0.0f64;
    for v in 0..vectors {
        let x: Vec<f64> = (0..n).map(|i| uniform(seed ^ (v as u64 + 1) << 48, i as u64)).collect();
        let ax = a.apply(&x);
        let llx = l.l_mul(&l.lt_mul(&x));
        let diff: Vec<f64> = ax.iter().zip(&llx).map(|(p, q)| p - q).collect();
        worst = worst.max(norm(&diff) / (a_norm * norm(&x)));
    }
    worst
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn both_residuals_see_a_good_factor_and_a_bad_one() {
        let (n, b) = (70, 16);
        let a = Spd::new(n, 2);
        let t = Tiling::new(n, b).unwrap();
        let mut tiles = a.tiles(&t);
        super::super::cpu::factor_tiles(&t, &mut tiles).unwrap();
        let l = t.lower_dense(&tiles);
        let na = a.frobenius();
        assert!(exact(&a, &l) < 1e-15);
        let tiled = randomized(&a, na, &TiledFactor { tiling: t, tiles: &tiles }, 3, 9);
        let dense = randomized(&a, na, &DenseFactor { n, data: &l }, 3, 9);
        assert!(tiled < 1e-15 && dense < 1e-15, "{tiled} {dense}");
        // The dense factor's upper triangle is not read.
        let mut upper = l.clone();
        upper[3 * n] = 1e9;
        assert_eq!(randomized(&a, na, &DenseFactor { n, data: &upper }, 3, 9), dense);
        // A wrong entry shows in both.
        let mut bad = l.clone();
        bad[40 + 20 * n] += 1e-3;
        assert!(exact(&a, &bad) > 1e-8);
        assert!(randomized(&a, na, &DenseFactor { n, data: &bad }, 3, 9) > 1e-9);
        tiles[t.range(2, 1)][40 - 32 + (20 - 16) * b] += 1e-3;
        assert!(randomized(&a, na, &TiledFactor { tiling: t, tiles: &tiles }, 3, 9) > 1e-9);
    }
}
