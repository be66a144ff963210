// The peers' side of the flow bench: the node kernel, the timing protocol, the table
// and the CSV, shared by stf_flow.cu (CUDASTF) and taskflow_flow.cu (Taskflow).
//
// Protocol, as the flow bench's (benches/flow.rs): for every shape and every iteration
// count each variant is prepared once (a variant that builds its graph once reports
// the host time of building and instantiating it as build_ns; one that builds per run
// reports 0 and counts the building in its runs), then one warm-up round (round 0)
// and `--rounds` timed rounds run every variant once each, the variants taking turns
// going first ((round + turn) % variants, as flow.rs rotates them). wall_ns is the host
// time of one run: from the first call that expresses the run's graph (or the graph's
// launch, for a graph built once) to the return of the synchronize that sees it done.
// The table shows medians of the timed rounds; the CSV has every run, warm-up
// included, with flow.rs's columns (replayed_tasks, lanes, window_host_ns and
// window_ns are chariot's and stay 0 here; submit_ns is the part of wall_ns spent
// before the graph was handed to the GPU, where a variant has such a part).
//
// Every node is one launch of `flow_spin` (flow_kernel.cu: the flow module's
// SPIN_SOURCE, the same body) on one block of BLOCK threads, writing into one device
// float; after each variant's warm-up run the sink is read back and compared with the value thread 0
// must have written, so a variant that skips its kernels fails instead of timing
// nothing.
#pragma once

#include "flow_graphs.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// The node kernel, defined in flow_kernel.cu: as a kernel where nvcc compiles the
// includer, as the host stub nvcc made for it where a host compiler does (the
// Taskflow peer: its headers need a C++20 host compiler, not nvcc's front end). The
// stub's address is what the runtime API takes for the kernel.
#ifdef __CUDACC__
extern "C" __global__ void flow_spin(float* sink, unsigned iters);
#else
extern "C" void flow_spin(float* sink, unsigned iters);
#endif

namespace flow {

// Threads of the one block each node's kernel runs (the flow module's BLOCK).
constexpr unsigned BLOCK = 128;

#define FLOW_CUDA(call)                                                                          \
  do {                                                                                           \
    cudaError_t flow_err_ = (call);                                                              \
    if (flow_err_ != cudaSuccess)                                                                \
      throw std::runtime_error(std::string(#call) + " failed: " + cudaGetErrorString(flow_err_)); \
  } while (0)

// What thread 0 of flow_spin writes (the flow module's spin_value).
inline float spin_value(unsigned iters) {
  float a = 0.0f, b = 1.0001f;
  for (unsigned i = 0; i < iters; ++i) {
    a = std::fmaf(a, b, 1e-4f);
    b = std::fmaf(b, 0.9999f, 1e-5f);
  }
  return a + b;
}

inline uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// One run's host times, in ns.
struct RunTiming {
  uint64_t wall_ns = 0;
  uint64_t submit_ns = 0;
};

// What every node runs and where it writes.
struct NodeWork {
  unsigned iters = 0;
  float* sink = nullptr;
};

// One way of running a graph: prepared once per shape and iteration count, then run
// once per round.
class Variant {
 public:
  virtual ~Variant() = default;
  // The name in the table and the CSV's variant column.
  virtual const char* name() const = 0;
  // Prepares runs of `g`; the host time of building the graph once, in ns (0 where
  // every run builds it).
  virtual uint64_t prepare(const Graph& g, const std::vector<std::vector<size_t>>& preds, NodeWork work) = 0;
  // One run, synchronized.
  virtual RunTiming run() = 0;
};

// A variant's name and how to make a fresh one (made only once CUDA is on the GPU
// chosen: a variant may create streams as it is made).
struct Factory {
  std::string name;
  std::function<std::unique_ptr<Variant>()> make;
};

// The hand-written CUDA graph, as the flow bench builds it (a kernel node per node,
// added after its predecessors' nodes, instantiated once, launched on one
// non-blocking stream), here through the runtime API and with the kernel nvcc
// compiled: the same process's reference for the peers' rows.
class HandGraph final : public Variant {
 public:
  ~HandGraph() override {
    if (stream_) cudaStreamSynchronize(stream_);
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  const char* name() const override { return "cuda-graph-nvcc"; }
  uint64_t prepare(const Graph&, const std::vector<std::vector<size_t>>& preds, NodeWork work) override {
    FLOW_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    uint64_t t0 = now_ns();
    FLOW_CUDA(cudaGraphCreate(&graph_, 0));
    std::vector<cudaGraphNode_t> nodes(preds.size());
    std::vector<cudaGraphNode_t> deps;
    void* args[2] = {&work.sink, &work.iters};
    cudaKernelNodeParams p{};
    p.func = reinterpret_cast<void*>(flow_spin);
    p.gridDim = dim3(1);
    p.blockDim = dim3(BLOCK);
    p.sharedMemBytes = 0;
    p.kernelParams = args;
    for (size_t i = 0; i < preds.size(); ++i) {
      deps.clear();
      for (size_t j : preds[i]) deps.push_back(nodes[j]);
      FLOW_CUDA(cudaGraphAddKernelNode(&nodes[i], graph_, deps.data(), deps.size(), &p));
    }
    FLOW_CUDA(cudaGraphInstantiate(&exec_, graph_, 0));
    return now_ns() - t0;
  }
  RunTiming run() override {
    uint64_t t0 = now_ns();
    FLOW_CUDA(cudaGraphLaunch(exec_, stream_));
    FLOW_CUDA(cudaStreamSynchronize(stream_));
    return {now_ns() - t0, 0};
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

inline uint64_t median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

inline unsigned long long parse_count(const std::string& what, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || text[0] == '-')
    throw std::invalid_argument(what + " " + text + ": not a count");
  return v;
}

struct Options {
  std::vector<std::string> shapes = {"lc", "ep", "dc", "mr", "dag", "rnd"};
  std::vector<std::pair<std::string, size_t>> sizes;
  std::vector<unsigned> iters = {0, 1000, 10000};
  size_t rounds = 5;
  uint64_t seed = 1;
  int gpu = 0;
  std::string csv;
  std::vector<std::string> variants;  // empty: all
};

inline void usage(const char* program, const std::vector<std::string>& names) {
  std::printf(
      "%s: the flow bench's shapes (benches/flow.rs) run by a peer, timed as the bench times its CUDA graph\n"
      "options (each also as --opt=value):\n"
      "  --shapes LIST   lc,ep,dc,mr,dag,rnd (default all)\n"
      "  --size S=N,...  nodes for lc, ep, rnd; depth for dc; iterations for mr; levels for dag\n"
      "                  (default lc=1024,ep=1024,dc=10,mr=64,dag=32,rnd=1024)\n"
      "  --iters LIST    spin iterations of every node (default 0,1000,10000)\n"
      "  --rounds N      timed rounds after one warm-up (default 5)\n"
      "  --seed N        seed of the random shapes (default 1, the bench's)\n"
      "  --gpu N         CUDA device (default 0)\n"
      "  --csv FILE      every run, warm-up included, with the flow bench's CSV columns\n"
      "  --variants LIST some of:",
      program);
  for (auto& n : names) std::printf(" %s", n.c_str());
  std::printf(" (default all)\n");
}

// Parses the command line; false when --help was asked for.
inline bool parse(int argc, char** argv, Options& o, const std::vector<std::string>& names) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--help" && arg != "-h") {
      if (i + 1 >= argc) throw std::invalid_argument(arg + ": needs a value");
      value = argv[++i];
    }
    if (arg == "--help" || arg == "-h") {
      usage(argv[0], names);
      return false;
    } else if (arg == "--shapes") {
      o.shapes = split(value);
      for (auto& s : o.shapes)
        if (!known_shape(s)) throw std::invalid_argument("--shapes: unknown shape " + s + " (lc, ep, dc, mr, dag, rnd)");
    } else if (arg == "--size") {
      for (auto& s : split(value)) {
        auto at = s.find('=');
        if (at == std::string::npos) throw std::invalid_argument("--size " + s + ": expected SHAPE=N");
        auto shape = s.substr(0, at);
        if (!known_shape(shape)) throw std::invalid_argument("--size " + s + ": unknown shape " + shape);
        o.sizes.emplace_back(shape, parse_count("--size " + shape, s.substr(at + 1)));
      }
    } else if (arg == "--iters") {
      o.iters.clear();
      for (auto& s : split(value)) {
        auto v = parse_count("--iters", s);
        if (v > 0xffffffffULL) throw std::invalid_argument("--iters " + s + ": allowed 0..=4294967295");
        o.iters.push_back(static_cast<unsigned>(v));
      }
    } else if (arg == "--rounds") {
      o.rounds = parse_count("--rounds", value);
      if (o.rounds == 0) throw std::invalid_argument("--rounds 0: allowed 1 or more");
    } else if (arg == "--seed") {
      o.seed = parse_count("--seed", value);
    } else if (arg == "--gpu") {
      o.gpu = static_cast<int>(parse_count("--gpu", value));
    } else if (arg == "--csv") {
      o.csv = value;
    } else if (arg == "--variants") {
      o.variants = split(value);
      for (auto& v : o.variants)
        if (std::find(names.begin(), names.end(), v) == names.end())
          throw std::invalid_argument("--variants: unknown variant " + v);
    } else {
      throw std::invalid_argument("unknown option " + arg + " (--help lists them)");
    }
  }
  return true;
}

// The whole bench of one peer program: `factories` make its variants (a fresh one per
// shape and iteration count). Exit status 0 when every run finished and every sink
// check held.
inline int run_main(int argc, char** argv, const char* program, const std::vector<Factory>& factories) {
  try {
    std::vector<std::string> names;
    for (auto& f : factories) names.push_back(f.name);
    Options o;
    if (!parse(argc, argv, o, names)) return 0;
    std::vector<size_t> chosen;
    for (size_t k = 0; k < factories.size(); ++k)
      if (o.variants.empty() || std::find(o.variants.begin(), o.variants.end(), names[k]) != o.variants.end())
        chosen.push_back(k);
    int devices = 0;
    FLOW_CUDA(cudaGetDeviceCount(&devices));
    if (o.gpu >= devices)
      throw std::invalid_argument("--gpu " + std::to_string(o.gpu) + ": this machine has " + std::to_string(devices) +
                                  " GPU(s)");
    FLOW_CUDA(cudaSetDevice(o.gpu));
    FLOW_CUDA(cudaFree(nullptr));
    float* sink = nullptr;
    FLOW_CUDA(cudaMalloc(&sink, sizeof(float)));
    std::ofstream csv;
    if (!o.csv.empty()) {
      csv.open(o.csv);
      if (!csv) throw std::runtime_error("--csv " + o.csv + ": cannot create the file");
      csv << "shape,size,nodes,edges,iters,variant,round,wall_ns,build_ns,replayed_tasks,lanes,submit_ns,"
             "window_host_ns,window_ns\n";
    }
    cudaDeviceProp prop{};
    FLOW_CUDA(cudaGetDeviceProperties(&prop, o.gpu));
    std::printf("%s: GPU %d (%s), %zu rounds after one warm-up, seed %llu\n", program, o.gpu, prop.name, o.rounds,
                static_cast<unsigned long long>(o.seed));
    std::printf("%-5s %6s %7s %7s %6s | %-16s %10s %8s %10s %10s\n", "shape", "size", "nodes", "edges", "iters",
                "variant", "median ms", "us/node", "submit ms", "build ms");
    bool ok = true;
    for (auto& shape : o.shapes) {
      size_t size = default_size(shape);
      for (auto& [s, n] : o.sizes)
        if (s == shape) size = n;
      Graph g = make_graph(shape, size, o.seed);
      auto preds = g.predecessors();
      std::printf("graph %s size %zu: %zu nodes, %zu edges, edge hash %016llx\n", shape.c_str(), size, g.nodes,
                  g.edges.size(), static_cast<unsigned long long>(graph_hash(g)));
      for (unsigned iters : o.iters) {
        std::vector<std::unique_ptr<Variant>> vs;
        std::vector<uint64_t> build;
        for (size_t k : chosen) {
          vs.push_back(factories[k].make());
          build.push_back(vs.back()->prepare(g, preds, NodeWork{iters, sink}));
        }
        std::vector<std::vector<uint64_t>> walls(vs.size()), submits(vs.size());
        float expected = spin_value(iters);
        for (size_t round = 0; round <= o.rounds; ++round) {
          for (size_t turn = 0; turn < vs.size(); ++turn) {
            size_t which = (round + turn) % vs.size();
            if (round == 0) FLOW_CUDA(cudaMemset(sink, 0, sizeof(float)));
            RunTiming t = vs[which]->run();
            if (round == 0) {
              float got = 0;
              FLOW_CUDA(cudaMemcpy(&got, sink, sizeof(float), cudaMemcpyDeviceToHost));
              if (got != expected) {
                std::fprintf(stderr, "%s: %s on %s: the sink holds %g after a run, not %g: its kernels did not run\n",
                             program, vs[which]->name(), shape.c_str(), got, expected);
                ok = false;
              }
            } else {
              walls[which].push_back(t.wall_ns);
              submits[which].push_back(t.submit_ns);
            }
            if (csv)
              csv << shape << ',' << size << ',' << g.nodes << ',' << g.edges.size() << ',' << iters << ','
                  << vs[which]->name() << ',' << round << ',' << t.wall_ns << ',' << build[which] << ",0,0,"
                  << t.submit_ns << ",0,0\n";
          }
        }
        for (size_t k = 0; k < vs.size(); ++k) {
          uint64_t w = median(walls[k]);
          std::printf("%-5s %6zu %7zu %7zu %6u | %-16s %10.3f %8.2f %10.3f %10.3f\n", shape.c_str(), size, g.nodes,
                      g.edges.size(), iters, vs[k]->name(), w / 1e6, w / 1e3 / g.nodes, median(submits[k]) / 1e6,
                      build[k] / 1e6);
        }
        std::fflush(stdout);
      }
    }
    cudaFree(sink);
    std::printf(
        "median ms: launch (or first call) to synchronize, medians of the timed rounds; submit ms: of it, the part "
        "before the graph reached the GPU; build ms: building the graph once (0: built in every run)\n");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 2;
  }
}

}  // namespace flow
