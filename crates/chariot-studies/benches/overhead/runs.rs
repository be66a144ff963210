//! The runs of one point (sizes, seed, r): for each D, the one-GPU baselines or the
//! static split, chariot's configurations (defaults and the grid) alternated over
//! the timed batches, each checked element by element, and the hardware-aware
//! bounds each run is checked against.
//!
//! Why this file is long: one point's runs are one protocol (warm-up, the alternation of
//! every system over the timed batches, each run checked against the reference and its
//! bound); the pieces they are made of are in plan.rs.

use crate::csv::Row;
use crate::plan::{
    below_bound, bound_for, chunk_ranges, note, static_groups, submit_batch, work, work_at_most, Machine, Variant,
};
use crate::ranks::Ranks;
use crate::Cli;
use chariot::report::{LinkRates, TaskWork};
use chariot::{Arg, Backend, Builder, HostBuffer, Kernel, Order, Scheduler};
use chariot_studies::baseline::{self, Baseline};
use chariot_studies::demo::{self, mismatches};
use indicatif::ProgressBar;
use std::ops::Range;
use std::time::Instant;

/// The static split: one host thread per GPU, each running the breadth-first pipeline
/// with `s` streams over its contiguous share of the chunks into its own output
/// buffer, all started together. Returns the slowest thread's timed run (ms) and how
/// much the threads' timed runs overlapped (their common stretch over the longest).
///
/// Each thread's `baseline::shift_started_by` warms up, waits for the others at a
/// barrier, then times its run, so the timed runs start together. (Before, each thread
/// warmed up again after the barrier; with NVRTC and module loading in between, the
/// timed runs of 9 ms did not overlap at all on 2 × H200, and each GPU had the host to
/// itself. The note that said so was lost: `ProgressBar::println` prints nothing when
/// the output is not a terminal.) The overlap is printed when under 90%.
pub fn static_split(
    ordinals: &[usize],
    s: usize,
    input: &HostBuffer<u32>,
    outputs: &mut [&mut HostBuffer<u32>],
    chunks: &[Range<usize>],
    iters: u32,
) -> Result<(f64, f64), String> {
    let d = ordinals.len();
    let groups = static_groups(chunks, d);
    for out in outputs.iter_mut() {
        demo::poison(out, 0xdead_beef);
    }
    let barrier = std::sync::Barrier::new(d);
    let epoch = Instant::now();
    let results: Vec<Result<(u64, f64), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = outputs
            .iter_mut()
            .zip(&groups)
            .zip(ordinals)
            .map(|((out, group), &ordinal)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    // Each thread warms up, then waits for the others at the barrier, so
                    // the timed runs start together and both GPUs copy at once.
                    let timed = baseline::shift_started_by(
                        Baseline::BreadthFirst,
                        ordinal,
                        s,
                        input,
                        out,
                        group,
                        iters,
                        barrier,
                    )
                    .map_err(|e| format!("static split, GPU {ordinal}: {e}"));
                    // Placed by when its last result came, not by when the thread got
                    // back: tearing a run down (freeing its memory) takes time of its own.
                    timed.map(|t| (t.wall_ns, t.ended.saturating_duration_since(epoch).as_secs_f64()))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("static split thread panicked".into()))).collect()
    });
    let mut spans = Vec::new();
    for r in results {
        let (wall_ns, end) = r?;
        spans.push((end - wall_ns as f64 / 1e9, end));
    }
    for (out, group) in outputs.iter().zip(&groups) {
        let bad: usize = group.iter().map(|c| mismatches(input, out, c.clone(), iters)).sum();
        if bad > 0 {
            return Err(format!("static split D {d} S {s}: {bad} wrong elements"));
        }
    }
    let longest = spans.iter().map(|(a, b)| b - a).fold(0.0, f64::max);
    let common = spans.iter().map(|s| s.1).fold(f64::INFINITY, f64::min)
        - spans.iter().map(|s| s.0).fold(f64::NEG_INFINITY, f64::max);
    Ok((longest * 1e3, (common / longest).clamp(0.0, 1.0)))
}

/// What every run of the study shares: the options, the backend they chose, the
/// pinning values.
pub struct Study<'a> {
    pub cli: &'a Cli,
    pub backend: Backend,
    pub pins: Vec<bool>,
    /// On sim with --sim-link: timing only (outputs are not computed or checked).
    pub predicting: bool,
    /// The ranks under mpirun (one alone).
    pub ranks: &'a Ranks,
}

impl Study<'_> {
    /// The shift kernel, with the cost measured on the GPU where --sim-kernel gives it.
    pub fn shift(&self) -> Kernel {
        let (a, b) = self.sim_kernel_model();
        demo::shift_kernel_costing(a, b)
    }

    /// The shift kernel's modeled cost on the sim, a + b·iters ns per element: what
    /// --sim-kernel gives, else the sim's default rate ([`demo::shift_kernel`]'s).
    pub fn sim_kernel_model(&self) -> (f64, f64) {
        match &self.cli.sim_kernel {
            Some(k) => (k[0], k[1]),
            None => (0.0, 1e9 / demo::SIM_SHIFT_RATE),
        }
    }

    /// On a sim that predicts a GPU (timing only), the rates its profile models: the
    /// link alone and the host with `d` GPUs copying. The bound takes these, not a
    /// probe's: a probe on a loaded CPU reads the engines' delays as slower rates and
    /// a costlier kernel, and would set the bound above what the modeled GPU can do.
    pub fn modeled(&self, sched: &Scheduler) -> Option<(LinkRates, LinkRates)> {
        self.predicting.then(|| sched.modeled_rates()).flatten()
    }

    // B is always given explicitly, so that the sim's profile cannot change it: the
    // default is one bus per GPU, as the CUDA backend has it.
    pub fn build(
        &self,
        d: usize,
        s: usize,
        depth: usize,
        order: Order,
        pin: bool,
        buses: usize,
    ) -> Result<Scheduler, String> {
        self.builder(d, s, depth, order, pin, buses).build().map_err(|e| e.to_string())
    }

    /// The builder of [`Study::build`], for the variants that set more.
    fn builder(&self, d: usize, s: usize, depth: usize, order: Order, pin: bool, buses: usize) -> Builder {
        Scheduler::builder()
            .backend(self.backend.clone())
            .gpus(d)
            .streams(s)
            .stage_depth(depth)
            .order(order)
            .pin_dispatchers(pin)
            .buses(buses)
    }

    /// The grid's builder: every knob set by hand, nothing adapted. One process's (so
    /// for the probes under mpirun too); `Ranks::join` puts it in the ranks' stream.
    #[allow(clippy::too_many_arguments)]
    pub fn hand(
        &self,
        d: usize,
        s: usize,
        depth: usize,
        order: Order,
        pin: bool,
        buses: usize,
        k: Option<usize>,
    ) -> Builder {
        let b = self.builder(d, s, depth, order, pin, buses).adapt(false);
        match k {
            Some(k) => b.kernel_concurrency(k),
            None => b,
        }
    }

    /// chariot's defaults: only the GPUs (and the sim's profile) given; in the ranks'
    /// task stream under mpirun.
    pub fn build_default(&self, d: usize) -> Result<Scheduler, String> {
        self.ranks.join(Scheduler::builder().backend(self.backend.clone()).gpus(d)).build().map_err(|e| e.to_string())
    }

    /// Whether the hand-set grid runs: not with --no-grid, and under mpirun only with
    /// --no-default (a grid of one: one scheduler of a process is in the stream at a time).
    pub fn grid(&self) -> bool {
        !self.cli.no_grid && (self.cli.no_default || !self.ranks.many())
    }

    /// The variants (pinning, buses) of each grid configuration at `m` and ratio `r`.
    pub fn variants(&self, m: &Machine, r: f64) -> Vec<Variant> {
        let (cli, pins) = (self.cli, &self.pins);
        let mut v: Vec<Variant> = Vec::new();
        // Each scheduler's own GPUs: a rank's under mpirun.
        let d = m.gpus / m.ranks;
        for mode in &cli.buses {
            let buses = match mode.as_str() {
                "default" => d,
                "calibrated" => m.calibrated_buses,
                n => n.parse::<usize>().map_or(d, |n| n.clamp(1, d)),
            };
            if !v.iter().any(|x| x.buses == buses) {
                v.push(Variant { pin: pins[0], bus_mode: mode.clone(), buses });
            }
        }
        let first = v[0].clone();
        if cli.pin_ratios.as_ref().is_none_or(|rs| rs.contains(&r)) {
            for &p in &pins[1..] {
                v.push(Variant { pin: p, ..first.clone() });
            }
        }
        v
    }
}

/// What the calibration measured on one GPU, and the host buffers every run uses.
pub struct Probe {
    pub on_cuda: bool,
    /// The first GPU's ordinal: the one-GPU baselines run on it.
    pub ordinal: usize,
    pub link: LinkRates,
    /// The kernel's time per element, a + b·iters ns.
    pub model: (f64, f64),
    /// The smallest and the largest chunk, and the largest total, in elements.
    pub min: usize,
    pub max: usize,
    pub total_max: usize,
    pub input: HostBuffer<u32>,
    pub output: HostBuffer<u32>,
}

/// A point of the grid: sizes, random or not, seed, target r.
pub type Point = (String, bool, u64, f64);

/// One point at one D: what its rows share.
struct At<'a> {
    sizes: &'a str,
    seed: u64,
    r: f64,
    r_model: f64,
    iters: u32,
    chunks: &'a [Range<usize>],
    tasks: &'a [TaskWork],
    d: usize,
    bound: f64,
    limit: String,
}

impl At<'_> {
    /// A row of this point and D, as a baseline has it (chariot's rows fill in more).
    fn row(&self, system: &str, s: usize, wall: f64, makespan: f64) -> Row {
        Row {
            sizes: self.sizes.to_string(),
            seed: self.seed,
            r_target: self.r,
            r_model: self.r_model,
            iters: self.iters,
            system: system.to_string(),
            streams: s,
            order: String::new(),
            depth: 0,
            wall_ms: wall,
            makespan_ms: makespan,
            bound_ms: self.bound,
            serial_ms: 0.0,
            paper_eps: f64::NAN,
            runtime_us: f64::NAN,
            gpus: self.d,
            pin: String::new(),
            bus_mode: String::new(),
            buses: self.d,
            paper_bound_ms: f64::NAN,
            limit: self.limit.clone(),
            static_ms: f64::NAN,
            tasks_per_gpu: String::new(),
            config: String::new(),
            kernels: String::new(),
            rep: 0,
        }
    }
}

/// Runs one point at each D: the baselines, chariot's configurations, each row's
/// bound; then fills in serial and the static split, and adds the runs below their
/// bound to `below`. Returns the point's rows.
#[allow(clippy::too_many_arguments)]
pub fn run_point(
    study: &Study,
    probe: &mut Probe,
    machines: &[Machine],
    baselines: &[Baseline],
    split_outputs: &mut [HostBuffer<u32>],
    gpu_iters: &[Row],
    bar: &ProgressBar,
    (sizes, random, seed, r): Point,
    below: &mut Vec<String>,
) -> Result<Vec<Row>, String> {
    let cli = study.cli;
    let (link, (a, b)) = (probe.link, probe.model);
    let kernel_ns = |n: usize, iters: u32| n as f64 * (a + b * iters as f64);
    let chunks = chunk_ranges(cli.chunks, probe.min, probe.max, random, seed);
    let mean = chunks.iter().map(|c| c.len()).sum::<usize>() / chunks.len();
    let copy_ns = mean as f64 * 4.0 * (1.0 / link.up + 1.0 / link.down);
    let iters = cli.iters.unwrap_or_else(|| {
        gpu_iters
            .iter()
            .find(|g| g.sizes == sizes && g.seed == seed && g.r_target == r)
            .map_or_else(|| (((copy_ns / r) / mean as f64 - a) / b).clamp(0.0, 4e9) as u32, |g| g.iters)
    });
    let r_model = copy_ns / kernel_ns(mean, iters);
    let tasks = work(&chunks, iters, (a, b));
    // The kernels' own best: this point's kernels alone, back to back on one GPU at
    // the most concurrency it allows, fastest of 3. No pipeline runs them faster, so
    // the bound's kernel times take this where the fitted model (an extrapolation
    // from two probes) says more.
    // Under mpirun rank 0 measures it and every rank takes it: their tasks must agree.
    let kernels_alone = if study.predicting {
        f64::INFINITY
    } else {
        let mine = if study.ranks.rank() == 0 { kernels_alone(study, probe.max, &chunks, iters)? } else { 0.0 };
        study.ranks.share(&[mine]).first().copied().unwrap_or(mine)
    };
    let tasks = work_at_most(&tasks, &chunks, kernels_alone);
    let mut point = Vec::new();
    for m in machines {
        let d = m.gpus;
        let hw = bound_for(&tasks, d, link, m.host);
        let bound = hw.t_ns as f64 / 1e6;
        bar.set_message(format!("{sizes} seed {seed} r {r} D {d}"));
        let at = At {
            sizes: &sizes,
            seed,
            r,
            r_model,
            iters,
            chunks: &chunks,
            tasks: &tasks,
            d,
            bound,
            limit: hw.limit.to_string(),
        };
        if d == 1 {
            one_gpu_baselines(study, probe, baselines, &at, bar, &mut point)?;
        } else if !baselines.is_empty() {
            static_splits(study, probe, m, split_outputs, &at, bar, &mut point)?;
        }
        chariot_runs(study, probe, m, &at, bar, &mut point)?;
    }
    // Serial is one GPU's: the speedups of every D are over it.
    let serial = point.iter().find(|p| p.system == "serial").map(|p| p.wall_ms);
    let serial = serial
        .or_else(|| point.iter().find(|p| p.system == "chariot" && p.gpus == 1 && p.streams == 1).map(|p| p.wall_ms))
        .unwrap_or(f64::NAN);
    let best_static = |d: usize| {
        point.iter().filter(|p| p.system == "static-split" && p.gpus == d).map(|p| p.wall_ms).fold(f64::NAN, f64::min)
    };
    let statics: Vec<(usize, f64)> = machines.iter().map(|m| (m.gpus, best_static(m.gpus))).collect();
    for p in point.iter_mut() {
        p.serial_ms = serial;
        p.static_ms = statics.iter().find(|s| s.0 == p.gpus).map_or(f64::NAN, |s| s.1);
    }
    // Under mpirun only rank 0's rows time the whole stream.
    for warning in below_bound(&point).into_iter().filter(|_| study.ranks.rank() == 0) {
        note(bar, format!("WARNING below the hardware bound: {warning}"));
        below.push(warning);
    }
    Ok(point)
}

/// The kernels of a point alone on one GPU, at the most concurrency it allows: the
/// fastest of 4 batches, ns per element.
fn kernels_alone(study: &Study, max: usize, chunks: &[Range<usize>], iters: u32) -> Result<f64, String> {
    let sched = study.hand(1, 16, 2, Order::Fcfs, true, 1, Some(16)).build().map_err(|e| e.to_string())?;
    let k = sched.register_kernel(study.shift()).map_err(|e| e.to_string())?;
    let (d_in, d_out) =
        (sched.alloc::<u32>(max).map_err(|e| e.to_string())?, sched.alloc::<u32>(max).map_err(|e| e.to_string())?);
    let total: usize = chunks.iter().map(|c| c.len()).sum();
    let mut best = f64::INFINITY;
    for _ in 0..4 {
        for (i, c) in chunks.iter().enumerate() {
            let n = c.len() as u32;
            let args = [Arg::buffer(&d_out), Arg::buffer(&d_in), Arg::u32(n), Arg::u32(iters)];
            sched
                .task(i as u64, 1)
                .launch(&k, n.div_ceil(demo::BLOCK), demo::BLOCK, 0, &args)
                .submit()
                .map_err(|e| e.to_string())?;
        }
        let report = sched.synchronize().map_err(|e| e.to_string())?;
        best = best.min(report.makespan_ns as f64 / total as f64);
    }
    Ok(best)
}

/// At D = 1: each hand-written baseline for each S (serial at S = 1 only).
fn one_gpu_baselines(
    study: &Study,
    probe: &mut Probe,
    baselines: &[Baseline],
    at: &At,
    bar: &ProgressBar,
    point: &mut Vec<Row>,
) -> Result<(), String> {
    let (input, output) = (&probe.input, &mut probe.output);
    let (chunks, iters) = (at.chunks, at.iters);
    for &bl in baselines {
        let ss: Vec<usize> = if bl == Baseline::Serial { vec![1] } else { study.cli.streams.clone() };
        for s in ss {
            demo::poison(output, 0xdead_beef);
            let t = baseline::shift(bl, probe.ordinal, s, input, output, chunks, iters).map_err(|e| e.to_string())?;
            let bad: usize = chunks.iter().map(|c| mismatches(input, output, c.clone(), iters)).sum();
            if bad > 0 {
                return Err(format!("{} S={s}: {bad} wrong elements", bl.name()));
            }
            let ms = t.wall_ns as f64 / 1e6;
            point.push(at.row(bl.name(), s, ms, ms));
            bar.inc(1);
        }
    }
    Ok(())
}

/// At D > 1: the static split for each S, with a note where its GPUs' timed runs
/// overlapped under 90%.
fn static_splits(
    study: &Study,
    probe: &mut Probe,
    m: &Machine,
    split_outputs: &mut [HostBuffer<u32>],
    at: &At,
    bar: &ProgressBar,
    point: &mut Vec<Row>,
) -> Result<(), String> {
    let (input, output) = (&probe.input, &mut probe.output);
    let (sizes, seed, r, d) = (at.sizes, at.seed, at.r, at.d);
    for &s in &study.cli.streams {
        let mut outs: Vec<&mut HostBuffer<u32>> =
            std::iter::once(&mut *output).chain(split_outputs.iter_mut()).take(d).collect();
        let (ms, overlap) = static_split(&m.ordinals, s, input, &mut outs, at.chunks, at.iters)?;
        if overlap < 0.9 {
            note(
                bar,
                format!(
                    "note: static split D {d} S {s} ({sizes} seed {seed} r {r}): the GPUs' timed runs overlapped {:.0}%",
                    overlap * 100.0
                ),
            );
        }
        point.push(at.row("static-split", s, ms, ms));
        bar.inc(1);
    }
    Ok(())
}

/// Every chariot configuration of a point at one D, the defaults then the grid: each
/// warmed up once, then the timed batches alternated between them, each checked and
/// given its own bound. Then the baselines' bounds at this D take the rates chariot's
/// copies reached, and with --trace --out the fastest run's trace is written.
fn chariot_runs(
    study: &Study,
    probe: &mut Probe,
    m: &Machine,
    at: &At,
    bar: &ProgressBar,
    point: &mut Vec<Row>,
) -> Result<(), String> {
    let (cli, predicting) = (study.cli, study.predicting);
    let (input, output) = (&probe.input, &mut probe.output);
    let (link, max) = (probe.link, probe.max);
    let (sizes, seed, r, d) = (at.sizes, at.seed, at.r, at.d);
    let (chunks, tasks, iters) = (at.chunks, at.tasks, at.iters);
    let ranks = study.ranks;
    // What each scheduler runs on: this rank's GPUs (all D in one process).
    let own = d / m.ranks;
    let mut fastest_trace: Option<(f64, String)> = None;
    // Every chariot configuration of this point: the defaults, then the grid.
    struct Config {
        sched: Scheduler,
        kernel: chariot::kernel::KernelHandle,
        d_in: chariot::DeviceBuffer<u32>,
        d_out: chariot::DeviceBuffer<u32>,
        default: bool,
        order: String,
        variant: Variant,
        kernels: Option<usize>,
    }
    let mut configs: Vec<Config> = Vec::new();
    let mut add = |sched: Scheduler, default: bool, order: &str, variant: Variant, kernels: Option<usize>| {
        let kernel = sched.register_kernel(study.shift()).map_err(|e| e.to_string())?;
        let d_in = sched.alloc::<u32>(max).map_err(|e| e.to_string())?;
        let d_out = sched.alloc::<u32>(max).map_err(|e| e.to_string())?;
        configs.push(Config { sched, kernel, d_in, d_out, default, order: order.into(), variant, kernels });
        Ok::<(), String>(())
    };
    if !cli.no_default {
        let v = Variant { pin: true, bus_mode: "default".into(), buses: own };
        add(study.build_default(own)?, true, "fcfs", v, None)?;
    }
    let kernel_grid: Vec<Option<usize>> =
        if cli.kernels.is_empty() { vec![None] } else { cli.kernels.iter().map(|&k| Some(k)).collect() };
    for &depth in cli.depths.iter().filter(|_| study.grid()) {
        for &o in &cli.orders {
            for &s in &cli.streams {
                for &k in &kernel_grid {
                    for v in study.variants(m, r) {
                        let b = study.hand(own, s, depth, o, v.pin, v.buses, k);
                        let sched = study.ranks.join(b).build().map_err(|e| e.to_string())?;
                        add(sched, false, o.name(), v, k)?;
                    }
                }
            }
        }
    }
    // The first batch of each touches device memory and the context's first
    // copies from these host buffers (on 2 × H200 a cold first batch ran up to
    // 10% slower at D = 2): a warm-up, as the baselines have. Then the timed
    // batches, alternated: each repetition visits every configuration, starting
    // from another one. Outputs poisoned before each batch and checked after it.
    // Under mpirun the ranks start each batch together, rank 0's `synchronize`
    // returns once every rank's part has ended, and its output then gathers theirs.
    let run_batch = |c: &Config, output: &mut HostBuffer<u32>| -> Result<(chariot::report::Report, f64), String> {
        if !predicting {
            demo::poison(output, 0xdead_beef);
        }
        ranks.barrier();
        let t0 = Instant::now();
        submit_batch(&c.sched, &c.kernel, &c.d_in, &c.d_out, input, output, chunks, iters)?;
        let report = c.sched.synchronize().map_err(|e| e.to_string())?;
        let wall = t0.elapsed().as_secs_f64() * 1e3;
        ranks.gather(&c.sched, output)?;
        Ok((report, wall))
    };
    for c in &configs {
        run_batch(c, output)?;
    }
    // What chariot's copies achieved at this point and D: the baselines' bounds
    // take it too (they keep no records, and run on the same machine).
    let (mut seen_link, mut seen_host) = (link, m.host);
    for rep in 0..cli.repeat {
        for i in 0..configs.len() {
            let c = &configs[(i + rep) % configs.len()];
            let (report, wall) = run_batch(c, output)?;
            // Rank 0 holds every rank's outputs; another rank only its own.
            let bad: usize = if predicting || ranks.rank() != 0 {
                0
            } else {
                chunks.iter().map(|c| mismatches(input, output, c.clone(), iters)).sum()
            };
            let t = c.sched.tuning();
            let (s, depth) = (t.streams, t.stage_depth);
            let pin_name = if c.variant.pin { "on" } else { "off" };
            let kernels = c.kernels.map_or("fill".to_string(), |k| k.to_string());
            let which = if c.default { "default" } else { "hand" };
            let config = format!(
                "D {d} {which} S {s} {} depth {depth} kernels {kernels} pin {pin_name} B {}",
                c.order, c.variant.buses
            );
            if bad > 0 {
                return Err(format!("chariot {config}: {bad} wrong elements"));
            }
            let mut row = at.row("chariot", s, wall, report.makespan_ms());
            // This run's own bound: the probed rates raised to what its copies
            // did, on one link and on the host (no run beats its own copies).
            let own_link = link.at_least(LinkRates::observed(&report.records));
            let own_host = m.host.at_least(LinkRates::observed_host(&report.records));
            let own = bound_for(tasks, d, own_link, if d == 1 { own_link } else { own_host });
            seen_link = seen_link.at_least(own_link);
            seen_host = seen_host.at_least(own_host);
            row.bound_ms = own.t_ns as f64 / 1e6;
            row.limit = own.limit.to_string();
            row.order = c.order.clone();
            row.depth = depth;
            row.pin = pin_name.to_string();
            row.bus_mode = c.variant.bus_mode.clone();
            row.buses = report.buses;
            row.paper_eps = report.epsilon.unwrap_or(f64::NAN);
            row.paper_bound_ms = report.lower_bound.t_lb_ns as f64 / 1e6;
            row.runtime_us = report.dispatch.runtime_ns_per_command() / 1e3;
            row.tasks_per_gpu = report.tasks_per_gpu.iter().map(|n| n.to_string()).collect::<Vec<_>>().join("/");
            row.config = which.to_string();
            row.kernels = kernels;
            row.rep = rep;
            if cli.trace && fastest_trace.as_ref().is_none_or(|t| wall < t.0) {
                fastest_trace = Some((wall, report.chrome_trace()));
            }
            point.push(row);
            bar.inc(1);
        }
    }
    drop(configs);
    let seen = bound_for(tasks, d, seen_link, if d == 1 { seen_link } else { seen_host });
    for p in point.iter_mut().filter(|p| p.system != "chariot" && p.gpus == d) {
        p.bound_ms = seen.t_ns as f64 / 1e6;
        p.limit = seen.limit.to_string();
    }
    // Under mpirun rank 0's trace holds every rank's GPUs; it alone writes.
    if let (Some(dir), Some((_, json)), 0) = (&cli.out, fastest_trace, ranks.rank()) {
        let file = dir.join(format!("trace-{sizes}-{seed}-r{r}-d{d}.json"));
        std::fs::write(&file, json).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(())
}
