//! The four tile operations of the tiled Cholesky factorisation on the CPU, in f64, on
//! b×b column-major tiles (what the sim backend runs in place of cuSOLVER and cuBLAS),
//! and the dense reference.
//!
//! Each is the plain loop, arranged so that the innermost loop runs down a column.

use super::plan::{Op, Plan};
use super::Tiling;

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
/// `base` of the tile buffer (the sim backend hands out a buffer from an offset on).
///
/// # Errors
/// POTRF's message if a pivot is not positive.
///
/// # Panics
/// If a tile of `op` lies before `base` or beyond `tiles`.
pub fn run_op(t: &Tiling, op: Op, tiles: &mut [f64], base: usize) -> Result<(), String> {
    let b = t.b;
    let at = |i, j| t.offset(i, j) - base;
    let copy = |tiles: &[f64], i, j| tiles[at(i, j)..at(i, j) + b * b].to_vec();
    match op {
        Op::Potrf { k } => potrf(&mut tiles[at(k, k)..at(k, k) + b * b], b)?,
        Op::Trsm { i, k } => {
            let l = copy(tiles, k, k);
            trsm(&l, &mut tiles[at(i, k)..at(i, k) + b * b], b);
        }
        Op::Syrk { i, k } => {
            let a = copy(tiles, i, k);
            syrk(&a, &mut tiles[at(i, i)..at(i, i) + b * b], b);
        }
        Op::Gemm { i, j, k } => {
            let (a, bt) = (copy(tiles, i, k), copy(tiles, j, k));
            gemm(&a, &bt, &mut tiles[at(i, j)..at(i, j) + b * b], b);
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
    for op in Plan::new(*t).ops.iter().map(|o| o.op) {
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

        let mut bad = vec![1.0, 2.0, 2.0, 1.0];
        assert!(potrf(&mut bad, 2).unwrap_err().contains("pivot 1"));
    }

    #[test]
    fn tiled_equals_dense() {
        for (n, b) in [(64, 16), (70, 16), (33, 40)] {
            let spd = super::super::Spd::new(n, 11);
            let t = Tiling::new(n, b).unwrap();
            let mut tiles = spd.tiles(&t);
            factor_tiles(&t, &mut tiles).unwrap();
            let mut want = spd.dense();
            reference(&mut want, n).unwrap();
            let got = t.lower_dense(&tiles);
            let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let err = got.iter().zip(&want).fold(0.0f64, |m, (g, w)| m.max((g - w).abs()));
            assert!(err <= 1e-13 * scale, "n {n} b {b}: {err}");
        }
    }
}
