//! The CPU cost of `search --tabular`: the traceback and statistics of every query's top
//! hits ([`tabular::text`]), without the search. A database with the paper's length
//! shape (mean 755, σ 0.7, longest 35,213) and random queries are generated; each
//! query's hits are `--top` subjects drawn from the 200 longest (a random query's best
//! Smith-Waterman scores come from long subjects), scored by the CPU Smith-Waterman
//! (`sw::align`), so that the traceback's check against the search's score holds.
//!
//! ```text
//! cargo run --release -p chariot-align --example tabular_cost -- [QUERIES] [SEQUENCES] [QUERY_LENGTH] [TOP]
//! ```
//!
//! Prints the wall and CPU time of `tabular::text` and the cells one traceback pass
//! covers (composition-based statistics make two passes a hit).

use chariot_align::db::DbIndex;
use chariot_align::hits::Hit;
use chariot_align::matrix::Matrix;
use chariot_align::search::Query;
use chariot_align::sw::{self, Gaps, Profile};
use chariot_align::{fasta, generate, tabular};
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// This process's CPU time (all threads, user and system), seconds, from /proc/self/stat.
fn cpu() -> f64 {
    let ticks = std::fs::read_to_string("/proc/self/stat").ok().and_then(|s| {
        let rest = s.rsplit_once(')')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
    });
    // Linux's USER_HZ is 100 on every common configuration.
    ticks.map_or(f64::NAN, |t| t as f64 / 100.0)
}

fn arg(args: &[String], i: usize, default: usize) -> Result<usize, String> {
    args.get(i).map_or(Ok(default), |a| a.parse().map_err(|e| format!("argument {}: {a}: {e}", i + 1)))
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (nq, nseq, qlen, top) = (arg(&args, 0, 100)?, arg(&args, 1, 3000)?, arg(&args, 2, 300)?, arg(&args, 3, 10)?);
    let dir = std::env::temp_dir().join(format!("chariot-align-tabular-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (db, qf) = (dir.join("db.fa"), dir.join("q.fa"));
    let shape = generate::Shape {
        sequences: nseq as u64,
        mean: 755.0,
        sigma: 0.7,
        min: 2,
        max: 35_213,
        seed: 7,
        sorted: false,
    };
    generate::database(&db, shape)?;
    generate::queries(&qf, &vec![qlen; nq], 7)?;
    let m = Matrix::blosum62();
    let gaps = Gaps { open: 11, extend: 1 };
    let records = fasta::read_all(&db, &m)?;
    let queries: Vec<Query> = fasta::read_all(&qf, &m)?
        .into_iter()
        .enumerate()
        .map(|(i, (_, codes))| Query { id: format!("q{i}"), codes })
        .collect();
    let mut longest: Vec<usize> = (0..records.len()).collect();
    longest.sort_by_key(|&i| std::cmp::Reverse(records[i].1.len()));
    longest.truncate(200);
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (mut rh, mut rf) = (Vec::new(), Vec::new());
    let mut cells = 0u64;
    let hits: Vec<Vec<Hit>> = queries
        .iter()
        .map(|q| {
            let p = Profile::new(&q.codes, &m).expect("a query profile");
            let mut list: Vec<Hit> = (0..top)
                .map(|_| {
                    let i = longest[rng.random_range(0..longest.len())];
                    cells += (q.codes.len() * records[i].1.len()) as u64;
                    let score = sw::align(&p, &records[i].1, gaps, &mut rh, &mut rf);
                    Hit { score, seq: i as u64, id: records[i].0.split_whitespace().next().unwrap_or("").to_string() }
                })
                .collect();
            list.sort();
            list.dedup_by_key(|h| h.seq);
            list
        })
        .collect();
    let index = DbIndex::open(&db, &m, 8192)?;
    for stats in [tabular::Statistics::default(), tabular::Statistics { comp_based: true, seg: false }] {
        let (t, c) = (Instant::now(), cpu());
        let (_, rows) = tabular::text(&index, &m, &queries, &hits, gaps, stats)?;
        let (s, c) = (t.elapsed().as_secs_f64(), cpu() - c);
        println!(
            "{nq} queries of {qlen}, {rows} lines (comp-based-stats {}): {s:.2} s wall, {c:.2} s CPU, {:.2} G cells a traceback pass",
            u8::from(stats.comp_based),
            cells as f64 / 1e9,
        );
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
