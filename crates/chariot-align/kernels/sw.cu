// Smith-Waterman database search (chariot-align): local alignment scores with
// a substitution matrix and affine gaps (a gap of length k costs open + k*extend),
// Gotoh's recurrence, no traceback. Three kernels, the same scores:
//   sw_search      the portable kernel: 32-bit integers, one subject per lane group;
//   sw_search_dpx  16-bit scores packed two per 32-bit register, two subjects per lane
//                  group, with Hopper's DPX instructions (sm_90; the same source
//                  compiles for older GPUs, whose DPX functions are emulated); a
//                  subject whose 16-bit score may have saturated is aligned again by the
//                  32-bit pass, in the same launch;
//   sw_search_qp   sw_search_dpx's arithmetic for two runs of queries against one
//                  subject per lane group (a query pair: see its note below), with its
//                  own parameters.
//
// Layout of one chunk (packed by the file-read callback): u32 offsets[nseq + 1] of the
// subjects (sorted longest first), then at byte res_off the residues, one code a byte.
// Profile of one query: signed char prof[32][mpad] (row = subject letter, column =
// query position; padded positions hold a large negative score (-64), which cannot
// raise any score). Scores go to scores[score_off + subject].
//
// Design: a group of `group` lanes (a power of two <= 32) aligns one subject. The query
// is cut in strips of R rows (the `strip` argument: 16 for queries of at most the host's
// SHORT_QUERY residues, 32 with at most 8 lanes for longer ones); lane g takes strips g,
// g + group, ... (one pass per group*R rows). Within a pass the lanes run as a
// wavefront: at step t lane g does column t - g of its strip, getting the bottom row of
// the strip above (H, F) from lane g - 1 by a shuffle; lane 0 reads it from `scratch`
// (the previous pass's bottom row, written by the last lane). A strip's H and E stay in
// registers. The query profile is staged in shared memory, qt <= SW_QT rows at a time,
// so any query length works; any subject length works (a longer subject just takes
// longer). Shared memory also holds a pad row (qt bytes of -64) after the tile's SW_A
// letter rows.
//
// sw_search_dpx keeps that structure, but lane group k aligns subjects 2k (low
// halfword) and 2k + 1 (high halfword) at once: every H, E, F of a strip, the values
// shuffled between lanes and the scratch row hold both subjects' 16-bit values in one
// 32-bit word, and one instruction updates both: per cell pair
//   the pair's two scores                                prmt                      (ALU pipe)
//   E = max(E - extend, H_left - open - extend)          __viaddmax_s16x2          (ALU)
//   F = max(F - extend, H_up - open - extend)            __viaddmax_s16x2          (ALU)
//   H = max(F, E, H_diag + score, 0)                     __vadd2 (FMA pipe), __vimax3_s16x2_relu (ALU)
//   H - open - extend (for the next row and column)      __vadd2 (FMA: H >= 0, no wrap)
//   best = max(best, H)                                  __vimax_s16x2_relu (ptxas pairs rows in a __vimax3)
// (with 32-row strips E is computed for the next column as each H is: the same values,
// one array of registers fewer). The ALU pipe issues at half the rate of the scheduler
// and bounds the loop (an H200 under Nsight Compute: 86 % busy when every add was
// fused into a DPX max), so each add that needs no max runs on the FMA pipe; ptxas fuses
// an add into a following two-way max, so H's three-way max takes the sum last, where
// ptxas leaves it. Every lane computes every step, with no branch around the
// registers' updates (a branch costs a copy of every register it merges): a column
// outside a subject, before the lane's first column or past the pair's end, reads the pad
// row, which leaves a lane's starting values as they are before its first column and
// cannot raise its best after the end. Two arrays of H take turns, step by step, so no
// step copies H (hence an even number of steps: one more past the end when odd).
// The two subjects' scores come from the same int8 profile tile (16-byte loads, then one
// byte permute with sign extension per row). Subjects are sorted longest first, so the
// two of a pair have about the same length; the shorter one's columns past its end score
// -64 (as padded query rows do), which cannot raise its score.
// Saturation: E and F never fall below -(open + extend) - extend (E and F start at
// -(open + extend), which is exact), so nothing wraps downwards. Upwards, no value
// passes 32767 before some H reaches sat = 32767 - (the largest profile score): until
// then every cell is exact. So a subject whose 16-bit best is < sat has its exact score;
// one whose best reached sat (values past it may wrap, but best is a running max and
// stays >= sat) is marked, and the block runs the 32-bit pass for the marked subjects
// only (none, almost always: the branch costs two __syncthreads_or).
//
// The host compiles each kernel alone: it puts `#define SW_ONLY_PORTABLE`,
// `#define SW_ONLY_DPX` or `#define SW_ONLY_QP` before this source, so NVRTC builds only
// the kernel it loads.
#define SW_A 32
#define SW_QT 1024
#define SW_NEG (-(1 << 29))
#define SW_PAD4 0xC0C0C0C0u  // four padded profile bytes: -64 each (the host's PAD)

// Stages rows [t0, t0 + tl) of the profile in shared memory (all threads of the block).
__device__ __forceinline__ void sw_stage_tile(signed char* sprof, const signed char* prof, unsigned mpad,
                                              unsigned qt, unsigned t0, unsigned tl)
{
    __syncthreads();
    const unsigned v = tl / 16;
    for (unsigned k = threadIdx.x; k < SW_A * v; k += blockDim.x) {
        const unsigned a = k / v, r = k - a * v;
        reinterpret_cast<int4*>(sprof + a * qt)[r] = reinterpret_cast<const int4*>(prof + (size_t)a * mpad + t0)[r];
    }
    for (unsigned r = threadIdx.x; r < v; r += blockDim.x)
        reinterpret_cast<uint4*>(sprof + SW_A * qt)[r] = make_uint4(SW_PAD4, SW_PAD4, SW_PAD4, SW_PAD4);
    __syncthreads();
}

// The passes over a query's `mpad` rows, tile by tile: `stage(t0, tl)` stages the tile of
// `tl` rows from row t0 (every thread of the block calls it, and it synchronizes), then
// `pass(t0, p0)` runs each pass of `rows_per_pass` rows from row t0 + p0 over that tile.
template <class Stage, class Pass>
__device__ __forceinline__ void sw_each_pass(unsigned mpad, unsigned qt, unsigned rows_per_pass, const Stage& stage,
                                             const Pass& pass)
{
    for (unsigned t0 = 0; t0 < mpad; t0 += qt) {
        const unsigned tl = min(qt, mpad - t0);
        stage(t0, tl);
        for (unsigned p0 = 0; p0 < tl; p0 += rows_per_pass) pass(t0, p0);
    }
}

// The 32-bit pass: lane g of a group of `group` lanes aligns subject s[0, n) (n = 0: the
// lane only takes part in the shuffles and barriers), with the subject's scratch row sc.
// Every thread of the block must call it (it stages profile tiles with __syncthreads).
// Returns the subject's score on every lane of the group.
template <int R>
__device__ __forceinline__ int sw_pass32(signed char* sprof, const signed char* prof, unsigned mpad, unsigned qt,
                                         unsigned group, unsigned g, const unsigned char* s, unsigned n, int2* sc,
                                         int gap_oe, int gap_e)
{
    unsigned nw = n;  // longest subject of the warp: the loop bound all lanes share
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) nw = max(nw, __shfl_xor_sync(0xffffffffu, nw, o));
    const unsigned rows_per_pass = group * R;
    int best = 0;
    auto stage = [&](unsigned t0, unsigned tl) { sw_stage_tile(sprof, prof, mpad, qt, t0, tl); };
    sw_each_pass(mpad, qt, rows_per_pass, stage, [&](unsigned t0, unsigned p0) {
        const unsigned r0 = p0 + g * R;
        const bool top_row = (t0 + p0) == 0;
        int h[R], e[R];
        #pragma unroll
        for (int r = 0; r < R; ++r) { h[r] = 0; e[r] = SW_NEG; }
        int diag = 0, out_h = 0, out_f = SW_NEG;
        const unsigned steps = nw + group - 1;
        for (unsigned t = 0; t < steps; ++t) {
            int in_h = __shfl_up_sync(0xffffffffu, out_h, 1, group);
            int in_f = __shfl_up_sync(0xffffffffu, out_f, 1, group);
            const int j = (int)t - (int)g;
            if (j >= 0 && j < (int)n) {
                if (g == 0) {
                    if (top_row) { in_h = 0; in_f = SW_NEG; }
                    else { const int2 b = sc[j]; in_h = b.x; in_f = b.y; }
                }
                const unsigned c = s[j];
                int pw[R / 4];
                #pragma unroll
                for (int k = 0; k < R / 16; ++k) {
                    const int4 pv = reinterpret_cast<const int4*>(sprof + c * qt + r0)[k];
                    pw[4 * k] = pv.x; pw[4 * k + 1] = pv.y; pw[4 * k + 2] = pv.z; pw[4 * k + 3] = pv.w;
                }
                int f = in_f, hup = in_h, hd = diag;
                #pragma unroll
                for (int r = 0; r < R; ++r) {
                    const int w = (pw[r >> 2] << (24 - 8 * (r & 3))) >> 24;  // signed byte r
                    const int en = max(e[r] - gap_e, h[r] - gap_oe);
                    f = max(f - gap_e, hup - gap_oe);
                    const int hn = max(max(hd + w, 0), max(en, f));
                    hd = h[r];
                    h[r] = hn;
                    e[r] = en;
                    hup = hn;
                    best = max(best, hn);
                }
                diag = in_h;
                out_h = hup;
                out_f = f;
                if (g == group - 1) sc[j] = make_int2(hup, f);
            }
        }
        __syncwarp();
    });
    for (unsigned o = group >> 1; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(0xffffffffu, best, o, group));
    return best;
}

#if !defined(SW_ONLY_DPX) && !defined(SW_ONLY_QP)
// `sat` is sw_search_dpx's saturation threshold; the portable kernel has no use for it.
extern "C" __global__ void __launch_bounds__(256) sw_search(
    const unsigned char* __restrict__ chunk, unsigned nseq, unsigned res_off,
    const signed char* __restrict__ profile, unsigned prof_off, unsigned mpad, unsigned group,
    int gap_oe, int gap_e, int2* __restrict__ scratch, int* __restrict__ scores, unsigned score_off,
    unsigned qt, unsigned long long cells, int sat, unsigned strip)
{
    // qt = min(SW_QT, mpad): rows of a profile tile; dynamic shared memory SW_A * qt bytes.
    (void)cells;  // for the simulator's cost model only
    (void)sat;
    extern __shared__ __align__(16) signed char sprof[];
    const unsigned* offs = reinterpret_cast<const unsigned*>(chunk);
    const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned g = threadIdx.x & (group - 1);
    const unsigned subj = gtid / group;
    unsigned start = 0, n = 0;
    if (subj < nseq) {
        start = offs[subj];
        n = offs[subj + 1] - start;
    }
    const unsigned char* s = chunk + res_off + start;
    const signed char* prof = profile + prof_off;
    int2* sc = scratch + start;
    const int best = strip == 16 ? sw_pass32<16>(sprof, prof, mpad, qt, group, g, s, n, sc, gap_oe, gap_e)
                                 : sw_pass32<32>(sprof, prof, mpad, qt, group, g, s, n, sc, gap_oe, gap_e);
    if (subj < nseq && g == 0) scores[score_off + subj] = best;
}
#endif  // !SW_ONLY_DPX && !SW_ONLY_QP

#ifndef SW_ONLY_PORTABLE
// The 32-bit pass as one out-of-line copy for the DPX kernel's two rare calls (less code
// to compile and no registers taken from the 16-bit loop).
template <int R>
__device__ __noinline__ int sw_pass32_call(signed char* sprof, const signed char* prof, unsigned mpad, unsigned qt,
                                           unsigned group, unsigned g, const unsigned char* s, unsigned n, int2* sc,
                                           int gap_oe, int gap_e)
{
    return sw_pass32<R>(sprof, prof, mpad, qt, group, g, s, n, sc, gap_oe, gap_e);
}

// Packed 16-bit operations (two signed halfwords a word): DPX instructions on sm_90 and
// later, the same results from older SIMD intrinsics elsewhere.
// max(a + b, c), each halfword (the sum wraps, as the DPX instruction's does).
__device__ __forceinline__ unsigned sw_addmax2(unsigned a, unsigned b, unsigned c)
{
#if __CUDA_ARCH__ >= 900
    return __viaddmax_s16x2(a, b, c);
#else
    return __vmaxs2(__vadd2(a, b), c);
#endif
}

// max(a, b, 0), each halfword.
__device__ __forceinline__ unsigned sw_max2_relu(unsigned a, unsigned b)
{
#if __CUDA_ARCH__ >= 900
    return __vimax_s16x2_relu(a, b);
#else
    return __vmaxs2(__vmaxs2(a, b), 0u);
#endif
}

// a + b, each halfword (wrapping). On sm_90 this runs on the FMA pipe, beside the DPX
// operations on the ALU pipe, which bounds the kernel: every add that needs no max is
// one of these.
__device__ __forceinline__ unsigned sw_add2(unsigned a, unsigned b)
{
    return __vadd2(a, b);
}

// max(a, b, c, 0), each halfword.
__device__ __forceinline__ unsigned sw_max3_relu(unsigned a, unsigned b, unsigned c)
{
#if __CUDA_ARCH__ >= 900
    return __vimax3_s16x2_relu(a, b, c);
#else
    return __vmaxs2(__vmaxs2(__vmaxs2(a, b), c), 0u);
#endif
}

// v in both halfwords.
__device__ __forceinline__ unsigned sw_splat2(int v)
{
    return ((unsigned)v & 0xFFFFu) * 0x10001u;
}

// The rows of one column step of a lane's strip of R rows, two 16-bit alignments at once
// (two subjects, or two queries): `score(r)` gives row r's packed pair of scores; H of the
// column before in hp, this column's into hc; `diag` is H of the row above, one column
// back; `f` and `hgu` come in as F and H - open - extend of the row above and go out as
// the strip's last row's. 16-row strips keep hg[r] = h[r] - open - extend and compute E
// before H (one dependency less a cell); 32-row strips have no registers for a third
// array: e[r] is then E of row r's next cell, updated as H is computed (the same values).
template <int R, class Score>
__device__ __forceinline__ void sw_dpx_rows(const Score& score, unsigned diag, const unsigned (&hp)[R],
                                            unsigned (&hc)[R], unsigned (&e)[R], unsigned (&hg)[R <= 16 ? R : 1],
                                            unsigned& f, unsigned& hgu, unsigned& best, unsigned ngoe2, unsigned nge2)
{
    #pragma unroll
    for (int r = 0; r < R; ++r) {
        const unsigned w = score(r);
        const unsigned hd = r == 0 ? diag : hp[r - 1];
        if constexpr (R <= 16) {
            const unsigned en = sw_addmax2(e[r], nge2, hg[r]);
            f = sw_addmax2(f, nge2, hgu);
            hc[r] = sw_max3_relu(f, en, sw_add2(hd, w));  // the sum last: see the design note
            e[r] = en;
            hgu = sw_add2(hc[r], ngoe2);
            hg[r] = hgu;
        } else {
            f = sw_addmax2(f, nge2, hgu);
            hc[r] = sw_max3_relu(f, e[r], sw_add2(hd, w));
            hgu = sw_add2(hc[r], ngoe2);
            e[r] = sw_addmax2(e[r], nge2, hgu);
        }
        best = sw_max2_relu(best, hc[r]);
    }
}

#ifndef SW_ONLY_QP
// Signed byte k of a in the low halfword and signed byte k of b in the high one, each
// sign-extended: PTX prmt, whose selector nibble 8 | i copies the sign of byte i.
// sel = k | (8 | k) << 4 | (4 + k) << 8 | (12 + k) << 12 = 0xC480 + 0x1111 * k.
__device__ __forceinline__ unsigned sw_pair2(unsigned a, unsigned b, unsigned sel)
{
    unsigned d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}

// The DPX lane's passes over the query (R rows a strip, `group` lanes a pair of
// subjects): its running best of both subjects' 16-bit H (see the design note). Every
// thread of the block calls it (it stages profile tiles with __syncthreads).
template <int R>
__device__ __forceinline__ unsigned sw_dpx_passes(signed char* sprof, const signed char* prof, unsigned mpad,
                                                  unsigned qt, unsigned group, unsigned g, unsigned nw, unsigned np,
                                                  unsigned na, unsigned nb, const unsigned char* s_a,
                                                  const unsigned char* s_b, uint2* sc, unsigned ngoe2, unsigned nge2)
{
    const unsigned rows_per_pass = group * R;
    unsigned best = 0;
    auto stage = [&](unsigned t0, unsigned tl) { sw_stage_tile(sprof, prof, mpad, qt, t0, tl); };
    sw_each_pass(mpad, qt, rows_per_pass, stage, [&](unsigned t0, unsigned p0) {
        const unsigned r0 = p0 + g * R;
        const bool top_row = (t0 + p0) == 0;
        // H in two arrays taking turns, E, and with 16-row strips H - open - extend (see
        // sw_dpx_rows). E starts at -(open + extend), which is exact (see above).
        unsigned h0[R], h1[R], e[R], hg[R <= 16 ? R : 1];
        #pragma unroll
        for (int r = 0; r < R; ++r) { h0[r] = 0; h1[r] = 0; e[r] = ngoe2; if constexpr (R <= 16) hg[r] = ngoe2; }
        unsigned diag = 0, out_h = 0, out_f = ngoe2;
        const unsigned steps = nw + group - 1;
        // One column step: H of the column before in hp, this column's into hc.
        // A column's letters (the pad row's index outside a subject) and lane 0's cell of
        // the scratch row are loaded a step ahead, so that their global loads' latency
        // hides behind a step's arithmetic.
        auto letter = [](int j, const unsigned char* s, unsigned n) {
            return j >= 0 && j < (int)n ? (unsigned)s[j] : (unsigned)SW_A;
        };
        auto cell = [&](int j) {
            return g == 0 && !top_row && j >= 0 && j < (int)np ? sc[j] : make_uint2(0, ngoe2);
        };
        unsigned ca_next = letter(-(int)g, s_a, na), cb_next = letter(-(int)g, s_b, nb);
        uint2 cell_next = cell(-(int)g);
        auto step = [&](unsigned t, const unsigned (&hp)[R], unsigned (&hc)[R]) {
            unsigned in_h = __shfl_up_sync(0xffffffffu, out_h, 1, group);
            unsigned in_f = __shfl_up_sync(0xffffffffu, out_f, 1, group);
            const int j = (int)t - (int)g;
            const bool live = j >= 0 && j < (int)np;
            const unsigned ca = ca_next, cb = cb_next;
            if (g == 0) { in_h = cell_next.x; in_f = cell_next.y; }  // 0, -(open + extend) on the top row
            ca_next = letter(j + 1, s_a, na);
            cb_next = letter(j + 1, s_b, nb);
            cell_next = cell(j + 1);
            const uint4* ra = reinterpret_cast<const uint4*>(sprof + ca * qt + r0);
            const uint4* rb = reinterpret_cast<const uint4*>(sprof + cb * qt + r0);
            unsigned f = in_f;
            unsigned hgu = sw_add2(in_h, ngoe2);  // H_up - open - extend
            unsigned wa[4], wb[4];  // 16 rows' profile bytes of each subject at a time
            auto score = [&](int r) {
                if ((r & 15) == 0) {
                    const uint4 pa = ra[r >> 4], pb = rb[r >> 4];
                    wa[0] = pa.x; wa[1] = pa.y; wa[2] = pa.z; wa[3] = pa.w;
                    wb[0] = pb.x; wb[1] = pb.y; wb[2] = pb.z; wb[3] = pb.w;
                }
                return sw_pair2(wa[(r >> 2) & 3], wb[(r >> 2) & 3], 0xC480u + 0x1111u * (unsigned)(r & 3));
            };
            sw_dpx_rows<R>(score, diag, hp, hc, e, hg, f, hgu, best, ngoe2, nge2);
            diag = in_h;
            out_h = hc[R - 1];
            out_f = f;
            if (g == group - 1 && live) sc[j] = make_uint2(out_h, f);
        };
        // Steps in pairs, h0 and h1 taking turns: one more step than needed when
        // `steps` is odd, past every lane's last column (where it changes no score).
        for (unsigned t = 0; t < steps; t += 2) {
            step(t, h0, h1);
            step(t + 1, h1, h0);
        }
        __syncwarp();
    });
    return best;
}

// Two blocks an SM (at most 128 registers a thread): a block's 8 warps alone leave the
// ALU pipe idle while they wait on a step's dependent maxes.
extern "C" __global__ void __launch_bounds__(256, 2) sw_search_dpx(
    const unsigned char* __restrict__ chunk, unsigned nseq, unsigned res_off,
    const signed char* __restrict__ profile, unsigned prof_off, unsigned mpad, unsigned group,
    int gap_oe, int gap_e, int2* __restrict__ scratch, int* __restrict__ scores, unsigned score_off,
    unsigned qt, unsigned long long cells, int sat, unsigned strip)
{
    // The grid holds ceil(nseq / 2) groups; sat = 32767 - the largest profile score;
    // strip: rows of a lane's strip, 16 or 32 (the host's Profile::strip).
    (void)cells;  // for the simulator's cost model only
    extern __shared__ __align__(16) signed char sprof[];
    const unsigned* offs = reinterpret_cast<const unsigned*>(chunk);
    const signed char* prof = profile + prof_off;
    const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned g = threadIdx.x & (group - 1);
    const unsigned sa = 2 * (gtid / group), sb = sa + 1;
    unsigned start = 0, na = 0, nb = 0;
    if (sa < nseq) {
        start = offs[sa];
        na = offs[sa + 1] - start;
    }
    if (sb < nseq) nb = offs[sb + 1] - offs[sb];
    // Subject b follows subject a in the chunk; the pair's scratch row is their residues'.
    const unsigned char* s_a = chunk + res_off + start;
    const unsigned char* s_b = s_a + na;
    uint2* sc = reinterpret_cast<uint2*>(scratch + start);
    const unsigned np = max(na, nb);
    unsigned nw = np;  // longest pair of the warp: the loop bound all lanes share
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) nw = max(nw, __shfl_xor_sync(0xffffffffu, nw, o));
    const unsigned ngoe2 = sw_splat2(-gap_oe), nge2 = sw_splat2(-gap_e);
    unsigned best = strip == 16
        ? sw_dpx_passes<16>(sprof, prof, mpad, qt, group, g, nw, np, na, nb, s_a, s_b, sc, ngoe2, nge2)
        : sw_dpx_passes<32>(sprof, prof, mpad, qt, group, g, nw, np, na, nb, s_a, s_b, sc, ngoe2, nge2);
    for (unsigned o = group >> 1; o > 0; o >>= 1) best = sw_max2_relu(best, __shfl_xor_sync(0xffffffffu, best, o, group));
    const int best_a = (int)(short)(unsigned short)(best & 0xFFFFu);
    const int best_b = (int)(short)(unsigned short)(best >> 16);
    const bool need_a = sa < nseq && best_a >= sat;
    const bool need_b = sb < nseq && best_b >= sat;
    if (g == 0) {
        if (sa < nseq && !need_a) scores[score_off + sa] = best_a;
        if (sb < nseq && !need_b) scores[score_off + sb] = best_b;
    }
    // The 32-bit pass for the subjects marked (block-uniform branches: it stages profile
    // tiles with __syncthreads, and overwrites the scratch rows, which are done with).
    if (__syncthreads_or(need_a)) {
        const unsigned n = need_a ? na : 0u;
        int2* sc_a = scratch + start;
        const int b32 = strip == 16 ? sw_pass32_call<16>(sprof, prof, mpad, qt, group, g, s_a, n, sc_a, gap_oe, gap_e)
                                    : sw_pass32_call<32>(sprof, prof, mpad, qt, group, g, s_a, n, sc_a, gap_oe, gap_e);
        if (need_a && g == 0) scores[score_off + sa] = b32;
    }
    if (__syncthreads_or(need_b)) {
        const unsigned n = need_b ? nb : 0u;
        int2* sc_b = scratch + start + na;
        const int b32 = strip == 16 ? sw_pass32_call<16>(sprof, prof, mpad, qt, group, g, s_b, n, sc_b, gap_oe, gap_e)
                                    : sw_pass32_call<32>(sprof, prof, mpad, qt, group, g, s_b, n, sc_b, gap_oe, gap_e);
        if (need_b && g == 0) scores[score_off + sb] = b32;
    }
}
#endif  // SW_ONLY_QP

#ifndef SW_ONLY_DPX
// sw_search_qp: a query pair. Lane group k aligns subject k against two runs of queries
// at once, the low run in the low halfwords and the high run in the high ones, with
// sw_search_dpx's arithmetic; the packed score of a cell comes straight from the pair's
// profile, a 32-bit word a (letter, row) with the low run's score low and the high run's
// high, so the byte permute per cell pair that two subjects need is gone from the ALU
// pipe. A run is queries end to end, each over its own padded rows (a whole number of
// passes), so that two runs of several queries have about the same rows where two
// queries alone seldom do; the shorter run's rows past its end score -64 (as padded rows
// do), which cannot raise a score.
// Where a query starts in a run, its top row is row 0 of its own alignment: before that
// pass each lane group sets its scratch row's half to H 0, F -(open + extend), as the
// first pass finds it (the rows above, another query's, are done with). Where a query
// ends, its 16-bit best is reduced over the group and written (where it reached the
// query's sat, the 32-bit pass after the last pass replaces it), and its half of the
// running best starts again at 0. So each query's score is exactly its alignment alone,
// and the column step itself is sw_search_dpx's with one subject.
// The launch's plan, in the profile buffer (both built by the host's PairProfile):
//   passes[p]  where pass p ends or starts a query in each half: bits 0-5, 1 + the
//              segment of the low run that ends with pass p (0: none); bits 6-11, the
//              high run's; bit 12, a low query starts with pass p (never set on pass 0,
//              whose top row is row 0 anyway); bit 13, a high query does;
//   table[k]   segment k (at most 32 a launch): its query (scores at query * nseq), its
//              int8 profile's offset and rows (for the 32-bit pass), its sat.
// Layout of a tile of the pair's profile (qt rows, in global memory as in shared): for
// each letter (and, in shared memory only, the pad row after them) the tile's strips of
// R rows, each R words then 16 unused bytes, so that the 16-byte loads of a quarter
// warp's 8 lanes (strips 4R + 16 bytes apart) fall in 8 different groups of 4 banks.
#define SW_PAD2 0xFFC0FFC0u  // a padded row's word: -64 in both halfwords
#define SW_LOW_STARTS (1u << 12)
#define SW_HIGH_STARTS (1u << 13)

// Stages tile `tile` of a pair's profile (SW_A letter rows of row_bytes) and the pad row.
__device__ __forceinline__ void sw_stage_qp_tile(signed char* sprof, const signed char* pprof, unsigned row_bytes,
                                                 unsigned tile)
{
    __syncthreads();
    const unsigned v = SW_A * row_bytes / 16, vp = row_bytes / 16;
    const uint4* src = reinterpret_cast<const uint4*>(pprof + (size_t)tile * SW_A * row_bytes);
    for (unsigned k = threadIdx.x; k < v; k += blockDim.x) reinterpret_cast<uint4*>(sprof)[k] = src[k];
    for (unsigned k = threadIdx.x; k < vp; k += blockDim.x)
        reinterpret_cast<uint4*>(sprof + SW_A * row_bytes)[k] = make_uint4(SW_PAD2, SW_PAD2, SW_PAD2, SW_PAD2);
    __syncthreads();
}

// The query-pair lane's passes (sw_dpx_passes with one subject and a packed profile),
// its running best of both runs' 16-bit H in `best`: before a pass that starts a query,
// the group's scratch row is reset in that half; after a pass that ends one, `ends(word)`
// takes its score. Every thread of the block calls it.
template <int R, class Ends>
__device__ __forceinline__ void sw_qp_passes(signed char* sprof, const signed char* pprof, const unsigned* passes,
                                             unsigned mpad, unsigned qt, unsigned group, unsigned g, unsigned nw,
                                             unsigned n, const unsigned char* s, uint2* sc, unsigned ngoe2,
                                             unsigned nge2, unsigned& best, const Ends& ends)
{
    const unsigned rows_per_pass = group * R;
    const unsigned strip_bytes = 4 * R + 16, row_bytes = qt / R * strip_bytes;
    // (mpad is a multiple of qt: every tile holds qt rows)
    auto stage = [&](unsigned t0, unsigned) { sw_stage_qp_tile(sprof, pprof, row_bytes, t0 / qt); };
    sw_each_pass(mpad, qt, rows_per_pass, stage, [&](unsigned t0, unsigned p0) {
        // (the pass's word is read again after it, not kept live through the steps)
        const unsigned word = passes[(t0 + p0) / rows_per_pass];
        if (word & (SW_LOW_STARTS | SW_HIGH_STARTS)) {
            // The halves kept; a new query's half becomes row 0's H 0, F -(open + extend).
            const unsigned keep = (word & SW_LOW_STARTS ? 0xFFFF0000u : ~0u) & (word & SW_HIGH_STARTS ? 0xFFFFu : ~0u);
            __syncwarp();
            for (unsigned j = g; j < n; j += group) {
                const uint2 v = sc[j];
                sc[j] = make_uint2(v.x & keep, (v.y & keep) | (ngoe2 & ~keep));
            }
            __syncwarp();
        }
        const unsigned strip_at = (p0 / R + g) * strip_bytes;
        const bool top_row = (t0 + p0) == 0;
        unsigned h0[R], h1[R], e[R], hg[R <= 16 ? R : 1];
        #pragma unroll
        for (int r = 0; r < R; ++r) { h0[r] = 0; h1[r] = 0; e[r] = ngoe2; if constexpr (R <= 16) hg[r] = ngoe2; }
        unsigned diag = 0, out_h = 0, out_f = ngoe2;
        const unsigned steps = nw + group - 1;
        auto letter = [&](int j) { return j >= 0 && j < (int)n ? (unsigned)s[j] : (unsigned)SW_A; };
        auto cell = [&](int j) {
            return g == 0 && !top_row && j >= 0 && j < (int)n ? sc[j] : make_uint2(0, ngoe2);
        };
        unsigned c_next = letter(-(int)g);
        uint2 cell_next = cell(-(int)g);
        auto step = [&](unsigned t, const unsigned (&hp)[R], unsigned (&hc)[R]) {
            unsigned in_h = __shfl_up_sync(0xffffffffu, out_h, 1, group);
            unsigned in_f = __shfl_up_sync(0xffffffffu, out_f, 1, group);
            const int j = (int)t - (int)g;
            const bool live = j >= 0 && j < (int)n;
            const unsigned c = c_next;
            if (g == 0) { in_h = cell_next.x; in_f = cell_next.y; }
            c_next = letter(j + 1);
            cell_next = cell(j + 1);
            const uint4* rp = reinterpret_cast<const uint4*>(sprof + c * row_bytes + strip_at);
            unsigned f = in_f;
            unsigned hgu = sw_add2(in_h, ngoe2);
            unsigned w4[4];  // 4 rows' packed scores at a time
            auto score = [&](int r) {
                if ((r & 3) == 0) {
                    const uint4 pv = rp[r >> 2];
                    w4[0] = pv.x; w4[1] = pv.y; w4[2] = pv.z; w4[3] = pv.w;
                }
                return w4[r & 3];
            };
            sw_dpx_rows<R>(score, diag, hp, hc, e, hg, f, hgu, best, ngoe2, nge2);
            diag = in_h;
            out_h = hc[R - 1];
            out_f = f;
            if (g == group - 1 && live) sc[j] = make_uint2(out_h, f);
        };
        for (unsigned t = 0; t < steps; t += 2) {
            step(t, h0, h1);
            step(t + 1, h1, h0);
        }
        __syncwarp();
        const unsigned after = passes[(t0 + p0) / rows_per_pass];
        if (after & 0xFFFu) ends(after);
    });
}

extern "C" __global__ void __launch_bounds__(256, 2) sw_search_qp(
    const unsigned char* __restrict__ chunk, unsigned nseq, unsigned res_off,
    const signed char* __restrict__ profile, unsigned pair_off, unsigned passes_off, unsigned table_off,
    unsigned nseg, unsigned mpad, unsigned group, int gap_oe, int gap_e, int2* __restrict__ scratch, int* __restrict__ scores,
    unsigned qt, unsigned long long cells, unsigned strip)
{
    // pair_off: the pair's packed profile (tiles of qt rows, see above); passes_off,
    // table_off: the plan's words and its nseg segments (16-byte aligned).
    (void)cells;  // for the simulator's cost model only
    extern __shared__ __align__(16) signed char sprof[];
    const unsigned* offs = reinterpret_cast<const unsigned*>(chunk);
    const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned g = threadIdx.x & (group - 1);
    const unsigned subj = gtid / group;
    unsigned start = 0, n = 0;
    if (subj < nseq) {
        start = offs[subj];
        n = offs[subj + 1] - start;
    }
    const unsigned char* s = chunk + res_off + start;
    uint2* sc = reinterpret_cast<uint2*>(scratch + start);
    unsigned nw = n;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) nw = max(nw, __shfl_xor_sync(0xffffffffu, nw, o));
    const unsigned ngoe2 = sw_splat2(-gap_oe), nge2 = sw_splat2(-gap_e);
    const unsigned* passes = reinterpret_cast<const unsigned*>(profile + passes_off);
    const int4* table = reinterpret_cast<const int4*>(profile + table_off);
    unsigned best = 0;
    // A pass that ends a query in a half: the group's best of that half is its 16-bit
    // score (below its sat: exact; else the 32-bit pass below replaces it), and the half
    // starts again at 0 (block-uniform: `word` is).
    auto ends = [&](unsigned word) {
        unsigned b = best;
        for (unsigned o = group >> 1; o > 0; o >>= 1) b = sw_max2_relu(b, __shfl_xor_sync(0xffffffffu, b, o, group));
        #pragma unroll
        for (int half = 0; half < 2; ++half) {
            const unsigned k = (word >> (6 * half)) & 63u;
            if (k == 0) continue;
            const int s16 = (int)(short)(unsigned short)(b >> (16 * half));
            if (g == 0 && subj < nseq) scores[(unsigned)table[k - 1].x * nseq + subj] = s16;
            best &= half ? 0xFFFFu : 0xFFFF0000u;
        }
    };
    if (strip == 16) sw_qp_passes<16>(sprof, profile + pair_off, passes, mpad, qt, group, g, nw, n, s, sc, ngoe2, nge2, best, ends);
    else sw_qp_passes<32>(sprof, profile + pair_off, passes, mpad, qt, group, g, nw, n, s, sc, ngoe2, nge2, best, ends);
    // The 32-bit pass of each query whose 16-bit score reached its sat (it may have
    // saturated), with the query's own int8 profile (block-uniform branches, as in
    // sw_search_dpx; almost always none). Which ones is read back from the scores, not
    // kept in a register through the passes: the column step has none to spare.
    for (unsigned k = 0; k < nseg; ++k) {
        const int4 seg = table[k];
        const unsigned at = (unsigned)seg.x * nseq + subj;
        const bool need_k = __shfl_sync(0xffffffffu, g == 0 && subj < nseq && scores[at] >= seg.w, 0, group);
        if (__syncthreads_or(need_k)) {
            const unsigned rows = (unsigned)seg.z, qt8 = min(rows, (unsigned)SW_QT), n8 = need_k ? n : 0u;
            const signed char* p8 = profile + (unsigned)seg.y;
            const int b32 = strip == 16
                ? sw_pass32_call<16>(sprof, p8, rows, qt8, group, g, s, n8, scratch + start, gap_oe, gap_e)
                : sw_pass32_call<32>(sprof, p8, rows, qt8, group, g, s, n8, scratch + start, gap_oe, gap_e);
            if (need_k && g == 0) scores[at] = b32;
        }
    }
}
#endif  // SW_ONLY_DPX
#endif  // SW_ONLY_PORTABLE
