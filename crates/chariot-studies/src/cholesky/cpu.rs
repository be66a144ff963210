//! The four tile operations of the tiled Cholesky factorisation on the CPU, in f64, on
//! b×b column-major tiles (what the sim backend runs in place of cuSOLVER and cuBLAS),
//! and the dense reference.
//!
//! Each is the plain loop, arranged so that the innermost loop runs down a column.

use super::plan::{Op, Plan, Trsm};
use super::{Tile, Tiling};

/// POTRF: the lower Cholesky factor of the n×n column-major `a` in place (its lower
/// triangle; above the diagonal is left as it was).
///
/// # Errors
/// A message naming the column where a pivot is not positive (not positive definite).
///
/// # Panics
/// If `a` holds fewer than n² elements.
pub fn potrf(a: &mut [f64], n: usize) -> Result<(), String> {
    assert!(a.len() >= n * n, "potrf of order {n} on {} elements", a.len());
    for j in 0..n {
        let d = a[j + j * n];
        if d.is_nan() || d <= 0.0 {
            return Err(format!("potrf: pivot {j} is {d}: not positive definite"));
        }
        let l = d.sqrt();
        a[j + j * n] = l;
        for v in &mut a[j + 1 + j * n..(j + 1) * n] {
            *v /= l;
        }
        for c in j + 1..n {
            let f = a[c + j * n];
            if f == 0.0 {
                continue;
            }
            let (left, right) = a.split_at_mut(c * n);
            let col_j = &left[j * n + c..(j + 1) * n];
            for (x, &y) in right[c..n].iter_mut().zip(col_j) {
                *x -= y * f;
            }
        }
    }
    Ok(())
}

/// TRSM: `x` ← `x`·L⁻ᵀ, with L the lower triangle of `l` (b×b), that is the solution X
/// of X·Lᵀ = B (cuBLAS: side right, lower, transposed, non-unit).
///
/// # Panics
/// If a slice holds fewer than b² elements.
pub fn trsm(l: &[f64], x: &mut [f64], b: usize) {
    assert!(l.len() >= b * b && x.len() >= b * b, "trsm of order {b}");
    for j in 0..b {
        let (done, rest) = x.split_at_mut(j * b);
        let col = &mut rest[..b];
        for k in 0..j {
            let f = l[j + k * b];
            if f != 0.0 {
                for (v, &w) in col.iter_mut().zip(&done[k * b..(k + 1) * b]) {
                    *v -= f * w;
                }
            }
        }
        let d = l[j + j * b];
        for v in col.iter_mut() {
            *v /= d;
        }
    }
}

/// L⁻¹ of the lower triangle of `l` (b×b) into `inv`, lower triangular with zeros
/// above the diagonal: the solution of L·X = I, column by column.
///
/// # Panics
/// If a slice holds fewer than b² elements.
pub fn inverse_lower(l: &[f64], inv: &mut [f64], b: usize) {
    assert!(l.len() >= b * b && inv.len() >= b * b, "inverse of order {b}");
    inv[..b * b].fill(0.0);
    for c in 0..b {
        let col = &mut inv[c * b..(c + 1) * b];
        col[c] = 1.0;
        for r in c..b {
            let v = col[r] / l[r + r * b];
            col[r] = v;
            if v != 0.0 {
                for (x, &w) in col[r + 1..b].iter_mut().zip(&l[r + 1 + r * b..(r + 1) * b]) {
                    *x -= w * v;
                }
            }
        }
    }
}

/// TRSM by the inverse: `x` ← `x`·invᵀ, with `inv` lower triangular (b×b), as cuBLAS's
/// `cublasDtrmm` (side right, lower, transposed, non-unit): column j of the result is
/// Σ_{k ≤ j} x_k·inv[j, k], x_k column k of `x`.
///
/// # Panics
/// If a slice holds fewer than b² elements.
pub fn trmm_by_inverse(inv: &[f64], x: &mut [f64], b: usize) {
    assert!(inv.len() >= b * b && x.len() >= b * b, "trmm of order {b}");
    // Column j of x·invᵀ reads columns 0..=j of x: go from the last column down so that
    // each column is written after every later one has read it.
    for j in (0..b).rev() {
        let (done, rest) = x.split_at_mut(j * b);
        let col = &mut rest[..b];
        let d = inv[j + j * b];
        for v in col.iter_mut() {
            *v *= d;
        }
        for k in 0..j {
            let f = inv[j + k * b];
            if f != 0.0 {
                for (v, &w) in col.iter_mut().zip(&done[k * b..(k + 1) * b]) {
                    *v += f * w;
                }
            }
        }
    }
}

/// SYRK: the lower triangle of `c` ← c − a·aᵀ (b×b).
///
/// # Panics
/// If a slice holds fewer than b² elements.
pub fn syrk(a: &[f64], c: &mut [f64], b: usize) {
    assert!(a.len() >= b * b && c.len() >= b * b, "syrk of order {b}");
    for k in 0..b {
        let ak = &a[k * b..(k + 1) * b];
        for j in 0..b {
            let f = ak[j];
            if f != 0.0 {
                for (v, &w) in c[j + j * b..(j + 1) * b].iter_mut().zip(&ak[j..]) {
                    *v -= w * f;
                }
            }
        }
    }
}

/// GEMM: `c` ← c − a·bᵀ (b×b).
///
/// # Panics
/// If a slice holds fewer than b² elements.
pub fn gemm(a: &[f64], bt: &[f64], c: &mut [f64], b: usize) {
    assert!(a.len() >= b * b && bt.len() >= b * b && c.len() >= b * b, "gemm of order {b}");
    for k in 0..b {
        let ak = &a[k * b..(k + 1) * b];
        for j in 0..b {
            let f = bt[j + k * b];
            if f != 0.0 {
                for (v, &w) in c[j * b..(j + 1) * b].iter_mut().zip(ak) {
                    *v -= w * f;
                }
            }
        }
    }
}

/// Runs tile operation `op` of tiling `t` on `tiles`, whose element 0 is element
/// `base` of the tile storage (the sim backend hands out a buffer from an offset on;
/// step k's inverse tile lies after the blocks, [`Tiling::tile_range`]).
///
/// # Errors
/// POTRF's message if a pivot is not positive.
///
/// # Panics
/// If a tile of `op` lies before `base` or beyond `tiles`.
pub fn run_op(t: &Tiling, op: Op, tiles: &mut [f64], base: usize) -> Result<(), String> {
    let b = t.b;
    let at = |tile| {
        let r = t.tile_range(tile);
        r.start - base..r.end - base
    };
    let copy = |tiles: &[f64], tile| tiles[at(tile)].to_vec();
    let out = op.writes();
    match op {
        Op::Potrf { .. } => potrf(&mut tiles[at(out)], b)?,
        Op::Inverse { k } => {
            let l = copy(tiles, Tile::Block(k, k));
            inverse_lower(&l, &mut tiles[at(out)], b);
        }
        Op::Trsm { k, by_inverse: false, .. } => {
            let l = copy(tiles, Tile::Block(k, k));
            trsm(&l, &mut tiles[at(out)], b);
        }
        Op::Trsm { k, by_inverse: true, .. } => {
            let inv = copy(tiles, Tile::Inverse(k));
            trmm_by_inverse(&inv, &mut tiles[at(out)], b);
        }
        Op::Syrk { i, k } => {
            let a = copy(tiles, Tile::Block(i, k));
            syrk(&a, &mut tiles[at(out)], b);
        }
        Op::Gemm { i, j, k } => {
            let (a, bt) = (copy(tiles, Tile::Block(i, k)), copy(tiles, Tile::Block(j, k)));
            gemm(&a, &bt, &mut tiles[at(out)], b);
        }
    }
    Ok(())
}

/// The tiled factorisation of `tiles` (laid out by `t`) on the CPU, one operation after
/// the other in the order of [`Plan::new`]: the reference for the task graph's order.
///
/// # Errors
/// POTRF's message if the matrix is not positive definite.
pub fn factor_tiles(t: &Tiling, tiles: &mut [f64]) -> Result<(), String> {
    for op in Plan::new(*t, Trsm::Solve).ops.iter().map(|o| o.op) {
        run_op(t, op, tiles, 0)?;
    }
    Ok(())
}

/// The dense reference: L of the n×n column-major `a` (its lower triangle), with zeros
/// written above the diagonal.
///
/// # Errors
/// POTRF's message if `a` is not positive definite.
pub fn reference(a: &mut [f64], n: usize) -> Result<(), String> {
    potrf(a, n)?;
    for c in 1..n {
        a[c * n..c * n + c].fill(0.0);
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    fn matmul_nt(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
        let mut c = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                c[i + j * n] = (0..n).map(|k| a[i + k * n] * b[j + k * n]).sum();
            }
        }
        c
    }

    fn transpose(a: &[f64], n: usize) -> Vec<f64> {
        (0..n * n).map(|k| a[k / n + (k % n) * n]).collect()
    }

    fn lower(a: &[f64], n: usize) -> Vec<f64> {
        let mut l = a.to_vec();
        for c in 1..n {
            l[c * n..c * n + c].fill(0.0);
        }
        l
    }

    #[test]
    fn tile_ops_do_what_they_say() {
        let n = 9;
        let spd = super::super::Spd::new(n, 5);
        let a = spd.dense();
        let mut l = a.clone();
        potrf(&mut l, n).unwrap();
        let l = lower(&l, n);
        let llt = matmul_nt(&l, &l, n);
        assert!(a.iter().zip(&llt).all(|(x, y)| (x - y).abs() < 1e-12));

        let b: Vec<f64> = (0..n * n).map(|k| super::super::uniform(1, k as u64)).collect();
        let mut x = b.clone();
        trsm(&l, &mut x, n);
        let xlt = matmul_nt(&x, &l, n);
        assert!(b.iter().zip(&xlt).all(|(p, q)| (p - q).abs() < 1e-12));

        let mut c = a.clone();
        syrk(&b, &mut c, n);
        let bbt = matmul_nt(&b, &b, n);
        for j in 0..n {
            for i in 0..n {
                let want = if i >= j { a[i + j * n] - bbt[i + j * n] } else { a[i + j * n] };
                assert!((c[i + j * n] - want).abs() < 1e-12);
            }
        }

        let mut c = a.clone();
        gemm(&b, &l, &mut c, n);
        let blt = matmul_nt(&b, &l, n);
        assert!(c.iter().zip(a.iter().zip(&blt)).all(|(c, (a, p))| (c - (a - p)).abs() < 1e-12));

        // The inverse: L·L⁻¹ = I, zeros above its diagonal; x·L⁻ᵀ by it as by the solve.
        let mut inv = vec![7.0; n * n];
        inverse_lower(&l, &mut inv, n);
        let li = matmul_nt(&l, &transpose(&inv, n), n);
        for j in 0..n {
            for i in 0..n {
                assert!((li[i + j * n] - f64::from(u8::from(i == j))).abs() < 1e-12, "L·L⁻¹ at ({i}, {j})");
                assert!(i >= j || inv[i + j * n] == 0.0);
            }
        }
        let mut y = b.clone();
        trmm_by_inverse(&inv, &mut y, n);
        assert!(x.iter().zip(&y).all(|(p, q)| (p - q).abs() < 1e-12));

        let mut bad = vec![1.0, 2.0, 2.0, 1.0];
        assert!(potrf(&mut bad, 2).unwrap_err().contains("pivot 1"));
    }

    /// The tiled factorisation equals the dense reference both ways of doing TRSM (the
    /// inverse tiles after the tiles, as the resident buffer holds them).
    #[test]
    fn tiled_equals_dense() {
        for way in [Trsm::Solve, Trsm::Inverse] {
            for (n, b) in [(64, 16), (70, 16), (33, 40)] {
                let spd = super::super::Spd::new(n, 11);
                let t = Tiling::new(n, b).unwrap();
                let mut tiles = spd.tiles(&t);
                tiles.resize(t.len() + way.extra_len(&t), f64::NAN);
                for op in Plan::new(t, way).ops.iter().map(|o| o.op) {
                    run_op(&t, op, &mut tiles, 0).unwrap();
                }
                let mut want = spd.dense();
                reference(&mut want, n).unwrap();
                let got = t.lower_dense(&tiles[..t.len()]);
                let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let err = got.iter().zip(&want).fold(0.0f64, |m, (g, w)| m.max((g - w).abs()));
                assert!(err <= 1e-13 * scale, "{way:?} n {n} b {b}: {err}");
            }
        }
    }
}
