// Probe: does the 1,024-node chain of empty flow_spin launches (each writes one float,
// `sink`) run at a speed that depends on where `sink` lies? The flow bench's graphs
// and chariot's recorded graphs write sinks at addresses the allocator chose; their
// chains ran 652–768 us in one process and another (results/nvidia-h200/
// 2026-11-29-graphs-and-stream-count/k-chariot-streams/). One process: a 256 MiB
// allocation, the chain instantiated with its sink at each of OFFSETS (bytes; several
// 4 KiB pages and 2 MiB pages apart), in turns, ROUNDS times over; prints each offset's
// median (17 launches, one untimed, per turn; then the median over turns).
// Usage: sink_address_probe [ROUNDS]. Run by scripts/gpu/graph-probes.sh (STEPS sink).
#include "graph_probe.hpp"

static cudaGraphExec_t chain_at(float* sink, unsigned* iters) {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    std::vector<cudaGraphNode_t> nodes(1024); void* args[2] = {&sink, iters};
    for (int i = 0; i < 1024; i++) {
        cudaKernelNodeParams p{}; p.func = (void*)flow_spin; p.gridDim = dim3(1); p.blockDim = dim3(128); p.kernelParams = args;
        CK(cudaGraphAddKernelNode(&nodes[i], g, i ? &nodes[i - 1] : nullptr, i ? 1 : 0, &p));
    }
    cudaGraphExec_t e; CK(cudaGraphInstantiateWithFlags(&e, g, 0));
    return e;
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    CK(cudaSetDevice(0)); CK(cudaFree(0));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    char* base; CK(cudaMalloc(&base, 256u << 20));
    std::vector<size_t> offsets;
    for (size_t k = 0; k < 16; k++) offsets.push_back(k * 4096);            // 4 KiB pages
    for (size_t k = 1; k < 16; k++) offsets.push_back(k * (2u << 20));      // 2 MiB pages
    for (size_t k = 1; k < 8; k++) offsets.push_back(k * 256 + 7 * 4096);   // within a page
    unsigned iters = 0;
    std::vector<cudaGraphExec_t> execs;
    for (size_t o : offsets) execs.push_back(chain_at((float*)(base + o), &iters));
    std::vector<std::vector<double>> t(offsets.size());
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < offsets.size(); i++) {
            std::vector<double> one;
            for (int l = 0; l < 17; l++) { double t0 = now(); CK(cudaGraphLaunch(execs[i], s)); CK(cudaStreamSynchronize(s)); if (l) one.push_back(now() - t0); }
            std::sort(one.begin(), one.end()); t[i].push_back(one[one.size() / 2]);
        }
    }
    double lo = 1e30, hi = 0;
    for (size_t i = 0; i < offsets.size(); i++) {
        std::sort(t[i].begin(), t[i].end()); double m = t[i][t[i].size() / 2];
        lo = std::min(lo, m); hi = std::max(hi, m);
        printf("sink at base + %9zu bytes (address %p): chain %6.1f us (turns %6.1f .. %6.1f)\n", offsets[i], (void*)(base + offsets[i]), m, t[i].front(), t[i].back());
    }
    printf("spread over offsets: %.1f .. %.1f us (%.3fx)\n", lo, hi, hi / lo);
    return 0;
}
