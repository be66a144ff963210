//! Device-side execution of a window (`Execution::Device`): the window's
//! tasks, each one kernel launch of the same block shape, run on the GPU by a
//! persistent kernel that takes ready tasks from a queue in device memory and counts
//! their dependencies down (Giles' scheme, as `kernels/device_graph.cu` in the studies);
//! no host call sits between two tasks.
//!
//! The executor is generated: the registered kernels' CUDA C, with `__global__`
//! made `__device__` and `blockIdx`/`gridDim` made the executor's own per-task
//! variables (a task's grid runs as a loop over its blocks on one persistent block),
//! then a dispatch on a kernel index calling each with its arguments from a table.
//! Compiled by NVRTC (and kept on disk) once per set of kernels and block shape.
//!
//! Per window, one image holds everything the executor reads and writes: the control
//! words, per task its remaining dependencies, the ready queue, the successors (CSR),
//! the task table (kernel, grid, arguments) and the argument values. It is uploaded
//! whole before the launch, which also resets the counters, on the stream the kernel
//! then runs on; completion is an event after it.

use super::context::Context;
use super::gpu::{arg_value, issue_fault};
use crate::backend::Fault;
use crate::kernel::KernelInner;
use crate::seam::Window;
use crate::task::command::Command;
use cudarc::driver::result;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::Arc;

/// Control words at the image's start (i32): next ticket, next queue slot, tasks done.
const CONTROL: usize = 4;
/// i32 words per task in the task table: kernel, grid x, y, z, first argument.
const ROW: usize = 5;

/// The executor's source for `kernels` (their registered CUDA C made device
/// functions): `chariot_device_window`.
pub(crate) fn source(kernels: &[Arc<KernelInner>]) -> String {
    let mut s = String::from(
        "// chariot: device-side window executor (generated)\n\
         __shared__ uint3 chariot_block_idx;\n\
         __shared__ uint3 chariot_grid_dim;\n\
         #define blockIdx chariot_block_idx\n\
         #define gridDim chariot_grid_dim\n",
    );
    // Each distinct source once (two kernels registered from one source share it).
    let mut seen: Vec<&str> = Vec::new();
    for k in kernels {
        if !seen.contains(&k.def.source.as_str()) {
            seen.push(&k.def.source);
            s.push_str(&k.def.source.replace("__global__", "__device__"));
            s.push('\n');
        }
    }
    s.push_str(
        r#"#undef blockIdx
#undef gridDim
template <int... I> struct chariot_seq {};
template <int N, int... I> struct chariot_make : chariot_make<N - 1, N - 1, I...> {};
template <int... I> struct chariot_make<0, I...> { typedef chariot_seq<I...> type; };
template <class T> __device__ __forceinline__ T chariot_word(unsigned long long w) {
    T v;
    memcpy(&v, &w, sizeof(T));  // the low bytes: little-endian, as the host wrote them
    return v;
}
template <class... A, int... I>
__device__ __forceinline__ void chariot_call_seq(void (*f)(A...), const unsigned long long* w, chariot_seq<I...>) {
    f(chariot_word<A>(w[I])...);
}
template <class... A> __device__ __forceinline__ void chariot_call(void (*f)(A...), const unsigned long long* w) {
    chariot_call_seq(f, w, typename chariot_make<sizeof...(A)>::type());
}
__device__ __forceinline__ void chariot_run(int kernel, const unsigned long long* w) {
    switch (kernel) {
"#,
    );
    for (i, k) in kernels.iter().enumerate() {
        s.push_str(&format!("    case {i}: chariot_call(&{}, w); break;\n", k.def.name));
    }
    s.push_str(
        r#"    default: break;
    }
}
// The image: control[4] (ticket, tail, done, unused), remaining[n], queue[n] (roots
// first, then -1), offsets[n + 1], successors[m], tasks[n * 5] (kernel, grid x, y, z,
// first argument), then at `args` (8-byte aligned) the argument words.
extern "C" __global__ void chariot_device_window(int* image, int n, int m, unsigned long long* args) {
    __shared__ int task;
    int* control = image;
    int* remaining = control + 4;
    int* queue = remaining + n;
    const int* offsets = queue + n;
    const int* succ = offsets + n + 1;
    const int* tasks = succ + m;
    volatile int* vqueue = queue;
    const bool lead = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
    for (;;) {
        if (lead) {
            int got = -1;
            const int ticket = atomicAdd(&control[0], 1);
            if (ticket < n) {
                unsigned backoff = 32;
                for (;;) {
                    const int v = vqueue[ticket];
                    if (v >= 0) { got = v; break; }
                    __nanosleep(backoff);
                    if (backoff < 1024) backoff *= 2;
                }
                __threadfence();  // acquire: what the task's predecessors wrote
            }
            task = got;
        }
        __syncthreads();
        const int t = task;
        if (t < 0) return;
        const int* row = tasks + 5 * t;
        const unsigned gx = row[1], gy = row[2], gz = row[3];
        const unsigned blocks = gx * gy * gz;
        for (unsigned b = 0; b < blocks; ++b) {
            if (lead) {
                chariot_block_idx = make_uint3(b % gx, (b / gx) % gy, b / (gx * gy));
                chariot_grid_dim = make_uint3(gx, gy, gz);
            }
            __syncthreads();
            chariot_run(row[0], args + row[4]);
            __syncthreads();
        }
        __threadfence();  // release: every thread's writes before the successors go
        __syncthreads();
        if (lead) {
            for (int e = offsets[t]; e < offsets[t + 1]; ++e) {
                const int s = succ[e];
                if (atomicAdd(&remaining[s], -1) == 1) {
                    const int slot = atomicAdd(&control[1], 1);
                    atomicExch(&queue[slot], s);
                }
            }
            atomicAdd(&control[2], 1);
        }
    }
}
"#,
    );
    s
}

/// Threads of a block in x, y, z.
type BlockShape = (u32, u32, u32);

/// One compiled executor: the set of kernels and the block shape it was made for.
struct Executor {
    kernels: Vec<usize>,
    module: sys::CUmodule,
    func: sys::CUfunction,
    /// Resident blocks of it per SM times the SMs: the most blocks worth launching.
    resident: u32,
}

/// One GPU's device-side runs: its executors, the image buffer, the run in flight.
pub(crate) struct DeviceRunner {
    executors: Vec<Executor>,
    /// Sets of kernels (and block shape) whose executor did not build: not tried again.
    refused: Vec<Vec<usize>>,
    /// Device memory for images, and its size in bytes (grown as windows need).
    buffer: u64,
    capacity: usize,
    /// The image of the run in flight (its upload reads it).
    image: Vec<u8>,
}

impl DeviceRunner {
    pub(crate) fn new() -> DeviceRunner {
        DeviceRunner { executors: Vec::new(), refused: Vec::new(), buffer: 0, capacity: 0, image: Vec::new() }
    }

    /// The executor for `kernels` (compiled and loaded at first use).
    fn executor(
        &mut self,
        ctx: &Context,
        arch: &str,
        kernels: &[Arc<KernelInner>],
        threads: u32,
    ) -> Result<usize, Fault> {
        let ids: Vec<usize> = kernels.iter().map(|k| Arc::as_ptr(k) as usize).chain([threads as usize]).collect();
        if let Some(i) = self.executors.iter().position(|e| e.kernels == ids) {
            return Ok(i);
        }
        if self.refused.contains(&ids) {
            return Err(Fault::task("the device-side executor of these kernels did not build"));
        }
        let def = crate::Kernel::new("chariot_device_window", source(kernels));
        let image = match super::nvrtc::compile(&def, arch) {
            Ok(image) => image,
            Err(e) => {
                self.refused.push(ids);
                return Err(Fault::task(format!("the device-side executor: {e}")));
            }
        };
        // SAFETY: a complete cubin for this context's device; unloaded in Drop.
        let module = unsafe { result::module::load_data(image.as_ptr() as *const _) }
            .map_err(issue_fault("cuModuleLoadData"))?;
        let entry = std::ffi::CString::new("chariot_device_window").map_err(|_| "a NUL in the entry's name")?;
        // SAFETY: `module` is loaded; `entry` is a C string.
        let func = match unsafe { result::module::get_function(module, entry) } {
            Ok(f) => f,
            Err(e) => {
                // SAFETY: loaded above, not used.
                let _ = unsafe { result::module::unload(module) };
                return Err(issue_fault("cuModuleGetFunction")(e));
            }
        };
        // SAFETY: a function of this context; plain queries.
        let (per_sm, sms) = unsafe {
            (
                result::occupancy::max_active_block_per_multiprocessor(func, threads as i32, 0).unwrap_or(1),
                result::device::get_attribute(
                    ctx.dev,
                    sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                )
                .unwrap_or(1),
            )
        };
        self.executors.push(Executor { kernels: ids, module, func, resident: (per_sm.max(1) * sms.max(1)) as u32 });
        Ok(self.executors.len() - 1)
    }

    /// The window's kernels (each once) and its block shape; an error for a task that
    /// is not one kernel launch.
    fn kernels_of(w: &Window) -> Result<(Vec<Arc<KernelInner>>, BlockShape), Fault> {
        let mut kernels: Vec<Arc<KernelInner>> = Vec::new();
        let mut block = (1, 1, 1);
        for t in &w.tasks {
            let [Command::Launch(l)] = t.commands.as_slice() else {
                return Err(Fault::task("a device-side window holds a task that is not one kernel launch"));
            };
            block = (l.shape.block.x, l.shape.block.y, l.shape.block.z);
            if !kernels.iter().any(|k| Arc::ptr_eq(k, &l.kernel)) {
                kernels.push(l.kernel.clone());
            }
        }
        Ok((kernels, block))
    }

    /// Whether `w` can run here: its executor compiles and loads (once per set of
    /// kernels and block shape). Nothing is enqueued; where not, the window replays.
    pub(crate) fn can_run(&mut self, ctx: &Context, arch: &str, w: &Window) -> Result<(), Fault> {
        let (kernels, block) = Self::kernels_of(w)?;
        self.executor(ctx, arch, &kernels, block.0 * block.1 * block.2).map(|_| ())
    }

    /// Uploads `w`'s image and launches its executor on `stream`.
    pub(crate) fn launch(&mut self, ctx: &Context, arch: &str, w: &Window, stream: sys::CUstream) -> Result<(), Fault> {
        let gpu = ctx.index;
        let (kernels, block) = Self::kernels_of(w)?;
        let threads = block.0 * block.1 * block.2;
        let ex = self.executor(ctx, arch, &kernels, threads)?;
        let (n, m) = (w.tasks.len(), w.preds.iter().map(|p| p.len()).sum::<usize>());
        // The image, as the kernel's comment lays it out; then the argument words.
        let mut words: Vec<i32> = Vec::with_capacity(CONTROL + 3 * n + 1 + m + ROW * n);
        words.extend([0; CONTROL]);
        words.extend(w.preds.iter().map(|p| p.len() as i32));
        let roots: Vec<i32> = (0..n).filter(|&t| w.preds[t].is_empty()).map(|t| t as i32).collect();
        words[1] = roots.len() as i32;
        words.extend(roots.iter().copied().chain(std::iter::repeat(-1)).take(n));
        let mut succ: Vec<Vec<i32>> = vec![Vec::new(); n];
        for (t, p) in w.preds.iter().enumerate() {
            for &q in p {
                succ[q as usize].push(t as i32);
            }
        }
        let mut at = 0i32;
        for s in &succ {
            words.push(at);
            at += s.len() as i32;
        }
        words.push(at);
        succ.iter().for_each(|s| words.extend(s));
        let mut args: Vec<u64> = Vec::new();
        for (t, task) in w.tasks.iter().enumerate() {
            let [Command::Launch(l)] = task.commands.as_slice() else { unreachable!("checked above") };
            let k = kernels.iter().position(|k| Arc::ptr_eq(k, &l.kernel)).unwrap_or(0);
            let g = l.shape.grid;
            words.extend([k as i32, g.x as i32, g.y as i32, g.z as i32, args.len() as i32]);
            for a in l.args.iter() {
                args.push(arg_value(a, gpu, w.lanes[t] as usize)?);
            }
        }
        let args_at = (words.len() * 4).div_ceil(8) * 8;
        let bytes = args_at + args.len() * 8;
        self.image.clear();
        self.image.extend(words.iter().flat_map(|v| v.to_le_bytes()));
        self.image.resize(args_at, 0);
        self.image.extend(args.iter().flat_map(|v| v.to_le_bytes()));
        if bytes > self.capacity {
            if self.buffer != 0 {
                // SAFETY: no run is in flight (a GPU runs one window at a time); freed once.
                let _ = unsafe { result::free_sync(self.buffer) };
                self.buffer = 0;
            }
            let size = bytes.next_power_of_two();
            // SAFETY: the context is current; freed in Drop or when it grows.
            self.buffer = unsafe { result::malloc_sync(size) }.map_err(issue_fault("cuMemAlloc"))?;
            self.capacity = size;
        }
        // Enough blocks for the widest level of the graph, no more (idle blocks only
        // poll the queue).
        let mut level = vec![0usize; n];
        let mut per_level = vec![0usize; n.max(1)];
        for t in 0..n {
            level[t] = w.preds[t].iter().map(|&p| level[p as usize] + 1).max().unwrap_or(0);
            per_level[level[t]] += 1;
        }
        let width = per_level.iter().copied().max().unwrap_or(1).max(1);
        let blocks = (self.executors[ex].resident as usize).min(width).max(1) as u32;
        // SAFETY: the buffer holds `bytes`; the image lives in `self` until the run
        // completes (the upload reads it first on this stream).
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(self.buffer, self.image.as_ptr() as *const c_void, bytes, stream)
                .result()
                .map_err(issue_fault("cuMemcpyHtoDAsync"))?;
        }
        let (mut image, mut n_arg, mut m_arg, mut args_ptr) =
            (self.buffer, n as i32, m as i32, self.buffer + args_at as u64);
        let mut params: [*mut c_void; 4] = [
            &mut image as *mut u64 as *mut c_void,
            &mut n_arg as *mut i32 as *mut c_void,
            &mut m_arg as *mut i32 as *mut c_void,
            &mut args_ptr as *mut u64 as *mut c_void,
        ];
        let func = self.executors[ex].func;
        let shared = w.tasks.iter().filter_map(|t| match t.commands.first() {
            Some(Command::Launch(l)) => Some(l.shape.shared_bytes),
            _ => None,
        });
        // SAFETY: the executor's function of this context; its four parameters point
        // at live locals (copied at the call); every buffer argument in the table is a
        // live allocation held by the window's tasks until the run completes.
        unsafe { result::launch_kernel(func, (blocks, 1, 1), block, shared.max().unwrap_or(0), stream, &mut params) }
            .map_err(issue_fault("cuLaunchKernel (device-side window)"))?;
        Ok(())
    }
}

impl Drop for DeviceRunner {
    fn drop(&mut self) {
        // SAFETY: made here, freed once; the GPU's streams are synchronised before its
        // runner drops (`Gpu`'s drop runs first).
        unsafe {
            if self.buffer != 0 {
                let _ = result::free_sync(self.buffer);
            }
            for e in self.executors.drain(..) {
                let _ = result::module::unload(e.module);
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn inner(name: &str, src: &str) -> Arc<KernelInner> {
        Arc::new(KernelInner::new(crate::Kernel::new(name, src), 0, Vec::new()))
    }

    /// The generated executor compiles, with two kernels of one source and one of
    /// another (each source once), typed pointers and scalars, `blockIdx`, `gridDim`,
    /// shared memory and `__syncthreads` in the kernels.
    #[test]
    #[ignore = "needs libnvrtc (CUDA toolkit's lib64 on LD_LIBRARY_PATH)"]
    fn the_executor_compiles() {
        let two = r#"extern "C" __global__ void twice(unsigned* o, const unsigned* i, unsigned n) {
            unsigned t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) o[t] = 2 * i[t]; }
        extern "C" __global__ void fill(float* o, float v, int n) {
            __shared__ float s[32]; s[threadIdx.x % 32] = v; __syncthreads();
            int t = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x; if (t < n) o[t] = s[threadIdx.x % 32]; }"#;
        let spin = r#"extern "C" __global__ void spin(double* sink, unsigned long long iters) {
            double a = threadIdx.x; for (unsigned long long i = 0; i < iters; ++i) a = fma(a, 1.0001, 1e-4);
            if (threadIdx.x == 0) sink[blockIdx.x] = a; }"#;
        let kernels = [inner("twice", two), inner("fill", two), inner("spin", spin)];
        let src = source(&kernels);
        assert_eq!(src.matches("extern \"C\" __device__ void twice").count(), 1, "{src}");
        let def = crate::Kernel::new("chariot_device_window", src);
        if let Err(e) = crate::backend::cuda::nvrtc::compile(&def, "sm_90") {
            panic!("{e}");
        }
    }
}
