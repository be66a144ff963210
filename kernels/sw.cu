// Smith-Waterman database search (chariot-align, issue 6): local alignment scores with
// a substitution matrix and affine gaps (a gap of length k costs open + k*extend),
// Gotoh's recurrence, 32-bit integers, no traceback.
//
// Layout of one chunk (packed by the file-read callback): u32 offsets[nseq + 1] of the
// subjects (sorted longest first), then at byte res_off the residues, one code a byte.
// Profile of one query: signed char prof[32][mpad] (row = subject letter, column =
// query position; padded positions hold a large negative score, which cannot raise
// any score). Scores go to scores[score_off + subject].
//
// Design: a group of `group` lanes (a power of two <= 32) aligns one subject. The query
// is cut in strips of SW_R rows; lane g takes strips g, g + group, ... (one pass per
// group*SW_R rows). Within a pass the lanes run as a wavefront: at step t lane g does
// column t - g of its strip, getting the bottom row of the strip above (H, F) from lane
// g - 1 by a shuffle; lane 0 reads it from `scratch` (the previous pass's bottom row,
// written by the last lane). A strip's H and E stay in registers. The query profile is
// staged in shared memory, qt <= SW_QT rows at a time, so any query length works; any
// subject length works (a longer subject just takes longer).
#define SW_R 16
#define SW_A 32
#define SW_QT 1024
#define SW_NEG (-(1 << 29))

extern "C" __global__ void __launch_bounds__(256) sw_search(
    const unsigned char* __restrict__ chunk, unsigned nseq, unsigned res_off,
    const signed char* __restrict__ profile, unsigned prof_off, unsigned mpad, unsigned group,
    int gap_oe, int gap_e, int2* __restrict__ scratch, int* __restrict__ scores, unsigned score_off,
    unsigned qt, unsigned long long cells)
{
    // qt = min(SW_QT, mpad): rows of a profile tile; dynamic shared memory SW_A * qt bytes.
    (void)cells;  // for the simulator's cost model only
    extern __shared__ __align__(16) signed char sprof[];
    const unsigned* offs = reinterpret_cast<const unsigned*>(chunk);
    const unsigned char* res = chunk + res_off;
    const signed char* prof = profile + prof_off;
    const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned g = threadIdx.x & (group - 1);
    const unsigned subj = gtid / group;
    unsigned start = 0, n = 0;
    if (subj < nseq) {
        start = offs[subj];
        n = offs[subj + 1] - start;
    }
    unsigned nw = n;  // longest subject of the warp: the loop bound all lanes share
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) nw = max(nw, __shfl_xor_sync(0xffffffffu, nw, o));
    const unsigned char* s = res + start;
    int2* sc = scratch + start;
    const unsigned rows_per_pass = group * SW_R;
    int best = 0;
    for (unsigned t0 = 0; t0 < mpad; t0 += qt) {
        const unsigned tl = min(qt, mpad - t0);
        __syncthreads();
        const unsigned v = tl / 16;
        for (unsigned k = threadIdx.x; k < SW_A * v; k += blockDim.x) {
            const unsigned a = k / v, r = k - a * v;
            reinterpret_cast<int4*>(sprof + a * qt)[r] =
                reinterpret_cast<const int4*>(prof + (size_t)a * mpad + t0)[r];
        }
        __syncthreads();
        for (unsigned p0 = 0; p0 < tl; p0 += rows_per_pass) {
            const unsigned r0 = p0 + g * SW_R;
            const bool top_row = (t0 + p0) == 0;
            int h[SW_R], e[SW_R];
            #pragma unroll
            for (int r = 0; r < SW_R; ++r) { h[r] = 0; e[r] = SW_NEG; }
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
                    const int4 pv = *reinterpret_cast<const int4*>(sprof + c * qt + r0);
                    const int pw[4] = {pv.x, pv.y, pv.z, pv.w};
                    int f = in_f, hup = in_h, hd = diag;
                    #pragma unroll
                    for (int r = 0; r < SW_R; ++r) {
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
        }
    }
    for (unsigned o = group >> 1; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(0xffffffffu, best, o, group));
    if (subj < nseq && g == 0) scores[score_off + subj] = best;
}
