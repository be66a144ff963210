//! Owned driver objects: a stream, an event, a module, a graph and an executable
//! graph, each destroyed once when its handle drops, with the driver's error kept in
//! the machine's cleanup list (for the next report, or stderr after the shutdown)
//! rather than dropped. Each holds its context, so the context outlives what was made
//! in it. The methods are the calls whose only precondition is that the handles are
//! live, which holding them proves; the calls that also make the device read or write
//! memory stay `unsafe`, with the memory's conditions as theirs.

use super::context::Context;
use super::driver::{self, DriverError};
use super::failed;
use cudarc::driver::sys;
use std::sync::Arc;

/// Keeps a failed destroy of GPU `ctx`'s in its cleanup list.
fn keep(ctx: &Context, call: &str, r: Result<(), DriverError>) {
    if let Err(e) = r {
        ctx.cleanup.push(failed(&format!("{call} on GPU {}", ctx.index), e));
    }
}

/// A stream of one context.
#[derive(Debug)]
pub(crate) struct Stream {
    raw: sys::CUstream,
    ctx: Arc<Context>,
}

impl Stream {
    /// A new stream of `ctx`, which the calling thread has made current.
    pub(crate) fn create(ctx: &Arc<Context>, flags: sys::CUstream_flags) -> Result<Stream, DriverError> {
        Ok(Stream { raw: driver::stream_create(flags)?, ctx: ctx.clone() })
    }

    /// The raw handle, valid while `self` lives.
    #[inline]
    pub(crate) fn raw(&self) -> sys::CUstream {
        self.raw
    }

    /// Waits for everything enqueued on the stream.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: the stream is live while `self` is.
        unsafe { driver::stream_synchronize(self.raw) }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created in `create`, destroyed once, here; work still queued on it
        // runs to the end first.
        keep(&self.ctx, "cuStreamDestroy", unsafe { driver::stream_destroy(self.raw) });
    }
}

/// An event of one context.
#[derive(Debug)]
pub(crate) struct Event {
    raw: sys::CUevent,
    ctx: Arc<Context>,
}

impl Event {
    /// A new event of `ctx`, which the calling thread has made current.
    pub(crate) fn create(ctx: &Arc<Context>, flags: sys::CUevent_flags) -> Result<Event, DriverError> {
        Ok(Event { raw: driver::event_create(flags)?, ctx: ctx.clone() })
    }

    /// Records the event after what is enqueued on `stream` so far.
    #[inline]
    pub(crate) fn record(&self, stream: &Stream) -> Result<(), DriverError> {
        // SAFETY: both are live while borrowed (of different contexts, the driver
        // returns an error).
        unsafe { driver::event_record(self.raw, stream.raw) }
    }

    /// `Ok` once the recorded work completed, `CUDA_ERROR_NOT_READY` before.
    #[inline]
    pub(crate) fn query(&self) -> Result<(), DriverError> {
        // SAFETY: the event is live while `self` is.
        unsafe { driver::event_query(self.raw) }
    }

    /// Waits for the recorded work.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // SAFETY: the event is live while `self` is.
        unsafe { driver::event_synchronize(self.raw) }
    }

    /// Milliseconds from this event to `end` (both recorded, timed and completed, or
    /// the driver's error).
    #[inline]
    pub(crate) fn elapsed_to(&self, end: &Event) -> Result<f32, DriverError> {
        // SAFETY: both events are live while borrowed.
        unsafe { driver::event_elapsed_time(self.raw, end.raw) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in `create`, destroyed once, here; an event recorded and not
        // yet reached is freed by the driver when reached.
        keep(&self.ctx, "cuEventDestroy", unsafe { driver::event_destroy(self.raw) });
    }
}

/// A module loaded in one context. Unloaded when dropped, which must happen with its
/// context current and none of its functions queued or running (the owners see to it:
/// the machine's modules drop after the dispatchers are joined, an executor's with its
/// GPU's streams synchronised).
#[derive(Debug)]
pub(crate) struct Module {
    raw: sys::CUmodule,
    ctx: Arc<Context>,
}

impl Module {
    /// Loads `image` into `ctx`, which the calling thread has made current.
    ///
    /// # Safety
    /// 1. `image` is a complete cubin or fatbin (the driver reads as far as its own
    ///    headers say).
    pub(crate) unsafe fn load_data(ctx: &Arc<Context>, image: &[u8]) -> Result<Module, DriverError> {
        // SAFETY: precondition 1.
        let raw = unsafe { driver::module_load_data(image.as_ptr().cast()) }?;
        Ok(Module { raw, ctx: ctx.clone() })
    }

    /// The entry point `name`: valid while the module is loaded (its owner keeps it so
    /// while the function is launched).
    pub(crate) fn get_function(&self, name: &std::ffi::CStr) -> Result<sys::CUfunction, DriverError> {
        // SAFETY: the module is loaded while `self` lives.
        unsafe { driver::module_get_function(self.raw, name) }
    }

    /// The context it was loaded in.
    pub(crate) fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Drops the handle without unloading (a module whose context cannot be made
    /// current is left to the context's own teardown).
    pub(crate) fn leak(self) {
        std::mem::forget(self);
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: loaded in `load_data`, unloaded once, here; the owner drops it with
        // the context current and nothing of it queued (see the type's doc).
        keep(&self.ctx, "cuModuleUnload", unsafe { driver::module_unload(self.raw) });
    }
}

/// A graph being built (`replay.rs`).
#[derive(Debug)]
pub(crate) struct Graph {
    raw: sys::CUgraph,
    ctx: Arc<Context>,
}

impl Graph {
    /// An empty graph, for nodes of `ctx`.
    pub(crate) fn create(ctx: &Arc<Context>) -> Result<Graph, DriverError> {
        Ok(Graph { raw: driver::graph_create()?, ctx: ctx.clone() })
    }

    /// Adds a kernel node after `deps`.
    ///
    /// # Safety
    /// 1. `deps` are nodes of this graph.
    /// 2. As [`driver::graph_add_kernel_node`]'s 2 and 3 for `p`.
    pub(crate) unsafe fn add_kernel_node(
        &self,
        deps: &[sys::CUgraphNode],
        p: &sys::CUDA_KERNEL_NODE_PARAMS,
    ) -> Result<sys::CUgraphNode, DriverError> {
        // SAFETY: the graph is live while `self` is; preconditions 1 and 2.
        unsafe { driver::graph_add_kernel_node(self.raw, deps, p) }
    }

    /// Adds a copy node after `deps`, run in context `ctx` (the graph's, or another
    /// GPU's where the graph spans GPUs).
    ///
    /// # Safety
    /// 1. `deps` are nodes of this graph.
    /// 2. As [`driver::graph_add_memcpy_node`]'s 2 for `p`, its device memory `ctx`'s.
    pub(crate) unsafe fn add_memcpy_node(
        &self,
        deps: &[sys::CUgraphNode],
        p: &sys::CUDA_MEMCPY3D,
        ctx: &Context,
    ) -> Result<sys::CUgraphNode, DriverError> {
        // SAFETY: the graph is live while `self` is, the context while borrowed;
        // preconditions 1 and 2.
        unsafe { driver::graph_add_memcpy_node(self.raw, deps, p, ctx.ctx) }
    }

    /// Instantiates the graph as it is now.
    pub(crate) fn instantiate(&self) -> Result<GraphExec, DriverError> {
        // SAFETY: the graph is live while `self` is.
        let raw = unsafe { driver::graph_instantiate(self.raw) }?;
        Ok(GraphExec { raw, ctx: self.ctx.clone() })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: created in `create`, destroyed once, here; an executable graph made
        // from it no longer reads it.
        keep(&self.ctx, "cuGraphDestroy", unsafe { driver::graph_destroy(self.raw) });
    }
}

/// An executable graph.
#[derive(Debug)]
pub(crate) struct GraphExec {
    raw: sys::CUgraphExec,
    ctx: Arc<Context>,
}

impl GraphExec {
    /// Sets kernel node `node` for later launches.
    ///
    /// # Safety
    /// 1. `node` is a kernel node of the graph this was made from.
    /// 2. As [`driver::graph_add_kernel_node`]'s 2 and 3 for `p`.
    #[inline]
    pub(crate) unsafe fn set_kernel_node(
        &self,
        node: sys::CUgraphNode,
        p: &sys::CUDA_KERNEL_NODE_PARAMS,
    ) -> Result<(), DriverError> {
        // SAFETY: live while `self` is; preconditions 1 and 2.
        unsafe { driver::graph_exec_kernel_node_set_params(self.raw, node, p) }
    }

    /// Sets copy node `node` for later launches, run in context `ctx` (the one it was
    /// added in).
    ///
    /// # Safety
    /// 1. `node` is a copy node of the graph this was made from.
    /// 2. As [`driver::graph_add_memcpy_node`]'s 2 for `p`, its device memory `ctx`'s.
    #[inline]
    pub(crate) unsafe fn set_memcpy_node(
        &self,
        node: sys::CUgraphNode,
        p: &sys::CUDA_MEMCPY3D,
        ctx: &Context,
    ) -> Result<(), DriverError> {
        // SAFETY: live while `self` is, the context while borrowed; preconditions 1 and 2.
        unsafe { driver::graph_exec_memcpy_node_set_params(self.raw, node, p, ctx.ctx) }
    }

    /// Enqueues the graph on `stream`.
    ///
    /// # Safety
    /// 1. Everything the nodes read and write stays allocated until the launch
    ///    completes, and is touched by nothing else meanwhile.
    #[inline]
    pub(crate) unsafe fn launch(&self, stream: &Stream) -> Result<(), DriverError> {
        // SAFETY: both live while borrowed; precondition 1.
        unsafe { driver::graph_launch(self.raw, stream.raw()) }
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // SAFETY: instantiated by `Graph::instantiate`, destroyed once, here. It may be
        // dropped while a launch of it is in flight (a window runs while the next is
        // set up): the driver frees it when that launch completes.
        keep(&self.ctx, "cuGraphExecDestroy", unsafe { driver::graph_exec_destroy(self.raw) });
    }
}

// SAFETY: a module handle is not tied to a thread; `&Module` only looks functions up,
// which the driver serialises.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}
