// Probe: does a context's use of more streams slow a CUDA graph's nodes afterwards?
// Times the lc (1024-node chain) and dc graphs of empty kernels, then launches one empty
// kernel on each of K new streams (K doubling), destroys them, and times again.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { auto ck_ = (x); if ((int)ck_ != 0) { printf("%s failed %d line %d\n", #x, (int)ck_, __LINE__); exit(1);} } while (0)
extern "C" __global__ void flow_spin(float* sink, unsigned iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f;
    for (unsigned i = 0; i < iters; ++i) { a = fmaf(a, b, 1e-4f); b = fmaf(b, 0.9999f, 1e-5f); }
    if (threadIdx.x == 0) sink[0] = a + b;
}
static double now() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static cudaGraphExec_t build(bool chain, float* sink, unsigned iters) {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    int n = chain ? 1024 : 1023;
    std::vector<cudaGraphNode_t> nodes(n);
    void* args[2] = {&sink, &iters};
    for (int i = 0; i < n; i++) {
        cudaKernelNodeParams p{}; p.func = (void*)flow_spin; p.gridDim = dim3(1); p.blockDim = dim3(128); p.kernelParams = args;
        cudaGraphNode_t dep = i ? nodes[chain ? i - 1 : (i - 1) / 2] : nullptr;
        CK(cudaGraphAddKernelNode(&nodes[i], g, i ? &dep : nullptr, i ? 1 : 0, &p));
    }
    cudaGraphExec_t e; CK(cudaGraphInstantiate(&e, g, 0)); return e;
}
int main() {
    CK(cudaSetDevice(0)); CK(cudaFree(0));
    float* sink; CK(cudaMalloc(&sink, 4));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraphExec_t lc = build(true, sink, 0), dc = build(false, sink, 0);
    auto time = [&](cudaGraphExec_t e) {
        std::vector<double> t;
        for (int r = 0; r < 22; r++) { double t0 = now(); CK(cudaGraphLaunch(e, s)); CK(cudaStreamSynchronize(s)); if (r) t.push_back(now() - t0); }
        std::sort(t.begin(), t.end()); return t[t.size() / 2];
    };
    const char* env = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    printf("CUDA_DEVICE_MAX_CONNECTIONS=%s\n", env ? env : "(unset)");
    printf("streams used so far | lc µs  dc µs\n");
    printf("%19d | %6.1f %6.1f\n", 1, time(lc), time(dc));
    int used = 1;
    for (int k : {1, 2, 4, 8, 16, 32, 64}) {
        std::vector<cudaStream_t> st(k);
        for (auto& x : st) { CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking)); flow_spin<<<1, 128, 0, x>>>(sink, 0); }
        CK(cudaDeviceSynchronize());
        for (auto& x : st) CK(cudaStreamDestroy(x));
        used += k;
        printf("%19d | %6.1f %6.1f\n", used, time(lc), time(dc));
    }
    return 0;
}
