//! A GPU's context lent to libraries that work beside chariot (`chariot::cuda::GpuContext`):
//! made current around their calls, the thread's own context restored after.

use super::context::Context;
use super::{driver, failed};
use std::sync::Arc;

/// One GPU's CUDA context as a scheduler holds it (the GPU's primary context), lent to
/// libraries that work in the calling thread's current context beside chariot, such as
/// FFT plans made for GPU callbacks. Get it with `GpuContext::of`; holding it keeps the
/// context alive.
#[derive(Clone)]
pub struct GpuContext(pub(crate) Arc<Context>);

impl GpuContext {
    /// The GPU (index in the scheduler's list).
    pub fn gpu(&self) -> usize {
        self.0.index
    }

    /// Runs `f` with this context current on the calling thread, then makes current again
    /// the context that was, `f` returning or unwinding (none on a CPU callback's thread;
    /// on a GPU callback's, its GPU's, which the dispatcher there relies on). Library
    /// calls that work in the current context (making or destroying a plan) go in `f`.
    ///
    /// # Errors
    /// The driver's error asking for or binding the context; `f` has not run then. A
    /// failure to restore the previous context afterwards goes to the scheduler's next
    /// report (its `cleanup` list), so that `f`'s result is not lost.
    pub fn with_current<R>(&self, f: impl FnOnce() -> R) -> Result<R, crate::report::DriverError> {
        let _visit = visit(&self.0)?;
        Ok(f())
    }

    /// Records a failure met while releasing a library's resource in this context (a
    /// plan destroyed in a `Drop`, which cannot return it): `call` names the call and
    /// the GPU, `code` is the library's status as a number and `name` its name. The
    /// scheduler's next report lists it among its cleanup errors.
    pub fn note_cleanup_failure(&self, call: impl Into<String>, code: i32, name: impl Into<String>) {
        self.0.cleanup.push(crate::report::DriverError {
            call: call.into(),
            code,
            name: name.into(),
            text: String::new(),
        });
    }
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext").field("gpu", &self.0.index).finish()
    }
}

/// `ctx` made current on the calling thread until this drops, then the thread's
/// previous context again (also when the caller unwinds: a GPU callback's panic is
/// caught and its dispatcher goes on, in its own context). Nothing is undone where
/// `ctx` already was current.
pub(crate) struct Visit {
    restore: Option<(Arc<Context>, cudarc::driver::sys::CUcontext)>,
}

/// Makes `ctx` current on the calling thread until the answer drops.
///
/// # Errors
/// The driver's error asking for or binding the context (nothing changed then).
pub(crate) fn visit(ctx: &Arc<Context>) -> Result<Visit, crate::report::DriverError> {
    let before = driver::ctx_get_current().map_err(|e| failed("cuCtxGetCurrent", e))?;
    if before == ctx.ctx {
        return Ok(Visit { restore: None });
    }
    ctx.bind()?;
    Ok(Visit { restore: Some((ctx.clone(), before)) })
}

impl Drop for Visit {
    fn drop(&mut self) {
        let Some((ctx, before)) = self.restore.take() else { return };
        // SAFETY: `before` is null or the context current on this thread when `visit`
        // began. Its owner keeps it retained while it is current there (a dispatcher
        // holds its GPU's for the thread's life; a user's thread, its own), and that
        // owner's code on this thread is paused inside the visit, so it has not
        // released it.
        if let Err(e) = unsafe { driver::ctx_set_current(before) } {
            let call = format!("cuCtxSetCurrent restoring a thread's context after GPU {}'s", ctx.index);
            ctx.cleanup.push(failed(&call, e));
        }
    }
}
