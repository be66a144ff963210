// Runs crates/chariot-align/kernels/sw.cu's three kernels on the CPU, one std::thread per CUDA thread, with
// block barriers, warp shuffles and the DPX / SIMD intrinsics emulated, and checks every
// score against a plain Gotoh: a check of the kernels' indexing, lane groups, subject
// pairs and query pairs (runs of queries), scratch rows, profile tiles and 32-bit re-pass where there is no GPU (not of
// NVRTC, registers or speed). Built and run by scripts/emulate/align-kernel-emulate.sh, which
// includes the kernel source with two textual changes (the dynamic shared memory
// declaration, and the PTX prmt statement, emulated here).
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

// ---- the CUDA device environment ----
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__
#define __align__(n) __attribute__((aligned(n)))
struct int2 { int x, y; };
struct uint2 { unsigned x, y; };
struct int4 { int x, y, z, w; };
struct uint4 { unsigned x, y, z, w; };
static inline int2 make_int2(int a, int b) { return {a, b}; }
static inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
struct dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local dim3 threadIdx;
static dim3 blockIdx, blockDim;
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }

alignas(16) static signed char g_sprof[64 << 10];
struct Block {
    unsigned threads;
    std::unique_ptr<std::barrier<>> bar;
    std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
    std::vector<unsigned long long> slot;  // one per thread: shuffle exchange
    std::atomic<int> any{0};
};
static Block* g_block;
static inline unsigned lane() { return threadIdx.x & 31; }
static inline unsigned warp() { return threadIdx.x >> 5; }
static void __syncthreads() { g_block->bar->arrive_and_wait(); }
static int __syncthreads_or(int p) {
    if (p) g_block->any.store(1);
    g_block->bar->arrive_and_wait();
    const int r = g_block->any.load();
    g_block->bar->arrive_and_wait();
    if (threadIdx.x == 0) g_block->any.store(0);
    g_block->bar->arrive_and_wait();
    return r;
}
static void __syncwarp(unsigned = 0xffffffffu) { g_block->warp_bar[warp()]->arrive_and_wait(); }
template <class T>
static T shfl_from(T v, unsigned src_lane) {
    auto& w = *g_block->warp_bar[warp()];
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    g_block->slot[threadIdx.x] = bits;
    w.arrive_and_wait();
    const unsigned long long got = g_block->slot[warp() * 32 + src_lane];
    w.arrive_and_wait();
    T r;
    std::memcpy(&r, &got, sizeof(T));
    return r;
}
template <class T>
static T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    const unsigned l = lane(), seg = l % (unsigned)width;
    return shfl_from(v, seg >= delta ? l - delta : l);
}
template <class T>
static T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    const unsigned l = lane(), src = l ^ (unsigned)mask;
    return shfl_from(v, src / (unsigned)width == l / (unsigned)width ? src : l);
}
template <class T>
static T __shfl_sync(unsigned, T v, int src, int width = 32) {
    const unsigned l = lane();
    return shfl_from(v, l / (unsigned)width * (unsigned)width + (unsigned)src % (unsigned)width);
}
static inline short lo(unsigned x) { return (short)(unsigned short)(x & 0xFFFFu); }
static inline short hi(unsigned x) { return (short)(unsigned short)(x >> 16); }
static inline unsigned pk(int l, int h) { return (unsigned)(unsigned short)(short)l | (unsigned)(unsigned short)(short)h << 16; }
[[maybe_unused]] static unsigned __viaddmax_s16x2(unsigned a, unsigned b, unsigned c) {
    return pk(std::max<int>((short)(lo(a) + lo(b)), lo(c)), std::max<int>((short)(hi(a) + hi(b)), hi(c)));
}
[[maybe_unused]] static unsigned __vimax_s16x2_relu(unsigned a, unsigned b) {
    return pk(std::max({(int)lo(a), (int)lo(b), 0}), std::max({(int)hi(a), (int)hi(b), 0}));
}
[[maybe_unused]] static unsigned __vimax3_s16x2_relu(unsigned a, unsigned b, unsigned c) {
    return pk(std::max({(int)lo(a), (int)lo(b), (int)lo(c), 0}), std::max({(int)hi(a), (int)hi(b), (int)hi(c), 0}));
}
[[maybe_unused]] static unsigned __vmaxs2(unsigned a, unsigned b) { return pk(std::max(lo(a), lo(b)), std::max(hi(a), hi(b))); }
[[maybe_unused]] static unsigned __vadd2(unsigned a, unsigned b) { return pk((short)(lo(a) + lo(b)), (short)(hi(a) + hi(b))); }
static unsigned emu_prmt(unsigned a, unsigned b, unsigned sel) {
    const unsigned long long src = (unsigned long long)b << 32 | a;
    unsigned d = 0;
    for (int i = 0; i < 4; ++i) {
        const unsigned nib = (sel >> (4 * i)) & 0xF;
        unsigned byte = (unsigned)(src >> (8 * (nib & 7))) & 0xFF;
        if (nib & 8) byte = (byte & 0x80) ? 0xFF : 0;
        d |= byte << (8 * i);
    }
    return d;
}

#include "sw_emulated.cu"

// ---- launches ----
// Runs `call` on every thread of `grid` blocks of `block` threads.
static void launch(unsigned grid, unsigned block, const std::function<void()>& call) {
    blockDim.x = block;
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        Block blk;
        blk.threads = block;
        blk.bar = std::make_unique<std::barrier<>>(block);
        for (unsigned w = 0; w < block / 32; ++w) blk.warp_bar.push_back(std::make_unique<std::barrier<>>(32));
        blk.slot.assign(block, 0);
        g_block = &blk;
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < block; ++t)
            ts.emplace_back([&, t] {
                threadIdx.x = t;
                call();
            });
        for (auto& t : ts) t.join();
    }
}

// ---- the host side, as crates/chariot-align/src/sw/ builds it ----
static const int LETTERS = 32, TILE = 1024, BLOCK = 256, PAD = -64;
struct Profile {
    unsigned strip, group, mpad, m;
    std::vector<signed char> scores;
    int sat() const { return 32767 - std::max(0, (int)*std::max_element(scores.begin(), scores.end())); }
    unsigned tile() const { return std::min<unsigned>(mpad, TILE); }
};
static Profile profile(const std::vector<uint8_t>& q, const std::vector<std::vector<int>>& mat) {
    Profile p;
    p.m = (unsigned)q.size();
    p.strip = p.m <= 128 ? 16 : 32;  // SHORT_QUERY
    const unsigned strips = (p.m + p.strip - 1) / p.strip;
    unsigned g = 1;
    while (g < strips) g *= 2;
    p.group = std::min(g, p.strip == 16 ? 32u : 8u);  // MAX_GROUP_SHORT, MAX_GROUP
    const unsigned rows = p.group * p.strip;
    p.mpad = (p.m + rows - 1) / rows * rows;
    p.scores.assign((size_t)LETTERS * p.mpad, (signed char)PAD);
    for (size_t a = 0; a < mat.size(); ++a)
        for (unsigned i = 0; i < p.m; ++i) p.scores[a * p.mpad + i] = (signed char)mat[q[i]][a];
    return p;
}
// A query pair as crates/chariot-align/src/sw/pair.rs's PairProfile builds it: two runs
// of queries of one layout, each query over its own padded rows; the packed tiles
// (PAIR_TILE rows at most; per letter, strips of `strip` words then 16 zero bytes), the
// pass words (1 + the segment a pass ends, 6 bits a half; a start bit a half) and the
// table (query, int8 profile offset, rows, sat).
static const unsigned PAIR_TILE = 256;
struct Pair {
    unsigned strip, group, mpad, qt, nseg = 0;
    std::vector<signed char> packed;
    std::vector<unsigned> passes;
    std::vector<int> table;
};
// The queries' profiles in a given layout (the host pairs only queries whose own layouts
// are equal; forcing one here tries more lengths in a run).
static Profile relaid(const Profile& p, unsigned strip, unsigned group) {
    Profile r = p;
    r.strip = strip;
    r.group = group;
    const unsigned rows = strip * group;
    r.mpad = (p.m + rows - 1) / rows * rows;
    r.scores.assign((size_t)LETTERS * r.mpad, (signed char)PAD);
    for (int l = 0; l < LETTERS; ++l)
        for (unsigned i = 0; i < p.m; ++i) r.scores[(size_t)l * r.mpad + i] = p.scores[(size_t)l * p.mpad + i];
    return r;
}
// runs[h]: indexes of `ps` (query q's scores at q * nseq, its int8 profile at offs[q]).
static Pair pair_of(const std::vector<Profile>& ps, const std::vector<unsigned>& offs,
                    const std::vector<unsigned> (&runs)[2]) {
    Pair p;
    p.strip = ps[runs[0][0]].strip;
    p.group = ps[runs[0][0]].group;
    unsigned rows[2] = {0, 0};
    for (int h = 0; h < 2; ++h)
        for (unsigned q : runs[h]) rows[h] += ps[q].mpad;
    const unsigned longer = std::max(rows[0], rows[1]);
    p.qt = std::min(longer, PAIR_TILE);
    p.mpad = (longer + p.qt - 1) / p.qt * p.qt;
    std::vector<signed char> col[2][LETTERS];
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < LETTERS; ++l) {
            for (unsigned q : runs[h])
                col[h][l].insert(col[h][l].end(), ps[q].scores.begin() + (size_t)l * ps[q].mpad,
                                 ps[q].scores.begin() + (size_t)(l + 1) * ps[q].mpad);
            col[h][l].resize(p.mpad, (signed char)PAD);
        }
    const unsigned R = p.strip;
    for (unsigned t0 = 0; t0 < p.mpad; t0 += p.qt)
        for (int l = 0; l < LETTERS; ++l)
            for (unsigned s0 = t0; s0 < t0 + p.qt; s0 += R) {
                for (unsigned r = s0; r < s0 + R; ++r) {
                    const unsigned w = (unsigned)(unsigned short)(short)col[0][l][r] |
                                       (unsigned)(unsigned short)(short)col[1][l][r] << 16;
                    for (int k = 0; k < 4; ++k) p.packed.push_back((signed char)(w >> (8 * k)));
                }
                p.packed.insert(p.packed.end(), 16, 0);
            }
    const unsigned rpp = p.group * p.strip;
    p.passes.assign(p.mpad / rpp, 0);
    for (int h = 0; h < 2; ++h) {
        unsigned pass = 0;
        for (unsigned q : runs[h]) {
            if (pass > 0) p.passes[pass] |= 1u << (12 + h);
            pass += ps[q].mpad / rpp;
            ++p.nseg;
            p.passes[pass - 1] |= p.nseg << (6 * h);
            p.table.insert(p.table.end(), {(int)q, (int)offs[q], (int)ps[q].mpad, ps[q].sat()});
        }
    }
    return p;
}

static long gotoh(const std::vector<uint8_t>& q, const std::vector<uint8_t>& s, const std::vector<std::vector<int>>& mat,
                  int open, int ext) {
    const long NEG = -(1L << 40);
    std::vector<long> h(s.size() + 1, 0), f(s.size() + 1, NEG);
    long best = 0;
    for (size_t i = 0; i < q.size(); ++i) {
        long diag = 0, e = NEG, left = 0;
        for (size_t j = 1; j <= s.size(); ++j) {
            e = std::max(e - ext, left - open - ext);
            f[j] = std::max(f[j] - ext, h[j] - open - ext);
            const long hn = std::max({0L, diag + mat[q[i]][s[j - 1]], e, f[j]});
            diag = h[j];
            h[j] = hn;
            left = hn;
            best = std::max(best, hn);
        }
    }
    return best;
}

int main(int argc, char** argv) {
    const int cases = argc > 1 ? std::atoi(argv[1]) : 12;
    std::mt19937_64 rng(2026);
    int failures = 0;
    for (int c = 0; c < cases; ++c) {
        // A random matrix of `letters` letters (scores -8..12 on the diagonal side), or one
        // with a 127 (so that scores pass 16 bits with short sequences), gap costs.
        const int letters = 4 + (int)(rng() % 21);
        const bool big = c % 3 == 2;
        std::vector<std::vector<int>> mat(letters, std::vector<int>(letters));
        for (int a = 0; a < letters; ++a)
            for (int b = 0; b < letters; ++b) mat[a][b] = a == b ? 1 + (int)(rng() % 12) : -(int)(rng() % 5);
        if (big) mat[0][0] = 127;
        const int open = (int)(rng() % 12), ext = (int)(rng() % 3);
        // Query: lengths that cross strip, group and tile sizes.
        const unsigned qlens[] = {1, 15, 16, 17, 63, 130, 511, 513, 1030, 2100};
        const unsigned m = qlens[c % 10];
        std::vector<uint8_t> q(m);
        for (auto& x : q) x = big ? 0 : (uint8_t)(rng() % letters);
        if (big)
            for (unsigned i = 0; i < m; i += 7) q[i] = (uint8_t)(rng() % letters);
        // Subjects: an odd or even count, sorted longest first, some empty, some copies of
        // the query (past 16 bits with the big matrix).
        const unsigned nseq = 1 + (unsigned)(rng() % 70);
        std::vector<std::vector<uint8_t>> subj(nseq);
        for (unsigned k = 0; k < nseq; ++k) {
            const unsigned len = k % 11 == 3 ? 0 : (unsigned)(rng() % (k % 5 == 0 ? 700 : 120));
            subj[k].resize(len);
            for (auto& x : subj[k]) x = (uint8_t)(rng() % letters);
            if (k % 9 == 1) subj[k] = q;
        }
        std::stable_sort(subj.begin(), subj.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
        const unsigned res_off = ((nseq + 1) * 4 + 15) / 16 * 16;
        std::vector<uint8_t> chunk(res_off);
        unsigned off = 0;
        for (unsigned k = 0; k <= nseq; ++k) {
            std::memcpy(&chunk[k * 4], &off, 4);
            if (k < nseq) {
                chunk.insert(chunk.end(), subj[k].begin(), subj[k].end());
                off += (unsigned)subj[k].size();
            }
        }
        chunk.resize(chunk.size() + 16);
        const Profile p = profile(q, mat);
        std::vector<long> want(nseq);
        for (unsigned k = 0; k < nseq; ++k) want[k] = gotoh(q, subj[k], mat, open, ext);
        int over = 0;
        for (long w : want) over += w >= p.sat();
        // More queries for the query-pair kernel: the same letters' kind, one of 70 to
        // 130 % of the first's length (either may be the longer), one shorter, sometimes
        // copies of the first; two runs in the first query's layout: {q, q3} and {q2}, or
        // {q} and {q2, q3}.
        const unsigned m2 = std::max(1u, (unsigned)(m * (0.7 + 0.6 * (double)(rng() % 1000) / 1000.0)));
        const unsigned m3 = 1 + (unsigned)(rng() % m);
        std::vector<uint8_t> q2(m2), q3(m3);
        for (unsigned i = 0; i < m2; ++i) q2[i] = i < m && c % 4 != 1 ? q[i] : (uint8_t)(rng() % letters);
        for (unsigned i = 0; i < m3; ++i) q3[i] = c % 4 == 2 ? q[i] : (uint8_t)(rng() % letters);
        if (big) {
            for (unsigned i = 0; i < m2; ++i) q2[i] = i % 5 == 4 ? (uint8_t)(rng() % letters) : 0;
            for (unsigned i = 0; i < m3; ++i) q3[i] = i % 6 == 5 ? (uint8_t)(rng() % letters) : 0;
        }
        // Queries 1, 2, 3 (scores at q * nseq); query 0 has none, so its range stays untouched.
        const std::vector<uint8_t>* qs[4] = {&q, &q, &q2, &q3};
        std::vector<Profile> ps(4);
        std::vector<unsigned> offs(4);
        std::vector<signed char> pbuf;
        for (int k = 0; k < 4; ++k) {
            ps[k] = relaid(profile(*qs[k], mat), p.strip, p.group);
            offs[k] = (unsigned)pbuf.size();
            pbuf.insert(pbuf.end(), ps[k].scores.begin(), ps[k].scores.end());
        }
        const std::vector<unsigned> runs[2] = {c % 2 ? std::vector<unsigned>{1, 3} : std::vector<unsigned>{1},
                                               c % 2 ? std::vector<unsigned>{2} : std::vector<unsigned>{2, 3}};
        const Pair pr = pair_of(ps, offs, runs);
        // The pair's parts after the profiles, as the host lays them out: packed, table, passes.
        const unsigned pair_off = (unsigned)pbuf.size();
        pbuf.insert(pbuf.end(), pr.packed.begin(), pr.packed.end());
        const unsigned table_off = (unsigned)pbuf.size();
        pbuf.resize(pbuf.size() + 4 * pr.table.size());
        std::memcpy(&pbuf[table_off], pr.table.data(), 4 * pr.table.size());
        const unsigned passes_off = (unsigned)pbuf.size();
        pbuf.resize(pbuf.size() + 4 * pr.passes.size() + 16);
        std::memcpy(&pbuf[passes_off], pr.passes.data(), 4 * pr.passes.size());
        std::vector<long> wants[4];
        wants[1] = want;
        for (int k = 2; k < 4; ++k)
            for (unsigned j = 0; j < nseq; ++j) wants[k].push_back(gotoh(*qs[k], subj[j], mat, open, ext));
        for (int k = 2; k < 4; ++k)
            for (long w : wants[k]) over += w >= ps[k].sat();
        for (int kind = 0; kind < 3; ++kind) {
            const unsigned groups = kind == 1 ? (nseq + 1) / 2 : nseq;
            const unsigned grid = std::max(1u, (groups * p.group + BLOCK - 1) / BLOCK);
            std::vector<int2> scratch(off + 1, int2{7777, 7777});
            std::vector<int> scores(4 * nseq + 1, -12345);
            if (kind < 2) {
                launch(grid, BLOCK, [&] {
                    (kind == 0 ? sw_search : sw_search_dpx)(chunk.data(), nseq, res_off, p.scores.data(), 0, p.mpad,
                                                            p.group, open + ext, ext, scratch.data(), scores.data(),
                                                            nseq, p.tile(), 0, p.sat(), p.strip);
                });
            } else {
                launch(grid, BLOCK, [&] {
                    sw_search_qp(chunk.data(), nseq, res_off, pbuf.data(), pair_off, passes_off, table_off, pr.nseg,
                                 pr.mpad, pr.group, open + ext, ext, scratch.data(), scores.data(), pr.qt, 0, pr.strip);
                });
            }
            const char* name = kind == 0 ? "portable" : kind == 1 ? "dpx" : "qp";
            int bad = 0;
            for (int k = 0; k < 4; ++k)
                for (unsigned j = 0; j < nseq; ++j) {
                    const long w = k == 1 || (kind == 2 && k > 1) ? wants[k][j] : -12345;
                    if (scores[k * nseq + j] != w && bad++ < 3)
                        std::printf("  case %d %s: query %d (length %zu), subject %u (length %zu): %d, Gotoh %ld\n", c,
                                    name, k, qs[k]->size(), j, subj[j].size(), scores[k * nseq + j], w);
                }
            if (scores[4 * nseq] != -12345) {
                std::printf("  case %d: a score written outside the chunk's range\n", c);
                ++bad;
            }
            std::printf("case %2d %-8s m %4u (runs of %4u, %4u) group %2u mpad %4u tile %4u, %2u subjects (%d past the 16-bit threshold %d), gaps %d/%d: %s\n",
                        c, name, m, m2, m3, p.group, kind == 2 ? pr.mpad : p.mpad, kind == 2 ? pr.qt : p.tile(), nseq,
                        over, p.sat(), open, ext, bad ? "WRONG" : "every score equals Gotoh");
            failures += bad != 0;
        }
    }
    std::printf(failures ? "FAILED: %d launches\n" : "all launches gave Gotoh's scores\n", failures);
    return failures != 0;
}
