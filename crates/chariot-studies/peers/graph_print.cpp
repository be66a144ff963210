// Prints every shape's node count, edge count and edge-list hash at the flow bench's
// CUDA sizes (and seeds 1 to 3 for the random ones), one line each, for
// check-graphs.sh to compare with the Rust generators'. Host code only.
#include "flow_graphs.hpp"

#include <cinttypes>

int main() {
  for (const char* shape : {"lc", "ep", "dc", "mr", "dag", "rnd"}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      for (size_t size : {flow::default_size(shape), size_t{4}, size_t{7}}) {
        auto g = flow::make_graph(shape, size, seed);
        std::printf("%s %zu %" PRIu64 " %zu %zu %016" PRIx64 "\n", shape, size, seed, g.nodes, g.edges.size(),
                    flow::graph_hash(g));
      }
    }
  }
  return 0;
}
