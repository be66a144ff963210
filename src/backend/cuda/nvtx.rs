//! NVTX annotations for Nsight Systems: one range per command, from its issue to the
//! dispatcher seeing it complete, named `task <id> <stage> #<command>`; each stream and
//! dispatcher thread named after its GPU and slot. Off unless asked for
//! (`Builder::nvtx`, or `CHARIOT_NVTX=1`).
//!
//! The NVTX library (`libnvToolsExt.so.1`) is loaded at run time like the rest of CUDA,
//! so nothing links it at build time. Without a tool attached (Nsight Systems sets
//! `NVTX_INJECTION64_PATH`) its calls return at once.

use cudarc::driver::sys;
use std::ffi::{c_char, CStr};
use std::fmt::Write as _;

type RangeStart = unsafe extern "C" fn(*const c_char) -> u64;
type RangeEnd = unsafe extern "C" fn(u64);
type NameStream = unsafe extern "C" fn(sys::CUstream, *const c_char);
type NameThread = unsafe extern "C" fn(u32, *const c_char);

/// The loaded NVTX entry points.
pub(crate) struct Nvtx {
    range_start: RangeStart,
    range_end: RangeEnd,
    name_stream: Option<NameStream>,
    name_thread: Option<NameThread>,
    /// Keeps the entry points valid; dropped last.
    _lib: libloading::Library,
}

impl std::fmt::Debug for Nvtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Nvtx")
    }
}

/// Where the library is looked for: `CHARIOT_NVTX_LIB` if set, then the loader's path.
fn candidates() -> Vec<String> {
    // An empty value would make dlopen return the program itself.
    let mut names: Vec<String> = std::env::var("CHARIOT_NVTX_LIB").into_iter().filter(|v| !v.is_empty()).collect();
    names.extend(
        ["libnvToolsExt.so.1", "libnvToolsExt.so", "/usr/local/cuda/lib64/libnvToolsExt.so.1"].map(String::from),
    );
    names
}

/// Why the NVTX library could not be loaded ([`Nvtx::load`]): each file tried, and
/// what it lacked.
#[derive(Debug)]
pub(crate) struct NoNvtx {
    tried: Vec<(String, Tried)>,
}

/// What one candidate file of [`NoNvtx`] lacked.
#[derive(Debug)]
enum Tried {
    /// The loader could not load it.
    Load(libloading::Error),
    /// It loaded without the range calls.
    NoRanges,
}

impl std::fmt::Display for NoNvtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the NVTX library could not be loaded (")?;
        for (i, (name, tried)) in self.tried.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match tried {
                Tried::Load(e) => write!(f, "{name}: {e}")?,
                Tried::NoRanges => write!(f, "{name}: no nvtxRangeStartA/nvtxRangeEnd")?,
            }
        }
        f.write_str(")")
    }
}

impl std::error::Error for NoNvtx {}

impl Nvtx {
    /// Loads the NVTX library, or says why it could not.
    pub(crate) fn load() -> Result<Nvtx, NoNvtx> {
        let mut tried = Vec::new();
        for name in candidates() {
            // SAFETY: loading a shared library runs its initialisers; NVTX's only set up
            // its function table.
            let lib = match unsafe { libloading::Library::new(&name) } {
                Ok(lib) => lib,
                Err(e) => {
                    tried.push((name, Tried::Load(e)));
                    continue;
                }
            };
            // SAFETY: the symbols have these C signatures in NVTX v2/v3
            // (nvToolsExt.h, nvToolsExtCuda.h); the pointers stay valid while `lib` lives,
            // and it lives as long as the copies (same struct).
            let found = unsafe {
                let start = lib.get::<RangeStart>(b"nvtxRangeStartA\0").map(|s| *s);
                let end = lib.get::<RangeEnd>(b"nvtxRangeEnd\0").map(|s| *s);
                // Optional symbols (the naming calls): `None` where missing, not an error.
                let stream = lib.get::<NameStream>(b"nvtxNameCuStreamA\0").map(|s| *s).ok();
                let thread = lib.get::<NameThread>(b"nvtxNameOsThreadA\0").map(|s| *s).ok();
                (start, end, stream, thread)
            };
            match found {
                (Ok(range_start), Ok(range_end), name_stream, name_thread) => {
                    return Ok(Nvtx { range_start, range_end, name_stream, name_thread, _lib: lib })
                }
                _ => tried.push((name, Tried::NoRanges)),
            }
        }
        Err(NoNvtx { tried })
    }

    /// Names a stream in the tool's timeline.
    pub(crate) fn name_stream(&self, stream: sys::CUstream, name: &CStr) {
        if let Some(f) = self.name_stream {
            // SAFETY: a live stream handle and a NUL-terminated string the call copies.
            unsafe { f(stream, name.as_ptr()) }
        }
    }

    /// Names the calling thread.
    pub(crate) fn name_this_thread(&self, name: &CStr) {
        if let Some(f) = self.name_thread {
            extern "C" {
                /// glibc's: the calling thread's kernel id, what NVTX keys thread names on.
                fn gettid() -> i32;
            }
            // SAFETY: gettid takes nothing and cannot fail; the name is NUL-terminated
            // and copied by the call.
            unsafe { f(gettid() as u32, name.as_ptr()) }
        }
    }
}

/// One dispatcher's ranges: one open range per stream slot, names written into a
/// reused buffer (no allocation per command).
#[derive(Debug)]
pub(crate) struct Ranges {
    nvtx: std::sync::Arc<Nvtx>,
    open: Vec<Option<u64>>,
    text: String,
}

impl Ranges {
    pub(crate) fn new(nvtx: std::sync::Arc<Nvtx>, slots: usize) -> Ranges {
        Ranges { nvtx, open: vec![None; slots], text: String::with_capacity(64) }
    }

    pub(crate) fn nvtx(&self) -> &Nvtx {
        &self.nvtx
    }

    /// Opens slot `j`'s range for a command just issued.
    pub(crate) fn start(&mut self, j: usize, task: u64, stage: crate::stage::Stage, command: usize) {
        // A command that failed at issue left its range open.
        self.end(j);
        self.text.clear();
        // Writing into a String cannot fail.
        let _ = write!(self.text, "task {task} {stage} #{command}\0");
        // SAFETY: `text` ends with the NUL just written and holds no other; NVTX copies
        // the message during the call.
        self.open[j] = Some(unsafe { (self.nvtx.range_start)(self.text.as_ptr().cast()) });
    }

    /// Closes slot `j`'s range: its command completed (or failed).
    pub(crate) fn end(&mut self, j: usize) {
        if let Some(id) = self.open[j].take() {
            // SAFETY: `id` came from nvtxRangeStartA and is ended once.
            unsafe { (self.nvtx.range_end)(id) }
        }
    }
}
