//! The hardware-aware bounds: the sustained copy-rate probes and the bound of a run's
//! two phases at those rates.

use chariot::report::{HardwareBound, LinkRates, Report, TaskWork};
use chariot::{Backend, HostBuffer, Stage};

use crate::fft::{column_block, column_tile, ColumnKernel, TILED_THREADS};
use crate::report::{median, ms};
use crate::shape::Shape;
use crate::{column_copy, err, Pipeline, Run, C};

/// The hardware-aware bounds of one run's two phases: `n` chunks of `chunk_bytes` each
/// way, the kernels' SM-times `k_col` and `k_row`, at the probed rates raised to what the
/// run's own copies achieved (no run can beat its own copies).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_bounds(
    run: &Run,
    k_col: u64,
    k_row: u64,
    chunk_bytes: u64,
    n: usize,
    gpus: usize,
    rates_col: LinkRates,
    rates_row: LinkRates,
) -> (HardwareBound, HardwareBound) {
    let bound = |k: u64, probe: LinkRates, r: &Report| {
        let work = vec![TaskWork { up_bytes: chunk_bytes, kernel_ns: k, down_bytes: chunk_bytes }; n];
        let rates = probe.at_least(LinkRates::observed(&r.records));
        if gpus > 1 {
            HardwareBound::multi_gpu(&work, gpus, rates, rates.times(gpus as f64))
        } else {
            HardwareBound::one_gpu(&work, rates)
        }
    };
    (bound(k_col, rates_col, &run.col), bound(k_row, rates_row, &run.row))
}

/// Sustained copy rates of one phase's copies (bytes/ns): uploads alone, readbacks
/// alone, both at once, each the slope between 2 and n back-to-back chunks (4 streams,
/// depth 2, so that engines never wait for the dispatcher and fixed costs cancel).
pub(crate) fn probe_rates(
    p: &Pipeline,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    x: usize,
    y: usize,
    n: usize,
    columns: bool,
) -> Result<LinkRates, String> {
    let chunk = x * y / n;
    let w = x / n;
    let makespan = |kind: u8, count: usize| -> Result<f64, String> {
        for i in 0..count {
            let (t_up, t_down) = (2 * i as u64, 2 * i as u64 + 1);
            if kind != 1 {
                let t = p.sched.task(t_up, 1);
                let t = if columns {
                    t.download_2d(&p.d_in, input, column_copy(i, w, x, y))
                } else {
                    t.download(&p.d_in, 0, input, i * chunk..(i + 1) * chunk)
                };
                t.submit().map_err(err)?;
            }
            if kind != 0 {
                let t = p.sched.task(t_down, 1);
                let t = if columns {
                    t.readback_2d(work, &p.d_out, column_copy(i, w, x, y))
                } else {
                    t.readback(work, i * chunk..(i + 1) * chunk, &p.d_out, 0)
                };
                t.submit().map_err(err)?;
            }
        }
        Ok(p.sched.synchronize().map_err(err)?.makespan_ns as f64)
    };
    let bytes = (chunk * 8) as f64;
    let (short, long) = (2.min(n), n.max(3).min(n.max(2)));
    let slope = |kind: u8| -> Result<f64, String> {
        if long > short {
            let (a, b) = (makespan(kind, short)?, makespan(kind, long)?);
            Ok(((b - a) / (long - short) as f64).max(1.0))
        } else {
            Ok((makespan(kind, long)? / long as f64).max(1.0))
        }
    };
    makespan(2, short)?; // warm-up
    Ok(LinkRates { up: bytes / slope(0)?, down: bytes / slope(1)?, both: 2.0 * bytes / slope(2)? })
}

/// The sustained copy rates of both phases (column, row) on one GPU, and whether runs can be
/// checked against a bound.
pub(crate) fn probe_phases(
    backend: &Backend,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    x: usize,
    y: usize,
    n: usize,
) -> Result<(LinkRates, LinkRates, bool), String> {
    // Copy rates for the hardware-aware bound, per phase (one GPU).
    // On sim the profile's own rates are what no run can beat: the probe is raised to
    // them. A sim with no modeled time models no hardware (its times are the CPU's real
    // work), so there is nothing to bound and the check is not made.
    let (rates_col, rates_row, bounded) = {
        let p = Pipeline::new(backend, 1, Shape::AUTO, false, x, y, n)?;
        let (col, row) = (probe_rates(&p, input, work, x, y, n, true)?, probe_rates(&p, input, work, x, y, n, false)?);
        match (p.sched.backend_name(), p.sched.modeled_rates()) {
            ("sim", Some((link, _))) => (col.at_least(link), row.at_least(link), true),
            ("sim", None) => (col, row, false),
            _ => (col, row, true),
        }
    };
    println!(
        "sustained copy rates (GB/s) column phase (pitched): up {:.1}, down {:.1}, both {:.1}; row phase: up {:.1}, down {:.1}, both {:.1}",
        rates_col.up, rates_col.down, rates_col.both, rates_row.up, rates_row.down, rates_row.both
    );
    Ok((rates_col, rates_row, bounded))
}

/// The bounds from the serial run `run` of `p`: each phase's chunks at the sustained rates,
/// kernels at their median time alone (nothing overlaps them there). Returns the column
/// kernel's SM-time and the row kernel's time, the bound of both phases, and the same
/// at the rates of one copy at a time.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn serial_bounds(
    p: &Pipeline,
    run: &Run,
    kernel: ColumnKernel,
    gpus: usize,
    x: usize,
    y: usize,
    n: usize,
    chunk_bytes: usize,
    rates_col: LinkRates,
    rates_row: LinkRates,
) -> ((u64, u64), (HardwareBound, HardwareBound), (HardwareBound, HardwareBound)) {
    // The bound: each phase's chunks at the sustained rates, kernels at their
    // median time alone (from the serial run, where nothing overlaps them).
    let k =
        |r: &Report| median(r.records.iter().filter(|c| c.stage == Stage::Kernel).map(|c| c.duration_ns()).collect());
    let work_of =
        |kn: u64| vec![TaskWork { up_bytes: chunk_bytes as u64, kernel_ns: kn, down_bytes: chunk_bytes as u64 }; n];
    // On D GPUs, each on its own link at the one-GPU rates (the host carrying D
    // links' worth): optimistic where the host carries less, so still a bound.
    let d = gpus;
    let hw = |w: &[TaskWork], r: LinkRates| {
        if d > 1 {
            HardwareBound::multi_gpu(w, d, r, r.times(d as f64))
        } else {
            HardwareBound::one_gpu(w, r)
        }
    };
    // The column kernel fills part of the GPU and may run beside another: its
    // SM-time (time alone × fill) is what kernels of one GPU add up to.
    let fill = column_fill(p, kernel, x / n, y);
    let k_col = (k(&run.col) as f64 * fill) as u64;
    let alone = (k_col, k(&run.row));
    let bound = (hw(&work_of(k_col), rates_col), hw(&work_of(k(&run.row)), rates_row));
    let one_at_a_time = |r: &Report, probe: LinkRates| {
        let rate = |stage: Stage| {
            let ns = median(r.records.iter().filter(|c| c.stage == stage).map(|c| c.duration_ns()).collect());
            chunk_bytes as f64 / ns.max(1) as f64
        };
        let (up, down) = (rate(Stage::Download), rate(Stage::Readback));
        LinkRates { up, down, both: probe.both.min(up + down).max(up.max(down)) }
    };
    let bound1 = (
        hw(&work_of(k_col), one_at_a_time(&run.col, rates_col)),
        hw(&work_of(k(&run.row)), one_at_a_time(&run.row, rates_row)),
    );
    (alone, bound, bound1)
}

/// The share of GPU 0's SMs a launch of `p`'s column kernel `k` on `w` columns fills.
fn column_fill(p: &Pipeline, k: ColumnKernel, w: usize, y: usize) -> f64 {
    let fill = match k {
        ColumnKernel::Tiled | ColumnKernel::TiledStreaming => {
            p.sched.launch_fill(0, &p.tiled, (w >> column_tile(w)) as u32, TILED_THREADS, 0)
        }
        ColumnKernel::Strided => p.sched.launch_fill(0, &p.strided, w as u32, column_block(y), 0),
    };
    fill.unwrap_or(1.0)
}

/// The runs of configuration `name` that beat their own bound (the probed rates raised to
/// what their copies did), each as a line; a bound is one only if there are none.
#[allow(clippy::too_many_arguments)]
pub(crate) fn below_bounds(
    runs: &[Run],
    name: &str,
    (k_col, k_row): (u64, u64),
    chunk_bytes: u64,
    n: usize,
    gpus: usize,
    rates_col: LinkRates,
    rates_row: LinkRates,
) -> Vec<String> {
    let mut below = Vec::new();
    for r in runs {
        let (col, row) = run_bounds(r, k_col, k_row, chunk_bytes, n, gpus, rates_col, rates_row);
        if r.col.makespan_ns < col.t_ns || r.row.makespan_ns < row.t_ns {
            below.push(format!(
                "{name}: column phase {:.3} ms (bound {:.3}, {}), row phase {:.3} ms (bound {:.3}, {})",
                r.col.makespan_ms(),
                ms(col.t_ns),
                col.limit,
                r.row.makespan_ms(),
                ms(row.t_ns),
                row.limit
            ));
        }
    }
    below
}

/// The bound check's verdict over `timed` runs: printed, and an error if any run was below
/// its bound.
pub(crate) fn check_bounds(bounded: bool, below: &[String], timed: usize) -> Result<(), String> {
    if !bounded {
        println!(
            "bound check: not made (sim with no modeled time: no hardware is modeled, the times are the CPU's work)"
        );
    } else if below.is_empty() {
        println!("bound check: no phase of the {} timed runs below its hardware bound", timed);
    } else {
        for b in below {
            println!("BOUND VIOLATED: {b}");
        }
        return Err(format!("{} run(s) below the hardware bound: the bound is not one", below.len()));
    }
    Ok(())
}
