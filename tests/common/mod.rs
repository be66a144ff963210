//! Shared helpers of chariot's integration tests:
//!
//! * [`with_timeout`]: runs a test body on its own thread and fails the test if it does
//!   not finish in time, so a hang in the runtime is a failure, never a stuck CI run;
//! * [`violations`] / [`check`]: the invariant checker over a [`Report`] (every task
//!   exactly once, in order on one slot, thresholds L and G, overlap matrix M);
//! * [`Workload`]: a deterministic pipeline of tasks (downloads, kernels with CPU twins,
//!   readbacks, CPU and GPU callbacks) with its CPU reference, for both backends.
//!
//! Every test binary uses part of this module only.
#![allow(dead_code)]

use chariot::{
    Arg, BoxError, CallInfo, CommandRecord, DeviceBuffer, GpuCall, HostBuffer, Kernel, KernelHandle, Order,
    OverlapMatrix, Param, Report, Resource, Scheduler, Stage, TaskId, Thresholds,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// Deadline
// ---------------------------------------------------------------------------------------

/// Runs `body` on a fresh thread and waits at most `secs` seconds for it. A panic in the
/// body is re-raised here (with its own message); running past the deadline panics with
/// a message saying the runtime hung. The hung thread is left behind (it cannot be
/// killed), which is harmless: the test binary exits when its tests are done.
pub fn with_timeout<F>(secs: u64, body: F)
where
    F: FnOnce() + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name("test-body".into())
        .spawn(move || {
            body();
            let _ = tx.send(());
        })
        .expect("spawning the test body thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => handle.join().expect("the body finished"),
        // The sender was dropped without sending: the body panicked.
        Err(RecvTimeoutError::Disconnected) => {
            if let Err(payload) = handle.join() {
                std::panic::resume_unwind(payload);
            }
        }
        Err(RecvTimeoutError::Timeout) => panic!(
            "the test did not finish within {secs} s: the runtime hung \
             (deadlock or lost wake-up), or a callback never returned"
        ),
    }
}

// ---------------------------------------------------------------------------------------
// Invariant checker
// ---------------------------------------------------------------------------------------

/// What the checker expects of one submitted task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    /// The task's id.
    pub id: u64,
    /// The granularity it was submitted with.
    pub granularity: u64,
    /// The stage of each of its commands, in order.
    pub stages: Vec<Stage>,
    /// `Some(c)`: command `c` fails (so commands `0..=c` are recorded, `c` as failed).
    pub fails_at: Option<usize>,
}

impl TaskSpec {
    pub fn new(id: u64, granularity: u64, stages: &[Stage]) -> Self {
        TaskSpec { id, granularity, stages: stages.to_vec(), fails_at: None }
    }

    pub fn failing_at(mut self, command: usize) -> Self {
        self.fails_at = Some(command);
        self
    }
}

/// The configuration a report must respect.
#[derive(Clone, Debug)]
pub struct Limits {
    /// D.
    pub gpus: usize,
    /// S.
    pub streams: usize,
    /// L and G.
    pub thresholds: Thresholds,
    /// M of each GPU (`None`: not checked).
    pub matrices: Vec<Option<OverlapMatrix>>,
}

impl Limits {
    /// The limits a scheduler runs under.
    pub fn of(sched: &Scheduler) -> Self {
        let gpus = sched.gpu_count();
        Limits {
            gpus,
            streams: sched.streams(),
            thresholds: sched.thresholds(),
            matrices: (0..gpus).map(|g| sched.overlap_matrix(g)).collect(),
        }
    }
}

/// How far timestamps may be trusted.
///
/// On the sim backend, and on CUDA with host-observed spans (the default), every
/// timestamp is a host time since the scheduler started, and the checker is exact. It
/// then also checks the dispatcher's own view: a command counts as in flight from
/// `dispatched_ns` (the dispatcher's issue) to `end_ns`, which lies inside the time the
/// dispatcher counts it in `C_k` (a slot is given back only after its completion was
/// seen). That catches gating mistakes that serialising engines would otherwise hide.
///
/// With `Builder::device_timing(true)`, GPU commands are timed by CUDA events mapped
/// onto the host clock through a base event (about 0.5 µs resolution, plus a constant
/// offset of the order of the base event's synchronisation latency), while CPU
/// callbacks and `dispatched_ns` stay host times. Comparisons inside one GPU's event
/// clock then get `same_ns` of slack, comparisons across clocks (a readback's end
/// against the next CPU callback's start, or two GPUs' clocks) get `cross_ns`, and the
/// dispatcher's view is not checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clocks {
    /// Slack for comparisons within one clock.
    pub same_ns: u64,
    /// Slack for comparisons across clocks.
    pub cross_ns: u64,
    /// Whether `dispatched_ns..end_ns` is also checked (one clock for everything).
    pub issued: bool,
}

impl Clocks {
    /// One host clock for everything (sim; CUDA with host-observed spans): exact, with
    /// the dispatcher's view checked too.
    pub const HOST: Clocks = Clocks { same_ns: 0, cross_ns: 0, issued: true };
    /// The sim backend.
    pub const SIM: Clocks = Clocks::HOST;
    /// CUDA with device timing events: event resolution within a GPU, 200 µs across
    /// clocks.
    pub const CUDA_EVENTS: Clocks = Clocks { same_ns: 2_000, cross_ns: 200_000, issued: false };

    fn between(&self, a: Stage, b: Stage) -> u64 {
        if a.on_gpu() == b.on_gpu() {
            self.same_ns
        } else {
            self.cross_ns
        }
    }
}

/// The most intervals `[start, end)` that overlap at one instant, and when.
/// Empty intervals occupy no time.
pub fn max_overlap(spans: impl IntoIterator<Item = (u64, u64)>) -> (usize, u64) {
    let mut events: Vec<(u64, i32)> = Vec::new();
    for (s, e) in spans {
        if s < e {
            events.push((s, 1));
            events.push((e, -1));
        }
    }
    // Half-open intervals: at equal times, ends (-1) come before starts (+1).
    events.sort_unstable();
    let (mut now, mut best, mut at) = (0i64, 0i64, 0u64);
    for (t, d) in events {
        now += d as i64;
        if now > best {
            best = now;
            at = t;
        }
    }
    (best as usize, at)
}

/// Total length of the union of `[start, end)` intervals.
pub fn union_ns(spans: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut spans: Vec<(u64, u64)> = spans.into_iter().filter(|(s, e)| s < e).collect();
    spans.sort_unstable();
    let (mut total, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in spans {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

/// `[start + slack, end - slack)`: the part of a command's run that is certain.
fn run_span(r: &CommandRecord, slack: u64) -> (u64, u64) {
    (r.start_ns.saturating_add(slack), r.end_ns.saturating_sub(slack))
}

/// `[dispatched, end)`: when the dispatcher counts the command as in flight (at least).
fn issued_span(r: &CommandRecord) -> (u64, u64) {
    (r.dispatched_ns, r.end_ns)
}

fn describe(r: &CommandRecord) -> String {
    format!(
        "task #{} cmd {} ({}) gpu {} stream {} dispatched {} run {}..{}{}",
        r.task.0,
        r.command,
        r.stage,
        r.gpu,
        r.stream,
        r.dispatched_ns,
        r.start_ns,
        r.end_ns,
        if r.failed { " FAILED" } else { "" }
    )
}

/// Everything in `report` that breaks an invariant, given the tasks submitted in its
/// batch and the scheduler's limits. Empty when all hold.
///
/// (a) every task appears, each command `0..n` exactly once (up to and including the
///     failing command of a task expected to fail), with its expected stage;
/// (b) a task's commands run in index order without overlapping, all on one GPU and
///     one stream; and a stream slot never runs two commands at once;
/// (c) at no instant do more than `L_k` commands of stage k run on one GPU, nor more
///     than `G_k` on all GPUs together;
/// (d) where the overlap matrix forbids stages a and b, no command at a overlaps one
///     at b on the same GPU;
/// (e) the report's summary (span, makespan, tasks and busy time per GPU, failures)
///     agrees with its records, and only copies move bytes.
pub fn violations(report: &Report, tasks: &[TaskSpec], limits: &Limits, clocks: Clocks) -> Vec<String> {
    let mut v = Vec::new();
    let records = &report.records;

    // Record sanity.
    for r in records {
        if r.gpu as usize >= limits.gpus || r.stream as usize >= limits.streams {
            v.push(format!(
                "record outside the machine (D = {}, S = {}): {}",
                limits.gpus,
                limits.streams,
                describe(r)
            ));
        }
        if r.start_ns > r.end_ns {
            v.push(format!("record ends before it starts: {}", describe(r)));
        }
        if clocks.issued && r.dispatched_ns > r.start_ns {
            v.push(format!("record starts before it was dispatched: {}", describe(r)));
        }
    }

    // (a) exactly once.
    let specs: HashMap<u64, &TaskSpec> = tasks.iter().map(|t| (t.id, t)).collect();
    if specs.len() != tasks.len() {
        v.push("the expected task list repeats an id".to_string());
    }
    let mut by_task: BTreeMap<u64, Vec<&CommandRecord>> = BTreeMap::new();
    for r in records {
        by_task.entry(r.task.0).or_default().push(r);
    }
    for (id, recs) in &by_task {
        if !specs.contains_key(id) {
            v.push(format!("task #{id} was not submitted in this batch but has {} record(s)", recs.len()));
        }
    }
    for t in tasks {
        let Some(recs) = by_task.get(&t.id) else {
            v.push(format!("task #{} never ran (no record)", t.id));
            continue;
        };
        let expected = t.fails_at.map_or(t.stages.len(), |f| f + 1);
        let mut seen = vec![0usize; t.stages.len().max(expected)];
        for r in recs {
            let c = r.command as usize;
            if c >= expected {
                v.push(format!(
                    "task #{} has a record for command {c}, expected only 0..{expected}: {}",
                    t.id,
                    describe(r)
                ));
                continue;
            }
            seen[c] += 1;
            if r.stage != t.stages[c] {
                v.push(format!("task #{} command {c} recorded at stage {}, expected {}", t.id, r.stage, t.stages[c]));
            }
            if r.granularity != t.granularity {
                v.push(format!(
                    "task #{} recorded with granularity {}, submitted with {}",
                    t.id, r.granularity, t.granularity
                ));
            }
            let should_fail = t.fails_at == Some(c);
            if r.failed != should_fail {
                v.push(format!("task #{} command {c}: failed = {}, expected {should_fail}", t.id, r.failed));
            }
        }
        for (c, &n) in seen.iter().enumerate().take(expected) {
            if n != 1 {
                v.push(format!("task #{} command {c} recorded {n} time(s), expected exactly once", t.id));
            }
        }

        // (b) in order, on one slot, never overlapping.
        let mut sorted: Vec<&CommandRecord> = recs.clone();
        sorted.sort_by_key(|r| (r.command, r.start_ns));
        let first = sorted[0];
        for r in &sorted {
            if r.gpu != first.gpu || r.stream != first.stream {
                v.push(format!(
                    "task #{} ran on two slots: command {} on gpu {} stream {}, command {} on gpu {} stream {}",
                    t.id, first.command, first.gpu, first.stream, r.command, r.gpu, r.stream
                ));
            }
        }
        for w in sorted.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a.command == b.command {
                continue; // reported above
            }
            let slack = clocks.between(a.stage, b.stage);
            if a.end_ns > b.start_ns.saturating_add(slack) {
                v.push(format!(
                    "task #{} commands overlap or run out of order: {} | {}",
                    t.id,
                    describe(a),
                    describe(b)
                ));
            }
            if clocks.issued && a.end_ns > b.dispatched_ns {
                v.push(format!(
                    "task #{} command {} was dispatched before command {} ended: {} | {}",
                    t.id,
                    b.command,
                    a.command,
                    describe(a),
                    describe(b)
                ));
            }
        }
    }
    if report.tasks != tasks.len() {
        v.push(format!("report.tasks = {}, but {} tasks were submitted", report.tasks, tasks.len()));
    }

    // (b') a stream slot runs one command at a time.
    let mut by_slot: BTreeMap<(u16, u16), Vec<&CommandRecord>> = BTreeMap::new();
    for r in records {
        by_slot.entry((r.gpu, r.stream)).or_default().push(r);
    }
    for ((g, s), recs) in &by_slot {
        let mut recs = recs.clone();
        recs.sort_by_key(|r| (r.start_ns, r.end_ns));
        for w in recs.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a.end_ns > b.start_ns.saturating_add(clocks.between(a.stage, b.stage)) {
                v.push(format!("gpu {g} stream {s} ran two commands at once: {} | {}", describe(a), describe(b)));
            }
        }
        if clocks.issued {
            recs.sort_by_key(|r| (r.dispatched_ns, r.end_ns));
            for w in recs.windows(2) {
                if w[0].end_ns > w[1].dispatched_ns {
                    v.push(format!(
                        "gpu {g} stream {s} had two commands in flight: {} | {}",
                        describe(w[0]),
                        describe(w[1])
                    ));
                }
            }
        }
    }

    // (c) thresholds.
    for stage in Stage::ALL {
        let k = stage.index();
        let (local, global) = (limits.thresholds.local[k], limits.thresholds.global[k]);
        let of_stage: Vec<&CommandRecord> = records.iter().filter(|r| r.stage == stage).collect();
        let mut views: Vec<(&str, bool)> = vec![("running", false)];
        if clocks.issued {
            views.push(("in flight", true));
        }
        for (view, issued) in views {
            let span = |r: &CommandRecord, slack: u64| if issued { issued_span(r) } else { run_span(r, slack) };
            for g in 0..limits.gpus {
                let (n, at) =
                    max_overlap(of_stage.iter().filter(|r| r.gpu as usize == g).map(|r| span(r, clocks.same_ns)));
                if n > local {
                    v.push(format!("{n} {stage} commands {view} at once on gpu {g} at {at} ns, but L_{k} = {local}"));
                }
            }
            let slack = if stage.on_gpu() && limits.gpus > 1 { clocks.cross_ns } else { clocks.same_ns };
            let (n, at) = max_overlap(of_stage.iter().map(|r| span(r, slack)));
            if n > global {
                v.push(format!("{n} {stage} commands {view} at once on all GPUs at {at} ns, but G_{k} = {global}"));
            }
        }
    }

    // (d) overlap matrix.
    for (g, m) in limits.matrices.iter().enumerate() {
        let Some(m) = m else { continue };
        let forbids_any = Stage::ALL.iter().any(|&a| Stage::ALL.iter().any(|&b| !m.allows(a, b)));
        if !forbids_any {
            continue;
        }
        let mine: Vec<&CommandRecord> = records.iter().filter(|r| r.gpu as usize == g).collect();
        let mut views: Vec<(&str, bool)> = vec![("ran", false)];
        if clocks.issued {
            views.push(("were in flight", true));
        }
        for (view, issued) in views {
            let span = |r: &CommandRecord| if issued { issued_span(r) } else { (r.start_ns, r.end_ns) };
            let mut sorted = mine.clone();
            sorted.sort_by_key(|r| span(r));
            let mut active: Vec<&CommandRecord> = Vec::new();
            for r in sorted {
                let (s, e) = span(r);
                active.retain(|a| span(a).1 > s);
                for a in &active {
                    if m.allows(a.stage, r.stage) {
                        continue;
                    }
                    let slack = if issued { 0 } else { clocks.between(a.stage, r.stage) };
                    let lo = s.max(span(a).0).saturating_add(slack);
                    let hi = e.min(span(a).1).saturating_sub(slack);
                    if lo < hi {
                        v.push(format!(
                            "gpu {g}: {} and {} {view} at the same time, which the overlap matrix forbids: {} | {}",
                            a.stage,
                            r.stage,
                            describe(a),
                            describe(r)
                        ));
                    }
                }
                active.push(r);
            }
        }
    }
    // (e) the report's summary agrees with its records.
    let records = &report.records;
    if !records.is_empty() {
        let start = records.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let end = records.iter().map(|r| r.end_ns).max().unwrap_or(0);
        if (report.start_ns, report.end_ns, report.makespan_ns) != (start, end, end - start) {
            v.push(format!(
                "report start/end/makespan {}/{}/{} but the records span {start}..{end}",
                report.start_ns, report.end_ns, report.makespan_ns
            ));
        }
    }
    if report.tasks_per_gpu.len() != limits.gpus || report.busy_ns.len() != limits.gpus {
        v.push(format!(
            "report has {} tasks_per_gpu and {} busy_ns entries for {} GPUs",
            report.tasks_per_gpu.len(),
            report.busy_ns.len(),
            limits.gpus
        ));
    } else {
        for g in 0..limits.gpus {
            let mine: Vec<&CommandRecord> = records.iter().filter(|r| r.gpu as usize == g).collect();
            let tasks = mine.iter().map(|r| r.task).collect::<std::collections::HashSet<_>>().len();
            if report.tasks_per_gpu[g] != tasks {
                v.push(format!("report says gpu {g} ran {} tasks, its records show {tasks}", report.tasks_per_gpu[g]));
            }
            for stage in Stage::ALL {
                let busy = union_ns(mine.iter().filter(|r| r.stage == stage).map(|r| (r.start_ns, r.end_ns)));
                if report.busy_ns[g][stage.index()] != busy {
                    v.push(format!(
                        "report says gpu {g} was busy {} ns at {stage}, its records show {busy} ns",
                        report.busy_ns[g][stage.index()]
                    ));
                }
            }
        }
    }
    for r in records.iter().filter(|r| matches!(r.stage, Stage::Cpu | Stage::Kernel) && r.bytes != 0) {
        v.push(format!("a {} command moved {} bytes: {}", r.stage, r.bytes, describe(r)));
    }
    let mut failed: Vec<u64> = records.iter().filter(|r| r.failed).map(|r| r.task.0).collect();
    let mut reported: Vec<u64> = report.failures.iter().map(|f| f.task.0).collect();
    failed.sort_unstable();
    reported.sort_unstable();
    if failed != reported {
        v.push(format!("failed records of tasks {failed:?}, but the report's failures name {reported:?}"));
    }

    v
}

/// Panics with every violation found (the first 40) if any invariant fails.
pub fn check(report: &Report, tasks: &[TaskSpec], limits: &Limits, clocks: Clocks) {
    let v = violations(report, tasks, limits, clocks);
    if !v.is_empty() {
        panic!(
            "{} invariant violation(s) in a report of {} records:\n  {}",
            v.len(),
            report.records.len(),
            v.iter().take(40).cloned().collect::<Vec<_>>().join("\n  ")
        );
    }
}

/// The start of each task's first command.
pub fn first_starts(report: &Report) -> HashMap<u64, u64> {
    let mut m: HashMap<u64, u64> = HashMap::new();
    for r in &report.records {
        if r.command == 0 {
            m.insert(r.task.0, r.start_ns);
        }
    }
    m
}

// ---------------------------------------------------------------------------------------
// Kernels and their CPU reference
// ---------------------------------------------------------------------------------------

/// `out[i] = in[i] * a + b` over u32 (wrapping), for `i < n`.
pub const AFFINE_SRC: &str = r#"
extern "C" __global__ void affine(const unsigned* in, unsigned* out, unsigned n, unsigned a, unsigned b) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * a + b;
}
"#;

/// `x[i] = (x[i] ^ k) + i` over u32 (wrapping), in place, for `i < n`.
pub const MIX_SRC: &str = r#"
extern "C" __global__ void mix(unsigned* x, unsigned n, unsigned k) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = (x[i] ^ k) + i;
}
"#;

/// Threads per block of every launch here.
pub const BLOCK: u32 = 128;

pub fn affine_ref(x: u32, a: u32, b: u32) -> u32 {
    x.wrapping_mul(a).wrapping_add(b)
}

pub fn mix_ref(x: u32, k: u32, i: usize) -> u32 {
    (x ^ k).wrapping_add(i as u32)
}

/// The `affine` kernel with its CPU twin.
pub fn affine_kernel() -> Kernel {
    Kernel::new("affine", AFFINE_SRC)
        .params([Param::Buffer, Param::Buffer, Param::U32, Param::U32, Param::U32])
        .cpu_twin(|args| {
            let (n, a, b) = (args.u32(2)? as usize, args.u32(3)?, args.u32(4)?);
            let (input, output) = args.in_out::<u32, u32>(0, 1)?;
            if n > input.len() || n > output.len() {
                return Err(format!("n = {n} exceeds the buffers ({} and {})", input.len(), output.len()).into());
            }
            for i in 0..n {
                output[i] = affine_ref(input[i], a, b);
            }
            Ok(())
        })
}

/// The `mix` kernel with its CPU twin.
pub fn mix_kernel() -> Kernel {
    Kernel::new("mix", MIX_SRC).params([Param::Buffer, Param::U32, Param::U32]).cpu_twin(|args| {
        let (n, k) = (args.u32(1)? as usize, args.u32(2)?);
        let x = args.buffer_mut::<u32>(0)?;
        if n > x.len() {
            return Err(format!("n = {n} exceeds the buffer ({})", x.len()).into());
        }
        for (i, v) in x[..n].iter_mut().enumerate() {
            *v = mix_ref(*v, k, i);
        }
        Ok(())
    })
}

/// A launch grid covering `n` elements.
pub fn grid(n: usize) -> u32 {
    (n as u32).div_ceil(BLOCK)
}

/// Input value of element `i` of the host input buffer.
pub fn gen(i: usize) -> u32 {
    (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) ^ 0x9e37_79b9
}

/// What a writing CPU callback puts into element `i` instead.
pub fn gen2(i: usize) -> u32 {
    (i as u32).wrapping_mul(0x85eb_ca6b).wrapping_add(0x27d4_eb2f)
}

/// What output elements hold before any task wrote them.
pub const SENTINEL: u32 = 0xDEAD_BEEF;

/// A checksum of a slice (order-sensitive).
pub fn checksum(s: &[u32]) -> u64 {
    s.iter().fold(17u64, |h, &x| h.wrapping_mul(1_000_003).wrapping_add(x as u64))
}

/// Fills `buf[..n]` with `value` from a GPU callback, on either backend: through
/// `GpuCall::sim_buffer` on sim, by `cuMemsetD32Async` on the task's stream on CUDA.
pub fn gpu_fill(call: &mut GpuCall<'_>, buf: &DeviceBuffer<u32>, n: usize, value: u32) -> Result<(), BoxError> {
    if let Some(mut mem) = call.sim_buffer(buf) {
        if call.cuda_stream().is_some() || call.device_ptr(buf).is_some() {
            return Err("sim backend, yet a CUDA stream or device pointer was given".into());
        }
        mem[..n].fill(value);
        return Ok(());
    }
    let stream = call.cuda_stream().ok_or("neither a simulated buffer nor a CUDA stream")?;
    let ptr = call.device_ptr(buf).ok_or("CUDA stream but no device pointer")?;
    // SAFETY: `ptr` is this task's physical copy of `buf` on this GPU, which holds at
    // least `n` u32 (n <= buf.len()); the memset is ordered on the task's own stream.
    let r = unsafe { cudarc::driver::sys::cuMemsetD32Async(ptr, value, n, stream) };
    if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuMemsetD32Async failed: {r:?}").into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// A workload with its reference
// ---------------------------------------------------------------------------------------

/// The shape of one task of a [`Workload`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    /// download, affine, readback.
    Plain,
    /// download, mix, affine, readback.
    TwoKernels,
    /// callback_writing (fills the input chunk with `gen2`), download, affine, readback,
    /// callback_reading (checksums the output chunk).
    CpuAround,
    /// callback(Resource::Cpu) recording its CallInfo, download, affine, readback.
    CpuInfo,
    /// download, gpu_callback filling the device input with `k`, affine, readback.
    GpuFill,
    /// download, gpu_callback adding `k` through `GpuCall::sim_buffer` (sim only),
    /// affine, readback.
    GpuAddSim,
    /// download, callback(Resource::Gpu) recording its CallInfo, affine, readback.
    GpuResource,
}

/// Every recipe the sim backend runs.
pub const SIM_RECIPES: &[Recipe] = &[
    Recipe::Plain,
    Recipe::TwoKernels,
    Recipe::CpuAround,
    Recipe::CpuInfo,
    Recipe::GpuFill,
    Recipe::GpuAddSim,
    Recipe::GpuResource,
];

/// Every recipe the CUDA backend runs.
pub const CUDA_RECIPES: &[Recipe] =
    &[Recipe::Plain, Recipe::TwoKernels, Recipe::CpuAround, Recipe::CpuInfo, Recipe::GpuFill, Recipe::GpuResource];

impl Recipe {
    pub fn stages(self) -> Vec<Stage> {
        use Stage::*;
        match self {
            Recipe::Plain => vec![Download, Kernel, Readback],
            Recipe::TwoKernels => vec![Download, Kernel, Kernel, Readback],
            Recipe::CpuAround => vec![Cpu, Download, Kernel, Readback, Cpu],
            Recipe::CpuInfo => vec![Cpu, Download, Kernel, Readback],
            Recipe::GpuFill | Recipe::GpuAddSim | Recipe::GpuResource => {
                vec![Download, Kernel, Kernel, Readback]
            }
        }
    }

    /// Whether the task records a CallInfo.
    fn records_info(self) -> bool {
        matches!(self, Recipe::CpuInfo | Recipe::GpuResource)
    }
}

/// One planned task: its chunk `offset..offset + len` of the host buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    pub id: u64,
    pub offset: usize,
    pub len: usize,
    pub recipe: Recipe,
    pub a: u32,
    pub b: u32,
    pub k: u32,
}

/// `count` tasks with ids `first_id..`, random lengths in `1..=max_len`, the recipes in
/// turn, tiling the host buffers from element 0.
pub fn plan(seed: u64, first_id: u64, count: usize, max_len: usize, recipes: &[Recipe]) -> Vec<Planned> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut offset = 0;
    (0..count)
        .map(|i| {
            let len = rng.random_range(1..=max_len);
            let p = Planned {
                id: first_id + i as u64,
                offset,
                len,
                recipe: recipes[i % recipes.len()],
                a: rng.random::<u32>() | 1,
                b: rng.random(),
                k: rng.random(),
            };
            offset += len;
            p
        })
        .collect()
}

/// Host and device buffers, kernels and a plan of tasks over them.
pub struct Workload {
    pub inp: HostBuffer<u32>,
    pub out: HostBuffer<u32>,
    pub d_in: DeviceBuffer<u32>,
    pub d_out: DeviceBuffer<u32>,
    pub affine: KernelHandle,
    pub mix: KernelHandle,
    pub plan: Vec<Planned>,
    /// Output checksums computed by `callback_reading` callbacks, by task.
    pub checksums: Arc<Mutex<HashMap<u64, u64>>>,
    /// CallInfos seen by callbacks, by task.
    pub infos: Arc<Mutex<Vec<CallInfo>>>,
}

impl Workload {
    /// Allocates and fills the buffers for `plan` and registers the kernels.
    pub fn new(sched: &Scheduler, plan: Vec<Planned>) -> chariot::Result<Workload> {
        Self::with_kernel_cost(sched, plan, None)
    }

    /// As [`Workload::new`], with a fixed modeled kernel time on the sim backend.
    pub fn with_kernel_cost(
        sched: &Scheduler,
        plan: Vec<Planned>,
        cost: Option<Duration>,
    ) -> chariot::Result<Workload> {
        let total: usize = plan.iter().map(|p| p.offset + p.len).max().unwrap_or(1).max(1);
        let max_len = plan.iter().map(|p| p.len).max().unwrap_or(1).max(1);
        let mut inp = sched.alloc_host::<u32>(total)?;
        let mut out = sched.alloc_host::<u32>(total)?;
        inp.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        out.write().fill(SENTINEL);
        let (mut affine, mut mix) = (affine_kernel(), mix_kernel());
        if let Some(c) = cost {
            affine = affine.sim_cost(move |_, _| c);
            mix = mix.sim_cost(move |_, _| c);
        }
        Ok(Workload {
            inp,
            out,
            d_in: sched.alloc::<u32>(max_len)?,
            d_out: sched.alloc::<u32>(max_len)?,
            affine: sched.register_kernel(affine)?,
            mix: sched.register_kernel(mix)?,
            plan,
            checksums: Default::default(),
            infos: Default::default(),
        })
    }

    /// Submits planned task `p`.
    pub fn submit(&self, sched: &Scheduler, p: &Planned) -> chariot::Result<TaskId> {
        let Planned { id, offset, len, recipe, a, b, k } = *p;
        let range = offset..offset + len;
        let n = len as u32;
        let affine_args = [Arg::buffer(&self.d_in), Arg::buffer(&self.d_out), Arg::u32(n), Arg::u32(a), Arg::u32(b)];
        let t = sched.task(id, len as u64);
        let t = match recipe {
            Recipe::CpuAround => t.callback_writing(&self.inp, range.clone(), move |s, info| {
                if info.task != TaskId(id) {
                    return Err(format!("callback of task #{id} got the CallInfo of {}", info.task).into());
                }
                if s.len() != len {
                    return Err(format!("callback_writing got {} elements, expected {len}", s.len()).into());
                }
                s.iter_mut().enumerate().for_each(|(j, x)| *x = gen2(offset + j));
                Ok(())
            }),
            Recipe::CpuInfo => {
                let infos = self.infos.clone();
                t.callback(Resource::Cpu, move |info| {
                    infos.lock().unwrap().push(*info);
                    // Long enough that CPU callbacks of different tasks overlap and the
                    // CPU stage's thresholds matter.
                    std::thread::sleep(Duration::from_micros(300));
                    Ok(())
                })
            }
            _ => t,
        };
        let t = t.download(&self.d_in, 0, &self.inp, range.clone());
        let t = match recipe {
            Recipe::TwoKernels => {
                t.launch(&self.mix, grid(len), BLOCK, 0, &[Arg::buffer(&self.d_in), Arg::u32(n), Arg::u32(k)])
            }
            Recipe::GpuFill | Recipe::GpuAddSim => {
                let d = self.d_in.clone();
                t.gpu_callback(move |call| {
                    if call.info().task != TaskId(id) {
                        return Err(
                            format!("GPU callback of task #{id} got the CallInfo of {}", call.info().task).into()
                        );
                    }
                    if recipe == Recipe::GpuFill {
                        return gpu_fill(call, &d, len, k);
                    }
                    let mut mem = call.sim_buffer(&d).ok_or("GpuAddSim needs the sim backend")?;
                    mem[..len].iter_mut().for_each(|x| *x = x.wrapping_add(k));
                    Ok(())
                })
            }
            Recipe::GpuResource => {
                let infos = self.infos.clone();
                t.callback(Resource::Gpu, move |info| {
                    infos.lock().unwrap().push(*info);
                    Ok(())
                })
            }
            _ => t,
        };
        let t = t.launch(&self.affine, grid(len), BLOCK, 0, &affine_args).readback(
            &self.out,
            range.clone(),
            &self.d_out,
            0,
        );
        let t = match recipe {
            Recipe::CpuAround => {
                let sums = self.checksums.clone();
                t.callback_reading(&self.out, range, move |s, _info| {
                    sums.lock().unwrap().insert(id, checksum(s));
                    Ok(())
                })
            }
            _ => t,
        };
        t.submit()
    }

    /// Submits every planned task, in plan order.
    pub fn submit_all(&self, sched: &Scheduler) -> chariot::Result<()> {
        for p in &self.plan {
            let id = self.submit(sched, p)?;
            assert_eq!(id, TaskId(p.id), "submit returns the task's id");
        }
        Ok(())
    }

    /// The checker's view of the plan.
    pub fn specs(&self) -> Vec<TaskSpec> {
        self.plan.iter().map(|p| TaskSpec::new(p.id, p.len as u64, &p.recipe.stages())).collect()
    }

    /// The output chunk task `p` must produce (CPU reference).
    pub fn expected(p: &Planned) -> Vec<u32> {
        (0..p.len)
            .map(|j| {
                let i = p.offset + j;
                let x = match p.recipe {
                    Recipe::CpuAround => gen2(i),
                    _ => gen(i),
                };
                let x = match p.recipe {
                    Recipe::TwoKernels => mix_ref(x, p.k, j),
                    Recipe::GpuFill => p.k,
                    Recipe::GpuAddSim => x.wrapping_add(p.k),
                    _ => x,
                };
                affine_ref(x, p.a, p.b)
            })
            .collect()
    }

    /// Compares every output element with the CPU reference, and the callbacks'
    /// checksums and CallInfos with the report.
    pub fn verify(&self, report: &Report) {
        self.verify_tasks(report, |_| true);
    }

    /// As [`Workload::verify`], for the planned tasks that `keep` selects.
    pub fn verify_tasks(&self, report: &Report, keep: impl Fn(&Planned) -> bool) {
        let out = self.out.read();
        let inp = self.inp.read();
        let sums = self.checksums.lock().unwrap();
        let mut bad = Vec::new();
        for p in self.plan.iter().filter(|p| keep(p)) {
            let want = Self::expected(p);
            let got = &out[p.offset..p.offset + p.len];
            if let Some(j) = (0..p.len).find(|&j| got[j] != want[j]) {
                bad.push(format!(
                    "task #{} ({:?}, {} elements): element {} = {:#x}, expected {:#x}",
                    p.id, p.recipe, p.len, j, got[j], want[j]
                ));
            }
            if p.recipe == Recipe::CpuAround {
                if let Some(j) = (0..p.len).find(|&j| inp[p.offset + j] != gen2(p.offset + j)) {
                    bad.push(format!("task #{}: callback_writing did not write input element {j}", p.id));
                }
                match sums.get(&p.id) {
                    Some(&s) if s == checksum(&want) => {}
                    Some(_) => bad
                        .push(format!("task #{}: callback_reading saw an output chunk other than the final one", p.id)),
                    None => bad.push(format!("task #{}: callback_reading never ran", p.id)),
                }
            }
        }
        let infos = self.infos.lock().unwrap();
        let slots: HashMap<u64, (u16, u16)> = report.records.iter().map(|r| (r.task.0, (r.gpu, r.stream))).collect();
        let wanted = self.plan.iter().filter(|p| keep(p) && p.recipe.records_info()).count();
        let seen = infos.iter().filter(|i| self.plan.iter().any(|p| p.id == i.task.0 && keep(p))).count();
        if seen != wanted {
            bad.push(format!("{seen} callbacks recorded a CallInfo, expected {wanted}"));
        }
        for info in infos.iter() {
            match slots.get(&info.task.0) {
                Some(&(g, s)) if (g as usize, s as usize) == (info.gpu, info.stream) => {}
                Some(&(g, s)) => bad.push(format!(
                    "task {}: callback ran with gpu {} stream {}, but the report has gpu {g} stream {s}",
                    info.task, info.gpu, info.stream
                )),
                None => bad.push(format!("task {}: CallInfo of a task without records", info.task)),
            }
        }
        assert!(bad.is_empty(), "{} wrong result(s):\n  {}", bad.len(), bad.join("\n  "));
    }
}

// ---------------------------------------------------------------------------------------
// Scenarios shared by the sim and CUDA suites
// ---------------------------------------------------------------------------------------

/// Runs `plan` as one batch on `sched`, checks every invariant and every output element
/// against the CPU reference, and returns the report.
pub fn run_workload(sched: &Scheduler, plan: Vec<Planned>, clocks: Clocks) -> Report {
    let count = plan.len();
    let w = Workload::new(sched, plan).unwrap();
    w.submit_all(sched).unwrap();
    let report = sched.synchronize().unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    check(&report, &w.specs(), &Limits::of(sched), clocks);
    w.verify(&report);
    assert_eq!(report.tasks, count);
    assert_eq!(report.tasks_per_gpu.iter().sum::<usize>(), count);
    assert_eq!(report.records.len(), w.plan.iter().map(|p| p.recipe.stages().len()).sum::<usize>());
    report
}

/// The ordering rule's pop order, made deterministic: on a scheduler with one GPU and
/// one stream, task 0 holds the only slot (its first command, a CPU callback, blocks
/// until every other task is submitted), so the others all wait in the task buffer and
/// the order in which they then start is the order the rule pops them in.
pub fn pop_order_scenario(sched: &Scheduler, order: Order, clocks: Clocks) {
    assert_eq!((sched.gpu_count(), sched.streams()), (1, 1), "the scenario needs D = 1, S = 1");
    let w = Workload::new(sched, plan(7, 1, 24, 64, &[Recipe::Plain])).unwrap();
    // Granularities 1..=6 over 24 tasks: many ties, which must go to the older task.
    let grains: Vec<u64> = (0..24u64).map(|i| (i * 7 + 3) % 6 + 1).collect();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    sched
        .task(0, 1000)
        .callback(Resource::Cpu, move |_| {
            started_tx.send(()).map_err(|e| e.to_string())?;
            release_rx.recv().map_err(|e| e.to_string())?;
            Ok(())
        })
        .submit()
        .unwrap();
    started_rx.recv_timeout(Duration::from_secs(30)).expect("task 0 started");
    for (p, &g) in w.plan.iter().zip(&grains) {
        let r = p.offset..p.offset + p.len;
        let args = [Arg::buffer(&w.d_in), Arg::buffer(&w.d_out), Arg::u32(p.len as u32), Arg::u32(p.a), Arg::u32(p.b)];
        sched
            .task(p.id, g)
            .download(&w.d_in, 0, &w.inp, r.clone())
            .launch(&w.affine, grid(p.len), BLOCK, 0, &args)
            .readback(&w.out, r, &w.d_out, 0)
            .submit()
            .unwrap();
    }
    release_tx.send(()).unwrap();
    let report = sched.synchronize().unwrap();
    let mut specs: Vec<TaskSpec> = w
        .plan
        .iter()
        .zip(&grains)
        .map(|(p, &g)| TaskSpec::new(p.id, g, &[Stage::Download, Stage::Kernel, Stage::Readback]))
        .collect();
    specs.push(TaskSpec::new(0, 1000, &[Stage::Cpu]));
    check(&report, &specs, &Limits::of(sched), clocks);
    w.verify(&report);

    let starts = first_starts(&report);
    let mut actual: Vec<u64> = w.plan.iter().map(|p| p.id).collect();
    actual.sort_by_key(|id| starts[id]);
    // Submission order is id order, and sort_by_key is stable: ties keep it.
    let mut expected: Vec<(u64, u64)> = w.plan.iter().map(|p| p.id).zip(grains.iter().copied()).collect();
    match order {
        Order::Fcfs => {}
        Order::LargestFirst => expected.sort_by_key(|&(_, g)| std::cmp::Reverse(g)),
        Order::SmallestFirst => expected.sort_by_key(|&(_, g)| g),
    }
    let expected: Vec<u64> = expected.into_iter().map(|(id, _)| id).collect();
    let grain_of = |ids: &[u64]| ids.iter().map(|id| grains[(*id - 1) as usize]).collect::<Vec<_>>();
    assert_eq!(
        actual,
        expected,
        "{order:?} started tasks in the wrong order (their granularities {:?}, expected {:?})",
        grain_of(&actual),
        grain_of(&expected)
    );
    // Task 0 ran first, alone.
    assert!(w.plan.iter().all(|p| starts[&p.id] >= starts[&0]));
}

/// Column blocks of one row-major matrix: each task downloads a block of whole columns
/// with the matrix's pitch (2-D copy), packs it on the device, transforms it, and reads
/// it back into the same columns of the output matrix. The blocks' host regions
/// interleave row by row without sharing a byte, so no submit may be refused.
pub fn two_d_scenario(sched: &Scheduler, clocks: Clocks) {
    let (cols, rows, block) = (384usize, 40usize, 48usize);
    let mut inp = sched.alloc_host::<u32>(cols * rows).unwrap();
    let mut out = sched.alloc_host::<u32>(cols * rows).unwrap();
    inp.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
    out.write().fill(SENTINEL);
    let d_in = sched.alloc::<u32>(block * rows).unwrap();
    let d_out = sched.alloc::<u32>(block * rows).unwrap();
    let affine = sched.register_kernel(affine_kernel()).unwrap();
    let n = block * rows;
    let mut specs = Vec::new();
    for (t, c0) in (0..cols).step_by(block).enumerate() {
        let shape = chariot::Copy2d {
            host_offset: c0,
            host_pitch: cols,
            dev_offset: 0,
            dev_pitch: block,
            width: block,
            height: rows,
        };
        let args =
            [Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(n as u32), Arg::u32(3 + t as u32), Arg::u32(t as u32)];
        sched
            .task(t as u64, n as u64)
            .download_2d(&d_in, &inp, shape)
            .launch(&affine, grid(n), BLOCK, 0, &args)
            .readback_2d(&out, &d_out, shape)
            .submit()
            .unwrap();
        specs.push(TaskSpec::new(t as u64, n as u64, &[Stage::Download, Stage::Kernel, Stage::Readback]));
    }
    let report = sched.synchronize().unwrap();
    check(&report, &specs, &Limits::of(sched), clocks);
    let out = out.read();
    for r in 0..rows {
        for c in 0..cols {
            let t = (c / block) as u32;
            assert_eq!(out[r * cols + c], affine_ref(gen(r * cols + c), 3 + t, t), "row {r} column {c}");
        }
    }
    // Bytes moved: every element once each way.
    assert_eq!(report.records.iter().map(|r| r.bytes).sum::<u64>(), (2 * cols * rows * 4) as u64);
}

/// A task whose first command blocks until the returned sender sends (or is dropped).
pub fn gate() -> (std::sync::mpsc::Sender<()>, impl FnOnce(&CallInfo) -> Result<(), BoxError> + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let f = move |_: &CallInfo| -> Result<(), BoxError> {
        let _ = rx.recv();
        Ok(())
    };
    (tx, f)
}

/// One task of the workload gets an extra CPU callback that panics between its download
/// and its readback; the batch must fail with exactly that task (id, command, stage,
/// the panic's message) while every other task completes with correct output, and the
/// scheduler must run the next batch.
pub fn panic_scenario(sched: &Scheduler, clocks: Clocks) {
    let w = Workload::new(sched, plan(9, 1, 24, 300, &[Recipe::Plain, Recipe::CpuAround, Recipe::TwoKernels])).unwrap();
    let victim = w.plan[10];
    for p in w.plan.iter().filter(|p| p.id != victim.id) {
        w.submit(sched, p).unwrap();
    }
    let r = victim.offset..victim.offset + victim.len;
    sched
        .task(victim.id, victim.len as u64)
        .download(&w.d_in, 0, &w.inp, r.clone())
        .callback(Resource::Cpu, move |info| panic!("boom in task {}", info.task.0))
        .readback(&w.out, r, &w.d_out, 0)
        .submit()
        .unwrap();
    let e = sched.synchronize().unwrap_err();
    let text = e.to_string();
    let chariot::Error::TasksFailed { failures, report } = e else { panic!("expected TasksFailed, got {e:?}") };
    assert_eq!(failures.len(), 1, "{failures:?}");
    let f = &failures[0];
    assert_eq!((f.task, f.command, f.stage), (TaskId(victim.id), 1, Stage::Cpu), "{f:?}");
    assert!(f.message.contains(&format!("boom in task {}", victim.id)), "{}", f.message);
    assert!(text.contains(&format!("#{}", victim.id)) && text.contains("cpu") && text.contains("boom"), "{text}");
    assert_eq!(report.failures, failures);
    let mut specs = w.specs();
    for sp in specs.iter_mut().filter(|sp| sp.id == victim.id) {
        *sp =
            TaskSpec::new(victim.id, victim.len as u64, &[Stage::Download, Stage::Cpu, Stage::Readback]).failing_at(1);
    }
    check(&report, &specs, &Limits::of(sched), clocks);
    w.verify_tasks(&report, |p| p.id != victim.id);
    // The victim's readback never ran: its output chunk is untouched.
    assert!(w.out.read()[victim.offset..victim.offset + victim.len].iter().all(|&x| x == SENTINEL));
    // The scheduler lives on: the next batch runs, with the victim's id free again.
    sched.task(victim.id, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
    assert_eq!(sched.synchronize().unwrap().tasks, 1);
}

// ---------------------------------------------------------------------------------------
// Faults and lifecycle
// ---------------------------------------------------------------------------------------

/// Threads of this process now (Linux, /proc/self/status).
pub fn threads_now() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok()).expect("a Threads line")
}

/// The failures and report of a batch that must have failed with `TasksFailed`.
pub fn expect_failed(result: chariot::Result<Report>) -> (Vec<chariot::TaskFailure>, Report) {
    match result {
        Err(chariot::Error::TasksFailed { failures, report }) => (failures, *report),
        Ok(_) => panic!("the batch should have failed"),
        Err(e) => panic!("expected TasksFailed, got {e}"),
    }
}
