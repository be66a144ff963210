//! A hand-written, in-order pipeline (the stream application's baseline): what a CUDA programmer writes
//! without chariot. Producer threads prepare chunks into pinned staging slots; the
//! calling thread issues chunk i on stream i mod S, in order, and before reusing a
//! stream waits for that stream's previous chunk (its event) and consumes its output.
//! [`crate::in_order`] is the safe entry point and states the protocol; the
//! types of its plan and outcome are defined here, and the crate root re-exports them.
//!
//! The loop ([`pipeline`]) is written once over [`Device`], which has two
//! implementations: [`Rig`] (`engine.rs`), plain driver calls on the primary context,
//! and [`Twin`] (`twin.rs`), the kernel's CPU twin run at issue, for checking a
//! pipeline's wiring with no GPU.
//!
//! Invariant: a slot belongs to exactly one party at a time — the free list, one
//! producer, or the in-flight entry of one stream — and leaves a stream only after that
//! stream's event has completed. So no staging buffer is rewritten while its download
//! may still read it, and no output is consumed before its readback has ended.

mod engine;
#[cfg(test)]
mod tests;
mod twin;

use chariot::kernel::LaunchShape;
use chariot::memory::Element;
use chariot::{Backend, BoxError, Error, Kernel, Param};
use engine::Rig;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use twin::Twin;

/// Where [`in_order`](crate::in_order) runs.
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

/// A device buffer a launch of [`in_order`](crate::in_order) names, or a scalar argument.
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

/// The shape of an [`in_order`](crate::in_order) run.
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

/// What an [`in_order`](crate::in_order) run took. Times are ns since the run's start, taken just
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

/// Why an [`in_order`](crate::in_order) run failed.
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
pub(crate) const MAX_PARAMS: usize = 32;

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

/// Runs the plan on its device; see [`crate::in_order`].
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
            let available = Backend::cuda_devices().map_err(InOrderError::Setup)?;
            if ordinal >= available {
                return Err(InOrderError::Setup(Error::NoSuchGpu { ordinal, available, backend: "cuda" }));
            }
            let mut rig = Rig::open(ordinal, kernel, plan, slots, in_bytes, out_bytes)
                .map_err(|message| InOrderError::Device { gpu: ordinal, message })?;
            let Rig { engine, host, .. } = &mut rig;
            let mut blocks = host.slices();
            let (ins, outs) = blocks.split_at_mut(slots);
            let slots = carve::<I, O>(ins, outs, plan)?;
            pipeline(engine, kernel.param_list(), plan, slots, shape, produce, consume)
        }
        InOrderDevice::CpuTwin => {
            let mut twin = Twin::new(kernel, plan, in_bytes, out_bytes)?;
            let mut ins: Vec<Vec<I>> = (0..slots).map(|_| vec![I::zeroed(); plan.input_len]).collect();
            let mut outs: Vec<Vec<O>> = (0..slots).map(|_| vec![O::zeroed(); plan.output_len]).collect();
            let slots =
                ins.iter_mut().zip(outs.iter_mut()).map(|(i, o)| Slot { input: &mut i[..], output: &mut o[..] });
            pipeline(&mut twin, kernel.param_list(), plan, slots.collect(), shape, produce, consume)
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
                        let prepared = caught(|| produce(chunk, &mut *input));
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
                caught(|| consume(f.chunk, f.meta, out))
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
