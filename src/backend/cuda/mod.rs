//! The hand-written CUDA pipelines chariot is measured against, as a CUDA programmer
//! writes them without a scheduler: plain driver calls through cudarc on the primary
//! context. This is the studies crate's only `unsafe` code, as `backend/` is the
//! runtime's; `crate::baseline` is its safe face.

pub(crate) mod baseline;
pub(crate) mod cholesky;
pub(crate) mod device_graph;
pub(crate) mod flow;
pub(crate) mod images;
pub(crate) mod inorder;
pub(crate) mod primary;

use cudarc::driver::result::DriverError;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `call` failed with `e`, as a message (the baselines' errors are text), with the
/// driver's name and text as chariot writes them (`DriverError`'s display).
pub(crate) fn failed_text(call: &str, e: DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(text) if !text.is_empty() => format!("{call} failed: {name} ({})", text.to_string_lossy()),
        _ => format!("{call} failed: {name}"),
    }
}

/// Runs a user closure (a producer or consumer of the in-order pipeline): its error or
/// its panic as a message, so that a failing chunk ends the run with a value, not an
/// unwinding thread.
pub(crate) fn caught<R>(f: impl FnOnce() -> Result<R, chariot::BoxError>) -> Result<R, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(e.to_string()),
        Err(payload) => {
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned());
            Err(format!("panicked: {}", text.as_deref().unwrap_or("a non-string payload")))
        }
    }
}
