//! A generator of protein databases with the paper's shape (§6.3: about 536,000
//! sequences, lengths 2 to 35,213, mean about 755): log-normal lengths clamped to
//! [min, max], one sequence of each extreme length, residues drawn with the amino-acid
//! background frequencies of Robinson & Robinson (1991), lines of 60 residues.

use rand::{Rng, SeedableRng};
use std::io::Write;
use std::path::Path;

/// Background frequencies (per cent) of the 20 amino acids.
const FREQ: [(u8, f64); 20] = [
    (b'A', 7.805),
    (b'R', 5.129),
    (b'N', 4.487),
    (b'D', 5.364),
    (b'C', 1.925),
    (b'Q', 4.264),
    (b'E', 6.295),
    (b'G', 7.377),
    (b'H', 2.199),
    (b'I', 5.142),
    (b'L', 9.019),
    (b'K', 5.744),
    (b'M', 2.243),
    (b'F', 3.856),
    (b'P', 5.203),
    (b'S', 7.120),
    (b'T', 5.841),
    (b'W', 1.330),
    (b'Y', 3.216),
    (b'V', 6.441),
];

/// Shape of a generated database.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Sequences.
    pub sequences: u64,
    /// Target mean length.
    pub mean: f64,
    /// σ of ln(length).
    pub sigma: f64,
    /// Shortest.
    pub min: u64,
    /// Longest.
    pub max: u64,
    /// Seed.
    pub seed: u64,
    /// Sequences in order of length, shortest first.
    pub sorted: bool,
}

/// A residue sampler: a 4096-entry table in the background frequencies.
pub struct Residues {
    table: Vec<u8>,
}

impl Default for Residues {
    fn default() -> Self {
        Self::new()
    }
}

impl Residues {
    /// The table.
    pub fn new() -> Self {
        let total: f64 = FREQ.iter().map(|f| f.1).sum();
        let mut table = Vec::with_capacity(4096);
        let mut acc = 0.0;
        for &(l, f) in &FREQ {
            acc += f / total * 4096.0;
            while (table.len() as f64) < acc.round() && table.len() < 4096 {
                table.push(l);
            }
        }
        while table.len() < 4096 {
            table.push(b'L');
        }
        Residues { table }
    }

    /// `n` random residues appended to `out`.
    pub fn fill(&self, rng: &mut impl Rng, n: usize, out: &mut Vec<u8>) {
        let mut left = n;
        while left > 0 {
            let mut x: u64 = rng.random();
            for _ in 0..5.min(left) {
                out.push(self.table[(x & 4095) as usize]);
                x >>= 12;
                left -= 1;
            }
        }
    }
}

fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(1e-300);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Writes `text` as FASTA lines of 60.
fn write_record(w: &mut impl Write, id: &str, seq: &[u8]) -> std::io::Result<()> {
    writeln!(w, ">{id}")?;
    for line in seq.chunks(60) {
        w.write_all(line)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes a database of `shape` to `path` (see [`crate::output`]); returns (sequences, residues, longest).
pub fn database(path: &Path, shape: Shape) -> Result<(u64, u64, u64), String> {
    if shape.min > shape.max || shape.mean <= 0.0 || shape.sigma < 0.0 {
        return Err("bad shape: need min ≤ max, mean > 0, sigma ≥ 0".into());
    }
    let mut w = crate::output::Output::create("--out", path)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(shape.seed);
    let res = Residues::new();
    let mu = shape.mean.ln() - shape.sigma * shape.sigma / 2.0;
    let mut lens: Vec<u64> = (0..shape.sequences)
        .map(|i| {
            if i == shape.sequences / 2 && shape.sequences > 1 {
                shape.max
            } else if i == shape.sequences / 3 && shape.sequences > 2 {
                shape.min
            } else {
                ((mu + shape.sigma * normal(&mut rng)).exp().round() as u64).clamp(shape.min, shape.max)
            }
        })
        .collect();
    if shape.sorted {
        lens.sort_unstable();
    }
    let (mut total, mut longest) = (0u64, 0u64);
    let mut seq = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        seq.clear();
        res.fill(&mut rng, len as usize, &mut seq);
        write_record(&mut w, &format!("db{i:07} generated length={len}"), &seq).map_err(|e| e.to_string())?;
        total += len;
        longest = longest.max(len);
    }
    w.commit()?;
    Ok((shape.sequences, total, longest))
}

/// Writes one random query per length to `path`, named `q<length>`, and `q<length>.<k>`
/// for the k-th query of a length already named (so that every id is unique).
pub fn queries(path: &Path, lengths: &[usize], seed: u64) -> Result<(), String> {
    let mut w = crate::output::Output::create("--queries-out", path)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5157_4152);
    let res = Residues::new();
    let mut seen: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for &l in lengths {
        let mut seq = Vec::new();
        res.fill(&mut rng, l, &mut seq);
        let k = seen.entry(l).or_insert(0);
        *k += 1;
        let id = if *k == 1 { format!("q{l}") } else { format!("q{l}.{k}") };
        write_record(&mut w, &id, &seq).map_err(|e| e.to_string())?;
    }
    w.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_ids_are_unique() {
        let dir = std::env::temp_dir().join(format!("chariot-align-genq-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("q.fa");
        queries(&p, &[63, 5, 63, 63, 7], 1).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let ids: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix('>')).collect();
        assert_eq!(ids, ["q63", "q5", "q63.2", "q63.3", "q7"]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn shape_is_respected() {
        let dir = std::env::temp_dir().join(format!("chariot-align-gen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("g.fa");
        let shape = Shape { sequences: 3000, mean: 755.0, sigma: 0.7, min: 2, max: 35213, seed: 1, sorted: false };
        let (n, total, longest) = database(&p, shape).unwrap();
        assert_eq!((n, longest), (3000, 35213));
        let mean = total as f64 / n as f64;
        assert!((650.0..900.0).contains(&mean), "mean {mean}");
        let m = crate::matrix::Matrix::blosum62();
        let idx = crate::db::DbIndex::build(&p, &m, 8192).unwrap();
        assert_eq!((idx.sequences, idx.residues), (n, total));
        std::fs::remove_dir_all(&dir).ok();
    }
}
