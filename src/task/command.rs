//! Commands: the unit a dispatcher issues. A task is an ordered list of them, each of
//! one stage; all are validated when added, so dispatch never meets a bad command.

use crate::backend::op::Twin;
use crate::callback::{CpuFn, GpuCallback};
use crate::kernel::{ArgValue, KernelInner, LaunchShape};
use crate::memory::{DevTarget, HostShared};
#[cfg(feature = "resident")]
use crate::seam::{FetchPart, ResidentInner};
use crate::stage::Stage;
use std::sync::Arc;

/// Direction of a copy: the backend's, as a copy lowers to its copy operation.
pub(crate) use crate::backend::op::Direction;

/// A 1-D or 2-D copy between a host region and a device buffer, in bytes. A 1-D copy
/// is one row (`height` = 1).
#[derive(Debug)]
pub(crate) struct CopyCmd {
    pub(crate) dir: Direction,
    pub(crate) host: Arc<HostShared>,
    pub(crate) host_offset: usize,
    pub(crate) host_pitch: usize,
    pub(crate) dev: DevTarget,
    pub(crate) dev_offset: usize,
    pub(crate) dev_pitch: usize,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

impl CopyCmd {
    /// Bytes moved.
    pub(crate) fn bytes(&self) -> usize {
        self.width * self.height
    }
}

/// A kernel launch with its checked arguments.
#[derive(Debug)]
pub(crate) struct LaunchCmd {
    pub(crate) kernel: Arc<KernelInner>,
    pub(crate) shape: LaunchShape,
    /// Shared, so that a simulated engine holds them without a copy and a task moved
    /// to another GPU launches with them again.
    pub(crate) args: Arc<[ArgValue]>,
    /// Per GPU: the blocks one full wave holds for this launch's shape (see
    /// `Machine::waves`), for [`LaunchCmd::fill`].
    pub(crate) waves: Arc<crate::kernel::Waves>,
    /// The kernel's CPU twin bound to these arguments: what the sim runs (made when the
    /// launch is added, so that lowering it costs no allocation); `None` on CUDA, where
    /// a launch takes its argument words and the binding would be an allocation a task.
    pub(crate) twin: Option<Arc<dyn Twin>>,
}

impl LaunchCmd {
    /// The share of GPU `gpu`'s SMs this launch occupies while it runs alone: its blocks
    /// over one full wave, at most 1 (a launch of several waves fills the GPU).
    pub(crate) fn fill(&self, gpu: usize) -> f64 {
        let blocks = self.shape.grid.count() as f64;
        match self.waves.0.get(gpu) {
            Some(&w) if w > 0 => (blocks / w as f64).min(1.0),
            _ => 1.0,
        }
    }
}

/// The fetch of a resident buffer's pieces to the task's GPU, before the task's own
/// commands (see `ext::resident::memory`). `plan` is made when it is dispatched.
#[derive(Debug)]
#[cfg(feature = "resident")]
pub(crate) struct FetchCmd {
    pub(crate) buf: Arc<ResidentInner>,
    /// The pieces the task reads (or writes in part), ascending.
    pub(crate) pieces: Vec<usize>,
    /// What the dispatch found to copy, until the fetch completes.
    pub(crate) plan: Vec<FetchPart>,
}

#[cfg(feature = "resident")]
impl FetchCmd {
    /// Bytes the plan moves over the host's link (from the host shadow): what the
    /// report's records count, as bounds take them for host traffic. Peer copies and
    /// zero fills cross no host link.
    pub(crate) fn bytes(&self) -> usize {
        self.plan
            .iter()
            .filter(|p| p.from == crate::seam::Source::Host)
            .map(|p| self.buf.bytes_of(&p.pieces).len())
            .sum()
    }
}

/// One command of a task. Callbacks are `Option`s: taken when they run.
pub(crate) enum Command {
    Cpu(Option<CpuFn>),
    Gpu(Option<Box<GpuCallback>>),
    Copy(CopyCmd),
    Launch(LaunchCmd),
    #[cfg(feature = "resident")]
    Fetch(FetchCmd),
}

impl Command {
    pub(crate) fn stage(&self) -> Stage {
        match self {
            Command::Cpu(_) => Stage::Cpu,
            Command::Gpu(_) | Command::Launch(_) => Stage::Kernel,
            Command::Copy(c) => match c.dir {
                Direction::Download => Stage::Download,
                Direction::Readback => Stage::Readback,
            },
            #[cfg(feature = "resident")]
            Command::Fetch(_) => Stage::Download,
        }
    }

    /// The share of GPU `gpu`'s SMs the command occupies (kernel stage): a launch's
    /// [`LaunchCmd::fill`]; a GPU callback's library work is taken to fill the GPU.
    pub(crate) fn fill(&self, gpu: usize) -> f64 {
        match self {
            Command::Launch(l) => l.fill(gpu),
            _ => 1.0,
        }
    }

    /// Bytes a copy moves (0 for other commands).
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Command::Copy(c) => c.bytes() as u64,
            #[cfg(feature = "resident")]
            Command::Fetch(f) => f.bytes() as u64,
            _ => 0,
        }
    }
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Cpu(_) => f.write_str("Cpu(callback)"),
            Command::Gpu(_) => f.write_str("Gpu(callback)"),
            Command::Copy(c) => c.fmt(f),
            Command::Launch(l) => write!(f, "Launch({}, {:?})", l.kernel.def.name, l.shape),
            #[cfg(feature = "resident")]
            Command::Fetch(x) => write!(f, "Fetch(resident {}, pieces {:?})", x.buf.id, x.pieces),
        }
    }
}
