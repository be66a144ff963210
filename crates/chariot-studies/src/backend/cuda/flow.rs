//! cudaFlow's micro-benchmark shapes (`crate::flow`) as one hand-written CUDA graph on
//! one GPU: a kernel node per task-graph node (the spin kernel, one block), each added
//! after its predecessors' nodes (`cuGraphAddKernelNode`), instantiated once, launched
//! on one non-blocking stream and synchronised per run. `crate::flow::HandGraph` is its
//! safe face.

use super::failed_text;
use crate::flow::{spin_kernel, BLOCK};
use chariot_inorder::rig::PrimaryContext;
use cudarc::driver::result;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::time::Instant;

/// The module, the sink, the stream and the graph of one shape, freed on drop (also
/// after an error).
pub(crate) struct Rig {
    ctx: PrimaryContext,
    module: Option<sys::CUmodule>,
    func: sys::CUfunction,
    /// The sink the rig allocated (freed on drop); none where it writes another's.
    sink: Option<u64>,
    stream: Option<sys::CUstream>,
    graph: Option<sys::CUgraph>,
    exec: Option<sys::CUgraphExec>,
    nodes: usize,
}

impl std::fmt::Debug for Rig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rig").field("nodes", &self.nodes).finish()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // SAFETY: every handle was created in this context by `build` and is destroyed
        // once; the stream is synchronised first, so no launch still uses the graph or
        // the sink.
        unsafe {
            let _ = result::ctx::set_current(self.ctx.raw());
            if let Some(s) = self.stream {
                let _ = result::stream::synchronize(s);
            }
            if let Some(e) = self.exec.take() {
                let _ = result::graph::exec_destroy(e);
            }
            if let Some(g) = self.graph.take() {
                let _ = result::graph::destroy(g);
            }
            if let Some(s) = self.stream.take() {
                let _ = result::stream::destroy(s);
            }
            if let Some(b) = self.sink.take() {
                let _ = result::free_sync(b);
            }
            if let Some(m) = self.module.take() {
                let _ = result::module::unload(m);
            }
        }
    }
}

impl Rig {
    /// Opens GPU `ordinal` (which exists), loads the spin kernel and builds the graph
    /// whose node `i` runs after `preds[i]` (all lower than `i`), every node `blocks`
    /// blocks with `iters`, writing `sink` (a device address of at least 4 bytes in
    /// the GPU's primary context that outlives the rig) or, without one, a sink of its
    /// own; returns the rig and the host time of adding the nodes and instantiating, in
    /// ns.
    pub(crate) fn build(
        ordinal: usize,
        preds: &[Vec<usize>],
        iters: u32,
        blocks: u32,
        sink: Option<u64>,
    ) -> Result<(Rig, u64), String> {
        let ctx = PrimaryContext::retain(ordinal)?;
        ctx.bind()?;
        let (module, func) = chariot_inorder::rig::load_kernel(ctx.device(), &spin_kernel())?;
        let mut rig = Rig {
            ctx,
            module: Some(module),
            func,
            sink: None,
            stream: None,
            graph: None,
            exec: None,
            nodes: preds.len(),
        };
        let writes = match sink {
            Some(address) => address,
            None => {
                // SAFETY: the context is current; freed in Drop (kept in the rig at once).
                let own = unsafe { result::malloc_sync(4) }.map_err(|e| failed_text("cuMemAlloc", e))?;
                rig.sink = Some(own);
                own
            }
        };
        rig.stream = Some(
            result::stream::create(result::stream::StreamKind::NonBlocking)
                .map_err(|e| failed_text("cuStreamCreate", e))?,
        );
        let t0 = Instant::now();
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: an out-pointer for a new graph; kept in the rig at once, destroyed in Drop.
        unsafe { sys::cuGraphCreate(&mut graph, 0) }.result().map_err(|e| failed_text("cuGraphCreate", e))?;
        rig.graph = Some(graph);
        // Parameter values, 8 bytes each (the 4-byte `iters` is read from the low bytes,
        // which come first on the little-endian hosts CUDA runs on).
        let mut values: [u64; 2] = [writes, iters as u64];
        let mut ptrs: [*mut c_void; 2] =
            [&mut values[0] as *mut u64 as *mut c_void, &mut values[1] as *mut u64 as *mut c_void];
        let mut nodes: Vec<sys::CUgraphNode> = Vec::with_capacity(preds.len());
        let mut deps: Vec<sys::CUgraphNode> = Vec::new();
        for (i, p) in preds.iter().enumerate() {
            deps.clear();
            for &j in p {
                if j >= i {
                    return Err(format!("node {i} names predecessor {j}, which is not before it"));
                }
                deps.push(nodes[j]);
            }
            let params = sys::CUDA_KERNEL_NODE_PARAMS {
                func: rig.func,
                gridDimX: blocks,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: BLOCK,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: 0,
                kernelParams: ptrs.as_mut_ptr(),
                extra: std::ptr::null_mut(),
                kern: std::ptr::null_mut(),
                ctx: std::ptr::null_mut(),
            };
            let mut added: sys::CUgraphNode = std::ptr::null_mut();
            // SAFETY: `deps` are nodes of this graph; `ptrs` point at `values`, which
            // outlive the call (the driver copies the parameter values when the node
            // is added); `func` is loaded in this context.
            unsafe { sys::cuGraphAddKernelNode_v2(&mut added, graph, deps.as_ptr(), deps.len(), &params) }
                .result()
                .map_err(|e| failed_text("cuGraphAddKernelNode", e))?;
            nodes.push(added);
        }
        // SAFETY: a complete graph of this context; its executable is destroyed in Drop.
        let exec = unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) }
            .map_err(|e| failed_text("cuGraphInstantiate", e))?;
        rig.exec = Some(exec);
        let build_ns = t0.elapsed().as_nanos() as u64;
        Ok((rig, build_ns))
    }

    /// Launches the executable graph on the rig's stream and synchronises it; the host
    /// time from the launch call to the synchronize's return, in ns.
    pub(crate) fn launch(&mut self) -> Result<u64, String> {
        let (Some(exec), Some(stream)) = (self.exec, self.stream) else {
            return Err("the graph was not built".into());
        };
        self.ctx.bind()?;
        let t0 = Instant::now();
        // SAFETY: an instantiated graph and a live stream of this context.
        unsafe { result::graph::launch(exec, stream) }.map_err(|e| failed_text("cuGraphLaunch", e))?;
        // SAFETY: a live stream of this context.
        unsafe { result::stream::synchronize(stream) }.map_err(|e| failed_text("cuStreamSynchronize", e))?;
        Ok(t0.elapsed().as_nanos() as u64)
    }
}
