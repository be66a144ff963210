//! The cost of a prepared database's checksums: reads every chunk of a prepared database
//! as the search's file read stage does ([`prepared::read_into`], which checks each
//! sequence's CRC-32), then computes the same checksums again over the chunks' data, to
//! time the check alone.
//!
//! ```text
//! cargo run --release -p chariot-align --example checksum_cost -- db.cadb [chunk]
//! ```

use chariot_align::matrix::Matrix;
use chariot_align::prepared;
use std::time::{Duration, Instant};

/// This thread's time on a CPU (Linux's schedstat), seconds: what a busy shared host
/// leaves of wall time is noise; CPU time is the work.
fn cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 / 1e9)
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = std::path::PathBuf::from(args.next().ok_or("usage: checksum_cost DB.cadb [CHUNK]")?);
    let chunk: usize = args.next().map(|c| c.parse().map_err(|e| format!("chunk: {e}"))).transpose()?.unwrap_or(8192);
    let m = Matrix::blosum62();
    let t = Instant::now();
    let index = prepared::open(&path, &m, chunk)?;
    let open = t.elapsed();
    let layout = index.prepared.as_ref().ok_or("not a prepared database")?;
    let largest = index.chunks.iter().map(|c| c.packed_bytes()).max().unwrap_or(0);
    let mut buf = vec![0u8; largest];
    for pass in 1..=3 {
        let (mut read, mut check) = (Duration::ZERO, Duration::ZERO);
        let (mut read_cpu, mut check_cpu) = (0.0, 0.0);
        let mut sink = 0u32;
        for info in &index.chunks {
            let b = &mut buf[..info.packed_bytes()];
            let (t, c) = (Instant::now(), cpu());
            let r = prepared::read_into(&path, layout, info, b)?;
            read += t.elapsed();
            read_cpu += cpu() - c;
            let (t, c) = (Instant::now(), cpu());
            let off = |k: usize| u32::from_le_bytes(b[k * 4..k * 4 + 4].try_into().expect("4 bytes")) as usize;
            let res = info.res_off();
            for k in 0..info.nseq {
                let (r0, r1) = (off(k), off(k + 1));
                sink ^= prepared::checksum(r.seqs[k], (r1 - r0) as u64, r.ids[k].as_bytes(), &b[res + r0..res + r1]);
            }
            check += t.elapsed();
            check_cpu += cpu() - c;
        }
        println!(
            "pass {pass}: {} chunks, {} sequences, {} residues; opened in {:.3} s; read stage (with the check) {:.3} s; \
             the check alone {:.3} s ({:.1}% of the read stage, {:.2} GB/s); CPU time: read stage {:.3} s, \
             the check alone {:.3} s ({:.1}%, {:.2} GB/s) [{sink:08x}]",
            index.chunks.len(),
            index.sequences,
            index.residues,
            open.as_secs_f64(),
            read.as_secs_f64(),
            check.as_secs_f64(),
            100.0 * check.as_secs_f64() / read.as_secs_f64(),
            index.residues as f64 / check.as_secs_f64() / 1e9,
            read_cpu,
            check_cpu,
            100.0 * check_cpu / read_cpu,
            index.residues as f64 / check_cpu / 1e9
        );
    }
    // crc32fast over one large buffer: the rate without per-sequence calls.
    let (t, c) = (Instant::now(), cpu());
    let mut sink = 0u32;
    for _ in 0..8 {
        sink ^= crc32fast::hash(&buf);
    }
    let (s, sc) = (t.elapsed().as_secs_f64(), cpu() - c);
    let gb = 8.0 * buf.len() as f64 / 1e9;
    println!(
        "crc32fast over {} bytes x 8: {s:.3} s, {:.2} GB/s; CPU time {sc:.3} s, {:.2} GB/s [{sink:08x}]",
        buf.len(),
        gb / s,
        gb / sc
    );
    Ok(())
}
