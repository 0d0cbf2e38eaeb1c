// The arena memory plan: tensors whose lifetimes overlap never share bytes, reuse makes the arena
// smaller than one slot per tensor on graphs with a chain of intermediates, and graph inputs and
// outputs, whose memory the caller binds, take no arena bytes.
#include <gtest/gtest.h>

#include <algorithm>

#include "example_graphs.hpp"
#include "plan/memory_plan.hpp"

using namespace sinter;

namespace {
std::vector<TensorId> reshape_aliases(const Graph& g, const fuse::Partition& p) {
  std::vector<TensorId> alias(g.tensors().size(), -1);
  for (const fuse::Region& r : p.regions) {
    // as the alias engine: graph outputs are copied, not aliased
    const TensorId out = r.kind == fuse::RegionKind::alias ? g.node(r.anchor).outputs[0] : -1;
    if (out >= 0 && std::find(g.outputs().begin(), g.outputs().end(), out) == g.outputs().end()) {
      alias[out] = g.node(r.anchor).inputs[0];
    }
  }
  return alias;
}
}  // namespace

TEST(MemoryPlan, ExamplesAreSafeAndReuse) {
  for (const auto& ex : examples::all_examples()) {
    const Graph g = ex.build();
    const fuse::Partition p = fuse::partition_graph(g);
    const plan::MemoryPlan m = plan::plan_memory(g, p, reshape_aliases(g, p));
    EXPECT_NO_THROW(plan::verify_memory_plan(g, m)) << ex.file;
    EXPECT_LE(m.arena_bytes, m.naive_bytes) << ex.file;
    for (TensorId out : g.outputs()) {
      bool found = false;
      for (const auto& b : m.buffers) found = found || b.tensor == out;
      EXPECT_FALSE(found) << ex.file << ": output " << g.tensor(out).name << " has an arena buffer";
    }
  }
}

TEST(MemoryPlan, ChainReusesMemory) {
  Graph g("chain");
  auto x = g.input("x", DType::f32, {1024, 1024});
  auto w = g.input("w", DType::f32, {1024, 1024});
  Tensor h = x;
  for (int i = 0; i < 6; ++i) h = g.matmul(h, w);  // six regions in a row
  g.output(h, "y");
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  const plan::MemoryPlan m = plan::plan_memory(g, p, reshape_aliases(g, p));
  plan::verify_memory_plan(g, m);
  EXPECT_EQ(m.naive_bytes, 5u * 1024 * 1024 * 4);  // the five intermediates; y is the caller's
  EXPECT_EQ(m.arena_bytes, 2u * 1024 * 1024 * 4);  // ping-pong between two buffers
}
