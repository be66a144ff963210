//! Tasks (paper §3.1): the processing of one chunk, an ordered list of commands that
//! all run on one GPU and stream. The sealed [`Task`], its [`Command`]s and the task
//! buffer Q (`buffer.rs`) are what the dispatchers and the backends handle; the batch's
//! task graph (`graph.rs`) holds back a task until the tasks it runs after have ended.
//! The
//! `TaskBuilder` that checks each command and submits the task is in `builder.rs`, a
//! layer above the scheduler it submits to (see `scripts/ci/check-layers.py`).

pub(crate) mod buffer;
pub(crate) mod builder;
pub(crate) mod command;
pub(crate) mod graph;
pub(crate) mod lower;

pub use crate::config::Order;

use crate::ids::TaskId;
use crate::memory::claims::Region;
use crate::memory::HostShared;
use crate::seam::Residency;
use command::Command;
use std::sync::Arc;

/// A host region a task touches, claimed at submit (written by readbacks and writing
/// callbacks, read by downloads and reading callbacks).
pub(crate) struct HostClaim {
    pub(crate) host: Arc<HostShared>,
    pub(crate) region: Region,
    pub(crate) write: bool,
}

/// A sealed task as the runtime holds it.
pub(crate) struct Task {
    pub(crate) id: TaskId,
    pub(crate) granularity: u64,
    /// Arrival order, for FCFS and ties.
    pub(crate) seq: u64,
    pub(crate) commands: Vec<Command>,
    /// Index of the next command to run.
    pub(crate) next: usize,
    /// Host buffers this task holds claims on.
    pub(crate) hosts: Vec<Arc<HostShared>>,
    /// The resident buffers it uses, and where it runs with them.
    pub(crate) residency: Residency,
    /// The GPU its user placed it on (`TaskBuilder::prefer_gpu`): its share of Q there,
    /// before the place its resident data would give it.
    pub(crate) prefer: Option<usize>,
    /// Whether it must run on `prefer` and nowhere else: a launch of it names device
    /// memory the runtime did not allocate, which lives on that GPU. Such a task is
    /// never taken by another GPU, and fails if its GPU leaves the rotation.
    pub(crate) bound: bool,
}

/// A 2-D (pitched) copy, in elements: `height` rows of `width` elements; row `r` starts
/// at `host_offset + r·host_pitch` on the host and `dev_offset + r·dev_pitch` on the
/// device. Both pitches must be at least `width`.
///
/// ```
/// use chariot::Copy2d;
/// // Columns 256..512 of a 1024-wide, 64-row matrix, packed 256 wide on the device.
/// let c = Copy2d { host_offset: 256, host_pitch: 1024, dev_offset: 0, dev_pitch: 256, width: 256, height: 64 };
/// assert_eq!(c.elements(), 256 * 64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copy2d {
    /// First element on the host.
    pub host_offset: usize,
    /// Elements between row starts on the host.
    pub host_pitch: usize,
    /// First element on the device.
    pub dev_offset: usize,
    /// Elements between row starts on the device.
    pub dev_pitch: usize,
    /// Elements per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

impl Copy2d {
    /// Elements moved.
    pub fn elements(&self) -> usize {
        self.width.saturating_mul(self.height)
    }
}
