//! Device-side execution of a window (`Execution::Device`), as its graph operation
//! says it: the groups (the window's tasks), each one kernel launch of the same block
//! shape, run on the GPU by a
//! persistent kernel that takes ready tasks from a queue in device memory and counts
//! their dependencies down (Giles' scheme, as the studies' `kernels/device_graph.cu`);
//! no host call sits between two tasks.
//!
//! The executor is generated (`executor_source.rs`): the registered kernels' CUDA C,
//! with `__global__` made `__device__` and `blockIdx`/`gridDim` made the executor's own
//! per-task variables (a task's grid runs as a loop over its blocks on one persistent
//! block), then a dispatch on a kernel index calling each with its arguments from a
//! table. Compiled by NVRTC (and kept on disk) once per set of kernels and block shape.
//!
//! Per window, one image holds everything the executor reads and writes: the control
//! words, per task its remaining dependencies, the ready queue, the successors (CSR),
//! the task table (kernel, grid, arguments) and the argument values. It is uploaded
//! whole before the launch, which also resets the counters, on the stream the kernel
//! then runs on; completion is an event after it.
//!
//! A recorded graph's part runs the same image every run until it is updated (its
//! name, number and generation, says so), so its image stays on the GPU
//! ([`DeviceRunner::relaunch`]) with a pristine copy of the words a run changes: a run
//! again is one device-to-device copy of those words and the launch, with no walk of
//! the tasks (building the image of 1,023 tasks took the host about 180 µs a run).

use super::context::Context;
use super::executor_source::source;
use super::gpu::issue_fault;
use super::handle::{Module, Stream};
use super::{driver, failed};
use crate::backend::device::{KernelCode, Param};
use crate::backend::op::{GraphOp, GraphSource, Op};
use crate::backend::Fault;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::Arc;

/// Control words at the image's start (i32): next ticket, next queue slot, tasks done.
const CONTROL: usize = 4;
/// i32 words per task in the task table: kernel, grid x, y, z, first argument.
const ROW: usize = 5;

/// Threads of a block in x, y, z.
type BlockShape = (u32, u32, u32);

/// One compiled executor: the set of kernels and the block shape it was made for.
struct Executor {
    kernels: Vec<usize>,
    /// Unloaded when the runner drops (after the GPU's streams are synchronised).
    _module: Module,
    /// `module`'s entry point, valid while it is loaded.
    func: sys::CUfunction,
    /// Resident blocks of it per SM times the SMs: the most blocks worth launching.
    resident: u32,
}

/// A group's launch in the executor's task table: its kernel (by its function), grid,
/// dynamic shared memory and first argument word.
struct Row {
    func: usize,
    grid: (u32, u32, u32),
    shared: u32,
    at: usize,
}

/// A kernel's code, copied out of the launch that names it (to build an executor).
struct OwnedCode {
    name: String,
    source: String,
    params: Vec<Param>,
}

/// Recorded parts whose image a GPU keeps: a program records few graphs.
const KEPT: usize = 32;

/// A recorded part's image kept on the GPU, and how to launch it again.
struct KeptRun {
    /// The part's number and generation ([`GraphOp::recorded`]).
    name: (u64, u64),
    /// Device memory: the image at 0, a pristine copy of its first `head` bytes at
    /// `pristine`. Freed when it is dropped from the kept or the runner drops.
    buffer: u64,
    pristine: u64,
    /// The bytes a run writes: the control words, the remaining counts, the queue.
    head: usize,
    args_at: u64,
    n: i32,
    m: i32,
    executor: usize,
    blocks: u32,
    block: BlockShape,
    shared: u32,
}

/// One GPU's device-side runs: its executors, the image buffer, the run in flight.
pub(crate) struct DeviceRunner {
    ctx: Arc<Context>,
    executors: Vec<Executor>,
    /// Recorded parts' images, oldest first.
    kept: Vec<KeptRun>,
    /// Sets of kernels (and block shape) whose executor did not build: not tried again.
    refused: Vec<Vec<usize>>,
    /// Device memory for images, and its size in bytes (grown as windows need).
    buffer: u64,
    capacity: usize,
    /// The image of the run in flight (its upload reads it).
    image: Vec<u8>,
}

impl DeviceRunner {
    /// The runner of GPU `ctx`.
    pub(crate) fn new(ctx: Arc<Context>) -> DeviceRunner {
        DeviceRunner {
            ctx,
            executors: Vec::new(),
            kept: Vec::new(),
            refused: Vec::new(),
            buffer: 0,
            capacity: 0,
            image: Vec::new(),
        }
    }

    /// The executor for the kernels `ids` (their loaded functions, in order, then the
    /// block's threads), compiled and loaded at first use from their code, which
    /// `codes` finds (owned: the nodes that name it are lowered while they are walked).
    fn executor(
        &mut self,
        ctx: &Context,
        arch: &str,
        ids: &[usize],
        threads: u32,
        codes: impl FnOnce() -> Result<Vec<OwnedCode>, Fault>,
    ) -> Result<usize, Fault> {
        if let Some(i) = self.executors.iter().position(|e| e.kernels.split_last() == Some((&(threads as usize), ids)))
        {
            return Ok(i);
        }
        let ids: Vec<usize> = ids.iter().copied().chain([threads as usize]).collect();
        if self.refused.contains(&ids) {
            return Err(Fault::task("the device-side executor of these kernels did not build"));
        }
        let owned = codes()?;
        let codes: Vec<KernelCode<'_>> =
            owned.iter().map(|c| KernelCode { name: &c.name, source: &c.source, params: &c.params }).collect();
        let src = source(&codes);
        let def = KernelCode { name: "chariot_device_window", source: &src, params: &[] };
        let image = match super::nvrtc::compile(def, arch) {
            Ok(image) => image,
            Err(e) => {
                self.refused.push(ids);
                return Err(Fault::task(format!("the device-side executor: {e}")));
            }
        };
        // SAFETY: a complete cubin for this context's device, as NVRTC made it; the
        // context is current (this GPU's dispatcher thread).
        let module = unsafe { Module::load_data(&self.ctx, &image) }.map_err(issue_fault("cuModuleLoadData"))?;
        // A module without the entry is unloaded as its handle drops.
        let func = module.get_function(c"chariot_device_window").map_err(issue_fault("cuModuleGetFunction"))?;
        // SAFETY: `func` is of `module`, loaded until the executor drops.
        let per_sm =
            unsafe { driver::occupancy_max_active_blocks_per_multiprocessor(func, threads as i32, 0) }.unwrap_or(1);
        let sms =
            driver::device_get_attribute(ctx.dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .unwrap_or(1);
        self.executors.push(Executor {
            kernels: ids,
            _module: module,
            func,
            resident: (per_sm.max(1) * sms.max(1)) as u32,
        });
        Ok(self.executors.len() - 1)
    }

    /// Each group's launch (an error for a group that is not one kernel launch), with
    /// their argument words in `args`; and the kernels they launch (each once, by its
    /// function, in order of first use) and their block shape.
    fn launches<N: GraphSource>(
        g: &GraphOp<'_, N>,
        args: &mut Vec<u64>,
    ) -> Result<(Vec<Row>, Vec<usize>, BlockShape), Fault> {
        let not_one = || Fault::task("a device-side window holds a task that is not one kernel launch");
        if g.groups().any(|gr| gr.nodes != 1) {
            return Err(not_one());
        }
        let mut rows = Vec::with_capacity(g.groups().len());
        let mut kernels = Vec::new();
        let mut block = (1, 1, 1);
        args.clear();
        g.each_node(true, |node| {
            let Op::Launch(l) = node.op else { return Err(not_one()) };
            let func = l.func.ok_or("kernel not loaded on this GPU")?.func as usize;
            if !kernels.contains(&func) {
                kernels.push(func);
            }
            block = l.block;
            rows.push(Row { func, grid: l.grid, shared: l.shared_bytes, at: args.len() });
            args.extend_from_slice(l.args);
            Ok(())
        })?;
        Ok((rows, kernels, block))
    }

    /// The code of each kernel of `ids` (by its function), from `g`'s launches.
    fn codes<N: GraphSource>(g: &GraphOp<'_, N>, ids: &[usize]) -> Result<Vec<OwnedCode>, Fault> {
        let mut found: Vec<Option<OwnedCode>> = ids.iter().map(|_| None).collect();
        g.each_node(true, |node| {
            if let Op::Launch(l) = node.op {
                let func = l.func.map_or(0, |f| f.func as usize);
                if let Some(i) = ids.iter().position(|&k| k == func) {
                    found[i].get_or_insert_with(|| OwnedCode {
                        name: l.code.name.to_owned(),
                        source: l.code.source.to_owned(),
                        params: l.code.params.to_vec(),
                    });
                }
            }
            Ok::<(), Fault>(())
        })?;
        found.into_iter().map(|c| c.ok_or_else(|| Fault::task("a kernel of the window has no code"))).collect()
    }

    /// Runs `g` on the device: uploads its image and launches its executor on
    /// `stream`. `Ok(false)` where its executor cannot be built (a set of kernels whose
    /// source does not compile as device functions): nothing is enqueued, and the
    /// window replays as a graph instead.
    pub(crate) fn launch<N: GraphSource>(
        &mut self,
        ctx: &Context,
        arch: &str,
        g: &GraphOp<'_, N>,
        stream: &Stream,
    ) -> Result<bool, Fault> {
        let stream_raw = stream.raw();
        let mut args = Vec::new();
        // A window that is not one launch a task replays as a graph (which names it).
        let Ok((launches, kernels, block)) = Self::launches(g, &mut args) else { return Ok(false) };
        let threads = block.0 * block.1 * block.2;
        let ex = match self.executor(ctx, arch, &kernels, threads, || Self::codes(g, &kernels)) {
            Ok(ex) => ex,
            Err(_) => return Ok(false),
        };
        let preds: Vec<&[u32]> = g.groups().map(|gr| gr.after).collect();
        let (n, m) = (preds.len(), preds.iter().map(|p| p.len()).sum::<usize>());
        // The image, as the kernel's comment lays it out; then the argument words.
        let mut words: Vec<i32> = Vec::with_capacity(CONTROL + 3 * n + 1 + m + ROW * n);
        words.extend([0; CONTROL]);
        words.extend(preds.iter().map(|p| p.len() as i32));
        let roots: Vec<i32> = (0..n).filter(|&t| preds[t].is_empty()).map(|t| t as i32).collect();
        words[1] = roots.len() as i32;
        words.extend(roots.iter().copied().chain(std::iter::repeat(-1)).take(n));
        let mut succ: Vec<Vec<i32>> = vec![Vec::new(); n];
        for (t, p) in preds.iter().enumerate() {
            for &q in p.iter() {
                succ[q as usize].push(t as i32);
            }
        }
        let mut at = 0i32;
        for s in &succ {
            words.push(at);
            at += s.len() as i32;
        }
        words.push(at);
        succ.iter().for_each(|s| words.extend(s));
        for l in &launches {
            let k = kernels.iter().position(|&k| k == l.func).unwrap_or(0);
            let (x, y, z) = l.grid;
            words.extend([k as i32, x as i32, y as i32, z as i32, l.at as i32]);
        }
        let args_at = (words.len() * 4).div_ceil(8) * 8;
        let bytes = args_at + args.len() * 8;
        self.image.clear();
        self.image.extend(words.iter().flat_map(|v| v.to_le_bytes()));
        self.image.resize(args_at, 0);
        self.image.extend(args.iter().flat_map(|v| v.to_le_bytes()));
        // Enough blocks for the widest level of the graph, no more (idle blocks only
        // poll the queue).
        let mut level = vec![0usize; n];
        let mut per_level = vec![0usize; n.max(1)];
        for t in 0..n {
            level[t] = preds[t].iter().map(|&p| level[p as usize] + 1).max().unwrap_or(0);
            per_level[level[t]] += 1;
        }
        let width = per_level.iter().copied().max().unwrap_or(1).max(1);
        let blocks = (self.executors[ex].resident as usize).min(width).max(1) as u32;
        let shared = launches.iter().map(|l| l.shared).max().unwrap_or(0);
        // The words a run writes: control, remaining and queue.
        let head = (CONTROL + 2 * n) * 4;
        // A recorded part's image gets memory of its own, with room for the pristine
        // copy of its head after it; kept only once it is uploaded and launched (a
        // failed step frees it: no later run may find a half-made image).
        let mut kept = None;
        if let Some(name) = g.recorded {
            let pristine = bytes.div_ceil(256) * 256;
            // No device-side run is in flight (one at a time a GPU), so an older image
            // may be freed: the oldest, and any of this part's older generations (never
            // launched again).
            let stale = |k: &KeptRun| k.name.0 == name.0;
            if self.kept.len() >= KEPT || self.kept.iter().any(stale) {
                let at = self.kept.iter().position(stale).unwrap_or(0);
                let old = self.kept.remove(at);
                self.free(old.buffer);
            }
            let buffer = driver::mem_alloc(pristine + head).map_err(issue_fault("cuMemAlloc"))?;
            kept = Some(KeptRun {
                name,
                buffer,
                pristine: buffer + pristine as u64,
                head,
                args_at: buffer + args_at as u64,
                n: n as i32,
                m: m as i32,
                executor: ex,
                blocks,
                block,
                shared,
            });
        } else if bytes > self.capacity {
            self.free_buffer();
            let size = bytes.next_power_of_two();
            // Freed in Drop or when it grows.
            self.buffer = driver::mem_alloc(size).map_err(issue_fault("cuMemAlloc"))?;
            self.capacity = size;
        }
        let (buffer, args_ptr) = match &kept {
            Some(k) => (k.buffer, k.args_at),
            None => (self.buffer, self.buffer + args_at as u64),
        };
        let func = self.executors[ex].func;
        let image = self.image.as_ptr() as *const c_void;
        // SAFETY: this GPU's context is current and `stream` is its; the buffer, an
        // allocation of it, holds `bytes` (and a kept image's pristine copy its `head`
        // bytes after them) and is freed only when no run is in flight; the image
        // (`bytes` long, `head` ≤ `bytes`) lives in `self`, unchanged until the run
        // completes (the next launch waits for it: one device-side window in flight a
        // GPU); then `start`'s first precondition: the executor's function, its image
        // just uploaded (`n` tasks, `m` edges) with the argument words at `args_ptr`.
        let launched = unsafe {
            let pristine = kept.as_ref().map(|k| k.pristine);
            pristine
                .map_or(Ok(()), |p| driver::memcpy_htod_async(p, image, head, stream_raw))
                .and_then(|()| driver::memcpy_htod_async(buffer, image, bytes, stream_raw))
                .map_err(issue_fault("cuMemcpyHtoDAsync"))
                .and_then(|()| start(func, buffer, n as i32, m as i32, args_ptr, blocks, block, shared, stream_raw))
        };
        match (launched, kept) {
            (Ok(()), Some(k)) => self.kept.push(k),
            (Err(f), Some(k)) => {
                // Nothing runs from it; the copies into it that went are all that may
                // be in flight, and cuMemFree synchronizes with them.
                self.free(k.buffer);
                return Err(f);
            }
            (r, None) => r?,
        }
        Ok(true)
    }

    /// Where this GPU keeps the image of the recorded part `name`, if it does.
    pub(crate) fn kept_as(&self, name: (u64, u64)) -> Option<usize> {
        self.kept.iter().position(|k| k.name == name)
    }

    /// Runs kept image `at` (from [`DeviceRunner::kept_as`]) again: its head reset
    /// from the pristine copy, then the executor launched on `stream`, as its last run
    /// was.
    pub(crate) fn relaunch(&mut self, at: usize, stream: &Stream) -> Result<(), Fault> {
        let k = &self.kept[at];
        let stream_raw = stream.raw();
        // SAFETY: this GPU's context is current and `stream` is its; both ranges lie
        // in `k.buffer`, allocated until no run is in flight, and no other run is in
        // flight (one device-side window at a time a GPU).
        unsafe { driver::memcpy_async(k.buffer, k.pristine, k.head, stream_raw) }
            .map_err(issue_fault("cuMemcpyAsync (device-side window)"))?;
        let func = self.executors[k.executor].func;
        // SAFETY: the executor this image was launched with (loaded until the runner
        // drops), the image as its first launch uploaded it, its head reset above on
        // the same stream; its argument words name the part's buffers, which its tasks
        // hold while the recorded graph lives, and its runs' claims keep other access
        // away (a kept image is dropped when its part's generation changes).
        unsafe { start(func, k.buffer, k.n, k.m, k.args_at, k.blocks, k.block, k.shared, stream_raw) }
    }
}

/// Launches the executor `func` on `blocks` blocks of `block` threads over the image at
/// `image` (`n` tasks, `m` edges, argument words at `args`) on `stream`.
///
/// # Safety
/// 1. `func` is an executor loaded in the current context, which owns `stream`; the
///    image is fully uploaded (or reset) on `stream` before this call, and stays
///    allocated until the run completes.
/// 2. Every buffer argument in the image's table is a live allocation held until the
///    run completes, nothing else touching it meanwhile.
#[allow(clippy::too_many_arguments)]
unsafe fn start(
    func: sys::CUfunction,
    image: u64,
    n: i32,
    m: i32,
    args: u64,
    blocks: u32,
    block: BlockShape,
    shared: u32,
    stream: sys::CUstream,
) -> Result<(), Fault> {
    let (mut image, mut n, mut m, mut args) = (image, n, m, args);
    let mut params: [*mut c_void; 4] = [
        &mut image as *mut u64 as *mut c_void,
        &mut n as *mut i32 as *mut c_void,
        &mut m as *mut i32 as *mut c_void,
        &mut args as *mut u64 as *mut c_void,
    ];
    // SAFETY: preconditions 1 and 2; the four parameters (int*, int, int, unsigned
    // long long*) point at live locals of those sizes, copied at the call.
    unsafe { driver::launch_kernel(func, (blocks, 1, 1), block, shared, stream, &mut params) }
        .map_err(issue_fault("cuLaunchKernel (device-side window)"))
}

impl DeviceRunner {
    /// Frees the image buffer, its error kept for the report. No run is in flight (a
    /// GPU runs one device-side window at a time, and the runner drops after the GPU's
    /// streams are synchronised).
    fn free_buffer(&mut self) {
        if self.buffer != 0 {
            self.free(self.buffer);
            self.buffer = 0;
        }
    }

    /// Frees `buffer`, an image's memory (the shared buffer or a kept one), its error
    /// kept for the report. No run that reads it is in flight (see above).
    fn free(&self, buffer: u64) {
        // SAFETY: allocated by `mem_alloc` in this context, freed once (the callers
        // zero or drop their handle); no run that reads it is in flight.
        if let Err(e) = unsafe { driver::mem_free(buffer) } {
            self.ctx.cleanup.push(failed(&format!("cuMemFree on GPU {}", self.ctx.index), e));
        }
    }
}

impl Drop for DeviceRunner {
    /// The buffers, then the executors' modules (the fields).
    fn drop(&mut self) {
        self.free_buffer();
        for k in std::mem::take(&mut self.kept) {
            self.free(k.buffer);
        }
    }
}
