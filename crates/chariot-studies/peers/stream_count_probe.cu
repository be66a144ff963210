// Probe: how many streams with work slow a CUDA graph's nodes afterwards (on an H200
// with driver 580, the 1,024-node chain of empty kernels runs 0.82 us a node instead of
// 0.64 once 16 other streams have had a launch each: the context's launches have moved
// between streams 16 times; stream_use_probe.cu finds fewer streams do it with more
// launches). Usage:
// stream_count_probe MODE N, one fresh process per (MODE, N), beside the graph's own
// stream: conc creates N streams, launches an empty kernel on each and keeps them; seq
// creates, launches on, synchronizes and destroys one stream at a time, N times; idle
// creates N and launches nothing; null creates and launches on N, then launches on the
// legacy default stream; memcpy the same, then a synchronous copy instead; events
// records an event on the graph's stream N times. Prints the chain's median (16 timed
// launches) before and after. Run by scripts/gpu/graph-probes.sh.
#include <cstring>
#include "graph_probe.hpp"

int main(int argc, char** argv) {
    const char* mode = argv[1]; int n = atoi(argv[2]);
    CK(cudaSetDevice(0)); CK(cudaFree(0));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Chain chain;
    float* sink = chain.sink;
    auto time = [&]() { return chain.time(s, 16); };
    double before = time();
    std::vector<cudaStream_t> keep;
    if (!strcmp(mode, "conc") || !strcmp(mode, "idle")) {
        for (int i = 0; i < n; i++) { cudaStream_t x; CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking)); keep.push_back(x); if (mode[0] == 'c') flow_spin<<<1, 128, 0, x>>>(sink, 0); }
        CK(cudaDeviceSynchronize());
    } else if (!strcmp(mode, "seq")) {
        for (int i = 0; i < n; i++) { cudaStream_t x; CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking)); flow_spin<<<1, 128, 0, x>>>(sink, 0); CK(cudaStreamSynchronize(x)); CK(cudaStreamDestroy(x)); }
    } else if (!strcmp(mode, "null") || !strcmp(mode, "memcpy")) {
        // n streams, then the legacy default stream: a kernel on it, or a synchronous copy.
        for (int i = 0; i < n; i++) { cudaStream_t x; CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking)); keep.push_back(x); flow_spin<<<1, 128, 0, x>>>(sink, 0); }
        CK(cudaDeviceSynchronize());
        if (mode[0] == 'n') { flow_spin<<<1, 128>>>(sink, 0); } else { float h = 0; CK(cudaMemcpy(sink, &h, 4, cudaMemcpyHostToDevice)); }
        CK(cudaDeviceSynchronize());
    } else if (!strcmp(mode, "events")) {
        for (int i = 0; i < n; i++) { cudaEvent_t ev; CK(cudaEventCreate(&ev)); CK(cudaEventRecord(ev, s)); CK(cudaEventSynchronize(ev)); keep.push_back((cudaStream_t)ev); }
    }
    double after = time();
    printf("%-6s %3d | before %6.1f after %6.1f\n", mode, n, before, after);
    return 0;
}
