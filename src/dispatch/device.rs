//! What a dispatcher needs from its GPU, as a trait: issue a command on a stream slot,
//! find whether it completed, and how completions show (polled or announced). The
//! dispatcher is generic over it, so that the model checks (`src/model_check.rs`) drive
//! the real dispatch loop with a model GPU under shuttle, while the runtime drives it
//! with the backend's [`Gpu`] (CUDA or sim): static dispatch, nothing boxed per command.
//! For the backend's GPU a command is lowered to device operations here, as it is
//! issued (`task::lower`): the backend takes operations, not commands.

use crate::backend::op::Tag;
#[cfg(feature = "replay")]
use crate::backend::GraphUse;
use crate::backend::{DriverNs, Fault, Gpu, Span, WindowRun};
use crate::callback::CallInfo;
#[cfg(feature = "replay")]
use crate::seam::{Part, Way, Window};
use crate::task::command::Command;
use crate::task::lower::lower;

/// One dispatcher's GPU, as the dispatcher sees it. Called only from the dispatcher's
/// thread; a slot has at most one command in flight.
pub(crate) trait Device: Send {
    /// Runs on the dispatcher's thread before anything else (CUDA: makes the context
    /// current); an error takes the GPU out of the rotation.
    fn bind_thread(&self) -> Result<(), crate::report::DriverError>;

    /// A guard of [`Device::visit`].
    #[cfg(feature = "replay")]
    type Visit;

    /// Makes the GPU current on the calling thread, which is not the dispatcher's (a
    /// turn of the replay windows taken by another thread), until the answer drops:
    /// then the thread's own context is current again.
    #[cfg(feature = "replay")]
    fn visit(&self) -> Result<Self::Visit, crate::report::DriverError>;

    /// Issues GPU-stage command `cmd` (index `command` in its task) on stream slot
    /// `stream`, which has nothing in flight, without waiting for it. Returns the time
    /// spent in driver calls.
    fn issue(&mut self, stream: usize, cmd: &mut Command, info: CallInfo, command: usize) -> Result<DriverNs, Fault>;

    /// Whether the command in flight on `stream` has completed, and when it ran.
    fn poll(&mut self, stream: usize) -> Option<Result<Span, Fault>>;

    /// Launches replay window `w` (every slot idle): returns the time spent in driver
    /// calls (the lowering of its nodes included) and how its graph was had.
    #[cfg(feature = "replay")]
    fn issue_window(&mut self, w: &Window) -> Result<(DriverNs, GraphUse), Fault>;

    /// Launches a run of recorded part `part` (every slot idle): its kept graph again
    /// where the backend keeps it unchanged, else lowered as a window is.
    #[cfg(feature = "replay")]
    fn issue_recorded(&mut self, part: &Part) -> Result<(DriverNs, GraphUse), Fault>;

    /// Whether `w` may be issued now, behind the windows in flight (each window in
    /// flight completes in the order issued, [`Device::poll_window`] the first).
    #[cfg(feature = "replay")]
    fn can_issue_window(&self, w: &Window) -> bool;

    /// Whether the first window in flight completed, and how it ran.
    fn poll_window(&mut self) -> Option<Result<WindowRun, Fault>>;

    /// Whether GPU `gpu`, another than this one that a window of this one spans, is
    /// lost (asked once such a window failed with a GPU lost).
    #[cfg(feature = "replay")]
    fn other_gpu_lost(&self, gpu: usize) -> bool;

    /// Waits until nothing issued on this GPU still runs (before a dying dispatcher
    /// gives back what its commands use).
    fn quiesce(&self);

    /// Whether completions show only by polling (the dispatcher spins while commands
    /// are in flight) rather than being announced on the dispatcher's signal.
    fn polls(&self) -> bool;

    /// Whether the dispatcher spins briefly before parking (it owns its core).
    fn spins(&self) -> bool;
}

/// Issues window `w` as the backend's graph operation (kept under `name` if given; on
/// the device where `device`); the backend lowers its nodes as it walks them, in its
/// driver time, as resolving a command's arguments is.
#[cfg(feature = "replay")]
fn lower_and_issue(
    gpu: &mut Gpu,
    w: &Window,
    name: Option<(u64, u64)>,
    device: bool,
) -> Result<(DriverNs, GraphUse), Fault> {
    let mut g = w.graph(gpu.index());
    g.recorded = name;
    g.device = device;
    Gpu::issue_window(gpu, &mut g)
}

/// The runtime's GPU: the backend's handle, CUDA or sim.
impl Device for Gpu {
    #[cfg(feature = "replay")]
    type Visit = crate::backend::Visit;

    #[inline]
    fn bind_thread(&self) -> Result<(), crate::report::DriverError> {
        Gpu::bind_thread(self)
    }

    #[cfg(feature = "replay")]
    fn visit(&self) -> Result<crate::backend::Visit, crate::report::DriverError> {
        Gpu::visit(self)
    }

    #[inline]
    fn issue(&mut self, stream: usize, cmd: &mut Command, info: CallInfo, command: usize) -> Result<DriverNs, Fault> {
        // The command, lowered to the backend's operations as they are issued.
        let tag = Tag { task: info.task, command };
        let t0 = self.begin(stream, tag, cmd.stage())?;
        let words = self.takes_words();
        if let Err(fault) = lower(cmd, info.gpu, stream, tag, words, &mut |op| self.op(stream, op)) {
            self.abandon(stream);
            return Err(fault);
        }
        self.end(stream, t0)
    }

    #[inline]
    fn poll(&mut self, stream: usize) -> Option<Result<Span, Fault>> {
        Gpu::poll(self, stream)
    }

    #[cfg(feature = "replay")]
    fn issue_window(&mut self, w: &Window) -> Result<(DriverNs, GraphUse), Fault> {
        lower_and_issue(self, w, None, w.device)
    }

    #[cfg(feature = "replay")]
    fn issue_recorded(&mut self, part: &Part) -> Result<(DriverNs, GraphUse), Fault> {
        let name = (part.id, part.generation);
        let device = part.next_way() == Way::Device;
        let again = if device { self.relaunch_device(name) } else { self.relaunch(name) };
        if let Some(issued) = again {
            return issued;
        }
        let issued = lower_and_issue(self, &part.window.lock(), Some(name), device);
        if device && matches!(issued, Ok((_, used)) if used != GraphUse::Device) {
            part.refused();
        }
        issued
    }

    fn poll_window(&mut self) -> Option<Result<WindowRun, Fault>> {
        Gpu::poll_window(self)
    }

    #[cfg(feature = "replay")]
    fn can_issue_window(&self, w: &Window) -> bool {
        let device = w.recorded.as_ref().map_or(w.device, |p| p.next_way() == Way::Device);
        Gpu::can_issue_window(self, device)
    }

    #[cfg(feature = "replay")]
    fn other_gpu_lost(&self, gpu: usize) -> bool {
        Gpu::other_gpu_lost(self, gpu)
    }

    fn quiesce(&self) {
        Gpu::quiesce(self)
    }

    #[inline]
    fn polls(&self) -> bool {
        Gpu::polls(self)
    }

    #[inline]
    fn spins(&self) -> bool {
        Gpu::spins(self)
    }
}
