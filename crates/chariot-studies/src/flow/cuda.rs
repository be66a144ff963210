//! The hand-written CUDA graph of a shape, the safe face of `backend::cuda::flow`.

use super::Graph;
use crate::backend::cuda::flow::Rig;
use chariot::{Error, Result};

/// Host time of one launch of the hand-written graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandTiming {
    /// From `cuGraphLaunch` to the return of the stream's synchronize, in ns.
    pub wall_ns: u64,
}

/// One CUDA graph of a [`Graph`]'s shape, a kernel node per node (the spin kernel,
/// blocks of [`super::BLOCK`] threads) with the graph's edges, built and instantiated
/// once on a GPU's primary context and launched on one stream per run.
#[derive(Debug)]
pub struct HandGraph {
    rig: Rig,
    build_ns: u64,
}

impl HandGraph {
    /// Compiles the spin kernel for CUDA GPU `ordinal`, builds the graph of `graph`
    /// with `iters` in every node, each `blocks` blocks (at least 1), and instantiates
    /// it; the time this takes is [`HandGraph::build_ns`].
    ///
    /// # Errors
    /// [`Error::NoSuchGpu`] for an ordinal the machine does not have;
    /// [`Error::CudaUnavailable`] without CUDA or when a driver call fails.
    pub fn build(ordinal: usize, graph: &Graph, iters: u32, blocks: u32) -> Result<HandGraph> {
        let available = chariot::Backend::cuda_devices()?;
        if ordinal >= available {
            return Err(Error::NoSuchGpu { ordinal, available, backend: "cuda" });
        }
        let (rig, build_ns) = Rig::build(ordinal, &graph.predecessors(), iters, blocks.max(1))
            .map_err(|e| Error::CudaUnavailable { reason: format!("flow graph set-up: {e}") })?;
        Ok(HandGraph { rig, build_ns })
    }

    /// Host time of building the graph (adding the nodes and edges, instantiating),
    /// in ns; the kernel's compilation and loading are not counted.
    pub fn build_ns(&self) -> u64 {
        self.build_ns
    }

    /// Launches the executable graph once and waits for it.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] when the launch or the synchronize fails.
    pub fn run(&mut self) -> Result<HandTiming> {
        let wall_ns = self.rig.launch().map_err(|reason| Error::CudaUnavailable { reason })?;
        Ok(HandTiming { wall_ns })
    }
}
