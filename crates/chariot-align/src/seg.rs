//! SEG low-complexity masking (Wootton & Federhen 1993, 1996) as BLAST+ applies it to
//! protein sequences (`blast_seg.c`): a window of `window` residues slides along the
//! sequence; where its compositional complexity (Shannon entropy of its residue counts,
//! in bits) is at most `locut`, the region is extended both ways while windows stay at
//! most `hicut`, then trimmed to the sub-segment of least probability (P₀ of equation 3
//! of the 1996 paper, at most 50 residues trimmed), and masked with X. Only the 20 true
//! amino acids count; a window with more than 2 others (X, B, Z, `*`) is never a trigger.
//!
//! blastp's `-seg yes` masks the query with window 12, locut 2.2, hicut 2.5
//! ([`Params::QUERY`]); its composition-based statistics mask each subject with window
//! 10, locut 1.8, hicut 2.1 ([`Params::SUBJECT`]) before rescoring it.

use crate::matrix::Matrix;

/// The 20 amino acids SEG counts; every other letter is "bogus".
const AMINO: &[u8; 20] = b"ACDEFGHIKLMNPQRSTVWY";
const ALPHABET: usize = 20;
/// ln 20, as `blast_seg.c` writes it.
const LN20: f64 = 2.995_732_273_553_991;
/// Most residues `trim` takes off a segment (`maxtrim`).
const MAX_TRIM: usize = 50;
/// Most bogus letters in a trigger window (`maxbogus`).
const MAX_BOGUS: usize = 2;

/// SEG's window and cut-offs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Window length.
    pub window: usize,
    /// Trigger complexity (bits): a window at or below it starts a segment.
    pub locut: f64,
    /// Extension complexity (bits): a segment grows over windows at or below it.
    pub hicut: f64,
}

impl Params {
    /// blastp's `-seg yes` (and `segmasker`'s defaults): 12, 2.2, 2.5.
    pub const QUERY: Params = Params { window: 12, locut: 2.2, hicut: 2.5 };
    /// What blastp's composition-based statistics mask subjects with: 10, 1.8, 2.1.
    pub const SUBJECT: Params = Params { window: 10, locut: 1.8, hicut: 2.1 };
}

/// ln(n!) as `blast_seg.c`'s table holds it (6 decimals, up to 10,000; Stirling above).
fn lnfact(n: usize) -> f64 {
    if n <= 10_000 {
        let exact: f64 = (2..=n).map(|k| (k as f64).ln()).sum();
        (exact * 1e6).round() / 1e6
    } else {
        let n = n as f64;
        (n + 0.5) * n.ln() - n + 0.918_938_533_2
    }
}

/// A window's residue counts, its bogus letters, and its state vector (the nonzero
/// counts, largest first).
struct Window {
    counts: [usize; ALPHABET],
    bogus: usize,
}

impl Window {
    fn new(seq: &[Option<u8>]) -> Window {
        let mut w = Window { counts: [0; ALPHABET], bogus: 0 };
        for &r in seq {
            w.add(r);
        }
        w
    }

    fn add(&mut self, r: Option<u8>) {
        match r {
            Some(i) => self.counts[i as usize] += 1,
            None => self.bogus += 1,
        }
    }

    fn remove(&mut self, r: Option<u8>) {
        match r {
            Some(i) => self.counts[i as usize] -= 1,
            None => self.bogus -= 1,
        }
    }

    /// The state vector: nonzero counts, largest first.
    fn state(&self) -> Vec<usize> {
        let mut s: Vec<usize> = self.counts.iter().copied().filter(|&c| c > 0).collect();
        s.sort_unstable_by(|a, b| b.cmp(a));
        s
    }

    /// Entropy in bits of the counts (`s_Entropy`).
    fn entropy(&self) -> f64 {
        let sv = self.state();
        let total: usize = sv.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let ent: f64 = sv.iter().map(|&c| c as f64 * (c as f64 / total as f64).ln() / std::f64::consts::LN_2).sum();
        (ent / total as f64).abs()
    }
}

/// ln of the number of compositions with this state vector's complexity (`s_LnAss`).
fn ln_ass(sv: &[usize]) -> f64 {
    let mut ans = lnfact(ALPHABET);
    if sv.is_empty() {
        return ans;
    }
    // Classes of equal counts, then the letters that do not occur.
    let mut total = ALPHABET;
    let mut i = 0;
    while i < sv.len() {
        let mut j = i;
        while j < sv.len() && sv[j] == sv[i] {
            j += 1;
        }
        ans -= lnfact(j - i);
        total -= j - i;
        i = j;
    }
    if sv.len() < ALPHABET {
        ans -= lnfact(total);
    }
    ans
}

/// ln P₀ of a window of `total` residues with state vector `sv` (`s_GetProb`).
fn ln_prob(sv: &[usize], total: usize) -> f64 {
    let perm = lnfact(total) - sv.iter().map(|&c| lnfact(c)).sum::<f64>();
    ln_ass(sv) + perm - total as f64 * LN20
}

/// The complexity of each window position (`s_SeqEntropy`): entropy of the window
/// centred there, or `None` where there is none or it holds too many bogus letters.
fn entropies(seq: &[Option<u8>], window: usize) -> Option<Vec<Option<f64>>> {
    if window > seq.len() {
        return None;
    }
    let down = window.div_ceil(2) - 1;
    let up = window - down;
    let mut h = vec![None; seq.len()];
    let mut w = Window::new(&seq[..window]);
    let last = seq.len() - up;
    for (start, hi) in h[down..=last].iter_mut().enumerate() {
        if w.bogus <= MAX_BOGUS {
            *hi = Some(w.entropy());
        }
        if start + window < seq.len() {
            w.remove(seq[start]);
            w.add(seq[start + window]);
        }
    }
    Some(h)
}

/// The sub-segment of `seq` of least probability, as (left, right) offsets into it,
/// trimming at most [`MAX_TRIM`] residues (`s_Trim`).
fn trim(seq: &[Option<u8>]) -> (usize, usize) {
    let n = seq.len();
    let (mut lend, mut rend) = (0, n - 1);
    let minlen = if n > MAX_TRIM + 1 { n - MAX_TRIM } else { 1 };
    let mut minprob = 1.0;
    for len in (minlen + 1..=n).rev() {
        let mut w = Window::new(&seq[..len]);
        let mut i = 0;
        loop {
            let p = ln_prob(&w.state(), len);
            if p < minprob {
                minprob = p;
                (lend, rend) = (i, len + i - 1);
            }
            if i + len >= n {
                break;
            }
            w.remove(seq[i]);
            w.add(seq[i + len]);
            i += 1;
        }
    }
    (lend, rend)
}

/// The low-complexity segments of `seq` (inclusive offsets, plus `offset`), found
/// recursively as `s_SegSeq` does.
fn segments(seq: &[Option<u8>], p: Params, offset: usize, out: &mut Vec<(usize, usize)>) {
    if p.window == 0 {
        return;
    }
    let Some(h) = entropies(seq, p.window) else { return };
    let down = p.window.div_ceil(2) - 1;
    let up = p.window - down;
    let (first, last) = (down, seq.len() - up);
    let low_ok = |j: usize| h[j].is_some_and(|v| v <= p.hicut);
    let mut lowlim = first;
    let mut i = first;
    while i <= last {
        if h[i].is_some_and(|v| v <= p.locut) {
            // Extend while windows stay at or below hicut.
            let mut loi = i;
            while loi > lowlim && low_ok(loi - 1) {
                loi -= 1;
            }
            let mut hii = i;
            while hii < last && low_ok(hii + 1) {
                hii += 1;
            }
            let (mut left, mut right) = (loi - down, hii + up - 1);
            let (l, r) = trim(&seq[left..=right]);
            let len = right - left + 1;
            left += l;
            right -= len - r - 1;
            // A trigger window left of the trimmed segment is searched on its own.
            if i + up - 1 < left {
                let lend = loi - down;
                segments(&seq[lend..left], p, offset + lend, out);
            }
            out.push((left + offset, right + offset));
            i = hii.min(right + down);
            lowlim = i + 1;
        }
        i += 1;
    }
}

/// The segments SEG masks in `codes` (the matrix's codes), as inclusive 0-based ranges.
pub fn mask_ranges(codes: &[u8], matrix: &Matrix, p: Params) -> Vec<(usize, usize)> {
    let index: Vec<Option<u8>> = matrix
        .letters
        .iter()
        .map(|l| AMINO.iter().position(|a| a == &l.to_ascii_uppercase()).map(|i| i as u8))
        .collect();
    let seq: Vec<Option<u8>> = codes.iter().map(|&c| index.get(c as usize).copied().flatten()).collect();
    let mut out = Vec::new();
    segments(&seq, p, 0, &mut out);
    out.sort_unstable();
    out
}

/// `codes` with SEG's segments replaced by X.
///
/// # Errors
/// A matrix without X.
pub fn mask(codes: &[u8], matrix: &Matrix, p: Params) -> Result<Vec<u8>, String> {
    let x = matrix
        .letters
        .iter()
        .position(|&l| l.eq_ignore_ascii_case(&b'X'))
        .ok_or_else(|| format!("SEG masks with X, which the matrix {} lacks", matrix.name))?;
    let mut out = codes.to_vec();
    for (a, b) in mask_ranges(codes, matrix, p) {
        out[a..=b].fill(x as u8);
    }
    Ok(out)
}

/// `matrix` with X scored as BLAST+'s BLOSUM62 scores it: −1 against every letter
/// (`*` keeps its score). The built-in BLOSUM62 has the older matblas X row (0 against
/// A, S and T, −2 against C, P and W); with SEG's X in the sequences, blastp's scores
/// need BLAST+'s.
pub fn blast_x(matrix: &Matrix) -> Matrix {
    let mut m = matrix.clone();
    let n = m.letters.len();
    if let Some(x) = m.letters.iter().position(|&l| l.eq_ignore_ascii_case(&b'X')) {
        for c in 0..n {
            if m.letters[c] != b'*' {
                m.scores[x][c] = -1;
                m.scores[c][x] = -1;
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lnfact_is_the_table() {
        assert_eq!(lnfact(0), 0.0);
        assert_eq!(lnfact(3), 1.791759);
        assert_eq!(lnfact(12), 19.987214);
        assert_eq!(lnfact(20), 42.335616);
    }

    /// A run of one residue is masked, and a stretch of few letters; varied sequence is not.
    #[test]
    fn a_low_complexity_run_is_masked() {
        let m = Matrix::blosum62();
        let plain = b"MKVLAAGIVGLLLAWHQKRDECCWWCCPHKRDEMKVACDEFGHIKLMNPQRSTVWY";
        let mut s = plain.to_vec();
        s.splice(20..20, b"QQQQQQQQQQQQQQQQQQQQ".iter().copied());
        let r = mask_ranges(&m.encode(&s).unwrap(), &m, Params::QUERY);
        // As segmasker 2.12 finds them: VLAAGIVGLLLA and the run of Q.
        assert_eq!(r, [(2, 13), (20, 39)]);
        assert!(mask_ranges(&m.encode(b"ACDEFGHIKLMNPQRSTVWYACDEFGHIKLMNPQ").unwrap(), &m, Params::QUERY).is_empty());
        assert!(mask_ranges(&m.encode(b"QQQQ").unwrap(), &m, Params::QUERY).is_empty(), "shorter than the window");
    }
}
