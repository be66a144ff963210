//! `makedb`: a FASTA database read, encoded, sorted longest first and written in the
//! prepared format (see the module above for the layout).

use super::*;
use crate::fasta::FastaReader;
use crate::matrix::Matrix;
use std::io::Write;
use std::path::Path;

/// What `makedb` wrote.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The file's layout.
    pub layout: Layout,
    /// Records with no residues and duplicate ids in the FASTA file.
    pub warnings: crate::fasta::Warnings,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Prepares the FASTA database `fasta` (gzip too, see [`crate::fasta::open`]) as `out`
/// with the codes of `matrix`, showing progress when asked. `out` is created first (as
/// `<out>.partial`, see [`crate::output`]) and renamed over `out` at the end, so a bad
/// path fails at once and a failed run leaves neither a partial database nor a `.partial`.
///
/// # Errors
/// An `out` that is `fasta` or no regular file, what [`DbIndex::build`](crate::db::DbIndex::build)
/// refuses (unreadable or malformed FASTA, a bad residue, no records), and an unwritable output.
pub fn make(fasta: &Path, out: &Path, matrix: &Matrix, progress: bool) -> Result<Summary, String> {
    crate::output::check_distinct(&[("-d", fasta)], &[("-o", out)])?;
    let mut w = crate::output::Output::create("-o", out)?;
    let gz = crate::fasta::is_gzip(fasta, "database")?;
    let bytes_in = std::fs::metadata(fasta).map(|m| m.len()).unwrap_or(0);
    // A gzip file's offsets are the decompressed text's: no bar to measure them by.
    let reading = progress_bar(progress && !gz, bytes_in, "reading");
    let text = crate::fasta::open(fasta, "database")?;
    let mut r = FastaReader::new(text, &fasta.display().to_string());
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
    let warnings = r.warnings().clone();
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
        empty_records: warnings.empty,
        duplicate_ids: warnings.duplicates,
    };
    let werr = |e: std::io::Error| format!("cannot write {}: {e}", crate::output::partial_path(out).display());
    let bar = progress_bar(progress, layout.file_bytes(), "writing");
    let result = (|| {
        w.write_all(&layout.header()).map_err(werr)?;
        let table = |w: &mut crate::output::Output, values: &mut dyn Iterator<Item = u64>| {
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
        let name = |i: usize| &names[name_starts[i] as usize..name_starts[i + 1] as usize];
        for &i in &order {
            w.write_all(name(i as usize)).map_err(werr)?;
        }
        bar.set_position(layout.residues_at());
        let residues = |i: usize| &codes[starts[i] as usize..(starts[i] + lens[i]) as usize];
        for (k, &i) in order.iter().enumerate() {
            w.write_all(residues(i as usize)).map_err(werr)?;
            if k % 4096 == 0 {
                bar.set_position(layout.residues_at() + starts[i as usize]);
            }
        }
        for &i in &order {
            let i = i as usize;
            let c = checksum(i as u64, lens[i], name(i), residues(i));
            w.write_all(&c.to_le_bytes()).map_err(werr)?;
        }
        Ok::<(), String>(())
    })();
    bar.finish_and_clear();
    // On an error `w` is dropped, which removes the `.partial`.
    result?;
    w.commit()?;
    let bytes = layout.file_bytes();
    Ok(Summary { layout, warnings, bytes })
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
