//! Every raw call the runtime makes into CUDA's libraries, one thin function each,
//! named after the call (`cuStreamCreate` is [`stream_create`]), as cudarc's `result`
//! layer does: the out-parameters become return values and the status a `Result`.
//! Nothing else in the crate names a `sys::cu*` or `sys::nvrtc*` function; NVRTC's
//! calls are the [`nvrtc`] module below.
//!
//! A function is `unsafe` where a wrong argument is undefined behaviour rather than an
//! error status: a dangling handle or pointer, memory the device then reads or writes.
//! Its `# Safety` section numbers what the caller must make hold. Functions that take
//! no handle and no pointer (or only handles the driver validates) are safe.
//!
//! The error is cudarc's [`DriverError`], the bare status code (it costs nothing on
//! the hot path: `cuEventQuery`'s `CUDA_ERROR_NOT_READY` is the common answer); the
//! caller turns it into the report's error, with the call, name and text, by
//! [`failed`](super::failed).

use cudarc::driver::sys;
use std::ffi::{c_int, c_uint, c_void, CStr};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) use cudarc::driver::result::DriverError;

/// A driver call's outcome.
pub(crate) type Result<T> = std::result::Result<T, DriverError>;

/// `cuInit(0)`: loads and initialises the driver (cudarc panics if the library or the
/// function is missing; `Machine::probe` checks first).
pub(crate) fn init() -> Result<()> {
    // SAFETY: takes no pointer; flags must be 0.
    unsafe { sys::cuInit(0) }.result()
}

/// `cuGetErrorName`: the code's name, e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
pub(crate) fn get_error_name(code: sys::CUresult) -> Result<&'static CStr> {
    let mut s = MaybeUninit::uninit();
    // SAFETY: `s` is a live out-parameter; on success the driver points it at a static
    // NUL-terminated string.
    unsafe {
        sys::cuGetErrorName(code, s.as_mut_ptr()).result()?;
        Ok(CStr::from_ptr(s.assume_init()))
    }
}

/// `cuGetErrorString`: the code's description, e.g. `out of memory`.
pub(crate) fn get_error_string(code: sys::CUresult) -> Result<&'static CStr> {
    let mut s = MaybeUninit::uninit();
    // SAFETY: as for `get_error_name`.
    unsafe {
        sys::cuGetErrorString(code, s.as_mut_ptr()).result()?;
        Ok(CStr::from_ptr(s.assume_init()))
    }
}

/// `cuDeviceGetCount`.
pub(crate) fn device_get_count() -> Result<c_int> {
    let mut n = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success.
    unsafe {
        sys::cuDeviceGetCount(n.as_mut_ptr()).result()?;
        Ok(n.assume_init())
    }
}

/// `cuDeviceGet`: the device of `ordinal` (checked by the driver).
pub(crate) fn device_get(ordinal: c_int) -> Result<sys::CUdevice> {
    let mut dev = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success.
    unsafe {
        sys::cuDeviceGet(dev.as_mut_ptr(), ordinal).result()?;
        Ok(dev.assume_init())
    }
}

/// `cuDeviceGetAttribute`. Safe: a device is an ordinal, which the driver checks.
pub(crate) fn device_get_attribute(dev: sys::CUdevice, attribute: sys::CUdevice_attribute) -> Result<i32> {
    let mut v = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success.
    unsafe {
        sys::cuDeviceGetAttribute(v.as_mut_ptr(), attribute, dev).result()?;
        Ok(v.assume_init())
    }
}

/// `cuDeviceGetName`, into a 128-byte buffer (as cudarc's `device::get_name`).
pub(crate) fn device_get_name(dev: sys::CUdevice) -> Result<String> {
    let mut buf = [0u8; 128];
    // SAFETY: the buffer holds the length passed; the driver writes a NUL-terminated
    // name of at most that many bytes.
    unsafe { sys::cuDeviceGetName(buf.as_mut_ptr().cast(), buf.len() as c_int, dev) }.result()?;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// `cuDeviceTotalMem_v2`: the device's memory in bytes.
pub(crate) fn device_total_mem(dev: sys::CUdevice) -> Result<usize> {
    let mut bytes = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success.
    unsafe {
        sys::cuDeviceTotalMem_v2(bytes.as_mut_ptr(), dev).result()?;
        Ok(bytes.assume_init())
    }
}

/// `cuDeviceCanAccessPeer`: whether `dev` can read `peer`'s memory directly.
pub(crate) fn device_can_access_peer(dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool> {
    let mut can = 0;
    // SAFETY: a live out-parameter.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, peer) }.result()?;
    Ok(can == 1)
}

/// `cuDevicePrimaryCtxRetain`: `dev`'s primary context, retained once more.
pub(crate) fn device_primary_ctx_retain(dev: sys::CUdevice) -> Result<sys::CUcontext> {
    let mut ctx = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success; the driver checks `dev`.
    unsafe {
        sys::cuDevicePrimaryCtxRetain(ctx.as_mut_ptr(), dev).result()?;
        Ok(ctx.assume_init())
    }
}

/// `cuDevicePrimaryCtxRelease_v2`.
///
/// # Safety
/// 1. The caller holds a retain of `dev`'s primary context (from
///    [`device_primary_ctx_retain`]) and gives it back here, once.
/// 2. Nothing of that retain's is used after: its handles may go with the context.
pub(crate) unsafe fn device_primary_ctx_release(dev: sys::CUdevice) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cuDevicePrimaryCtxRelease_v2(dev) }.result()
}

/// `cuDevicePrimaryCtxReset_v2`: destroys every resource of `dev`'s primary context.
///
/// # Safety
/// 1. No handle of the context (stream, event, module, memory, graph) is used after.
pub(crate) unsafe fn device_primary_ctx_reset(dev: sys::CUdevice) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuDevicePrimaryCtxReset_v2(dev) }.result()
}

/// `cuCtxSetCurrent`: binds `ctx` to the calling thread.
///
/// # Safety
/// 1. `ctx` is a live context (retained, not released) or null.
#[inline]
pub(crate) unsafe fn ctx_set_current(ctx: sys::CUcontext) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuCtxSetCurrent(ctx) }.result()
}

/// `cuCtxGetCurrent`: the context bound to the calling thread (null if none).
pub(crate) fn ctx_get_current() -> Result<sys::CUcontext> {
    let mut ctx = MaybeUninit::uninit();
    // SAFETY: `ctx` is a live out-parameter, written on success.
    unsafe {
        sys::cuCtxGetCurrent(ctx.as_mut_ptr()).result()?;
        Ok(ctx.assume_init())
    }
}

/// `cuCtxSynchronize`: waits for all work of the current context.
pub(crate) fn ctx_synchronize() -> Result<()> {
    // SAFETY: takes nothing; without a current context it returns an error.
    unsafe { sys::cuCtxSynchronize() }.result()
}

/// `cuCtxEnablePeerAccess(peer, 0)`: lets the current context read `peer`'s memory.
///
/// # Safety
/// 1. `peer` is a live context.
pub(crate) unsafe fn ctx_enable_peer_access(peer: sys::CUcontext) -> Result<()> {
    // SAFETY: precondition 1; flags must be 0.
    unsafe { sys::cuCtxEnablePeerAccess(peer, 0) }.result()
}

/// `cuMemAlloc_v2`: `bytes` of device memory in the current context, uninitialised.
pub(crate) fn mem_alloc(bytes: usize) -> Result<sys::CUdeviceptr> {
    let mut ptr = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success; the memory is the caller's to
    // free (leaking it is safe).
    unsafe {
        sys::cuMemAlloc_v2(ptr.as_mut_ptr(), bytes).result()?;
        Ok(ptr.assume_init())
    }
}

/// Frees of device or pinned host memory so far ([`mem_free`], [`mem_free_host`]). The
/// driver gives a freed address to later allocations, and an executable graph's copy
/// node set before a free keeps the driver's record of the old allocation: once its
/// address came back, a launch of it crashed in `cuGraphLaunch` on driver 580, or (a
/// host buffer made anew) copied to the freed allocation, not the new one. A graph kept
/// across a free has its copy nodes set again before it launches (`replay::Replayer`).
static FREES: AtomicU64 = AtomicU64::new(0);

/// [`FREES`] now.
pub(crate) fn frees() -> u64 {
    FREES.load(Ordering::SeqCst)
}

/// `cuMemFree_v2`.
///
/// # Safety
/// 1. `ptr` came from [`mem_alloc`] and is freed once.
/// 2. No command that reads or writes it is still queued or running, and none is
///    issued after.
pub(crate) unsafe fn mem_free(ptr: sys::CUdeviceptr) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    let r = unsafe { sys::cuMemFree_v2(ptr) }.result();
    FREES.fetch_add(1, Ordering::SeqCst);
    r
}

/// `cuMemHostAlloc`: `bytes` of pinned host memory, uninitialised.
pub(crate) fn mem_host_alloc(bytes: usize, flags: c_uint) -> Result<*mut c_void> {
    let mut ptr = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success; the block is the caller's to
    // free (leaking it is safe).
    unsafe {
        sys::cuMemHostAlloc(ptr.as_mut_ptr(), bytes, flags).result()?;
        Ok(ptr.assume_init())
    }
}

/// `cuMemFreeHost`.
///
/// # Safety
/// 1. `ptr` came from [`mem_host_alloc`] and is freed once.
/// 2. Nothing reads or writes the block after, on the host or the device (no copy of
///    it is queued or running).
pub(crate) unsafe fn mem_free_host(ptr: *mut c_void) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    let r = unsafe { sys::cuMemFreeHost(ptr) }.result();
    FREES.fetch_add(1, Ordering::SeqCst);
    r
}

/// `cuMemGetInfo_v2`: the current context's device's (free, total) bytes.
pub(crate) fn mem_get_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0, 0);
    // SAFETY: two live out-parameters.
    unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }.result()?;
    Ok((free, total))
}

/// `cuMemcpyDtoH_v2`: copies `bytes` from the device to `dst`, returning when done.
///
/// # Safety
/// 1. A context is current in which `src..src + bytes` lies in one live allocation.
/// 2. `dst` is valid for `bytes` writes, and nothing else touches them during the call.
pub(crate) unsafe fn memcpy_dtoh(dst: *mut c_void, src: sys::CUdeviceptr, bytes: usize) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cuMemcpyDtoH_v2(dst, src, bytes) }.result()
}

/// `cuMemcpyHtoDAsync_v2`: enqueues a copy of `bytes` from `src` to `dst` on `stream`.
///
/// # Safety
/// 1. `stream` is a live stream of the current context.
/// 2. `dst..dst + bytes` lies in one live allocation of that context, which stays
///    allocated and unwritten by others until the copy completes.
/// 3. `src` is valid for `bytes` reads until the copy completes (pinned memory: the
///    copy reads it later; pageable memory: the call stages it before it returns),
///    and nothing writes them meanwhile.
#[inline]
pub(crate) unsafe fn memcpy_htod_async(
    dst: sys::CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    // SAFETY: preconditions 1 to 3.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src, bytes, stream) }.result()
}

/// `cuMemcpyDtoHAsync_v2`: enqueues a copy of `bytes` from `src` to `dst` on `stream`.
///
/// # Safety
/// 1. `stream` is a live stream of the current context.
/// 2. `src..src + bytes` lies in one live allocation of that context, which stays
///    allocated until the copy completes.
/// 3. `dst` is pinned host memory valid for `bytes` writes until the copy completes,
///    and nothing else reads or writes them meanwhile.
#[inline]
pub(crate) unsafe fn memcpy_dtoh_async(
    dst: *mut c_void,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    // SAFETY: preconditions 1 to 3.
    unsafe { sys::cuMemcpyDtoHAsync_v2(dst, src, bytes, stream) }.result()
}

/// `cuMemcpy2DAsync_v2`: enqueues the 2-D copy `p` on `stream`.
///
/// # Safety
/// 1. `stream` is a live stream of the current context.
/// 2. Every row `p` names, source and destination, lies in live memory of the kind
///    its memory type says (host memory pinned), valid until the copy completes; the
///    destination rows are touched by nothing else meanwhile, the source rows
///    written by nothing else.
#[inline]
pub(crate) unsafe fn memcpy_2d_async(p: &sys::CUDA_MEMCPY2D, stream: sys::CUstream) -> Result<()> {
    // SAFETY: preconditions 1 and 2; `p` is read during the call only.
    unsafe { sys::cuMemcpy2DAsync_v2(p, stream) }.result()
}

/// `cuMemcpyAsync`: enqueues a copy of `bytes` between unified addresses on `stream`
/// (a peer copy between two GPUs' memory).
///
/// # Safety
/// 1. `stream` is a live stream of the current context.
/// 2. `src..src + bytes` and `dst..dst + bytes` each lie in one live allocation that
///    stays allocated until the copy completes; nothing else writes the source or
///    touches the destination meanwhile.
#[inline]
pub(crate) unsafe fn memcpy_async(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cuMemcpyAsync(dst, src, bytes, stream) }.result()
}

/// `cuMemsetD8Async`: enqueues setting `bytes` bytes at `dst` to `value` on `stream`.
///
/// # Safety
/// 1. `stream` is a live stream of the current context.
/// 2. `dst..dst + bytes` lies in one live allocation of that context, which stays
///    allocated, and touched by nothing else, until the fill completes.
#[inline]
pub(crate) unsafe fn memset_d8_async(
    dst: sys::CUdeviceptr,
    value: u8,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cuMemsetD8Async(dst, value, bytes, stream) }.result()
}

/// `cuModuleLoadData`: loads a module into the current context.
///
/// # Safety
/// 1. `image` points at a complete cubin, fatbin or NUL-terminated PTX image (the
///    driver reads as far as the image's own headers say).
pub(crate) unsafe fn module_load_data(image: *const c_void) -> Result<sys::CUmodule> {
    let mut module = MaybeUninit::uninit();
    // SAFETY: precondition 1; a live out-parameter, written on success.
    unsafe {
        sys::cuModuleLoadData(module.as_mut_ptr(), image).result()?;
        Ok(module.assume_init())
    }
}

/// `cuModuleGetFunction`: the entry point `name` of `module`.
///
/// # Safety
/// 1. `module` is loaded (not unloaded); the function is valid while it stays so.
pub(crate) unsafe fn module_get_function(module: sys::CUmodule, name: &CStr) -> Result<sys::CUfunction> {
    let mut func = MaybeUninit::uninit();
    // SAFETY: precondition 1; `name` is NUL-terminated; a live out-parameter.
    unsafe {
        sys::cuModuleGetFunction(func.as_mut_ptr(), module, name.as_ptr()).result()?;
        Ok(func.assume_init())
    }
}

/// `cuModuleUnload`.
///
/// # Safety
/// 1. `module` is loaded, in the current context, and unloaded once.
/// 2. None of its functions is launched after, and none is still running.
pub(crate) unsafe fn module_unload(module: sys::CUmodule) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cuModuleUnload(module) }.result()
}

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: blocks of `func` one SM holds at once.
///
/// # Safety
/// 1. `func` is a function of a loaded module.
pub(crate) unsafe fn occupancy_max_active_blocks_per_multiprocessor(
    func: sys::CUfunction,
    block_threads: c_int,
    shared_bytes: usize,
) -> Result<i32> {
    let mut n = MaybeUninit::uninit();
    // SAFETY: precondition 1; a live out-parameter, written on success.
    unsafe {
        sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(n.as_mut_ptr(), func, block_threads, shared_bytes).result()?;
        Ok(n.assume_init())
    }
}

/// `cuLaunchKernel`: enqueues `func` on `stream` with `params` (no `extra`).
///
/// # Safety
/// 1. `func` is a function of a module loaded in the current context, and `stream` a
///    live stream of that context.
/// 2. `params` has one pointer per kernel parameter, in order, each to a value of that
///    parameter's size (the driver copies them during the call).
/// 3. Every device address among the values lies in memory that stays allocated until
///    the kernel completes, and what the kernel reads and writes there is touched by
///    nothing else meanwhile.
#[inline]
pub(crate) unsafe fn launch_kernel(
    func: sys::CUfunction,
    grid: (c_uint, c_uint, c_uint),
    block: (c_uint, c_uint, c_uint),
    shared_bytes: c_uint,
    stream: sys::CUstream,
    params: &mut [*mut c_void],
) -> Result<()> {
    // SAFETY: preconditions 1 to 3.
    unsafe {
        sys::cuLaunchKernel(
            func,
            grid.0,
            grid.1,
            grid.2,
            block.0,
            block.1,
            block.2,
            shared_bytes,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
}

/// `cuStreamCreate`: a stream of the current context.
pub(crate) fn stream_create(flags: sys::CUstream_flags) -> Result<sys::CUstream> {
    let mut stream = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success; without a current context the
    // call returns an error.
    unsafe {
        sys::cuStreamCreate(stream.as_mut_ptr(), flags as c_uint).result()?;
        Ok(stream.assume_init())
    }
}

/// `cuStreamSynchronize`: waits for everything enqueued on `stream`.
///
/// # Safety
/// 1. `stream` is live (created, not destroyed).
pub(crate) unsafe fn stream_synchronize(stream: sys::CUstream) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuStreamSynchronize(stream) }.result()
}

/// `cuStreamDestroy_v2` (work still queued on it runs to the end first).
///
/// # Safety
/// 1. `stream` is live and destroyed once; it is not used after.
pub(crate) unsafe fn stream_destroy(stream: sys::CUstream) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuStreamDestroy_v2(stream) }.result()
}

/// `cuEventCreate`: an event of the current context.
pub(crate) fn event_create(flags: sys::CUevent_flags) -> Result<sys::CUevent> {
    let mut event = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success; without a current context the
    // call returns an error.
    unsafe {
        sys::cuEventCreate(event.as_mut_ptr(), flags as c_uint).result()?;
        Ok(event.assume_init())
    }
}

/// `cuEventRecord`: records `event` after what is enqueued on `stream` so far.
///
/// # Safety
/// 1. `event` and `stream` are live, of the same context.
#[inline]
pub(crate) unsafe fn event_record(event: sys::CUevent, stream: sys::CUstream) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuEventRecord(event, stream) }.result()
}

/// `cuEventQuery`: `Ok` once the recorded work completed, `CUDA_ERROR_NOT_READY` before.
///
/// # Safety
/// 1. `event` is live.
#[inline]
pub(crate) unsafe fn event_query(event: sys::CUevent) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuEventQuery(event) }.result()
}

/// `cuEventSynchronize`: waits for the recorded work.
///
/// # Safety
/// 1. `event` is live.
pub(crate) unsafe fn event_synchronize(event: sys::CUevent) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuEventSynchronize(event) }.result()
}

/// `cuEventElapsedTime_v2`: milliseconds from `start` to `end`.
///
/// # Safety
/// 1. Both events are live.
#[inline]
pub(crate) unsafe fn event_elapsed_time(start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
    let mut ms = 0f32;
    // SAFETY: precondition 1; a live out-parameter.
    unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) }.result()?;
    Ok(ms)
}

/// `cuEventDestroy_v2` (an event recorded and not yet reached is freed when reached).
///
/// # Safety
/// 1. `event` is live and destroyed once; it is not used after.
pub(crate) unsafe fn event_destroy(event: sys::CUevent) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuEventDestroy_v2(event) }.result()
}

/// `cuGraphCreate(_, 0)`: an empty graph.
pub(crate) fn graph_create() -> Result<sys::CUgraph> {
    let mut graph = MaybeUninit::uninit();
    // SAFETY: a live out-parameter, written on success.
    unsafe {
        sys::cuGraphCreate(graph.as_mut_ptr(), 0).result()?;
        Ok(graph.assume_init())
    }
}

/// `cuGraphAddKernelNode_v2`: a kernel node of `graph` after `deps`.
///
/// # Safety
/// 1. `graph` is live and `deps` are nodes of it.
/// 2. `p` is a valid launch: `p.func` a function of a loaded module, `p.kernelParams`
///    one pointer per parameter to a value of its size (copied during the call).
/// 3. The device addresses among the values stay allocated while the graph, or an
///    executable graph made from it, may launch the node.
pub(crate) unsafe fn graph_add_kernel_node(
    graph: sys::CUgraph,
    deps: &[sys::CUgraphNode],
    p: &sys::CUDA_KERNEL_NODE_PARAMS,
) -> Result<sys::CUgraphNode> {
    let mut node = MaybeUninit::uninit();
    // SAFETY: preconditions 1 to 3; `deps` holds `deps.len()` nodes; a live out-parameter.
    unsafe {
        sys::cuGraphAddKernelNode_v2(node.as_mut_ptr(), graph, deps.as_ptr(), deps.len(), p).result()?;
        Ok(node.assume_init())
    }
}

/// `cuGraphAddMemcpyNode`: a copy node of `graph` after `deps`, in context `ctx`.
///
/// # Safety
/// 1. `graph` is live, `deps` are nodes of it, and `ctx` is a live context.
/// 2. The memory `p` names (host memory pinned) stays allocated while the graph, or
///    an executable graph made from it, may launch the node.
pub(crate) unsafe fn graph_add_memcpy_node(
    graph: sys::CUgraph,
    deps: &[sys::CUgraphNode],
    p: &sys::CUDA_MEMCPY3D,
    ctx: sys::CUcontext,
) -> Result<sys::CUgraphNode> {
    let mut node = MaybeUninit::uninit();
    // SAFETY: preconditions 1 and 2; `deps` holds `deps.len()` nodes; a live out-parameter.
    unsafe {
        sys::cuGraphAddMemcpyNode(node.as_mut_ptr(), graph, deps.as_ptr(), deps.len(), p, ctx).result()?;
        Ok(node.assume_init())
    }
}

/// `cuGraphInstantiateWithFlags(_, graph, 0)`: an executable graph of `graph`.
///
/// # Safety
/// 1. `graph` is live.
pub(crate) unsafe fn graph_instantiate(graph: sys::CUgraph) -> Result<sys::CUgraphExec> {
    let mut exec = MaybeUninit::uninit();
    // SAFETY: precondition 1; a live out-parameter, written on success.
    unsafe {
        sys::cuGraphInstantiateWithFlags(exec.as_mut_ptr(), graph, 0).result()?;
        Ok(exec.assume_init())
    }
}

/// `cuGraphExecKernelNodeSetParams_v2`: sets kernel node `node` of `exec` for later
/// launches.
///
/// # Safety
/// 1. `exec` is live and `node` a kernel node of the graph it was made from.
/// 2. As [`graph_add_kernel_node`]'s 2 and 3 for `p`.
#[inline]
pub(crate) unsafe fn graph_exec_kernel_node_set_params(
    exec: sys::CUgraphExec,
    node: sys::CUgraphNode,
    p: &sys::CUDA_KERNEL_NODE_PARAMS,
) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, p) }.result()
}

/// `cuGraphExecMemcpyNodeSetParams`: sets copy node `node` of `exec`, in context `ctx`.
///
/// # Safety
/// 1. `exec` is live, `node` a copy node of the graph it was made from, `ctx` live.
/// 2. As [`graph_add_memcpy_node`]'s 2 for `p`.
#[inline]
pub(crate) unsafe fn graph_exec_memcpy_node_set_params(
    exec: sys::CUgraphExec,
    node: sys::CUgraphNode,
    p: &sys::CUDA_MEMCPY3D,
    ctx: sys::CUcontext,
) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cuGraphExecMemcpyNodeSetParams(exec, node, p, ctx) }.result()
}

/// `cuGraphLaunch`: enqueues `exec` on `stream`.
///
/// # Safety
/// 1. `exec` and `stream` are live, of the same context.
/// 2. Everything the graph's nodes read and write is allocated until the launch
///    completes, and touched by nothing else meanwhile.
#[inline]
pub(crate) unsafe fn graph_launch(exec: sys::CUgraphExec, stream: sys::CUstream) -> Result<()> {
    // SAFETY: preconditions 1 and 2.
    unsafe { sys::cuGraphLaunch(exec, stream) }.result()
}

/// `cuGraphExecDestroy` (a launch in flight completes first, then it is freed).
///
/// # Safety
/// 1. `exec` is live and destroyed once; it is not used after.
pub(crate) unsafe fn graph_exec_destroy(exec: sys::CUgraphExec) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuGraphExecDestroy(exec) }.result()
}

/// `cuGraphDestroy`.
///
/// # Safety
/// 1. `graph` is live and destroyed once; neither it nor its nodes are used after.
pub(crate) unsafe fn graph_destroy(graph: sys::CUgraph) -> Result<()> {
    // SAFETY: precondition 1.
    unsafe { sys::cuGraphDestroy(graph) }.result()
}

/// NVRTC's calls: CUDA C to a cubin.
pub(crate) mod nvrtc {
    use cudarc::nvrtc::sys;
    use std::ffi::{c_char, c_int, CStr, CString};
    use std::mem::MaybeUninit;

    pub(crate) use cudarc::nvrtc::result::NvrtcError;

    /// An NVRTC call's outcome.
    pub(crate) type Result<T> = std::result::Result<T, NvrtcError>;

    /// Whether libnvrtc loads here (cudarc would panic at the first call otherwise).
    pub(crate) fn is_present() -> bool {
        // SAFETY: opens the library (running its initialisers, as cudarc's own
        // loading does) and closes it; nothing is called.
        unsafe { sys::is_culib_present() }
    }

    /// `nvrtcVersion`: (major, minor).
    pub(crate) fn version() -> Result<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two live out-parameters.
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) }.result()?;
        Ok((major, minor))
    }

    /// `nvrtcCreateProgram`, with no headers.
    ///
    /// # Safety
    /// 1. `src` and `name` outlive the program (NVRTC may keep pointers to them until
    ///    [`destroy_program`]).
    pub(crate) unsafe fn create_program(src: &CStr, name: &CStr) -> Result<sys::nvrtcProgram> {
        let mut prog = MaybeUninit::uninit();
        // SAFETY: precondition 1; no headers (null arrays of length 0); a live
        // out-parameter, written on success.
        unsafe {
            sys::nvrtcCreateProgram(
                prog.as_mut_ptr(),
                src.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
            .result()?;
            Ok(prog.assume_init())
        }
    }

    /// `nvrtcCompileProgram` with `options`; an option with a NUL byte is
    /// `NVRTC_ERROR_INVALID_OPTION`.
    ///
    /// # Safety
    /// 1. `prog` is live (created, not destroyed).
    pub(crate) unsafe fn compile_program(prog: sys::nvrtcProgram, options: &[String]) -> Result<()> {
        let owned: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| NvrtcError(sys::nvrtcResult::NVRTC_ERROR_INVALID_OPTION))?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: precondition 1; `ptrs` holds `len` NUL-terminated strings that live
        // across the call.
        unsafe { sys::nvrtcCompileProgram(prog, ptrs.len() as c_int, ptrs.as_ptr()) }.result()
    }

    /// `nvrtcGetProgramLogSize` then `nvrtcGetProgramLog`: the log, NUL included.
    ///
    /// # Safety
    /// 1. `prog` is live.
    pub(crate) unsafe fn get_program_log(prog: sys::nvrtcProgram) -> Result<Vec<c_char>> {
        let mut size = 0usize;
        // SAFETY: precondition 1; a live out-parameter.
        unsafe { sys::nvrtcGetProgramLogSize(prog, &mut size) }.result()?;
        let mut log: Vec<c_char> = vec![0; size];
        // SAFETY: precondition 1; `log` holds the size NVRTC reported.
        unsafe { sys::nvrtcGetProgramLog(prog, log.as_mut_ptr()) }.result()?;
        Ok(log)
    }

    /// `nvrtcGetCUBINSize` then `nvrtcGetCUBIN`: the compiled cubin.
    ///
    /// # Safety
    /// 1. `prog` is live and was compiled for a real architecture (`sm_*`).
    pub(crate) unsafe fn get_cubin(
        prog: sys::nvrtcProgram,
    ) -> std::result::Result<Vec<u8>, (&'static str, NvrtcError)> {
        let mut size = 0usize;
        // SAFETY: precondition 1; a live out-parameter.
        unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }.result().map_err(|e| ("nvrtcGetCUBINSize", e))?;
        let mut image = vec![0u8; size];
        // SAFETY: precondition 1; `image` holds the size NVRTC reported.
        unsafe { sys::nvrtcGetCUBIN(prog, image.as_mut_ptr().cast()) }.result().map_err(|e| ("nvrtcGetCUBIN", e))?;
        Ok(image)
    }

    /// `nvrtcDestroyProgram`.
    ///
    /// # Safety
    /// 1. `prog` is live, destroyed once, and not used after.
    pub(crate) unsafe fn destroy_program(prog: sys::nvrtcProgram) -> Result<()> {
        let mut prog = prog;
        // SAFETY: precondition 1; NVRTC nulls the handle it is given.
        unsafe { sys::nvrtcDestroyProgram(&mut prog) }.result()
    }
}
