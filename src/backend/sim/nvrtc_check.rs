//! The sim backend runs a kernel's CPU twin, never its CUDA C; where libnvrtc loads it
//! still compiles that source at registration, so that a kernel which would fail on a
//! GPU (a syntax error, no such entry point, parameters other than those declared)
//! fails on the sim too. Where libnvrtc does not load, kernels are accepted as they
//! are, and the process says so once.

use crate::backend::device::{KernelCode, Param};
use crate::Error;
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The architecture kernels are checked for: a virtual one, so that NVRTC gives PTX
/// (whose `.entry` lines carry the parameter list) and no GPU is needed.
pub(super) const ARCH: &str = "compute_90";

/// What registration on the sim learned of a kernel's source.
#[derive(Debug, PartialEq)]
pub(super) enum Checked {
    /// NVRTC compiled it, and its entry point takes the parameters declared.
    Compiled,
    /// The kernel has no CUDA C (a kernel only the sim runs, through its twin).
    NoSource,
    /// libnvrtc did not load: the source was not compiled.
    NotCompiled,
}

/// Checks `kernel`'s source with NVRTC where libnvrtc loads (see the module's comment).
pub(super) fn check(kernel: KernelCode<'_>) -> crate::Result<Checked> {
    let checked = check_with(kernel, nvrtc_loads())?;
    if checked == Checked::NotCompiled {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            eprintln!(
                "chariot: libnvrtc did not load, so the sim backend does not compile kernels (kernel `{}` and \
                 those after it are accepted unchecked); to check them, put a libnvrtc on LD_LIBRARY_PATH \
                 (the CUDA toolkit's lib64, or `pip install nvidia-cuda-nvrtc-cu12`'s nvidia/cuda_nvrtc/lib)",
                kernel.name
            )
        });
    }
    Ok(checked)
}

/// Whether libnvrtc loads here; asked once.
fn nvrtc_loads() -> bool {
    static LOADS: OnceLock<bool> = OnceLock::new();
    *LOADS.get_or_init(crate::backend::cuda::nvrtc_present)
}

/// [`check`], with whether libnvrtc loads given (a test can say it does not).
pub(super) fn check_with(kernel: KernelCode<'_>, nvrtc: bool) -> crate::Result<Checked> {
    if kernel.source.trim().is_empty() {
        return Ok(Checked::NoSource);
    }
    if !nvrtc {
        return Ok(Checked::NotCompiled);
    }
    let ptx = ptx(kernel)?;
    let Some(entry) = entry_params(&ptx, kernel.name) else {
        let entries = entries(&ptx);
        return Err(Error::KernelInvalid {
            kernel: kernel.name.to_string(),
            message: format!(
                "the source compiles but has no entry point `{}` (an `extern \"C\" __global__` function of \
                 that name); its entry points: {}",
                kernel.name,
                if entries.is_empty() { "none".to_string() } else { entries.join(", ") }
            ),
        });
    };
    check_params(kernel, &entry)?;
    Ok(Checked::Compiled)
}

/// The PTX of `kernel`'s source for [`ARCH`], compiled once per source in the process
/// (a file of kernels is registered once per entry point).
fn ptx(kernel: KernelCode<'_>) -> crate::Result<String> {
    type Cache = Mutex<HashMap<String, Result<String, String>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let fail = |log: String| Error::KernelCompile { kernel: kernel.name.to_string(), arch: ARCH.into(), log };
    if kernel.source.contains('\0') {
        return Err(fail("the source contains a NUL byte".into()));
    }
    let cache = CACHE.get_or_init(Default::default);
    if let Some(done) = cache.lock().get(kernel.source) {
        return done.clone().map_err(fail);
    }
    // The options chariot compiles with on a GPU (backend/cuda/nvrtc.rs), for ARCH.
    let options = CompileOptions {
        arch: Some(ARCH),
        options: vec!["--std=c++17".into()],
        name: Some(format!("{}.cu", kernel.name)),
        ..Default::default()
    };
    let done = match compile_ptx_with_opts(kernel.source, options) {
        Ok(ptx) => Ok(ptx.to_src()),
        // NVRTC's log names the file (`NAME.cu`) and the line of each error.
        Err(CompileError::CompileError { log, .. }) => Err(log.to_string_lossy().trim_end().to_string()),
        Err(other) => Err(format!("{other:?}")),
    };
    cache.lock().insert(kernel.source.to_string(), done.clone());
    done.map_err(fail)
}

/// One parameter of a PTX entry: its declaration and its size in bytes.
#[derive(Debug, PartialEq)]
struct PtxParam {
    text: String,
    bytes: usize,
}

/// The name at the start of what follows `.entry`.
fn entry_name(rest: &str) -> &str {
    rest.trim_start().split(|c: char| c == '(' || c.is_whitespace()).next().unwrap_or("")
}

/// The names of the PTX's entry points.
fn entries(ptx: &str) -> Vec<String> {
    ptx.split(".entry").skip(1).map(|rest| entry_name(rest).to_string()).collect()
}

/// The parameters of entry `name` in `ptx`, or `None` where there is no such entry.
fn entry_params(ptx: &str, name: &str) -> Option<Vec<PtxParam>> {
    let rest = ptx.split(".entry").skip(1).find(|rest| entry_name(rest) == name)?;
    // An entry without parameters may have no parenthesis at all.
    let open = rest.find('(').filter(|&o| !rest[..o].contains('{'));
    let Some(open) = open else { return Some(Vec::new()) };
    let close = rest[open..].find(')').map_or(rest.len(), |c| open + c);
    Some(rest[open + 1..close].split(',').map(str::trim).filter(|p| !p.is_empty()).map(ptx_param).collect())
}

/// `.param .u64 k_param_0`, `.param .align 8 .b8 k_param_1[16]`, … and its size.
fn ptx_param(text: &str) -> PtxParam {
    let bits = |t: &str| t.get(2..).and_then(|b| b.parse::<usize>().ok()).filter(|_| t.starts_with('.'));
    let unit = text.split_whitespace().skip(1).filter(|t| *t != ".param").find_map(bits).unwrap_or(0) / 8;
    let count =
        text.rsplit_once('[').and_then(|(_, n)| n.trim_end_matches(']').trim().parse::<usize>().ok()).unwrap_or(1);
    PtxParam { text: text.to_string(), bytes: unit * count }
}

/// The bytes a declared parameter takes in the launch's parameter list.
fn param_bytes(p: Param) -> usize {
    match p {
        Param::Buffer | Param::I64 | Param::U64 | Param::F64 => 8,
        Param::I32 | Param::U32 | Param::F32 => 4,
    }
}

fn check_params(kernel: KernelCode<'_>, entry: &[PtxParam]) -> crate::Result<()> {
    let invalid = |message: String| Err(Error::KernelInvalid { kernel: kernel.name.to_string(), message });
    if entry.len() != kernel.params.len() {
        return invalid(format!(
            "the entry point takes {} parameter(s) in the source, and {} are declared ({:?}); Kernel::params \
             must list them all, in order",
            entry.len(),
            kernel.params.len(),
            kernel.params
        ));
    }
    for (i, (p, declared)) in entry.iter().zip(kernel.params).enumerate() {
        if p.bytes != param_bytes(*declared) {
            return invalid(format!(
                "parameter {i} is {} bytes in the source (`{}`), and is declared {declared:?} ({} bytes)",
                p.bytes,
                p.text,
                param_bytes(*declared)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kernel;

    const TWICE: &str = r#"extern "C" __global__ void twice(unsigned* o, const unsigned* i, unsigned n) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) o[t] = 2 * i[t];
}
"#;

    fn twice(source: &str) -> Kernel {
        Kernel::new("twice", source).params([Param::Buffer, Param::Buffer, Param::U32])
    }

    #[test]
    fn ptx_signatures_are_read() {
        let ptx = "//\n.version 8.5\n.target sm_90\n.address_size 64\n\n\t// .globl\tk\n\n\
                   .visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1,\n\
                   \t.param .align 8 .b8 k_param_2[16]\n)\n{\n\tret;\n}\n\
                   .visible .entry none()\n{\n\tret;\n}\n.visible .entry bare\n{\n\tret;\n}\n";
        assert_eq!(entries(ptx), ["k", "none", "bare"]);
        let k = entry_params(ptx, "k").unwrap();
        assert_eq!(k.iter().map(|p| p.bytes).collect::<Vec<_>>(), [8, 4, 16]);
        assert_eq!(k[1].text, ".param .u32 k_param_1");
        assert_eq!(entry_params(ptx, "none"), Some(Vec::new()));
        assert_eq!(entry_params(ptx, "bare"), Some(Vec::new()));
        assert_eq!(entry_params(ptx, "missing"), None);
    }

    /// The path every machine without libnvrtc takes: a broken kernel is accepted,
    /// uncompiled, and a kernel with no source is not compiled anywhere.
    #[test]
    fn without_nvrtc_kernels_are_accepted_uncompiled() {
        assert_eq!(check_with(twice("this is not CUDA {").code(), false).unwrap(), Checked::NotCompiled);
        assert_eq!(check_with(twice(TWICE).code(), false).unwrap(), Checked::NotCompiled);
        assert_eq!(check_with(twice(" \n").code(), true).unwrap(), Checked::NoSource);
    }

    /// Runs only where libnvrtc loads (LD_LIBRARY_PATH); elsewhere it says it skipped.
    #[test]
    fn with_nvrtc_sources_are_compiled_and_checked() {
        if !nvrtc_loads() {
            eprintln!("skipped: libnvrtc does not load here, so the sim compiles no kernel");
            return;
        }
        assert_eq!(check_with(twice(TWICE).code(), true).unwrap(), Checked::Compiled);
        // A syntax error: NVRTC's log, naming the file and the line.
        let broken = TWICE.replace("+ threadIdx.x;", "+ threadIdx.x + tid;");
        match check_with(twice(&broken).code(), true) {
            Err(Error::KernelCompile { kernel, arch, log }) => {
                assert_eq!((kernel.as_str(), arch.as_str()), ("twice", ARCH));
                assert!(log.contains("twice.cu(2): error") && log.contains("\"tid\" is undefined"), "{log}");
            }
            other => panic!("expected KernelCompile, got {other:?}"),
        }
        // No such entry point: named, with those the source has.
        let e = check_with(Kernel::new("thrice", TWICE).code(), true).unwrap_err();
        assert!(
            matches!(&e, Error::KernelInvalid { kernel, message } if kernel == "thrice"
                && message.contains("no entry point `thrice`") && message.contains("entry points: twice")),
            "{e}"
        );
        // Parameters other than declared: their count, then each one's size.
        let e =
            check_with(Kernel::new("twice", TWICE).params([Param::Buffer, Param::Buffer]).code(), true).unwrap_err();
        assert!(e.to_string().contains("takes 3 parameter(s) in the source, and 2 are declared"), "{e}");
        let e = check_with(Kernel::new("twice", TWICE).params([Param::Buffer, Param::Buffer, Param::U64]).code(), true)
            .unwrap_err();
        assert!(e.to_string().contains("parameter 2 is 4 bytes in the source") && e.to_string().contains("U64"), "{e}");
        let e = check_with(Kernel::new("twice", TWICE).params([Param::Buffer, Param::U32, Param::U32]).code(), true)
            .unwrap_err();
        assert!(e.to_string().contains("parameter 1 is 8 bytes in the source"), "{e}");
    }
}
