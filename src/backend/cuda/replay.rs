//! Replay of a graph operation (a window, whose nodes `ext::replay::window` lowers) as one CUDA
//! graph: a kernel node per launch, a memcpy node per copy, each node after the one
//! before it in its group and a group's first node after the last of every group it
//! runs after. The executable graph is kept per structure (the graph's key): one of a known
//! structure sets only the nodes whose parameters changed
//! (`cuGraphExecKernelNodeSetParams`, `cuGraphExecMemcpyNodeSetParams`) and launches,
//! so a repeated batch costs one `cuGraphLaunch` plus an event; an unknown one is built
//! and instantiated once. Completion is an untimed event after the launch, queried as a
//! command's is (`completion.rs`).

use super::context::Context;
use super::gpu::issue_fault;
use super::handle::{Graph, GraphExec, Stream};
use crate::backend::op::{CopyOp, Direction, GraphOp, GraphSource, Op};
use crate::backend::{Fault, GraphUse};
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::Arc;

/// Executable graphs kept per GPU: the structures a program repeats are few; the
/// least recently used goes beyond this.
const KEPT: usize = 64;

/// One node's parameters as last set, to find what changed. A kernel's argument
/// values are `args` words of the window's flat list, from `at`. `gpu`: the GPU whose
/// context runs the node (the graph's, or another where the window spans GPUs).
#[derive(Clone, Copy, PartialEq)]
enum Params {
    Kernel {
        gpu: u32,
        func: usize,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        at: u32,
        args: u32,
    },
    Copy {
        gpu: u32,
        download: bool,
        host: usize,
        dev: u64,
        host_pitch: usize,
        dev_pitch: usize,
        width: usize,
        height: usize,
    },
}

impl Params {
    fn gpu(&self) -> usize {
        match *self {
            Params::Kernel { gpu, .. } | Params::Copy { gpu, .. } => gpu as usize,
        }
    }
}

/// A window's parameters: per node, and every kernel's argument values in one list
/// (no allocation per node: a window may hold thousands).
#[derive(Clone, Default)]
struct Nodes {
    params: Vec<Params>,
    args: Vec<u64>,
}

impl Nodes {
    fn args(&self, p: &Params) -> &[u64] {
        match *p {
            Params::Kernel { at, args, .. } => &self.args[at as usize..(at + args) as usize],
            Params::Copy { .. } => &[],
        }
    }
}

/// A kept executable graph. Dropping it destroys the executable graph, then the graph
/// (the fields' order). A kept graph may be replaced while a launch of it is in flight
/// (a window runs while the next is set up): the driver frees an executable graph
/// destroyed in flight when that launch completes, and the graph it was instantiated
/// from is no longer read.
struct Kept {
    /// The name it was last launched under (`GraphOp::recorded`), if any.
    name: Option<(u64, u64)>,
    hash: u64,
    key: Vec<u64>,
    exec: GraphExec,
    _graph: Graph,
    nodes: Vec<sys::CUgraphNode>,
    set: Nodes,
    /// [`super::driver::frees`] when its copy nodes were last set.
    frees: u64,
}

/// One GPU's graphs.
pub(crate) struct Replayer {
    /// Every GPU's context, by index: a node runs in its GPU's.
    contexts: Vec<Arc<Context>>,
    kept: Vec<Kept>,
    /// Scratch: this window's parameters, built before they are compared or set.
    scratch: Nodes,
}

impl Replayer {
    pub(crate) fn new(contexts: Vec<Arc<Context>>) -> Replayer {
        Replayer { contexts, kept: Vec::new(), scratch: Nodes::default() }
    }

    /// The parameters of every node of `g`, lowered as they are walked.
    fn params<N: GraphSource>(&mut self, g: &GraphOp<'_, N>) -> Result<(), Fault> {
        let Nodes { params, args } = &mut self.scratch;
        params.clear();
        args.clear();
        let gpus = self.contexts.len();
        g.each_node(true, |node| {
            if node.gpu >= gpus {
                return Err(Fault::task("a replayed node names a GPU the machine does not have"));
            }
            let gpu = node.gpu as u32;
            let p = match &node.op {
                Op::Launch(l) => {
                    let at = args.len() as u32;
                    args.extend_from_slice(l.args);
                    let func = l.func.ok_or("kernel not loaded on this GPU")?.func;
                    Params::Kernel {
                        gpu,
                        func: func as usize,
                        grid: [l.grid.0, l.grid.1, l.grid.2],
                        block: [l.block.0, l.block.1, l.block.2],
                        shared: l.shared_bytes,
                        at,
                        args: l.args.len() as u32,
                    }
                }
                Op::Copy(c) => copy_params(gpu, c)?,
                _ => return Err(Fault::task("a replayed task holds a command a graph does not take")),
            };
            params.push(p);
            Ok(())
        })
    }

    /// Sets up the graph of `g` (kept, updated or built) and launches it on `stream`.
    pub(crate) fn launch<N: GraphSource>(
        &mut self,
        ctx: &Arc<Context>,
        g: &GraphOp<'_, N>,
        stream: &Stream,
    ) -> Result<GraphUse, Fault> {
        // Read before any node is set: a free after this read bumps it again, and the
        // window's own buffers (allocated before its launch) came after every free of
        // memory once at their addresses.
        let frees = super::driver::frees();
        self.params(g)?;
        let found = self.kept.iter().position(|k| k.hash == g.hash && k.key == g.key);
        let mut used = None;
        if let Some(i) = found {
            let kept = self.kept.remove(i);
            self.kept.push(kept);
            let at = self.kept.len() - 1;
            let renew = self.kept[at].frees != frees;
            match self.update(at, renew) {
                Ok(0) => used = Some(GraphUse::Reused),
                Ok(set) => used = Some(GraphUse::Updated(set)),
                // Some nodes may hold this window's parameters, some the last one's: the
                // graph is dropped and built anew from this window.
                Err(_) => drop(self.kept.remove(at)),
            }
        }
        let used = match used {
            Some(u) => u,
            None => {
                if self.kept.len() >= KEPT {
                    drop(self.kept.remove(0));
                }
                let kept = self.build(ctx, g)?;
                self.kept.push(kept);
                GraphUse::Built
            }
        };
        let at = self.kept.len() - 1;
        self.kept[at].name = g.recorded;
        self.kept[at].frees = frees;
        // SAFETY: every node's memory (set from this window's commands, built or
        // updated above) is held by the window's tasks until the replay completes, and
        // their claims keep other access away until then.
        unsafe { self.kept[at].exec.launch(stream) }.map_err(issue_fault("cuGraphLaunch"))?;
        Ok(used)
    }

    /// The kept graph last launched under `name`, if kept (made most recent).
    pub(crate) fn kept_as(&mut self, name: (u64, u64)) -> Option<usize> {
        let i = self.kept.iter().position(|k| k.name == Some(name))?;
        let kept = self.kept.remove(i);
        self.kept.push(kept);
        Some(self.kept.len() - 1)
    }

    /// Launches kept graph `at` (from [`Replayer::kept_as`]) as last set.
    pub(crate) fn relaunch(&mut self, at: usize, stream: &Stream) -> Result<(), Fault> {
        // SAFETY: the graph's nodes were set from the recorded part it is named after,
        // whose tasks hold every buffer they name for as long as the part lives, and
        // the run's claims keep other access to its host bytes away until it completes.
        unsafe { self.kept[at].exec.launch(stream) }.map_err(issue_fault("cuGraphLaunch"))
    }

    /// Sets the nodes of kept graph `at` whose parameters differ from this window's, and
    /// with `renew` (memory was freed since its copy nodes were set) every copy node;
    /// how many it set. An error (the driver refused a node, or a 2-D copy changed,
    /// which an executable graph cannot take) leaves the graph part old, part new: the
    /// caller drops it.
    fn update(&mut self, at: usize, renew: bool) -> Result<usize, Fault> {
        let kept = &mut self.kept[at];
        let now = &self.scratch;
        if !renew && kept.set.args == now.args && kept.set.params == now.params {
            return Ok(0);
        }
        let mut set = 0;
        for (i, p) in now.params.iter().enumerate() {
            let copy = matches!(p, Params::Copy { .. });
            if kept.set.params[i] == *p && kept.set.args(p) == now.args(p) && !(renew && copy) {
                continue;
            }
            set += 1;
            match p {
                Params::Kernel { .. } => {
                    let mut values = now.args(p).to_vec();
                    let mut ptrs: Vec<*mut c_void> = values.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect();
                    let np = kernel_node(p, &self.contexts[p.gpu()], &mut ptrs);
                    // SAFETY: node `i` is the kernel node made for this command; the
                    // parameter pointers point at `values`, one 8-byte word per argument,
                    // alive for the call (the driver copies); the function is loaded in
                    // the node's context and the buffers are held by the window's tasks.
                    unsafe { kept.exec.set_kernel_node(kept.nodes[i], &np) }
                        .map_err(issue_fault("cuGraphExecKernelNodeSetParams"))?;
                }
                Params::Copy { height, .. } => {
                    let was_2d = matches!(kept.set.params[i], Params::Copy { height: h, .. } if h > 1);
                    if *height > 1 || was_2d {
                        return Err(Fault::task("a 2-D copy's node changed: the graph is built anew"));
                    }
                    let m = memcpy(p);
                    // SAFETY: node `i` is the copy node made for this command; the
                    // addresses are a pinned host block and a device allocation of the
                    // node's context, both held by the window's task.
                    unsafe { kept.exec.set_memcpy_node(kept.nodes[i], &m, &self.contexts[p.gpu()]) }
                        .map_err(issue_fault("cuGraphExecMemcpyNodeSetParams"))?;
                }
            }
        }
        kept.set.clone_from(now);
        Ok(set)
    }

    /// Builds and instantiates the graph of `g` from its parameters (a graph that
    /// fails part way is destroyed with its handle).
    fn build<N: GraphSource>(&mut self, ctx: &Arc<Context>, g: &GraphOp<'_, N>) -> Result<Kept, Fault> {
        let graph = Graph::create(ctx).map_err(issue_fault("cuGraphCreate"))?;
        let mut nodes = Vec::with_capacity(self.scratch.params.len());
        self.add_nodes(g, &graph, &mut nodes)?;
        let exec = graph.instantiate().map_err(issue_fault("cuGraphInstantiate"))?;
        Ok(Kept {
            name: None,
            hash: g.hash,
            key: g.key.to_vec(),
            exec,
            _graph: graph,
            nodes,
            set: self.scratch.clone(),
            // Set by the caller, which read it before the nodes were made.
            frees: 0,
        })
    }

    fn add_nodes<N: GraphSource>(
        &self,
        g: &GraphOp<'_, N>,
        graph: &Graph,
        nodes: &mut Vec<sys::CUgraphNode>,
    ) -> Result<(), Fault> {
        // Per group: the node of its last operation.
        let mut last: Vec<sys::CUgraphNode> = Vec::with_capacity(g.groups().len());
        let mut deps: Vec<sys::CUgraphNode> = Vec::new();
        let mut at = 0;
        for group in g.groups() {
            for c in 0..group.nodes {
                deps.clear();
                if c == 0 {
                    deps.extend(group.after.iter().map(|&p| last[p as usize]));
                } else if let Some(&prev) = nodes.last() {
                    deps.push(prev);
                }
                let p = &self.scratch.params[at];
                let node = match p {
                    Params::Kernel { .. } => {
                        let mut values = self.scratch.args(p).to_vec();
                        let mut ptrs: Vec<*mut c_void> =
                            values.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect();
                        let np = kernel_node(p, &self.contexts[p.gpu()], &mut ptrs);
                        // SAFETY: `deps` are nodes of this graph (made above); the
                        // parameter pointers point at `values`, one 8-byte word per
                        // argument, alive for the call (the driver copies them); the
                        // function is loaded in the node's context, named in `np` (its
                        // module stays loaded until the Machine drops) and the buffers are
                        // held by the window's tasks.
                        unsafe { graph.add_kernel_node(&deps, &np) }.map_err(issue_fault("cuGraphAddKernelNode"))?
                    }
                    Params::Copy { .. } => {
                        let m = memcpy(p);
                        // SAFETY: as above; the copy's memory is a pinned host block and a
                        // device allocation of the node's context, held by the window's task.
                        unsafe { graph.add_memcpy_node(&deps, &m, &self.contexts[p.gpu()]) }
                            .map_err(issue_fault("cuGraphAddMemcpyNode"))?
                    }
                };
                nodes.push(node);
                at += 1;
            }
            last.push(*nodes.last().ok_or("a replayed task has no command")?);
        }
        Ok(())
    }
}

fn copy_params(gpu: u32, c: &CopyOp<'_>) -> Result<Params, Fault> {
    let dev = c.dev.cuda_ptr().ok_or("a CUDA copy's device buffer has no CUDA memory on this GPU")?;
    Ok(Params::Copy {
        gpu,
        download: c.dir == Direction::Download,
        host: c.host.alloc().as_ptr() as usize + c.host_offset,
        dev: dev + c.dev_offset as u64,
        host_pitch: if c.height > 1 { c.host_pitch } else { c.width },
        dev_pitch: if c.height > 1 { c.dev_pitch } else { c.width },
        width: c.width,
        height: c.height,
    })
}

/// A kernel node's parameters, run in `ctx` (the node's GPU's context).
fn kernel_node(p: &Params, ctx: &Context, ptrs: &mut [*mut c_void]) -> sys::CUDA_KERNEL_NODE_PARAMS {
    let Params::Kernel { func, grid, block, shared, .. } = p else { unreachable!("called for kernels only") };
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: *func as sys::CUfunction,
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block[0],
        blockDimY: block[1],
        blockDimZ: block[2],
        sharedMemBytes: *shared,
        kernelParams: ptrs.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: ctx.ctx,
    }
}

fn memcpy(p: &Params) -> sys::CUDA_MEMCPY3D {
    let Params::Copy { download, host, dev, host_pitch, dev_pitch, width, height, .. } = *p else {
        unreachable!("called for copies only")
    };
    let (host_type, dev_type) = (sys::CUmemorytype::CU_MEMORYTYPE_HOST, sys::CUmemorytype::CU_MEMORYTYPE_DEVICE);
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: if download { host_type } else { dev_type },
        srcHost: if download { host as *const c_void } else { std::ptr::null() },
        srcDevice: if download { 0 } else { dev },
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: if download { host_pitch } else { dev_pitch },
        srcHeight: height,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: if download { dev_type } else { host_type },
        dstHost: if download { std::ptr::null_mut() } else { host as *mut c_void },
        dstDevice: if download { dev } else { 0 },
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: if download { dev_pitch } else { host_pitch },
        dstHeight: height,
        WidthInBytes: width,
        Height: height,
        Depth: 1,
    }
}
