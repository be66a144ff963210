//! Property tests of the timeline invariants (issue 7): random task sets (random
//! command sequences and chunk sizes), D GPUs × S streams, thresholds, stage depth,
//! ordering rules and simulated machines. Every case builds a scheduler on the sim
//! backend, runs its tasks as one batch, and checks the timeline with the invariant
//! checker of `tests/common` (every task exactly once and in order on one slot, L and G
//! per stage, the overlap matrix) and every host element against a CPU model of the
//! task's commands.
//!
//! A task's commands are drawn freely, then kept only where they are meaningful: a
//! kernel, GPU callback or readback that reads a device buffer the task has not written
//! yet is dropped, because a slot's physical buffers hold whatever the previous task on
//! that slot left there. What remains is a valid pipeline whose outcome the model knows.
//!
//! `PROPTEST_CASES=1000 cargo test --release --test props` for a longer run (the
//! default is 48 cases, a few seconds in debug).

mod common;

use chariot::{Arg, Backend, CallInfo, Order, Resource, Scheduler, SimProfile, Stage, TaskId, Thresholds};
use common::{
    affine_kernel, affine_ref, check, checksum, grid, mix_kernel, mix_ref, with_timeout, Clocks, Limits, TaskSpec,
    BLOCK, SENTINEL,
};
use proptest::prelude::*;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// A hung case fails after this long instead of stalling the run.
const DEADLINE_S: u64 = 60;
/// Default number of cases (the file runs in seconds in debug on 2 cores).
const CASES: u32 = 48;

// ---------------------------------------------------------------------------------------
// Commands and their model
// ---------------------------------------------------------------------------------------

/// A device buffer of the task's slot: `A` is downloaded into, `B` is the other one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dev {
    A,
    B,
}

impl Dev {
    fn other(self) -> Dev {
        match self {
            Dev::A => Dev::B,
            Dev::B => Dev::A,
        }
    }
}

/// One command of a task. The host regions are the task's own chunk of the input and of
/// the output buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    /// CPU: `callback_writing` over the input chunk, `x[j] = fill(salt, j)`.
    Fill { salt: u32 },
    /// Input chunk → A.
    Download,
    /// Kernel `affine`: `other(src) = src · a + b`.
    Affine { src: Dev, a: u32, b: u32 },
    /// Kernel `mix` in place on `on`.
    Mix { on: Dev, k: u32 },
    /// GPU callback adding `k` to `on` (through the simulated buffer).
    GpuAdd { on: Dev, k: u32 },
    /// `from` → output chunk.
    Readback { from: Dev },
    /// CPU: `callback_reading` over the output chunk, recording its checksum.
    Inspect,
    /// CPU: `callback(Resource::Cpu)` recording its `CallInfo`.
    CpuNote,
    /// `callback(Resource::Gpu)` recording its `CallInfo`.
    GpuNote,
}

impl Op {
    fn stage(self) -> Stage {
        match self {
            Op::Fill { .. } | Op::Inspect | Op::CpuNote => Stage::Cpu,
            Op::Download => Stage::Download,
            Op::Affine { .. } | Op::Mix { .. } | Op::GpuAdd { .. } | Op::GpuNote => Stage::Kernel,
            Op::Readback { .. } => Stage::Readback,
        }
    }

    /// The device buffer the command reads, if any.
    fn reads(self) -> Option<Dev> {
        match self {
            Op::Affine { src, .. } => Some(src),
            Op::Mix { on, .. } | Op::GpuAdd { on, .. } => Some(on),
            Op::Readback { from } => Some(from),
            _ => None,
        }
    }
}

/// Short forms, so that a shrunk failure reads as a pipeline.
impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |d: &Dev| if *d == Dev::A { "a" } else { "b" };
        match self {
            Op::Fill { salt } => write!(f, "fill({salt:#x})"),
            Op::Download => write!(f, "down(a)"),
            Op::Affine { src, a, b } => write!(f, "affine({}->{}, {a:#x}, {b:#x})", d(src), d(&src.other())),
            Op::Mix { on, k } => write!(f, "mix({}, {k:#x})", d(on)),
            Op::GpuAdd { on, k } => write!(f, "gpu_add({}, {k:#x})", d(on)),
            Op::Readback { from } => write!(f, "read({})", d(from)),
            Op::Inspect => write!(f, "inspect"),
            Op::CpuNote => write!(f, "cpu_note"),
            Op::GpuNote => write!(f, "gpu_note"),
        }
    }
}

/// Input element `i` before any task writes it.
fn input(i: usize) -> u32 {
    (i as u32).wrapping_mul(0x9e37_79b1).rotate_left(11) ^ 0x5bd1_e995
}

/// What `Fill { salt }` writes into element `j` of its chunk.
fn fill(salt: u32, j: usize) -> u32 {
    (j as u32).wrapping_mul(0x85eb_ca6b) ^ salt
}

/// The state of one task's data as its commands run, on the CPU.
struct Model {
    inp: Vec<u32>,
    a: Option<Vec<u32>>,
    b: Option<Vec<u32>>,
    out: Vec<u32>,
    /// Checksums `Inspect` must see, in order.
    inspected: Vec<u64>,
}

impl Model {
    fn new(offset: usize, len: usize) -> Self {
        Model {
            inp: (offset..offset + len).map(input).collect(),
            a: None,
            b: None,
            out: vec![SENTINEL; len],
            inspected: Vec::new(),
        }
    }

    fn dev(&mut self, d: Dev) -> &mut Option<Vec<u32>> {
        match d {
            Dev::A => &mut self.a,
            Dev::B => &mut self.b,
        }
    }

    /// Applies `op`; `false` (and no change) if it reads a device buffer not yet written.
    fn apply(&mut self, op: Op) -> bool {
        if let Some(d) = op.reads() {
            if self.dev(d).is_none() {
                return false;
            }
        }
        match op {
            Op::Fill { salt } => self.inp.iter_mut().enumerate().for_each(|(j, x)| *x = fill(salt, j)),
            Op::Download => self.a = Some(self.inp.clone()),
            Op::Affine { src, a, b } => {
                let v = self.dev(src).as_ref().map(|v| v.iter().map(|&x| affine_ref(x, a, b)).collect());
                *self.dev(src.other()) = v;
            }
            Op::Mix { on, k } => {
                if let Some(v) = self.dev(on) {
                    v.iter_mut().enumerate().for_each(|(j, x)| *x = mix_ref(*x, k, j));
                }
            }
            Op::GpuAdd { on, k } => {
                if let Some(v) = self.dev(on) {
                    v.iter_mut().for_each(|x| *x = x.wrapping_add(k));
                }
            }
            Op::Readback { from } => {
                if let Some(v) = self.dev(from).clone() {
                    self.out = v;
                }
            }
            Op::Inspect => self.inspected.push(checksum(&self.out)),
            Op::CpuNote | Op::GpuNote => {}
        }
        true
    }
}

// ---------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------

/// One task: its chunk `offset..offset + len` of both host buffers and its commands.
#[derive(Clone)]
struct TaskPlan {
    id: u64,
    offset: usize,
    len: usize,
    ops: Vec<Op>,
}

impl fmt::Debug for TaskPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} [{}..{}] {:?}", self.id, self.offset, self.offset + self.len, self.ops)
    }
}

impl TaskPlan {
    /// The model after every command.
    fn model(&self) -> Model {
        let mut m = Model::new(self.offset, self.len);
        for &op in &self.ops {
            assert!(m.apply(op), "task #{}: {op:?} reads a device buffer not written yet", self.id);
        }
        m
    }
}

/// Keeps the commands of `raw` that are meaningful in order (see the file's doc); an
/// empty result becomes a single download, since a task needs a command.
fn normalize(len: usize, raw: Vec<Op>) -> Vec<Op> {
    let mut m = Model::new(0, len.min(1));
    let mut ops: Vec<Op> = raw.into_iter().filter(|&op| m.apply(op)).collect();
    if ops.is_empty() {
        ops.push(Op::Download);
    }
    ops
}

/// The simulated machine.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Machine {
    /// `SimProfile::instant()`: no modeled time.
    Instant,
    /// `SimProfile::h100()` at `scale` × real time, with `buses` shared host buses.
    H100 { scale: f64, buses: Option<usize> },
    /// `SimProfile::single_copy_engine()` at `scale` × real time: downloads and
    /// readbacks may never overlap on one GPU.
    OneCopyEngine { scale: f64 },
}

impl Machine {
    fn profile(self, gpus: usize) -> SimProfile {
        let p = match self {
            Machine::Instant => SimProfile::instant(),
            Machine::H100 { scale, buses } => {
                let p = SimProfile::h100().with_time_scale(scale);
                match buses {
                    Some(b) => p.with_buses(b),
                    None => p,
                }
            }
            Machine::OneCopyEngine { scale } => SimProfile::single_copy_engine().with_time_scale(scale),
        };
        p.with_gpus(gpus)
    }
}

/// Everything one case runs.
#[derive(Clone)]
struct Case {
    gpus: usize,
    streams: usize,
    order: Order,
    depth: usize,
    cores: usize,
    machine: Machine,
    /// `None`: the paper's thresholds; `Some((L, G))` before the stage depth applies.
    thresholds: Option<([usize; Stage::K], [usize; Stage::K])>,
    tasks: Vec<TaskPlan>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "D = {}, S = {}, {:?}, depth {}, {} cores, {:?}, thresholds {}",
            self.gpus,
            self.streams,
            self.order,
            self.depth,
            self.cores,
            self.machine,
            self.thresholds.map_or("paper".into(), |(l, g)| format!("L {l:?} G {g:?}"))
        )?;
        for t in &self.tasks {
            writeln!(f, "  {t:?}")?;
        }
        Ok(())
    }
}

fn op() -> impl Strategy<Value = Op> {
    let dev = prop_oneof![Just(Dev::A), Just(Dev::B)];
    // Weighted towards the download-kernel-readback core of a pipeline.
    prop_oneof![
        1 => any::<u32>().prop_map(|salt| Op::Fill { salt }),
        4 => Just(Op::Download),
        4 => (dev.clone(), any::<u32>(), any::<u32>()).prop_map(|(src, a, b)| Op::Affine { src, a, b }),
        1 => (dev.clone(), any::<u32>()).prop_map(|(on, k)| Op::Mix { on, k }),
        1 => (dev.clone(), any::<u32>()).prop_map(|(on, k)| Op::GpuAdd { on, k }),
        4 => dev.prop_map(|from| Op::Readback { from }),
        1 => Just(Op::Inspect),
        1 => Just(Op::CpuNote),
        1 => Just(Op::GpuNote),
    ]
}

/// Tasks with ids `1..`, tiling the host buffers from element 0.
fn tasks() -> impl Strategy<Value = Vec<TaskPlan>> {
    prop::collection::vec((1usize..=1500, prop::collection::vec(op(), 1..=9)), 1..=32).prop_map(|raw| {
        let mut offset = 0;
        raw.into_iter()
            .enumerate()
            .map(|(i, (len, ops))| {
                let t = TaskPlan { id: i as u64 + 1, offset, len, ops: normalize(len, ops) };
                offset += len;
                t
            })
            .collect()
    })
}

fn machine(gpus: usize) -> impl Strategy<Value = Machine> {
    let scale = prop_oneof![Just(1.0), Just(10.0)];
    prop_oneof![
        Just(Machine::Instant),
        (scale.clone(), prop::option::of(1..=gpus)).prop_map(|(scale, buses)| Machine::H100 { scale, buses }),
        scale.prop_map(|scale| Machine::OneCopyEngine { scale }),
    ]
}

/// L_k in 1..=S + 1 and G_k in 1..=D·S + 1 (the builder takes any value ≥ 1; beyond
/// these a threshold never binds).
fn thresholds(d: usize, s: usize) -> impl Strategy<Value = Option<([usize; Stage::K], [usize; Stage::K])>> {
    prop::option::of((prop::array::uniform4(1..=s + 1), prop::array::uniform4(1..=d * s + 1)))
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=4, 1usize..=4).prop_flat_map(|(gpus, streams)| {
        let order = prop_oneof![Just(Order::Fcfs), Just(Order::LargestFirst), Just(Order::SmallestFirst)];
        (order, 1usize..=2, 1usize..=8, machine(gpus), thresholds(gpus, streams), tasks()).prop_map(
            move |(order, depth, cores, machine, thresholds, tasks)| Case {
                gpus,
                streams,
                order,
                depth,
                cores,
                machine,
                thresholds,
                tasks,
            },
        )
    })
}

// ---------------------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------------------

/// What the callbacks saw, by task.
#[derive(Default)]
struct Seen {
    checksums: HashMap<u64, Vec<u64>>,
    infos: Vec<CallInfo>,
}

fn run(case: &Case) {
    let mut b = Scheduler::builder()
        .backend(Backend::SimWith(case.machine.profile(case.gpus)))
        .gpus(case.gpus)
        .streams(case.streams)
        .order(case.order)
        .stage_depth(case.depth)
        .cpu_cores(case.cores);
    if let Some((l, g)) = case.thresholds {
        b = b.local_thresholds(l).global_thresholds(g);
    }
    let sched = b.build().expect("a valid configuration builds");
    if let Some((local, global)) = case.thresholds {
        assert_eq!(sched.thresholds(), Thresholds { local, global }.with_depth(case.depth), "thresholds in force");
    }

    let total: usize = case.tasks.iter().map(|t| t.len).sum();
    let max_len = case.tasks.iter().map(|t| t.len).max().unwrap_or(1);
    let mut inp = sched.alloc_host::<u32>(total).unwrap();
    let mut out = sched.alloc_host::<u32>(total).unwrap();
    inp.write().iter_mut().enumerate().for_each(|(i, x)| *x = input(i));
    out.write().fill(SENTINEL);
    let dev_a = sched.alloc::<u32>(max_len).unwrap();
    let dev_b = sched.alloc::<u32>(max_len).unwrap();
    let affine = sched.register_kernel(affine_kernel()).unwrap();
    let mix = sched.register_kernel(mix_kernel()).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));

    for t in &case.tasks {
        let (id, len, chunk) = (t.id, t.len, t.offset..t.offset + t.len);
        let dev = |d: Dev| if d == Dev::A { &dev_a } else { &dev_b };
        let mut tb = sched.task(id, len as u64);
        for &op in &t.ops {
            tb = match op {
                Op::Fill { salt } => tb.callback_writing(&inp, chunk.clone(), move |s, _| {
                    s.iter_mut().enumerate().for_each(|(j, x)| *x = fill(salt, j));
                    Ok(())
                }),
                Op::Download => tb.download(&dev_a, 0, &inp, chunk.clone()),
                Op::Affine { src, a, b } => {
                    let args = [
                        Arg::buffer(dev(src)),
                        Arg::buffer(dev(src.other())),
                        Arg::u32(len as u32),
                        Arg::u32(a),
                        Arg::u32(b),
                    ];
                    tb.launch(&affine, grid(len), BLOCK, 0, &args)
                }
                Op::Mix { on, k } => {
                    tb.launch(&mix, grid(len), BLOCK, 0, &[Arg::buffer(dev(on)), Arg::u32(len as u32), Arg::u32(k)])
                }
                Op::GpuAdd { on, k } => {
                    let buf = dev(on).clone();
                    tb.gpu_callback(move |call| {
                        let mut mem = call.sim_buffer(&buf).ok_or("the sim backend gives its buffers")?;
                        mem[..len].iter_mut().for_each(|x| *x = x.wrapping_add(k));
                        Ok(())
                    })
                }
                Op::Readback { from } => tb.readback(&out, chunk.clone(), dev(from), 0),
                Op::Inspect => {
                    let seen = seen.clone();
                    tb.callback_reading(&out, chunk.clone(), move |s, _| {
                        seen.lock().unwrap().checksums.entry(id).or_default().push(checksum(s));
                        Ok(())
                    })
                }
                Op::CpuNote | Op::GpuNote => {
                    let seen = seen.clone();
                    let resource = if op == Op::CpuNote { Resource::Cpu } else { Resource::Gpu };
                    tb.callback(resource, move |info| {
                        seen.lock().unwrap().infos.push(*info);
                        Ok(())
                    })
                }
            };
        }
        assert_eq!(tb.submit().expect("a valid task submits"), TaskId(id));
    }
    let report = sched.synchronize().expect("no task fails");

    // The timeline.
    let specs: Vec<TaskSpec> = case
        .tasks
        .iter()
        .map(|t| TaskSpec::new(t.id, t.len as u64, &t.ops.iter().map(|op| op.stage()).collect::<Vec<_>>()))
        .collect();
    check(&report, &specs, &Limits::of(&sched), Clocks::SIM);

    // The data, against the model.
    let (inp, out, seen) = (inp.read(), out.read(), seen.lock().unwrap());
    let slots: HashMap<u64, (usize, usize)> =
        report.records.iter().map(|r| (r.task.0, (r.gpu as usize, r.stream as usize))).collect();
    let mut bad = Vec::new();
    for t in &case.tasks {
        let m = t.model();
        let chunk = t.offset..t.offset + t.len;
        if let Some(j) = (0..t.len).find(|&j| out[chunk.start + j] != m.out[j]) {
            bad.push(format!(
                "task #{}: output element {j} = {:#x}, expected {:#x}",
                t.id,
                out[chunk.start + j],
                m.out[j]
            ));
        }
        if let Some(j) = (0..t.len).find(|&j| inp[chunk.start + j] != m.inp[j]) {
            bad.push(format!(
                "task #{}: input element {j} = {:#x}, expected {:#x}",
                t.id,
                inp[chunk.start + j],
                m.inp[j]
            ));
        }
        let sums = seen.checksums.get(&t.id).cloned().unwrap_or_default();
        if sums != m.inspected {
            bad.push(format!("task #{}: inspections saw checksums {sums:x?}, expected {:x?}", t.id, m.inspected));
        }
        let notes = t.ops.iter().filter(|op| matches!(op, Op::CpuNote | Op::GpuNote)).count();
        let infos: Vec<&CallInfo> = seen.infos.iter().filter(|i| i.task == TaskId(t.id)).collect();
        if infos.len() != notes {
            bad.push(format!("task #{}: {} callbacks recorded a CallInfo, expected {notes}", t.id, infos.len()));
        }
        if let Some(i) = infos.iter().find(|i| Some(&(i.gpu, i.stream)) != slots.get(&t.id)) {
            bad.push(format!(
                "task #{}: a callback ran as gpu {} stream {}, its records say {:?}",
                t.id,
                i.gpu,
                i.stream,
                slots.get(&t.id)
            ));
        }
    }
    assert!(bad.is_empty(), "{} wrong result(s):\n  {}", bad.len(), bad.join("\n  "));
}

fn config() -> ProptestConfig {
    // ProptestConfig::default() reads PROPTEST_CASES (and the other PROPTEST_* variables);
    // without it, 48 cases keep the file fast in CI.
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = CASES;
    }
    // Each shrinking step builds a scheduler: bound the search.
    c.max_shrink_iters = c.max_shrink_iters.min(1024);
    c
}

proptest! {
    #![proptest_config(config())]

    /// Random task sets on random configurations keep every timeline invariant and
    /// compute what the CPU model computes.
    #[test]
    fn random_pipelines_keep_the_invariants(case in case()) {
        with_timeout(DEADLINE_S, move || run(&case));
    }
}

/// The normalizer drops exactly the commands that read a device buffer not yet written.
#[test]
fn normalize_keeps_only_meaningful_commands() {
    let raw = vec![
        Op::Readback { from: Dev::A },
        Op::Affine { src: Dev::B, a: 3, b: 1 },
        Op::Download,
        Op::Mix { on: Dev::B, k: 1 },
        Op::Affine { src: Dev::A, a: 3, b: 1 },
        Op::Mix { on: Dev::B, k: 1 },
        Op::Readback { from: Dev::B },
    ];
    let ops = normalize(8, raw);
    assert_eq!(
        ops,
        vec![
            Op::Download,
            Op::Affine { src: Dev::A, a: 3, b: 1 },
            Op::Mix { on: Dev::B, k: 1 },
            Op::Readback { from: Dev::B }
        ]
    );
    assert_eq!(normalize(8, vec![Op::GpuAdd { on: Dev::A, k: 1 }]), vec![Op::Download]);
    // The model of the kept commands: out = mix(affine(input)).
    let t = TaskPlan { id: 1, offset: 5, len: 8, ops };
    let want: Vec<u32> = (0..8).map(|j| mix_ref(affine_ref(input(5 + j), 3, 1), 1, j)).collect();
    assert_eq!(t.model().out, want);
}
