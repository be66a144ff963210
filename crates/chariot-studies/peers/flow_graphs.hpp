// The flow bench's task graphs, in C++, for the peers (CUDASTF, Taskflow) to run the
// very graphs chariot and the hand-written CUDA graph run. Host code only.
//
// The shapes and their generators follow chariot-studies' flow module line by line:
// lc (linear chain), ep (independent nodes), dc (complete binary tree, parent ->
// children), mr (map-reduce: 16 mappers and a reducer per iteration), dag (random DAG
// by levels), rnd (MUSTARD's generated graphs). The random shapes draw from Rust's
// `StdRng::seed_from_u64(seed)` (rand 0.9: ChaCha12 keyed by PCG32), with
// `random_range` on an inclusive usize range (rand 0.9's UniformUsize: u32 sampling,
// Canon's method) and `rand::seq::index::sample` (Floyd's algorithm for the few
// indices drawn here), reproduced exactly, so that the same seed gives the same edges.
// `graph_hash` fingerprints the edge list; check-graphs.sh compares it with Rust's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flow {

// Mappers per map-reduce iteration, the widest random-DAG level, the most edges of a
// random-DAG node, the average predecessors of an rnd node and how far back it draws
// them: the flow module's MAPPERS, DAG_WIDTH, DAG_FAN_OUT, RND_DEGREE, RND_WINDOW.
constexpr size_t MAPPERS = 16;
constexpr size_t DAG_WIDTH = 50;
constexpr size_t DAG_FAN_OUT = 5;
constexpr size_t RND_DEGREE = 2;
constexpr size_t RND_WINDOW = 64;

// rand 0.9's StdRng: ChaCha with 12 rounds, a 64-bit block counter and a zero stream,
// four blocks buffered; seeded from a u64 through PCG32 as rand_core's seed_from_u64.
class StdRng {
 public:
  explicit StdRng(uint64_t state) {
    for (auto& k : key_) {
      state = state * 6364136223846793005ULL + 11634580027462260723ULL;
      auto xorshifted = static_cast<uint32_t>(((state >> 18) ^ state) >> 27);
      auto rot = static_cast<uint32_t>(state >> 59);
      k = rotr(xorshifted, rot);  // little-endian bytes of a word: the word itself
    }
  }

  uint32_t next_u32() {
    if (index_ >= 64) refill();
    return buf_[index_++];
  }

  // `rng.random_range(low..=high)` for a usize range whose high fits in 32 bits: rand
  // 0.9's UniformInt<u32>::sample_single_inclusive (Canon's method, not "unbiased").
  uint32_t range_inclusive(uint32_t low, uint32_t high) {
    if (low > high) throw std::invalid_argument("range_inclusive: empty range");
    uint32_t range = high - low + 1;
    if (range == 0) return next_u32();
    uint64_t m = static_cast<uint64_t>(next_u32()) * range;
    auto result = static_cast<uint32_t>(m >> 32);
    auto lo = static_cast<uint32_t>(m);
    if (lo > static_cast<uint32_t>(0u - range)) {
      auto new_hi = static_cast<uint32_t>((static_cast<uint64_t>(next_u32()) * range) >> 32);
      if (static_cast<uint64_t>(lo) + new_hi > 0xffffffffULL) result += 1;
    }
    return low + result;
  }

  // `rand::seq::index::sample(rng, length, amount)` for amount <= 11 (Floyd's
  // combination algorithm, which rand picks for every amount below 12), unsorted.
  std::vector<size_t> sample(size_t length, size_t amount) {
    if (amount > length) throw std::invalid_argument("sample: amount above length");
    if (amount > 11 || length > 0xffffffffULL) throw std::invalid_argument("sample: only Floyd's case is reproduced");
    std::vector<size_t> indices;
    auto len = static_cast<uint32_t>(length), am = static_cast<uint32_t>(amount);
    for (uint32_t j = len - am; j < len; ++j) {
      size_t t = range_inclusive(0, j);
      auto pos = std::find(indices.begin(), indices.end(), t);
      if (pos != indices.end()) *pos = j;
      indices.push_back(t);
    }
    return indices;
  }

 private:
  static uint32_t rotr(uint32_t x, uint32_t r) { return r == 0 ? x : (x >> r) | (x << (32 - r)); }
  static uint32_t rotl(uint32_t x, uint32_t r) { return (x << r) | (x >> (32 - r)); }
  static void quarter(uint32_t* x, int a, int b, int c, int d) {
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);
  }
  void refill() {
    for (int blk = 0; blk < 4; ++blk) {
      uint32_t in[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
      for (int i = 0; i < 8; ++i) in[4 + i] = key_[i];
      in[12] = static_cast<uint32_t>(counter_);
      in[13] = static_cast<uint32_t>(counter_ >> 32);
      in[14] = in[15] = 0;
      uint32_t x[16];
      std::copy(in, in + 16, x);
      for (int r = 0; r < 6; ++r) {  // 12 rounds: 6 double rounds
        quarter(x, 0, 4, 8, 12); quarter(x, 1, 5, 9, 13); quarter(x, 2, 6, 10, 14); quarter(x, 3, 7, 11, 15);
        quarter(x, 0, 5, 10, 15); quarter(x, 1, 6, 11, 12); quarter(x, 2, 7, 8, 13); quarter(x, 3, 4, 9, 14);
      }
      for (int i = 0; i < 16; ++i) buf_[blk * 16 + i] = x[i] + in[i];
      ++counter_;
    }
    index_ = 0;
  }

  uint32_t key_[8];
  uint64_t counter_ = 0;
  uint32_t buf_[64];
  int index_ = 64;
};

// A task graph: `nodes` nodes in topological order, edges (predecessor, successor)
// with predecessor < successor, in the flow module's order.
struct Graph {
  std::string shape;
  size_t size = 0;
  size_t nodes = 0;
  std::vector<std::pair<size_t, size_t>> edges;

  // Each node's predecessors, ascending.
  std::vector<std::vector<size_t>> predecessors() const {
    std::vector<std::vector<size_t>> p(nodes);
    for (auto [a, b] : edges) p[b].push_back(a);
    for (auto& v : p) std::sort(v.begin(), v.end());
    return p;
  }
};

inline bool known_shape(const std::string& s) {
  return s == "lc" || s == "ep" || s == "dc" || s == "mr" || s == "dag" || s == "rnd";
}

// The flow bench's default size of a shape on CUDA.
inline size_t default_size(const std::string& shape) {
  if (shape == "dc") return 10;
  if (shape == "mr") return 64;
  if (shape == "dag") return 32;
  return 1024;
}

// The flow module's `Graph::new(shape, size, seed)`.
inline Graph make_graph(const std::string& shape, size_t size, uint64_t seed) {
  if (!known_shape(shape)) throw std::invalid_argument("unknown shape " + shape + " (lc, ep, dc, mr, dag, rnd)");
  size_t max = shape == "dc" ? 24 : (size_t{1} << 24);
  if (size == 0 || size > max)
    throw std::invalid_argument("size " + std::to_string(size) + " for " + shape + ": allowed 1..=" + std::to_string(max));
  Graph g;
  g.shape = shape;
  g.size = size;
  if (shape == "lc") {
    g.nodes = size;
    for (size_t i = 1; i < size; ++i) g.edges.emplace_back(i - 1, i);
  } else if (shape == "ep") {
    g.nodes = size;
  } else if (shape == "dc") {
    g.nodes = (size_t{1} << size) - 1;
    for (size_t c = 1; c < g.nodes; ++c) g.edges.emplace_back((c - 1) / 2, c);
  } else if (shape == "mr") {
    size_t per = MAPPERS + 1;
    for (size_t k = 0; k < size; ++k) {
      size_t base = k * per;
      for (size_t m = 0; m < MAPPERS; ++m) {
        if (k > 0) g.edges.emplace_back(base - 1, base + m);
        g.edges.emplace_back(base + m, base + MAPPERS);
      }
    }
    std::stable_sort(g.edges.begin(), g.edges.end(), [](auto a, auto b) {
      return std::make_pair(a.second, a.first) < std::make_pair(b.second, b.first);
    });
    g.nodes = size * per;
  } else if (shape == "dag") {
    StdRng rng(seed);
    std::vector<size_t> sizes(size);
    for (auto& s : sizes) s = rng.range_inclusive(1, DAG_WIDTH);
    size_t start = 0;
    for (size_t l = 0; l < size; ++l) {
      size_t next = start + sizes[l];
      if (l + 1 < size) {
        for (size_t node = start; node < next; ++node) {
          size_t k = rng.range_inclusive(1, static_cast<uint32_t>(std::min(DAG_FAN_OUT, sizes[l + 1])));
          auto to = rng.sample(sizes[l + 1], k);
          for (auto& t : to) t += next;
          std::sort(to.begin(), to.end());
          for (auto t : to) g.edges.emplace_back(node, t);
        }
      }
      start = next;
    }
    g.nodes = start;
  } else {  // rnd
    StdRng rng(seed);
    for (size_t i = 1; i < size; ++i) {
      size_t from = i > RND_WINDOW ? i - RND_WINDOW : 0;
      size_t k = std::min<size_t>(rng.range_inclusive(0, 2 * RND_DEGREE), i - from);
      auto preds = rng.sample(i - from, k);
      for (auto& p : preds) p += from;
      std::sort(preds.begin(), preds.end());
      for (auto p : preds) g.edges.emplace_back(p, i);
    }
    g.nodes = size;
  }
  return g;
}

// FNV-1a over the node count and every edge (as little-endian u64s, in order).
inline uint64_t graph_hash(const Graph& g) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto eat = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  };
  eat(g.nodes);
  for (auto [a, b] : g.edges) {
    eat(a);
    eat(b);
  }
  return h;
}

}  // namespace flow
