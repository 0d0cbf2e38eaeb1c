// Layout chains as strided views (fuse/layout_view.hpp): reshape strides on known cases, and
// random slice/reshape/permute chains whose composed view, gathered straight from the input,
// must give exactly what the CPU reference computes op by op. Also the partitioner's use of it:
// the transformer block's q/k/v splits become one copy each.
#include <gtest/gtest.h>

#include <random>

#include "example_graphs.hpp"
#include "fuse/layout_view.hpp"
#include "fuse/region.hpp"
#include "sinter/reference.hpp"

using namespace sinter;
using namespace sinter::fuse;

TEST(LayoutView, ReshapeStrides) {
  // contiguous: any split or merge
  EXPECT_EQ(reshape_strides({4, 6}, {6, 1}, {2, 2, 3, 2}), (Dims{12, 6, 2, 1}));
  EXPECT_EQ(reshape_strides({2, 3, 4}, {12, 4, 1}, {24}), (Dims{1}));
  // a slice of the middle dim: dims on either side of it stay apart
  EXPECT_EQ(reshape_strides({2, 128, 1, 8, 64}, {196608, 1536, 512, 64, 1}, {2, 128, 8, 64}),
            (Dims{196608, 1536, 64, 1}));
  EXPECT_EQ(reshape_strides({2, 128, 1, 8, 64}, {196608, 1536, 512, 64, 1}, {256, 512}), (Dims{1536, 1}));
  EXPECT_FALSE(reshape_strides({2, 128, 1, 8, 64}, {196608, 1536, 512, 64, 1}, {2, 65536}));
  // a transpose cannot merge its two dims
  EXPECT_FALSE(reshape_strides({3, 4}, {1, 3}, {12}));
  const auto unit = reshape_strides({3, 4}, {1, 3}, {3, 1, 4, 1});  // unit dims: any stride
  ASSERT_TRUE(unit);
  EXPECT_EQ((*unit)[0], 1);
  EXPECT_EQ((*unit)[2], 3);
  // size-1 dims and scalars
  EXPECT_EQ(reshape_strides({1, 5, 1}, {99, 2, 7}, {5}), (Dims{2}));
  EXPECT_EQ(reshape_strides({}, {}, {1, 1}), (Dims{1, 1}));
}

namespace {

// x[i] read through view v: the row-major logical order of v.dims
HostTensor gather(const HostTensor& x, const StridedView& v) {
  HostTensor out(x.dtype(), v.dims);  // x is row-major, so get(offset) is element `offset`
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, off = v.offset;
    for (size_t d = v.dims.size(); d-- > 0;) {
      off += (rest % v.dims[d]) * v.strides[d];
      rest /= v.dims[d];
    }
    out.set(i, x.get(off));
  }
  return out;
}

// A random chain of 1-4 layout ops over a random input of rank 1-4.
Graph random_chain(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  Graph g("chain_" + std::to_string(seed));
  Dims dims;
  for (int64_t r = 1 + pick(4); r > 0; --r) dims.push_back(1 + pick(5));
  Tensor t = g.input("x", DType::f32, dims);
  for (int64_t ops = 1 + pick(4); ops > 0; --ops) {
    Dims d = g.tensor(t.id).dims;
    switch (pick(3)) {
      case 0: {  // slice one axis
        const int64_t ax = pick(static_cast<int64_t>(d.size()));
        const int64_t start = pick(d[ax]);
        const int64_t end = start + 1 + pick(d[ax] - start);
        const int64_t step = 1 + pick(2);
        t = g.slice(t, {ax}, {start}, {end}, {step});
        break;
      }
      case 1: {  // permute
        std::vector<int64_t> perm(d.size());
        for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
        std::shuffle(perm.begin(), perm.end(), rng);
        t = g.permute(t, perm);
        break;
      }
      default: {  // merge two adjacent dims, split one, or add a unit dim
        if (d.size() >= 2 && pick(2) == 0) {
          const size_t at = static_cast<size_t>(pick(static_cast<int64_t>(d.size()) - 1));
          d[at] *= d[at + 1];
          d.erase(d.begin() + static_cast<int64_t>(at) + 1);
        } else if (pick(2) == 0) {
          d.insert(d.begin() + pick(static_cast<int64_t>(d.size()) + 1), 1);
        } else {
          const size_t at = static_cast<size_t>(pick(static_cast<int64_t>(d.size())));
          if (d[at] % 2 == 0) {
            d[at] /= 2;
            d.insert(d.begin() + static_cast<int64_t>(at), 2);
          }
        }
        t = g.reshape(t, d);
        break;
      }
    }
  }
  g.output(t, "y");
  return g;
}

}  // namespace

TEST(LayoutView, RandomChainsGatherWhatTheReferenceComputes) {
  int composed = 0, refused = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const Graph g = random_chain(seed);
    SCOPED_TRACE(g.name());
    std::vector<NodeId> chain;
    for (NodeId n : g.topological_order()) chain.push_back(n);
    const std::optional<StridedView> v = compose_layout_chain(g, chain);
    if (!v) {
      ++refused;
      continue;
    }
    ++composed;
    const TensorMap in = random_inputs(g, seed);
    const HostTensor want = run_reference(g, in).at("y");
    const HostTensor got = gather(in.at("x"), *v);
    ASSERT_EQ(got.dims(), want.dims());
    ASSERT_EQ(got.values(), want.values());
  }
  EXPECT_GT(composed, 250);  // most chains compose; refusals are reshapes across a permute or slice
  EXPECT_GT(refused, 0);
}

TEST(LayoutView, TransformerBlockSplitsHeadsWithOneCopyEach) {
  const Graph g = examples::transformer_block();
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  int chains = 0;
  for (const Region& r : p.regions) {
    if (r.kind != RegionKind::layout || r.prologue.empty()) continue;
    ++chains;
    EXPECT_EQ(g.node(r.anchor).op, OpKind::permute);
    ASSERT_EQ(r.prologue.size(), 2u);
    EXPECT_EQ(g.node(r.prologue[0]).op, OpKind::slice);
    EXPECT_EQ(g.node(r.prologue[1]).op, OpKind::reshape);
    ASSERT_EQ(r.inputs.size(), 1u);  // the qkv buffer (as reshaped), read in place
  }
  EXPECT_EQ(chains, 3);  // q, k and v
  // the chains off: a region per op again
  FusionOptions off;
  off.fuse_layout_chains = false;
  const Partition q = partition_graph(g, off);
  verify_partition(g, q);
  EXPECT_EQ(q.regions.size(), p.regions.size() + 6);
}
