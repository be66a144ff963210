//! The tiled Cholesky factorisation's library glue (cuBLAS and cuSOLVER through cudarc,
//! loaded at run time) and its baseline, cuSOLVER's dense potrf on one GPU.
//!
//! * Tile operations: [`enqueue`] puts POTRF (`cusolverDnDpotrf`), TRSM (`cublasDtrsm`),
//!   SYRK (`cublasDsyrk`) or GEMM (`cublasDgemm`) of b×b column-major tiles on a stream;
//!   and, where the TRSMs multiply by the inverse ([`Trsm::Inverse`]), INVERSE (a
//!   kernel of ours inverts the tile's diagonal blocks of order 32 or less, and
//!   strided-batched GEMMs join them by halves: [`leaf_order`]) and TRSM by it
//!   (`cublasDtrmm` into the slot's scratch tile, copied back). The operations on the
//!   path to the next step (POTRF, INVERSE, a step's first TRSM: [`Op::on_the_path`])
//!   run on a high-priority stream of their slot, forked from the task's stream and
//!   joined back to it by events.
//!   The library handles are made lazily, one pair per (GPU, stream slot) on the thread
//!   that uses them (a chariot dispatcher runs one GPU's callbacks, and a stream slot
//!   runs one command at a time, so a handle and its POTRF workspace are never used by
//!   two operations at once), and kept in a thread-local map until the thread ends.
//! * The baseline ([`potrf_dense`]): the whole matrix uploaded, factorised by
//!   `cusolverDnXpotrf` (the 64-bit API: N² elements exceed 2³¹ from N = 46 341 on) and
//!   downloaded, each step timed apart.
//!
//! Why this file is long: it is the study's whole foreign surface (two libraries, the
//! handles' lifetime, the operations' argument lists as rustfmt lays them out, and
//! the baseline's rig), kept in one place so that every `unsafe` of the study sits here.

use super::failed_text;
use crate::cholesky::plan::{Op, Trsm};
use crate::cholesky::Tile;
use chariot_inorder::rig::PrimaryContext;
use cudarc::cublas::sys as blas;
use cudarc::cusolver::sys as solver;
use cudarc::driver::{result, sys};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::time::Instant;

/// Whether libcublas and libcusolver can be loaded here; a message saying how to fix it
/// otherwise. Checked before any call into them (a missing library would panic).
pub(crate) fn present() -> Result<(), String> {
    static PRESENT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PRESENT
        .get_or_init(|| {
            // SAFETY: only tries to open the libraries; no symbol is called.
            let (b, s) = unsafe { (blas::is_culib_present(), solver::is_culib_present()) };
            match (b, s) {
                (true, true) => Ok(()),
                _ => Err(format!(
                    "{}{} not found: add the CUDA toolkit's lib64 to LD_LIBRARY_PATH",
                    if b { "" } else { "libcublas " },
                    if s { "" } else { "libcusolver" }
                )),
            }
        })
        .clone()
}

fn blas_err(call: &'static str) -> impl Fn(cudarc::cublas::result::CublasError) -> String {
    move |e| format!("{call} failed: {:?}", e.0)
}

fn solver_err(call: &'static str) -> impl Fn(cudarc::cusolver::result::CusolverError) -> String {
    move |e| format!("{call} failed: {:?}", e.0)
}

fn int(v: usize, what: &str) -> Result<c_int, String> {
    c_int::try_from(v).map_err(|_| format!("{what} = {v} does not fit a 32-bit int"))
}

/// A cuBLAS and a cuSOLVER handle made in one context, with a POTRF workspace and its
/// `devInfo`, a scratch tile (a TRSM by the inverse's output) and a high-priority stream
/// with its two events, freed on drop in that context.
struct Libs {
    ctx: sys::CUcontext,
    blas: blas::cublasHandle_t,
    solver: solver::cusolverDnHandle_t,
    /// Device workspace of `lwork` doubles followed by one `int` (devInfo); 0 until the
    /// first POTRF.
    work: sys::CUdeviceptr,
    lwork: c_int,
    /// The tile order the workspace was sized for.
    work_b: usize,
    /// Scratch tile of `scratch_b`² doubles; 0 until the first TRSM by the inverse.
    scratch: sys::CUdeviceptr,
    scratch_b: usize,
    /// The slot's high-priority stream and its fork and join events; made on first use.
    urgent: Option<Urgent>,
    /// The module of [`LEAF_INVERSE`] in this context and its kernel; loaded on first use.
    leaf: Option<(sys::CUmodule, sys::CUfunction)>,
}

/// A slot's high-priority stream, and the events that order it after and before the
/// slot's own stream.
#[derive(Clone, Copy)]
struct Urgent {
    stream: sys::CUstream,
    fork: sys::CUevent,
    join: sys::CUevent,
}

impl Libs {
    /// Makes the handles in the calling thread's current context.
    fn new() -> Result<Libs, String> {
        present()?;
        let ctx = result::ctx::get_current()
            .map_err(|e| failed_text("cuCtxGetCurrent", e))?
            .ok_or("no CUDA context is current on this thread")?;
        let blas = cudarc::cublas::result::create_handle().map_err(blas_err("cublasCreate"))?;
        let solver = match cudarc::cusolver::result::dn_create() {
            Ok(s) => s,
            Err(e) => {
                // SAFETY: created just above, used by nothing, destroyed once.
                let _ = unsafe { cudarc::cublas::result::destroy_handle(blas) };
                return Err(solver_err("cusolverDnCreate")(e));
            }
        };
        Ok(Libs { ctx, blas, solver, work: 0, lwork: 0, work_b: 0, scratch: 0, scratch_b: 0, urgent: None, leaf: None })
    }

    /// The slot's high-priority stream (the context's greatest priority, non-blocking)
    /// and its two events (no timing), made here on first use.
    ///
    /// # Safety
    /// The current context is this one.
    unsafe fn urgent(&mut self) -> Result<Urgent, String> {
        if let Some(u) = self.urgent {
            return Ok(u);
        }
        let (mut least, mut greatest) = (0, 0);
        sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest)
            .result()
            .map_err(|e| failed_text("cuCtxGetStreamPriorityRange", e))?;
        let mut stream = std::ptr::null_mut();
        let non_blocking = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        sys::cuStreamCreateWithPriority(&mut stream, non_blocking, greatest)
            .result()
            .map_err(|e| failed_text("cuStreamCreateWithPriority", e))?;
        let mut events = [std::ptr::null_mut(); 2];
        for (i, e) in events.iter_mut().enumerate() {
            let made = sys::cuEventCreate(e, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32).result();
            if let Err(err) = made {
                // Nothing was enqueued on the stream or the events made before.
                for &e in &events[..i] {
                    let _ = sys::cuEventDestroy_v2(e);
                }
                let _ = sys::cuStreamDestroy_v2(stream);
                return Err(failed_text("cuEventCreate", err));
            }
        }
        let u = Urgent { stream, fork: events[0], join: events[1] };
        self.urgent = Some(u);
        Ok(u)
    }

    /// The kernel of [`LEAF_INVERSE`], compiled for this context's device (once a
    /// process, by chariot's compile cache) and loaded here on first use.
    ///
    /// # Safety
    /// The current context is this one.
    unsafe fn leaf_kernel(&mut self) -> Result<sys::CUfunction, String> {
        if let Some((_, f)) = self.leaf {
            return Ok(f);
        }
        let mut dev: sys::CUdevice = 0;
        sys::cuCtxGetDevice(&mut dev).result().map_err(|e| failed_text("cuCtxGetDevice", e))?;
        let (module, f) = super::load_module(dev, LEAF_KERNEL, LEAF_INVERSE, &[LEAF_KERNEL])?;
        self.leaf = Some((module, f[0]));
        Ok(f[0])
    }

    /// The scratch tile, of at least b² doubles (allocated, or grown, here).
    ///
    /// # Safety
    /// The current context is this one. A scratch tile that grows is freed after the
    /// context has drained, so that this slot's previous TRSM no longer uses it.
    unsafe fn scratch(&mut self, b: usize) -> Result<sys::CUdeviceptr, String> {
        if self.scratch != 0 && self.scratch_b >= b {
            return Ok(self.scratch);
        }
        regrow(&mut self.scratch, b * b * 8)?;
        self.scratch_b = b;
        Ok(self.scratch)
    }

    /// Sizes the POTRF workspace for tiles of order `b` (at `a`, a b×b tile on this
    /// context's device, or a scratch tile allocated for the query when `None`),
    /// keeping it when it is large enough.
    ///
    /// # Safety
    /// The current context is this one; `a` is a device address of b² doubles in it.
    /// A workspace that grows is freed after the context has drained, so that this
    /// slot's previous POTRF no longer uses it.
    unsafe fn workspace(&mut self, a: Option<sys::CUdeviceptr>, b: usize) -> Result<(), String> {
        if self.work != 0 && self.work_b >= b {
            return Ok(());
        }
        let n = int(b, "tile order")?;
        let scratch = match a {
            Some(_) => 0,
            None => result::malloc_sync(b * b * 8).map_err(|e| failed_text("cuMemAlloc", e))?,
        };
        let mut lwork: c_int = 0;
        let queried = solver::cusolverDnDpotrf_bufferSize(
            self.solver,
            solver::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
            n,
            a.unwrap_or(scratch) as *mut f64,
            n,
            &mut lwork,
        )
        .result()
        .map_err(solver_err("cusolverDnDpotrf_bufferSize"));
        if scratch != 0 {
            result::free_sync(scratch).map_err(|e| failed_text("cuMemFree", e))?;
        }
        queried?;
        let lwork = lwork.max(1);
        regrow(&mut self.work, lwork as usize * 8 + 16)?;
        self.lwork = lwork;
        self.work_b = b;
        Ok(())
    }
}

/// Replaces the allocation at `*ptr` (0: none) by one of `bytes`: the old one is freed
/// after the context has drained, since this slot's last operation may still use it.
///
/// # Safety
/// The current context is the one `*ptr` was allocated in.
unsafe fn regrow(ptr: &mut sys::CUdeviceptr, bytes: usize) -> Result<(), String> {
    if *ptr != 0 {
        result::ctx::synchronize().map_err(|e| failed_text("cuCtxSynchronize", e))?;
        result::free_sync(*ptr).map_err(|e| failed_text("cuMemFree", e))?;
        *ptr = 0;
    }
    *ptr = result::malloc_sync(bytes).map_err(|e| failed_text("cuMemAlloc", e))?;
    Ok(())
}

impl Drop for Libs {
    fn drop(&mut self) {
        // SAFETY: the handles and the workspace were made in `ctx`, which chariot keeps
        // retained until its dispatcher threads (which own this map) have ended; each is
        // freed once, after the context's work is done.
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::ctx::synchronize();
            let _ = cudarc::cusolver::result::dn_destroy(self.solver);
            let _ = cudarc::cublas::result::destroy_handle(self.blas);
            if self.work != 0 {
                let _ = result::free_sync(self.work);
            }
            if self.scratch != 0 {
                let _ = result::free_sync(self.scratch);
            }
            if let Some((module, _)) = self.leaf {
                let _ = result::module::unload(module);
            }
            if let Some(u) = self.urgent {
                let _ = sys::cuEventDestroy_v2(u.fork);
                let _ = sys::cuEventDestroy_v2(u.join);
                let _ = sys::cuStreamDestroy_v2(u.stream);
            }
        }
    }
}

thread_local! {
    /// This thread's handles, by (GPU, stream slot).
    static LIBS: RefCell<HashMap<(usize, usize), Libs>> = RefCell::new(HashMap::new());
}

/// Runs `f` on this thread's handles of (`gpu`, `slot`), made in the current context on
/// first use.
fn with_libs<R>(gpu: usize, slot: usize, f: impl FnOnce(&mut Libs) -> Result<R, String>) -> Result<R, String> {
    LIBS.with(|libs| {
        let mut libs = libs.borrow_mut();
        let libs = match libs.entry((gpu, slot)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(Libs::new()?),
        };
        f(libs)
    })
}

/// Makes the handles of stream slots `0..slots` of the task's GPU on this thread (the
/// GPU's dispatcher, which runs all of that GPU's callbacks) and sizes their POTRF
/// workspaces for tiles of order `b`, their high-priority streams (and their scratch
/// tiles and the INVERSE's leaf kernel, with [`Trsm::Inverse`]), so that a timed run
/// does not (nothing on the sim backend). Call it only while the scheduler runs nothing
/// else: a workspace that grows is freed and allocated again.
///
/// # Errors
/// A library or driver call that failed.
pub(crate) fn warm(call: &chariot::callback::GpuCall<'_>, b: usize, slots: usize, trsm: Trsm) -> Result<(), String> {
    if call.cuda_stream().is_none() {
        return Ok(());
    }
    let gpu = call.info().gpu;
    for slot in 0..slots {
        // SAFETY: the callback runs on the dispatcher of the task's GPU, whose context is
        // current; the scheduler runs no other task (the caller's promise), so no
        // workspace is in use.
        with_libs(gpu, slot, |libs| unsafe {
            libs.workspace(None, b)?;
            libs.urgent()?;
            if trsm == Trsm::Inverse {
                libs.scratch(b)?;
                if leaf_order(b).is_some() {
                    libs.leaf_kernel()?;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// The INVERSE's leaf kernel: X's diagonal blocks of order n (block z at z·n·(ld + 1))
/// get the inverses of L's, one thread block a leaf. Thread t solves L x = e_t by
/// forward substitution: the columns are independent, so no barrier; x lives in shared
/// memory; X's upper triangle is written as zeros.
const LEAF_INVERSE: &str = r#"
extern "C" __global__ void cholesky_leaf_inverse(const double* L, double* X, int ld, int n) {
    extern __shared__ double x[];
    const double* l = L + (long long)blockIdx.x * n * (ld + 1);
    double* out = X + (long long)blockIdx.x * n * (ld + 1);
    int t = threadIdx.x;
    for (int i = 0; i < n; i++) {
        double v = 0.0;
        if (i >= t) {
            v = i == t ? 1.0 : 0.0;
            for (int k = t; k < i; k++) v -= l[i + (long long)k * ld] * x[k * n + t];
            v /= l[i + (long long)i * ld];
        }
        x[i * n + t] = v;
    }
    for (int i = 0; i < n; i++) out[i + (long long)t * ld] = x[i * n + t];
}
"#;

/// [`LEAF_INVERSE`]'s entry point.
const LEAF_KERNEL: &str = "cholesky_leaf_inverse";

/// The leaf order of the INVERSE for tiles of order `b`: b / 2ᵐ for the least m that
/// makes it at most 32 (`None` where b's odd part exceeds 32: a TRSM against the
/// identity makes the inverse then). Under a load of GEMMs on one H200 at b = 2,048,
/// leaves of 32 made L⁻¹ in 1.0 ms against 1.3 ms for leaves of 64, and 7.6 ms for
/// the TRSM against the identity (`scripts/gpu/probes/panel_chain.cu`).
pub(crate) fn leaf_order(b: usize) -> Option<usize> {
    let mut leaf = b;
    while leaf > 32 {
        if leaf % 2 != 0 {
            return None;
        }
        leaf /= 2;
    }
    (leaf > 0).then_some(leaf)
}

/// Enqueues tile operation `op` of order-`b` tiles on `stream` (or, where `urgent`, on
/// the slot's high-priority stream, after what `stream` holds and before what it gets
/// next), with the handles of (`gpu`, `slot`) on this thread (made on
/// first use, in the current context). `at(tile)` is the device address of `tile`, b×b
/// column-major (lda = b).
///
/// # Safety
/// The current context is the one of `stream` and of every address `at` returns; each
/// address holds b² doubles that nothing else touches until the operation has run on
/// `stream` (chariot's dependencies on the task's declared ranges); (`gpu`, `slot`)
/// names one stream slot, which runs one command at a time (so its workspace and
/// scratch tile serve one operation at a time, in stream order).
pub(crate) unsafe fn enqueue(
    (gpu, slot): (usize, usize),
    stream: sys::CUstream,
    op: Op,
    urgent: bool,
    b: usize,
    at: &dyn Fn(Tile) -> Result<sys::CUdeviceptr, String>,
) -> Result<(), String> {
    let tile = |i, j| at(Tile::Block(i, j));
    let n = int(b, "tile order")?;
    let (one, minus) = (1.0f64, -1.0f64);
    with_libs(gpu, slot, |libs| {
        use blas::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT as NON_UNIT;
        use blas::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER as LOWER;
        use blas::cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
        use blas::cublasSideMode_t::{CUBLAS_SIDE_LEFT as LEFT, CUBLAS_SIDE_RIGHT as RIGHT};
        let task_stream = stream;
        let urgent = if urgent {
            let u = libs.urgent()?;
            sys::cuEventRecord(u.fork, task_stream).result().map_err(|e| failed_text("cuEventRecord", e))?;
            sys::cuStreamWaitEvent(u.stream, u.fork, 0).result().map_err(|e| failed_text("cuStreamWaitEvent", e))?;
            Some(u)
        } else {
            None
        };
        let stream = urgent.map_or(task_stream, |u| u.stream);
        let set_blas_stream = |libs: &Libs| {
            blas::cublasSetStream_v2(libs.blas, stream as blas::cudaStream_t)
                .result()
                .map_err(blas_err("cublasSetStream"))
        };
        // In a closure of its own, so that a failed call still reaches the join below.
        let mut enqueue_op = || match op {
            Op::Potrf { k } => {
                let a = tile(k, k)?;
                libs.workspace(Some(a), b)?;
                solver::cusolverDnSetStream(libs.solver, stream as solver::cudaStream_t)
                    .result()
                    .map_err(solver_err("cusolverDnSetStream"))?;
                let info = libs.work + libs.lwork as u64 * 8;
                solver::cusolverDnDpotrf(
                    libs.solver,
                    solver::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                    n,
                    a as *mut f64,
                    n,
                    libs.work as *mut f64,
                    libs.lwork,
                    info as *mut c_int,
                )
                .result()
                .map_err(solver_err("cusolverDnDpotrf"))
            }
            Op::Inverse { k } => {
                let (a, inv) = (tile(k, k)?, at(Tile::Inverse(k))?);
                // Zeros first: the leaves' kernel writes the diagonal blocks, the joins'
                // GEMMs the blocks below them and read the ones above as zeros.
                result::memset_d8_async(inv, 0, b * b * 8, stream).map_err(|e| failed_text("cuMemsetD8Async", e))?;
                let Some(leaf) = leaf_order(b) else {
                    // The identity (1.0's high word, 0x3FF00000, down the diagonal: a
                    // pitch of b + 1 doubles), solved against L.
                    sys::cuMemsetD2D32Async(inv + 4, (b + 1) * 8, 0x3FF0_0000, 1, b, stream)
                        .result()
                        .map_err(|e| failed_text("cuMemsetD2D32Async", e))?;
                    set_blas_stream(libs)?;
                    return blas::cublasDtrsm_v2(
                        libs.blas,
                        LEFT,
                        LOWER,
                        N,
                        NON_UNIT,
                        n,
                        n,
                        &one,
                        a as *const f64,
                        n,
                        inv as *mut f64,
                        n,
                    )
                    .result()
                    .map_err(blas_err("cublasDtrsm"));
                };
                let f = libs.leaf_kernel()?;
                let (mut l, mut x, mut ld, mut order) = (a, inv, n, int(leaf, "leaf order")?);
                let mut args = [
                    (&mut l as *mut u64).cast::<c_void>(),
                    (&mut x as *mut u64).cast(),
                    (&mut ld as *mut c_int).cast(),
                    (&mut order as *mut c_int).cast(),
                ];
                let (grid, threads, shared) = ((b / leaf) as u32, leaf as u32, (leaf * leaf * 8) as u32);
                result::launch_kernel(f, (grid, 1, 1), (threads, 1, 1), shared, stream, &mut args)
                    .map_err(|e| failed_text("cuLaunchKernel", e))?;
                // Each level joins pairs of inverted diagonal blocks of order w:
                // X21 = -X22·(L21·X11), through the scratch tile, all pairs at once.
                let t = libs.scratch(b)?;
                set_blas_stream(libs)?;
                let mut w = leaf;
                while w < b {
                    let (stride, pairs, order) = ((2 * w * (b + 1)) as i64, int(b / (2 * w), "pairs")?, int(w, "w")?);
                    let (below, diagonal) = ((w * 8) as u64, ((w * b + w) * 8) as u64);
                    let zero = 0.0f64;
                    // C ← alpha·A·X for every pair at once.
                    let batched = |alpha: &f64, a: u64, x: u64, c: u64| {
                        blas::cublasDgemmStridedBatched(
                            libs.blas,
                            N,
                            N,
                            order,
                            order,
                            order,
                            alpha,
                            a as *const f64,
                            n,
                            stride,
                            x as *const f64,
                            n,
                            stride,
                            &zero,
                            c as *mut f64,
                            n,
                            stride,
                            pairs,
                        )
                        .result()
                        .map_err(blas_err("cublasDgemmStridedBatched"))
                    };
                    batched(&one, a + below, inv, t + below)?;
                    batched(&minus, inv + diagonal, t + below, inv + below)?;
                    w *= 2;
                }
                Ok(())
            }
            other => {
                set_blas_stream(libs)?;
                match other {
                    Op::Trsm { i, k, by_inverse: true } => {
                        // Out of place (cuBLAS's in-place TRMM ran at half the speed),
                        // then copied back on the same stream.
                        let (x, out) = (tile(i, k)?, libs.scratch(b)?);
                        let inv = at(Tile::Inverse(k))? as *const f64;
                        blas::cublasDtrmm_v2(
                            libs.blas,
                            RIGHT,
                            LOWER,
                            T,
                            NON_UNIT,
                            n,
                            n,
                            &one,
                            inv,
                            n,
                            x as *const f64,
                            n,
                            out as *mut f64,
                            n,
                        )
                        .result()
                        .map_err(blas_err("cublasDtrmm"))?;
                        result::memcpy_dtod_async(x, out, b * b * 8, stream)
                            .map_err(|e| failed_text("cuMemcpyDtoDAsync", e))
                    }
                    Op::Trsm { i, k, by_inverse: false } => blas::cublasDtrsm_v2(
                        libs.blas,
                        RIGHT,
                        LOWER,
                        T,
                        NON_UNIT,
                        n,
                        n,
                        &one,
                        tile(k, k)? as *const f64,
                        n,
                        tile(i, k)? as *mut f64,
                        n,
                    )
                    .result()
                    .map_err(blas_err("cublasDtrsm")),
                    Op::Syrk { i, k } => blas::cublasDsyrk_v2(
                        libs.blas,
                        LOWER,
                        N,
                        n,
                        n,
                        &minus,
                        tile(i, k)? as *const f64,
                        n,
                        &one,
                        tile(i, i)? as *mut f64,
                        n,
                    )
                    .result()
                    .map_err(blas_err("cublasDsyrk")),
                    Op::Gemm { i, j, k } => blas::cublasDgemm_v2(
                        libs.blas,
                        N,
                        T,
                        n,
                        n,
                        n,
                        &minus,
                        tile(i, k)? as *const f64,
                        n,
                        tile(j, k)? as *const f64,
                        n,
                        &one,
                        tile(i, j)? as *mut f64,
                        n,
                    )
                    .result()
                    .map_err(blas_err("cublasDgemm")),
                    Op::Potrf { .. } | Op::Inverse { .. } => unreachable!("handled above"),
                }
            }
        };
        let enqueued = enqueue_op();
        if let Some(u) = urgent {
            // Joined back even after a failed call: what was enqueued stays ordered
            // before the task's next command.
            let joined = sys::cuEventRecord(u.join, u.stream)
                .result()
                .and_then(|()| sys::cuStreamWaitEvent(task_stream, u.join, 0).result())
                .map_err(|e| failed_text("cuEventRecord/cuStreamWaitEvent", e));
            enqueued?;
            return joined;
        }
        enqueued
    })
}

/// One tile operation of a chariot task's GPU callback: the tiles' addresses on the
/// task's GPU from the resident buffer `m` laid out by `tiling`, the operation enqueued
/// on the task's stream (or, where `urgent`, on its slot's high-priority stream).
///
/// Sound because chariot hands out the address of a resident range only to a task that
/// declared it, valid on its GPU and ordered against every other task touching it; the
/// caller declares `op`'s tiles (reads, and a read-write of the one it writes).
///
/// # Errors
/// Not on the CUDA backend, a tile beyond `m`, or a library call that failed.
pub(crate) fn tile_op(
    call: &chariot::callback::GpuCall<'_>,
    m: &chariot::resident::ResidentBuffer<f64>,
    tiling: &crate::cholesky::Tiling,
    op: Op,
    urgent: bool,
) -> Result<(), String> {
    let stream = call.cuda_stream().ok_or("tile_op runs on the CUDA backend only")?;
    for tile in op.reads().into_iter().chain([op.writes()]) {
        if tiling.tile_range(tile).end > m.len() {
            return Err(format!("{tile:?} lies beyond the resident buffer of {} elements", m.len()));
        }
    }
    let info = call.info();
    let at = |tile: Tile| {
        call.resident_ptr(m, tiling.tile_range(tile).start)
            .ok_or_else(|| format!("{tile:?} has no address on GPU {}", info.gpu))
    };
    // SAFETY: the callback runs on the dispatcher of the task's GPU, whose context is
    // current; the addresses are the task's declared tiles on that GPU (b² doubles each,
    // within `m`, checked above), which chariot keeps from every other task until this
    // one has ended; (gpu, stream) is the task's slot.
    unsafe { enqueue((info.gpu, info.stream), stream.as_raw().cast(), op, urgent, tiling.b, &at) }
}

/// Times of one run of the baseline, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PotrfTiming {
    /// Host → device copy of the matrix.
    pub(crate) upload_ns: u64,
    /// `cusolverDnXpotrf` alone (enqueue to stream synchronised).
    pub(crate) factor_ns: u64,
    /// Device → host copy of the factor.
    pub(crate) download_ns: u64,
}

/// What the baseline holds: context, stream, handle, device matrix and workspaces, the
/// pinned host matrix; freed on drop (also after an error).
struct Rig {
    ctx: PrimaryContext,
    stream: sys::CUstream,
    solver: solver::cusolverDnHandle_t,
    params: solver::cusolverDnParams_t,
    host: *mut c_void,
    device: Vec<sys::CUdeviceptr>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        // SAFETY: everything was made below in this context and is freed once, after the
        // stream has drained.
        unsafe {
            let _ = result::ctx::set_current(self.ctx.raw());
            if !self.stream.is_null() {
                let _ = result::stream::synchronize(self.stream);
            }
            if !self.params.is_null() {
                let _ = cudarc::cusolver::result::dn_destroy_params(self.params);
            }
            if !self.solver.is_null() {
                let _ = cudarc::cusolver::result::dn_destroy(self.solver);
            }
            for &d in &self.device {
                let _ = result::free_sync(d);
            }
            if !self.host.is_null() {
                let _ = result::free_host(self.host);
            }
            if !self.stream.is_null() {
                let _ = result::stream::destroy(self.stream);
            }
        }
    }
}

impl Rig {
    fn open(ordinal: usize) -> Result<Rig, String> {
        present()?;
        let available = chariot::Backend::cuda_devices().map_err(|e| e.to_string())?;
        if ordinal >= available {
            return Err(format!("GPU {ordinal}: the cuda backend has {available} GPU(s)"));
        }
        let ctx = PrimaryContext::retain(ordinal)?;
        let mut rig = Rig {
            ctx,
            stream: std::ptr::null_mut(),
            solver: std::ptr::null_mut(),
            params: std::ptr::null_mut(),
            host: std::ptr::null_mut(),
            device: Vec::new(),
        };
        rig.ctx.bind()?;
        rig.stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| failed_text("cuStreamCreate", e))?;
        rig.solver = cudarc::cusolver::result::dn_create().map_err(solver_err("cusolverDnCreate"))?;
        rig.params = cudarc::cusolver::result::dn_create_params().map_err(solver_err("cusolverDnCreateParams"))?;
        // SAFETY: both were made above.
        unsafe { solver::cusolverDnSetStream(rig.solver, rig.stream as solver::cudaStream_t) }
            .result()
            .map_err(solver_err("cusolverDnSetStream"))?;
        Ok(rig)
    }

    /// Device memory of `bytes`, freed with the rig.
    fn alloc(&mut self, bytes: usize) -> Result<sys::CUdeviceptr, String> {
        // SAFETY: the rig's context is current (set in `open`, on this thread).
        let d = unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| failed_text("cuMemAlloc", e))?;
        self.device.push(d);
        Ok(d)
    }

    /// `cusolverDnXpotrf` (lower) of the n×n column-major matrix at `a`, on the rig's
    /// stream, synchronised; its `info`.
    ///
    /// # Safety
    /// `a` holds n² doubles in the rig's context.
    unsafe fn potrf(&mut self, a: sys::CUdeviceptr, n: usize) -> Result<c_int, String> {
        use solver::cudaDataType_t::CUDA_R_64F as F64;
        let lower = solver::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        let (mut on_device, mut on_host) = (0usize, 0usize);
        solver::cusolverDnXpotrf_bufferSize(
            self.solver,
            self.params,
            lower,
            n as i64,
            F64,
            a as *const c_void,
            n as i64,
            F64,
            &mut on_device,
            &mut on_host,
        )
        .result()
        .map_err(solver_err("cusolverDnXpotrf_bufferSize"))?;
        let work = self.alloc(on_device + 16)?;
        let info = work + on_device.div_ceil(8) as u64 * 8;
        let mut host_work = vec![0u8; on_host.max(1)];
        solver::cusolverDnXpotrf(
            self.solver,
            self.params,
            lower,
            n as i64,
            F64,
            a as *mut c_void,
            n as i64,
            F64,
            work as *mut c_void,
            on_device,
            host_work.as_mut_ptr() as *mut c_void,
            on_host,
            info as *mut c_int,
        )
        .result()
        .map_err(solver_err("cusolverDnXpotrf"))?;
        result::stream::synchronize(self.stream).map_err(|e| failed_text("cuStreamSynchronize", e))?;
        let mut out = [0 as c_int; 1];
        result::memcpy_dtoh_sync(&mut out, info).map_err(|e| failed_text("cuMemcpyDtoH", e))?;
        Ok(out[0])
    }
}

/// cuSOLVER's dense potrf on GPU `ordinal`: `fill` writes A (n×n column-major) into
/// pinned host memory, which is uploaded, factorised (lower) and downloaded back, each
/// step timed apart (after a warm-up factorisation of a small identity); `check` then
/// reads the result (L in the lower triangle, A's upper triangle above it).
///
/// # Errors
/// No CUDA or no cuSOLVER here, a GPU that does not exist, a driver or library call
/// that failed, or a nonzero `info` (A not positive definite), as a message.
pub(crate) fn potrf_dense(
    ordinal: usize,
    n: usize,
    fill: &dyn Fn(&mut [f64]),
    check: &mut dyn FnMut(&[f64]),
) -> Result<PotrfTiming, String> {
    let elements = n.checked_mul(n).filter(|&e| e > 0).ok_or_else(|| format!("order {n}"))?;
    let bytes = elements * 8;
    let mut rig = Rig::open(ordinal)?;
    // SAFETY: the rig's context is current; freed with the rig.
    rig.host = unsafe { result::malloc_host(bytes, 0) }.map_err(|e| failed_text("cuMemHostAlloc", e))?;
    // SAFETY: `bytes` of pinned memory, 8-aligned, owned by the rig, not aliased.
    let host = unsafe { std::slice::from_raw_parts_mut(rig.host as *mut f64, elements) };
    fill(host);
    // Warm-up: the library's first call, on a small identity.
    let w = 64;
    let warm = rig.alloc(w * w * 8)?;
    let eye: Vec<f64> = (0..w * w).map(|k| if k % (w + 1) == 0 { 1.0 } else { 0.0 }).collect();
    // SAFETY: `warm` holds w² doubles in the current context.
    unsafe {
        result::memcpy_htod_sync(warm, &eye).map_err(|e| failed_text("cuMemcpyHtoD", e))?;
        rig.potrf(warm, w)?;
    }
    let a = rig.alloc(bytes)?;
    let t0 = Instant::now();
    // SAFETY: `a` holds n² doubles, `host` as many pinned ones; both stay alive and
    // untouched until the stream is synchronised.
    unsafe {
        result::memcpy_htod_async(a, &*host, rig.stream).map_err(|e| failed_text("cuMemcpyHtoDAsync", e))?;
        result::stream::synchronize(rig.stream).map_err(|e| failed_text("cuStreamSynchronize", e))?;
    }
    let t1 = Instant::now();
    // SAFETY: `a` holds n² doubles in the rig's context.
    let info = unsafe { rig.potrf(a, n)? };
    let t2 = Instant::now();
    // SAFETY: as for the upload.
    unsafe {
        result::memcpy_dtoh_async(&mut *host, a, rig.stream).map_err(|e| failed_text("cuMemcpyDtoHAsync", e))?;
        result::stream::synchronize(rig.stream).map_err(|e| failed_text("cuStreamSynchronize", e))?;
    }
    let t3 = Instant::now();
    if info != 0 {
        return Err(format!(
            "cusolverDnXpotrf: info = {info} (the leading minor of that order is not positive definite)"
        ));
    }
    check(host);
    let ns = |d: std::time::Duration| d.as_nanos() as u64;
    Ok(PotrfTiming { upload_ns: ns(t1 - t0), factor_ns: ns(t2 - t1), download_ns: ns(t3 - t2) })
}

#[cfg(test)]
mod test {
    use super::leaf_order;

    /// Halved while over 32, if even: powers of two end at 32, 3·2ᵐ at 24; an odd part
    /// over 32 (1,000 = 8·125, 99, 66 = 2·33) has no leaf (the INVERSE solves against
    /// the identity then).
    #[test]
    fn leaf_orders() {
        let got: Vec<_> = [2048, 4096, 1024, 64, 32, 16, 1, 768, 1536, 96, 1000, 99, 66].map(leaf_order).to_vec();
        let want = [Some(32), Some(32), Some(32), Some(32), Some(32), Some(16), Some(1), Some(24), Some(24), Some(24)];
        assert_eq!(got[..10], want);
        assert_eq!(got[10..], [None, None, None]);
    }
}
