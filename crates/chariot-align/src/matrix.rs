//! Substitution matrices in the NCBI text format (BLOSUM62 built in) and the residue
//! alphabet they define.
//!
//! Residues are coded by their position in the matrix's header line (at most 32 letters).
//! Letters are case-insensitive. Documented handling of letters the matrix lacks: an
//! ASCII letter not in the header (U selenocysteine, O pyrrolysine, J, …) is scored as
//! `X` when the matrix has an `X` column; anything else (digits, `-`, `.`, other
//! punctuation) is an error, never a silent score.

use std::fmt;

/// Most letters a matrix may have (codes fit the kernel's 32-row profile).
pub const MAX_LETTERS: usize = 32;
/// Code of a byte that is no residue.
pub const INVALID: u8 = 0xFF;
/// Code of a byte to skip inside sequence lines (blanks, `\r`).
pub const SKIP: u8 = 0xFE;

/// NCBI's BLOSUM62 (`#  Matrix made by matblas from blosum62.iij`).
pub const BLOSUM62: &str = "\
#  Matrix made by matblas from blosum62.iij
#  * column uses minimum score
#  BLOSUM Clustered Scoring Matrix in 1/2 Bit Units
#  Blocks Database = /data/blocks_5.0/blocks.dat
#  Cluster Percentage: >= 62
#  Entropy =   0.6979, Expected =  -0.5209
   A  R  N  D  C  Q  E  G  H  I  L  K  M  F  P  S  T  W  Y  V  B  Z  X  *
A  4 -1 -2 -2  0 -1 -1  0 -2 -1 -1 -1 -1 -2 -1  1  0 -3 -2  0 -2 -1  0 -4
R -1  5  0 -2 -3  1  0 -2  0 -3 -2  2 -1 -3 -2 -1 -1 -3 -2 -3 -1  0 -1 -4
N -2  0  6  1 -3  0  0  0  1 -3 -3  0 -2 -3 -2  1  0 -4 -2 -3  3  0 -1 -4
D -2 -2  1  6 -3  0  2 -1 -1 -3 -4 -1 -3 -3 -1  0 -1 -4 -3 -3  4  1 -1 -4
C  0 -3 -3 -3  9 -3 -4 -3 -3 -1 -1 -3 -1 -2 -3 -1 -1 -2 -2 -1 -3 -3 -2 -4
Q -1  1  0  0 -3  5  2 -2  0 -3 -2  1  0 -3 -1  0 -1 -2 -1 -2  0  3 -1 -4
E -1  0  0  2 -4  2  5 -2  0 -3 -3  1 -2 -3 -1  0 -1 -3 -2 -2  1  4 -1 -4
G  0 -2  0 -1 -3 -2 -2  6 -2 -4 -4 -2 -3 -3 -2  0 -2 -2 -3 -3 -1 -2 -1 -4
H -2  0  1 -1 -3  0  0 -2  8 -3 -3 -1 -2 -1 -2 -1 -2 -2  2 -3  0  0 -1 -4
I -1 -3 -3 -3 -1 -3 -3 -4 -3  4  2 -3  1  0 -3 -2 -1 -3 -1  3 -3 -3 -1 -4
L -1 -2 -3 -4 -1 -2 -3 -4 -3  2  4 -2  2  0 -3 -2 -1 -2 -1  1 -4 -3 -1 -4
K -1  2  0 -1 -3  1  1 -2 -1 -3 -2  5 -1 -3 -1  0 -1 -3 -2 -2  0  1 -1 -4
M -1 -1 -2 -3 -1  0 -2 -3 -2  1  2 -1  5  0 -2 -1 -1 -1 -1  1 -3 -1 -1 -4
F -2 -3 -3 -3 -2 -3 -3 -3 -1  0  0 -3  0  6 -4 -2 -2  1  3 -1 -3 -3 -1 -4
P -1 -2 -2 -1 -3 -1 -1 -2 -2 -3 -3 -1 -2 -4  7 -1 -1 -4 -3 -2 -2 -1 -2 -4
S  1 -1  1  0 -1  0  0  0 -1 -2 -2  0 -1 -2 -1  4  1 -3 -2 -2  0  0  0 -4
T  0 -1  0 -1 -1 -1 -1 -2 -2 -1 -1 -1 -1 -2 -1  1  5 -2 -2  0 -1 -1  0 -4
W -3 -3 -4 -4 -2 -2 -3 -2 -2 -3 -2 -3 -1  1 -4 -3 -2 11  2 -3 -4 -3 -2 -4
Y -2 -2 -2 -3 -2 -1 -2 -3  2 -1 -1 -2 -1  3 -3 -2 -2  2  7 -1 -3 -2 -1 -4
V  0 -3 -3 -3 -1 -2 -2 -3 -3  3  1 -2  1 -1 -2 -2  0 -3 -1  4 -3 -2 -1 -4
B -2 -1  3  4 -3  0  1 -1  0 -3 -4  0 -3 -3 -2  0 -1 -4 -3 -3  4  1 -1 -4
Z -1  0  0  1 -3  3  4 -2  0 -3 -3  1 -1 -3 -1  0 -1 -3 -2 -2  1  4 -1 -4
X  0 -1 -1 -1 -2 -1 -1 -1 -1 -1 -1 -1 -1 -1 -2  0  0 -2 -1 -1 -1 -1 -1 -4
* -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4  1
";

/// A substitution matrix over its own alphabet.
#[derive(Clone)]
pub struct Matrix {
    /// Its name (file name or `BLOSUM62`).
    pub name: String,
    /// Letters in code order.
    pub letters: Vec<u8>,
    /// `scores[a][b]`: score of query letter code `a` against subject letter code `b`.
    pub scores: [[i8; MAX_LETTERS]; MAX_LETTERS],
    /// Byte → code, [`INVALID`] or [`SKIP`].
    pub code: [u8; 256],
}

impl fmt::Debug for Matrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Matrix({}, {})", self.name, String::from_utf8_lossy(&self.letters))
    }
}

impl Matrix {
    /// BLOSUM62.
    pub fn blosum62() -> Matrix {
        Matrix::parse("BLOSUM62", BLOSUM62).expect("built-in BLOSUM62 parses")
    }

    /// Loads a matrix file in the NCBI text format.
    pub fn load(path: &std::path::Path) -> Result<Matrix, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read matrix {}: {e}", path.display()))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Matrix::parse(&name, &text).map_err(|e| format!("matrix {}: {e}", path.display()))
    }

    /// Parses the NCBI text format: `#` comments, a header line of letters, then one
    /// line per letter: the letter and its scores (integers in −128..=127).
    pub fn parse(name: &str, text: &str) -> Result<Matrix, String> {
        let mut header: Option<Vec<u8>> = None;
        let mut rows: Vec<Option<Vec<i8>>> = Vec::new();
        for (no, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(h) = &header else {
                let mut letters = Vec::new();
                for w in &words {
                    let b = w.as_bytes();
                    if b.len() != 1 || !(b[0].is_ascii_alphabetic() || b[0] == b'*') {
                        return Err(format!("line {}: header entry `{w}` is not a single letter or `*`", no + 1));
                    }
                    let l = b[0].to_ascii_uppercase();
                    if letters.contains(&l) {
                        return Err(format!("line {}: letter `{}` appears twice in the header", no + 1, l as char));
                    }
                    letters.push(l);
                }
                if letters.is_empty() || letters.len() > MAX_LETTERS {
                    return Err(format!("{} letters in the header; 1 to {MAX_LETTERS} are supported", letters.len()));
                }
                rows = vec![None; letters.len()];
                header = Some(letters);
                continue;
            };
            let row_letter = words[0].as_bytes();
            if row_letter.len() != 1 {
                return Err(format!("line {}: row label `{}` is not a single letter", no + 1, words[0]));
            }
            let l = row_letter[0].to_ascii_uppercase();
            let Some(r) = h.iter().position(|&x| x == l) else {
                return Err(format!("line {}: row `{}` is not in the header", no + 1, l as char));
            };
            if words.len() != h.len() + 1 {
                return Err(format!(
                    "line {}: row `{}` has {} scores, expected {}",
                    no + 1,
                    l as char,
                    words.len() - 1,
                    h.len()
                ));
            }
            let mut v = Vec::with_capacity(h.len());
            for w in &words[1..] {
                let x: i32 = w.parse().map_err(|_| format!("line {}: `{w}` is not an integer", no + 1))?;
                let x = i8::try_from(x).map_err(|_| format!("line {}: score {x} is outside -128..=127", no + 1))?;
                v.push(x);
            }
            if rows[r].replace(v).is_some() {
                return Err(format!("line {}: row `{}` appears twice", no + 1, l as char));
            }
        }
        let letters = header.ok_or("no header line")?;
        let mut scores = [[0i8; MAX_LETTERS]; MAX_LETTERS];
        for (a, row) in rows.iter().enumerate() {
            let row = row.as_ref().ok_or_else(|| format!("row `{}` is missing", letters[a] as char))?;
            scores[a][..row.len()].copy_from_slice(row);
        }
        let mut code = [INVALID; 256];
        for (i, &l) in letters.iter().enumerate() {
            code[l as usize] = i as u8;
            code[l.to_ascii_lowercase() as usize] = i as u8;
        }
        if let Some(x) = letters.iter().position(|&l| l == b'X') {
            for l in b'A'..=b'Z' {
                if code[l as usize] == INVALID {
                    code[l as usize] = x as u8;
                    code[l.to_ascii_lowercase() as usize] = x as u8;
                }
            }
        }
        for b in [b' ', b'\t', b'\r'] {
            code[b as usize] = SKIP;
        }
        Ok(Matrix { name: name.to_string(), letters, scores, code })
    }

    /// Score of query code `a` against subject code `b`.
    pub fn score(&self, a: u8, b: u8) -> i32 {
        self.scores[a as usize][b as usize] as i32
    }

    /// Encodes a plain residue string (no FASTA: every byte a residue of the matrix, or
    /// a blank, skipped); a byte that is neither is an error naming it.
    pub fn encode(&self, s: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(s.len());
        for &b in s {
            match self.code[b as usize] {
                INVALID => return Err(format!("`{}` is not a residue of {}", b.escape_ascii(), self.name)),
                SKIP => {}
                c => out.push(c),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blosum62_is_symmetric_and_known() {
        let m = Matrix::blosum62();
        assert_eq!(m.letters.len(), 24);
        for a in 0..24u8 {
            for b in 0..24u8 {
                assert_eq!(m.score(a, b), m.score(b, a));
            }
        }
        let c = |l: u8| m.code[l as usize];
        assert_eq!(m.score(c(b'W'), c(b'W')), 11);
        assert_eq!(m.score(c(b'C'), c(b'C')), 9);
        assert_eq!(m.score(c(b'A'), c(b'R')), -1);
        assert_eq!(c(b'a'), c(b'A'));
        assert_eq!(c(b'U'), c(b'X'), "letters outside the matrix score as X");
        assert_eq!(c(b'-'), INVALID);
        assert_eq!(c(b'1'), INVALID);
    }

    #[test]
    fn bad_matrices_are_refused() {
        assert!(Matrix::parse("m", "").is_err());
        assert!(Matrix::parse("m", "A B\nA 1 2\n").unwrap_err().contains("missing"));
        assert!(Matrix::parse("m", "A B\nA 1\nB 1 2\n").unwrap_err().contains("1 scores"));
        assert!(Matrix::parse("m", "A B\nA 1 300\nB 1 2\n").unwrap_err().contains("outside"));
        assert!(Matrix::parse("m", "A B\nA 1 x\nB 1 2\n").unwrap_err().contains("integer"));
        let m = Matrix::parse("m", "# c\n A B\nA 1 -2\nB -2 3\n").unwrap();
        assert_eq!(m.score(1, 1), 3);
        assert_eq!(m.code[b'C' as usize], INVALID, "no X column: other letters are errors");
    }
}
