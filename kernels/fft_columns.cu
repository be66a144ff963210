// Column FFTs for the SETI example (issue 5): the forward transform (e^{-2πi jk/n},
// unnormalised, like cuFFT) of every column of a block of `width` columns over `rows`
// rows, stored row-major (element (r, c) at r * width + c). `rows` is a power of two.
//
// One CUDA block per column. A column of up to SMEM complex elements is transformed in
// shared memory: bit-reversed load, log2(rows) radix-2 decimation-in-time stages,
// natural-order store. A longer column first takes k = log2(rows / SMEM) radix-2
// decimation-in-frequency stages in place in `in` (global memory); that leaves 2^k
// independent sub-transforms of length SMEM, and sub-transform s holds the outputs
// X[bitrev_k(s) + 2^k m], m = 0..SMEM-1, which the shared-memory pass computes and
// stores to `out`. `in` is scratch afterwards.
#define SMEM 4096u
#define LOG2_SMEM 12u

__device__ __forceinline__ float2 cplx(float re, float im) {
    float2 z;
    z.x = re;
    z.y = im;
    return z;
}

__device__ __forceinline__ unsigned bitrev(unsigned v, unsigned bits) {
    return bits == 0 ? 0u : (__brev(v) >> (32u - bits));
}

// a * e^{-iπ j/h}
__device__ __forceinline__ float2 twiddle(float2 a, unsigned j, unsigned h) {
    float s, c;
    sincospif(-(float)j / (float)h, &s, &c);
    return cplx(a.x * c - a.y * s, a.x * s + a.y * c);
}

extern "C" __global__ void fft_columns(float2* out, float2* in, unsigned width, unsigned rows, unsigned log2rows) {
    __shared__ float2 s[SMEM];
    const unsigned c = blockIdx.x;
    if (c >= width) return;
    const unsigned log_l = log2rows < LOG2_SMEM ? log2rows : LOG2_SMEM;
    const unsigned l = 1u << log_l;
    const unsigned k = log2rows - log_l;
    // Decimation in frequency, in global memory, until the pieces fit in shared memory.
    for (unsigned h = rows >> 1; h >= l && h > 0; h >>= 1) {
        for (unsigned t = threadIdx.x; t < rows / 2; t += blockDim.x) {
            const unsigned j = t & (h - 1);
            const unsigned base = (t - j) << 1;
            const unsigned long long i0 = (unsigned long long)(base + j) * width + c;
            const unsigned long long i1 = (unsigned long long)(base + j + h) * width + c;
            const float2 a = in[i0], b = in[i1];
            in[i0] = cplx(a.x + b.x, a.y + b.y);
            in[i1] = twiddle(cplx(a.x - b.x, a.y - b.y), j, h);
        }
        __syncthreads();
    }
    for (unsigned sub = 0; sub < (1u << k); ++sub) {
        for (unsigned q = threadIdx.x; q < l; q += blockDim.x)
            s[bitrev(q, log_l)] = in[(unsigned long long)(sub * l + q) * width + c];
        __syncthreads();
        // Decimation in time, in shared memory.
        for (unsigned half = 1; half < l; half <<= 1) {
            for (unsigned t = threadIdx.x; t < l / 2; t += blockDim.x) {
                const unsigned j = t & (half - 1);
                const unsigned i0 = ((t - j) << 1) + j, i1 = i0 + half;
                const float2 a = s[i0];
                const float2 b = twiddle(s[i1], j, half);
                s[i0] = cplx(a.x + b.x, a.y + b.y);
                s[i1] = cplx(a.x - b.x, a.y - b.y);
            }
            __syncthreads();
        }
        const unsigned r = bitrev(sub, k);
        for (unsigned m = threadIdx.x; m < l; m += blockDim.x)
            out[(unsigned long long)(r + (m << k)) * width + c] = s[m];
        __syncthreads();
    }
}
