// Probe: does the kernel's origin make the flow bench's hand-written CUDA graph slower
// than the same graph built by nvcc (cuda-graph-nvcc ran 0.64-0.99x it)? The 1,024-node
// chain (lc), 1,024 independent nodes (ep) and the depth-10 tree (dc) of flow_spin, built
// three ways in one process, alternated, median of ROUNDS launches (launch to
// synchronize):
//   rt-nvcc:   runtime API, the kernel compiled by nvcc into this binary
//   drv-nvrtc: driver API, a cubin from NVRTC with chariot's options (sm_90, c++17)
//   drv-nvcc:  driver API, the cubin nvcc wrote (flow_kernel.cubin, read from the
//              working folder; nvrtc.cubin is written there)
// Run by scripts/gpu/graph-probes.sh.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "graph_probe.hpp"
static const char* SRC = R"(extern "C" __global__ void flow_spin(float* sink, unsigned iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f;
    for (unsigned i = 0; i < iters; ++i) {
        a = fmaf(a, b, 1e-4f);
        b = fmaf(b, 0.9999f, 1e-5f);
    }
    if (threadIdx.x == 0) sink[0] = a + b;
})";
static std::vector<std::vector<int>> preds(const std::string& s) {
    std::vector<std::vector<int>> p;
    if (s == "lc") { for (int i = 0; i < 1024; i++) p.push_back(i ? std::vector<int>{i - 1} : std::vector<int>{}); }
    if (s == "ep") { for (int i = 0; i < 1024; i++) p.push_back({}); }
    if (s == "dc") { for (int i = 0; i < 1023; i++) p.push_back(i ? std::vector<int>{(i - 1) / 2} : std::vector<int>{}); }
    return p;
}
struct G { cudaGraphExec_t exec; };
static cudaGraphExec_t build(const std::vector<std::vector<int>>& P, CUfunction f, bool rt, float* sink, unsigned iters) {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    std::vector<cudaGraphNode_t> nodes(P.size()); std::vector<cudaGraphNode_t> deps;
    void* args[2] = {&sink, &iters};
    for (size_t i = 0; i < P.size(); i++) {
        deps.clear(); for (int j : P[i]) deps.push_back(nodes[j]);
        if (rt) {
            cudaKernelNodeParams p{}; p.func = (void*)flow_spin; p.gridDim = dim3(1); p.blockDim = dim3(128); p.kernelParams = args;
            CK(cudaGraphAddKernelNode(&nodes[i], g, deps.data(), deps.size(), &p));
        } else {
            CUDA_KERNEL_NODE_PARAMS p{}; p.func = f; p.gridDimX = 1; p.gridDimY = 1; p.gridDimZ = 1; p.blockDimX = 128; p.blockDimY = 1; p.blockDimZ = 1; p.kernelParams = args;
            CK(cuGraphAddKernelNode((CUgraphNode*)&nodes[i], (CUgraph)g, (CUgraphNode*)deps.data(), deps.size(), &p));
        }
    }
    cudaGraphExec_t e; CK(cudaGraphInstantiate(&e, g, 0)); return e;
}
int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 21;
    CK(cudaSetDevice(0)); CK(cudaFree(0));
    CUcontext ctx; CK(cuCtxGetCurrent(&ctx));
    // NVRTC with chariot's options.
    nvrtcProgram prog; CK(nvrtcCreateProgram(&prog, SRC, "flow_spin.cu", 0, nullptr, nullptr));
    const char* opts[] = {"--gpu-architecture=sm_90", "--std=c++17"};
    CK(nvrtcCompileProgram(prog, 2, opts));
    size_t n; CK(nvrtcGetCUBINSize(prog, &n)); std::vector<char> cubin(n); CK(nvrtcGetCUBIN(prog, cubin.data()));
    { std::ofstream("nvrtc.cubin", std::ios::binary).write(cubin.data(), n); }
    CUmodule m1, m2; CUfunction f1, f2;
    CK(cuModuleLoadData(&m1, cubin.data())); CK(cuModuleGetFunction(&f1, m1, "flow_spin"));
    CK(cuModuleLoad(&m2, "flow_kernel.cubin")); CK(cuModuleGetFunction(&f2, m2, "flow_spin"));
    int r1, r2; CK(cuFuncGetAttribute(&r1, CU_FUNC_ATTRIBUTE_NUM_REGS, f1)); CK(cuFuncGetAttribute(&r2, CU_FUNC_ATTRIBUTE_NUM_REGS, f2));
    cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, flow_spin));
    printf("registers: NVRTC cubin %d, nvcc cubin %d, runtime %d\n", r1, r2, fa.numRegs);
    float* sink; CK(cudaMalloc(&sink, 4));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const char* names[3] = {"rt-nvcc", "drv-nvrtc", "drv-nvcc"};
    printf("shape iters | %10s %10s %10s  (µs, medians of %d)\n", names[0], names[1], names[2], rounds);
    for (std::string shape : {"lc", "ep", "dc"}) for (unsigned iters : {0u, 1000u}) {
        auto P = preds(shape);
        cudaGraphExec_t e[3] = {build(P, nullptr, true, sink, iters), build(P, f1, false, sink, iters), build(P, f2, false, sink, iters)};
        std::vector<double> t[3];
        for (int v = 0; v < 3; v++) { CK(cudaGraphLaunch(e[v], s)); CK(cudaStreamSynchronize(s)); }
        for (int r = 0; r < rounds; r++) for (int k = 0; k < 3; k++) {
            int v = (k + r) % 3; double t0 = now();
            CK(cudaGraphLaunch(e[v], s)); CK(cudaStreamSynchronize(s)); t[v].push_back(now() - t0);
        }
        printf("%-5s %5u |", shape.c_str(), iters);
        for (int v = 0; v < 3; v++) { std::sort(t[v].begin(), t[v].end()); printf(" %10.1f", t[v][t[v].size() / 2]); }
        printf("\n");
    }
    return 0;
}
