// Probe: once a context's graphs run slow (its launches moved between streams: 1,024
// kernels round robin over 8 streams, as stream_use_probe's many8), does any way of
// instantiating or launching a graph run it at full speed again? One fresh process per
// mode; prints the 1,024-node chain's median (17 launches, one untimed) before the
// trigger and after it, both on the graph's own stream, then the mode's figure:
//   same: the graph instantiated before, on its own stream (the control);
//   reinst: the graph instantiated again after the trigger;
//   upload: reinst, uploaded to the stream (cudaGraphUpload) before its launches;
//   prio-hi, prio-lo: reinst, launched on a new stream of the greatest or least priority;
//   nodeprio: instantiated with cudaGraphInstantiateFlagUseNodePriority;
//   devlaunch: instantiated with cudaGraphInstantiateFlagDeviceLaunch, launched from the host;
//   legacy: launched on the legacy default stream; perthread: on the per-thread default;
//   blocking: on a new stream created without cudaStreamNonBlocking;
//   settle: after 20,000 more launches of one kernel on the graph's own stream;
//   captured: the chain captured from launches on a stream (cudaStreamBeginCapture);
//   trigger-after: the control order reversed: the graph's first launches come after
//   the trigger (instantiated before it).
// Run by scripts/gpu/graph-probes.sh (STEPS escape).
#include <cstring>
#include "graph_probe.hpp"

static cudaGraphExec_t chain_exec(float* sink, unsigned* iters, unsigned long long flags) {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    std::vector<cudaGraphNode_t> nodes(1024); void* args[2] = {&sink, iters};
    for (int i = 0; i < 1024; i++) {
        cudaKernelNodeParams p{}; p.func = (void*)flow_spin; p.gridDim = dim3(1); p.blockDim = dim3(128); p.kernelParams = args;
        CK(cudaGraphAddKernelNode(&nodes[i], g, i ? &nodes[i - 1] : nullptr, i ? 1 : 0, &p));
    }
    cudaGraphExec_t e; CK(cudaGraphInstantiateWithFlags(&e, g, flags));
    return e;
}

static double time_exec(cudaGraphExec_t e, cudaStream_t s) {
    std::vector<double> t;
    for (int r = 0; r < 17; r++) { double t0 = now(); CK(cudaGraphLaunch(e, s)); CK(cudaStreamSynchronize(s)); if (r) t.push_back(now() - t0); }
    std::sort(t.begin(), t.end()); return t[t.size() / 2];
}

int main(int argc, char** argv) {
    if (argc < 2) { printf("usage: stream_escape_probe MODE\n"); return 2; }
    const char* mode = argv[1];
    CK(cudaSetDevice(0)); CK(cudaFree(0));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Chain chain;
    float* sink = chain.sink;
    unsigned iters = 0;
    bool late = !strcmp(mode, "trigger-after");
    double before = late ? 0.0 : chain.time(s, 17);
    // The trigger: 1,024 kernels round robin over 8 streams.
    std::vector<cudaStream_t> st(8);
    for (auto& x : st) CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
    for (int i = 0; i < 1024; i++) flow_spin<<<1, 128, 0, st[i % 8]>>>(sink, 0);
    CK(cudaDeviceSynchronize());
    double after = chain.time(s, 17);
    double figure = after;
    if (!strcmp(mode, "reinst")) {
        figure = time_exec(chain_exec(sink, &iters, 0), s);
    } else if (!strcmp(mode, "upload")) {
        cudaGraphExec_t e = chain_exec(sink, &iters, 0); CK(cudaGraphUpload(e, s)); CK(cudaStreamSynchronize(s));
        figure = time_exec(e, s);
    } else if (!strcmp(mode, "prio-hi") || !strcmp(mode, "prio-lo")) {
        int least, greatest; CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        cudaStream_t p; CK(cudaStreamCreateWithPriority(&p, cudaStreamNonBlocking, mode[5] == 'h' ? greatest : least));
        figure = time_exec(chain_exec(sink, &iters, 0), p);
    } else if (!strcmp(mode, "nodeprio")) {
        figure = time_exec(chain_exec(sink, &iters, cudaGraphInstantiateFlagUseNodePriority), s);
    } else if (!strcmp(mode, "devlaunch")) {
        cudaGraphExec_t e = chain_exec(sink, &iters, cudaGraphInstantiateFlagDeviceLaunch);
        CK(cudaGraphUpload(e, s)); CK(cudaStreamSynchronize(s));
        figure = time_exec(e, s);
    } else if (!strcmp(mode, "legacy")) {
        figure = time_exec(chain.exec, cudaStreamLegacy);
    } else if (!strcmp(mode, "perthread")) {
        figure = time_exec(chain.exec, cudaStreamPerThread);
    } else if (!strcmp(mode, "blocking")) {
        cudaStream_t b; CK(cudaStreamCreate(&b));
        figure = time_exec(chain.exec, b);
    } else if (!strcmp(mode, "settle")) {
        for (int i = 0; i < 20000; i++) flow_spin<<<1, 128, 0, s>>>(sink, 0);
        CK(cudaStreamSynchronize(s));
        figure = chain.time(s, 17);
    } else if (!strcmp(mode, "captured")) {
        cudaStream_t c; CK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
        cudaGraph_t g; CK(cudaStreamBeginCapture(c, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < 1024; i++) flow_spin<<<1, 128, 0, c>>>(sink, 0);
        CK(cudaStreamEndCapture(c, &g));
        cudaGraphExec_t e; CK(cudaGraphInstantiateWithFlags(&e, g, 0));
        figure = time_exec(e, s);
    }
    printf("%-13s | before %6.1f after %6.1f | %s %6.1f us (%.2fx after)\n", mode, before, after, mode, figure, figure / after);
    return 0;
}
