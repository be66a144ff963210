//! The completion of a window (`replay.rs`, `device_window.rs`): an event recorded after
//! the work on the GPU's stream, queried as a command's is, and the window's times:
//! the host-observed span from the launch to the completion seen, and, with
//! `device_timing`, the time on the GPU between an event recorded before the work and
//! the one after it. The second is what a measure of the window's speed then reads: the
//! span also holds the dispatcher's delay in seeing the end (it may be setting up the
//! next window then), and, for a window issued behind another, that one's run. Not by
//! default: on two H200s the timed pair cost a recorded graph's run 3–16 µs, and the
//! runtime's choices read from windows came out the same.
//!
//! A window whose graph asks for it (`GraphOp::timed_end`: a batch's window on lanes past
//! S) ends with a completion event made with timing even so.

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
/// per window in flight, and the spare ones for the next). The events are destroyed
/// when this drops (the GPU's streams are synchronised first: `Gpu`'s drop runs
/// before its fields').
pub(crate) struct Completion {
    /// Recorded before the window's work, where the driver times events.
    start: Option<Event>,
    /// Recorded after it: made with timing where `start` is, else without.
    event: Event,
    /// Recorded after it instead where the window asks for a timed end and `event` is
    /// untimed: made with timing.
    timed_end: Option<Event>,
    /// Whether the last window recorded `timed_end`.
    ended_timed: bool,
    launched_ns: u64,
}

/// A completed window's times.
pub(crate) struct Ran {
    /// From its launch to its completion seen, on the host's clock.
    pub(crate) span: Span,
    /// Its time on the GPU, between its two events (`None` where they are not timed).
    pub(crate) gpu_ns: Option<u64>,
}

impl Completion {
    /// A completion in `ctx`, which the calling thread has made current: `timed` (the
    /// scheduler's `device_timing`, which checked the driver can time events), else
    /// untimed, which costs the driver less, with a timed one beside it for the windows
    /// that ask for a timed end.
    pub(crate) fn new(ctx: &Arc<Context>, timed: bool) -> Result<Completion, crate::report::DriverError> {
        let create = |flags| Event::create(ctx, flags).map_err(|e| failed("cuEventCreate", e));
        let (start, event, timed_end) = if timed {
            (Some(create(sys::CUevent_flags::CU_EVENT_DEFAULT)?), create(sys::CUevent_flags::CU_EVENT_DEFAULT)?, None)
        } else {
            let untimed = create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
            (None, untimed, Some(create(sys::CUevent_flags::CU_EVENT_DEFAULT)?))
        };
        Ok(Completion { start, event, timed_end, ended_timed: false, launched_ns: 0 })
    }

    /// Notes that a window is being launched now on `stream`: before anything of it is
    /// enqueued there.
    pub(crate) fn launching(&mut self, epoch: Instant, stream: &Stream) -> Result<(), Fault> {
        self.launched_ns = epoch.elapsed().as_nanos() as u64;
        match &self.start {
            Some(start) => start.record(stream).map_err(issue_fault("cuEventRecord")),
            None => Ok(()),
        }
    }

    /// Records the event after what was enqueued on `stream`, one made with timing
    /// where the window asks for a `timed_end`. Where that fails, the stream is waited
    /// for: the window's work must finish before its tasks end with the error (their
    /// memory goes with them).
    pub(crate) fn record(&mut self, stream: &Stream, timed_end: bool) -> Result<(), Fault> {
        self.ended_timed = timed_end && self.timed_end.is_some();
        if let Err(e) = self.end().record(stream) {
            let _ = stream.synchronize();
            return Err(issue_fault("cuEventRecord")(e));
        }
        Ok(())
    }

    /// Whether this window (`what` ran it) completed: its times, or the driver's fault.
    /// A kernel of the window faulted, but which one the driver does not say, and a
    /// window issued behind it may have run on what it left: the fault is the GPU's,
    /// whatever its kind.
    pub(crate) fn poll(&self, epoch: Instant, what: &str) -> Option<Result<Ran, Fault>> {
        match self.end().query() {
            Ok(()) => {
                let span = Span { start_ns: self.launched_ns, end_ns: epoch.elapsed().as_nanos() as u64 };
                // Both events completed. Where the driver cannot say (an error), the
                // span stands for the window, as where events are not timed.
                let gpu_ns = self
                    .start
                    .as_ref()
                    .and_then(|s| s.elapsed_to(self.end()).ok())
                    .map(|ms| (f64::from(ms.max(0.0)) * 1e6) as u64);
                Some(Ok(Ran { span, gpu_ns }))
            }
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => None,
            Err(e) => {
                let reach = Reach::Gpu;
                let error = failed(&format!("cuEventQuery after {what}"), e);
                Some(Err(Fault { message: error.to_string(), reach, driver: Some(error) }))
            }
        }
    }

    /// The event recorded after the last window's work.
    fn end(&self) -> &Event {
        self.timed_end.as_ref().filter(|_| self.ended_timed).unwrap_or(&self.event)
    }
}
