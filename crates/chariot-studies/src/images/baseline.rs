//! The image DAG by hand on one CUDA GPU (the safe face of `backend/cuda/images.rs`):
//! the three ways a CUDA programmer runs it without a scheduler ([`HandWritten`]).
//! Same kernels, same launch shapes, same pinned host buffers as chariot's run.

use crate::backend::cuda::images::{Kind, Rig};
use chariot::{Error, HostBuffer, Result};

/// A hand-written way to run the image stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandWritten {
    /// One stream, one buffer set: per image the upload, each of the 11 kernels and
    /// the readback, each followed by a synchronize (GrCUDA's serial baseline).
    Sync,
    /// Per buffer set, one CUDA graph of the per-image DAG (copy nodes, kernel nodes,
    /// the branches as parallel nodes), built by hand and instantiated once; per image
    /// its copy nodes' host pointers are set with `cuGraphExecMemcpyNodeSetParams` and
    /// it is launched on its set's stream (image i on set i mod K).
    Graph,
    /// Four streams with events for the branch dependencies, images pipelined over K
    /// buffer sets (a set's upload waits for its previous readback).
    MultiStream,
}

impl HandWritten {
    /// All three.
    pub const ALL: [HandWritten; 3] = [HandWritten::Sync, HandWritten::Graph, HandWritten::MultiStream];

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            HandWritten::Sync => "sync",
            HandWritten::Graph => "cuda-graph",
            HandWritten::MultiStream => "multi-stream",
        }
    }
}

/// Host time of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandTiming {
    /// Building the graphs (their first run only; 0 otherwise and for the others).
    pub setup_ns: u64,
    /// First call to last result.
    pub wall_ns: u64,
}

/// The GPU resources of the hand-written runs, opened once and reused across runs:
/// compiled kernels, K buffer sets, streams, events, and the graphs once built.
#[derive(Debug)]
pub struct HandRig {
    rig: Rig,
    n: usize,
}

impl HandRig {
    /// Opens CUDA GPU `ordinal` for `n × n` images and `ring` buffer sets (the sync
    /// way uses the first).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for `n` or `ring` zero or an image of 2³² pixels or
    /// more; [`Error::NoSuchGpu`] for an ordinal the machine does not have;
    /// [`Error::CudaUnavailable`] without CUDA or when a driver call fails.
    pub fn open(ordinal: usize, n: usize, ring: usize) -> Result<HandRig> {
        check(n, ring)?;
        let available = chariot::Backend::cuda_devices()?;
        if ordinal >= available {
            return Err(Error::NoSuchGpu { ordinal, available, backend: "cuda" });
        }
        let rig = Rig::open(ordinal, n, ring)
            .map_err(|e| Error::CudaUnavailable { reason: format!("image baseline set-up: {e}") })?;
        Ok(HandRig { rig, n })
    }

    /// Runs the first `count` images of `input` (consecutive `n × n` images) into the
    /// same places of `output`, the `way` way. The guards taken on both buffers wait
    /// for chariot tasks still using them and keep them from being touched meanwhile.
    /// The graphs are built at the first graph run (timed apart, `setup_ns`) and
    /// rebuilt if later runs name other buffers.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] where `count` images do not fit the buffers;
    /// [`Error::CudaUnavailable`] when a driver call fails (after waiting for what was
    /// issued).
    pub fn run(
        &mut self,
        way: HandWritten,
        input: &HostBuffer<f32>,
        output: &mut HostBuffer<f32>,
        count: usize,
    ) -> Result<HandTiming> {
        let need = count.saturating_mul(self.n * self.n);
        if need > input.len().min(output.len()) {
            return Err(Error::InvalidConfig {
                name: "count",
                value: count.to_string(),
                allowed: format!("images that fit the buffers ({} and {} pixels)", input.len(), output.len()),
            });
        }
        let kind = match way {
            HandWritten::Sync => Kind::Sync,
            HandWritten::Graph => Kind::Graph,
            HandWritten::MultiStream => Kind::MultiStream,
        };
        let input = input.read();
        let mut output = output.write();
        let t = self
            .rig
            .run(kind, &input, &mut output, count)
            .map_err(|e| Error::CudaUnavailable { reason: format!("image baseline {}: {e}", way.name()) })?;
        Ok(HandTiming { setup_ns: t.setup_ns, wall_ns: t.wall_ns })
    }
}

/// The checks of [`HandRig::open`] that need no GPU.
fn check(n: usize, ring: usize) -> Result<()> {
    let bad = |name: &'static str, value: usize, allowed: &str| Error::InvalidConfig {
        name,
        value: value.to_string(),
        allowed: allowed.into(),
    };
    if n == 0 || n.checked_mul(n).is_none_or(|p| p > u32::MAX as usize) {
        return Err(bad("n", n, "1 ..= 65535 (n² pixels must fit an unsigned int)"));
    }
    if ring == 0 {
        return Err(bad("ring", ring, "at least 1"));
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    /// Bad sizes are refused before CUDA is touched; a missing GPU is `NoSuchGpu`
    /// where CUDA runs, `CudaUnavailable` where it does not.
    #[test]
    fn bad_input_and_missing_gpus() {
        assert!(matches!(HandRig::open(0, 0, 4), Err(Error::InvalidConfig { name: "n", .. })));
        assert!(matches!(HandRig::open(0, 70_000, 4), Err(Error::InvalidConfig { name: "n", .. })));
        assert!(matches!(HandRig::open(0, 8, 0), Err(Error::InvalidConfig { name: "ring", .. })));
        match HandRig::open(usize::MAX, 8, 2) {
            Err(Error::NoSuchGpu { ordinal: usize::MAX, .. }) | Err(Error::CudaUnavailable { .. }) => {}
            other => panic!("expected NoSuchGpu or CudaUnavailable, got {other:?}"),
        }
        assert_eq!(HandWritten::ALL.map(HandWritten::name), ["sync", "cuda-graph", "multi-stream"]);
    }
}
