//! A GPU's primary context, retained by a hand-written pipeline for as long as it runs
//! and released when dropped: what every baseline's rig opens first and gives back
//! last (its own `Drop` frees what it made in the context, then this releases it).

use crate::rig::failed_text;
use cudarc::driver::{result, sys};

/// The retained primary context of one GPU.
#[derive(Debug)]
pub struct PrimaryContext {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
}

impl PrimaryContext {
    /// Retains GPU `ordinal`'s primary context (the ordinal must exist: callers check it
    /// against the driver's device count first).
    pub fn retain(ordinal: usize) -> Result<PrimaryContext, String> {
        let dev = result::device::get(ordinal as i32).map_err(|e| failed_text("cuDeviceGet", e))?;
        // SAFETY: `dev` is a valid device; the context is released once, in Drop.
        let ctx =
            unsafe { result::primary_ctx::retain(dev) }.map_err(|e| failed_text("cuDevicePrimaryCtxRetain", e))?;
        Ok(PrimaryContext { dev, ctx })
    }

    /// The device.
    pub fn device(&self) -> sys::CUdevice {
        self.dev
    }

    /// Makes the context current on this thread.
    pub fn bind(&self) -> Result<(), String> {
        // SAFETY: a context retained by this value, alive until it drops.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(|e| failed_text("cuCtxSetCurrent", e))
    }

    /// The context's handle, for driver calls that name it.
    pub fn raw(&self) -> sys::CUcontext {
        self.ctx
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: retained once in `retain`, released once here.
        let _ = unsafe { result::primary_ctx::release(self.dev) };
    }
}
