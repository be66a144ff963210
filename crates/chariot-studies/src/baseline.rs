//! The pipelines a CUDA programmer writes by hand, for measuring chariot against them
//! in the same run. Each is a small, honest implementation of its kind:
//!
//! * [`shift`]: the overhead study's baselines over the demo's shift kernel (see
//!   [`Baseline`]);
//! * [`in_order`]: the classic in-order pipeline of a stream application (the alignment application):
//!   CPU threads prepare chunk after chunk into pinned staging buffers, the calling
//!   thread puts chunk i on stream i mod S and, before reusing a stream, waits for its
//!   previous chunk and hands that chunk's output to the consumer, in file order.

use chariot::{Error, HostBuffer, Result};
use std::ops::Range;

// The in-order pipeline is a crate of its own (chariot-align's `bench` runs it too, and
// the product must not depend on the lab); re-exported here beside the other baselines.
pub use chariot_inorder::{
    in_order, DeviceArg, InOrderDevice, InOrderError, InOrderLaunch, InOrderPlan, InOrderTiming, Prepared,
};

/// A hand-written way to run the chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Baseline {
    /// One stream; each chunk's download, kernel and readback, then wait: no overlap.
    Serial,
    /// S streams, chunk i on stream i mod S, issued in rounds of S chunks stage by stage
    /// (all downloads of the round, then its kernels, then its readbacks): the pipeline
    /// of NVIDIA's "how to overlap data transfers" and the paper's manual version.
    BreadthFirst,
    /// S streams, chunk i on stream i mod S, each chunk's three commands enqueued one
    /// after the other, all chunks at once ("just use streams").
    DepthFirst,
    /// The depth-first sequence captured once as a CUDA graph and launched (seed 000's
    /// approach); capture and instantiation are timed apart.
    Graph,
}

impl Baseline {
    /// All four.
    pub const ALL: [Baseline; 4] = [Baseline::Serial, Baseline::BreadthFirst, Baseline::DepthFirst, Baseline::Graph];

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Baseline::Serial => "serial",
            Baseline::BreadthFirst => "breadth-first",
            Baseline::DepthFirst => "depth-first",
            Baseline::Graph => "cuda-graph",
        }
    }
}

/// Host time of a baseline run, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BaselineTiming {
    /// Building what is reused (the graph's capture and instantiation; 0 for the others).
    pub setup_ns: u64,
    /// Running the chunks: first call to last result, after a warm-up run.
    pub wall_ns: u64,
    /// When the timed run's last result arrived, before the baseline tore anything
    /// down: runs on several GPUs are placed in time by it (their overlap).
    pub ended: std::time::Instant,
}

/// Runs the shift kernel ([`crate::demo::shift_kernel`]) over `chunks` of `input` into
/// the same ranges of `output`, the `baseline` way, on CUDA GPU `ordinal` with
/// `streams` streams (Serial uses one). Runs once to warm up, then times a second run.
///
/// The guards taken on both buffers wait for any chariot task still using them and
/// keep them from being touched during the run.
///
/// # Errors
/// [`Error::InvalidConfig`] for zero streams, ranges outside the buffers, or output
/// ranges that overlap each other; [`Error::NoSuchGpu`] for an ordinal the machine does
/// not have; [`Error::CudaUnavailable`] without a CUDA GPU or when a driver call fails.
pub fn shift(
    baseline: Baseline,
    ordinal: usize,
    streams: usize,
    input: &HostBuffer<u32>,
    output: &mut HostBuffer<u32>,
    chunks: &[Range<usize>],
    iters: u32,
) -> Result<BaselineTiming> {
    shift_with(baseline, ordinal, streams, input, output, chunks, iters, None)
}

/// [`shift`] on several GPUs at once: each caller (one thread per GPU) warms up, then
/// waits at `start`, a barrier of as many parties as callers, so that the timed runs
/// begin together and every GPU copies while the others do. Each waits there once on
/// every path, errors included, so one failing caller does not strand the others.
///
/// ```no_run
/// use chariot_studies::baseline::{shift_started_by, Baseline};
/// # fn demo(s: &chariot::Scheduler) -> chariot::Result<()> {
/// let input = s.alloc_host::<u32>(1 << 20)?;
/// let mut outs = [s.alloc_host::<u32>(1 << 20)?, s.alloc_host::<u32>(1 << 20)?];
/// let halves = [vec![0..1 << 19], vec![1 << 19..1 << 20]];
/// let start = std::sync::Barrier::new(2);
/// std::thread::scope(|t| {
///     for (gpu, (out, half)) in outs.iter_mut().zip(&halves).enumerate() {
///         let (input, start) = (&input, &start);
///         t.spawn(move || shift_started_by(Baseline::BreadthFirst, gpu, 4, input, out, half, 100, start));
///     }
/// });
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`shift`].
#[allow(clippy::too_many_arguments)]
pub fn shift_started_by(
    baseline: Baseline,
    ordinal: usize,
    streams: usize,
    input: &HostBuffer<u32>,
    output: &mut HostBuffer<u32>,
    chunks: &[Range<usize>],
    iters: u32,
    start: &std::sync::Barrier,
) -> Result<BaselineTiming> {
    shift_with(baseline, ordinal, streams, input, output, chunks, iters, Some(start))
}

/// [`shift`], with the timed run held until every party of `start` has warmed up.
#[allow(clippy::too_many_arguments)]
fn shift_with(
    baseline: Baseline,
    ordinal: usize,
    streams: usize,
    input: &HostBuffer<u32>,
    output: &mut HostBuffer<u32>,
    chunks: &[Range<usize>],
    iters: u32,
    start: Option<&std::sync::Barrier>,
) -> Result<BaselineTiming> {
    let checked = check_shift(streams, input.len().min(output.len()), chunks);
    if let Err(e) = checked {
        // The other parties must not wait for this one.
        if let Some(b) = start {
            b.wait();
        }
        return Err(e);
    }
    let kind = match baseline {
        Baseline::Serial => crate::backend::cuda::baseline::Kind::Serial,
        Baseline::BreadthFirst => crate::backend::cuda::baseline::Kind::BreadthFirst,
        Baseline::DepthFirst => crate::backend::cuda::baseline::Kind::DepthFirst,
        Baseline::Graph => crate::backend::cuda::baseline::Kind::Graph,
    };
    let input = input.read();
    let mut output = output.write();
    crate::backend::cuda::baseline::shift(
        kind,
        ordinal,
        streams,
        &crate::demo::shift_kernel(),
        &input,
        &mut output,
        chunks,
        iters,
        start,
    )
    .map(|t| BaselineTiming {
        setup_ns: t.setup_ns,
        wall_ns: t.wall_ns,
        ended: t.ended.unwrap_or_else(std::time::Instant::now),
    })
}

/// The checks of [`shift`] that need no GPU: streams, and chunks inside `0..limit`
/// that do not overlap.
fn check_shift(streams: usize, limit: usize, chunks: &[Range<usize>]) -> Result<()> {
    let bad = |name: &'static str, value: String, allowed: &str| Error::InvalidConfig {
        name,
        value,
        allowed: allowed.into(),
    };
    if streams == 0 {
        return Err(bad("streams", "0".into(), "at least 1"));
    }
    if let Some(c) = chunks.iter().find(|c| c.start >= c.end || c.end > limit) {
        return Err(bad("chunks", format!("{c:?}"), &format!("non-empty ranges inside 0..{limit}")));
    }
    let mut sorted: Vec<_> = chunks.to_vec();
    sorted.sort_by_key(|c| c.start);
    if let Some(w) = sorted.windows(2).find(|w| w[0].end > w[1].start) {
        return Err(bad(
            "chunks",
            format!("{:?} and {:?}", w[0], w[1]),
            "ranges that do not overlap (readbacks would race)",
        ));
    }
    Ok(())
}
