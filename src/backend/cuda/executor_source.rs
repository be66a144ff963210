//! The device-side executor's CUDA C, generated from the registered kernels' sources
//! (`device_window.rs` compiles and runs it). Text in, text out, no CUDA: the golden
//! tests below pin the exact output, so any change to the generation shows in review.
//!
//! The rewriting, done on the text: each distinct source once, with `__global__` made
//! `__device__`, and `blockIdx`/`gridDim` made the executor's own per-task variables by
//! `#define`s around the sources (a task's grid runs as a loop over its blocks on one
//! persistent block); then a dispatch on a kernel index calling each kernel with its
//! argument words, and the persistent kernel `chariot_device_window`, whose image
//! layout `device_window.rs` writes.

use crate::backend::device::KernelCode;

/// The executor's source for `kernels` (their registered CUDA C made device
/// functions, case `i` of the dispatch calling `kernels[i]`): `chariot_device_window`.
pub(crate) fn source(kernels: &[KernelCode<'_>]) -> String {
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
        if !seen.contains(&k.source) {
            seen.push(k.source);
            s.push_str(&k.source.replace("__global__", "__device__"));
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
        s.push_str(&format!("    case {i}: chariot_call(&{}, w); break;\n", k.name));
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

#[cfg(test)]
mod test {
    use super::*;
    use crate::kernel::Kernel;

    /// The two kernels of one source and one of another that the golden and compile
    /// tests use: typed pointers and scalars, `blockIdx`, `gridDim`, shared memory and
    /// `__syncthreads` in the kernels.
    const TWO: &str = r#"extern "C" __global__ void twice(unsigned* o, const unsigned* i, unsigned n) {
            unsigned t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) o[t] = 2 * i[t]; }
        extern "C" __global__ void fill(float* o, float v, int n) {
            __shared__ float s[32]; s[threadIdx.x % 32] = v; __syncthreads();
            int t = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x; if (t < n) o[t] = s[threadIdx.x % 32]; }"#;
    const SPIN: &str = r#"extern "C" __global__ void spin(double* sink, unsigned long long iters) {
            double a = threadIdx.x; for (unsigned long long i = 0; i < iters; ++i) a = fma(a, 1.0001, 1e-4);
            if (threadIdx.x == 0) sink[blockIdx.x] = a; }"#;

    fn three() -> [Kernel; 3] {
        [Kernel::new("twice", TWO), Kernel::new("fill", TWO), Kernel::new("spin", SPIN)]
    }

    /// Compares `got` with the golden file `name` (under `tests/golden/`), naming the
    /// first line that differs. `CHARIOT_BLESS=1` rewrites the file instead: review
    /// the diff before committing it.
    fn golden(name: &str, expected: &str, got: &str) {
        if std::env::var_os("CHARIOT_BLESS").is_some_and(|v| v == "1") {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
            std::fs::write(&path, got).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            return;
        }
        if got != expected {
            let line = got.lines().zip(expected.lines()).position(|(a, b)| a != b);
            let at = line.unwrap_or_else(|| got.lines().count().min(expected.lines().count()));
            panic!(
                "the generated executor differs from tests/golden/{name} at line {}:\n  got:      {:?}\n  expected: {:?}\n\
                 (CHARIOT_BLESS=1 rewrites the file if the change is meant)",
                at + 1,
                got.lines().nth(at),
                expected.lines().nth(at)
            );
        }
    }

    #[test]
    fn one_kernel_golden() {
        let k = Kernel::new(
            "twice",
            r#"extern "C" __global__ void twice(float* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }"#,
        );
        golden(
            "executor_one_kernel.cu",
            include_str!("../../../tests/golden/executor_one_kernel.cu"),
            &source(&[k.code()]),
        );
    }

    /// Two kernels of one source (the source once, both cases) and one of another.
    #[test]
    fn shared_source_golden() {
        let [a, b, c] = three();
        golden(
            "executor_shared_source.cu",
            include_str!("../../../tests/golden/executor_shared_source.cu"),
            &source(&[a.code(), b.code(), c.code()]),
        );
    }

    /// The order of the kernels is the order of the cases; each source still once, in
    /// the order first met.
    #[test]
    fn kernel_order_decides_the_cases() {
        let [a, b, c] = three();
        let src = source(&[c.code(), b.code(), a.code()]);
        assert!(src.contains("    case 0: chariot_call(&spin, w); break;\n"), "{src}");
        assert!(src.contains("    case 1: chariot_call(&fill, w); break;\n"), "{src}");
        assert!(src.contains("    case 2: chariot_call(&twice, w); break;\n"), "{src}");
        assert_eq!(src.matches("extern \"C\" __device__ void twice").count(), 1, "{src}");
        assert!(src.find("void spin").unwrap() < src.find("void twice").unwrap(), "{src}");
        assert!(!src.contains("__global__ void twice") && !src.contains("__global__ void spin"), "{src}");
    }

    /// The generated executor compiles.
    #[test]
    #[ignore = "needs libnvrtc (CUDA toolkit's lib64 on LD_LIBRARY_PATH)"]
    fn the_executor_compiles() {
        let [a, b, c] = three();
        let src = source(&[a.code(), b.code(), c.code()]);
        assert_eq!(src.matches("extern \"C\" __device__ void twice").count(), 1, "{src}");
        let def = Kernel::new("chariot_device_window", src);
        if let Err(e) = crate::backend::cuda::nvrtc::compile(def.code(), "sm_90") {
            panic!("{e}");
        }
    }
}
