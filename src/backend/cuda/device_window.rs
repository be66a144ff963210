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

/// One GPU's device-side runs: its executors, the image buffer, the run in flight.
pub(crate) struct DeviceRunner {
    ctx: Arc<Context>,
    executors: Vec<Executor>,
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
        DeviceRunner { ctx, executors: Vec::new(), refused: Vec::new(), buffer: 0, capacity: 0, image: Vec::new() }
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
        if bytes > self.capacity {
            self.free_buffer();
            let size = bytes.next_power_of_two();
            // Freed in Drop or when it grows.
            self.buffer = driver::mem_alloc(size).map_err(issue_fault("cuMemAlloc"))?;
            self.capacity = size;
        }
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
        // SAFETY: this GPU's context is current and `stream` is its; the buffer, an
        // allocation of it, holds `bytes` and is freed only when no run is in flight;
        // the image (`bytes` long) lives in `self`, unchanged until the run completes
        // (the next launch waits for it: one device-side window in flight a GPU).
        unsafe {
            driver::memcpy_htod_async(self.buffer, self.image.as_ptr() as *const c_void, bytes, stream_raw)
                .map_err(issue_fault("cuMemcpyHtoDAsync"))?;
        }
        let (mut image, mut n_arg, mut m_arg, mut args_ptr) =
            (self.buffer, n as i32, m as i32, self.buffer + args_at as u64);
        let mut params: [*mut c_void; 4] = [
            &mut image as *mut u64 as *mut c_void,
            &mut n_arg as *mut i32 as *mut c_void,
            &mut m_arg as *mut i32 as *mut c_void,
            &mut args_ptr as *mut u64 as *mut c_void,
        ];
        let func = self.executors[ex].func;
        let shared = launches.iter().map(|l| l.shared);
        // SAFETY: the executor's function, loaded in this context (current) until the
        // runner drops; its four parameters (int*, int, int, unsigned long long*) point
        // at live locals of those sizes (copied at the call); the image buffer stays
        // allocated until the run completes; every buffer argument in the table is a
        // live allocation held by the window's tasks until the run completes, their
        // claims keeping other access away.
        unsafe {
            driver::launch_kernel(func, (blocks, 1, 1), block, shared.max().unwrap_or(0), stream_raw, &mut params)
        }
        .map_err(issue_fault("cuLaunchKernel (device-side window)"))?;
        Ok(true)
    }
}

impl DeviceRunner {
    /// Frees the image buffer, its error kept for the report. No run is in flight (a
    /// GPU runs one device-side window at a time, and the runner drops after the GPU's
    /// streams are synchronised).
    fn free_buffer(&mut self) {
        if self.buffer != 0 {
            // SAFETY: allocated by `mem_alloc` in this context, freed once (zeroed
            // below); no run that reads it is in flight (see above).
            if let Err(e) = unsafe { driver::mem_free(self.buffer) } {
                self.ctx.cleanup.push(failed(&format!("cuMemFree on GPU {}", self.ctx.index), e));
            }
            self.buffer = 0;
        }
    }
}

impl Drop for DeviceRunner {
    /// The buffer, then the executors' modules (the fields).
    fn drop(&mut self) {
        self.free_buffer();
    }
}
