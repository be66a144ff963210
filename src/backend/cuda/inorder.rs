//! A hand-written, in-order pipeline (issue 6's baseline): what a CUDA programmer writes
//! without chariot. Producer threads prepare chunks into pinned staging slots; the
//! calling thread issues chunk i on stream i mod S, in order, and before reusing a
//! stream waits for that stream's previous chunk (its event) and consumes its output.
//! [`crate::baseline::in_order`] is the safe entry point and states the protocol; the
//! types of its plan and outcome are defined here, and `crate::baseline` re-exports them.
//!
//! The loop ([`pipeline`]) is written once over [`Device`], which has two
//! implementations: [`Rig`], plain driver calls on the primary context, and [`Twin`],
//! the kernel's CPU twin run at issue, for checking a pipeline's wiring with no GPU.
//!
//! Invariant: a slot belongs to exactly one party at a time — the free list, one
//! producer, or the in-flight entry of one stream — and leaves a stream only after that
//! stream's event has completed. So no staging buffer is rewritten while its download
//! may still read it, and no output is consumed before its readback has ended.

use super::failed_text;
use crate::callback::run_caught;
use crate::error::{BoxError, Error};
use crate::kernel::{ArgValue, Kernel, LaunchShape, Param, TwinArgs};
use crate::memory::Element;
use cudarc::driver::result;
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Where [`in_order`](crate::baseline::in_order) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InOrderDevice {
    /// CUDA GPU `ordinal`, through plain driver calls on its primary context.
    Cuda {
        /// The CUDA device number.
        ordinal: usize,
    },
    /// The kernel's CPU twin, run on the calling thread at issue, with the same
    /// producer threads, slots and order: for checking a pipeline's wiring where there
    /// is no GPU. Its times say nothing about a GPU.
    CpuTwin,
}

/// A device buffer a launch of [`in_order`](crate::baseline::in_order) names, or a scalar argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DeviceArg {
    /// The stream's input buffer: the chunk as the producer wrote it.
    Input,
    /// The stream's output buffer, read back after the chunk's last launch.
    Output,
    /// The stream's scratch buffer `k` (of [`InOrderPlan::scratch_bytes`]).
    Scratch(usize),
    /// Constant buffer `k` (of [`InOrderPlan::constants`]), downloaded once before the
    /// run and shared by every stream.
    Constant(usize),
    /// An `int`.
    I32(i32),
    /// An `unsigned int`.
    U32(u32),
    /// A `long long`.
    I64(i64),
    /// An `unsigned long long`.
    U64(u64),
    /// A `float`.
    F32(f32),
    /// A `double`.
    F64(f64),
}

impl DeviceArg {
    /// The kernel parameter kind this argument fills.
    pub fn param(&self) -> Param {
        match self {
            DeviceArg::Input | DeviceArg::Output | DeviceArg::Scratch(_) | DeviceArg::Constant(_) => Param::Buffer,
            DeviceArg::I32(_) => Param::I32,
            DeviceArg::U32(_) => Param::U32,
            DeviceArg::I64(_) => Param::I64,
            DeviceArg::U64(_) => Param::U64,
            DeviceArg::F32(_) => Param::F32,
            DeviceArg::F64(_) => Param::F64,
        }
    }
}

/// One kernel launch of a chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct InOrderLaunch {
    /// Grid, block and dynamic shared memory.
    pub shape: LaunchShape,
    /// The arguments, one per declared parameter of the kernel.
    pub args: Vec<DeviceArg>,
}

/// What the producer made of a chunk: how much of the staging buffer to download, the
/// launches, how much output to read back, and `meta`, which the consumer receives
/// with that output.
#[derive(Clone, Debug)]
pub struct Prepared<M> {
    /// Anything the consumer needs besides the output (names, a permutation).
    pub meta: M,
    /// Elements of the staging buffer to download, from its start.
    pub input_len: usize,
    /// Launches, in order, on the chunk's stream.
    pub launches: Vec<InOrderLaunch>,
    /// Elements of the output buffer to read back, from its start.
    pub output_len: usize,
}

/// The shape of an [`in_order`](crate::baseline::in_order) run.
#[derive(Clone, Debug)]
pub struct InOrderPlan<'a> {
    /// Where it runs.
    pub device: InOrderDevice,
    /// Streams S: chunk i runs on stream i mod S (2: classic double buffering).
    pub streams: usize,
    /// Producer threads: chunk i is prepared by thread i mod `readers`. There are
    /// `streams + readers` slots (staging and output buffers), so the producers run at
    /// most `readers` chunks ahead of the GPU.
    pub readers: usize,
    /// Chunks, prepared, run and consumed in order 0, 1, ….
    pub chunks: usize,
    /// Capacity of each staging (input) buffer, elements.
    pub input_len: usize,
    /// Capacity of each output buffer, elements.
    pub output_len: usize,
    /// Sizes in bytes of each stream's scratch buffers ([`DeviceArg::Scratch`]).
    pub scratch_bytes: Vec<usize>,
    /// Read-only inputs shared by every chunk ([`DeviceArg::Constant`]).
    pub constants: Vec<&'a [u8]>,
}

/// What an [`in_order`](crate::baseline::in_order) run took. Times are ns since the run's start, taken just
/// before the producers start (set-up — module, streams, allocations — is before it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InOrderTiming {
    /// From the start to the end of the last chunk's consumer.
    pub wall_ns: u64,
    /// Per chunk: when its producer ran.
    pub produce: Vec<(u64, u64)>,
    /// Per chunk: when its consumer ran.
    pub consume: Vec<(u64, u64)>,
    /// Time the issuing thread waited for a prepared chunk.
    pub starved_ns: u64,
    /// Time the issuing thread waited for a stream's previous chunk to finish.
    pub waiting_ns: u64,
}

/// Why an [`in_order`](crate::baseline::in_order) run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InOrderError {
    /// The plan is invalid, or the device could not be set up.
    #[error(transparent)]
    Setup(#[from] Error),
    /// The GPU could not be set up for the pipeline (a driver call, or the kernel's
    /// compilation or loading, failed).
    #[error("setting up the in-order pipeline on GPU {gpu} failed: {message}")]
    Device {
        /// The device ordinal.
        gpu: usize,
        /// The driver's or NVRTC's message.
        message: String,
    },
    /// The producer of `chunk` failed or panicked, or returned a chunk that does not
    /// fit the plan.
    #[error("chunk {chunk}: preparing it failed: {message}")]
    Produce {
        /// The chunk.
        chunk: usize,
        /// The producer's message, or what does not fit.
        message: String,
    },
    /// A driver call (or the CPU twin) failed while running `chunk`.
    #[error("chunk {chunk}: running it failed: {message}")]
    Run {
        /// The chunk.
        chunk: usize,
        /// The driver's (or the twin's) message.
        message: String,
    },
    /// The consumer of `chunk` failed or panicked.
    #[error("chunk {chunk}: consuming its output failed: {message}")]
    Consume {
        /// The chunk.
        chunk: usize,
        /// The consumer's message.
        message: String,
    },
}

/// Kernel parameters at most, as for chariot's own launches.
pub(crate) const MAX_PARAMS: usize = super::gpu::MAX_PARAMS;

/// One chunk's buffers on the host: where the producer writes, where the readback lands.
struct Slot<'s, I, O> {
    input: &'s mut [I],
    output: &'s mut [O],
}

/// The two ways a chunk can run: on a GPU, or through the kernel's CPU twin.
trait Device {
    /// Enqueues, on `stream`: the download of `input` to the stream's input buffer, the
    /// launches, the readback of the stream's output buffer into `output`, and the
    /// stream's event.
    ///
    /// # Safety
    /// 1. Until `wait(stream)` or `quiesce()` has returned, the caller neither touches
    ///    nor frees the memory of `input` and `output` (the copies may still run).
    /// 2. Every launch was checked against the kernel's parameters and the plan
    ///    (`check`), so each buffer it names exists and each argument has its kind.
    unsafe fn issue(
        &mut self,
        stream: usize,
        input: &[u8],
        launches: &[InOrderLaunch],
        output: &mut [u8],
    ) -> Result<(), String>;

    /// Blocks until everything issued on `stream` has completed.
    fn wait(&mut self, stream: usize) -> Result<(), String>;

    /// Blocks until every stream is idle; after an error, before slots are let go.
    fn quiesce(&mut self);
}

/// Runs the plan on its device; see [`crate::baseline::in_order`].
pub(crate) fn run<I, O, M, P, C>(
    kernel: &Kernel,
    plan: &InOrderPlan<'_>,
    produce: &P,
    consume: C,
) -> Result<InOrderTiming, InOrderError>
where
    I: Element,
    O: Element,
    M: Send,
    P: Fn(usize, &mut [I]) -> Result<Prepared<M>, BoxError> + Sync,
    C: FnMut(usize, M, &[O]) -> Result<(), BoxError>,
{
    // S slots on the streams and one in the hands of each producer.
    let slots = plan.streams + plan.readers;
    let in_bytes = plan.input_len * std::mem::size_of::<I>();
    let out_bytes = plan.output_len * std::mem::size_of::<O>();
    let shape = Shape { streams: plan.streams, readers: plan.readers, chunks: plan.chunks };
    match plan.device {
        InOrderDevice::Cuda { ordinal } => {
            // A GPU that does not exist is named as such, as the scheduler does, not
            // reported as a failed cuDeviceGet.
            let available =
                super::Machine::probe().map_err(|reason| InOrderError::Setup(Error::CudaUnavailable { reason }))?;
            if ordinal >= available {
                return Err(InOrderError::Setup(Error::NoSuchGpu { ordinal, available, backend: "cuda" }));
            }
            let mut rig = Rig::open(ordinal, kernel, plan, slots, in_bytes, out_bytes)
                .map_err(|message| InOrderError::Device { gpu: ordinal, message })?;
            let Rig { engine, host, .. } = &mut rig;
            let mut blocks = host.slices();
            let (ins, outs) = blocks.split_at_mut(slots);
            let slots = carve::<I, O>(ins, outs, plan)?;
            pipeline(engine, &kernel.params, plan, slots, shape, produce, consume)
        }
        InOrderDevice::CpuTwin => {
            let mut twin = Twin::new(kernel, plan, in_bytes, out_bytes)?;
            let mut ins: Vec<Vec<I>> = (0..slots).map(|_| vec![I::zeroed(); plan.input_len]).collect();
            let mut outs: Vec<Vec<O>> = (0..slots).map(|_| vec![O::zeroed(); plan.output_len]).collect();
            let slots =
                ins.iter_mut().zip(outs.iter_mut()).map(|(i, o)| Slot { input: &mut i[..], output: &mut o[..] });
            pipeline(&mut twin, &kernel.params, plan, slots.collect(), shape, produce, consume)
        }
    }
}

/// Typed slots over the pinned blocks (page-aligned, so any element type fits).
fn carve<'s, I: Element, O: Element>(
    ins: &'s mut [&mut [u8]],
    outs: &'s mut [&mut [u8]],
    plan: &InOrderPlan<'_>,
) -> Result<Vec<Slot<'s, I, O>>, InOrderError> {
    let cast = |e: bytemuck::PodCastError| {
        InOrderError::Setup(Error::InvalidConfig {
            name: "element type",
            value: format!("{e:?}"),
            allowed: "types that fit a page-aligned block".into(),
        })
    };
    ins.iter_mut()
        .zip(outs.iter_mut())
        .map(|(i, o)| {
            Ok(Slot {
                input: &mut bytemuck::try_cast_slice_mut(&mut i[..]).map_err(cast)?[..plan.input_len],
                output: &mut bytemuck::try_cast_slice_mut(&mut o[..]).map_err(cast)?[..plan.output_len],
            })
        })
        .collect()
}

#[derive(Clone, Copy)]
struct Shape {
    streams: usize,
    readers: usize,
    chunks: usize,
}

/// A prepared chunk on its way from a producer to the issuing thread.
struct Ready<'s, I, O, M> {
    chunk: usize,
    slot: Slot<'s, I, O>,
    span: (u64, u64),
    prepared: Result<Prepared<M>, String>,
}

/// A chunk issued on a stream, waiting to be consumed.
struct InFlight<'s, I, O, M> {
    chunk: usize,
    slot: Slot<'s, I, O>,
    meta: M,
    output_len: usize,
}

/// Sets the flag when dropped, so producers stop on every way out of the issuing loop.
struct StopOnDrop<'a>(&'a AtomicBool);
impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The loop, over either device. Producers are scoped threads; the issuing loop runs
/// on the calling thread and owns the in-flight slots.
fn pipeline<'s, D, I, O, M, P, C>(
    dev: &mut D,
    params: &[Param],
    plan: &InOrderPlan<'_>,
    slots: Vec<Slot<'s, I, O>>,
    shape: Shape,
    produce: &P,
    mut consume: C,
) -> Result<InOrderTiming, InOrderError>
where
    D: Device,
    I: Element,
    O: Element,
    M: Send,
    P: Fn(usize, &mut [I]) -> Result<Prepared<M>, BoxError> + Sync,
    C: FnMut(usize, M, &[O]) -> Result<(), BoxError>,
{
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    let stop = AtomicBool::new(false);
    let Shape { streams, readers, chunks } = shape;
    let mut timing =
        InOrderTiming { produce: vec![(0, 0); chunks], consume: vec![(0, 0); chunks], ..Default::default() };
    let outcome = std::thread::scope(|scope| -> Result<(), InOrderError> {
        // Everything below is dropped when this closure returns, before the scope joins
        // the producers: a producer waiting for a slot or handing over a chunk then sees
        // a closed channel (or `stop`) and ends, whatever way the loop ended.
        let _stop = StopOnDrop(&stop);
        let (free_tx, free_rx) = crossbeam_channel::unbounded::<Slot<'s, I, O>>();
        for s in slots {
            // Cannot fail: the receiver is alive.
            let _ = free_tx.send(s);
        }
        let mut ready = Vec::with_capacity(readers);
        for r in 0..readers.min(chunks) {
            // A rendezvous: a producer hands over a chunk only when the issuer takes it,
            // so it holds at most one slot, and the slots cannot all end up with
            // producers of later chunks (S − 1 in flight + R held < S + R slots).
            let (tx, rx) = crossbeam_channel::bounded::<Ready<'s, I, O, M>>(0);
            ready.push(rx);
            let (free_rx, stop) = (free_rx.clone(), &stop);
            std::thread::Builder::new()
                .name(format!("inorder-read-{r}"))
                .spawn_scoped(scope, move || {
                    for chunk in (r..chunks).step_by(readers) {
                        let Ok(slot) = free_rx.recv() else { break };
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let Slot { input, output } = slot;
                        let start = now();
                        let prepared = run_caught(|| produce(chunk, &mut *input));
                        let span = (start, now());
                        if tx.send(Ready { chunk, slot: Slot { input, output }, span, prepared }).is_err() {
                            break;
                        }
                    }
                })
                .map_err(|e| Error::Thread { name: format!("inorder-read-{r}"), message: e.to_string() })?;
        }
        drop(free_rx);
        let mut inflight: Vec<Option<InFlight<'s, I, O, M>>> = (0..streams).map(|_| None).collect();
        let mut retire =
            |dev: &mut D, f: InFlight<'s, I, O, M>, s: usize, timing: &mut InOrderTiming| -> Result<(), InOrderError> {
                let t = now();
                dev.wait(s).map_err(|message| InOrderError::Run { chunk: f.chunk, message })?;
                let t1 = now();
                timing.waiting_ns += t1 - t;
                let out = &f.slot.output[..f.output_len];
                run_caught(|| consume(f.chunk, f.meta, out))
                    .map_err(|message| InOrderError::Consume { chunk: f.chunk, message })?;
                timing.consume[f.chunk] = (t1, now());
                // Fails only once every producer has finished, when no slot is needed.
                let _ = free_tx.send(f.slot);
                Ok(())
            };
        let issued = (|| -> Result<(), InOrderError> {
            for i in 0..chunks {
                let s = i % streams;
                if let Some(f) = inflight[s].take() {
                    retire(dev, f, s, &mut timing)?;
                }
                let t = now();
                let Ready { chunk, slot, span, prepared } = ready[i % readers]
                    .recv()
                    .map_err(|_| InOrderError::Produce { chunk: i, message: "its producer thread stopped".into() })?;
                timing.starved_ns += now() - t;
                debug_assert_eq!(chunk, i, "producer r hands over chunks r, r + R, … in order");
                timing.produce[i] = span;
                let p = prepared.map_err(|message| InOrderError::Produce { chunk: i, message })?;
                check(&p, &slot, params, plan).map_err(|message| InOrderError::Produce { chunk: i, message })?;
                let input = bytemuck::cast_slice::<I, u8>(&slot.input[..p.input_len]);
                let output = bytemuck::cast_slice_mut::<O, u8>(&mut slot.output[..p.output_len]);
                // SAFETY: the slot moves into `inflight[s]` right below and leaves it only
                // in `retire`, after `wait(s)`, or after `quiesce()` on an error; the
                // launches were checked just above.
                let issued = unsafe { dev.issue(s, input, &p.launches, output) };
                inflight[s] = Some(InFlight { chunk: i, slot, meta: p.meta, output_len: p.output_len });
                issued.map_err(|message| InOrderError::Run { chunk: i, message })?;
            }
            for i in chunks.saturating_sub(streams)..chunks {
                let s = i % streams;
                if let Some(f) = inflight[s].take() {
                    retire(dev, f, s, &mut timing)?;
                }
            }
            Ok(())
        })();
        if issued.is_err() {
            // Copies may still use the slots in flight: let them end before the slots go.
            dev.quiesce();
        }
        issued
    });
    timing.wall_ns = now();
    outcome.map(|()| timing)
}

/// Refuses a prepared chunk that does not fit its slot, the plan or the kernel.
fn check<M, I, O>(
    p: &Prepared<M>,
    slot: &Slot<'_, I, O>,
    params: &[Param],
    plan: &InOrderPlan<'_>,
) -> Result<(), String> {
    if p.input_len > slot.input.len() || p.output_len > slot.output.len() {
        return Err(format!(
            "input_len {} and output_len {} must fit the plan's {} and {}",
            p.input_len,
            p.output_len,
            slot.input.len(),
            slot.output.len()
        ));
    }
    for (k, l) in p.launches.iter().enumerate() {
        if l.args.len() != params.len() {
            return Err(format!("launch {k}: {} arguments for {} parameters", l.args.len(), params.len()));
        }
        for (j, (a, want)) in l.args.iter().zip(params).enumerate() {
            let fits = match *a {
                DeviceArg::Scratch(b) => b < plan.scratch_bytes.len(),
                DeviceArg::Constant(b) => b < plan.constants.len(),
                _ => true,
            };
            if a.param() != *want || !fits {
                return Err(format!("launch {k}: argument {j} is {a:?}; the kernel wants a {want:?} the plan has"));
            }
        }
        if l.shape.grid.count() == 0 || l.shape.block.count() == 0 {
            return Err(format!("launch {k}: empty grid or block {:?}", l.shape));
        }
    }
    Ok(())
}

/// Pinned host blocks, freed by [`Rig`]'s drop.
struct Host {
    blocks: Vec<(*mut c_void, usize)>,
}

impl Host {
    /// Every block as a byte slice, borrowed from `self`.
    fn slices(&mut self) -> Vec<&mut [u8]> {
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
struct Engine {
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
struct Rig {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    module: Option<sys::CUmodule>,
    engine: Engine,
    host: Host,
}

impl Drop for Rig {
    fn drop(&mut self) {
        // SAFETY: every handle was created in `open` in this context and is destroyed
        // once; streams are synchronised first, so no copy still uses a buffer.
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
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
            let _ = result::primary_ctx::release(self.dev);
        }
    }
}

impl Rig {
    fn open(
        ordinal: usize,
        kernel: &Kernel,
        plan: &InOrderPlan<'_>,
        slots: usize,
        in_bytes: usize,
        out_bytes: usize,
    ) -> Result<Rig, String> {
        let dev = result::device::get(ordinal as i32).map_err(|e| failed_text("cuDeviceGet", e))?;
        // SAFETY: `dev` is valid; released once in Drop.
        let ctx =
            unsafe { result::primary_ctx::retain(dev) }.map_err(|e| failed_text("cuDevicePrimaryCtxRetain", e))?;
        let mut rig = Rig {
            dev,
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
        // SAFETY: the context was just retained.
        unsafe { result::ctx::set_current(ctx) }.map_err(|e| failed_text("cuCtxSetCurrent", e))?;
        // The same cubin chariot loads (NVRTC's cache is per process).
        let (module, func) = super::baseline::load_kernel(dev, kernel)?;
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

/// The CPU stand-in: per stream, memory for the input, output and scratch buffers, and
/// the constants; `issue` copies in, runs the twin for each launch and copies out.
struct Twin<'k> {
    kernel: &'k Kernel,
    inputs: Vec<(Mutex<Vec<u128>>, usize)>,
    outputs: Vec<(Mutex<Vec<u128>>, usize)>,
    scratch: Vec<Vec<(Mutex<Vec<u128>>, usize)>>,
    constants: Vec<(Mutex<Vec<u128>>, usize)>,
}

fn zeroed(bytes: usize) -> (Mutex<Vec<u128>>, usize) {
    (Mutex::new(vec![0u128; bytes.div_ceil(16)]), bytes)
}

impl<'k> Twin<'k> {
    fn new(kernel: &'k Kernel, plan: &InOrderPlan<'_>, in_bytes: usize, out_bytes: usize) -> Result<Self, Error> {
        if kernel.twin.is_none() {
            return Err(Error::KernelInvalid {
                kernel: kernel.name.clone(),
                message: "the CPU-twin in-order pipeline needs a kernel with a CPU twin".into(),
            });
        }
        let constants = plan
            .constants
            .iter()
            .map(|c| {
                let (m, n) = zeroed(c.len());
                bytemuck::cast_slice_mut::<u128, u8>(&mut m.lock()[..])[..n].copy_from_slice(c);
                (m, n)
            })
            .collect();
        Ok(Twin {
            kernel,
            inputs: (0..plan.streams).map(|_| zeroed(in_bytes)).collect(),
            outputs: (0..plan.streams).map(|_| zeroed(out_bytes)).collect(),
            scratch: (0..plan.streams).map(|_| plan.scratch_bytes.iter().map(|&b| zeroed(b)).collect()).collect(),
            constants,
        })
    }

    fn buffer(&self, s: usize, a: &DeviceArg) -> Option<&(Mutex<Vec<u128>>, usize)> {
        match *a {
            DeviceArg::Input => Some(&self.inputs[s]),
            DeviceArg::Output => Some(&self.outputs[s]),
            DeviceArg::Scratch(k) => Some(&self.scratch[s][k]),
            DeviceArg::Constant(k) => Some(&self.constants[k]),
            _ => None,
        }
    }

    fn launch(&self, s: usize, l: &InOrderLaunch) -> Result<(), String> {
        let twin = self.kernel.twin.as_ref().ok_or("kernel has no CPU twin")?;
        // Lock each distinct buffer once; arguments naming the same buffer share it.
        let mut mems: Vec<&(Mutex<Vec<u128>>, usize)> = Vec::new();
        let mut index = Vec::with_capacity(l.args.len());
        let mut values = Vec::with_capacity(l.args.len());
        for a in &l.args {
            values.push(match *a {
                DeviceArg::I32(v) => ArgValue::I32(v),
                DeviceArg::U32(v) => ArgValue::U32(v),
                DeviceArg::I64(v) => ArgValue::I64(v),
                DeviceArg::U64(v) => ArgValue::U64(v),
                DeviceArg::F32(v) => ArgValue::F32(v),
                DeviceArg::F64(v) => ArgValue::F64(v),
                // A placeholder: the twin reaches buffers through `index`, not values.
                _ => ArgValue::U64(0),
            });
            index.push(self.buffer(s, a).map(|m| {
                mems.iter().position(|x| std::ptr::eq(*x, m)).unwrap_or_else(|| {
                    mems.push(m);
                    mems.len() - 1
                })
            }));
        }
        let sizes = mems.iter().map(|m| m.1).collect();
        let guards = mems.iter().map(|m| m.0.lock()).collect();
        let mut args = TwinArgs::new(l.shape, &values, guards, sizes, index);
        run_caught(|| twin(&mut args))
    }
}

impl Device for Twin<'_> {
    unsafe fn issue(
        &mut self,
        s: usize,
        input: &[u8],
        launches: &[InOrderLaunch],
        output: &mut [u8],
    ) -> Result<(), String> {
        bytemuck::cast_slice_mut::<u128, u8>(&mut self.inputs[s].0.lock()[..])[..input.len()].copy_from_slice(input);
        for l in launches {
            self.launch(s, l)?;
        }
        output.copy_from_slice(&bytemuck::cast_slice::<u128, u8>(&self.outputs[s].0.lock()[..])[..output.len()]);
        Ok(())
    }

    fn wait(&mut self, _: usize) -> Result<(), String> {
        Ok(())
    }

    fn quiesce(&mut self) {}
}

#[cfg(test)]
mod tests {
    use crate::baseline::{in_order, DeviceArg, InOrderDevice, InOrderError, InOrderLaunch, InOrderPlan, Prepared};
    use crate::kernel::{Kernel, LaunchShape, Param};

    /// out[k] = in[k] * c[0] + n, with `n` a scalar; the scratch buffer counts launches.
    fn axpy() -> Kernel {
        Kernel::new(
            "axpy",
            r#"extern "C" __global__ void axpy(const unsigned* in, const unsigned* c, unsigned* out,
                unsigned* scratch, unsigned n) {
                unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
                if (k < n) out[k] = in[k] * c[0] + n;
                if (k == 0) scratch[0] += 1; }"#,
        )
        .params([Param::Buffer, Param::Buffer, Param::Buffer, Param::Buffer, Param::U32])
        .cpu_twin(|a| {
            let n = a.u32(4)? as usize;
            let c = a.buffer::<u32>(1)?[0];
            let input = a.buffer::<u32>(0)?[..n].to_vec();
            for (o, i) in a.buffer_mut::<u32>(2)?[..n].iter_mut().zip(input) {
                *o = i * c + n as u32;
            }
            a.buffer_mut::<u32>(3)?[0] += 1;
            Ok(())
        })
    }

    fn launch(n: u32) -> InOrderLaunch {
        InOrderLaunch {
            shape: LaunchShape { grid: n.div_ceil(64).max(1).into(), block: 64.into(), shared_bytes: 0 },
            args: vec![
                DeviceArg::Input,
                DeviceArg::Constant(0),
                DeviceArg::Output,
                DeviceArg::Scratch(0),
                DeviceArg::U32(n),
            ],
        }
    }

    fn plan(device: InOrderDevice, streams: usize, readers: usize, chunks: usize, c: &[u8]) -> InOrderPlan<'_> {
        InOrderPlan {
            device,
            streams,
            readers,
            chunks,
            input_len: 1000,
            output_len: 1000,
            scratch_bytes: vec![4],
            constants: vec![c],
        }
    }

    /// Chunk i holds i*1000 .. i*1000 + len(i): every output is checked, and chunks are
    /// consumed in order exactly once.
    fn check_run(device: InOrderDevice, streams: usize, readers: usize, chunks: usize) {
        let three = 3u32.to_le_bytes();
        let k = axpy();
        let len = |i: usize| 1 + (i * 37) % 1000;
        let mut seen = Vec::new();
        let t = in_order::<u32, u32, usize, _, _>(
            &k,
            &plan(device, streams, readers, chunks, &three),
            |i, buf| {
                for (j, x) in buf[..len(i)].iter_mut().enumerate() {
                    *x = (i * 1000 + j) as u32;
                }
                Ok(Prepared { meta: i, input_len: len(i), launches: vec![launch(len(i) as u32)], output_len: len(i) })
            },
            |i, meta, out| {
                assert_eq!(i, meta);
                assert_eq!(out.len(), len(i));
                for (j, &o) in out.iter().enumerate() {
                    assert_eq!(o, (i * 1000 + j) as u32 * 3 + len(i) as u32, "chunk {i} element {j}");
                }
                seen.push(i);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, (0..chunks).collect::<Vec<_>>());
        assert_eq!(t.produce.len(), chunks);
        assert!(t.consume.iter().all(|&(a, b)| a <= b && b <= t.wall_ns));
    }

    #[test]
    fn twin_runs_every_chunk_in_order() {
        for (s, r, n) in [(1, 1, 5), (2, 1, 9), (2, 2, 17), (4, 3, 40), (3, 8, 5), (2, 2, 0), (8, 1, 3)] {
            check_run(InOrderDevice::CpuTwin, s, r, n);
        }
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn cuda_runs_every_chunk_in_order() {
        for (s, r, n) in [(1, 1, 5), (2, 1, 9), (2, 2, 17), (4, 3, 40), (8, 1, 3)] {
            check_run(InOrderDevice::Cuda { ordinal: 0 }, s, r, n);
        }
    }

    #[test]
    fn failures_name_their_chunk_and_stop_the_run() {
        let c = 1u32.to_le_bytes();
        let k = axpy();
        let p = plan(InOrderDevice::CpuTwin, 2, 2, 30, &c);
        let ok = |i: usize| Prepared { meta: i, input_len: 4, launches: vec![launch(4)], output_len: 4 };
        let consumed = std::sync::atomic::AtomicUsize::new(0);
        let count = |_: usize, _: usize, _: &[u32]| {
            consumed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        };
        let e = in_order::<u32, u32, usize, _, _>(
            &k,
            &p,
            |i, _| if i == 7 { Err("bad record".into()) } else { Ok(ok(i)) },
            count,
        )
        .unwrap_err();
        assert!(matches!(&e, InOrderError::Produce { chunk: 7, message } if message == "bad record"), "{e}");
        assert!(consumed.load(std::sync::atomic::Ordering::Relaxed) <= 7);
        let e =
            in_order::<u32, u32, usize, _, _>(&k, &p, |i, _| if i == 3 { panic!("boom") } else { Ok(ok(i)) }, count)
                .unwrap_err();
        assert!(matches!(&e, InOrderError::Produce { chunk: 3, message } if message.contains("boom")), "{e}");
        let e = in_order::<u32, u32, usize, _, _>(
            &k,
            &p,
            |i, _| Ok(ok(i)),
            |i, _, _| if i == 11 { Err("disk full".into()) } else { Ok(()) },
        )
        .unwrap_err();
        assert!(matches!(&e, InOrderError::Consume { chunk: 11, .. }), "{e}");
        // A chunk that does not fit its slot, or a launch that does not fit the kernel.
        let e = in_order::<u32, u32, usize, _, _>(
            &k,
            &p,
            |i, _| Ok(Prepared { input_len: 1001, ..ok(i) }),
            |_, _, _| Ok(()),
        )
        .unwrap_err();
        assert!(matches!(&e, InOrderError::Produce { chunk: 0, message } if message.contains("fit")), "{e}");
        let mut wrong = launch(4);
        wrong.args[3] = DeviceArg::Scratch(1);
        let e = in_order::<u32, u32, usize, _, _>(
            &k,
            &p,
            |i, _| Ok(Prepared { launches: vec![wrong.clone()], ..ok(i) }),
            |_, _, _| Ok(()),
        )
        .unwrap_err();
        assert!(matches!(&e, InOrderError::Produce { chunk: 0, message } if message.contains("argument 3")), "{e}");
        // The twin's own error comes back as a run failure of its chunk.
        let e = in_order::<u32, u32, usize, _, _>(
            &k,
            &p,
            |i, _| Ok(Prepared { launches: vec![launch(2000)], ..ok(i) }),
            |_, _, _| Ok(()),
        )
        .unwrap_err();
        assert!(matches!(&e, InOrderError::Run { chunk: 0, .. }), "{e}");
    }

    #[test]
    fn plans_are_checked_before_anything_starts() {
        let c = [0u8; 4];
        let k = axpy();
        let mut p = plan(InOrderDevice::CpuTwin, 0, 1, 3, &c);
        let run = |p: &InOrderPlan<'_>, k: &Kernel| {
            in_order::<u32, u32, (), _, _>(k, p, |_, _| panic!("must not run"), |_, _, _| panic!("must not run"))
        };
        assert!(matches!(run(&p, &k), Err(InOrderError::Setup(crate::Error::InvalidConfig { name: "streams", .. }))));
        p.streams = 2;
        p.readers = 0;
        assert!(matches!(run(&p, &k), Err(InOrderError::Setup(crate::Error::InvalidConfig { name: "readers", .. }))));
        p.readers = 1;
        p.output_len = 0;
        assert!(matches!(
            run(&p, &k),
            Err(InOrderError::Setup(crate::Error::InvalidConfig { name: "output_len", .. }))
        ));
        p.output_len = 10;
        let no_twin = Kernel::new("axpy", "").params([Param::U32]);
        assert!(matches!(run(&p, &no_twin), Err(InOrderError::Setup(crate::Error::KernelInvalid { .. }))));
    }
}
