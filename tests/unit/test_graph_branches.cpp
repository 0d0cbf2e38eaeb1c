// Graph mode's branches (src/exec/graph_branches.hpp): a step depends on exactly the earlier steps
// whose bytes it conflicts with (transitively reduced), collectives order everything, and the
// streams, waits and events that place_branches returns order every conflicting pair of steps
// whatever the number of streams -- checked on hand-made cases, on random accesses, and on the
// Llama decode layer's regions with the arena's real offsets, where q, k and v run side by side.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "example_graphs.hpp"
#include "exec/graph_branches.hpp"
#include "plan/memory_plan.hpp"

using namespace sinter;
using exec::ByteRange;
using exec::StepAccess;

namespace {

StepAccess rw(std::vector<ByteRange> reads, std::vector<ByteRange> writes) {
  StepAccess a;
  a.reads = std::move(reads);
  a.writes = std::move(writes);
  return a;
}
ByteRange at(uintptr_t b, uintptr_t bytes = 16) { return {b, b + bytes}; }

// happens_before[i][j]: step i is ordered before step j by the placement (stream order, then the
// waits on other streams' events), transitively.
std::vector<std::vector<char>> happens_before(const exec::GraphBranches& g) {
  const size_t n = g.stream_of.size();
  std::vector<std::vector<char>> hb(n, std::vector<char>(n, 0));
  std::vector<int> last(static_cast<size_t>(g.streams), -1);
  for (size_t j = 0; j < n; ++j) {
    std::vector<int> direct = g.waits[j];
    const int s = g.stream_of[j];
    if (last[static_cast<size_t>(s)] >= 0) direct.push_back(last[static_cast<size_t>(s)]);
    for (int p : direct) {
      EXPECT_LT(p, static_cast<int>(j));
      hb[static_cast<size_t>(p)][j] = 1;
      for (size_t i = 0; i < n; ++i) {
        if (hb[i][static_cast<size_t>(p)]) hb[i][j] = 1;
      }
    }
    last[static_cast<size_t>(s)] = static_cast<int>(j);
  }
  return hb;
}

bool conflicts(const StepAccess& a, const StepAccess& b) {
  auto meet = [](const std::vector<ByteRange>& x, const std::vector<ByteRange>& y) {
    for (const ByteRange& u : x) {
      for (const ByteRange& v : y) {
        if (u.begin < v.end && v.begin < u.end) return true;
      }
    }
    return false;
  };
  return a.barrier || b.barrier || meet(a.writes, b.reads) || meet(a.writes, b.writes) || meet(a.reads, b.writes);
}

// Every conflicting pair is ordered, every wait names a step whose event is recorded, and no more
// than max_streams streams are used.
void expect_safe(const std::vector<StepAccess>& steps, int max_streams, const std::string& what) {
  const exec::GraphBranches g = exec::place_branches(steps, max_streams);
  ASSERT_EQ(g.stream_of.size(), steps.size()) << what;
  EXPECT_LE(g.streams, max_streams) << what;
  const auto hb = happens_before(g);
  for (size_t j = 0; j < steps.size(); ++j) {
    for (int p : g.waits[j]) {
      EXPECT_TRUE(g.record[static_cast<size_t>(p)]) << what << ": step " << j << " waits on " << p;
      EXPECT_NE(g.stream_of[static_cast<size_t>(p)], g.stream_of[j]) << what;
    }
    for (size_t i = 0; i < j; ++i) {
      if (conflicts(steps[i], steps[j])) {
        EXPECT_TRUE(hb[i][j]) << what << ": steps " << i << " and " << j;
      }
    }
  }
}

}  // namespace

TEST(GraphBranches, DependenciesAreTheConflictsTransitivelyReduced) {
  // 0 writes X; 1 reads X, writes Y; 2 reads X, writes Z; 3 reads Y, Z and X, writes W;
  // 4 writes X again (after 1, 2 and 3 read it); 5 reads nothing anyone writes
  const ByteRange X = at(0), Y = at(100), Z = at(200), W = at(300), V = at(400), U = at(500);
  const std::vector<StepAccess> steps = {rw({}, {X}),         rw({X}, {Y}), rw({X}, {Z}), rw({Y, Z, X}, {W}),
                                         rw({V}, {X}), rw({V}, {U})};
  const auto deps = exec::step_dependencies(steps);
  EXPECT_EQ(deps[0], std::vector<int>{});
  EXPECT_EQ(deps[1], std::vector<int>{0});
  EXPECT_EQ(deps[2], std::vector<int>{0});
  EXPECT_EQ(deps[3], (std::vector<int>{1, 2}));  // 0 is an ancestor of both
  EXPECT_EQ(deps[4], std::vector<int>{3});       // write after the reads of 1, 2 and 3: 3 follows 1 and 2
  EXPECT_EQ(deps[5], std::vector<int>{});

  const exec::GraphBranches one = exec::place_branches(steps, 1);
  EXPECT_EQ(one.streams, 1);
  for (const auto& w : one.waits) EXPECT_TRUE(w.empty());

  const exec::GraphBranches four = exec::place_branches(steps, 4);
  EXPECT_NE(four.stream_of[1], four.stream_of[2]);  // the two readers of X side by side
  EXPECT_EQ(four.stream_of[1], four.stream_of[0]);  // 1 continues 0's stream
  EXPECT_EQ(four.waits[3].size(), 1u);              // 3 continues one of 1, 2 and waits for the other
  expect_safe(steps, 4, "hand-made");
  expect_safe(steps, 2, "hand-made, 2 streams");
}

TEST(GraphBranches, ACollectiveOrdersEverything) {
  const ByteRange X = at(0), Y = at(100), Z = at(200), C = at(300);
  StepAccess coll = rw({C}, {C});
  coll.barrier = true;
  const std::vector<StepAccess> steps = {rw({}, {X}), rw({}, {Y}), coll, rw({}, {Z}), rw({X}, {Y})};
  const auto deps = exec::step_dependencies(steps);
  EXPECT_EQ(deps[2], (std::vector<int>{0, 1}));
  EXPECT_EQ(deps[3], std::vector<int>{2});  // touches nothing of the others, still after the collective
  EXPECT_EQ(deps[4], std::vector<int>{2});  // its conflicts with 0 and 1 are behind the collective
  expect_safe(steps, 4, "collective");
}

TEST(GraphBranches, RandomAccessesAreAlwaysOrdered) {
  std::mt19937 rng(20261207);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 40);
    std::vector<StepAccess> steps(static_cast<size_t>(n));
    for (StepAccess& s : steps) {
      const int reads = static_cast<int>(rng() % 4), writes = static_cast<int>(rng() % 3);
      for (int r = 0; r < reads; ++r) s.reads.push_back(at(16 * (rng() % 24), 16 * (1 + rng() % 3)));
      for (int w = 0; w < writes; ++w) s.writes.push_back(at(16 * (rng() % 24), 16 * (1 + rng() % 3)));
      s.barrier = rng() % 29 == 0;
    }
    for (int streams : {1, 2, 3, 8}) expect_safe(steps, streams, "trial " + std::to_string(trial));
  }
}

namespace {

// The steps of g's regions as the runner sees them: intermediates at the arena's offsets (from
// 1 << 44), or each in a slot of its own (slots), graph inputs and outputs in 64 MiB slots of
// their own (from 1 << 28); aliases (reshapes) at their root's address.
std::vector<StepAccess> region_steps(const Graph& g, const fuse::Partition& p, bool slots) {
  std::vector<TensorId> alias(g.tensors().size(), -1);
  for (const fuse::Region& r : p.regions) {
    const TensorId out = r.kind == fuse::RegionKind::alias ? g.node(r.anchor).outputs[0] : -1;
    if (out >= 0 && std::find(g.outputs().begin(), g.outputs().end(), out) == g.outputs().end()) {
      alias[out] = g.node(r.anchor).inputs[0];
    }
  }
  const plan::MemoryPlan m = plan::plan_memory(g, p, alias);
  std::vector<const void*> pointer_of(g.tensors().size(), nullptr);
  uintptr_t slot = uintptr_t{1} << 44;
  for (const plan::BufferAssignment& b : m.buffers) {
    pointer_of[b.tensor] = reinterpret_cast<const void*>(slots ? slot : (uintptr_t{1} << 44) + b.offset);
    slot += b.bytes;
  }
  uintptr_t next = uintptr_t{1} << 28;
  for (const auto* list : {&g.inputs(), &g.outputs()}) {
    for (TensorId t : *list) {
      pointer_of[t] = reinterpret_cast<const void*>(next);
      next += uintptr_t{1} << 26;
    }
  }
  for (size_t t = 0; t < pointer_of.size(); ++t) {
    TensorId root = static_cast<TensorId>(t);
    while (alias[root] >= 0) root = alias[root];
    pointer_of[t] = pointer_of[root];
  }
  std::vector<StepAccess> steps;
  for (const fuse::Region& r : p.regions) {
    Binding b;
    for (TensorId t : r.inputs) b.inputs.push_back(pointer_of[t]);
    for (TensorId t : r.outputs) b.outputs.push_back(const_cast<void*>(pointer_of[t]));
    steps.push_back(exec::step_access(g, r, b, 0, r.kind == fuse::RegionKind::alias, alias));
  }
  return steps;
}

// The most launching steps on one path of the dependencies.
int longest_chain(const std::vector<StepAccess>& steps) {
  const auto deps = exec::step_dependencies(steps);
  std::vector<int> depth(steps.size(), 0);
  int longest = 0;
  for (size_t j = 0; j < steps.size(); ++j) {
    for (int d : deps[j]) depth[j] = std::max(depth[j], depth[static_cast<size_t>(d)]);
    depth[j] += steps[j].launches ? 1 : 0;
    longest = std::max(longest, depth[j]);
  }
  return longest;
}

}  // namespace

TEST(GraphBranches, TheLlamaDecodeLayersProjectionsRunSideBySide) {
  const Graph g = examples::llama_decode_layer();
  const fuse::Partition p = fuse::partition_graph(g);
  const std::vector<StepAccess> steps = region_steps(g, p, false);
  std::vector<int> matmuls;
  for (const fuse::Region& r : p.regions) {
    if (r.kind == fuse::RegionKind::matmul) matmuls.push_back(r.id);
  }
  expect_safe(steps, 4, "llama_decode_layer");
  const exec::GraphBranches br = exec::place_branches(steps, 4);
  ASSERT_GE(matmuls.size(), 3u);
  // q, k and v (the first three matmuls) read the same normed x and nothing of each other
  const int q = br.stream_of[static_cast<size_t>(matmuls[0])], k = br.stream_of[static_cast<size_t>(matmuls[1])],
            v = br.stream_of[static_cast<size_t>(matmuls[2])];
  EXPECT_TRUE(q != k && k != v && q != v) << q << " " << k << " " << v;
  EXPECT_GE(br.streams, 3);
  // attention continues the stream of its longest input chain (norm, k, rope, k cache copy), so
  // its launch may overlap that copy's end; it waits for the q rope and the v copy's events
  int k_copy = -1, sdpa = -1;
  for (const fuse::Region& r : p.regions) {
    if (r.kind == fuse::RegionKind::layout && k_copy < 0) k_copy = r.id;
    if (r.kind == fuse::RegionKind::sdpa) sdpa = r.id;
  }
  ASSERT_GE(k_copy, 0);
  ASSERT_GE(sdpa, 0);
  EXPECT_EQ(br.stream_of[static_cast<size_t>(sdpa)], br.stream_of[static_cast<size_t>(k_copy)]);
  EXPECT_EQ(br.waits[static_cast<size_t>(sdpa)].size(), 2u);
}

// The arena (plan_memory) shares bytes only between tensors the data orders, so it adds no order
// of its own: on the 16-layer decode stack and every example, the longest chain of launches with
// the arena's offsets is the one with a slot per tensor (sharing by non-overlapping lifetimes
// alone would make the stack's 209 launches against 161).
TEST(GraphBranches, TheArenaAddsNoOrder) {
  std::vector<std::pair<std::string, Graph>> graphs = {{"llama_decode_stack", examples::llama_decode_stack()}};
  for (const auto& ex : examples::all_examples()) graphs.emplace_back(ex.file, ex.build());
  for (const auto& [name, g] : graphs) {
    const fuse::Partition p = fuse::partition_graph(g);
    const std::vector<StepAccess> arena = region_steps(g, p, false), slots = region_steps(g, p, true);
    EXPECT_EQ(longest_chain(arena), longest_chain(slots)) << name;
    expect_safe(arena, 4, name);
  }
  const Graph stack = examples::llama_decode_stack();
  const std::vector<StepAccess> steps = region_steps(stack, fuse::partition_graph(stack), false);
  int launches = 0;
  for (const StepAccess& a : steps) launches += a.launches ? 1 : 0;
  EXPECT_LT(longest_chain(steps), launches * 3 / 4) << "the stack's branches shorten its critical path";
  const exec::GraphBranches br = exec::place_branches(steps, 4);
  EXPECT_GE(br.streams, 3);
  EXPECT_EQ(br.launches, launches);
  EXPECT_EQ(br.chain, longest_chain(steps));
}

// What decides the dependencies among bound tensors: the pairs of ranges whose bytes meet
// (touching ends do not), by owner, sorted; empty ranges meet nothing.
TEST(GraphBranches, OverlappingPairs) {
  const std::vector<ByteRange> ranges = {at(0, 100), at(100, 50), at(120, 10), at(300, 10), at(50, 60), at(400, 0)};
  const std::vector<int> owner = {-1, 7, 3, 9, 4, 5};
  const std::vector<std::pair<int, int>> want = {{-1, 4}, {3, 7}, {4, 7}};
  EXPECT_EQ(exec::overlapping_pairs(ranges, owner), want);
  EXPECT_TRUE(exec::overlapping_pairs({at(0, 10), at(10, 10)}, {1, 2}).empty());
}
