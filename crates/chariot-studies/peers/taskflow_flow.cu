// Taskflow's tf::cudaGraph on the flow bench's shapes.
//
// A kernel task per node (`cudaGraph::kernel`: flow_spin, one block), an edge per
// predecessor (`precede`), the executable graph made by tf::cudaGraphExec and run on
// a tf::cudaStream. Variants (see flow_peer.hpp for the protocol):
//   taskflow-graph    built and instantiated once (build ms), launched and waited for
//                     per run: the hand-written CUDA graph's protocol
//   taskflow-rebuild  built, instantiated, launched and waited for in every run (the
//                     graph object made before the clock starts), the counterpart of a
//                     loop that expresses its graph again on every run
//   cuda-graph-nvcc   the hand-written CUDA graph (flow_peer.hpp), this process's reference
// Taskflow's CPU executor is not used: the graph is launched on the stream directly.
#include "flow_peer.hpp"

// Taskflow's CUDA graph headers without the rest of Taskflow (cudaflow.hpp would pull in
// taskflow.hpp, whose utility/iterator.hpp does not build through nvcc 13 with g++ 12): what
// taskflow.hpp would have declared first, then the graph and its executable.
#include <taskflow/core/declarations.hpp>
#include <taskflow/core/error.hpp>
#include <taskflow/utility/math.hpp>
#include <taskflow/cuda/cuda_graph.hpp>
#include <taskflow/cuda/cuda_graph_exec.hpp>

// cudaflow.hpp's two aliases, as it defines them.
namespace tf {
using cudaGraph = cudaGraphBase<cudaGraphCreator, cudaGraphDeleter>;
using cudaGraphExec = cudaGraphExecBase<cudaGraphExecCreator, cudaGraphExecDeleter>;
}  // namespace tf

namespace {

// Adds the graph's nodes and edges to `cg`.
void build(tf::cudaGraph& cg, const std::vector<std::vector<size_t>>& preds, flow::NodeWork work) {
  std::vector<tf::cudaTask> tasks;
  tasks.reserve(preds.size());
  for (size_t i = 0; i < preds.size(); ++i) {
    tasks.push_back(cg.kernel(dim3(1), dim3(flow::BLOCK), 0, flow_spin, work.sink, work.iters));
    for (size_t p : preds[i]) tasks[p].precede(tasks[i]);
  }
}

class Once final : public flow::Variant {
 public:
  const char* name() const override { return "taskflow-graph"; }
  uint64_t prepare(const flow::Graph&, const std::vector<std::vector<size_t>>& preds, flow::NodeWork work) override {
    uint64_t t0 = flow::now_ns();
    build(cg_, preds, work);
    exec_ = std::make_unique<tf::cudaGraphExec>(cg_);
    return flow::now_ns() - t0;
  }
  flow::RunTiming run() override {
    uint64_t t0 = flow::now_ns();
    stream_.run(*exec_).synchronize();
    return {flow::now_ns() - t0, 0};
  }

 private:
  tf::cudaStream stream_;
  tf::cudaGraph cg_;
  std::unique_ptr<tf::cudaGraphExec> exec_;
};

class Rebuild final : public flow::Variant {
 public:
  const char* name() const override { return "taskflow-rebuild"; }
  uint64_t prepare(const flow::Graph&, const std::vector<std::vector<size_t>>& preds, flow::NodeWork work) override {
    preds_ = &preds;
    work_ = work;
    return 0;
  }
  flow::RunTiming run() override {
    tf::cudaGraph cg;
    uint64_t t0 = flow::now_ns();
    build(cg, *preds_, work_);
    tf::cudaGraphExec exec(cg);
    uint64_t t1 = flow::now_ns();
    stream_.run(exec).synchronize();
    return {flow::now_ns() - t0, t1 - t0};
  }

 private:
  tf::cudaStream stream_;
  const std::vector<std::vector<size_t>>* preds_ = nullptr;
  flow::NodeWork work_;
};

}  // namespace

int main(int argc, char** argv) {
  return flow::run_main(argc, argv, "taskflow-flow",
                        {
                            {"taskflow-graph", [] { return std::make_unique<Once>(); }},
                            {"taskflow-rebuild", [] { return std::make_unique<Rebuild>(); }},
                            {"cuda-graph-nvcc", [] { return std::make_unique<flow::HandGraph>(); }},
                        });
}
