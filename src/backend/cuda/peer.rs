//! Peer access between the GPUs of a machine, for resident data's copies between them.

use super::context::Context;
use super::driver;
use std::sync::Arc;

/// Lets every GPU read every other's memory directly where the hardware allows (NVLink
/// or PCIe peer access), so that resident data moves between GPUs by peer copies; where
/// it does not, the driver stages those copies through the host. Best effort: a refusal
/// only costs speed.
pub(crate) fn enable_peer_access(contexts: &[Arc<Context>]) {
    for a in contexts {
        for b in contexts {
            if a.index == b.index {
                continue;
            }
            let can = driver::device_can_access_peer(a.dev, b.dev);
            if can == Ok(true) && a.bind().is_ok() {
                // SAFETY: `a`'s context is current and `b.ctx` is a live context (retained
                // while `b` lives); enabling twice returns an error we ignore.
                let _ = unsafe { driver::ctx_enable_peer_access(b.ctx) };
            }
        }
    }
}
