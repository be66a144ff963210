// CUDASTF (NVIDIA CCCL's sequential task flow) on the flow bench's shapes.
//
// The DAG is expressed the way CUDASTF infers dependencies, from data accesses: one
// token (a logical data without payload) per node, written by the node and read by
// each of its successors. Node i's task writes token i and reads the tokens of its
// predecessors, so CUDASTF orders it after exactly those nodes: the only writer of a
// token is its node, its readers read concurrently, and a token is written once per
// run, so no other edge (write after read, write after write) arises. Each task is a
// `cuda_kernel` task (one launch of flow_spin, one block), which the graph back end
// turns into a kernel node rather than a stream capture.
//
// Variants (see flow_peer.hpp for the protocol):
//   stf-stream      a stream_ctx per run: the tokens, the tasks, finalize (which waits);
//                   CUDASTF's stream back end, every run submitted again (chariot's
//                   per-iteration loop is its counterpart)
//   stf-graph       a graph_ctx per run, likewise: finalize builds the run's CUDA graph,
//                   instantiates it or, as CUDASTF does for a graph it has seen,
//                   updates the cached executable graph in place, launches it and waits
//   stf-graph-exec  one graph_ctx, its graph taken once with finalize_as_graph() and
//                   instantiated (build ms), then launched and waited for per run: the
//                   same protocol as the hand-written CUDA graph
//   cuda-graph-nvcc the hand-written CUDA graph (flow_peer.hpp), this process's reference
// Every context shares one async_resources_handle (stream pools and the cache
// of executable graphs), as a program that runs the same graph many times would; the
// contexts themselves are made before a run's clock starts.
#include "flow_peer.hpp"

#include <cuda/experimental/stf.cuh>

namespace stf = cuda::experimental::stf;

namespace {

// Left to the process's end, not destroyed at exit: its streams and graphs would be
// freed after the CUDA runtime's own teardown.
stf::async_resources_handle& shared_resources() {
  static auto* handle = new stf::async_resources_handle;
  return *handle;
}

// Submits the graph's nodes to `ctx`: a token per node, then a kernel task per node in
// topological order, writing its token and reading its predecessors'.
template <typename Ctx>
void submit_nodes(Ctx& ctx, const std::vector<std::vector<size_t>>& preds, flow::NodeWork work,
                  std::vector<stf::token>& tokens) {
  tokens.clear();
  tokens.reserve(preds.size());
  for (size_t i = 0; i < preds.size(); ++i) tokens.push_back(ctx.token());
  for (size_t i = 0; i < preds.size(); ++i) {
    auto t = ctx.cuda_kernel();
    t.add_deps(tokens[i].write());
    for (size_t p : preds[i]) t.add_deps(tokens[p].read());
    t->*[&]() { return stf::cuda_kernel_desc{flow_spin, 1, flow::BLOCK, 0, work.sink, work.iters}; };
  }
}

// A context of type Ctx per run, finalized (and so waited for) in the run.
template <typename Ctx>
class PerRun final : public flow::Variant {
 public:
  explicit PerRun(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  uint64_t prepare(const flow::Graph&, const std::vector<std::vector<size_t>>& preds, flow::NodeWork work) override {
    preds_ = &preds;
    work_ = work;
    return 0;
  }
  flow::RunTiming run() override {
    Ctx ctx(shared_resources());
    std::vector<stf::token> tokens;
    uint64_t t0 = flow::now_ns();
    submit_nodes(ctx, *preds_, work_, tokens);
    uint64_t t1 = flow::now_ns();
    ctx.finalize();
    uint64_t t2 = flow::now_ns();
    return {t2 - t0, t1 - t0};
  }

 private:
  const char* name_;
  const std::vector<std::vector<size_t>>* preds_ = nullptr;
  flow::NodeWork work_;
};

// One graph_ctx's graph, instantiated once, launched per run.
class GraphExec final : public flow::Variant {
 public:
  ~GraphExec() override {
    if (stream_) {
      if (ctx_) ctx_->release_resources(stream_);
      cudaStreamSynchronize(stream_);
    }
    if (exec_) cudaGraphExecDestroy(exec_);
    graph_.reset();
    tokens_.clear();
    ctx_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }
  const char* name() const override { return "stf-graph-exec"; }
  uint64_t prepare(const flow::Graph&, const std::vector<std::vector<size_t>>& preds, flow::NodeWork work) override {
    FLOW_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ctx_ = std::make_unique<stf::graph_ctx>(shared_resources());
    uint64_t t0 = flow::now_ns();
    submit_nodes(*ctx_, preds, work, tokens_);
    graph_ = ctx_->finalize_as_graph();
    FLOW_CUDA(cudaGraphInstantiate(&exec_, *graph_, 0));
    return flow::now_ns() - t0;
  }
  flow::RunTiming run() override {
    uint64_t t0 = flow::now_ns();
    FLOW_CUDA(cudaGraphLaunch(exec_, stream_));
    FLOW_CUDA(cudaStreamSynchronize(stream_));
    return {flow::now_ns() - t0, 0};
  }

 private:
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<stf::graph_ctx> ctx_;
  std::vector<stf::token> tokens_;
  std::shared_ptr<cudaGraph_t> graph_;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  return flow::run_main(argc, argv, "stf-flow",
                        {
                            {"stf-stream", [] { return std::make_unique<PerRun<stf::stream_ctx>>("stf-stream"); }},
                            {"stf-graph", [] { return std::make_unique<PerRun<stf::graph_ctx>>("stf-graph"); }},
                            {"stf-graph-exec", [] { return std::make_unique<GraphExec>(); }},
                            {"cuda-graph-nvcc", [] { return std::make_unique<flow::HandGraph>(); }},
                        });
}
