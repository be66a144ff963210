//! The study's rows, their CSV, and the charts (drawn with `chariot_studies::plot`).

use crate::model::Outcome;
use chariot_studies::plot::{line_chart, Series};
use std::fmt::Write as _;
use std::path::Path;

/// One predicted configuration.
#[derive(Clone, Debug)]
pub struct Row {
    pub scaling: &'static str,
    pub layout: &'static str,
    pub nodes: usize,
    pub gpus: usize,
    pub latency_us: f64,
    pub fs_gbps: f64,
    pub handout_us: f64,
    pub chunk_mres: f64,
    pub gcups: f64,
    /// The kernel-bound time (cells over every GPU at its measured rate) over T.
    pub efficiency: f64,
    /// Against the same layout's one node: strong T(1) / (nodes x T), weak T(1) / T.
    pub scaled: f64,
    pub out: Outcome,
}

/// Fails loudly where a prediction falls below the model's own lower bound.
pub fn check(rows: &[Row]) -> Result<(), String> {
    for r in rows {
        if r.out.time_s < r.out.bound_s * (1.0 - 1e-9) {
            return Err(format!(
                "model error: {} {} at {} nodes predicts {:.6} s, below its {} bound {:.6} s",
                r.scaling, r.layout, r.nodes, r.out.time_s, r.out.bound, r.out.bound_s
            ));
        }
    }
    Ok(())
}

/// Writes `rows` as CSV to `path`.
pub fn csv(path: &Path, rows: &[Row]) -> Result<(), String> {
    let mut s = String::from("scaling,layout,nodes,gpus,latency_us,fs_gbps,handout_us,chunk_mres,tasks,time_s,bound_s,bound,gcups,efficiency,scaled,u_gpu,u_fs,u_link,u_writer,u_handout,u_loop,bottleneck\n");
    for r in rows {
        let o = &r.out;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{:.6},{:.6},{},{:.0},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{}",
            r.scaling,
            r.layout,
            r.nodes,
            r.gpus,
            r.latency_us,
            r.fs_gbps,
            r.handout_us,
            r.chunk_mres,
            o.tasks,
            o.time_s,
            o.bound_s,
            o.bound,
            r.gcups,
            r.efficiency,
            r.scaled,
            o.u_gpu,
            o.u_fs,
            o.u_link,
            o.u_writer,
            o.u_handout,
            o.u_loop,
            o.bottleneck()
        );
    }
    std::fs::write(path, s).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A series of `rows` picked by `keep`, as (x, y).
fn series(label: String, rows: &[Row], keep: impl Fn(&Row) -> bool, xy: impl Fn(&Row) -> (f64, f64)) -> Series {
    Series { label, points: rows.iter().filter(|r| keep(r)).map(xy).collect() }
}

/// The four charts. `ib` is the first latency, `fs_mid` the file system the
/// utilisation chart shows.
pub fn plots(
    dir: &Path,
    strong: &[Row],
    weak: &[Row],
    sweep: &[Row],
    ib: f64,
    fs_list: &[f64],
    fs_mid: f64,
) -> Result<(), String> {
    let mut eff = Vec::new();
    for layout in ["node", "gpu"] {
        for &fs in fs_list {
            let keep = |r: &Row| r.layout == layout && r.latency_us == ib && r.fs_gbps == fs;
            eff.push(series(format!("rank per {layout}, FS {fs} GB/s"), strong, keep, |r| {
                (r.nodes as f64, r.efficiency)
            }));
        }
    }
    line_chart(
        dir.join("strong-efficiency.png"),
        &format!("strong scaling, 85 G residues x 7 queries, latency {ib} us"),
        "nodes of 8 H100",
        "efficiency: kernel-bound time / T",
        true,
        &eff,
    )?;
    type Pick = fn(&Outcome) -> f64;
    let picks: [(&str, Pick); 6] = [
        ("GPUs (mean)", |o| o.u_gpu),
        ("file system aggregate", |o| o.u_fs),
        ("busiest node link", |o| o.u_link),
        ("busiest writer lock", |o| o.u_writer),
        ("hand-out thread", |o| o.u_handout),
        ("a rank's submit loop", |o| o.u_loop),
    ];
    for layout in ["node", "gpu"] {
        let keep = |r: &Row| r.layout == layout && r.latency_us == ib && r.fs_gbps == fs_mid;
        let util: Vec<Series> =
            picks.iter().map(|(n, f)| series(n.to_string(), strong, keep, |r| (r.nodes as f64, f(&r.out)))).collect();
        line_chart(
            dir.join(format!("strong-utilisation-rank-per-{layout}.png")),
            &format!("strong scaling, rank per {layout}, FS {fs_mid} GB/s, latency {ib} us: busy share"),
            "nodes of 8 H100",
            "busy time / run time",
            true,
            &util,
        )?;
    }
    let mut wt = Vec::new();
    for layout in ["node", "gpu"] {
        for &fs in fs_list {
            let keep = |r: &Row| r.layout == layout && r.latency_us == ib && r.fs_gbps == fs;
            wt.push(series(format!("rank per {layout}, FS {fs} GB/s"), weak, keep, |r| (r.nodes as f64, r.efficiency)));
        }
    }
    line_chart(
        dir.join("weak-efficiency.png"),
        "weak scaling, 5.3 G residues a node",
        "nodes of 8 H100",
        "efficiency: kernel-bound time / T",
        true,
        &wt,
    )?;
    let mut hs = Vec::new();
    let mut services: Vec<f64> = sweep.iter().map(|r| r.handout_us).collect();
    services.dedup();
    for &h in &services {
        let keep = |r: &Row| r.handout_us == h;
        hs.push(series(format!("hand-out {h} us: GPU efficiency"), sweep, keep, |r| (r.chunk_mres, r.out.u_gpu)));
        hs.push(series(format!("hand-out {h} us: hand-out busy"), sweep, keep, |r| (r.chunk_mres, r.out.u_handout)));
    }
    let n = sweep.first().map_or(0, |r| r.nodes);
    line_chart(
        dir.join("handout-sweep.png"),
        &format!("{n} nodes x 8 GPUs, rank per GPU: chunk size against the hand-out"),
        "chunk, M residues",
        "GPU busy share / hand-out busy share",
        true,
        &hs,
    )
}
