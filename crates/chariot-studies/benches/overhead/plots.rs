//! The plots: ε and speedup against r at one GPU, ε by D, the static split against
//! chariot and chariot's scaling (PNGs into --out); and `--gantt-from`.

use crate::csv::Row;
use std::path::{Path, PathBuf};

/// ε against the hardware bound and speedup over serial, against r, as PNGs in `dir`
/// (one GPU); at D > 1 also ε against both bounds for each D, the static split against
/// chariot, and chariot's scaling over D = 1.
pub fn plots(all: &[Row], dir: &Path) -> Result<(), String> {
    use chariot_studies::plot::Series;
    // A chart whose series have no finite point (no serial run, say) is left out.
    let line_chart = |path: PathBuf, title: &str, x: &str, y: &str, log_x: bool, series: &[Series]| {
        let series: Vec<Series> = series
            .iter()
            .map(|s| Series {
                label: s.label.clone(),
                points: s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            println!("plot {} left out: nothing to draw", path.display());
            return Ok(());
        }
        chariot_studies::plot::line_chart(path, title, x, y, log_x, &series)
    };
    // The one-GPU plots: D = 1 and chariot's default settings, as the one-GPU study.
    let rows: Vec<Row> = all
        .iter()
        .filter(|r| r.gpus == 1 && (r.system != "chariot" || (r.pin == "on" && r.bus_mode == "default")))
        .cloned()
        .collect();
    let rows = &rows[..];
    let mut sets: Vec<(String, u64)> = all.iter().map(|r| (r.sizes.clone(), r.seed)).collect();
    sets.sort();
    sets.dedup();
    let rs = |set: &(String, u64)| {
        let mut v: Vec<f64> = all.iter().filter(|r| (r.sizes.clone(), r.seed) == *set).map(|r| r.r_target).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let best_in = |rows: &[Row], set: &(String, u64), r: f64, system: &str, d: usize| -> Option<Row> {
        rows.iter()
            .filter(|x| (x.sizes.clone(), x.seed) == *set && x.r_target == r && x.system == system && x.gpus == d)
            .min_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms))
            .cloned()
    };
    let best = |set: &(String, u64), r: f64, system: &str| best_in(rows, set, r, system, 1);
    let name = |set: &(String, u64)| {
        if set.0 == "fixed" {
            "fixed sizes".to_string()
        } else {
            format!("{} sizes, seed {}", set.0, set.1)
        }
    };
    if !rows.is_empty() {
        let eps: Vec<Series> = sets
            .iter()
            .map(|set| Series {
                label: name(set),
                points: rs(set)
                    .into_iter()
                    .filter_map(|r| best(set, r, "chariot").map(|b| (r, 100.0 * (b.makespan_ms / b.bound_ms - 1.0))))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        line_chart(
            dir.join("eps_vs_r.png"),
            "ε of chariot's best configuration against the hardware-aware bound",
            "transfer ratio r",
            "ε (%)",
            true,
            &eps,
        )?;
        for set in &sets {
            let mut series: Vec<Series> = ["chariot", "breadth-first", "depth-first", "cuda-graph"]
                .iter()
                .map(|sys| Series {
                    label: sys.to_string(),
                    points: rs(set)
                        .into_iter()
                        .filter_map(|r| best(set, r, sys).map(|b| (r, b.serial_ms / b.wall_ms)))
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            series.push(Series {
                label: "hardware-aware bound".into(),
                points: rs(set)
                    .into_iter()
                    .filter_map(|r| best(set, r, "chariot").map(|b| (r, b.serial_ms / b.bound_ms)))
                    .collect(),
            });
            let file = format!(
                "speedup_vs_r_{}{}.png",
                set.0,
                if set.0 == "fixed" { String::new() } else { format!("_{}", set.1) }
            );
            line_chart(
                dir.join(file),
                &format!("speedup over serial, {}", name(set)),
                "transfer ratio r",
                "speedup",
                true,
                &series,
            )?;
        }
    }
    let mut gpus: Vec<usize> = all.iter().map(|r| r.gpus).collect();
    gpus.sort_unstable();
    gpus.dedup();
    if gpus.iter().all(|&d| d == 1) {
        return Ok(());
    }
    // ε of the best configuration at each D, the worst over the chunk-size sets: one
    // chart per bound, as the paper's is an order of magnitude looser.
    for (file, label, paper) in
        [("eps_hw_by_gpus.png", "the hardware-aware bound", false), ("eps_paper_by_gpus.png", "the paper's T_LB", true)]
    {
        let mut eps = Vec::new();
        for &d in &gpus {
            let mut rr: Vec<f64> = all.iter().filter(|r| r.gpus == d).map(|r| r.r_target).collect();
            rr.sort_by(f64::total_cmp);
            rr.dedup();
            let points: Vec<(f64, f64)> = rr
                .into_iter()
                .filter_map(|r| {
                    sets.iter()
                        .filter_map(|set| best_in(all, set, r, "chariot", d))
                        .map(|b| if paper { b.paper_eps } else { b.makespan_ms / b.bound_ms - 1.0 })
                        .filter(|e| e.is_finite())
                        .reduce(f64::max)
                        .map(|e| (r, 100.0 * e))
                })
                .collect();
            eps.push(Series { label: format!("D = {d}"), points });
        }
        line_chart(
            dir.join(file),
            &format!("ε of chariot's best against {label} (worst over chunk-size sets)"),
            "transfer ratio r",
            "ε (%)",
            true,
            &eps,
        )?;
    }
    // The static split against chariot on random sizes, speedup over one GPU's serial.
    let mut split = Vec::new();
    for set in sets.iter().filter(|s| s.0 == "random") {
        for &d in gpus.iter().filter(|&&d| d > 1) {
            for (label, sys) in [("chariot", "chariot"), ("static split", "static-split")] {
                let points: Vec<(f64, f64)> = rs(set)
                    .into_iter()
                    .filter_map(|r| best_in(all, set, r, sys, d).map(|b| (r, b.serial_ms / b.wall_ms)))
                    .filter(|p| p.1.is_finite())
                    .collect();
                if !points.is_empty() {
                    split.push(Series { label: format!("{label}, D = {d}, seed {}", set.1), points });
                }
            }
        }
    }
    if !split.is_empty() {
        line_chart(
            dir.join("static_split_vs_chariot.png"),
            "random sizes: speedup over one GPU's serial run",
            "transfer ratio r",
            "speedup",
            true,
            &split,
        )?;
    }
    // chariot's scaling: its best at D over its best at D = 1, and the bounds' ratio,
    // each the mean over the chunk-size sets.
    let mut scaling = Vec::new();
    for &d in gpus.iter().filter(|&&d| d > 1) {
        for (label, bound) in [("chariot", false), ("the bounds' ratio", true)] {
            let mut rr: Vec<f64> = all.iter().filter(|r| r.gpus == d).map(|r| r.r_target).collect();
            rr.sort_by(f64::total_cmp);
            rr.dedup();
            let points: Vec<(f64, f64)> = rr
                .into_iter()
                .filter_map(|r| {
                    let ratios: Vec<f64> = sets
                        .iter()
                        .filter_map(|set| {
                            let (one, many) =
                                (best_in(all, set, r, "chariot", 1)?, best_in(all, set, r, "chariot", d)?);
                            Some(if bound { one.bound_ms / many.bound_ms } else { one.wall_ms / many.wall_ms })
                        })
                        .collect();
                    (!ratios.is_empty()).then(|| (r, ratios.iter().sum::<f64>() / ratios.len() as f64))
                })
                .collect();
            scaling.push(Series { label: format!("D = {d}, {label}"), points });
        }
    }
    if !scaling.is_empty() {
        line_chart(
            dir.join("scaling.png"),
            "chariot's best at D GPUs over its best at one GPU (mean over chunk-size sets)",
            "transfer ratio r",
            "speedup over D = 1",
            true,
            &scaling,
        )?;
    }
    Ok(())
}

/// `--gantt-from`: the Gantt chart (gantt.png, into `out` or beside the trace) of a
/// Chrome trace written by chariot.
pub fn gantt(trace: &Path, out: Option<&Path>) -> Result<(), String> {
    let json = std::fs::read_to_string(trace).map_err(|e| format!("{}: {e}", trace.display()))?;
    let dir = out.map(Path::to_path_buf).or_else(|| trace.parent().map(|p| p.to_path_buf())).unwrap_or_default();
    let title =
        format!("timeline of {}", trace.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    chariot_studies::plot::gantt_from_trace(dir.join("gantt.png"), &title, &json)
}
