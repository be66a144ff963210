//! Commands and their model: the ops a task is drawn from, and what they compute on the CPU.

use super::*;

/// A device buffer of the task's slot: `A` is downloaded into, `B` is the other one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dev {
    A,
    B,
}

impl Dev {
    pub(super) fn other(self) -> Dev {
        match self {
            Dev::A => Dev::B,
            Dev::B => Dev::A,
        }
    }
}

/// One command of a task. The host regions are the task's own chunk of the input and of
/// the output buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
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
    pub(super) fn stage(self) -> Stage {
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
pub(super) fn input(i: usize) -> u32 {
    (i as u32).wrapping_mul(0x9e37_79b1).rotate_left(11) ^ 0x5bd1_e995
}

/// What `Fill { salt }` writes into element `j` of its chunk.
pub(super) fn fill(salt: u32, j: usize) -> u32 {
    (j as u32).wrapping_mul(0x85eb_ca6b) ^ salt
}

/// The state of one task's data as its commands run, on the CPU.
pub(super) struct Model {
    pub(super) inp: Vec<u32>,
    a: Option<Vec<u32>>,
    b: Option<Vec<u32>>,
    pub(super) out: Vec<u32>,
    /// Checksums `Inspect` must see, in order.
    pub(super) inspected: Vec<u64>,
}

impl Model {
    pub(super) fn new(offset: usize, len: usize) -> Self {
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
    pub(super) fn apply(&mut self, op: Op) -> bool {
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
