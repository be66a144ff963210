//! A whole run (`run_all`): the arguments checked, the host matrix, the rustfft reference,
//! the rate probes, the timed two-phase runs and their table, the copies-only runs, the
//! diagnosis and the in-core way.

use chariot::report::{HardwareBound, Report};
use chariot::sim::SimProfile;
use chariot::{Backend, HostBuffer, Scheduler, Stage};
use chariot_fft::{FftPlans, FftShape};
use std::time::Instant;

use crate::bounds::{below_bounds, check_bounds, probe_phases, run_bounds, serial_bounds};
use crate::diagnose::diagnose;
use crate::fft::{cpu_reference, ColumnKernel};
use crate::probes::run_copies_only;
use crate::report::{ms, print_default_vs_best, print_table2, print_table_header, stage_list, stage_sum, Outcome};
use crate::shape::Shape;
use crate::signal::{check, check_peaks, error_bound, fill_signal, threads_default};
use crate::{err, Cli, Pipeline, Run, C};

pub(crate) fn validate(cli: &Cli) -> Result<(), String> {
    let pow2 = |v: usize, name: &str| {
        if v.is_power_of_two() {
            Ok(())
        } else {
            Err(format!("--{name} {v} must be a power of two"))
        }
    };
    pow2(cli.x, "x")?;
    pow2(cli.y, "y")?;
    pow2(cli.tasks, "tasks")?;
    if cli.x < 16 || cli.y < 16 || cli.tasks > cli.x.min(cli.y) {
        return Err(format!("need x, y ≥ 16 and tasks ≤ min(x, y); got {} × {}, {} tasks", cli.x, cli.y, cli.tasks));
    }
    // x·y elements of 8 bytes must be addressable: checked before any product is formed.
    let elements = cli.x.checked_mul(cli.y).filter(|&e| e.checked_mul(8).is_some_and(|b| b <= isize::MAX as usize));
    let Some(elements) = elements else {
        return Err(format!("--x {} × --y {} complex elements do not fit in memory's address space", cli.x, cli.y));
    };
    if (elements / cli.tasks) > i32::MAX as usize || cli.y > u32::MAX as usize {
        return Err("a chunk must stay under 2^31 elements (cuFFT's 32-bit plans)".into());
    }
    ColumnKernel::from_name(&cli.kernel)?;
    if cli.streams.is_empty() || cli.gpus == 0 || cli.depth == Some(0) || cli.repeat == 0 {
        return Err("--streams must name a configuration; --gpus, --depth and --repeat must be positive".into());
    }
    Ok(())
}

pub(crate) fn run_all(cli: &Cli) -> Result<Outcome, String> {
    validate(cli)?;
    let (x, y, n) = (cli.x, cli.y, cli.tasks);
    let threads = cli.cpu_threads.unwrap_or_else(threads_default).max(1);
    let kernel = ColumnKernel::from_name(&cli.kernel)?;
    let backend = Backend::from_name(&cli.backend, SimProfile::h100().with_time_scale(cli.sim_scale))
        .map_err(|e| e.to_string())?;
    let shapes = configurations(cli);

    // Host memory: the input, the working matrix (both pinned) and the reference.
    let owner = Scheduler::builder().backend(backend.clone()).gpus(cli.gpus).streams(1).build().map_err(err)?;
    let device = owner.gpu_info()[0].name.clone();
    let bytes = x * y * 8;
    println!(
        "seti: {x} × {y} complex f32 ({:.1} MiB), N = {n} tasks per phase, D = {}, backend {} ({device}), {threads} CPU threads, column kernel {}",
        bytes as f64 / 1048576.0,
        cli.gpus,
        owner.backend_name(),
        kernel.name()
    );
    let t0 = Instant::now();
    let mut input = owner.alloc_host::<C>(x * y).map_err(err)?;
    let mut work = owner.alloc_host::<C>(x * y).map_err(err)?;
    fill_signal(&mut input.write(), x, y, cli.seed, threads);
    println!("pinned host buffers allocated and filled in {:.2} s", t0.elapsed().as_secs_f64());

    let chunk_bytes = x * y / n * 8;
    let mut rows = Vec::new();
    let base = |s: usize, depth: usize, way: &str| {
        format!("{},{},{x},{y},{n},{},{s},{depth},{way}", owner.backend_name(), device.replace(',', " "), cli.gpus)
    };
    if cli.diagnose_only {
        rows.extend(diagnose(cli, &backend, &input, &work, &shapes, &base, None)?);
        return Ok(Outcome::with_kernel(rows, &cli.kernel));
    }

    // (c) rustfft on every core: also the reference.
    let (reference, t_cpu) = cpu_reference(&input, x, y, threads);
    check_peaks(&reference, x, y).map_err(|e| format!("the CPU reference itself: {e}"))?;
    println!("rustfft 2-D on {threads} threads: {:.1} ms (the reference; its peaks check)", ms(t_cpu));

    rows.push(format!("{},{:.4},,,{:.4},,,,,,,,,,,,,,,{threads},,", base(0, 0, "cpu_rustfft"), ms(t_cpu), ms(t_cpu)));

    let (rates_col, rates_row, bounded) = probe_phases(&backend, &input, &work, x, y, n)?;

    let mut serial: Option<Run> = None;
    let mut bound: Option<(HardwareBound, HardwareBound)> = None;
    // The same bound at the rates of one copy at a time (the serial run's median copy
    // times; both directions together at most the probe's both-ways rate).
    let mut bound1: Option<(HardwareBound, HardwareBound)> = None;
    // Each phase against its own bound, per S (one GPU).
    let mut phases: Vec<String> = Vec::new();
    print_table_header();
    let (pipelines, timed) = timed_runs(cli, &backend, &shapes, kernel, &input, &work, &reference, threads)?;
    // Each run against its bound: the probed rates raised to what its own copies did.
    let mut below = Vec::new();
    let mut alone: Option<(u64, u64)> = None;
    let mut medians = Vec::new();
    let mut chosen: Vec<String> = Vec::new();
    for (c, runs) in timed.into_iter().enumerate() {
        let p = &pipelines[c];
        let name = shapes[c].name();
        let s = p.sched.streams();
        let depth = p.sched.tuning().stage_depth;
        let gpu_mem = p.sched.device_memory_in_use(0);
        let e = runs.iter().map(|(_, e)| *e).fold(0.0, f64::max);
        let runs: Vec<Run> = runs.into_iter().map(|(r, _)| r).collect();
        let run = runs[runs.len() / 2].clone();
        medians.push(run.t_ns());
        if shapes[c] == Shape::AUTO {
            // What chariot chose and why, as its reports print it (the median run's).
            for line in run.col.tuning.iter().chain(&run.row.tuning) {
                if !chosen.contains(line) {
                    chosen.push(line.clone());
                }
            }
            let adapted = run.col.adaptations.iter().chain(&run.row.adaptations);
            chosen.extend(adapted.map(|a| format!("adapted: {a}")));
        }
        if c == 0 {
            let (a, b, b1) = serial_bounds(p, &run, kernel, cli.gpus, x, y, n, chunk_bytes, rates_col, rates_row);
            (alone, bound, bound1) = (Some(a), Some(b), Some(b1));
        }
        if let Some(alone) = alone.filter(|_| bounded) {
            below.extend(below_bounds(&runs, &name, alone, chunk_bytes as u64, n, cli.gpus, rates_col, rates_row));
        }
        let t = run.t_ns();
        let t_serial = serial.as_ref().map_or(t, |r| r.t_ns());
        // This run's own bound (the probed rates raised to its copies'), as checked above.
        let own = alone.map(|(k_col, k_row)| {
            run_bounds(&run, k_col, k_row, chunk_bytes as u64, n, cli.gpus, rates_col, rates_row)
        });
        let (hw_ms, eps_hw) = match own.as_ref().or(bound.as_ref()) {
            Some((bc, br)) => {
                let b = bc.t_ns + br.t_ns;
                (format!("{:.4}", ms(b)), Some(t as f64 / b.max(1) as f64 - 1.0))
            }
            _ => (String::new(), None),
        };
        let (hw1_ms, eps_hw1) = match &bound1 {
            Some((bc, br)) => {
                let b = bc.t_ns + br.t_ns;
                (format!("{:.4}", ms(b)), Some(t as f64 / b.max(1) as f64 - 1.0))
            }
            _ => (String::new(), None),
        };
        if let Some((bc, br)) = own.as_ref() {
            let eps = |t: u64, b: u64| 100.0 * (t as f64 / b.max(1) as f64 - 1.0);
            let (tc, tr) = (run.col.makespan_ns, run.row.makespan_ns);
            phases.push(format!(
                "  {name}: column phase {:.3} ms against {:.3} (eps_hw {:.1}%), row phase {:.3} ms against {:.3} (eps_hw {:.1}%)",
                ms(tc),
                ms(bc.t_ns),
                eps(tc, bc.t_ns),
                ms(tr),
                ms(br.t_ns),
                eps(tr, br.t_ns)
            ));
        }
        let tlb = run.col.lower_bound.t_lb_ns + run.row.lower_bound.t_lb_ns;
        let eps_lb = t as f64 / tlb.max(1) as f64 - 1.0;
        let dev_mib = (2 * cli.gpus * s * chunk_bytes) as f64 / 1048576.0;
        let gpu_mib = gpu_mem.map_or(f64::NAN, |b| b as f64 / 1048576.0);
        println!(
            "{name:>10} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>7.2}x {:>10} {:>7} {:>10} {:>7} {:>10.3} {:>7.1}% {:>11.0} {:>10.0}",
            ms(t),
            run.col.makespan_ms(),
            run.row.makespan_ms(),
            ms(run.wall_ns),
            t_serial as f64 / t as f64,
            if hw_ms.is_empty() { "n/a".to_string() } else { hw_ms.clone() },
            eps_hw.map_or("n/a".to_string(), |e| format!("{:.1}%", e * 100.0)),
            if hw1_ms.is_empty() { "n/a".to_string() } else { hw1_ms.clone() },
            eps_hw1.map_or("n/a".to_string(), |e| format!("{:.1}%", e * 100.0)),
            ms(tlb),
            eps_lb * 100.0,
            dev_mib,
            gpu_mib
        );
        if cli.diagnose {
            println!("{:>8} column phase, each task's download, ms: {}", "", stage_list(&run.col, Stage::Download));
            println!("{:>8} column phase, each task's readback, ms: {}", "", stage_list(&run.col, Stage::Readback));
        }
        let sums = [
            stage_sum(&run.col, Stage::Download),
            stage_sum(&run.col, Stage::Kernel),
            stage_sum(&run.col, Stage::Readback),
            stage_sum(&run.row, Stage::Download),
            stage_sum(&run.row, Stage::Kernel),
            stage_sum(&run.row, Stage::Readback),
        ];
        rows.push(format!(
            "{},{:.4},{:.4},{:.4},{:.4},{:.4},{hw_ms},{},{:.4},{:.5},{},{e:.3e},{dev_mib:.1},{gpu_mib:.0},{threads},{hw1_ms},{}",
            base(s, depth, &if c == 0 { "serial".to_string() } else { format!("pipelined {name}") }),
            ms(t),
            run.col.makespan_ms(),
            run.row.makespan_ms(),
            ms(run.wall_ns),
            t_serial as f64 / t as f64,
            eps_hw.map_or(String::new(), |e| format!("{e:.5}")),
            ms(tlb),
            eps_lb,
            sums.iter().map(|&v| format!("{:.4}", ms(v))).collect::<Vec<_>>().join(","),
            eps_hw1.map_or(String::new(), |e| format!("{e:.5}")),
        ));
        if c == 0 {
            serial = Some(run);
        }
    }
    print_default_vs_best(&shapes, &medians, cli.repeat);
    if !chosen.is_empty() {
        println!("\nchariot's choices (auto), as its report gives them:");
        chosen.iter().for_each(|l| println!("  {l}"));
    }
    check_bounds(bounded, &below, cli.repeat * shapes.len())?;

    // Table 2 of the paper, for this GPU: the serial run's breakdown.
    if let Some(r) = &serial {
        print_table2(r, bound.as_ref(), bound1.as_ref());
    }

    if !phases.is_empty() {
        println!("each phase against its hardware-aware bound:");
        for l in &phases {
            println!("{l}");
        }
    }

    if cli.copies_only {
        rows.extend(copies_only(cli, &backend, &shapes, &input, &work, &base, threads)?);
    }

    if cli.diagnose {
        let col_bound = bound.as_ref().filter(|_| cli.gpus == 1).map(|(bc, _)| bc.t_ns);
        rows.extend(diagnose(cli, &backend, &input, &work, &shapes, &base, col_bound)?);
    }

    // Resident mode against in-core cuFFT, alternated.
    if !cli.no_resident {
        rows.extend(crate::resident::compare(
            &backend,
            &input,
            &mut work,
            &reference,
            (x, y, n, cli.repeat),
            &base,
            threads,
        )?);
    }

    // (b) the in-core way, where the GPU holds the matrix.
    if !cli.no_incore {
        let serial = serial.as_ref();
        rows.extend(compare_in_core(
            &backend,
            &input,
            &mut work,
            &reference,
            (x, y, cli.repeat),
            serial,
            &base,
            threads,
        )?);
    }
    println!(
        "all results match rustfft within {:.2e} (relative L2) and show the tones at their bins",
        error_bound(x, y)
    );
    Ok(Outcome::with_kernel(rows, &cli.kernel))
}

/// The serial baseline first, then each configuration once.
fn configurations(cli: &Cli) -> Vec<Shape> {
    let mut shapes = vec![Shape::streams(1).or_depth(cli.depth)];
    for sh in cli.streams.iter().map(|sh| sh.or_depth(cli.depth)) {
        if !shapes.contains(&sh) {
            shapes.push(sh);
        }
    }
    shapes
}

/// Every configuration built and warmed up once, then timed `repeat` times in turn,
/// each repetition starting from another one; every run's result is checked. The
/// pipelines and, per configuration, its runs with their errors, fastest first.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn timed_runs(
    cli: &Cli,
    backend: &Backend,
    shapes: &[Shape],
    kernel: ColumnKernel,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    reference: &[C],
    threads: usize,
) -> Result<(Vec<Pipeline>, Vec<Vec<(Run, f64)>>), String> {
    let (x, y, n) = (cli.x, cli.y, cli.tasks);
    let mut pipelines = Vec::with_capacity(shapes.len());
    for &shape in shapes {
        let mut p = Pipeline::new(backend, cli.gpus, shape, cli.device_timing, x, y, n)?;
        p.kernel = kernel;
        p.run(input, work, x, y, n)?;
        pipelines.push(p);
    }
    let mut timed: Vec<Vec<(Run, f64)>> = shapes.iter().map(|_| Vec::new()).collect();
    for rep in 0..cli.repeat {
        for i in 0..shapes.len() {
            let c = (i + rep) % shapes.len();
            let r = pipelines[c].run(input, work, x, y, n)?;
            let e = check(&work.read(), reference, x, y, threads).map_err(|e| format!("{}: {e}", shapes[c].name()))?;
            timed[c].push((r, e));
        }
    }
    for runs in timed.iter_mut() {
        runs.sort_by_key(|(r, _)| r.t_ns());
    }
    Ok((pipelines, timed))
}

/// Each configuration with the copies only (no FFT): the result must equal the input.
#[allow(clippy::too_many_arguments)]
fn copies_only(
    cli: &Cli,
    backend: &Backend,
    shapes: &[Shape],
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    base: &dyn Fn(usize, usize, &str) -> String,
    threads: usize,
) -> Result<Vec<String>, String> {
    let (x, y, n) = (cli.x, cli.y, cli.tasks);
    let mut rows = Vec::new();
    println!("\ncopies only (no FFT; the result must equal the input):");
    for &shape in shapes {
        let p = Pipeline::new(backend, cli.gpus, shape, cli.device_timing, x, y, n)?;
        let (s, depth, name) = (p.sched.streams(), p.sched.tuning().stage_depth, shape.name());
        let mut runs = Vec::new();
        for i in 0..=cli.repeat {
            let r = run_copies_only(&p, input, work, x, y, n)?;
            if i > 0 {
                runs.push(r);
            }
        }
        if work.read()[..] != input.read()[..] {
            return Err(format!("copies only, {name}: the result differs from the input"));
        }
        runs.sort_by_key(|r| r.t_ns());
        let run = runs.swap_remove(runs.len() / 2);
        println!(
            "  {name}: T = {:.3} ms (column phase {:.3}, row phase {:.3})",
            ms(run.t_ns()),
            run.col.makespan_ms(),
            run.row.makespan_ms()
        );
        rows.push(format!(
            "{},{:.4},{:.4},{:.4},{:.4},,,,,,,,,,,,,,,{threads},,",
            base(s, depth, "copies_only"),
            ms(run.t_ns()),
            run.col.makespan_ms(),
            run.row.makespan_ms(),
            ms(run.wall_ns)
        ));
    }
    Ok(rows)
}

/// The in-core way, where the GPU holds the matrix, against the serial two-phase run;
/// its CSV row, none where it could not run.
#[allow(clippy::too_many_arguments)]
fn compare_in_core(
    backend: &Backend,
    input: &HostBuffer<C>,
    work: &mut HostBuffer<C>,
    reference: &[C],
    (x, y, repeat): (usize, usize, usize),
    serial: Option<&Run>,
    base: &dyn Fn(usize, usize, &str) -> String,
    threads: usize,
) -> Result<Option<String>, String> {
    let bytes = x * y * 8;
    work.write().fill(C::default());
    match in_core(backend, input, work, x, y, repeat) {
        Ok(r) => {
            let e = check(&work.read(), reference, x, y, threads).map_err(|e| format!("in-core: {e}"))?;
            let (d, k, rb) =
                (stage_sum(&r, Stage::Download), stage_sum(&r, Stage::Kernel), stage_sum(&r, Stage::Readback));
            let t_serial = serial.as_ref().map_or(0, |s| s.t_ns());
            println!(
                "\nin-core (upload whole, cuFFT 2-D, download): T = {:.3} ms (upload {:.3}, FFT {:.3}, download {:.3}); serial two-phase / in-core = {:.2}",
                r.makespan_ms(),
                ms(d),
                ms(k),
                ms(rb),
                t_serial as f64 / r.makespan_ns.max(1) as f64
            );
            return Ok(Some(format!(
                "{},{:.4},,,,{:.4},,,,,{:.4},{:.4},{:.4},,,,{e:.3e},{:.1},,{threads},,",
                base(1, 1, "incore_cufft2d"),
                r.makespan_ms(),
                t_serial as f64 / r.makespan_ns.max(1) as f64,
                ms(d),
                ms(k),
                ms(rb),
                bytes as f64 / 1048576.0
            )));
        }
        Err(e) => println!("\nin-core: could not run ({e})"),
    }
    Ok(None)
}

/// The in-core way: upload the whole matrix, one 2-D transform, download. Returns its
/// report (median of `repeat` after a warm-up) and leaves the spectrum in `work`.
pub(crate) fn in_core(
    backend: &Backend,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    x: usize,
    y: usize,
    repeat: usize,
) -> Result<Report, String> {
    let sched = Scheduler::builder().backend(backend.clone()).streams(1).build().map_err(err)?;
    let plans = FftPlans::new(&sched).map_err(err)?;
    let d = sched.alloc::<C>(x * y).map_err(err)?;
    let mut reports = Vec::new();
    for i in 0..=repeat.max(1) {
        let r = in_core_on(&sched, &plans, &d, input, work, x, y)?;
        if i > 0 {
            reports.push(r);
        }
    }
    reports.sort_by_key(|r| r.makespan_ns);
    Ok(reports.swap_remove(reports.len() / 2))
}

/// One in-core run on `sched` (one stream) with its plans and an x·y device buffer.
pub(crate) fn in_core_on(
    sched: &Scheduler,
    plans: &std::sync::Arc<FftPlans>,
    d: &chariot::DeviceBuffer<C>,
    input: &HostBuffer<C>,
    work: &HostBuffer<C>,
    x: usize,
    y: usize,
) -> Result<Report, String> {
    let shape = FftShape::TwoD { rows: y, cols: x };
    let (p, dd) = (plans.clone(), d.clone());
    sched
        .task(0, (x * y) as u64)
        .download(d, 0, input, ..)
        .gpu_callback(move |call| p.forward(call, &dd, shape))
        .readback(work, .., d, 0)
        .submit()
        .map_err(err)?;
    sched.synchronize().map_err(err)
}
