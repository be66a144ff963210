// What the graph probes share (kernel_origin_probe.cu, stream_count_probe.cu,
// stream_use_probe.cu, stream_escape_probe.cu, sink_address_probe.cu): the check of
// every CUDA call, a microsecond clock, the flow kernel (flow_kernel.cu, compiled into
// the probe) and the 1,024-node chain of it that the stream probes time. Host code and the one kernel; built by nvcc there
// (scripts/gpu/graph-probes.sh).
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "flow_kernel.cu"

// Exits naming the call and the line where a CUDA call returns an error.
#define CK(x) do { auto ck_ = (x); if ((int)ck_ != 0) { printf("%s failed %d line %d\n", #x, (int)ck_, __LINE__); exit(1);} } while (0)

// Now, in microseconds of a steady clock.
static double now() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The 1,024-node chain of empty flow_spin launches (one block of 128 threads each,
// writing `sink`), instantiated once.
struct Chain {
    float* sink = nullptr;
    unsigned iters = 0;
    cudaGraphExec_t exec = nullptr;

    Chain() {
        CK(cudaMalloc(&sink, 4));
        cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
        std::vector<cudaGraphNode_t> nodes(1024); void* args[2] = {&sink, &iters};
        for (int i = 0; i < 1024; i++) {
            cudaKernelNodeParams p{}; p.func = (void*)flow_spin; p.gridDim = dim3(1); p.blockDim = dim3(128); p.kernelParams = args;
            CK(cudaGraphAddKernelNode(&nodes[i], g, i ? &nodes[i - 1] : nullptr, i ? 1 : 0, &p));
        }
        CK(cudaGraphInstantiate(&exec, g, 0));
    }

    // The median of `launches` − 1 timed runs on `s` (launch to synchronize, µs), after
    // one untimed.
    double time(cudaStream_t s, int launches) const {
        std::vector<double> t;
        for (int r = 0; r < launches; r++) { double t0 = now(); CK(cudaGraphLaunch(exec, s)); CK(cudaStreamSynchronize(s)); if (r) t.push_back(now() - t0); }
        std::sort(t.begin(), t.end()); return t[t.size() / 2];
    }
};
