//! The pipelines a CUDA programmer writes by hand, for measuring chariot against them
//! in the same run (the overhead study). Each is a small, honest implementation of its
//! kind over the demo's shift kernel; see [`Baseline`].

use crate::error::{Error, Result};
use crate::memory::HostBuffer;
use std::ops::Range;

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BaselineTiming {
    /// Building what is reused (the graph's capture and instantiation; 0 for the others).
    pub setup_ns: u64,
    /// Running the chunks: first call to last result, after a warm-up run.
    pub wall_ns: u64,
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
/// ranges that overlap each other; [`Error::CudaUnavailable`] without a CUDA GPU.
pub fn shift(
    baseline: Baseline,
    ordinal: usize,
    streams: usize,
    input: &HostBuffer<u32>,
    output: &mut HostBuffer<u32>,
    chunks: &[Range<usize>],
    iters: u32,
) -> Result<BaselineTiming> {
    let bad = |name: &'static str, value: String, allowed: &str| Error::InvalidConfig {
        name,
        value,
        allowed: allowed.into(),
    };
    if streams == 0 {
        return Err(bad("streams", "0".into(), "at least 1"));
    }
    let limit = input.len().min(output.len());
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
    )
    .map(|t| BaselineTiming { setup_ns: t.setup_ns, wall_ns: t.wall_ns })
    .map_err(|reason| Error::CudaUnavailable { reason })
}
