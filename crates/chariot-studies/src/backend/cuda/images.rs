//! The image DAG (`crate::images`) by hand on one GPU, with the CUDA driver through
//! cudarc on the device's primary context, as a CUDA programmer writes it without a
//! scheduler; `crate::images::baseline` is its safe face.
//!
//! * sync: one stream, one buffer set; per image the upload, each kernel and the
//!   readback, each followed by a stream synchronize;
//! * graph: per buffer set, one CUDA graph of the whole per-image DAG built by hand
//!   (memcpy nodes for the copies, kernel nodes with the DAG's 15 edges, so the
//!   branches are parallel nodes), instantiated once; per image, the copy nodes' host
//!   pointers are set on the executable graph (`cuGraphExecMemcpyNodeSetParams`, no
//!   re-capture) and it is launched on its set's stream, so images pipeline over the
//!   ring;
//! * multi-stream: four streams (uploads, the small and unsharpen branches, the large
//!   branch and the combines, readbacks; `Node::lane`), an event per node where
//!   another stream depends on it, images pipelined over a ring of buffer sets: a
//!   set's next upload waits for its last readback.
//!
//! Why this file is long: the three ways share one rig (module, buffer sets, streams,
//! events, graphs) and its teardown, and a graph's copy nodes need the driver's whole
//! 3-D copy descriptor written out.

use super::failed_text;
use crate::images::{kernels, Buf, Node, Use};
use chariot_inorder::rig::PrimaryContext;
use cudarc::driver::result;
use cudarc::driver::sys;
use std::ffi::{c_void, CString};
use std::time::Instant;

/// Which hand-written pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Sync,
    Graph,
    MultiStream,
}

/// Host time of one run over the images.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timing {
    /// Building what the run reuses (the graphs' construction and instantiation, the
    /// first time only; 0 otherwise).
    pub(crate) setup_ns: u64,
    /// First call to last result.
    pub(crate) wall_ns: u64,
}

/// One buffer set's graph: the graph, its executable, and its two copy nodes.
struct SlotGraph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    upload: sys::CUgraphNode,
    readback: sys::CUgraphNode,
}

/// Everything a run needs on the GPU, freed on drop (also after an error).
pub(crate) struct Rig {
    ctx: PrimaryContext,
    module: Option<sys::CUmodule>,
    funcs: Vec<sys::CUfunction>,
    n: usize,
    /// Per buffer set, the device address of each `Buf`.
    slots: Vec<Vec<u64>>,
    /// max(4, ring) streams: the multi-stream lanes are 0..4, the graphs' set k runs on k.
    streams: Vec<sys::CUstream>,
    /// Per buffer set, an event per node.
    events: Vec<Vec<sys::CUevent>>,
    graphs: Vec<SlotGraph>,
    /// The host buffers (input, output addresses) the graphs were built with: a copy
    /// node's new parameters must stay within the allocations it was instantiated with.
    graph_host: (usize, usize),
}

impl std::fmt::Debug for Rig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rig").field("n", &self.n).field("ring", &self.slots.len()).finish()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // SAFETY: every handle was created in this context by `open` or `build_graphs`
        // and is destroyed once; the streams are synchronised first, so no command
        // still uses the buffers or the graphs.
        unsafe {
            let _ = result::ctx::set_current(self.ctx.raw());
            for &s in &self.streams {
                let _ = result::stream::synchronize(s);
            }
            for g in self.graphs.drain(..) {
                let _ = result::graph::exec_destroy(g.exec);
                let _ = result::graph::destroy(g.graph);
            }
            for &e in self.events.iter().flatten() {
                let _ = result::event::destroy(e);
            }
            for &s in &self.streams {
                let _ = result::stream::destroy(s);
            }
            for &b in self.slots.iter().flatten() {
                let _ = result::free_sync(b);
            }
            if let Some(m) = self.module.take() {
                let _ = result::module::unload(m);
            }
        }
    }
}

/// A kernel launch's parameter values, 8 bytes each (a 4-byte parameter is read from
/// the low bytes, which come first on the little-endian hosts CUDA runs on), and the
/// pointers to them that `cuLaunchKernel` and kernel nodes take.
struct Params {
    values: Vec<u64>,
}

impl Params {
    fn new(slot: &[u64], args: &[Use]) -> Params {
        let values = args
            .iter()
            .map(|u| match *u {
                Use::Read(b) | Use::Write(b) | Use::ReadWrite(b) => slot[b.index()],
                Use::U32(v) => v as u64,
                Use::I32(v) => v as u32 as u64,
                Use::F32(v) => v.to_bits() as u64,
            })
            .collect();
        Params { values }
    }

    /// Pointers into `self.values`, valid while `self` is neither moved nor changed.
    fn pointers(&mut self) -> Vec<*mut c_void> {
        self.values.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect()
    }
}

impl Rig {
    /// Opens GPU `ordinal` (which exists) for `n × n` images and `ring` buffer sets:
    /// compiles and loads the kernels, allocates the sets, streams and events.
    pub(crate) fn open(ordinal: usize, n: usize, ring: usize) -> Result<Rig, String> {
        let ctx = PrimaryContext::retain(ordinal)?;
        let mut rig = Rig {
            ctx,
            module: None,
            funcs: Vec::new(),
            n,
            slots: Vec::new(),
            streams: Vec::new(),
            events: Vec::new(),
            graphs: Vec::new(),
            graph_host: (0, 0),
        };
        rig.ctx.bind()?;
        // One module holds all the kernels: compile the source once, under the first
        // kernel's name, and take every entry point from it.
        let all = kernels::all();
        let (module, first) = chariot_inorder::rig::load_kernel(rig.ctx.device(), &all[0])?;
        rig.module = Some(module);
        rig.funcs.push(first);
        for k in &all[1..] {
            let name = CString::new(k.name()).map_err(|_| "kernel name has a NUL byte".to_string())?;
            // SAFETY: the module is loaded (and unloaded in Drop).
            let f = unsafe { result::module::get_function(module, name) }
                .map_err(|e| failed_text("cuModuleGetFunction", e))?;
            rig.funcs.push(f);
        }
        for _ in 0..ring {
            rig.slots.push(Vec::with_capacity(Buf::ALL.len()));
            for b in Buf::ALL {
                // SAFETY: the context is current; freed in Drop (kept in the rig at
                // once, so a later failure frees it too).
                let ptr = unsafe { result::malloc_sync(b.len(n) * 4) }.map_err(|e| failed_text("cuMemAlloc", e))?;
                rig.slots.last_mut().expect("pushed above").push(ptr);
            }
            let mut events = Vec::with_capacity(Node::ALL.len());
            for _ in Node::ALL {
                events.push(
                    result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                        .map_err(|e| failed_text("cuEventCreate", e))?,
                );
            }
            rig.events.push(events);
        }
        for _ in 0..ring.max(4) {
            rig.streams.push(
                result::stream::create(result::stream::StreamKind::NonBlocking)
                    .map_err(|e| failed_text("cuStreamCreate", e))?,
            );
        }
        Ok(rig)
    }

    fn image_len(&self) -> usize {
        self.n * self.n
    }

    /// Issues `node` of image `i` on buffer set `k` into `stream`.
    fn issue(
        &self,
        node: Node,
        k: usize,
        i: usize,
        stream: sys::CUstream,
        input: &[f32],
        output: &mut [f32],
    ) -> Result<(), String> {
        let len = self.image_len();
        let slot = &self.slots[k];
        match node {
            Node::Upload => {
                let src = &input[i * len..(i + 1) * len];
                // SAFETY: `src` lies in the caller's pinned input, which outlives the
                // run (the run synchronises before returning); the image buffer holds
                // `len` floats.
                unsafe {
                    sys::cuMemcpyHtoDAsync_v2(slot[Buf::Image.index()], src.as_ptr() as *const c_void, len * 4, stream)
                }
                .result()
                .map_err(|e| failed_text("cuMemcpyHtoDAsync", e))
            }
            Node::Readback => {
                let dst = &mut output[i * len..(i + 1) * len];
                // SAFETY: as for the upload, into the caller's pinned output.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(
                        dst.as_mut_ptr() as *mut c_void,
                        slot[Buf::Combined.index()],
                        len * 4,
                        stream,
                    )
                }
                .result()
                .map_err(|e| failed_text("cuMemcpyDtoHAsync", e))
            }
            _ => {
                let l = node.launch(self.n).ok_or("a kernel node without a launch")?;
                let mut params = Params::new(slot, &l.args);
                let mut ptrs = params.pointers();
                // SAFETY: the function takes exactly these parameters (the launch is
                // checked against the kernel's declaration in the tests), each pointer
                // points at an 8-byte value that lives until the call returns (the
                // driver copies them), and the buffers belong to this rig.
                unsafe {
                    result::launch_kernel(
                        self.funcs[l.kernel.index()],
                        (l.grid.x, l.grid.y, l.grid.z),
                        (l.block.x, l.block.y, l.block.z),
                        0,
                        stream,
                        &mut ptrs,
                    )
                }
                .map_err(|e| failed_text(&format!("cuLaunchKernel ({})", node.name()), e))
            }
        }
    }

    fn sync(&self, stream: sys::CUstream) -> Result<(), String> {
        // SAFETY: a live stream of this rig.
        unsafe { result::stream::synchronize(stream) }.map_err(|e| failed_text("cuStreamSynchronize", e))
    }

    fn sync_all(&self) -> Result<(), String> {
        self.streams.iter().try_for_each(|&s| self.sync(s))
    }

    /// The 1-D copy of `bytes` between host `host` and device `dev`, up or down (one
    /// row of one slice, its pitch the row, as the runtime's `cudaGraphAddMemcpyNode1D`
    /// describes it).
    fn copy_params(&self, up: bool, host: *mut c_void, dev: u64, bytes: usize) -> sys::CUDA_MEMCPY3D {
        const HOST: sys::CUmemorytype = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
        const DEVICE: sys::CUmemorytype = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        let null = std::ptr::null_mut();
        sys::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: if up { HOST } else { DEVICE },
            srcHost: if up { host as *const c_void } else { std::ptr::null() },
            srcDevice: if up { 0 } else { dev },
            srcArray: null as sys::CUarray,
            reserved0: null,
            srcPitch: bytes,
            srcHeight: 1,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: if up { DEVICE } else { HOST },
            dstHost: if up { null } else { host },
            dstDevice: if up { dev } else { 0 },
            dstArray: null as sys::CUarray,
            reserved1: null,
            dstPitch: bytes,
            dstHeight: 1,
            WidthInBytes: bytes,
            Height: 1,
            Depth: 1,
        }
    }

    /// Destroys the graphs (after their launches are done), for other host buffers.
    fn drop_graphs(&mut self) -> Result<(), String> {
        self.sync_all()?;
        for g in self.graphs.drain(..) {
            // SAFETY: no launch of them is pending (synchronised above); destroyed once.
            unsafe {
                let _ = result::graph::exec_destroy(g.exec);
                let _ = result::graph::destroy(g.graph);
            }
        }
        Ok(())
    }

    /// Builds and instantiates each buffer set's graph (once), with its copies at
    /// image `k` of `input` and `output` (each launch sets its own).
    fn build_graphs(&mut self, input: &[f32], output: &mut [f32]) -> Result<(), String> {
        for k in self.graphs.len()..self.slots.len() {
            let mut graph: sys::CUgraph = std::ptr::null_mut();
            // SAFETY: an out-pointer for a new graph; destroyed below or in Drop.
            unsafe { sys::cuGraphCreate(&mut graph, 0) }.result().map_err(|e| failed_text("cuGraphCreate", e))?;
            let built = self.add_nodes(graph, k, input, output);
            let (upload, readback) = match built {
                Ok(pair) => pair,
                Err(e) => {
                    // SAFETY: created above, not instantiated, destroyed once.
                    let _ = unsafe { result::graph::destroy(graph) };
                    return Err(e);
                }
            };
            // SAFETY: a complete graph; its executable is destroyed in Drop.
            let exec = match unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) } {
                Ok(exec) => exec,
                Err(e) => {
                    // SAFETY: not instantiated, destroyed once.
                    let _ = unsafe { result::graph::destroy(graph) };
                    return Err(failed_text("cuGraphInstantiate", e));
                }
            };
            self.graphs.push(SlotGraph { graph, exec, upload, readback });
        }
        Ok(())
    }

    /// Adds the DAG's nodes for buffer set `k` to `graph`: the upload and readback
    /// nodes of image `k` (the first image that set runs), returned, and a kernel node
    /// per kernel, each after its `Node::deps`.
    fn add_nodes(
        &self,
        graph: sys::CUgraph,
        k: usize,
        input: &[f32],
        output: &mut [f32],
    ) -> Result<(sys::CUgraphNode, sys::CUgraphNode), String> {
        let len = self.image_len();
        let image = k.min((input.len() / len.max(1)).saturating_sub(1));
        let slot = &self.slots[k];
        let mut nodes: Vec<sys::CUgraphNode> = Vec::with_capacity(Node::ALL.len());
        for node in Node::ALL {
            let deps: Vec<sys::CUgraphNode> = node.deps().iter().map(|d| nodes[d.index()]).collect();
            let mut added: sys::CUgraphNode = std::ptr::null_mut();
            match node {
                Node::Upload | Node::Readback => {
                    let up = node == Node::Upload;
                    let (host, dev) = if up {
                        (input[image * len..].as_ptr() as *mut c_void, slot[Buf::Image.index()])
                    } else {
                        (output[image * len..].as_mut_ptr() as *mut c_void, slot[Buf::Combined.index()])
                    };
                    let p = self.copy_params(up, host, dev, len * 4);
                    // SAFETY: `deps` are nodes of this graph; `p` describes a 1-D copy
                    // between the caller's pinned buffers and this rig's device buffer
                    // (the driver copies the description).
                    unsafe {
                        sys::cuGraphAddMemcpyNode(&mut added, graph, deps.as_ptr(), deps.len(), &p, self.ctx.raw())
                    }
                    .result()
                    .map_err(|e| failed_text("cuGraphAddMemcpyNode", e))?;
                }
                _ => {
                    let l = node.launch(self.n).ok_or("a kernel node without a launch")?;
                    let mut params = Params::new(slot, &l.args);
                    let mut ptrs = params.pointers();
                    let p = sys::CUDA_KERNEL_NODE_PARAMS {
                        func: self.funcs[l.kernel.index()],
                        gridDimX: l.grid.x,
                        gridDimY: l.grid.y,
                        gridDimZ: l.grid.z,
                        blockDimX: l.block.x,
                        blockDimY: l.block.y,
                        blockDimZ: l.block.z,
                        sharedMemBytes: 0,
                        kernelParams: ptrs.as_mut_ptr(),
                        extra: std::ptr::null_mut(),
                        kern: std::ptr::null_mut(),
                        ctx: std::ptr::null_mut(),
                    };
                    // SAFETY: as for `cuLaunchKernel` in `issue`; the driver copies
                    // the parameter values when the node is added.
                    unsafe { sys::cuGraphAddKernelNode_v2(&mut added, graph, deps.as_ptr(), deps.len(), &p) }
                        .result()
                        .map_err(|e| failed_text(&format!("cuGraphAddKernelNode ({})", node.name()), e))?;
                }
            }
            nodes.push(added);
        }
        Ok((nodes[Node::Upload.index()], nodes[Node::Readback.index()]))
    }

    /// Runs `count` images of `input` into `output` the `kind` way.
    pub(crate) fn run(
        &mut self,
        kind: Kind,
        input: &[f32],
        output: &mut [f32],
        count: usize,
    ) -> Result<Timing, String> {
        let len = self.image_len();
        if input.len() < count * len || output.len() < count * len {
            return Err(format!("{count} images of {len} pixels do not fit the host buffers"));
        }
        // SAFETY: the rig's context.
        unsafe { result::ctx::set_current(self.ctx.raw()) }.map_err(|e| failed_text("cuCtxSetCurrent", e))?;
        let mut timing = Timing::default();
        let host = (input.as_ptr() as usize, output.as_ptr() as usize);
        if kind == Kind::Graph && self.graph_host != host {
            self.drop_graphs()?;
        }
        if kind == Kind::Graph && self.graphs.len() < self.slots.len() {
            let t0 = Instant::now();
            self.graph_host = host;
            self.build_graphs(input, output)?;
            timing.setup_ns = t0.elapsed().as_nanos() as u64;
        }
        let ring = self.slots.len();
        let t0 = Instant::now();
        let issued = match kind {
            Kind::Sync => self.run_sync(input, output, count),
            Kind::Graph => self.run_graphs(input, output, count),
            Kind::MultiStream => self.run_streams(input, output, count, ring),
        };
        // Wait for whatever was issued, also after an error.
        let synced = self.sync_all();
        issued?;
        synced?;
        timing.wall_ns = t0.elapsed().as_nanos() as u64;
        Ok(timing)
    }

    fn run_sync(&self, input: &[f32], output: &mut [f32], count: usize) -> Result<(), String> {
        let stream = self.streams[0];
        for i in 0..count {
            for node in Node::ALL {
                self.issue(node, 0, i, stream, input, output)?;
                self.sync(stream)?;
            }
        }
        Ok(())
    }

    fn run_graphs(&self, input: &[f32], output: &mut [f32], count: usize) -> Result<(), String> {
        let len = self.image_len();
        let ring = self.slots.len();
        for i in 0..count {
            let k = i % ring;
            let g = &self.graphs[k];
            let slot = &self.slots[k];
            let up =
                self.copy_params(true, input[i * len..].as_ptr() as *mut c_void, slot[Buf::Image.index()], len * 4);
            let down = self.copy_params(
                false,
                output[i * len..].as_mut_ptr() as *mut c_void,
                slot[Buf::Combined.index()],
                len * 4,
            );
            // SAFETY: the nodes are the executable's copy nodes, 1-D both at
            // instantiation and now, between the same pinned host allocations and
            // device buffers; launches already enqueued keep their old parameters
            // (the driver's rule), and this launch is ordered after the set's previous
            // one (same stream, same executable).
            unsafe {
                sys::cuGraphExecMemcpyNodeSetParams(g.exec, g.upload, &up, self.ctx.raw())
                    .result()
                    .map_err(|e| failed_text("cuGraphExecMemcpyNodeSetParams", e))?;
                sys::cuGraphExecMemcpyNodeSetParams(g.exec, g.readback, &down, self.ctx.raw())
                    .result()
                    .map_err(|e| failed_text("cuGraphExecMemcpyNodeSetParams", e))?;
                result::graph::launch(g.exec, self.streams[k]).map_err(|e| failed_text("cuGraphLaunch", e))?;
            }
        }
        Ok(())
    }

    fn run_streams(&self, input: &[f32], output: &mut [f32], count: usize, ring: usize) -> Result<(), String> {
        let wait = |stream: sys::CUstream, event: sys::CUevent| {
            // SAFETY: a live stream and event of this rig.
            unsafe { result::stream::wait_event(stream, event, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
                .map_err(|e| failed_text("cuStreamWaitEvent", e))
        };
        // Which nodes another lane waits for (their events are recorded).
        let awaited = |node: Node| Node::ALL.iter().any(|m| m.lane() != node.lane() && m.deps().contains(&node));
        for i in 0..count {
            let k = i % ring;
            let events = &self.events[k];
            for node in Node::ALL {
                let stream = self.streams[node.lane()];
                if node == Node::Upload && i >= ring {
                    // The set's previous image has been read back: everything of it
                    // is done (the readback is the DAG's sink).
                    wait(stream, events[Node::Readback.index()])?;
                }
                for d in node.deps() {
                    if d.lane() != node.lane() {
                        wait(stream, events[d.index()])?;
                    }
                }
                self.issue(node, k, i, stream, input, output)?;
                if awaited(node) || node == Node::Readback {
                    // SAFETY: a live event and stream of this rig.
                    unsafe { result::event::record(events[node.index()], stream) }
                        .map_err(|e| failed_text("cuEventRecord", e))?;
                }
            }
        }
        Ok(())
    }
}
