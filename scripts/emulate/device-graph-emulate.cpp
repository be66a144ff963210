// Runs crates/chariot-studies/kernels/device_graph.cu's reset and persistent kernels on the CPU (scripts/emulate/
// device-graph-emulate.sh): one host thread per block of one thread (so __syncthreads
// is a no-op and __shared__ is thread-local), CUDA's atomics as std::atomic_ref, fences
// as seq_cst fences. Checks, on chains, independent nodes, trees, map-reduce and random
// DAGs and for several block counts, that every node runs exactly once and after all
// its predecessors, that the counters come out right, that a failing node ends the run
// with the error words set instead of hanging, and that the host's abort word stops a
// run that would otherwise hang. It checks the scheduling logic, not the GPU's memory model.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static thread_local

struct Dim { unsigned x = 0, y = 0, z = 0; };
static thread_local Dim threadIdx, blockIdx;
static Dim blockDim, gridDim;

template <class T> T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T> T atomicAdd_system(T* p, T v) { return atomicAdd(p, v); }
template <class T> T atomicExch(T* p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
template <class T> T atomicExch_system(T* p, T v) { return atomicExch(p, v); }
template <class T> T atomicCAS(T* p, T e, T v) { std::atomic_ref<T>(*p).compare_exchange_strong(e, v); return e; }
template <class T> T atomicCAS_system(T* p, T e, T v) { return atomicCAS(p, e, v); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { __threadfence(); }
inline void __syncthreads() {}
inline void __nanosleep(unsigned) { std::this_thread::yield(); }
// The device's cycle counter: the host's steady clock in ns (about the GPU's cycles).
inline long long clock64() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
using std::fmaf;

// Filled by the hook the script adds after a node's body.
static std::vector<std::atomic<int>>* g_runs;
static std::vector<std::vector<int>>* g_preds;
static std::atomic<int> g_order_violations{0};
static void emu_ran(int t) {
    for (int p : (*g_preds)[t])
        if ((*g_runs)[p].load() == 0) g_order_violations++;
    (*g_runs)[t]++;
}

#include "device_graph_emulated.cu"

struct G { int n; std::vector<std::pair<int, int>> edges; const char* name; };

static G chain(int n) { G g{n, {}, "chain"}; for (int i = 1; i < n; ++i) g.edges.push_back({i - 1, i}); return g; }
static G ep(int n) { return G{n, {}, "ep"}; }
static G tree(int depth) { int n = (1 << depth) - 1; G g{n, {}, "tree"}; for (int c = 1; c < n; ++c) g.edges.push_back({(c - 1) / 2, c}); return g; }
static G mr(int iters) {
    G g{iters * 17, {}, "map-reduce"};
    for (int k = 0; k < iters; ++k) for (int m = 0; m < 16; ++m) {
        if (k > 0) g.edges.push_back({k * 17 - 1, k * 17 + m});
        g.edges.push_back({k * 17 + m, k * 17 + 16});
    }
    return g;
}
static G random_dag(int n, unsigned seed) {
    std::mt19937 rng(seed); G g{n, {}, "random"};
    for (int s = 1; s < n; ++s) for (int p = std::max(0, s - 20); p < s; ++p) if (rng() % 6 == 0) g.edges.push_back({p, s});
    return g;
}

// Runs `g` with `blocks` blocks; returns false on a failed check.
static bool run(const G& g, int blocks, int fail_node, bool abort_early) {
    int n = g.n;
    std::vector<int> off(n + 1, 0), succ(g.edges.size()), indeg(n, 0), roots;
    std::vector<std::vector<int>> preds(n);
    for (auto [p, s] : g.edges) { off[p + 1]++; indeg[s]++; preds[s].push_back(p); }
    for (int i = 0; i < n; ++i) off[i + 1] += off[i];
    std::vector<int> next(off.begin(), off.end() - 1);
    for (auto [p, s] : g.edges) succ[next[p]++] = s;
    // A hang to abort: the last node waits for one predecessor too many, so the blocks
    // that take its ticket would wait forever without the abort word.
    if (abort_early) indeg[n - 1]++;
    for (int i = 0; i < n; ++i) if (!indeg[i]) roots.push_back(i);
    std::vector<unsigned> iters(n, 3);
    std::vector<int> control(8 + 1), remaining(n), queue(n);
    float sink = -1;
    int abort_word = abort_early ? 1 : 0;
    std::vector<std::atomic<int>> runs(n);
    g_runs = &runs; g_preds = &preds; g_order_violations = 0;
    blockDim = {1, 1, 1}; gridDim = {1, 1, 1};
    device_graph_reset(control.data(), (int)control.size(), remaining.data(), queue.data(), indeg.data(), roots.data(), &sink, n, (int)roots.size());
    if (sink != 0.0f) { printf("reset left the sink at %g\n", sink); return false; }
    gridDim = {(unsigned)blocks, 1, 1};
    std::vector<std::thread> ts;
    for (int b = 0; b < blocks; ++b)
        ts.emplace_back([&, b] {
            blockIdx = {(unsigned)b, 0, 0}; threadIdx = {0, 0, 0};
            device_graph_run(control.data(), remaining.data(), queue.data(), off.data(), succ.data(), iters.data(), &sink, &abort_word, n, fail_node, 0);
        });
    for (auto& t : ts) t.join();
    int ran = 0, twice = 0;
    for (auto& r : runs) { ran += r.load() > 0; twice += r.load() > 1; }
    bool ok = true;
    auto fail = [&](const char* what) { printf("  FAIL %s n=%d blocks=%d fail=%d abort=%d: %s (ran %d, done %d, error %d, failed %d)\n", g.name, n, blocks, fail_node, abort_early, what, ran, control[2], control[3], control[4]); ok = false; };
    if (twice) fail("a node ran twice");
    if (g_order_violations) fail("a node ran before a predecessor");
    if (control[2] != ran || control[8] != ran) fail("done counters disagree with the nodes run");
    if (abort_early) {
        if (control[3] != 2) fail("abort not turned into the error word");
        if (runs[n - 1].load()) fail("the node that never became ready ran");
    } else if (fail_node >= 0) {
        if (control[3] != 1 || control[4] != fail_node) fail("failed node not reported");
        if (runs[fail_node].load()) fail("failed node ran");
    } else {
        if (ran != n) fail("not every node ran");
        if (control[3] != 0 || control[4] != -1) fail("error words set");
        if (control[0] < n || control[1] != n) fail("head/tail wrong");
        float a = 0, b = 1.0001f;
        for (int i = 0; i < 3; ++i) { a = fmaf(a, b, 1e-4f); b = fmaf(b, 0.9999f, 1e-5f); }
        if (sink != a + b) fail("sink wrong");
    }
    return ok;
}

int main() {
    std::vector<G> gs = {chain(1), chain(200), ep(1), ep(300), tree(8), mr(6), random_dag(400, 1), random_dag(400, 2)};
    int failures = 0, runs = 0;
    for (auto& g : gs)
        for (int blocks : {1, 2, 5, 16}) {
            for (int rep = 0; rep < 3; ++rep) { failures += !run(g, blocks, -1, false); runs++; }
            failures += !run(g, blocks, g.n / 2, false); runs++;
            failures += !run(g, blocks, g.n - 1, false); runs++;
            failures += !run(g, blocks, -1, true); runs++;
        }
    printf("%d runs, %d failed\n", runs, failures);
    return failures != 0;
}
