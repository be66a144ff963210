//! Karlin–Altschul statistics as BLAST computes them for gapped protein alignments:
//! bit scores, E-values, and BLAST's length adjustment (the "effective lengths").
//!
//! Parameters (λ, K, H, α, β) are NCBI's for BLOSUM62 from `blast_stat.c`'s
//! `blosum62_values` table, every gap cost it lists (11 of them, 11/1 BLAST's default).
//! Gap costs follow BLAST's convention, which is chariot-align's: a gap of length k
//! costs `existence + k·extension` (`--gap-open` is BLAST's `-gapopen`, `--gap-extend`
//! its `-gapextend`), so no conversion is needed.
//!
//! - bit score S' = (λS − ln K) / ln 2;
//! - the E-value BLAST+ prints ([`Params::evalue`]): Spouge's finite-size correction,
//!   as `BLAST_SpougeStoE` (BLAST+'s default unless the environment sets `OLD_FSC`),
//!   from the query's length m, the subject's length n and the database's residues
//!   D: E = K·area(S, m, n)·e^(−λS)·D/n, with `area` the expected area of the
//!   alignment-start region corrected for edge effects by the table's Gumbel columns
//!   (λ, C, α, σ of `blast_stat.c`; a, b, β, τ derived from them as BLAST does);
//! - the classic E-value ([`Params::evalue_classic`], as BLAST's `OLD_FSC` mode and
//!   BLAST before 2.2.26): E = K·m'·n'·e^(−λS) with m' = m − ℓ and n' = D − N·ℓ (at
//!   least 1), N the database's sequences, and ℓ the length adjustment of
//!   `BLAST_ComputeLengthAdjustment`: the largest integer ℓ with
//!   ℓ ≤ (α/λ)·ln(K·(m − ℓ)(D − N·ℓ)) + β, found by the same bounded iteration. BLAST+
//!   still uses these effective lengths for its search space (cut-offs), not for the
//!   E-values it prints.
//!
//! Composition-based statistics (`--comp-based-stats 1`) are [`crate::compo`]'s.

use crate::matrix::Matrix;
use crate::sw::Gaps;

/// Gapped Karlin–Altschul parameters of one matrix and gap cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// λ.
    pub lambda: f64,
    /// K.
    pub k: f64,
    /// H, relative entropy (nats per aligned pair).
    pub h: f64,
    /// α (edge-effect slope).
    pub alpha: f64,
    /// β (edge-effect intercept).
    pub beta: f64,
    /// The Gumbel block of Spouge's correction: (a, b, α, β, σ, τ) as BLAST derives them.
    pub gumbel: [f64; 6],
}

/// A row of `blast_stat.c`'s `blosum62_values`: gap existence, extension, λ, K, H, α,
/// β, then the Gumbel columns C, α (Spouge's), σ.
type Row = (i32, i32, f64, f64, f64, f64, f64, [f64; 3]);

/// The table's first row: the ungapped values, whose α and Gumbel α BLAST's correction uses.
const UNGAPPED: Row = (0, 0, 0.3176, 0.134, 0.4012, 0.7916, -3.2, [0.623757, 4.964660, 4.964660]);

/// `blast_stat.c`'s `blosum62_values`, gapped rows.
const BLOSUM62: [Row; 11] = [
    (11, 2, 0.297, 0.082, 0.27, 1.1, -10.0, [0.641766, 12.673800, 12.757600]),
    (10, 2, 0.291, 0.075, 0.23, 1.3, -15.0, [0.649362, 16.474000, 16.602600]),
    (9, 2, 0.279, 0.058, 0.19, 1.5, -19.0, [0.659245, 22.751900, 22.950000]),
    (8, 2, 0.264, 0.045, 0.15, 1.8, -26.0, [0.672692, 35.483800, 35.821300]),
    (7, 2, 0.239, 0.027, 0.10, 2.5, -46.0, [0.702056, 61.238300, 61.886000]),
    (6, 2, 0.201, 0.012, 0.061, 3.3, -58.0, [0.740802, 140.417000, 141.882000]),
    (13, 1, 0.292, 0.071, 0.23, 1.2, -11.0, [0.647715, 19.506300, 19.893100]),
    (12, 1, 0.283, 0.059, 0.19, 1.5, -19.0, [0.656391, 27.856200, 28.469900]),
    (11, 1, 0.267, 0.041, 0.14, 1.9, -30.0, [0.669720, 42.602800, 43.636200]),
    (10, 1, 0.243, 0.024, 0.10, 2.5, -44.0, [0.693267, 83.178700, 85.065600]),
    (9, 1, 0.206, 0.010, 0.052, 4.0, -87.0, [0.731887, 210.333000, 214.842000]),
];

/// The gap costs supported, as `open/extend` text for messages.
pub fn supported() -> String {
    BLOSUM62.iter().map(|r| format!("{}/{}", r.0, r.1)).collect::<Vec<_>>().join(", ")
}

/// The parameters of `matrix` with `gaps`.
///
/// # Errors
/// A matrix other than BLOSUM62 (by its scores, whatever its name) or gap costs not in
/// the table: the message names what is supported.
pub fn params(matrix: &Matrix, gaps: Gaps) -> Result<Params, String> {
    let b = Matrix::blosum62();
    let n = b.letters.len();
    // X's scores do not enter the statistics (nor do they agree between BLOSUM62 files:
    // BLAST+'s scores X −1 against everything, see `seg::blast_x`); the rest must be BLOSUM62's.
    let x = b.letters.iter().position(|&l| l == b'X');
    let same = matrix.letters == b.letters
        && (0..n).all(|a| (0..n).all(|c| Some(a) == x || Some(c) == x || matrix.scores[a][c] == b.scores[a][c]));
    if !same {
        return Err(format!(
            "BLAST statistics (E-values, bit scores) are known for BLOSUM62 only, not for the matrix {}; \
             tabular output needs BLOSUM62 with gap costs (open/extend) {}",
            matrix.name,
            supported()
        ));
    }
    let row = BLOSUM62.iter().find(|r| r.0 == gaps.open && r.1 == gaps.extend).ok_or_else(|| {
        format!(
            "BLAST statistics are not known for BLOSUM62 with gap costs {}/{} (--gap-open/--gap-extend); \
             tabular output supports {}",
            gaps.open,
            gaps.extend,
            supported()
        )
    })?;
    // BLAST's Gumbel block: G = open + extend, a = α, b = 2G(a_un − a), Alpha and
    // Sigma from the table, Beta = 2G(Alpha_un − Alpha), Tau = 2G(Alpha_un − Sigma).
    let g = (gaps.open + gaps.extend) as f64;
    let (a, alpha, sigma) = (row.5, row.7[1], row.7[2]);
    let (a_un, alpha_un) = (UNGAPPED.5, UNGAPPED.7[1]);
    let gumbel = [a, 2.0 * g * (a_un - a), alpha, 2.0 * g * (alpha_un - alpha), sigma, 2.0 * g * (alpha_un - sigma)];
    Ok(Params { lambda: row.2, k: row.3, h: row.4, alpha: row.5, beta: row.6, gumbel })
}

impl Params {
    /// Bit score of raw score `s`.
    pub fn bits(&self, s: i32) -> f64 {
        (self.lambda * s as f64 - self.k.ln()) / std::f64::consts::LN_2
    }

    /// BLAST's length adjustment ℓ for a query of `m` residues against a database of
    /// `n` residues in `seqs` sequences (`BLAST_ComputeLengthAdjustment`).
    pub fn length_adjustment(&self, m: u64, n: u64, seqs: u64) -> u64 {
        let (m, n, big_n) = (m as f64, n as f64, seqs as f64);
        let (log_k, a_l, beta) = (self.k.ln(), self.alpha / self.lambda, self.beta);
        // The largest ℓ ≥ 0 with K·(m − ℓ)·(n − N·ℓ) ≥ max(m, n).
        let c = n * m - m.max(n) / self.k;
        if c < 0.0 {
            return 0;
        }
        let mb = m * big_n + n;
        let mut ell_max = 2.0 * c / (mb + (mb * mb - 4.0 * big_n * c).sqrt());
        let (mut ell_min, mut ell_next, mut converged) = (0.0f64, 0.0f64, false);
        for i in 1..=20 {
            let ell = ell_next;
            let ss = (m - ell) * (n - big_n * ell);
            let ell_bar = a_l * (log_k + ss.ln()) + beta;
            if ell_bar >= ell {
                ell_min = ell;
                if ell_bar - ell_min <= 1.0 {
                    converged = true;
                    break;
                }
                if ell_min == ell_max {
                    break;
                }
            } else {
                ell_max = ell;
            }
            ell_next = if ell_min <= ell_bar && ell_bar <= ell_max {
                ell_bar
            } else if i == 1 {
                ell_max
            } else {
                (ell_min + ell_max) / 2.0
            };
        }
        let mut adj = ell_min as u64;
        if converged {
            let ell = ell_min.ceil();
            if ell <= ell_max {
                let ss = (m - ell) * (n - big_n * ell);
                if a_l * (log_k + ss.ln()) + beta >= ell {
                    adj = ell as u64;
                }
            }
        }
        adj
    }

    /// The effective search space m'·n' of a query of `m` residues against a database
    /// of `n` residues in `seqs` sequences.
    pub fn search_space(&self, m: u64, n: u64, seqs: u64) -> f64 {
        let ell = self.length_adjustment(m, n, seqs);
        let n_eff = (n as f64 - seqs as f64 * ell as f64).max(1.0);
        let m_eff = (m as f64 - ell as f64).max(1.0);
        m_eff * n_eff
    }

    /// The classic E-value of raw score `s` in search space `space` ([`Params::search_space`]).
    pub fn evalue_classic(&self, s: i32, space: f64) -> f64 {
        space * self.k * (-self.lambda * s as f64).exp()
    }

    /// The E-value BLAST+ prints for raw score `s` of a query of `m` residues against a
    /// subject of `n`, in a database of `db` residues (`BLAST_SpougeStoE`).
    pub fn evalue(&self, s: i32, m: u64, n: u64, db: u64) -> f64 {
        self.evalue_scaled(s as f64, m, n, db)
    }

    /// [`Params::evalue`] of a score with a fraction: a score of a matrix at a finer
    /// scale divided by that scale (composition-based statistics' scores at 1/32), as
    /// `BLAST_SpougeStoE` with λ and the Gumbel block scaled alike.
    pub fn evalue_scaled(&self, s: f64, m: u64, n: u64, db: u64) -> f64 {
        let [a, b, alpha, beta, sigma, tau] = self.gumbel;
        let (y, lambda) = (s, self.lambda);
        let inv_sqrt_2pi = 0.398_942_280_401_432_7;
        // The same factor for the query and the subject (BLAST's symmetric case).
        let side = |len: f64| {
            let l_y = len - (a * y + b);
            let v = (2.0 * alpha / lambda).max(alpha * y + beta);
            let sd = v.sqrt();
            let f = l_y / sd;
            let p = erfc(-f / std::f64::consts::SQRT_2) / 2.0;
            (l_y * p + sd * inv_sqrt_2pi * (-0.5 * f * f).exp(), p)
        };
        let n = n.max(1) as f64;
        let (p1, pm) = side(m as f64);
        let (p2, pn) = side(n);
        let c_y = (2.0 * sigma / lambda).max(sigma * y + tau);
        let area = p1 * p2 + c_y * pm * pn;
        area * self.k * (-lambda * y).exp() * (db as f64 / n)
    }
}

/// The complementary error function, to a relative 1.2e-7 (a Chebyshev fit,
/// Numerical Recipes' `erfcc`), far below the precision E-values are printed with.
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let c = [
        -1.265_512_23,
        1.000_023_68,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_203_98,
        1.488_515_87,
        -0.822_152_23,
        0.170_872_77,
    ];
    let poly = c.iter().rev().fold(0.0, |acc, &k| acc * t + k);
    let r = t * (-z * z + poly).exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// An E-value as BLAST's tabular output prints it: BLAST+'s `GetScoreString` bands
/// (`0.0` below 1e-180, then `%.3f`, `%.2f`, `%.1f`, `%.0f` from 0.0009, 0.1, 1 and 10),
/// with the tabular writer's own rule for [1e-180, 0.0009) (its `SetScores`:
/// `NStr::DoubleToString(evalue, 2, fDoubleScientific)`, C's `%.2e`): so `1.18e-132`,
/// where the pairwise report's `%2.0le` would print `1e-132`.
pub fn format_evalue(e: f64) -> String {
    if e < 1.0e-180 {
        "0.0".into()
    } else if e < 0.0009 {
        c_exp(e, 2)
    } else if e < 0.1 {
        format!("{e:.3}")
    } else if e < 1.0 {
        format!("{e:.2}")
    } else if e < 10.0 {
        format!("{e:.1}")
    } else {
        format!("{e:.0}")
    }
}

/// A bit score as BLAST's tabular output prints it (above 99.9: the integer part).
pub fn format_bits(b: f64) -> String {
    if b > 99999.0 {
        c_exp(b, 3)
    } else if b > 99.9 {
        format!("{}", b as i64)
    } else {
        format!("{b:.1}")
    }
}

/// C's `%.{prec}e`: mantissa, `e`, sign and at least two exponent digits.
fn c_exp(x: f64, prec: usize) -> String {
    let s = format!("{x:.prec$e}");
    // Finite numbers always format as `MANTISSAeEXP`; NaN and infinities as they are.
    match s.split_once('e').and_then(|(mant, exp)| Some((mant, exp.parse::<i32>().ok()?))) {
        Some((mant, exp)) => format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_blast_prints() {
        assert_eq!(format_evalue(8.0912e-40), "8.09e-40");
        assert_eq!(format_evalue(3.4e-120), "3.40e-120");
        assert_eq!(format_evalue(1.18e-132), "1.18e-132", "blastp 2.12's tabular output");
        assert_eq!(format_evalue(1.0e-180), "1.00e-180");
        assert_eq!(format_evalue(9.99e-181), "0.0");
        assert_eq!(format_evalue(2.5e-100), "2.50e-100");
        assert_eq!(format_evalue(9.9e-100), "9.90e-100");
        assert_eq!(format_evalue(0.00089), "8.90e-04");
        assert_eq!(format_evalue(0.0009), "0.001");
        assert_eq!(format_evalue(1e-200), "0.0");
        assert_eq!(format_evalue(0.0123), "0.012");
        assert_eq!(format_evalue(0.934), "0.93");
        assert_eq!(format_evalue(2.14), "2.1");
        assert_eq!(format_evalue(12.6), "13");
        assert_eq!(format_bits(121.71), "121");
        assert_eq!(format_bits(73.24), "73.2");
        assert_eq!(c_exp(5e3, 1), "5.0e+03");
    }

    #[test]
    fn only_blosum62_with_tabled_gaps() {
        let m = Matrix::blosum62();
        let p = params(&m, Gaps { open: 11, extend: 1 }).unwrap();
        assert_eq!((p.lambda, p.k), (0.267, 0.041));
        assert!((p.bits(304) - 121.71).abs() < 0.01);
        let e = params(&m, Gaps { open: 5, extend: 1 }).unwrap_err();
        assert!(e.contains("5/1") && e.contains("11/1"), "{e}");
        let other = Matrix::parse("ar.mat", "A R\nA 1 -1\nR -1 1\n").unwrap();
        let e = params(&other, Gaps { open: 11, extend: 1 }).unwrap_err();
        assert!(e.contains("BLOSUM62 only") && e.contains("ar.mat"), "{e}");
    }

    #[test]
    fn length_adjustment_is_a_fixed_point() {
        let p = params(&Matrix::blosum62(), Gaps { open: 11, extend: 1 }).unwrap();
        for (m, n, seqs) in [(110u64, 15_000u64, 140u64), (500, 405_000_000, 536_029), (63, 1_000_000, 5_000)] {
            let ell = p.length_adjustment(m, n, seqs) as f64;
            let f = |l: f64| {
                p.alpha / p.lambda * (p.k.ln() + ((m as f64 - l) * (n as f64 - seqs as f64 * l)).ln()) + p.beta
            };
            // ℓ is the fixed point's floor, or the bound where K·(m − ℓ)(n − N·ℓ) reaches max(m, n).
            let bound = |l: f64| p.k * (m as f64 - l) * (n as f64 - seqs as f64 * l) < m.max(n) as f64;
            assert!(ell <= f(ell) && (ell + 1.0 > f(ell + 1.0) || bound(ell + 1.0)), "{m} {n} {seqs}: {ell}");
        }
        assert_eq!(p.length_adjustment(1, 1, 1), 0);
    }

    #[test]
    fn erfc_known_values() {
        for (x, want) in
            [(0.0, 1.0), (0.5, 0.479_500_122), (1.0, 0.157_299_207), (-1.0, 1.842_700_793), (3.0, 2.209_049_7e-5)]
        {
            assert!((erfc(x) - want).abs() <= 2e-7 * want, "erfc({x}) = {}", erfc(x));
        }
    }
}
