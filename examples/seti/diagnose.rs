//! The `--diagnose` study of the column phase: what it runs between its copies (no kernel,
//! a waiting kernel, a touching kernel, each column kernel), what runs before it, and the
//! table of its stage times.

use chariot::{Arg, Backend, HostBuffer, Kernel, Param, Report, Stage};
use std::time::Duration;

use crate::fft::{column_block, column_tile, log_lmax, pass_logs, ColumnKernel, TILED_THREADS};
use crate::report::{ms, stage_list, stage_median, stage_sum};
use crate::shape::Shape;
use crate::{err, Cli, Pipeline, C};

/// The diagnosis's kernels, put between the copies in place of the FFT. `spin` only
/// waits: it reads the GPU's nanosecond timer until `ns` have passed and touches no
/// memory. `touch` reads and rewrites `n` complex values of a buffer the copies never
/// use (each value + 1), cache-streaming when `streaming` is set, as the FFT would.
pub(crate) const DIAG_KERNELS: &str = r#"extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
extern "C" __global__ void touch(float2* buf, unsigned long long n, unsigned streaming) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float2 v = streaming ? __ldcs(buf + i) : buf[i];
        v.x += 1.0f;
        if (streaming) __stcs(buf + i, v); else buf[i] = v;
    }
}"#;

/// The waiting kernel: `spin(ns)`, one block; on sim it does nothing for `ns`.
pub(crate) fn spin_kernel() -> Kernel {
    Kernel::new("spin", DIAG_KERNELS)
        .params([Param::U64])
        .cpu_twin(|_| Ok(()))
        .sim_cost(|_, s| Duration::from_nanos(s.u64(0).unwrap_or(0)))
}

/// The touching kernel: `touch(buf, n, streaming)` adds 1 to the real part of the first
/// `n` values of `buf`.
pub(crate) fn touch_kernel() -> Kernel {
    Kernel::new("touch", DIAG_KERNELS)
        .params([Param::Buffer, Param::U64, Param::U32])
        .cpu_twin(|a| {
            let n = usize::try_from(a.u64(1)?)?;
            let buf = a.buffer_mut::<C>(0)?;
            let part = buf.get_mut(..n).ok_or("n exceeds the buffer")?;
            part.iter_mut().for_each(|v| v.re += 1.0);
            Ok(())
        })
        // Modeled: one read and one write of each value at 2 TB/s.
        .sim_cost(|_, s| Duration::from_secs_f64(16.0 * s.u64(1).unwrap_or(0) as f64 / 2e12))
}

/// What the column phase runs between its copies; the diagnosis varies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColumnWork {
    /// The column FFT with this kernel (the example's phase).
    Fft(ColumnKernel),
    /// No kernel: the readback returns what was downloaded. With it the row phase runs
    /// its copies only too.
    CopiesOnly,
    /// The waiting kernel for this many ns, then the readback of what was downloaded.
    Spin(u64),
    /// The touching kernel on this many values of a buffer the copies never use
    /// (cache-streaming or not), then the readback of what was downloaded.
    Touch { values: usize, streaming: bool },
    /// The kernel alone, on what the device buffers hold: no copies.
    KernelOnly(ColumnKernel),
}

impl ColumnWork {
    /// The name in the diagnosis table and the CSV's `way` (after `diag_`).
    pub(crate) fn name(self) -> String {
        match self {
            ColumnWork::Fft(k) => format!("copies+{}", k.name()),
            ColumnWork::CopiesOnly => "copies".into(),
            ColumnWork::Spin(_) => "copies+spin".into(),
            ColumnWork::Touch { values, streaming } => {
                format!("copies+touch{}{}", size_name(values), if streaming { "-cs" } else { "" })
            }
            ColumnWork::KernelOnly(k) => format!("{}_alone", k.name()),
        }
    }
}

/// `values` complex values in MiB (`64M`) or, under 1 MiB, KiB (`8K`).
pub(crate) fn size_name(values: usize) -> String {
    let bytes = values * std::mem::size_of::<C>();
    if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else {
        format!("{}K", bytes >> 10)
    }
}

/// The median of `repeat` runs of the column phase after a warm-up, by makespan.
pub(crate) fn median_columns(
    p: &Pipeline,
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
            Before::Touch(values) => {
                let d = p.d_touch.as_ref().ok_or("the touching kernel has no buffer")?;
                let args = [Arg::buffer(d), Arg::u64(values as u64), Arg::u32(0)];
                p.sched.task(u64::MAX, 1).launch(&p.touch, 264, 1024, 0, &args).submit().map_err(err)?;
                p.sched.synchronize().map_err(err)?;
            }
        }
        let r = p.columns(input, work, cli.x, cli.y, cli.tasks)?;
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
        p.d_touch = Some(p.sched.alloc::<C>(2 * chunk).map_err(err)?);
        // Fills every stream slot's device buffers, so the kernels alone work on data.
        p.work = ColumnWork::CopiesOnly;
        p.columns(input, work, x, y, n)?;
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
            p.work = what;
            let r = median_columns(&p, input, work, cli, before)?;
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
