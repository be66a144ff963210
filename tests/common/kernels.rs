//! The test kernels (`affine`, `mix`) with their CPU twins and reference functions, the
//! input generators, and a GPU-callback fill that works on both backends.

use chariot::callback::GpuCall;
use chariot::{BoxError, DeviceBuffer, Kernel, Param};

/// `out[i] = in[i] * a + b` over u32 (wrapping), for `i < n`.
pub const AFFINE_SRC: &str = r#"
extern "C" __global__ void affine(const unsigned* in, unsigned* out, unsigned n, unsigned a, unsigned b) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * a + b;
}
"#;

/// `x[i] = (x[i] ^ k) + i` over u32 (wrapping), in place, for `i < n`.
pub const MIX_SRC: &str = r#"
extern "C" __global__ void mix(unsigned* x, unsigned n, unsigned k) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = (x[i] ^ k) + i;
}
"#;

/// Threads per block of every launch here.
pub const BLOCK: u32 = 128;

pub fn affine_ref(x: u32, a: u32, b: u32) -> u32 {
    x.wrapping_mul(a).wrapping_add(b)
}

pub fn mix_ref(x: u32, k: u32, i: usize) -> u32 {
    (x ^ k).wrapping_add(i as u32)
}

/// The `affine` kernel with its CPU twin.
pub fn affine_kernel() -> Kernel {
    Kernel::new("affine", AFFINE_SRC)
        .params([Param::Buffer, Param::Buffer, Param::U32, Param::U32, Param::U32])
        .cpu_twin(|args| {
            let (n, a, b) = (args.u32(2)? as usize, args.u32(3)?, args.u32(4)?);
            let (input, output) = args.in_out::<u32, u32>(0, 1)?;
            if n > input.len() || n > output.len() {
                return Err(format!("n = {n} exceeds the buffers ({} and {})", input.len(), output.len()).into());
            }
            for i in 0..n {
                output[i] = affine_ref(input[i], a, b);
            }
            Ok(())
        })
}

/// The `mix` kernel with its CPU twin.
pub fn mix_kernel() -> Kernel {
    Kernel::new("mix", MIX_SRC).params([Param::Buffer, Param::U32, Param::U32]).cpu_twin(|args| {
        let (n, k) = (args.u32(1)? as usize, args.u32(2)?);
        let x = args.buffer_mut::<u32>(0)?;
        if n > x.len() {
            return Err(format!("n = {n} exceeds the buffer ({})", x.len()).into());
        }
        for (i, v) in x[..n].iter_mut().enumerate() {
            *v = mix_ref(*v, k, i);
        }
        Ok(())
    })
}

/// A launch grid covering `n` elements.
pub fn grid(n: usize) -> u32 {
    (n as u32).div_ceil(BLOCK)
}

/// Input value of element `i` of the host input buffer.
pub fn gen(i: usize) -> u32 {
    (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) ^ 0x9e37_79b9
}

/// What a writing CPU callback puts into element `i` instead.
pub fn gen2(i: usize) -> u32 {
    (i as u32).wrapping_mul(0x85eb_ca6b).wrapping_add(0x27d4_eb2f)
}

/// What output elements hold before any task wrote them.
pub const SENTINEL: u32 = 0xDEAD_BEEF;

/// A checksum of a slice (order-sensitive).
pub fn checksum(s: &[u32]) -> u64 {
    s.iter().fold(17u64, |h, &x| h.wrapping_mul(1_000_003).wrapping_add(x as u64))
}

/// Fills `buf[..n]` with `value` from a GPU callback, on either backend: through
/// `GpuCall::sim_buffer` on sim, by `cuMemsetD32Async` on the task's stream on CUDA.
pub fn gpu_fill(call: &mut GpuCall<'_>, buf: &DeviceBuffer<u32>, n: usize, value: u32) -> Result<(), BoxError> {
    if let Some(mut mem) = call.sim_buffer(buf) {
        if call.cuda_stream().is_some() || call.device_ptr(buf).is_some() {
            return Err("sim backend, yet a CUDA stream or device pointer was given".into());
        }
        mem[..n].fill(value);
        return Ok(());
    }
    let stream = call.cuda_stream().ok_or("neither a simulated buffer nor a CUDA stream")?;
    let ptr = call.device_ptr(buf).ok_or("CUDA stream but no device pointer")?;
    // SAFETY: `ptr` is this task's physical copy of `buf` on this GPU, which holds at
    // least `n` u32 (n <= buf.len()); the memset is ordered on the task's own stream.
    let r = unsafe { cudarc::driver::sys::cuMemsetD32Async(ptr, value, n, stream.as_raw().cast()) };
    if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuMemsetD32Async failed: {r:?}").into());
    }
    Ok(())
}
