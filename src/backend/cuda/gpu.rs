//! One dispatcher's CUDA GPU: S non-blocking streams, a pair of timing events per stream
//! slot, and the issue/poll pair the dispatcher drives: a command arrives as its device
//! operations (`backend::op`), each one driver call (or a host function), between the
//! slot's events; a window as a graph operation. Everything here runs on the
//! dispatcher's own thread, with the GPU's context current.

use super::context::Context;
use super::driver;
use super::failed;
use super::handle::{Event, Stream};
use crate::backend::op::{CopyOp, Direction, HostAt, Op, Tag, MAX_PARAMS};
#[cfg(feature = "replay")]
use crate::backend::op::{GraphOp, GraphSource};
use crate::backend::op_failure::OpFailure;
use crate::backend::{DriverNs, Fault, GraphUse, Reach, Span};
use crate::stage::Stage;
use cudarc::driver::result::DriverError;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

/// One dispatcher's GPU.
pub(crate) struct Gpu {
    ctx: Arc<Context>,
    /// Per slot: its stream and the events around its command. Destroyed in `drop`
    /// (the streams synchronised first), before the windows' graphs and executors.
    streams: Vec<Stream>,
    start: Vec<Event>,
    end: Vec<Event>,
    base: Event,
    base_ns: u64,
    /// Launch argument pointers, reused: cuLaunchKernel copies the values at the call.
    pointers: [*mut c_void; MAX_PARAMS],
    /// The command being issued: when it began, and its operations enqueued so far.
    began: Instant,
    ops_in: usize,
    /// Device timestamps: a timing event before and after each command. Off by default:
    /// on an H100 (driver 580) timing events serialised commands of different streams
    /// (a kernel waited for another stream's copy; 25.9 ms against 16.8 ms for the same
    /// 48-chunk pipeline). Without them the end event is untimed and spans are observed
    /// on the host, see `span`.
    timing: bool,
    epoch: Instant,
    /// Per slot: when its command was issued, and its stage.
    issued_ns: Vec<u64>,
    stage: Vec<Stage>,
    /// Per stage: when the last command of that stage was seen to complete.
    last_end_ns: [u64; Stage::K],
    /// NVTX ranges, when asked for.
    ranges: Option<super::nvtx::Ranges>,
    /// Replayed windows' graphs (made at the first window), and whether one is in
    /// flight. Dropped after the streams are synchronised (fields drop after `drop`).
    #[cfg(feature = "replay")]
    replayer: Option<super::replay::Replayer>,
    /// Every GPU's context, by index, for the replayer: a window spanning GPUs has
    /// nodes in the others'.
    #[cfg(feature = "replay")]
    contexts: Vec<Arc<Context>>,
    /// Device-side windows' executors (made at the first such window).
    #[cfg(feature = "replay")]
    runner: Option<super::device_window::DeviceRunner>,
    /// The windows in flight, in the order issued: each one's completion event and
    /// how it runs (a replayed graph or a device-side window).
    flights: std::collections::VecDeque<(super::completion::Completion, GraphUse)>,
    /// Completion events of windows that completed, for the next ones.
    spare: Vec<super::completion::Completion>,
    /// The GPU's architecture (`sm_90`), for the device-side executor's compilation.
    arch: String,
}

// SAFETY: the handles belong to this dispatcher alone; moving them to its thread before
// first use is allowed by the driver (they are not tied to a thread).
unsafe impl Send for Gpu {}

fn driver(call: &str) -> impl Fn(DriverError) -> crate::report::DriverError + '_ {
    move |e| failed(call, e)
}

/// How far a driver error reaches. The sticky errors poison the context (every later
/// call returns them): those a kernel raises (bad address, trap, assert, timeout) are
/// blamed on a task whose kernel was seen failing; the others (ECC, a lost device) on
/// no task. Everything else concerns this command only.
pub(crate) fn reach(e: DriverError, kernel: bool) -> Reach {
    use sys::CUresult as R;
    match e.0 {
        R::CUDA_ERROR_ILLEGAL_ADDRESS
        | R::CUDA_ERROR_LAUNCH_FAILED
        | R::CUDA_ERROR_MISALIGNED_ADDRESS
        | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
        | R::CUDA_ERROR_INVALID_PC
        | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
        | R::CUDA_ERROR_HARDWARE_STACK_ERROR
        | R::CUDA_ERROR_LAUNCH_TIMEOUT
        | R::CUDA_ERROR_ASSERT => {
            if kernel {
                Reach::GpuByTask
            } else {
                Reach::Gpu
            }
        }
        R::CUDA_ERROR_ECC_UNCORRECTABLE
        | R::CUDA_ERROR_NVLINK_UNCORRECTABLE
        | R::CUDA_ERROR_CONTEXT_IS_DESTROYED
        | R::CUDA_ERROR_DEVICE_UNAVAILABLE
        | R::CUDA_ERROR_EXTERNAL_DEVICE
        | R::CUDA_ERROR_UNKNOWN => Reach::Gpu,
        _ => Reach::Task,
    }
}

/// A driver error of `call` as a fault. At issue a sticky error is an earlier command's
/// (the context was poisoned before this call), so it is never blamed on this task.
pub(super) fn issue_fault(call: &str) -> impl Fn(DriverError) -> Fault + '_ {
    move |e| {
        let reach = match reach(e, false) {
            Reach::GpuByTask => Reach::Gpu,
            r => r,
        };
        let error = failed(call, e);
        Fault { message: error.to_string(), reach, driver: Some(error) }
    }
}

impl Gpu {
    pub(crate) fn open(
        ctx: Arc<Context>,
        #[cfg_attr(not(feature = "replay"), allow(unused_variables))] contexts: Vec<Arc<Context>>,
        arch: String,
        streams: usize,
        epoch: Instant,
        timing: bool,
        nvtx: Option<Arc<super::nvtx::Nvtx>>,
    ) -> Result<Self, crate::report::DriverError> {
        ctx.bind()?;
        let end_flags =
            if timing { sys::CUevent_flags::CU_EVENT_DEFAULT } else { sys::CUevent_flags::CU_EVENT_DISABLE_TIMING };
        let (mut stream_list, mut start, mut end) =
            (Vec::with_capacity(streams), Vec::with_capacity(streams), Vec::with_capacity(streams));
        for _ in 0..streams {
            stream_list.push(
                Stream::create(&ctx, sys::CUstream_flags::CU_STREAM_NON_BLOCKING).map_err(driver("cuStreamCreate"))?,
            );
            start.push(Event::create(&ctx, sys::CUevent_flags::CU_EVENT_DEFAULT).map_err(driver("cuEventCreate"))?);
            end.push(Event::create(&ctx, end_flags).map_err(driver("cuEventCreate"))?);
        }
        let base = Event::create(&ctx, sys::CUevent_flags::CU_EVENT_DEFAULT).map_err(driver("cuEventCreate"))?;
        base.record(&stream_list[0]).map_err(driver("cuEventRecord"))?;
        base.synchronize().map_err(driver("cuEventSynchronize"))?;
        let mut gpu = Gpu {
            ctx,
            streams: stream_list,
            start,
            end,
            base,
            base_ns: 0,
            pointers: [std::ptr::null_mut(); MAX_PARAMS],
            began: Instant::now(),
            ops_in: 0,
            timing,
            epoch,
            issued_ns: vec![0; streams],
            stage: vec![Stage::Kernel; streams],
            last_end_ns: [0; Stage::K],
            ranges: nvtx.map(|n| super::nvtx::Ranges::new(n, streams)),
            #[cfg(feature = "replay")]
            replayer: None,
            #[cfg(feature = "replay")]
            contexts,
            #[cfg(feature = "replay")]
            runner: None,
            flights: std::collections::VecDeque::new(),
            spare: Vec::new(),
            arch,
        };
        gpu.base_ns = epoch.elapsed().as_nanos() as u64;
        if let Some(r) = &gpu.ranges {
            for (j, s) in gpu.streams.iter().enumerate() {
                if let Ok(name) = std::ffi::CString::new(format!("chariot GPU {} stream {j}", gpu.ctx.index)) {
                    r.nvtx().name_stream(s.raw(), &name);
                }
            }
        }
        Ok(gpu)
    }

    /// The GPU's index in the machine's list.
    pub(crate) fn index(&self) -> usize {
        self.ctx.index
    }

    pub(crate) fn bind_thread(&self) -> Result<(), crate::report::DriverError> {
        if let Some(r) = &self.ranges {
            if let Ok(name) = std::ffi::CString::new(format!("chariot dispatcher GPU {}", self.ctx.index)) {
                r.nvtx().name_this_thread(&name);
            }
        }
        self.ctx.bind()
    }

    /// This GPU's context current on the calling thread, not the dispatcher's, until
    /// the answer drops (`super::gpu_context::Visit`).
    #[cfg(feature = "replay")]
    pub(crate) fn visit(&self) -> Result<super::gpu_context::Visit, crate::report::DriverError> {
        super::gpu_context::visit(&self.ctx)
    }

    pub(crate) fn quiesce(&self) {
        if self.ctx.bind().is_ok() {
            for s in &self.streams {
                // A wait, not a free: its error is that of a command in flight, which
                // `poll` reports for the command (or the lost GPU already is).
                let _ = s.synchronize();
            }
        }
    }

    /// Begins a command of stage `stage` on slot `j` (which has nothing in flight):
    /// its start event and NVTX range. Its operations follow ([`Gpu::op`]), then
    /// [`Gpu::end`].
    pub(crate) fn begin(&mut self, j: usize, tag: Tag, stage: Stage) -> Result<(), Fault> {
        self.began = Instant::now();
        self.ops_in = 0;
        if self.timing {
            // The slot has no command in flight, so its events are free to record again.
            self.start[j].record(&self.streams[j]).map_err(issue_fault("cuEventRecord"))?;
        }
        self.issued_ns[j] = self.epoch.elapsed().as_nanos() as u64;
        self.stage[j] = stage;
        if let Some(r) = &mut self.ranges {
            r.start(j, tag.task.0, stage, tag.command);
        }
        Ok(())
    }

    /// Enqueues one operation of the command begun on slot `j`.
    pub(crate) fn op(&mut self, j: usize, op: Op<'_>) -> Result<(), Fault> {
        let stream = self.streams[j].raw();
        let gpu = self.ctx.index;
        match op {
            Op::Copy(c) => self.copy(stream, &c)?,
            Op::Upload(u) => {
                let at = u.dst.cuda_ptr().ok_or_else(|| Fault::task("an upload's destination is not CUDA memory"))?;
                // SAFETY: this GPU's context is current and `stream` is its; the
                // destination range lies in the allocation (the lowering took it from
                // the buffer's extent), which the operation's owner keeps alive and no
                // other command writes meanwhile; the source is borrowed (and locked by
                // the lowering) for this call, and pageable memory is staged by the
                // driver before the call returns.
                unsafe {
                    driver::memcpy_htod_async(
                        at + u.dst_offset as u64,
                        u.src.as_ptr() as *const c_void,
                        u.src.len(),
                        stream,
                    )
                }
                .map_err(issue_fault("cuMemcpyHtoDAsync"))?
            }
            Op::Peer(p) => {
                let dst =
                    p.dst.cuda_ptr().ok_or_else(|| Fault::task("a peer copy's destination is not CUDA memory"))?;
                let src = p.src.cuda_ptr().ok_or_else(|| Fault::task("a peer copy's source is not CUDA memory"))?;
                // SAFETY: this GPU's context is current and `stream` is its; both ranges
                // lie in their allocations (the lowering took them from the buffer's
                // extent); the source is a live copy of another GPU that its owner
                // counts as used until this command completes, unwritten until then,
                // and the destination is written by no other command meanwhile.
                unsafe { driver::memcpy_async(dst + p.dst_offset as u64, src + p.src_offset as u64, p.bytes, stream) }
                    .map_err(issue_fault("cuMemcpyAsync"))?
            }
            Op::Fill(f) => {
                let at = f.dst.cuda_ptr().ok_or_else(|| Fault::task("a fill's destination is not CUDA memory"))?;
                // SAFETY: this GPU's context is current and `stream` is its; the range
                // lies in the allocation, which its owner keeps alive and no other
                // command writes meanwhile.
                unsafe { driver::memset_d8_async(at + f.offset as u64, 0, f.bytes, stream) }
                    .map_err(issue_fault("cuMemsetD8Async"))?
            }
            Op::Launch(l) => {
                let n = l.args.len();
                if n > MAX_PARAMS {
                    return Err(OpFailure::TooManyArgs { given: n, max: MAX_PARAMS }.into());
                }
                // The driver only reads the values (it copies them at the call).
                for (p, v) in self.pointers.iter_mut().zip(l.args) {
                    *p = v as *const u64 as *mut c_void;
                }
                let func = l.func.ok_or("kernel not loaded on this GPU")?.func;
                // SAFETY: `func` is loaded in this context (its module stays loaded until
                // the Machine drops, after the dispatchers), which is current on this
                // thread, and `stream` is this GPU's; `pointers[..n]` point at the words,
                // one 8-byte slot per argument (the driver reads a parameter's size from
                // it, and copies the values at the call); the argument kinds were checked
                // against the kernel's declared parameters when the launch was added;
                // every pointer parameter is a live allocation of this GPU held by the
                // operation's owner until it completes, after the kernel, and the
                // owner's claims keep other access away.
                unsafe {
                    driver::launch_kernel(func, l.grid, l.block, l.shared_bytes, stream, &mut self.pointers[..n])
                }
                .map_err(issue_fault("cuLaunchKernel"))?;
            }
            Op::Host(f) => f.run(HostAt { gpu, slot: j, stream: Some(stream) })?,
        }
        self.ops_in += 1;
        Ok(())
    }

    /// Ends the command begun on slot `j`: its end event, which `poll` queries.
    /// Returns the time spent issuing it.
    pub(crate) fn end(&mut self, j: usize) -> Result<DriverNs, Fault> {
        self.end[j].record(&self.streams[j]).map_err(issue_fault("cuEventRecord"))?;
        Ok(self.began.elapsed().as_nanos() as u64)
    }

    /// The command begun on slot `j` failed before its end: the operations already
    /// enqueued still run, so wait for them before what they use is given back with
    /// the failure (a fetch's source copies).
    pub(crate) fn abandon(&mut self, j: usize) {
        if self.ops_in > 0 {
            let _ = self.streams[j].synchronize();
        }
    }

    fn copy(&mut self, stream: sys::CUstream, c: &CopyOp<'_>) -> Result<(), Fault> {
        let Some(dev) = c.dev.cuda_ptr() else {
            return Err(Fault::task("a CUDA copy's device buffer has no CUDA memory on this GPU"));
        };
        let host = c.host.alloc().as_ptr();
        // SAFETY: (both arms) this GPU's context is current and `stream` is its; the
        // host block is pinned and covers the region (checked at build, which also keeps
        // `host.add` in the block), and the task's claim keeps conflicting access away until the task
        // ends, after this copy completes (a conflicting task waits, its claim dormant,
        // until then: `memory::claims`); the device range lies in the allocation
        // (checked at build), which the command's Arc keeps alive.
        unsafe {
            if c.height == 1 {
                let h = host.add(c.host_offset);
                let d = dev + c.dev_offset as u64;
                match c.dir {
                    Direction::Download => driver::memcpy_htod_async(d, h as *const c_void, c.width, stream)
                        .map_err(issue_fault("cuMemcpyHtoDAsync"))?,
                    Direction::Readback => driver::memcpy_dtoh_async(h as *mut c_void, d, c.width, stream)
                        .map_err(issue_fault("cuMemcpyDtoHAsync"))?,
                }
            } else {
                // Every field set: the memory-type fields are enums with no zero value,
                // so a zeroed struct would be invalid.
                let (host_type, dev_type) =
                    (sys::CUmemorytype::CU_MEMORYTYPE_HOST, sys::CUmemorytype::CU_MEMORYTYPE_DEVICE);
                let host_at = host.add(c.host_offset);
                let dev_at = dev + c.dev_offset as u64;
                let download = c.dir == Direction::Download;
                let p = sys::CUDA_MEMCPY2D {
                    srcXInBytes: 0,
                    srcY: 0,
                    srcMemoryType: if download { host_type } else { dev_type },
                    srcHost: if download { host_at as *const c_void } else { std::ptr::null() },
                    srcDevice: if download { 0 } else { dev_at },
                    srcArray: std::ptr::null_mut(),
                    srcPitch: if download { c.host_pitch } else { c.dev_pitch },
                    dstXInBytes: 0,
                    dstY: 0,
                    dstMemoryType: if download { dev_type } else { host_type },
                    dstHost: if download { std::ptr::null_mut() } else { host_at as *mut c_void },
                    dstDevice: if download { dev_at } else { 0 },
                    dstArray: std::ptr::null_mut(),
                    dstPitch: if download { c.dev_pitch } else { c.host_pitch },
                    WidthInBytes: c.width,
                    Height: c.height,
                };
                driver::memcpy_2d_async(&p, stream).map_err(issue_fault("cuMemcpy2DAsync"))?;
            }
        }
        Ok(())
    }

    /// Whether GPU `gpu`'s context (one a window of this GPU spans) is poisoned by a
    /// sticky error.
    #[cfg(feature = "replay")]
    pub(crate) fn other_gpu_lost(&self, gpu: usize) -> bool {
        self.contexts.get(gpu).is_some_and(|c| c.lost_seen_from(&self.ctx))
    }

    /// Whether a window (`device`: run on the device) may be issued behind the
    /// windows in flight: not a device-side run with another window in flight (the
    /// executor's image is one per GPU), nor any window behind a device-side run.
    #[cfg(feature = "replay")]
    pub(crate) fn can_issue_window(&self, device: bool) -> bool {
        self.flights.is_empty() || (!device && self.flights.iter().all(|(_, u)| *u != GraphUse::Device))
    }

    /// Launches graph `g` (a window) on slot 0's stream (every slot is idle while
    /// windows run), behind the windows in flight: on the device where it asks and can,
    /// else as one CUDA graph. Returns the time in driver calls and how the graph was
    /// had.
    #[cfg(feature = "replay")]
    pub(crate) fn issue_window<N: GraphSource>(&mut self, g: &GraphOp<'_, N>) -> Result<(DriverNs, GraphUse), Fault> {
        let t0 = Instant::now();
        let mut completion = self.completion()?;
        let stream = &self.streams[0];
        let mut used = Ok(None);
        if g.device {
            let ctx = &self.ctx;
            let runner = self.runner.get_or_insert_with(|| super::device_window::DeviceRunner::new(ctx.clone()));
            // A set of kernels the executor cannot be built from (a source that does
            // not compile as device functions) replays as a graph instead.
            used = runner.launch(&self.ctx, &self.arch, g, stream).map(|ran| ran.then_some(GraphUse::Device));
        }
        let used = match used {
            Ok(Some(u)) => Ok(u),
            Ok(None) => {
                let contexts = &self.contexts;
                let replayer = self.replayer.get_or_insert_with(|| super::replay::Replayer::new(contexts.clone()));
                replayer.launch(&self.ctx, g, stream)
            }
            Err(f) => Err(f),
        };
        let launched = used.and_then(|u| completion.record(stream, g.timed_end).map(|()| u));
        self.in_flight(completion, launched, t0)
    }

    /// Launches the graph kept under `name` again, as last set, if the replayer keeps
    /// it: one `cuGraphLaunch` and the completion event.
    #[cfg(feature = "replay")]
    pub(crate) fn relaunch(&mut self, name: (u64, u64)) -> Option<Result<(DriverNs, GraphUse), Fault>> {
        let t0 = Instant::now();
        let at = self.replayer.as_mut()?.kept_as(name)?;
        let mut completion = match self.completion() {
            Ok(c) => c,
            Err(f) => return Some(Err(f)),
        };
        let stream = &self.streams[0];
        // The replayer is there: it found the graph above.
        let launched = match self.replayer.as_mut() {
            Some(r) => r.relaunch(at, stream).and_then(|()| completion.record(stream, false)),
            None => Err(Fault::task("the kept graph went missing")),
        };
        Some(self.in_flight(completion, launched.map(|()| GraphUse::Reused), t0))
    }

    /// Runs on the device again the recorded part kept under `name`, if this GPU's
    /// executor keeps its image: a reset of its counters and one launch.
    #[cfg(feature = "replay")]
    pub(crate) fn relaunch_device(&mut self, name: (u64, u64)) -> Option<Result<(DriverNs, GraphUse), Fault>> {
        let t0 = Instant::now();
        let at = self.runner.as_ref()?.kept_as(name)?;
        let mut completion = match self.completion() {
            Ok(c) => c,
            Err(f) => return Some(Err(f)),
        };
        let stream = &self.streams[0];
        // The runner is there: it found the image above.
        let launched = match self.runner.as_mut() {
            Some(r) => r.relaunch(at, stream).and_then(|()| completion.record(stream, false)),
            None => Err(Fault::task("the kept device-side image went missing")),
        };
        Some(self.in_flight(completion, launched.map(|()| GraphUse::Device), t0))
    }

    /// A completion for the next window, its launch marked now (on slot 0's stream,
    /// where windows run).
    #[cfg(feature = "replay")]
    fn completion(&mut self) -> Result<super::completion::Completion, Fault> {
        let mut completion = match self.spare.pop() {
            Some(c) => c,
            None => super::completion::Completion::new(&self.ctx, self.timing).map_err(|e| Fault {
                message: e.to_string(),
                reach: Reach::Task,
                driver: Some(e),
            })?,
        };
        if let Err(f) = completion.launching(self.epoch, &self.streams[0]) {
            self.spare.push(completion);
            return Err(f);
        }
        Ok(completion)
    }

    /// Puts a window launched (as the graph was had) in flight with its `completion`,
    /// or keeps the completion spare where the launch failed; the time since `t0`.
    #[cfg(feature = "replay")]
    fn in_flight(
        &mut self,
        completion: super::completion::Completion,
        launched: Result<GraphUse, Fault>,
        t0: Instant,
    ) -> Result<(DriverNs, GraphUse), Fault> {
        match launched {
            Ok(used) => {
                self.flights.push_back((completion, used));
                Ok((t0.elapsed().as_nanos() as u64, used))
            }
            Err(f) => {
                self.spare.push(completion);
                Err(f)
            }
        }
    }

    /// Whether the first window in flight completed, and when it ran (launch to
    /// completion seen; and its time on the GPU, where timed).
    pub(crate) fn poll_window(&mut self) -> Option<Result<super::completion::Ran, Fault>> {
        let (completion, used) = self.flights.front()?;
        let what = match used {
            GraphUse::Device => "the device-side window",
            _ => "cuGraphLaunch",
        };
        let polled = completion.poll(self.epoch, what);
        if polled.is_some() {
            let (c, _) = self.flights.pop_front().expect("looked at above");
            self.spare.push(c);
        }
        polled
    }

    pub(crate) fn poll(&mut self, j: usize) -> Option<Result<Span, Fault>> {
        let polled = self.end[j].query();
        if let Some(r) = &mut self.ranges {
            if !matches!(polled, Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY))) {
                r.end(j);
            }
        }
        match polled {
            Ok(()) => {
                let span = self.span(j);
                if let Ok(s) = &span {
                    self.last_end_ns[self.stage[j].index()] = s.end_ns;
                }
                Some(span.map_err(Fault::task))
            }
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => None,
            Err(e) => {
                let kernel = self.stage[j] == Stage::Kernel;
                let error = failed("cuEventQuery", e);
                Some(Err(Fault { message: error.to_string(), reach: reach(e, kernel), driver: Some(error) }))
            }
        }
    }

    /// When the command of slot `j` ran. Host-observed (the default): it ended when its
    /// completion was seen (within one turn of the dispatcher's loop, microseconds) and
    /// started when issued, or, if an earlier command of its stage was still running
    /// then, when that one ended (an engine runs its commands one after another).
    fn span(&self, j: usize) -> Result<Span, crate::report::DriverError> {
        if !self.timing {
            let end_ns = self.epoch.elapsed().as_nanos() as u64;
            let start_ns = self.issued_ns[j].max(self.last_end_ns[self.stage[j].index()]).min(end_ns);
            return Ok(Span { start_ns, end_ns });
        }
        // All three events have completed.
        let at = self.base.elapsed_to(&self.start[j]).map_err(driver("cuEventElapsedTime"))?;
        let len = self.start[j].elapsed_to(&self.end[j]).map_err(driver("cuEventElapsedTime"))?;
        // Placement from the base event (f32 ms: sub-µs for runs under ~10 s), length
        // from the pair itself (precise at any age).
        let start_ns = self.base_ns + (at.max(0.0) as f64 * 1e6) as u64;
        Ok(Span { start_ns, end_ns: start_ns + (len.max(0.0) as f64 * 1e6) as u64 })
    }
}

impl Drop for Gpu {
    /// Waits for and destroys the streams, then the events: when a retired GPU's
    /// dispatcher leaves, or at shutdown. Errors go to the context's `cleanup`, for the
    /// next report (shutdown's own, or stderr after it). The windows' graphs, executors
    /// and completion events go after, with the fields.
    fn drop(&mut self) {
        let gpu = self.ctx.index;
        let cleanup = self.ctx.cleanup.clone();
        if let Err(e) = self.ctx.bind() {
            // The handles are still destroyed, with the fields (that needs no current
            // context; their errors are kept too), but not waited for.
            cleanup
                .push(crate::report::DriverError { call: format!("{} to destroy GPU {gpu}'s streams", e.call), ..e });
            return;
        }
        // The driver lets work still queued finish before releasing a destroyed stream
        // or event; each handle keeps its destroy's error.
        for s in self.streams.drain(..) {
            if let Err(e) = s.synchronize() {
                cleanup.push(failed(&format!("cuStreamSynchronize on GPU {gpu}"), e));
            }
            drop(s);
        }
        self.start.clear();
        self.end.clear();
    }
}
