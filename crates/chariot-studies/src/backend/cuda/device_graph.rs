//! Device-side execution of a static task graph (`kernels/device_graph.cu`):
//! the graph uploaded once as a CSR of successors with a dependency counter per node,
//! then per run a reset kernel and one persistent kernel per GPU that take ready nodes
//! from a queue in device memory and run them, while the host only waits (polling the
//! streams, with a watchdog). `crate::flow::DeviceGraph` is its safe face.
//!
//! With several GPUs, the control words, the counters and the queue live in the first
//! GPU's memory and the other GPUs reach them by peer access with system-scope atomics;
//! the graph itself and each GPU's sink are copied to every GPU. Peer access with native
//! atomics over the link is required (NVLink, or PCIe where the platform supports
//! peer atomics): without it the set-up fails rather than run with atomics that are not
//! atomic across GPUs (mapped host memory would need host-native atomics, which x86
//! hosts lack).
//!
//! Why this file is long: one rig over one or several GPUs (set-up, launch, the
//! watchdog's wait, read-back) and its Drop, which share every handle's lifetime.

use super::failed_text;
use crate::flow::{DeviceCsr, BLOCK};
use chariot_inorder::rig::PrimaryContext;
use cudarc::driver::result;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// The kernels' CUDA C.
const SOURCE: &str = include_str!("../../../kernels/device_graph.cu");

/// Control words before the per-GPU counts (`DG_PER_GPU` in the kernel).
const PER_GPU: usize = 8;
/// Control word: nodes finished (`DG_DONE`).
const DONE: usize = 2;
/// Control word: 0, 1 (a node failed) or 2 (aborted) (`DG_ERROR`).
const ERROR: usize = 3;
/// Control word: the failed node, -1 for none (`DG_FAILED`).
const FAILED: usize = 4;
/// The error word's value for a failed node (`DG_ERROR_NODE`).
const ERROR_NODE: i32 = 1;

/// Threads per block of the reset kernel.
const RESET_BLOCK: u32 = 256;
/// The reset kernel's most blocks (grid-stride beyond).
const RESET_MAX_BLOCKS: u32 = 1024;

/// How long the watchdog waits, after it set the abort word, for the blocks to notice
/// and exit before it gives the kernel up as stuck.
const ABORT_GRACE: Duration = Duration::from_secs(2);

/// How long the host spins on the streams before it yields its core between polls (a
/// short run is timed without the scheduler's wake-up latency; a long one does not
/// hold a core).
const SPIN: Duration = Duration::from_millis(20);

/// What one run ended with: the host time, the control words and every GPU's sink.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    /// From the reset's launch to the last stream's completion, in ns.
    pub(crate) wall_ns: u64,
    /// The watchdog set the abort word (the kernel then exited).
    pub(crate) aborted: bool,
    /// Nodes finished.
    pub(crate) done: usize,
    /// The node that failed (the test mode's), if one did.
    pub(crate) failed_node: Option<usize>,
    /// Nodes run by each GPU, in the order of the ordinals.
    pub(crate) per_gpu: Vec<usize>,
    /// Each GPU's sink after the run (0 where the GPU ran no node).
    pub(crate) sinks: Vec<f32>,
}

/// One GPU's part: its context, module, stream and its copy of the graph.
struct Gpu {
    ctx: PrimaryContext,
    module: Option<sys::CUmodule>,
    run: sys::CUfunction,
    reset: sys::CUfunction,
    stream: Option<sys::CUstream>,
    /// Every device allocation of this GPU, freed in the rig's Drop.
    allocs: Vec<u64>,
    offsets: u64,
    succ: u64,
    iters: u64,
    sink: u64,
    /// The abort word's device address in this context.
    abort: u64,
    /// Blocks of the persistent kernel: as many as fit resident, at most one per node.
    blocks: u32,
}

/// Everything one device graph holds on its GPUs, freed on drop (also after an error);
/// leaked on purpose when a kernel never finished (see `stuck`).
pub(crate) struct Rig {
    gpus: Vec<Gpu>,
    /// On the first GPU: control words, counters, queue, in-degrees and roots.
    control: u64,
    remaining: u64,
    queue: u64,
    indegree: u64,
    roots: u64,
    /// Mapped pinned host word the watchdog sets to stop the kernels.
    abort_host: Option<*mut i32>,
    /// Recorded after the reset on the first GPU, waited for by the others.
    reset_done: Option<sys::CUevent>,
    nodes: usize,
    nroots: usize,
    /// A kernel outlived its watchdog and the abort: nothing that it may still use is
    /// freed (freeing would wait for it), and the rig takes no more runs.
    stuck: bool,
}

impl std::fmt::Debug for Rig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rig")
            .field("gpus", &self.gpus.len())
            .field("nodes", &self.nodes)
            .field("blocks", &self.gpus.iter().map(|g| g.blocks).collect::<Vec<_>>())
            .field("stuck", &self.stuck)
            .finish()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if self.stuck {
            // A kernel still runs and uses these: synchronising or freeing would wait
            // for it forever. The memory, the contexts' references and the pinned word
            // are leaked, the process's exit reclaims them.
            std::mem::forget(std::mem::take(&mut self.gpus));
            return;
        }
        // SAFETY: every handle was created in its GPU's context by `build` and is
        // destroyed once; each stream is synchronised first, so no kernel still uses
        // the memory; the pinned word is freed after every GPU's work ended.
        unsafe {
            for g in &mut self.gpus {
                let _ = result::ctx::set_current(g.ctx.raw());
                if let Some(s) = g.stream {
                    let _ = result::stream::synchronize(s);
                }
            }
            if let (Some(e), Some(g)) = (self.reset_done.take(), self.gpus.first()) {
                let _ = result::ctx::set_current(g.ctx.raw());
                let _ = result::event::destroy(e);
            }
            for g in &mut self.gpus {
                let _ = result::ctx::set_current(g.ctx.raw());
                if let Some(s) = g.stream.take() {
                    let _ = result::stream::destroy(s);
                }
                for p in g.allocs.drain(..) {
                    let _ = result::free_sync(p);
                }
                if let Some(m) = g.module.take() {
                    let _ = result::module::unload(m);
                }
            }
            if let Some(p) = self.abort_host.take() {
                let _ = sys::cuMemFreeHost(p as *mut c_void);
            }
        }
    }
}

/// Compiles the kernels for `dev` and loads them into the current context: the module
/// (the caller unloads it), the single-GPU or system-scope run kernel, and the reset.
fn load(dev: sys::CUdevice, system: bool) -> Result<(sys::CUmodule, sys::CUfunction, sys::CUfunction), String> {
    // One source, several entry points: compiled once (per arch) under the run
    // kernel's name, which only keys the compile cache.
    let run_name = if system { "device_graph_run_system" } else { "device_graph_run" };
    let (module, f) = super::load_module(dev, "device_graph_run", SOURCE, &[run_name, "device_graph_reset"])?;
    Ok((module, f[0], f[1]))
}

/// Allocates room for `data` (at least 4 bytes, so that an empty array still has an
/// address) on the current context's GPU, records it in `allocs` and uploads `data`.
fn upload<T>(allocs: &mut Vec<u64>, data: &[T]) -> Result<u64, String> {
    let bytes = std::mem::size_of_val(data).max(4);
    // SAFETY: the caller made the context current; recorded at once, freed in Drop.
    let p = unsafe { result::malloc_sync(bytes) }.map_err(|e| failed_text("cuMemAlloc", e))?;
    allocs.push(p);
    if !data.is_empty() {
        // SAFETY: `p` holds `size_of_val(data)` bytes; the copy is synchronous.
        unsafe { result::memcpy_htod_sync(p, data) }.map_err(|e| failed_text("cuMemcpyHtoD", e))?;
    }
    Ok(p)
}

/// Whether GPU `from` can reach GPU `to`'s memory with atomics that are atomic across
/// the two (peer access and native atomics over the link).
fn peer_atomics(from: sys::CUdevice, to: sys::CUdevice) -> Result<bool, String> {
    let (mut can, mut atomics) = (0, 0);
    // SAFETY: two valid devices and live out-parameters.
    unsafe {
        sys::cuDeviceCanAccessPeer(&mut can, from, to).result().map_err(|e| failed_text("cuDeviceCanAccessPeer", e))?;
        sys::cuDeviceGetP2PAttribute(
            &mut atomics,
            sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
            from,
            to,
        )
        .result()
        .map_err(|e| failed_text("cuDeviceGetP2PAttribute", e))?;
    }
    Ok(can != 0 && atomics != 0)
}

/// `values` as the kernel parameter array cuLaunchKernel takes: a pointer to each
/// value. Parameters are 8 bytes or 4 (ints), and a 4-byte one is read from the low
/// bytes of its value, which come first on the little-endian hosts CUDA runs on.
fn params(values: &mut [u64]) -> Vec<*mut c_void> {
    values.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect()
}

impl Rig {
    /// Opens GPUs `ordinals` (which exist and are distinct), compiles the kernels for
    /// each, uploads `csr` with `iters` for every node and sizes each GPU's persistent
    /// grid; returns the rig and the host time of the allocations and uploads, in ns
    /// (compilation and loading not counted).
    pub(crate) fn build(ordinals: &[usize], csr: &DeviceCsr, iters: u32) -> Result<(Rig, u64), String> {
        let nodes = csr.indegree.len();
        let system = ordinals.len() > 1;
        let mut rig = Rig {
            gpus: Vec::with_capacity(ordinals.len()),
            control: 0,
            remaining: 0,
            queue: 0,
            indegree: 0,
            roots: 0,
            abort_host: None,
            reset_done: None,
            nodes,
            nroots: csr.roots.len(),
            stuck: false,
        };
        for &ordinal in ordinals {
            let ctx = PrimaryContext::retain(ordinal)?;
            ctx.bind()?;
            let (module, run, reset) = load(ctx.device(), system)?;
            rig.gpus.push(Gpu {
                ctx,
                module: Some(module),
                run,
                reset,
                stream: None,
                allocs: Vec::new(),
                offsets: 0,
                succ: 0,
                iters: 0,
                sink: 0,
                abort: 0,
                blocks: 1,
            });
        }
        if system {
            let first = rig.gpus[0].ctx.device();
            for (k, g) in rig.gpus.iter().enumerate().skip(1) {
                if !peer_atomics(g.ctx.device(), first)? {
                    return Err(format!(
                        "GPU {} cannot reach GPU {}'s memory with native peer atomics, which the device graph's \
                         shared queue needs",
                        ordinals[k], ordinals[0]
                    ));
                }
                g.ctx.bind()?;
                // SAFETY: the first GPU's live context; enabling twice is reported and
                // harmless (chariot or an earlier rig may have enabled it).
                match unsafe { sys::cuCtxEnablePeerAccess(rig.gpus[0].ctx.raw(), 0) }.result() {
                    Ok(()) => {}
                    Err(e) if e.0 == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
                    Err(e) => return Err(failed_text("cuCtxEnablePeerAccess", e)),
                }
            }
        }
        let t0 = Instant::now();
        rig.gpus[0].ctx.bind()?;
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: an out-pointer for 4 pinned bytes, mapped into every context
        // (portable); kept in the rig at once, freed in Drop.
        unsafe { sys::cuMemHostAlloc(&mut host, 4, sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP) }
            .result()
            .map_err(|e| failed_text("cuMemHostAlloc", e))?;
        rig.abort_host = Some(host as *mut i32);
        // SAFETY: 4 bytes just allocated, aligned for an i32.
        unsafe { std::ptr::write_volatile(host as *mut i32, 0) };
        let iters_all = vec![iters; nodes];
        for g in &mut rig.gpus {
            g.ctx.bind()?;
            g.stream = Some(
                result::stream::create(result::stream::StreamKind::NonBlocking)
                    .map_err(|e| failed_text("cuStreamCreate", e))?,
            );
            g.offsets = upload(&mut g.allocs, &csr.offsets)?;
            g.succ = upload(&mut g.allocs, &csr.successors)?;
            g.iters = upload(&mut g.allocs, &iters_all)?;
            g.sink = upload(&mut g.allocs, &[0f32])?;
            // SAFETY: a portable mapped allocation; its address in this context.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut g.abort, host, 0) }
                .result()
                .map_err(|e| failed_text("cuMemHostGetDevicePointer", e))?;
            // SAFETY: a function of this context's module; plain queries.
            let (per_sm, sms) = unsafe {
                (
                    result::occupancy::max_active_block_per_multiprocessor(g.run, BLOCK as i32, 0)
                        .map_err(|e| failed_text("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?,
                    result::device::get_attribute(
                        g.ctx.device(),
                        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                    )
                    .map_err(|e| failed_text("cuDeviceGetAttribute", e))?,
                )
            };
            let resident = (per_sm.max(1) as u64) * (sms.max(1) as u64);
            // Blocks beyond the nodes that can be ready at once only poll the queue and
            // slow those that work (a chain ran at 0.6 ms a node with 4,224 blocks).
            g.blocks = resident.min(nodes as u64).min(csr.width as u64).max(1) as u32;
        }
        let words = PER_GPU + rig.gpus.len();
        let g0 = &mut rig.gpus[0];
        g0.ctx.bind()?;
        rig.control = upload(&mut g0.allocs, &vec![0i32; words])?;
        rig.remaining = upload(&mut g0.allocs, &csr.indegree)?;
        rig.queue = upload(&mut g0.allocs, &vec![-1i32; nodes])?;
        rig.indegree = upload(&mut g0.allocs, &csr.indegree)?;
        rig.roots = upload(&mut g0.allocs, &csr.roots)?;
        if system {
            rig.reset_done = Some(
                result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                    .map_err(|e| failed_text("cuEventCreate", e))?,
            );
        }
        Ok((rig, t0.elapsed().as_nanos() as u64))
    }

    /// Persistent blocks launched on each GPU, in the order of the ordinals.
    pub(crate) fn blocks(&self) -> Vec<u32> {
        self.gpus.iter().map(|g| g.blocks).collect()
    }

    /// Runs the graph once: resets the counters and the queue on the device, launches
    /// the persistent kernel on every GPU and waits at most `timeout` for all of them
    /// (then sets the abort word and waits [`ABORT_GRACE`] more). `fail_node` ≥ 0 makes
    /// that node fail instead of running. The wall time covers the reset, the launches
    /// and the wait; the control words and sinks are read after it.
    pub(crate) fn run(&mut self, fail_node: i32, timeout: Duration) -> Result<Outcome, String> {
        if self.stuck {
            return Err("a previous run's kernel never finished; this device graph takes no more runs".into());
        }
        let Some(abort) = self.abort_host else {
            return Err("the device graph was not built".into());
        };
        // SAFETY: the pinned word lives as long as the rig; no kernel runs now (the
        // previous run ended), so the host is its only user.
        unsafe { std::ptr::write_volatile(abort, 0) };
        let words = PER_GPU + self.gpus.len();
        let t0 = Instant::now();
        self.launch(fail_node, words)?;
        let mut aborted = false;
        if !self.wait(t0 + timeout)? {
            // SAFETY: as above; the kernels only read the word.
            unsafe { std::ptr::write_volatile(abort, 1) };
            aborted = true;
            if !self.wait(Instant::now() + ABORT_GRACE)? {
                self.stuck = true;
                return Err(format!(
                    "the device graph's kernel did not finish within {timeout:?} nor exit within {ABORT_GRACE:?} \
                     of the abort; its memory is leaked"
                ));
            }
        }
        let wall_ns = t0.elapsed().as_nanos() as u64;
        let mut control = vec![0i32; words];
        self.gpus[0].ctx.bind()?;
        // SAFETY: `control` holds `words` ints, as allocated; every kernel has ended.
        unsafe { result::memcpy_dtoh_sync(&mut control, self.control) }.map_err(|e| failed_text("cuMemcpyDtoH", e))?;
        let mut sinks = Vec::with_capacity(self.gpus.len());
        for g in &self.gpus {
            g.ctx.bind()?;
            let mut s = [0f32];
            // SAFETY: the sink is one float; the kernel has ended.
            unsafe { result::memcpy_dtoh_sync(&mut s, g.sink) }.map_err(|e| failed_text("cuMemcpyDtoH", e))?;
            sinks.push(s[0]);
        }
        Ok(Outcome {
            wall_ns,
            aborted,
            done: control[DONE].max(0) as usize,
            failed_node: (control[ERROR] == ERROR_NODE && control[FAILED] >= 0).then_some(control[FAILED] as usize),
            per_gpu: control[PER_GPU..].iter().map(|&c| c.max(0) as usize).collect(),
            sinks,
        })
    }

    /// The reset on the first GPU, then the persistent kernel on every GPU (the others
    /// after the reset's event; their sinks zeroed on their own streams).
    fn launch(&mut self, fail_node: i32, words: usize) -> Result<(), String> {
        let system = self.gpus.len() > 1;
        let g0 = &self.gpus[0];
        let Some(s0) = g0.stream else {
            return Err("the device graph was not built".into());
        };
        g0.ctx.bind()?;
        let mut values = [
            self.control,
            words as u64,
            self.remaining,
            self.queue,
            self.indegree,
            self.roots,
            g0.sink,
            self.nodes as u64,
            self.nroots as u64,
        ];
        let grid = (self.nodes as u32).div_ceil(RESET_BLOCK).clamp(1, RESET_MAX_BLOCKS);
        // SAFETY: the reset kernel's parameters (int*, int, int*, int*, const int*,
        // const int*, float*, int, int) as declared in kernels/device_graph.cu, every
        // pointer an allocation of this rig on this GPU of the sizes the kernel uses.
        unsafe { result::launch_kernel(g0.reset, (grid, 1, 1), (RESET_BLOCK, 1, 1), 0, s0, &mut params(&mut values)) }
            .map_err(|e| failed_text("cuLaunchKernel", e))?;
        if let (true, Some(ev)) = (system, self.reset_done) {
            // SAFETY: an event and a stream of the first GPU's context.
            unsafe { result::event::record(ev, s0) }.map_err(|e| failed_text("cuEventRecord", e))?;
        }
        for (k, g) in self.gpus.iter().enumerate() {
            let Some(s) = g.stream else {
                return Err("the device graph was not built".into());
            };
            g.ctx.bind()?;
            if k > 0 {
                if let Some(ev) = self.reset_done {
                    // SAFETY: a live stream of this context and a live event of the
                    // first GPU's: a stream may wait on another context's event.
                    unsafe {
                        sys::cuMemsetD32Async(g.sink, 0, 1, s)
                            .result()
                            .map_err(|e| failed_text("cuMemsetD32Async", e))?;
                        result::stream::wait_event(s, ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
                            .map_err(|e| failed_text("cuStreamWaitEvent", e))?;
                    }
                }
            }
            let mut values = [
                self.control,
                self.remaining,
                self.queue,
                g.offsets,
                g.succ,
                g.iters,
                g.sink,
                g.abort,
                self.nodes as u64,
                fail_node as u32 as u64,
                k as u64,
            ];
            // SAFETY: the run kernel's parameters (int* ×3, const int* ×2, const
            // unsigned*, float*, const int*, int ×3) as declared in
            // kernels/device_graph.cu; the first three are the first GPU's memory,
            // reachable here (the same context, or peer access enabled in `build`), the
            // others this GPU's allocations or its mapping of the abort word.
            unsafe { result::launch_kernel(g.run, (g.blocks, 1, 1), (BLOCK, 1, 1), 0, s, &mut params(&mut values)) }
                .map_err(|e| failed_text("cuLaunchKernel", e))?;
        }
        Ok(())
    }

    /// Polls every GPU's stream until all are idle (true) or `deadline` passes (false);
    /// a stream that reports an error ends the wait with it.
    fn wait(&self, deadline: Instant) -> Result<bool, String> {
        let started = Instant::now();
        let mut pending: Vec<usize> = (0..self.gpus.len()).collect();
        let single = self.gpus.len() == 1;
        if single {
            self.gpus[0].ctx.bind()?;
        }
        loop {
            let mut k = 0;
            while k < pending.len() {
                let g = &self.gpus[pending[k]];
                let Some(s) = g.stream else {
                    return Err("the device graph was not built".into());
                };
                if !single {
                    g.ctx.bind()?;
                }
                // SAFETY: a live stream of the current context.
                match unsafe { sys::cuStreamQuery(s) }.result() {
                    Ok(()) => {
                        pending.swap_remove(k);
                    }
                    Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_READY => k += 1,
                    Err(e) => return Err(failed_text("cuStreamQuery", e)),
                }
            }
            if pending.is_empty() {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            if now - started < SPIN {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
}
