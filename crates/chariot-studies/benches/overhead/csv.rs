//! The study's CSV files: the rows of `overhead.csv` (written and read back) and
//! `calibration.csv` (with `sim-args.txt`).

use crate::plan::{host_for_bound, Machine};
use chariot::report::LinkRates;
use std::io::Write;
use std::path::Path;

#[derive(Clone, Debug)]
pub struct Row {
    pub sizes: String,
    pub seed: u64,
    pub r_target: f64,
    pub r_model: f64,
    pub iters: u32,
    pub system: String,
    pub streams: usize,
    pub order: String,
    pub depth: usize,
    pub wall_ms: f64,
    pub makespan_ms: f64,
    pub bound_ms: f64,
    pub serial_ms: f64,
    pub paper_eps: f64,
    pub runtime_us: f64,
    pub gpus: usize,
    /// "on", "off", or empty for the baselines.
    pub pin: String,
    /// "default", "calibrated", a number, or empty for the baselines.
    pub bus_mode: String,
    pub buses: usize,
    pub paper_bound_ms: f64,
    pub limit: String,
    /// The best static split at this point and D (NaN where none ran).
    pub static_ms: f64,
    pub tasks_per_gpu: String,
    /// chariot: "default" (everything chosen by chariot) or "hand" (the grid); empty
    /// for the baselines.
    pub config: String,
    /// chariot's kernel concurrency: a number set by hand, or "fill" (by occupancy).
    pub kernels: String,
    /// Which timed batch of the configuration (0-based).
    pub rep: usize,
}

impl Row {
    pub fn point(&self) -> (String, u64, u64) {
        (self.sizes.clone(), self.seed, self.r_target.to_bits())
    }
}

pub const HEADER: &str = "sizes,seed,r_target,r_model,iters,system,streams,order,depth,wall_ms,makespan_ms,hw_bound_ms,serial_ms,speedup,eps_hw,paper_eps,runtime_us_per_cmd,gpus,pin,buses_mode,buses,paper_bound_ms,hw_limit,static_ms,tasks_per_gpu,config,kernels,rep";

/// One line of `calibration.csv`: D, the link alone, the host with all D GPUs, the
/// kernel model (a, b).
pub type Calibration = (usize, LinkRates, LinkRates, (f64, f64));

pub fn read_calibration(path: &Path) -> Result<Vec<Calibration>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.trim().parse::<f64>().unwrap_or(f64::NAN)).collect();
            if v.len() < 10 || v.iter().any(|x| !x.is_finite()) {
                return Err(format!("{}: bad line {l:?}", path.display()));
            }
            let rates = |i: usize| LinkRates { up: v[i], down: v[i + 1], both: v[i + 2] };
            Ok((v[0] as usize, rates(1), rates(4), (v[8], v[9])))
        })
        .collect()
}

pub fn write_calibration(
    dir: &Path,
    link: LinkRates,
    (a, b): (f64, f64),
    machines: &[Machine],
    on_cuda: bool,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut f = std::fs::File::create(dir.join("calibration.csv"))?;
    writeln!(
        f,
        "gpus,link_up,link_down,link_both,host_up,host_down,host_both,calibrated_buses,kernel_a_ns,kernel_b_ns"
    )?;
    for m in machines {
        writeln!(
            f,
            "{},{},{},{},{},{},{},{},{},{}",
            m.gpus, link.up, link.down, link.both, m.host.up, m.host.down, m.host.both, m.calibrated_buses, a, b
        )?;
    }
    if on_cuda {
        // The options that make the sim predict this machine: the host as one shared
        // bus only where the bound takes it as one (`host_for_bound`).
        let mut args =
            format!("--sim-link {:.3},{:.3},{:.3} --sim-kernel {:.6},{:.8}", link.up, link.down, link.both, a, b);
        if let Some(m) = machines.iter().filter(|m| m.gpus > 1).max_by_key(|m| m.gpus) {
            if host_for_bound(link, m.host, m.gpus) == m.host {
                args += &format!(" --sim-host {:.3},{:.3},{:.3}", m.host.up, m.host.down, m.host.both);
            }
        }
        std::fs::write(dir.join("sim-args.txt"), args + "\n")?;
    }
    Ok(())
}

pub fn write_row(f: &mut std::fs::File, r: &Row) -> std::io::Result<()> {
    writeln!(
        f,
        "{},{},{},{:.4},{},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.5},{:.5},{:.3},{},{},{},{},{:.4},{},{:.4},{},{},{},{}",
        r.sizes,
        r.seed,
        r.r_target,
        r.r_model,
        r.iters,
        r.system,
        r.streams,
        r.order,
        r.depth,
        r.wall_ms,
        r.makespan_ms,
        r.bound_ms,
        r.serial_ms,
        r.serial_ms / r.wall_ms,
        r.makespan_ms / r.bound_ms - 1.0,
        r.paper_eps,
        r.runtime_us,
        r.gpus,
        r.pin,
        r.bus_mode,
        r.buses,
        r.paper_bound_ms,
        r.limit,
        r.static_ms,
        r.tasks_per_gpu,
        r.config,
        r.kernels,
        r.rep
    )?;
    f.flush()
}

/// Reads the rows of an `overhead.csv`; the columns of the multi-GPU study are
/// optional, so that CSVs of the one-GPU study still read (as D = 1, pinned).
pub fn read_rows(path: &Path) -> Result<Vec<Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let required = [
        "sizes",
        "seed",
        "r_target",
        "r_model",
        "iters",
        "system",
        "streams",
        "order",
        "depth",
        "wall_ms",
        "makespan_ms",
        "hw_bound_ms",
        "serial_ms",
        "paper_eps",
        "runtime_us_per_cmd",
    ];
    let mut idx = [0usize; 15];
    for (i, name) in required.iter().enumerate() {
        idx[i] = col(name).ok_or(format!("CSV has no column {name}"))?;
    }
    let [gpus, pin, bus_mode, buses, paper_bound, limit, static_ms, per_gpu] =
        ["gpus", "pin", "buses_mode", "buses", "paper_bound_ms", "hw_limit", "static_ms", "tasks_per_gpu"].map(col);
    let [config, kernels, rep] = ["config", "kernels", "rep"].map(col);
    let f = |v: &[&str], i: usize| v[idx[i]].parse::<f64>().unwrap_or(f64::NAN);
    let opt = |v: &[&str], i: Option<usize>| i.and_then(|i| v.get(i)).map(|s| s.to_string());
    let num = |v: &[&str], i: Option<usize>| opt(v, i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(f64::NAN);
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            if v.len() < header.len() {
                return Err(format!("short CSV line: {l}"));
            }
            let system = v[idx[5]].to_string();
            let d = opt(&v, gpus).and_then(|s| s.parse().ok()).unwrap_or(1);
            let chariot = system == "chariot";
            Ok(Row {
                sizes: v[idx[0]].to_string(),
                seed: f(&v, 1) as u64,
                r_target: f(&v, 2),
                r_model: f(&v, 3),
                iters: f(&v, 4) as u32,
                system,
                streams: f(&v, 6) as usize,
                order: v[idx[7]].to_string(),
                depth: f(&v, 8) as usize,
                wall_ms: f(&v, 9),
                makespan_ms: f(&v, 10),
                bound_ms: f(&v, 11),
                serial_ms: f(&v, 12),
                paper_eps: f(&v, 13),
                runtime_us: f(&v, 14),
                gpus: d,
                pin: opt(&v, pin).unwrap_or_else(|| if chariot { "on".into() } else { String::new() }),
                bus_mode: opt(&v, bus_mode).unwrap_or_else(|| if chariot { "default".into() } else { String::new() }),
                buses: opt(&v, buses).and_then(|s| s.parse().ok()).unwrap_or(d),
                paper_bound_ms: num(&v, paper_bound),
                limit: opt(&v, limit).unwrap_or_default(),
                static_ms: num(&v, static_ms),
                tasks_per_gpu: opt(&v, per_gpu).unwrap_or_default(),
                config: opt(&v, config).unwrap_or_else(|| if chariot { "hand".into() } else { String::new() }),
                kernels: opt(&v, kernels).unwrap_or_default(),
                rep: opt(&v, rep).and_then(|s| s.parse().ok()).unwrap_or(0),
            })
        })
        .collect()
}
