// The kernels of the image-processing DAG, after the IMG
// benchmark of GrCUDA (b8): per image, copies blurred at three frequencies, two Sobel
// edge masks, the large mask's maximum and minimum, the mask extended, a sharpened
// copy, and two combines. Written for this study; the CPU reference is
// src/images/reference.rs.
//
// Float images, square, n × n, row-major. Pixels outside the image count as zero (the
// filters skip them). Arithmetic uses the explicitly rounded intrinsics (__fmul_rn,
// __fadd_rn, __fsub_rn, __fdiv_rn), which the compiler never fuses into FMAs, so each
// kernel does exactly the operations of the CPU reference in the same order and its
// results match it to the last bit, but for the Gaussian weights (computed in double
// with the device's exp, which may differ by an ulp from the host's).
//
// 2-D kernels: blocks of 32 × 8 threads, x along a row; 1-D kernels: blockDim.x a
// multiple of 32 (the reductions use every warp), grid-stride loops.

#define MAX_DIAMETER 9

// Element indices (NVRTC has no <cstddef>, so no size_t).
typedef unsigned long long idx_t;

__device__ __forceinline__ float pos_inf() { return __int_as_float((int)0x7f800000u); }
__device__ __forceinline__ float neg_inf() { return __int_as_float((int)0xff800000u); }

// Gaussian blur of `in` into `out` with a diameter × diameter kernel of standard
// deviation sigma, centred (radius diameter / 2), normalised to sum 1. diameter is odd
// and at most MAX_DIAMETER. The weights are computed per block in double, in shared
// memory: w[i][j] = exp(-((i - r)^2 + (j - r)^2) / (2 sigma^2)) / sum, summed in
// row-major order, then rounded to float.
extern "C" __global__ void gaussian_blur(const float* __restrict__ in, float* __restrict__ out,
                                         unsigned int n, int diameter, float sigma) {
    __shared__ double raw[MAX_DIAMETER * MAX_DIAMETER];
    __shared__ float w[MAX_DIAMETER * MAX_DIAMETER];
    const int d = diameter < 1 ? 1 : (diameter > MAX_DIAMETER ? MAX_DIAMETER : diameter);
    const int r = d / 2;
    const int taps = d * d;
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    const double s = (double)sigma;
    if (t < taps) {
        const double di = (double)(t / d - r), dj = (double)(t % d - r);
        raw[t] = exp(-0.5 * (di * di + dj * dj) / (s * s));
    }
    __syncthreads();
    if (t < taps) {
        double sum = 0.0;
        for (int k = 0; k < taps; ++k) sum += raw[k];
        w[t] = (float)(raw[t] / sum);
    }
    __syncthreads();
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int side = (int)n;
    if (x >= side || y >= side) return;
    float acc = 0.0f;
    for (int dy = -r; dy <= r; ++dy) {
        const int yy = y + dy;
        if (yy < 0 || yy >= side) continue;
        const float* row = in + (idx_t)yy * side;
        for (int dx = -r; dx <= r; ++dx) {
            const int xx = x + dx;
            if (xx < 0 || xx >= side) continue;
            acc = __fadd_rn(acc, __fmul_rn(w[(dy + r) * d + (dx + r)], row[xx]));
        }
    }
    out[(idx_t)y * side + x] = acc;
}

// Sobel edge magnitude: sqrt(gx^2 + gy^2) with gx = [-1 0 1; -2 0 2; -1 0 1] and gy its
// transpose, over the 3 × 3 neighbourhood (rows dy = -1..1, columns dx = -1..1).
extern "C" __global__ void sobel(const float* __restrict__ in, float* __restrict__ out, unsigned int n) {
    const float kx[9] = {-1.0f, 0.0f, 1.0f, -2.0f, 0.0f, 2.0f, -1.0f, 0.0f, 1.0f};
    const float ky[9] = {-1.0f, -2.0f, -1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 2.0f, 1.0f};
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int side = (int)n;
    if (x >= side || y >= side) return;
    float gx = 0.0f, gy = 0.0f;
#pragma unroll
    for (int dy = -1; dy <= 1; ++dy) {
        const int yy = y + dy;
        if (yy < 0 || yy >= side) continue;
#pragma unroll
        for (int dx = -1; dx <= 1; ++dx) {
            const int xx = x + dx;
            if (xx < 0 || xx >= side) continue;
            const float v = in[(idx_t)yy * side + xx];
            const int k = (dy + 1) * 3 + (dx + 1);
            gx = __fadd_rn(gx, __fmul_rn(kx[k], v));
            gy = __fadd_rn(gy, __fmul_rn(ky[k], v));
        }
    }
    out[(idx_t)y * side + x] = sqrtf(__fadd_rn(__fmul_rn(gx, gx), __fmul_rn(gy, gy)));
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_min(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The block's maximum, returned to every thread (blockDim.x a multiple of 32, at most
// 1024; `scratch` holds 32 floats of shared memory, free again when this returns).
__device__ float block_max(float v, float* scratch) {
    const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = warp_max(lane < warps ? scratch[lane] : neg_inf());
    __syncthreads();
    return v;
}

// The block's minimum, as block_max.
__device__ float block_min(float v, float* scratch) {
    const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_min(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = warp_min(lane < warps ? scratch[lane] : pos_inf());
    __syncthreads();
    return v;
}

// Per-block maxima of in[0..count): partial[blockIdx.x] for each block of the grid
// (-inf for a block that saw no element). `extend` reduces the partials, so no atomics
// and no reset between images.
extern "C" __global__ void reduce_max(const float* __restrict__ in, float* __restrict__ partial, unsigned int count) {
    __shared__ float scratch[32];
    float m = neg_inf();
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (idx_t)gridDim.x * blockDim.x)
        m = fmaxf(m, in[i]);
    m = block_max(m, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;
}

// Per-block minima, as reduce_max (+inf for a block that saw no element).
extern "C" __global__ void reduce_min(const float* __restrict__ in, float* __restrict__ partial, unsigned int count) {
    __shared__ float scratch[32];
    float m = pos_inf();
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (idx_t)gridDim.x * blockDim.x)
        m = fminf(m, in[i]);
    m = block_min(m, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;
}

// Extends the mask in place: with mx and mn the maximum and minimum of the `parts`
// partials, mask[i] = min(1, 5 (mask[i] - mn) / (mx - mn)). Each block reduces the
// partials itself.
extern "C" __global__ void extend(float* __restrict__ mask, const float* __restrict__ max_partial,
                                  const float* __restrict__ min_partial, unsigned int parts, unsigned int count) {
    __shared__ float scratch[32];
    float mx = neg_inf(), mn = pos_inf();
    for (unsigned int p = threadIdx.x; p < parts; p += blockDim.x) {
        mx = fmaxf(mx, max_partial[p]);
        mn = fminf(mn, min_partial[p]);
    }
    mx = block_max(mx, scratch);
    mn = block_min(mn, scratch);
    const float range = __fsub_rn(mx, mn);
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (idx_t)gridDim.x * blockDim.x) {
        const float t = __fdiv_rn(__fmul_rn(5.0f, __fsub_rn(mask[i], mn)), range);
        mask[i] = t > 1.0f ? 1.0f : t;
    }
}

// Unsharp masking: out = clamp(x (1 + amount) - blurred amount, 0, 1).
extern "C" __global__ void unsharpen(const float* __restrict__ x, const float* __restrict__ blurred,
                                     float* __restrict__ out, float amount, unsigned int count) {
    const float gain = __fadd_rn(1.0f, amount);
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (idx_t)gridDim.x * blockDim.x) {
        float t = __fsub_rn(__fmul_rn(x[i], gain), __fmul_rn(blurred[i], amount));
        t = t > 1.0f ? 1.0f : t;
        out[i] = t < 0.0f ? 0.0f : t;
    }
}

// out = x mask + y (1 - mask).
extern "C" __global__ void combine(const float* __restrict__ x, const float* __restrict__ y,
                                   const float* __restrict__ mask, float* __restrict__ out, unsigned int count) {
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (idx_t)gridDim.x * blockDim.x) {
        const float m = mask[i];
        out[i] = __fadd_rn(__fmul_rn(x[i], m), __fmul_rn(y[i], __fsub_rn(1.0f, m)));
    }
}
