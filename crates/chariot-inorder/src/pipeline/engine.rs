//! The in-order pipeline on a GPU: plain driver calls on the primary context, a stream,
//! an event and buffers per stream, pinned staging blocks ([`Rig`]).

use super::{Device, DeviceArg, InOrderLaunch, InOrderPlan, MAX_PARAMS};
use crate::rig::failed_text;
use crate::rig::PrimaryContext;
use chariot::Kernel;
use cudarc::driver::result;
use cudarc::driver::sys;
use std::ffi::c_void;

/// Pinned host blocks, freed by [`Rig`]'s drop.
pub(super) struct Host {
    blocks: Vec<(*mut c_void, usize)>,
}

impl Host {
    /// Every block as a byte slice, borrowed from `self`.
    pub(super) fn slices(&mut self) -> Vec<&mut [u8]> {
        self.blocks
            .iter()
            // SAFETY: each block is a distinct live allocation of `len` bytes, zeroed at
            // allocation, freed only when the Rig drops; `&mut self` keeps the slices
            // from outliving it or being made twice.
            .map(|&(ptr, len)| unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) })
            .collect()
    }
}

/// The GPU side: a stream, an event and input, output and scratch buffers per stream.
pub(super) struct Engine {
    func: sys::CUfunction,
    streams: Vec<sys::CUstream>,
    events: Vec<sys::CUevent>,
    inputs: Vec<u64>,
    outputs: Vec<u64>,
    scratch: Vec<Vec<u64>>,
    constants: Vec<u64>,
    /// Launch argument storage: cuLaunchKernel copies the values at the call.
    values: [u64; MAX_PARAMS],
    pointers: [*mut c_void; MAX_PARAMS],
}

/// Everything of one CUDA run, freed on drop (also after an error).
pub(super) struct Rig {
    ctx: PrimaryContext,
    module: Option<sys::CUmodule>,
    pub(super) engine: Engine,
    pub(super) host: Host,
}

impl Drop for Rig {
    fn drop(&mut self) {
        // SAFETY: every handle was created in `open` in this context and is destroyed
        // once; streams are synchronised first, so no copy still uses a buffer.
        unsafe {
            let _ = result::ctx::set_current(self.ctx.raw());
            let e = &mut self.engine;
            for &s in &e.streams {
                let _ = result::stream::synchronize(s);
            }
            for &ev in &e.events {
                let _ = result::event::destroy(ev);
            }
            for &s in &e.streams {
                let _ = result::stream::destroy(s);
            }
            for &d in e.inputs.iter().chain(&e.outputs).chain(e.scratch.iter().flatten()).chain(&e.constants) {
                let _ = result::free_sync(d);
            }
            for &(p, _) in &self.host.blocks {
                let _ = result::free_host(p);
            }
            if let Some(m) = self.module.take() {
                let _ = result::module::unload(m);
            }
        }
    }
}

impl Rig {
    pub(super) fn open(
        ordinal: usize,
        kernel: &Kernel,
        plan: &InOrderPlan<'_>,
        slots: usize,
        in_bytes: usize,
        out_bytes: usize,
    ) -> Result<Rig, String> {
        let ctx = PrimaryContext::retain(ordinal)?;
        let mut rig = Rig {
            ctx,
            module: None,
            engine: Engine {
                func: std::ptr::null_mut(),
                streams: Vec::new(),
                events: Vec::new(),
                inputs: Vec::new(),
                outputs: Vec::new(),
                scratch: Vec::new(),
                constants: Vec::new(),
                values: [0; MAX_PARAMS],
                pointers: [std::ptr::null_mut(); MAX_PARAMS],
            },
            host: Host { blocks: Vec::new() },
        };
        rig.ctx.bind()?;
        // The same cubin chariot loads (NVRTC's cache is per process).
        let (module, func) = crate::rig::load_kernel(rig.ctx.device(), kernel)?;
        rig.module = Some(module);
        rig.engine.func = func;
        let alloc = |bytes: usize| {
            // SAFETY: the context is current; every pointer is pushed to the rig at once
            // and freed in Drop.
            unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| failed_text("cuMemAlloc", e))
        };
        let e = &mut rig.engine;
        for _ in 0..plan.streams {
            e.streams.push(
                result::stream::create(result::stream::StreamKind::NonBlocking)
                    .map_err(|e| failed_text("cuStreamCreate", e))?,
            );
            e.events.push(
                result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                    .map_err(|e| failed_text("cuEventCreate", e))?,
            );
            e.inputs.push(alloc(in_bytes)?);
            e.outputs.push(alloc(out_bytes)?);
            e.scratch.push(Vec::new());
            for &b in &plan.scratch_bytes {
                let d = alloc(b)?;
                e.scratch.last_mut().expect("pushed above").push(d);
            }
        }
        for &c in &plan.constants {
            let d = alloc(c.len())?;
            e.constants.push(d);
            if !c.is_empty() {
                // SAFETY: `d` holds `c.len()` bytes; the copy is synchronous.
                unsafe { result::memcpy_htod_sync(d, c) }.map_err(|e| failed_text("cuMemcpyHtoD", e))?;
            }
        }
        for bytes in std::iter::repeat_n(in_bytes, slots).chain(std::iter::repeat_n(out_bytes, slots)) {
            // Pinned and portable, as chariot's host buffers are, so the copies are DMA.
            // SAFETY: a context is current; freed in Drop.
            let p = unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }
                .map_err(|e| failed_text("cuMemHostAlloc", e))?;
            if p.is_null() {
                return Err("cuMemHostAlloc returned null".into());
            }
            rig.host.blocks.push((p, bytes));
            // SAFETY: `p` has `bytes` writable bytes that nothing else sees yet; zeroing
            // also touches every page before the run, as chariot's allocation does.
            unsafe { std::ptr::write_bytes(p as *mut u8, 0, bytes) };
        }
        Ok(rig)
    }
}

impl Device for Engine {
    unsafe fn issue(
        &mut self,
        s: usize,
        input: &[u8],
        launches: &[InOrderLaunch],
        output: &mut [u8],
    ) -> Result<(), String> {
        let stream = self.streams[s];
        if !input.is_empty() {
            // SAFETY: the stream's input buffer holds the plan's capacity, which the
            // length fits (checked); the host slice is pinned and stays untouched until
            // the stream's event has completed (the caller's contract).
            unsafe { result::memcpy_htod_async(self.inputs[s], input, stream) }
                .map_err(|e| failed_text("cuMemcpyHtoDAsync", e))?;
        }
        for l in launches {
            for (i, a) in l.args.iter().enumerate() {
                // Each value sits in the low bytes of its 8-byte slot (little-endian),
                // which is where the driver reads a 4-byte parameter from.
                self.values[i] = match *a {
                    DeviceArg::Input => self.inputs[s],
                    DeviceArg::Output => self.outputs[s],
                    DeviceArg::Scratch(k) => self.scratch[s][k],
                    DeviceArg::Constant(k) => self.constants[k],
                    DeviceArg::I32(v) => v as u32 as u64,
                    DeviceArg::U32(v) => v as u64,
                    DeviceArg::I64(v) => v as u64,
                    DeviceArg::U64(v) => v,
                    DeviceArg::F32(v) => v.to_bits() as u64,
                    DeviceArg::F64(v) => v.to_bits(),
                };
                self.pointers[i] = &mut self.values[i] as *mut u64 as *mut c_void;
            }
            let (g, b) = (l.shape.grid, l.shape.block);
            // SAFETY: `func` is loaded in this context; every buffer argument is a live
            // allocation of this rig; the kinds match the kernel's parameters (checked).
            unsafe {
                result::launch_kernel(
                    self.func,
                    (g.x, g.y, g.z),
                    (b.x, b.y, b.z),
                    l.shape.shared_bytes,
                    stream,
                    &mut self.pointers[..l.args.len()],
                )
            }
            .map_err(|e| failed_text("cuLaunchKernel", e))?;
        }
        if !output.is_empty() {
            // SAFETY: as for the download, with the stream's output buffer.
            unsafe { result::memcpy_dtoh_async(output, self.outputs[s], stream) }
                .map_err(|e| failed_text("cuMemcpyDtoHAsync", e))?;
        }
        // SAFETY: the stream's own event; its previous chunk was waited for.
        unsafe { result::event::record(self.events[s], stream) }.map_err(|e| failed_text("cuEventRecord", e))
    }

    fn wait(&mut self, s: usize) -> Result<(), String> {
        // SAFETY: the stream's event, recorded by `issue`.
        unsafe { result::event::synchronize(self.events[s]) }.map_err(|e| failed_text("cuEventSynchronize", e))
    }

    fn quiesce(&mut self) {
        for &s in &self.streams {
            // SAFETY: a live stream of this rig.
            let _ = unsafe { result::stream::synchronize(s) };
        }
    }
}
