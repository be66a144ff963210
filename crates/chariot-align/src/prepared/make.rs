//! `makedb`: a FASTA database read, encoded, sorted longest first and written in the
//! prepared format (see the module above for the layout).

use super::*;
use crate::fasta::FastaReader;
use crate::matrix::Matrix;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// What `makedb` wrote.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The file's layout.
    pub layout: Layout,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Prepares the FASTA database `fasta` as `out` with the codes of `matrix`, showing
/// progress when asked. The file is written beside `out` and renamed at the end, so a
/// failed run leaves no partial database under that name.
///
/// # Errors
/// What [`DbIndex::build`](crate::db::DbIndex::build) refuses (unreadable or malformed FASTA, a bad residue, no
/// records), and an unwritable output.
pub fn make(fasta: &Path, out: &Path, matrix: &Matrix, progress: bool) -> Result<Summary, String> {
    let f = std::fs::File::open(fasta).map_err(|e| format!("cannot open database {}: {e}", fasta.display()))?;
    let bytes_in = f.metadata().map(|m| m.len()).unwrap_or(0);
    let reading = progress_bar(progress, bytes_in, "reading");
    let mut r = FastaReader::new(BufReader::with_capacity(1 << 20, f), &fasta.display().to_string());
    let (mut codes, mut names) = (Vec::<u8>::new(), Vec::<u8>::new());
    // Per record in file order: residue start, length, name start.
    let (mut starts, mut lens, mut name_starts) = (Vec::<u64>::new(), Vec::<u64>::new(), Vec::<u64>::new());
    let mut seq = Vec::new();
    while let Some(rec) = r.next_record(matrix, &mut seq)? {
        starts.push(codes.len() as u64);
        lens.push(seq.len() as u64);
        name_starts.push(names.len() as u64);
        codes.extend_from_slice(&seq);
        names.extend_from_slice(rec.id.as_bytes());
        if starts.len() % 4096 == 0 {
            reading.set_position(rec.offset);
        }
    }
    name_starts.push(names.len() as u64);
    reading.finish_and_clear();
    let n = starts.len();
    if n == 0 {
        return Err(format!("{}: the database holds no FASTA records", fasta.display()));
    }
    let mut order: Vec<u64> = (0..n as u64).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lens[i as usize]));
    let layout = Layout {
        alphabet: matrix.letters.clone(),
        sequences: n as u64,
        residues: codes.len() as u64,
        max_len: lens.iter().copied().max().unwrap_or(0),
        name_bytes: names.len() as u64,
    };
    let tmp = PathBuf::from(format!("{}.partial", out.display()));
    let werr = |e: std::io::Error| format!("cannot write {}: {e}", tmp.display());
    let file = std::fs::File::create(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let mut w = BufWriter::with_capacity(8 << 20, file);
    let bar = progress_bar(progress, layout.file_bytes(), "writing");
    let result = (|| {
        w.write_all(&layout.header()).map_err(werr)?;
        let table = |w: &mut BufWriter<std::fs::File>, values: &mut dyn Iterator<Item = u64>| {
            for v in values {
                w.write_all(&v.to_le_bytes()).map_err(werr)?;
            }
            Ok::<(), String>(())
        };
        let mut off = 0u64;
        let mut offsets = order.iter().map(|&i| {
            let o = off;
            off += lens[i as usize];
            o
        });
        table(&mut w, &mut offsets)?;
        table(&mut w, &mut std::iter::once(layout.residues))?;
        table(&mut w, &mut order.iter().copied())?;
        let mut noff = 0u64;
        let mut name_offsets = order.iter().map(|&i| {
            let (i, o) = (i as usize, noff);
            noff += name_starts[i + 1] - name_starts[i];
            o
        });
        table(&mut w, &mut name_offsets)?;
        table(&mut w, &mut std::iter::once(layout.name_bytes))?;
        for &i in &order {
            let i = i as usize;
            w.write_all(&names[name_starts[i] as usize..name_starts[i + 1] as usize]).map_err(werr)?;
        }
        bar.set_position(layout.residues_at());
        for (k, &i) in order.iter().enumerate() {
            let (s, l) = (starts[i as usize] as usize, lens[i as usize] as usize);
            w.write_all(&codes[s..s + l]).map_err(werr)?;
            if k % 4096 == 0 {
                bar.set_position(layout.residues_at() + s as u64);
            }
        }
        w.flush().map_err(werr)?;
        w.get_ref().sync_all().map_err(werr)?;
        Ok::<(), String>(())
    })();
    bar.finish_and_clear();
    if let Err(e) = result {
        std::fs::remove_file(&tmp).ok();
        return Err(e);
    }
    std::fs::rename(&tmp, out).map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), out.display()))?;
    let bytes = layout.file_bytes();
    Ok(Summary { layout, bytes })
}

fn progress_bar(progress: bool, len: u64, what: &str) -> indicatif::ProgressBar {
    if !progress {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    let t = format!("{{spinner}} [{{elapsed_precise}}] {what} {{wide_bar}} {{bytes}}/{{total_bytes}}, eta {{eta}}");
    b.set_style(indicatif::ProgressStyle::with_template(&t).expect("template"));
    b
}
