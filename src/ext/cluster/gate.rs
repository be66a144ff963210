//! The cluster's part of what the dispatchers share (`Shared::claims`): how far this
//! rank may run ahead of its GPUs before a submit waits.

use crate::sync::{AtomicUsize, Ordering};

/// The cluster's part of what the dispatchers share: a submit waits for this rank's
/// tasks in flight to fall below `depth` before it takes more (0: not yet in a cluster).
pub(crate) struct ClaimGate {
    depth: AtomicUsize,
}

impl ClaimGate {
    pub(crate) fn new() -> ClaimGate {
        ClaimGate { depth: AtomicUsize::new(0) }
    }

    pub(crate) fn set(&self, depth: usize) {
        self.depth.store(depth, Ordering::SeqCst);
    }

    /// Whether a submit waiting for room is to be told: fewer than the depth in flight.
    #[inline]
    pub(crate) fn waits_below(&self, outstanding: usize) -> bool {
        outstanding < self.depth.load(Ordering::Relaxed)
    }

    /// Whether this rank takes part in a cluster's stream.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.depth.load(Ordering::Relaxed) > 0
    }
}
