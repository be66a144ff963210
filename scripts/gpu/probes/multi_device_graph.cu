// Probe: can one CUDA graph hold kernel nodes on several GPUs, with edges between them,
// and run as one launch? (The design question behind a recorded graph that spans D
// GPUs: one executable graph, or one per GPU joined by events.)
//
// Builds, on D GPUs (all visible, at most 4):
//  1. a chain of N kernel nodes placed round-robin over the GPUs, each node spinning
//     `spin` clock-free iterations and then writing prev + 1, reading its predecessor's
//     value through peer memory: the last value is N only if every cross-GPU edge held;
//  2. D independent chains of N nodes, each node filling a GPU (1,056 blocks), chain g on GPU g, against the same D chains all
//     on GPU 0: whether the GPUs run their nodes side by side inside one launch.
// Each graph is instantiated once and launched 5 times; the median launch-to-sync time
// is printed. Build: nvcc -O3 -arch=sm_90 multi_device_graph.cu -o mdg
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t err_ = (x);                                                                   \
    if (err_ != cudaSuccess) {                                                              \
      printf("FAILED %s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(err_));      \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

__global__ void step(const int* prev, int* out, int spin) {
  float acc = 0.f;
  for (int i = 0; i < spin; ++i) acc = acc * 0.999f + 1.f;
  if (blockIdx.x == 0 && threadIdx.x == 0) *out = (prev ? *prev : 0) + 1 + (acc < 0.f ? 1 : 0);
}

static double launch_median(cudaGraphExec_t exec, cudaStream_t s) {
  std::vector<double> t;
  for (int r = 0; r < 6; ++r) {
    auto a = std::chrono::steady_clock::now();
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    auto b = std::chrono::steady_clock::now();
    if (r > 0) t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Adds node `i` of a graph on GPU `dev`, after `dep` (may be null), reading `prev`.
static cudaGraphNode_t add(cudaGraph_t g, int dev, cudaGraphNode_t dep, const int* prev, int* out, int spin,
                           int blocks) {
  CK(cudaSetDevice(dev));
  cudaKernelNodeParams p = {};
  void* args[] = {(void*)&prev, (void*)&out, (void*)&spin};
  p.func = (void*)step;
  p.gridDim = dim3(blocks);
  p.blockDim = dim3(256);
  p.kernelParams = args;
  cudaGraphNode_t n;
  CK(cudaGraphAddKernelNode(&n, g, dep ? &dep : nullptr, dep ? 1 : 0, &p));
  return n;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 256, spin = argc > 2 ? atoi(argv[2]) : 20000;
  int d = 0;
  CK(cudaGetDeviceCount(&d));
  d = std::min(d, 4);
  printf("GPUs %d, chain of %d nodes, spin %d\n", d, n, spin);
  for (int a = 0; a < d; ++a)
    for (int b = 0; b < d; ++b)
      if (a != b) {
        int can = 0;
        CK(cudaDeviceCanAccessPeer(&can, a, b));
        CK(cudaSetDevice(a));
        if (can) CK(cudaDeviceEnablePeerAccess(b, 0));
      }
  std::vector<int*> mem(d);
  for (int g = 0; g < d; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaMalloc(&mem[g], sizeof(int) * n * d));
  }
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  // 1. One chain over every GPU, round-robin.
  for (int gpus = 1; gpus <= d; gpus *= 2) {
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t last = nullptr;
    const int* prev = nullptr;
    for (int i = 0; i < n; ++i) {
      int dev = i % gpus;
      int* out = mem[dev] + i;
      last = add(g, dev, last, prev, out, spin, 1);
      prev = out;
    }
    CK(cudaSetDevice(0));
    cudaGraphExec_t e;
    cudaError_t r = cudaGraphInstantiate(&e, g, 0);
    if (r != cudaSuccess) {
      printf("chain over %d GPUs: instantiate refused: %s\n", gpus, cudaGetErrorString(r));
      continue;
    }
    double us = launch_median(e, s);
    int v = 0;
    CK(cudaMemcpy(&v, prev, sizeof(int), cudaMemcpyDefault));
    printf("chain over %d GPUs: last value %d (want %d) %s, launch to sync %.1f us (%.2f us a node)\n", gpus, v, n,
           v == n ? "ok" : "WRONG", us, us / n);
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
  }
  // 2. D independent chains: on D GPUs, and all on GPU 0.
  for (int spread = 0; spread < 2; ++spread) {
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    std::vector<const int*> tail(d);
    for (int c = 0; c < d; ++c) {
      int dev = spread ? c : 0;
      cudaGraphNode_t last = nullptr;
      const int* prev = nullptr;
      for (int i = 0; i < n; ++i) {
        int* out = mem[dev] + c * n + i;
        last = add(g, dev, last, prev, out, spin / 16, 132 * 8);
        prev = out;
      }
      tail[c] = prev;
    }
    CK(cudaSetDevice(0));
    cudaGraphExec_t e;
    cudaError_t r = cudaGraphInstantiate(&e, g, 0);
    if (r != cudaSuccess) {
      printf("%d chains %s: instantiate refused: %s\n", d, spread ? "one a GPU" : "all on GPU 0", cudaGetErrorString(r));
      continue;
    }
    double us = launch_median(e, s);
    bool ok = true;
    for (int c = 0; c < d; ++c) {
      int v = 0;
      CK(cudaMemcpy(&v, tail[c], sizeof(int), cudaMemcpyDefault));
      ok = ok && v == n;
    }
    printf("%d chains %s: %s, launch to sync %.1f us\n", d, spread ? "one a GPU" : "all on GPU 0", ok ? "ok" : "WRONG", us);
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
  }
  return 0;
}
