//! The report: the arithmetic of chariot's reports (milliseconds, medians, stage sums),
//! the printed tables (the runs' header, Table 2, default against best) and the CSV.

use chariot::report::{HardwareBound, Report};
use chariot::Stage;
use std::io::Write;
use std::path::Path;

use crate::shape::Shape;
use crate::{err, Run};

pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

pub(crate) fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Σ of command durations of `stage`, ns.
pub(crate) fn stage_sum(r: &Report, stage: Stage) -> u64 {
    r.records.iter().filter(|c| c.stage == stage).map(|c| c.duration_ns()).sum()
}

/// The duration of each command of `stage` in task order, ms, for a log line.
pub(crate) fn stage_list(r: &Report, stage: Stage) -> String {
    let mut v: Vec<(u64, u64)> =
        r.records.iter().filter(|c| c.stage == stage).map(|c| (c.task.0, c.duration_ns())).collect();
    v.sort_unstable();
    v.iter().map(|&(_, d)| format!("{:.2}", ms(d))).collect::<Vec<_>>().join(" ")
}

/// Median duration of one command of `stage`, ns (0 when there is none).
pub(crate) fn stage_median(r: &Report, stage: Stage) -> u64 {
    median(r.records.iter().filter(|c| c.stage == stage).map(|c| c.duration_ns()).collect())
}

pub(crate) const CSV_HEADER: &str = "backend,device,x,y,tasks,gpus,streams,depth,way,t_ms,t_col_ms,t_row_ms,wall_ms,speedup_vs_serial,hw_bound_ms,eps_hw,paper_tlb_ms,eps_paper,col_download_ms,col_kernel_ms,col_readback_ms,row_download_ms,row_kernel_ms,row_readback_ms,rel_l2_error,device_buffers_mib,gpu_mem_in_use_mib,cpu_threads,hw1_bound_ms,eps_hw1,column_kernel";

/// Outcome of a whole run, also used by the tests.
pub(crate) struct Outcome {
    /// CSV rows, each with every column of [`CSV_HEADER`].
    pub(crate) rows: Vec<String>,
}

impl Outcome {
    /// The rows with the last column: the column kernel of the two-phase runs.
    pub(crate) fn with_kernel(rows: Vec<String>, kernel: &str) -> Self {
        Outcome { rows: rows.into_iter().map(|r| format!("{r},{kernel}")).collect() }
    }
}

/// The header of the two-phase runs' table.
pub(crate) fn print_table_header() {
    println!();
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>8} {:>10} {:>8} {:>10} {:>8} {:>11} {:>10}",
        "config",
        "T ms",
        "col ms",
        "row ms",
        "wall ms",
        "speedup",
        "T_hw ms",
        "eps_hw",
        "T_hw1 ms",
        "eps_hw1",
        "T_LB ms",
        "eps_LB",
        "dev buf MiB",
        "GPU MiB"
    );
}

/// The default (`auto`) against the best configuration set by hand, by median T.
pub(crate) fn print_default_vs_best(shapes: &[Shape], medians: &[u64], repeat: usize) {
    if medians.len() > 2 {
        let auto = shapes.iter().position(|sh| *sh == Shape::AUTO);
        let best = (1..medians.len()).filter(|&c| Some(c) != auto).min_by_key(|&c| medians[c]);
        if let (Some(a), Some(b)) = (auto, best) {
            println!(
                "\ndefault (auto) {:.3} ms against the best configuration set by hand ({}) {:.3} ms: {:+.1}% (medians of {})",
                ms(medians[a]),
                shapes[b].name(),
                ms(medians[b]),
                (medians[a] as f64 / medians[b].max(1) as f64 - 1.0) * 100.0,
                repeat
            );
        }
    }
}

/// Table 2 of the paper, for this GPU: the serial run's breakdown, and its bounds.
pub(crate) fn print_table2(
    r: &Run,
    bound: Option<&(HardwareBound, HardwareBound)>,
    bound1: Option<&(HardwareBound, HardwareBound)>,
) {
    // With D > 1 the stage times are summed over the GPUs; show them per GPU so the
    // shares stay shares of the phase.
    let d = r.col.gpus.len().max(1) as f64;
    let per_gpu = if d > 1.0 { format!(", per GPU (mean of {d})") } else { String::new() };
    println!("\nTable 2 (S = 1): time per stage{per_gpu}, ms and share of the phase");
    println!("{:>10} {:>16} {:>16} {:>16}", "stage", "column phase", "row phase", "total");
    let (tc, tr) = (r.col.makespan_ns as f64, r.row.makespan_ns as f64);
    for (name, stage) in [("download", Stage::Download), ("kernel", Stage::Kernel), ("readback", Stage::Readback)] {
        let (a, b) = (stage_sum(&r.col, stage) as f64 / d, stage_sum(&r.row, stage) as f64 / d);
        println!(
            "{name:>10} {:>9.3} ({:>4.1}%) {:>9.3} ({:>4.1}%) {:>9.3} ({:>4.1}%)",
            a / 1e6,
            100.0 * a / tc,
            b / 1e6,
            100.0 * b / tr,
            (a + b) / 1e6,
            100.0 * (a + b) / (tc + tr)
        );
    }
    println!("{:>10} {:>9.3}          {:>9.3}          {:>9.3}", "total", tc / 1e6, tr / 1e6, (tc + tr) / 1e6);
    if let Some((bc, br)) = bound1 {
        println!(
            "the same at the rates of one copy at a time (serial run): column phase {:.3} ms ({}), row phase {:.3} ms ({}), both {:.3} ms",
            ms(bc.t_ns),
            bc.limit,
            ms(br.t_ns),
            br.limit,
            ms(bc.t_ns + br.t_ns)
        );
    }
    if let Some((bc, br)) = bound {
        println!(
            "hardware-aware bound: column phase {:.3} ms ({}), row phase {:.3} ms ({}), both {:.3} ms",
            ms(bc.t_ns),
            bc.limit,
            ms(br.t_ns),
            br.limit,
            ms(bc.t_ns + br.t_ns)
        );
    }
}

/// Appends `rows` to `dir`/seti.csv, with the header if the file is new.
pub(crate) fn append_csv(dir: &Path, rows: Vec<String>) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let path = dir.join("seti.csv");
    let fresh = !path.exists();
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(err)?;
    if fresh {
        writeln!(f, "{CSV_HEADER}").map_err(err)?;
    }
    for r in rows {
        writeln!(f, "{r}").map_err(err)?;
    }
    println!("appended to {}", path.display());
    Ok(())
}
