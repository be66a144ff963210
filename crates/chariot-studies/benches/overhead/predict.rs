//! The sim's prediction of a GPU run (`--predict-from`): its error on each chariot
//! configuration, printed per D and written to `prediction.csv`.

use crate::csv::Row;
use crate::summary::median;
use std::path::Path;

/// Joins the chariot rows of a sim run with the same configurations of a GPU run;
/// writes `prediction.csv` into `dir` and prints the error per D.
pub fn predict(sim: &[Row], gpu: &[Row], dir: &Path) -> Result<(), String> {
    let key = |r: &Row| {
        (
            r.gpus,
            r.sizes.clone(),
            r.seed,
            r.r_target.to_bits(),
            r.streams,
            r.order.clone(),
            r.depth,
            r.pin.clone(),
            r.buses,
        )
    };
    let mut out = String::from("gpus,sizes,seed,r_target,streams,order,depth,pin,buses,gpu_ms,sim_ms,error\n");
    let mut errors: Vec<(usize, f64, f64)> = Vec::new();
    for s in sim.iter().filter(|r| r.system == "chariot") {
        let Some(g) = gpu.iter().find(|g| g.system == "chariot" && key(g) == key(s)) else { continue };
        let err = s.makespan_ms / g.makespan_ms - 1.0;
        errors.push((s.gpus, s.r_target, err));
        out += &format!(
            "{},{},{},{},{},{},{},{},{},{:.4},{:.4},{:.5}\n",
            s.gpus,
            s.sizes,
            s.seed,
            s.r_target,
            s.streams,
            s.order,
            s.depth,
            s.pin,
            s.buses,
            g.makespan_ms,
            s.makespan_ms,
            err
        );
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("prediction.csv"), out).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut gpus: Vec<usize> = errors.iter().map(|e| e.0).collect();
    gpus.sort_unstable();
    gpus.dedup();
    println!("\nthe sim's prediction of the GPU run's makespans (sim / GPU − 1), chariot configurations:");
    for d in gpus {
        let mut abs: Vec<f64> = errors.iter().filter(|e| e.0 == d).map(|e| e.2.abs()).collect();
        abs.sort_by(f64::total_cmp);
        let signed: Vec<f64> = errors.iter().filter(|e| e.0 == d).map(|e| e.2).collect();
        let n = abs.len();
        let within = abs.iter().filter(|&&x| x <= 0.10).count();
        println!(
            "  D = {d}: {within} of {n} within 10%; median |error| {:.1}%, 90th percentile {:.1}%, worst {:.1}%; median signed {:+.1}%",
            median(abs.clone()) * 100.0,
            abs[(n * 9 / 10).min(n - 1)] * 100.0,
            abs[n - 1] * 100.0,
            median(signed) * 100.0
        );
        let mut rs: Vec<f64> = errors.iter().filter(|e| e.0 == d).map(|e| e.1).collect();
        rs.sort_by(f64::total_cmp);
        rs.dedup();
        for r in rs {
            let e: Vec<f64> = errors.iter().filter(|e| e.0 == d && e.1 == r).map(|e| e.2).collect();
            println!(
                "    r {r:>6}: median {:+.1}%, worst |error| {:.1}%",
                median(e.clone()) * 100.0,
                e.iter().map(|x| x.abs()).fold(0.0, f64::max) * 100.0
            );
        }
    }
    if errors.is_empty() {
        println!("  no configuration of this run is in the GPU's CSV");
    }
    Ok(())
}
