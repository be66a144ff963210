//! The `--diagnose` study of the column phase: what it runs between its copies (no kernel,
//! a waiting kernel, a touching kernel, each column kernel), what runs before it, and the
//! table of its stage times. Its kernels and phase variants are in `probes`.

use chariot::report::Report;
use chariot::{Backend, HostBuffer, Stage};

use crate::fft::{column_block, column_tile, log_lmax, pass_logs, ColumnKernel, TILED_THREADS};
use crate::probes::{size_name, ColumnWork, Probes};
use crate::report::{ms, stage_list, stage_median, stage_sum};
use crate::shape::Shape;
use crate::{Cli, Pipeline, C};

/// The median of `repeat` runs of the column phase with `what` after a warm-up, by
/// makespan.
pub(crate) fn median_columns(
    p: &mut Pipeline,
    probes: &Probes,
    what: ColumnWork,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    cli: &Cli,
    before: Before,
) -> Result<Report, String> {
    let mut runs = Vec::new();
    for i in 0..=cli.repeat {
        match before {
            Before::Nothing => {}
            Before::Rows => {
                p.rows(work, cli.x, cli.y, cli.tasks)?;
            }
            Before::Touch(values) => probes.touch_alone(p, values)?,
        }
        let r = probes.columns(p, what, input, work, cli.x, cli.y, cli.tasks)?;
        if i > 0 {
            runs.push(r);
        }
    }
    runs.sort_by_key(|r| r.makespan_ns);
    Ok(runs.swap_remove(runs.len() / 2))
}

/// What the diagnosis runs before each column phase it measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Before {
    Nothing,
    /// The row phase (cuFFT), as in the two-phase runs.
    Rows,
    /// The touching kernel, plain, on this many values of its buffer.
    Touch(usize),
}

impl Before {
    /// The suffix of the column work's name.
    pub(crate) fn suffix(self) -> String {
        match self {
            Before::Nothing => String::new(),
            Before::Rows => "_after_rows".into(),
            Before::Touch(values) => format!("_after_touch{}", size_name(values)),
        }
    }
}

/// The diagnosis of the column phase (`--diagnose`): for each S, the phase alone with
/// each [`ColumnWork`]; prints the makespan and the median and total command time of
/// each stage, against the phase's bound `col_bound_ns` where known. Returns CSV rows.
pub(crate) fn diagnose(
    cli: &Cli,
    backend: &Backend,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    shapes: &[Shape],
    base: &dyn Fn(usize, usize, &str) -> String,
    col_bound_ns: Option<u64>,
) -> Result<Vec<String>, String> {
    let (x, y, n) = (cli.x, cli.y, cli.tasks);
    let (w, size) = (x / n, std::mem::size_of::<C>());
    let of512 = |b: usize| if b % 512 == 0 { "a multiple of 512" } else { "not a multiple of 512" };
    println!(
        "\ndiagnosis of the column phase, run alone (depth {:?}{}): each 2-D copy moves {y} rows of {} B; host pitch {} B ({}), device pitch {} B ({}); task i starts at host byte i·{} ({}) and device byte 0",
        cli.depth,
        if cli.device_timing { ", device timing" } else { "" },
        w * size,
        x * size,
        of512(x * size),
        w * size,
        of512(w * size),
        w * size,
        of512(w * size),
    );
    println!(
        "tiled kernel: {} blocks of {TILED_THREADS} threads, {} columns each, passes of radix 2^{:?}; strided kernel: {w} blocks of {} threads",
        w >> column_tile(w),
        1 << column_tile(w),
        pass_logs(y.trailing_zeros(), log_lmax(column_tile(w))),
        column_block(y)
    );
    if let Some(b) = col_bound_ns {
        println!("hardware-aware bound of the column phase (with the tiled kernel's serial time): {:.3} ms", ms(b));
    }
    println!(
        "{:>10} {:>31} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "config", "column work", "T ms", "down ms", "kernel ms", "read ms", "Σ down", "Σ kernel", "Σ read"
    );
    let mut rows = Vec::new();
    // The waiting kernel waits as long as the strided kernel takes alone (S = 1 comes first).
    let mut spin_ns = 0;
    for &shape in shapes {
        let mut p = Pipeline::new(backend, cli.gpus, shape, cli.device_timing, x, y, n)?;
        let (s, depth, config) = (p.sched.streams(), p.sched.tuning().stage_depth, shape.name());
        let chunk = x * y / n;
        let probes = Probes::new(&p, 2 * chunk)?;
        // Fills every stream slot's device buffers, so the kernels alone work on data.
        probes.columns(&mut p, ColumnWork::CopiesOnly, input, work, x, y, n)?;
        let kernels = [ColumnKernel::Strided, ColumnKernel::Tiled, ColumnKernel::TiledStreaming];
        let small = chunk.min(1 << 19);
        let works = kernels
            .map(ColumnWork::KernelOnly)
            .into_iter()
            .chain([
                ColumnWork::CopiesOnly,
                ColumnWork::Spin(0),
                ColumnWork::Touch { values: 2 * chunk, streaming: false },
                ColumnWork::Touch { values: 2 * chunk, streaming: true },
                ColumnWork::Touch { values: small, streaming: false },
            ])
            .chain(kernels.map(ColumnWork::Fft))
            .map(|w| (w, Before::Nothing))
            .chain([
                // The two-phase runs' column phase follows the row phase; then after a
                // plain kernel that moves as much data, with the copies only.
                (ColumnWork::Fft(ColumnKernel::TiledStreaming), Before::Rows),
                (ColumnWork::Fft(ColumnKernel::TiledStreaming), Before::Touch(2 * chunk)),
                (ColumnWork::CopiesOnly, Before::Touch(2 * chunk)),
            ]);
        for (mut what, before) in works {
            if let ColumnWork::Spin(_) = what {
                what = ColumnWork::Spin(spin_ns);
            }
            let r = median_columns(&mut p, &probes, what, input, work, cli, before)?;
            let name = format!("{}{}", what.name(), before.suffix());
            if what == ColumnWork::KernelOnly(ColumnKernel::Strided) && spin_ns == 0 {
                spin_ns = stage_median(&r, Stage::Kernel);
            }
            let stages = [Stage::Download, Stage::Kernel, Stage::Readback];
            let med = stages.map(|st| ms(stage_median(&r, st)));
            let sum = stages.map(|st| ms(stage_sum(&r, st)));
            println!(
                "{config:>10} {:>31} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                name,
                r.makespan_ms(),
                med[0],
                med[1],
                med[2],
                sum[0],
                sum[1],
                sum[2]
            );
            rows.push(format!(
                "{},{:.4},{:.4},,,,,,,,{:.4},{:.4},{:.4},,,,,,,,,",
                base(s, depth, &format!("diag_{name}")),
                r.makespan_ms(),
                r.makespan_ms(),
                sum[0],
                sum[1],
                sum[2]
            ));
            if before != Before::Nothing {
                println!("{:>35} each task's download, ms: {}", "", stage_list(&r, Stage::Download));
                println!("{:>35} each task's readback, ms: {}", "", stage_list(&r, Stage::Readback));
            }
        }
    }
    if spin_ns > 0 {
        println!("copies+spin: a kernel of one block that waits {:.3} ms (the strided kernel's median alone, S = 1) and touches no memory", ms(spin_ns));
    }
    println!("copies+touch<size>[-cs]: a kernel that reads and rewrites that much of a buffer the copies never use (-cs: cache-streaming)");
    println!("_after_rows, _after_touch<size>: the row phase (cuFFT) or the plain touching kernel runs before each column phase");
    Ok(rows)
}
