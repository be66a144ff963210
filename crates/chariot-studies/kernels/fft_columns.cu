// Column FFTs for the SETI example: the forward transform (e^{-2πi jk/n},
// unnormalised, like cuFFT) of every column of a block of `width` columns over `rows`
// rows, stored row-major (element (r, c) at r * width + c). `rows` is a power of two.
//
// fft_columns (the one the example runs): one CUDA block owns a tile of TC = 2^log2tile
// adjacent columns over all rows, so every global load and store of a warp reads or
// writes whole rows of the tile: TC contiguous complex values, a full 32-byte sector for
// TC >= 4. The column length n is split into p radices, n = L_0 · L_1 ⋯ L_{p-1}, each at
// most LMAX = min(TILE / TC, 2^LOG_TW) points, so that each pass is one round trip
// through shared memory (two passes up to LMAX² rows: 2^20 at TC = 4, 2^16 at TC = 16).
//
// Pass j (stride M = L_{j+1} ⋯ L_{p-1}) is a four-step Cooley-Tukey step on each
// sub-column of L·M rows: for each of its M "lines" (n2 = 0..M-1) an L-point DFT over
// the rows n1·M + n2, n1 = 0..L-1 (radix-2 decimation in time in shared memory, after a
// bit-reversed load), then the twiddle W_{L·M}^{n2·k1}; the result goes back in place
// to row k1·M + n2. Line λ = b·M + n2 of the whole column (b the sub-column) sits at
// rows b·L·M + n1·M + n2. After the p-1 passes in place in `in`, the last pass (M = 1)
// writes line λ's output k to `out` row digrev(λ) + (n / L_{p-1})·k, where digrev
// turns λ's digits k_0 (top bits, L_0) … k_{p-2} around into k_0 + L_0·k_1 + ….
// `in` is scratch afterwards. A block loads B = LMAX / L lines at once (consecutive λ),
// so every pass fills the tile. With `streaming` set, every global load and store is
// cache-streaming (ld/st.global.cs: evict first in L2). Measured on an H100: ordinary
// traffic of this size (4 chunk sizes, 128 MiB at 8192²) leaves the pitched copies that
// come after it 68% slower, even with nothing running beside them, and streaming
// traffic does not (results/nvidia-h100-x1/seti/README.md). Launch: width / TC blocks of any
// size (the example uses 512 threads); log2tile < LOG2_TILE.
//
// fft_columns_strided (kept to measure against: the first kernel): one CUDA block
// per column, radix 2, threads striding over rows `width` apart, so each warp access
// touches 32 rows. Up to SMEM points in shared memory, with decimation-in-frequency
// stages in global memory before that for longer columns.

// Complex values of a block's shared tile (32 KiB).
#define TILE 4096u
#define LOG2_TILE 12u
// The smem stages' twiddles: W_{2^LOG_TW}^m, m < 2^(LOG_TW-1) (8 KiB).
#define LOG_TW 11u
// Elements each thread loads before it stores any: keeps that many reads in flight.
#define IN_FLIGHT 8u

__device__ __forceinline__ float2 cplx(float re, float im) {
    float2 z;
    z.x = re;
    z.y = im;
    return z;
}

__device__ __forceinline__ float2 cmul(float2 a, float2 w) {
    return cplx(a.x * w.x - a.y * w.y, a.x * w.y + a.y * w.x);
}

__device__ __forceinline__ unsigned bitrev(unsigned v, unsigned bits) {
    return bits == 0 ? 0u : (__brev(v) >> (32u - bits));
}

__device__ __forceinline__ float2 load(const float2* p, bool streaming) {
    return streaming ? __ldcs(p) : *p;
}

__device__ __forceinline__ void store(float2* p, float2 v, bool streaming) {
    if (streaming)
        __stcs(p, v);
    else
        *p = v;
}

// e^{-2πi e/2^log_n}, for e < 2^log_n (exact argument for e < 2^24).
__device__ __forceinline__ float2 unit_root(unsigned e, unsigned log_n) {
    float s, c;
    sincospif(-2.0f * ldexpf((float)e, -(int)log_n), &s, &c);
    return cplx(c, s);
}

// Radix log2 of pass j when log2rows is split into p passes as evenly as possible (the
// first log2rows % p passes take one more).
__device__ __forceinline__ unsigned pass_log(unsigned j, unsigned log2rows, unsigned p) {
    return log2rows / p + (j < log2rows % p ? 1u : 0u);
}

extern "C" __global__ void fft_columns(float2* out, float2* in, unsigned width, unsigned rows, unsigned log2rows,
                                       unsigned log2tile, unsigned streaming) {
    __shared__ float2 s[TILE];
    __shared__ float2 tw[1u << (LOG_TW - 1u)];
    const unsigned tid = threadIdx.x, nt = blockDim.x;
    const unsigned tc = 1u << log2tile;
    const unsigned c0 = blockIdx.x << log2tile;
    const bool cs = streaming != 0;
    // Uniform across the block, so no thread leaves before a barrier.
    if (c0 >= width) return;
    const unsigned log_lmax = min(LOG2_TILE - log2tile, LOG_TW);
    const unsigned p = log2rows == 0 ? 1u : (log2rows + log_lmax - 1u) / log_lmax;
    for (unsigned m = tid; m < (1u << (LOG_TW - 1u)); m += nt) tw[m] = unit_root(m, LOG_TW);
    __syncthreads();

    unsigned log_m = log2rows;  // log2 of L·M, the sub-column of this pass
    for (unsigned j = 0; j < p; ++j) {
        const unsigned lg = pass_log(j, log2rows, p);
        const unsigned log_ls = log_m;  // sub-column length L·M
        log_m -= lg;                    // M
        const bool last = j + 1 == p;
        const unsigned l = 1u << lg, m_mask = (1u << log_m) - 1u;
        // Lines per load: fill the tile, but no more than the column has.
        const unsigned lb = min(log_lmax - lg, log2rows - lg);
        const unsigned b = 1u << lb;
        const unsigned shift = log2tile + lb;  // element e = (n1, u, col), col fastest
        const unsigned elems = l << shift;
        for (unsigned g = 0; g < (rows >> lg) >> lb; ++g) {
            // Load B lines, the DFT index bit-reversed.
            for (unsigned e0 = 0; e0 < elems; e0 += IN_FLIGHT * nt) {
                float2 v[IN_FLIGHT];
#pragma unroll
                for (unsigned q = 0; q < IN_FLIGHT; ++q) {
                    const unsigned e = e0 + q * nt + tid;
                    if (e < elems) {
                        const unsigned col = e & (tc - 1u), u = (e >> log2tile) & (b - 1u), n1 = e >> shift;
                        const unsigned lam = (g << lb) + u;
                        const unsigned long long row =
                            ((unsigned long long)(lam >> log_m) << log_ls) + ((unsigned long long)n1 << log_m) + (lam & m_mask);
                        v[q] = load(in + row * width + c0 + col, cs);
                    }
                }
#pragma unroll
                for (unsigned q = 0; q < IN_FLIGHT; ++q) {
                    const unsigned e = e0 + q * nt + tid;
                    if (e < elems) {
                        const unsigned col = e & (tc - 1u), u = (e >> log2tile) & (b - 1u), n1 = e >> shift;
                        s[(((bitrev(n1, lg) << lb) + u) << log2tile) + col] = v[q];
                    }
                }
            }
            __syncthreads();
            // Radix-2 decimation in time over n1, for every line and column at once.
            for (unsigned lh = 0; lh < lg; ++lh) {
                const unsigned half = 1u << lh;
                for (unsigned t = tid; t < elems / 2u; t += nt) {
                    const unsigned col = t & (tc - 1u), u = (t >> log2tile) & (b - 1u), q = t >> shift;
                    const unsigned jj = q & (half - 1u);
                    const unsigned i0 = ((q - jj) << 1) + jj;
                    const unsigned a0 = (((i0) << lb) + u) * tc + col, a1 = (((i0 + half) << lb) + u) * tc + col;
                    const float2 x = s[a0];
                    const float2 y = cmul(s[a1], tw[jj << (LOG_TW - 1u - lh)]);
                    s[a0] = cplx(x.x + y.x, x.y + y.y);
                    s[a1] = cplx(x.x - y.x, x.y - y.y);
                }
                __syncthreads();
            }
            // Store: in place with the pass's twiddle, or to `out` in digit-reversed rows.
            for (unsigned e = tid; e < elems; e += nt) {
                const unsigned col = e & (tc - 1u), u = (e >> log2tile) & (b - 1u), k1 = e >> shift;
                const unsigned lam = (g << lb) + u;
                const float2 z = s[e];
                if (!last) {
                    const unsigned long long row =
                        ((unsigned long long)(lam >> log_m) << log_ls) + ((unsigned long long)k1 << log_m) + (lam & m_mask);
                    store(in + row * width + c0 + col, cmul(z, unit_root((lam & m_mask) * k1, log_ls)), cs);
                } else {
                    // λ's digits, most significant first, are k_0 … k_{p-2}.
                    unsigned rev = 0, pos = 0, hi = log2rows - lg;
                    for (unsigned i = 0; i + 1 < p; ++i) {
                        const unsigned li = pass_log(i, log2rows, p);
                        hi -= li;
                        rev |= ((lam >> hi) & ((1u << li) - 1u)) << pos;
                        pos += li;
                    }
                    const unsigned long long row = rev + ((unsigned long long)k1 << (log2rows - lg));
                    store(out + row * width + c0 + col, z, cs);
                }
            }
            __syncthreads();
        }
    }
}

// ---------------------------------------------------------------------------------
// The first kernel, one block per column (strided), kept for the diagnosis.

#define SMEM 4096u
#define LOG2_SMEM 12u

// a * e^{-iπ j/h}
__device__ __forceinline__ float2 twiddle(float2 a, unsigned j, unsigned h) {
    float s, c;
    sincospif(-(float)j / (float)h, &s, &c);
    return cplx(a.x * c - a.y * s, a.x * s + a.y * c);
}

extern "C" __global__ void fft_columns_strided(float2* out, float2* in, unsigned width, unsigned rows,
                                               unsigned log2rows) {
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
