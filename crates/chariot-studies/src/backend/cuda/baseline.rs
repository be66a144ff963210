//! Hand-written CUDA pipelines of the shift kernel, as a CUDA programmer writes them
//! without chariot: the baselines of the overhead study. Plain driver calls on
//! the device's primary context, no scheduler in between.
//!
//! * serial: per chunk, download, kernel, readback on one stream, then wait;
//! * breadth-first: S streams, chunk i on stream i mod S, rounds of S chunks issued
//!   stage by stage (all downloads of the round, then all kernels, then all readbacks);
//! * depth-first: every chunk's three commands on stream i mod S, all enqueued at once;
//! * graph: the depth-first sequence captured once as a CUDA graph and launched.

use chariot::Kernel;
use chariot_inorder::rig::{failed_text, load_kernel, PrimaryContext};
use cudarc::driver::result;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::ops::Range;
use std::time::Instant;

/// Which hand-written pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Serial,
    BreadthFirst,
    DepthFirst,
    Graph,
}

/// Resources of one baseline run, freed on drop (also after an error).
struct Rig {
    ctx: PrimaryContext,
    module: Option<sys::CUmodule>,
    func: sys::CUfunction,
    streams: Vec<sys::CUstream>,
    events: Vec<sys::CUevent>,
    buffers: Vec<(u64, u64)>,
    graph: Option<(sys::CUgraph, sys::CUgraphExec)>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        // SAFETY: every handle was created below in this context and is destroyed once;
        // streams are synchronised first, so no command still uses the buffers.
        unsafe {
            let _ = result::ctx::set_current(self.ctx.raw());
            for &s in &self.streams {
                let _ = result::stream::synchronize(s);
            }
            if let Some((g, e)) = self.graph.take() {
                let _ = result::graph::exec_destroy(e);
                let _ = result::graph::destroy(g);
            }
            for &e in &self.events {
                let _ = result::event::destroy(e);
            }
            for &s in &self.streams {
                let _ = result::stream::destroy(s);
            }
            for &(a, b) in &self.buffers {
                let _ = result::free_sync(a);
                let _ = result::free_sync(b);
            }
            if let Some(m) = self.module.take() {
                let _ = result::module::unload(m);
            }
        }
    }
}

/// Host time of the run: `setup_ns` builds what is reused (the graph's capture and
/// instantiation), `wall_ns` runs the chunks, from the first call to the last result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timing {
    pub(crate) setup_ns: u64,
    pub(crate) wall_ns: u64,
    /// When the run's last result arrived (before anything is torn down).
    pub(crate) ended: Option<Instant>,
}

/// Why a baseline run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// GPU `ordinal` does not exist: the driver has `available`.
    NoSuchGpu { ordinal: usize, available: usize },
    /// No CUDA here, or a driver call failed: the driver's message.
    Cuda(String),
}

impl From<Failure> for chariot::Error {
    fn from(f: Failure) -> Self {
        match f {
            Failure::NoSuchGpu { ordinal, available } => {
                chariot::Error::NoSuchGpu { ordinal, available, backend: "cuda" }
            }
            Failure::Cuda(reason) => chariot::Error::CudaUnavailable { reason },
        }
    }
}

/// The failure as one message, for callers that report text.
impl From<Failure> for String {
    fn from(f: Failure) -> Self {
        match f {
            Failure::NoSuchGpu { .. } => chariot::Error::from(f).to_string(),
            Failure::Cuda(message) => message,
        }
    }
}

impl Rig {
    /// Opens GPU `ordinal`, which exists (see [`shift`]).
    fn open(ordinal: usize, kernel: &Kernel, streams: usize, max_len: usize) -> Result<Rig, String> {
        let ctx = PrimaryContext::retain(ordinal)?;
        let mut rig = Rig {
            ctx,
            module: None,
            func: std::ptr::null_mut(),
            streams: Vec::new(),
            events: Vec::new(),
            buffers: Vec::new(),
            graph: None,
        };
        rig.ctx.bind()?;
        let (module, func) = load_kernel(rig.ctx.device(), kernel)?;
        rig.module = Some(module);
        rig.func = func;
        let bytes = max_len * 4;
        for _ in 0..streams {
            rig.streams.push(
                result::stream::create(result::stream::StreamKind::NonBlocking)
                    .map_err(|e| failed_text("cuStreamCreate", e))?,
            );
            rig.events.push(
                result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                    .map_err(|e| failed_text("cuEventCreate", e))?,
            );
            // SAFETY: the context is current; freed in Drop.
            let pair = unsafe {
                (
                    result::malloc_sync(bytes).map_err(|e| failed_text("cuMemAlloc", e))?,
                    result::malloc_sync(bytes).map_err(|e| failed_text("cuMemAlloc", e))?,
                )
            };
            rig.buffers.push(pair);
        }
        rig.events.push(
            result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(|e| failed_text("cuEventCreate", e))?,
        );
        Ok(rig)
    }

    /// Download, shift, readback of chunk `c` on stream slot `s`: the three commands.
    fn stage(
        &self,
        which: u8,
        s: usize,
        c: &Range<usize>,
        input: &[u32],
        output: &mut [u32],
        iters: u32,
    ) -> Result<(), String> {
        let stream = self.streams[s];
        let (d_in, d_out) = self.buffers[s];
        let n = c.end - c.start;
        // SAFETY: the host slices outlive the run (the caller synchronises before they
        // are released); the device buffers hold `max_len` ≥ n elements; the kernel's
        // parameters are (out, in, n, iters) as declared in kernels/shift.cu.
        unsafe {
            match which {
                0 => sys::cuMemcpyHtoDAsync_v2(d_in, input[c.clone()].as_ptr() as *const c_void, n * 4, stream)
                    .result()
                    .map_err(|e| failed_text("cuMemcpyHtoDAsync", e)),
                1 => {
                    let mut values: [u64; 4] = [d_out, d_in, n as u64, iters as u64];
                    let mut params: [*mut c_void; 4] = [
                        &mut values[0] as *mut u64 as *mut c_void,
                        &mut values[1] as *mut u64 as *mut c_void,
                        &mut values[2] as *mut u64 as *mut c_void,
                        &mut values[3] as *mut u64 as *mut c_void,
                    ];
                    let grid = (n as u32).div_ceil(crate::demo::BLOCK);
                    result::launch_kernel(self.func, (grid, 1, 1), (crate::demo::BLOCK, 1, 1), 0, stream, &mut params)
                        .map_err(|e| failed_text("cuLaunchKernel", e))
                }
                _ => sys::cuMemcpyDtoHAsync_v2(output[c.clone()].as_mut_ptr() as *mut c_void, d_out, n * 4, stream)
                    .result()
                    .map_err(|e| failed_text("cuMemcpyDtoHAsync", e)),
            }
        }
    }

    fn sync_all(&self) -> Result<(), String> {
        for &s in &self.streams {
            // SAFETY: a live stream of this rig.
            unsafe { result::stream::synchronize(s) }.map_err(|e| failed_text("cuStreamSynchronize", e))?;
        }
        Ok(())
    }

    fn depth_first(
        &self,
        chunks: &[Range<usize>],
        input: &[u32],
        output: &mut [u32],
        iters: u32,
    ) -> Result<(), String> {
        let s = self.streams.len();
        for (i, c) in chunks.iter().enumerate() {
            for which in 0..3 {
                self.stage(which, i % s, c, input, output, iters)?;
            }
        }
        Ok(())
    }

    fn run(
        &mut self,
        kind: Kind,
        chunks: &[Range<usize>],
        input: &[u32],
        output: &mut [u32],
        iters: u32,
    ) -> Result<Timing, String> {
        let s = self.streams.len();
        let mut timing = Timing::default();
        if kind == Kind::Graph && self.graph.is_none() {
            let t0 = Instant::now();
            let origin = self.streams[0];
            let fork = self.events[s];
            // SAFETY: capture on this rig's streams; the other streams join the capture
            // through the fork event and rejoin the origin before it ends.
            unsafe {
                result::stream::begin_capture(origin, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
                    .map_err(|e| failed_text("cuStreamBeginCapture", e))?;
                result::event::record(fork, origin).map_err(|e| failed_text("cuEventRecord", e))?;
                for &st in &self.streams[1..] {
                    result::stream::wait_event(st, fork, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
                        .map_err(|e| failed_text("cuStreamWaitEvent", e))?;
                }
            }
            let issued = self.depth_first(chunks, input, output, iters);
            // SAFETY: as above; capture is ended even if issuing failed.
            let graph = unsafe {
                for (k, &st) in self.streams.iter().enumerate().skip(1) {
                    let _ = result::event::record(self.events[k], st);
                    let _ = result::stream::wait_event(
                        origin,
                        self.events[k],
                        sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                    );
                }
                result::stream::end_capture(origin).map_err(|e| failed_text("cuStreamEndCapture", e))?
            };
            issued?;
            // SAFETY: `graph` was just captured; destroyed in Drop.
            let exec = unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) }.map_err(|e| {
                // SAFETY: not instantiated, so destroyed here once.
                let _ = unsafe { result::graph::destroy(graph) };
                failed_text("cuGraphInstantiate", e)
            })?;
            self.graph = Some((graph, exec));
            timing.setup_ns = t0.elapsed().as_nanos() as u64;
        }
        let t0 = Instant::now();
        match kind {
            Kind::Serial => {
                for c in chunks {
                    for which in 0..3 {
                        self.stage(which, 0, c, input, output, iters)?;
                    }
                    self.sync_all()?;
                }
            }
            Kind::BreadthFirst => {
                for round in chunks.chunks(s) {
                    for which in 0..3 {
                        for (j, c) in round.iter().enumerate() {
                            self.stage(which, j, c, input, output, iters)?;
                        }
                    }
                }
            }
            Kind::DepthFirst => self.depth_first(chunks, input, output, iters)?,
            Kind::Graph => {
                let (_, exec) = self.graph.expect("instantiated above");
                // SAFETY: `exec` is live; its nodes name this rig's buffers and the
                // caller's host slices, which outlive the run.
                unsafe { result::graph::launch(exec, self.streams[0]) }.map_err(|e| failed_text("cuGraphLaunch", e))?;
            }
        }
        self.sync_all()?;
        let ended = Instant::now();
        timing.wall_ns = (ended - t0).as_nanos() as u64;
        timing.ended = Some(ended);
        Ok(timing)
    }
}

/// Runs `kind` over `chunks` of `input` into `output` on GPU `ordinal` with `streams`
/// streams: once to warm up (module load, first touches), then timed. With `start`, the
/// timed run waits until every party of that barrier has warmed up (or failed), so
/// that runs on several GPUs are timed while all of them copy.
///
/// The ordinal is checked against the driver's device count first, as the scheduler
/// does (`Machine::open`): a GPU that does not exist is [`Failure::NoSuchGpu`], not a
/// failed `cuDeviceGet`. The error converts into [`chariot::Error`] (`NoSuchGpu` or
/// `CudaUnavailable`) or into a message.
#[allow(clippy::too_many_arguments)]
pub(crate) fn shift<E: From<Failure>>(
    kind: Kind,
    ordinal: usize,
    streams: usize,
    kernel: &Kernel,
    input: &[u32],
    output: &mut [u32],
    chunks: &[Range<usize>],
    iters: u32,
    start: Option<&std::sync::Barrier>,
) -> Result<Timing, E> {
    let setup = |e: String| Failure::Cuda(format!("baseline set-up: {e}"));
    let warmed = (|| {
        let available = chariot::Backend::cuda_devices().map_err(|e| setup(e.to_string()))?;
        if ordinal >= available {
            return Err(Failure::NoSuchGpu { ordinal, available });
        }
        let max_len = chunks.iter().map(|c| c.end - c.start).max().unwrap_or(1).max(1);
        let streams = if kind == Kind::Serial { 1 } else { streams };
        let mut rig = Rig::open(ordinal, kernel, streams, max_len).map_err(setup)?;
        // The first run builds the graph (its set-up time is kept) and warms everything up.
        let first = rig.run(kind, chunks, input, output, iters).map_err(Failure::Cuda)?;
        Ok((rig, first))
    })();
    // Every path waits once, so a failing party cannot strand the others.
    if let Some(b) = start {
        b.wait();
    }
    let (mut rig, first) = warmed?;
    let second = rig.run(kind, chunks, input, output, iters).map_err(Failure::Cuda)?;
    Ok(Timing { setup_ns: first.setup_ns, wall_ns: second.wall_ns, ended: second.ended })
}

#[cfg(test)]
mod test {
    use super::*;

    /// A GPU that does not exist is `NoSuchGpu` where CUDA runs, `CudaUnavailable`
    /// where it does not; either way before any chunk runs.
    #[test]
    fn a_missing_gpu_is_no_such_gpu() {
        let (input, mut output) = (vec![1u32; 4], vec![0u32; 4]);
        let kernel = crate::demo::shift_kernel();
        let run = |ordinal, output: &mut [u32]| {
            shift::<chariot::Error>(
                Kind::Serial,
                ordinal,
                1,
                &kernel,
                &input,
                output,
                std::slice::from_ref(&(0..4)),
                1,
                None,
            )
        };
        match run(usize::MAX, &mut output) {
            Err(chariot::Error::NoSuchGpu { ordinal: usize::MAX, backend: "cuda", .. }) => {}
            Err(chariot::Error::CudaUnavailable { reason }) => {
                assert!(reason.starts_with("baseline set-up"), "{reason}")
            }
            other => panic!("expected NoSuchGpu or CudaUnavailable, got {other:?}"),
        }
        assert_eq!(output, [0; 4]);
        let text: String = Failure::NoSuchGpu { ordinal: 99, available: 1 }.into();
        assert!(text.contains("GPU 99") && text.contains("cuda backend has 1 GPU(s)"), "{text}");
        assert_eq!(String::from(Failure::Cuda("cuInit failed".into())), "cuInit failed");
    }
}
