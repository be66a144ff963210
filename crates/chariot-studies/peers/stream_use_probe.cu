// Probe: which uses of streams slow a CUDA graph's nodes afterwards (on an H200 with
// driver 580: once the context's launches have moved from one stream to another about
// 16 times, the 1,024-node chain of empty kernels runs 0.82 us a node instead of 0.64,
// on any stream, for the rest of the process). Usage: stream_use_probe MODE, one fresh
// process per mode; 8 streams besides the graph's own:
//   conc: one kernel on each; few8: 64 kernels over the 8, round robin; many8: 1,024
//   over the 8; many8sync: the same, each synchronized; many2, many4: 1,024 over 2 or
//   4; many1: 1,024 on one of them; deep: 1,024 on the graph's own stream; malloc: 128
//   small allocations; tevents, nevents: on each, an event, a kernel, an event (with
//   timing and elapsed time, or without); wait: on each a kernel and an event the next
//   stream waits for; hostfn: a host function on each; thread: one kernel on each from
//   another thread; query: one kernel on each, its event polled to its end.
// Prints the chain's median (16 launches) before and after, then after on a stream
// created then, on one of the 8, and on its own again. Run by scripts/gpu/graph-probes.sh.
#include <cstring>
#include <thread>
#include "graph_probe.hpp"

static void CUDART_CB nothing(void*) {}
int main(int argc, char** argv) {
    const char* mode = argv[1]; const int n = 8;
    CK(cudaSetDevice(0)); CK(cudaFree(0));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Chain chain;
    float* sink = chain.sink;
    auto time = [&]() { return chain.time(s, 17); };
    double before = time();
    std::vector<cudaStream_t> st(n);
    for (auto& x : st) CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
    if (!strcmp(mode, "conc")) {
        for (auto x : st) flow_spin<<<1, 128, 0, x>>>(sink, 0);
    } else if (!strcmp(mode, "tevents") || !strcmp(mode, "nevents")) {
        bool timing = mode[0] == 't';
        for (auto x : st) {
            cudaEvent_t a, b; unsigned f = timing ? cudaEventDefault : cudaEventDisableTiming;
            CK(cudaEventCreateWithFlags(&a, f)); CK(cudaEventCreateWithFlags(&b, f));
            CK(cudaEventRecord(a, x)); flow_spin<<<1, 128, 0, x>>>(sink, 0); CK(cudaEventRecord(b, x));
            CK(cudaEventSynchronize(b)); float ms; if (timing) CK(cudaEventElapsedTime(&ms, a, b));
        }
    } else if (!strcmp(mode, "wait")) {
        for (int i = 0; i < n; i++) {
            flow_spin<<<1, 128, 0, st[i]>>>(sink, 0);
            cudaEvent_t ev; CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)); CK(cudaEventRecord(ev, st[i]));
            CK(cudaStreamWaitEvent(st[(i + 1) % n], ev, 0));
        }
    } else if (!strcmp(mode, "hostfn")) {
        for (auto x : st) CK(cudaLaunchHostFunc(x, nothing, nullptr));
    } else if (!strcmp(mode, "thread")) {
        std::thread t([&] { CK(cudaSetDevice(0)); for (auto x : st) flow_spin<<<1, 128, 0, x>>>(sink, 0); CK(cudaDeviceSynchronize()); });
        t.join();
    } else if (!strcmp(mode, "many8")) {
        for (int i = 0; i < 1024; i++) flow_spin<<<1, 128, 0, st[i % n]>>>(sink, 0);
    } else if (!strcmp(mode, "many8sync")) {
        for (int i = 0; i < 1024; i++) { flow_spin<<<1, 128, 0, st[i % n]>>>(sink, 0); CK(cudaStreamSynchronize(st[i % n])); }
    } else if (!strcmp(mode, "many2")) {
        for (int i = 0; i < 1024; i++) flow_spin<<<1, 128, 0, st[i % 2]>>>(sink, 0);
    } else if (!strcmp(mode, "many4")) {
        for (int i = 0; i < 1024; i++) flow_spin<<<1, 128, 0, st[i % 4]>>>(sink, 0);
    } else if (!strcmp(mode, "few8")) {
        for (int i = 0; i < 64; i++) flow_spin<<<1, 128, 0, st[i % n]>>>(sink, 0);
    } else if (!strcmp(mode, "many1")) {
        for (int i = 0; i < 1024; i++) flow_spin<<<1, 128, 0, st[0]>>>(sink, 0);
    } else if (!strcmp(mode, "deep")) {
        for (int i = 0; i < 1024; i++) flow_spin<<<1, 128, 0, s>>>(sink, 0);
    } else if (!strcmp(mode, "malloc")) {
        for (int i = 0; i < 128; i++) { void* p; CK(cudaMalloc(&p, 4)); }
    } else if (!strcmp(mode, "query")) {
        for (auto x : st) {
            cudaEvent_t ev; CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
            flow_spin<<<1, 128, 0, x>>>(sink, 0); CK(cudaEventRecord(ev, x));
            while (cudaEventQuery(ev) == cudaErrorNotReady) {}
        }
    }
    CK(cudaDeviceSynchronize());
    double after = time();
    // The same graph launched from a stream created now, and from the first of the 8.
    cudaStream_t fresh; CK(cudaStreamCreateWithFlags(&fresh, cudaStreamNonBlocking));
    cudaStream_t keep = s;
    s = fresh; double on_fresh = time();
    s = st[0]; double on_other = time();
    s = keep; double again = time();
    printf("%-9s | before %6.1f after %6.1f | on a new stream %6.1f, on one of the 8 %6.1f, on its own again %6.1f\n", mode, before, after, on_fresh, on_other, again);
    return 0;
}
