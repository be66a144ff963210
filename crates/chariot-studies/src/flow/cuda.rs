//! The hand-written CUDA graph of a shape, the safe face of `backend::cuda::flow`.

use super::{ChariotFlow, Graph};
use crate::backend::cuda::flow::Rig;
use chariot::{DeviceBuffer, Error, Result, Scheduler};

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
    /// The chariot buffer it writes, where it writes one (`build_into`): kept alive
    /// while the graph may run.
    _sink: Option<DeviceBuffer<f32>>,
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
        let (rig, build_ns) = Rig::build(ordinal, &graph.predecessors(), iters, blocks.max(1), None)
            .map_err(|e| Error::CudaUnavailable { reason: format!("flow graph set-up: {e}") })?;
        Ok(HandGraph { rig, build_ns, _sink: None })
    }

    /// As [`HandGraph::build`], on `sched`'s first GPU (CUDA GPU `ordinal`), every
    /// node writing the float chariot's launches of `flow` write on that GPU's stream
    /// slot 0 (a recorded graph's lane 0, all of a chain's nodes), instead of a sink of
    /// its own: a chain of one-block nodes runs at a speed set by where that one float
    /// lies (653–760 µs for 1,024 empty nodes on an H200 by its page,
    /// `peers/sink_address_probe.cu`), so two programs' graphs compare node for node
    /// only writing one address. Runs one batch on `sched` to learn the address.
    ///
    /// # Errors
    /// As [`HandGraph::build`]; [`Error::CudaUnavailable`] where `sched` is not on CUDA
    /// or its one-task batch ran on a slot other than 0; what that batch returns.
    pub fn build_into(
        ordinal: usize,
        graph: &Graph,
        iters: u32,
        flow: &ChariotFlow,
        sched: &Scheduler,
    ) -> Result<HandGraph> {
        let available = chariot::Backend::cuda_devices()?;
        if ordinal >= available {
            return Err(Error::NoSuchGpu { ordinal, available, backend: "cuda" });
        }
        let unavailable = |reason: String| Error::CudaUnavailable { reason };
        let (address, slot) = flow
            .sink_address(sched)?
            .ok_or_else(|| unavailable("the flow graph at chariot's sink needs a CUDA scheduler".into()))?;
        if slot != 0 {
            return Err(unavailable(format!("chariot's sink was seen from stream slot {slot}, not 0")));
        }
        let (rig, build_ns) = Rig::build(ordinal, &graph.predecessors(), iters, flow.blocks_per_node(), Some(address))
            .map_err(|e| unavailable(format!("flow graph set-up: {e}")))?;
        Ok(HandGraph { rig, build_ns, _sink: Some(flow.sink().clone()) })
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
