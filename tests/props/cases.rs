//! Cases: task plans (drawn, then normalized to meaningful pipelines), machines, thresholds,
//! and the proptest strategies that draw them.

use super::*;

/// One task: its chunk `offset..offset + len` of both host buffers and its commands.
#[derive(Clone)]
pub(super) struct TaskPlan {
    pub(super) id: u64,
    pub(super) offset: usize,
    pub(super) len: usize,
    pub(super) ops: Vec<Op>,
}

impl fmt::Debug for TaskPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} [{}..{}] {:?}", self.id, self.offset, self.offset + self.len, self.ops)
    }
}

impl TaskPlan {
    /// The model after every command.
    pub(super) fn model(&self) -> Model {
        let mut m = Model::new(self.offset, self.len);
        for &op in &self.ops {
            assert!(m.apply(op), "task #{}: {op:?} reads a device buffer not written yet", self.id);
        }
        m
    }
}

/// Keeps the commands of `raw` that are meaningful in order (see the file's doc); an
/// empty result becomes a single download, since a task needs a command.
pub(super) fn normalize(len: usize, raw: Vec<Op>) -> Vec<Op> {
    let mut m = Model::new(0, len.min(1));
    let mut ops: Vec<Op> = raw.into_iter().filter(|&op| m.apply(op)).collect();
    if ops.is_empty() {
        ops.push(Op::Download);
    }
    ops
}

/// The simulated machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Machine {
    /// `SimProfile::instant()`: no modeled time.
    Instant,
    /// `SimProfile::h100()` at `scale` × real time, with `buses` shared host buses.
    H100 { scale: f64, buses: Option<usize> },
    /// `SimProfile::single_copy_engine()` at `scale` × real time: downloads and
    /// readbacks may never overlap on one GPU.
    OneCopyEngine { scale: f64 },
}

impl Machine {
    pub(super) fn profile(self, gpus: usize) -> SimProfile {
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
pub(super) struct Case {
    pub(super) gpus: usize,
    pub(super) streams: usize,
    pub(super) order: Order,
    pub(super) depth: usize,
    pub(super) cores: usize,
    pub(super) machine: Machine,
    /// `None`: the paper's thresholds; `Some((L, G))` before the stage depth applies.
    pub(super) thresholds: Option<([usize; Stage::K], [usize; Stage::K])>,
    pub(super) tasks: Vec<TaskPlan>,
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

pub(super) fn case() -> impl Strategy<Value = Case> {
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
