//! The completion of a window (`replay.rs`, `device_window.rs`): an untimed event
//! recorded after the work on the GPU's stream, queried as a command's is, and the
//! host-observed span from the launch to the completion seen.

use super::context::Context;
use super::failed;
use super::gpu::issue_fault;
use super::handle::{Event, Stream};
use crate::backend::{Fault, Reach, Span};
use cudarc::driver::result::DriverError;
use cudarc::driver::sys;
use std::sync::Arc;
use std::time::Instant;

/// A window's completion event and when the window was launched (a GPU keeps one
/// per window in flight, and the spare ones for the next). The event is destroyed
/// when this drops (the GPU's streams are synchronised first: `Gpu`'s drop runs
/// before its fields').
pub(crate) struct Completion {
    event: Event,
    launched_ns: u64,
}

impl Completion {
    /// A completion in `ctx`, which the calling thread has made current.
    pub(crate) fn new(ctx: &Arc<Context>) -> Result<Completion, crate::report::DriverError> {
        let event =
            Event::create(ctx, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING).map_err(|e| failed("cuEventCreate", e))?;
        Ok(Completion { event, launched_ns: 0 })
    }

    /// Notes that a window is being launched now.
    pub(crate) fn launching(&mut self, epoch: Instant) {
        self.launched_ns = epoch.elapsed().as_nanos() as u64;
    }

    /// Records the event after what was enqueued on `stream`. Where that fails, the
    /// stream is waited for: the window's work must finish before its tasks end with
    /// the error (their memory goes with them).
    pub(crate) fn record(&mut self, stream: &Stream) -> Result<(), Fault> {
        if let Err(e) = self.event.record(stream) {
            let _ = stream.synchronize();
            return Err(issue_fault("cuEventRecord")(e));
        }
        Ok(())
    }

    /// Whether this window (`what` ran it) completed: its span, or the driver's fault.
    /// A kernel of the window faulted, but which one the driver does not say, and a
    /// window issued behind it may have run on what it left: the fault is the GPU's,
    /// whatever its kind.
    pub(crate) fn poll(&self, epoch: Instant, what: &str) -> Option<Result<Span, Fault>> {
        match self.event.query() {
            Ok(()) => Some(Ok(Span { start_ns: self.launched_ns, end_ns: epoch.elapsed().as_nanos() as u64 })),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => None,
            Err(e) => {
                let reach = Reach::Gpu;
                let error = failed(&format!("cuEventQuery after {what}"), e);
                Some(Err(Fault { message: error.to_string(), reach, driver: Some(error) }))
            }
        }
    }
}
