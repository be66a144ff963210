//! The kernels of `kernels/images.cu` as chariot [`Kernel`]s: parameters, CPU twins
//! (which call [`super::reference`]) and a simulated cost, and the launch shapes every
//! implementation uses.

use super::reference;
use super::Filter;
use chariot::kernel::{Dim3, LaunchShape, ScalarArgs, TwinArgs};
use chariot::{BoxError, Kernel, Param};
use std::time::Duration;

/// CUDA C of the image kernels.
pub const SOURCE: &str = include_str!("../../kernels/images.cu");

/// Threads per block of the 1-D kernels (a multiple of 32: the reductions use warps).
pub const BLOCK_1D: u32 = 256;

/// Threads per block of the 2-D kernels (blur, Sobel): 32 along a row, 8 rows.
pub const BLOCK_2D: (u32, u32) = (32, 8);

/// Blocks of the reductions, so partials per image of the maximum and the minimum.
pub const REDUCE_BLOCKS: u32 = 256;

/// Bytes per nanosecond the simulator charges a kernel's memory traffic (about what
/// an H100 streams), and its fixed cost per launch.
const SIM_BYTES_PER_NS: f64 = 2500.0;
const SIM_LAUNCH_NS: f64 = 3000.0;

/// Grid of a 2-D kernel over an `n × n` image.
pub fn grid_2d(n: usize) -> Dim3 {
    Dim3 { x: (n as u32).div_ceil(BLOCK_2D.0), y: (n as u32).div_ceil(BLOCK_2D.1), z: 1 }
}

/// Grid of a 1-D elementwise kernel over `count` pixels (one pixel a thread, at
/// least one block).
pub fn grid_1d(count: usize) -> u32 {
    (count as u32).div_ceil(BLOCK_1D).max(1)
}

/// A simulated cost of `bytes_per_px` bytes of traffic per pixel, the pixels being
/// scalar argument `count_arg` (squared where `square`).
fn cost(bytes_per_px: f64, count_arg: usize, square: bool) -> impl Fn(&LaunchShape, &ScalarArgs<'_>) -> Duration {
    move |_, s| {
        let c = s.u32(count_arg).unwrap_or(0) as f64;
        let px = if square { c * c } else { c };
        Duration::from_nanos((SIM_LAUNCH_NS + px * bytes_per_px / SIM_BYTES_PER_NS) as u64)
    }
}

/// A buffer argument's first `len` elements, copied (for twins that read several
/// buffers while writing another).
fn copied(a: &TwinArgs<'_>, i: usize, len: usize) -> Result<Vec<f32>, BoxError> {
    let b = a.buffer::<f32>(i)?;
    if b.len() < len {
        return Err(format!("argument {i} holds {} elements, the kernel needs {len}", b.len()).into());
    }
    Ok(b[..len].to_vec())
}

/// Argument `i`'s buffer, writable, with at least `len` elements.
fn out<'a>(a: &'a mut TwinArgs<'_>, i: usize, len: usize) -> Result<&'a mut [f32], BoxError> {
    let b = a.buffer_mut::<f32>(i)?;
    let have = b.len();
    b.get_mut(..len).ok_or_else(|| format!("argument {i} holds {have} elements, the kernel writes {len}").into())
}

/// `gaussian_blur(const float* in, float* out, unsigned n, int diameter, float sigma)`;
/// grid [`grid_2d`], block [`BLOCK_2D`].
pub fn gaussian_blur() -> Kernel {
    Kernel::new("gaussian_blur", SOURCE)
        .params([Param::Buffer, Param::Buffer, Param::U32, Param::I32, Param::F32])
        .cpu_twin(|a| {
            let n = a.u32(2)? as usize;
            let filter = Filter { diameter: a.i32(3)?.clamp(1, 9) as usize, sigma: a.f32(4)? };
            let input = copied(a, 0, n * n)?;
            reference::gaussian_blur(&input, out(a, 1, n * n)?, n, filter);
            Ok(())
        })
        .sim_cost(cost(8.0, 2, true))
}

/// `sobel(const float* in, float* out, unsigned n)`; grid [`grid_2d`], block [`BLOCK_2D`].
pub fn sobel() -> Kernel {
    Kernel::new("sobel", SOURCE)
        .params([Param::Buffer, Param::Buffer, Param::U32])
        .cpu_twin(|a| {
            let n = a.u32(2)? as usize;
            let input = copied(a, 0, n * n)?;
            reference::sobel(&input, out(a, 1, n * n)?, n);
            Ok(())
        })
        .sim_cost(cost(8.0, 2, true))
}

/// The twin of a reduction: per-block partials of argument 0 into argument 1.
fn reduction(a: &mut TwinArgs<'_>, f: fn(&[f32], &mut [f32], usize, usize)) -> Result<(), BoxError> {
    let count = a.u32(2)? as usize;
    let shape = a.shape();
    let (blocks, threads) = (shape.grid.x as usize, shape.block.x as usize);
    let input = copied(a, 0, count)?;
    f(&input, out(a, 1, blocks)?, blocks, threads);
    Ok(())
}

/// `reduce_max(const float* in, float* partial, unsigned count)`: one partial per
/// block; grid [`REDUCE_BLOCKS`], block [`BLOCK_1D`].
pub fn reduce_max() -> Kernel {
    Kernel::new("reduce_max", SOURCE)
        .params([Param::Buffer, Param::Buffer, Param::U32])
        .cpu_twin(|a| reduction(a, reference::partial_max))
        .sim_cost(cost(4.0, 2, false))
}

/// `reduce_min(const float* in, float* partial, unsigned count)`, as [`reduce_max`].
pub fn reduce_min() -> Kernel {
    Kernel::new("reduce_min", SOURCE)
        .params([Param::Buffer, Param::Buffer, Param::U32])
        .cpu_twin(|a| reduction(a, reference::partial_min))
        .sim_cost(cost(4.0, 2, false))
}

/// `extend(float* mask, const float* max_partial, const float* min_partial, unsigned
/// parts, unsigned count)`; grid [`grid_1d`], block [`BLOCK_1D`].
pub fn extend() -> Kernel {
    Kernel::new("extend", SOURCE)
        .params([Param::Buffer, Param::Buffer, Param::Buffer, Param::U32, Param::U32])
        .cpu_twin(|a| {
            let (parts, count) = (a.u32(3)? as usize, a.u32(4)? as usize);
            let (mx, mn) = (copied(a, 1, parts)?, copied(a, 2, parts)?);
            reference::extend(out(a, 0, count)?, &mx, &mn);
            Ok(())
        })
        .sim_cost(cost(8.0, 4, false))
}

/// `unsharpen(const float* x, const float* blurred, float* out, float amount, unsigned
/// count)`; grid [`grid_1d`], block [`BLOCK_1D`].
pub fn unsharpen() -> Kernel {
    Kernel::new("unsharpen", SOURCE)
        .params([Param::Buffer, Param::Buffer, Param::Buffer, Param::F32, Param::U32])
        .cpu_twin(|a| {
            let (amount, count) = (a.f32(3)?, a.u32(4)? as usize);
            let (x, b) = (copied(a, 0, count)?, copied(a, 1, count)?);
            reference::unsharpen(&x, &b, out(a, 2, count)?, amount);
            Ok(())
        })
        .sim_cost(cost(12.0, 4, false))
}

/// `combine(const float* x, const float* y, const float* mask, float* out, unsigned
/// count)`; grid [`grid_1d`], block [`BLOCK_1D`].
pub fn combine() -> Kernel {
    Kernel::new("combine", SOURCE)
        .params([Param::Buffer, Param::Buffer, Param::Buffer, Param::Buffer, Param::U32])
        .cpu_twin(|a| {
            let count = a.u32(4)? as usize;
            let (x, y, m) = (copied(a, 0, count)?, copied(a, 1, count)?, copied(a, 2, count)?);
            reference::combine(&x, &y, &m, out(a, 3, count)?);
            Ok(())
        })
        .sim_cost(cost(16.0, 4, false))
}

/// All seven kernels, in the order of [`super::KernelId`].
pub fn all() -> [Kernel; 7] {
    [gaussian_blur(), sobel(), reduce_max(), reduce_min(), extend(), unsharpen(), combine()]
}
