//! The summaries printed after a sweep: chariot's best against the bounds and the
//! baselines, the defaults against the best set by hand, pinning and buses, D > 1
//! against the static split, and the replay of chariot's traced order.

use crate::csv::{Calibration, Row};
use chariot::report::{LinkRates, TaskWork};
use std::path::Path;

/// chariot's traced run at each point (the fastest, `trace-*-d<D>.json` in `traces`)
/// against the zero-overhead schedule (the ideal) of its own dispatch order
/// ([`chariot::report::zero_overhead_makespan`]): each GPU's chunks in the order it ran them, on
/// the same stream slots, at the measured rates, with no host time. At D > 1 each GPU
/// is replayed alone at its share of the host (the link, or the host's measured totals
/// over D where smaller), and the replay is the slowest GPU's. The bound holds for every
/// order and split; the replay is what a perfect runtime reaches with this one, so
/// T / T_replay − 1 is chariot's own overhead and T_replay / T_hw − 1 the order's (and
/// at D > 1 the split's). Prints the table and writes replay.csv into `out`.
pub fn replay_table(rows: &[Row], traces: &Path, out: &Path, cal: &[Calibration]) -> Result<(), String> {
    let mut points: Vec<&Row> = rows.iter().filter(|r| r.system == "chariot").collect();
    points.sort_by_key(|x| (x.gpus, x.point()));
    points.dedup_by(|x, y| (x.gpus, x.point()) == (y.gpus, y.point()));
    let mut csv = String::from(
        "gpus,sizes,seed,r_target,streams,bound_ms,replay_ms,chariot_ms,replay_over_bound,chariot_over_replay\n",
    );
    let mut lines = Vec::new();
    for p in points {
        let Some(&(_, link, host, (a, b))) = cal.iter().find(|c| c.0 == p.gpus) else { continue };
        let file = traces.join(format!("trace-{}-{}-r{}-d{}.json", p.sizes, p.seed, p.r_target, p.gpus));
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let events: Vec<&serde_json::Value> = json["traceEvents"]
            .as_array()
            .map(|v| v.iter().filter(|e| e["ph"] == "X" && e["args"].is_object()).collect())
            .unwrap_or_default();
        let num = |e: &serde_json::Value, k: &str| e[k].as_f64().or_else(|| e["args"][k].as_f64()).unwrap_or(f64::NAN);
        let d = p.gpus.max(1) as f64;
        let share = LinkRates {
            up: link.up.min(host.up / d),
            down: link.down.min(host.down / d),
            both: link.both.min(host.both / d),
        };
        let per_element = a + b * p.iters as f64;
        let mut replay_ns = 0u64;
        let mut slots = 1;
        for g in 0..p.gpus {
            let mut downloads: Vec<&&serde_json::Value> =
                events.iter().filter(|e| e["cat"] == "download" && num(e, "pid") as usize == g).collect();
            downloads.sort_by(|x, y| num(x, "ts").total_cmp(&num(y, "ts")));
            let gpu_slots = downloads.iter().map(|e| num(e, "stream") as usize + 1).max().unwrap_or(1);
            slots = slots.max(gpu_slots);
            let tasks: Vec<TaskWork> = downloads
                .iter()
                .map(|e| {
                    let bytes = num(e, "bytes") as u64;
                    TaskWork {
                        up_bytes: bytes,
                        kernel_ns: (per_element * (bytes / 4) as f64) as u64,
                        down_bytes: bytes,
                    }
                })
                .collect();
            let rates = if p.gpus > 1 { share } else { link };
            replay_ns = replay_ns.max(chariot::report::zero_overhead_makespan(&tasks, rates, gpu_slots));
        }
        let start = events.iter().map(|e| num(e, "ts")).fold(f64::INFINITY, f64::min);
        let end = events.iter().map(|e| num(e, "ts") + num(e, "dur")).fold(f64::NEG_INFINITY, f64::max);
        let t = (end - start) / 1e3;
        let replay = replay_ns as f64 / 1e6;
        // The bound of this point: every chariot row of it carries the same one.
        let bound = p.bound_ms;
        csv += &format!(
            "{},{},{},{},{slots},{bound:.4},{replay:.4},{t:.4},{:.5},{:.5}\n",
            p.gpus,
            p.sizes,
            p.seed,
            p.r_target,
            replay / bound - 1.0,
            t / replay - 1.0
        );
        lines.push(format!(
            "  {:>2} {:>6} {:>4} {:>6} {slots:>3} {bound:>10.3} {replay:>10.3} {t:>10.3} {:>+12.1}% {:>+14.1}%",
            p.gpus,
            p.sizes,
            p.seed,
            p.r_target,
            100.0 * (replay / bound - 1.0),
            100.0 * (t / replay - 1.0)
        ));
    }
    if lines.is_empty() {
        return Ok(());
    }
    println!(
        "\nchariot's traced run against the zero-overhead replay of its own order:\n  {:>2} {:>6} {:>4} {:>6} {:>3} {:>10} {:>10} {:>10} {:>13} {:>15}",
        "D", "sizes", "seed", "r", "S", "bound ms", "replay ms", "chariot ms", "replay/bound", "chariot/replay"
    );
    println!("{}", lines.join("\n"));
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    std::fs::write(out.join("replay.csv"), csv).map_err(|e| format!("{}: {e}", out.display()))
}

/// The points (sizes, seed, r) in the order they ran.
pub fn points(rows: &[Row]) -> Vec<(String, u64, u64)> {
    let mut keys: Vec<(String, u64, u64)> = Vec::new();
    for r in rows {
        if !keys.contains(&r.point()) {
            keys.push(r.point());
        }
    }
    keys
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The fastest row (by wall time) among `rows` that `keep` accepts.
pub fn fastest<'a>(rows: &[&'a Row], keep: impl Fn(&Row) -> bool) -> Option<&'a Row> {
    rows.iter().copied().filter(|r| keep(r)).min_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms))
}

/// The tables printed after a sweep: per point and D, chariot's best against the
/// bounds and the baselines; then pinning, buses, the static split and scaling.
pub fn summary(rows: &[Row]) {
    let mut gpus: Vec<usize> = rows.iter().map(|r| r.gpus).collect();
    gpus.sort_unstable();
    gpus.dedup();
    println!(
        "\n{:>7} {:>5} {:>6} {:>2} {:>9} {:>9} {:>28} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "sizes",
        "seed",
        "r",
        "D",
        "bound ms",
        "chariot",
        "best config",
        "eps_hw",
        "eps_pap",
        "serial",
        "breadth",
        "depth",
        "graph",
        "static"
    );
    for (sizes, seed, rb) in points(rows) {
        for &d in &gpus {
            let pts: Vec<&Row> =
                rows.iter().filter(|r| r.point() == (sizes.clone(), seed, rb) && r.gpus == d).collect();
            if pts.is_empty() {
                continue;
            }
            let best = |sys: &str| fastest(&pts, |p| p.system == sys).map_or(f64::NAN, |p| p.wall_ms);
            let Some(c) = fastest(&pts, |p| p.system == "chariot") else { continue };
            println!(
                "{sizes:>7} {seed:>5} {:>6} {d:>2} {:>9.3} {:>9.3} {:>28} {:>6.1}% {:>6.1}% {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                f64::from_bits(rb),
                c.bound_ms,
                c.wall_ms,
                format!("S{} {} d{} pin {} B{}", c.streams, c.order, c.depth, c.pin, c.buses),
                (c.makespan_ms / c.bound_ms - 1.0) * 100.0,
                c.paper_eps * 100.0,
                if d == 1 { best("serial") } else { c.serial_ms },
                best("breadth-first"),
                best("depth-first"),
                best("cuda-graph"),
                best("static-split")
            );
        }
    }
    default_against_best(rows, &gpus);
    // Same configuration, one thing changed: the ratio of makespans, per pair.
    let pairs = |label: &str, differs: &dyn Fn(&Row, &Row) -> bool, same: &dyn Fn(&Row, &Row) -> bool| {
        let chariot: Vec<&Row> = rows.iter().filter(|r| r.system == "chariot").collect();
        let mut any = false;
        for &d in &gpus {
            let ratios: Vec<f64> = chariot
                .iter()
                .filter(|a| a.gpus == d)
                .flat_map(|a| {
                    chariot
                        .iter()
                        .filter(move |b| b.gpus == d && a.point() == b.point() && same(a, b) && differs(a, b))
                        .map(move |b| b.makespan_ms / a.makespan_ms)
                })
                .collect();
            if ratios.is_empty() {
                continue;
            }
            if !any {
                println!("\n{label}");
                any = true;
            }
            let n = ratios.len();
            let slower = ratios.iter().filter(|&&x| x > 1.0).count();
            println!(
                "  D = {d}: {n} pairs; second over first, median {:+.2}%, range {:+.2}% to {:+.2}%; second slower in {slower}",
                (median(ratios.clone()) - 1.0) * 100.0,
                (ratios.iter().copied().fold(f64::INFINITY, f64::min) - 1.0) * 100.0,
                (ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max) - 1.0) * 100.0,
            );
        }
    };
    let config = |a: &Row, b: &Row| a.streams == b.streams && a.order == b.order && a.depth == b.depth;
    pairs(
        "pinned (first) against unpinned (second) dispatchers, same configuration and buses:",
        &|a, b| a.pin == "on" && b.pin == "off",
        &|a, b| config(a, b) && a.buses == b.buses,
    );
    pairs(
        "default B (first) against the other bus settings (second), same configuration, pinned:",
        &|a, b| a.bus_mode == "default" && b.bus_mode != "default",
        &|a, b| config(a, b) && a.pin == b.pin && a.pin == "on",
    );
    // The static split against chariot, and chariot's scaling over D = 1.
    let mut lines = Vec::new();
    for (sizes, seed, rb) in points(rows) {
        let at = |d: usize, sys: &str| {
            let pts: Vec<&Row> =
                rows.iter().filter(|r| r.point() == (sizes.clone(), seed, rb) && r.gpus == d).collect();
            fastest(&pts, |p| p.system == sys).map(|p| p.wall_ms)
        };
        for &d in gpus.iter().filter(|&&d| d > 1) {
            let (c, s, one) = (at(d, "chariot"), at(d, "static-split"), at(1, "chariot"));
            if c.is_none() {
                continue;
            }
            let c = c.unwrap_or(f64::NAN);
            lines.push(format!(
                "  {sizes:>7} {seed:>5} r {:>6} D {d}: chariot {c:.3} ms, static split {}, chariot over D = 1 {}",
                f64::from_bits(rb),
                s.map_or("n/a".into(), |s| format!("{s:.3} ms (chariot {:+.1}%)", (c / s - 1.0) * 100.0)),
                one.map_or("n/a".into(), |o| format!("{:.2}x", o / c)),
            ));
        }
    }
    if !lines.is_empty() {
        println!("\nD > 1: chariot's best against the static split's best, and its scaling:\n{}", lines.join("\n"));
    }
}

/// chariot's defaults against the best configuration set by hand, per point and D: the
/// median wall time of each configuration over its timed batches, then the default's
/// over the least of the grid's. Prints the table and the worst ratio.
pub fn default_against_best(rows: &[Row], gpus: &[usize]) {
    type Key = (usize, String, usize, String, String, usize);
    let key = |r: &Row| -> Key { (r.streams, r.order.clone(), r.depth, r.kernels.clone(), r.pin.clone(), r.buses) };
    let mut lines = Vec::new();
    let mut worst: Option<(f64, String)> = None;
    for (sizes, seed, rb) in points(rows) {
        for &d in gpus {
            let here: Vec<&Row> = rows
                .iter()
                .filter(|r| r.system == "chariot" && r.gpus == d && r.point() == (sizes.clone(), seed, rb))
                .collect();
            let default: Vec<f64> = here.iter().filter(|r| r.config == "default").map(|r| r.wall_ms).collect();
            if default.is_empty() {
                continue;
            }
            let mut hand: Vec<(Key, Vec<f64>)> = Vec::new();
            for r in here.iter().filter(|r| r.config != "default") {
                match hand.iter_mut().find(|(k, _)| *k == key(r)) {
                    Some((_, v)) => v.push(r.wall_ms),
                    None => hand.push((key(r), vec![r.wall_ms])),
                }
            }
            let best = hand.into_iter().map(|(k, v)| (median(v), k)).min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((t_best, k)) = best else { continue };
            let t_default = median(default.clone());
            let ratio = t_default / t_best;
            let what = format!("{sizes} seed {seed} r {} D {d}", f64::from_bits(rb));
            if worst.as_ref().is_none_or(|w| ratio > w.0) {
                worst = Some((ratio, what.clone()));
            }
            let d_row = here.iter().find(|r| r.config == "default").expect("a default row");
            lines.push(format!(
                "  {what:<28} default (S {} depth {}) {t_default:>9.3} ms, best by hand (S {} {} depth {} kernels {} pin {} B {}) {t_best:>9.3} ms: {:+.1}% ({} runs each)",
                d_row.streams,
                d_row.depth,
                k.0,
                k.1,
                k.2,
                k.3,
                k.4,
                k.5,
                (ratio - 1.0) * 100.0,
                default.len()
            ));
        }
    }
    if lines.is_empty() {
        return;
    }
    println!("\nchariot's defaults against the best configuration set by hand (medians of the timed runs, wall time):");
    for l in &lines {
        println!("{l}");
    }
    if let Some((ratio, what)) = worst {
        println!("  worst: {what}, default {:+.1}% over the best", (ratio - 1.0) * 100.0);
    }
}
