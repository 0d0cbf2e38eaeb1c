// The fusion partitioner: targeted cases for each legality rule, and many random graphs whose
// partitioned form (regions run one after another on the CPU reference) must compute exactly,
// bit for bit, what the whole graph computes.
#include <gtest/gtest.h>

#include <random>

#include "random_graph.hpp"

#include "example_graphs.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"
#include "sinter/reference.hpp"

using namespace sinter;
using namespace sinter::fuse;

namespace {

const Region& region_of(const Graph& g, const Partition& p, const std::string& tensor) {
  return p.regions.at(p.region_of_node.at(g.tensor(*g.find_tensor(tensor)).producer));
}

// Runs the regions one after another on the CPU reference, each as its own graph, and returns
// the graph outputs.
TensorMap run_partitioned(const Graph& g, const Partition& p, const TensorMap& inputs) {
  TensorMap values = inputs;
  for (const Region& r : p.regions) {
    const Graph sub = region_subgraph(g, r);
    TensorMap sub_inputs;
    for (TensorId in : r.inputs) sub_inputs[g.tensor(in).name] = values.at(g.tensor(in).name);
    for (auto& [name, t] : run_reference(sub, sub_inputs)) values[name] = t;
  }
  TensorMap out;
  for (TensorId id : g.outputs()) out[g.tensor(id).name] = values.at(g.tensor(id).name);
  return out;
}

void expect_same_outputs(const Graph& g, const TensorMap& a, const TensorMap& b) {
  for (TensorId id : g.outputs()) {
    const std::string& name = g.tensor(id).name;
    const auto va = a.at(name).values(), vb = b.at(name).values();
    ASSERT_EQ(va.size(), vb.size()) << name;
    for (size_t i = 0; i < va.size(); ++i) {
      if (std::isnan(va[i]) && std::isnan(vb[i])) continue;
      ASSERT_EQ(va[i], vb[i]) << "output '" << name << "' element " << i;
    }
  }
}

}  // namespace

TEST(Partition, MatmulEpilogueWithExitReduction) {
  const Graph g = examples::mlp_layer();
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  ASSERT_EQ(p.regions.size(), 1u);
  const Region& r = p.regions[0];
  EXPECT_EQ(r.kind, RegionKind::matmul);
  EXPECT_EQ(r.epilogue.size(), 2u);  // add, gelu
  ASSERT_EQ(r.reductions.size(), 1u);
  EXPECT_EQ(r.reductions[0].pattern, ExitReduction::global);
  EXPECT_EQ(r.inputs.size(), 3u);
  EXPECT_EQ(r.outputs.size(), 2u);  // y and its amax; the pre-activation stays in registers
}

TEST(Partition, ResidualAddBecomesRowwisePrologue) {
  Graph g("add_ln");
  auto x = g.input("x", DType::bf16, {64, 256});
  auto res = g.input("res", DType::bf16, {64, 256});
  auto w = g.input("w", DType::bf16, {256});
  auto sum = g.add(x, res);
  g.output(sum, "sum");  // the residual stream is stored as well
  auto y = g.layernorm(sum, w);
  auto y8 = g.cast(y, DType::fp8_e4m3);
  g.output(y8, "y8");
  g.output(g.amax(y), "y_amax");
  g.validate();
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  ASSERT_EQ(p.regions.size(), 1u);
  const Region& r = p.regions[0];
  EXPECT_EQ(r.kind, RegionKind::rowwise);
  EXPECT_EQ(r.prologue.size(), 1u);
  EXPECT_EQ(r.epilogue.size(), 1u);
  EXPECT_EQ(r.reductions.size(), 1u);
  EXPECT_EQ(r.outputs.size(), 3u);
}

TEST(Partition, BoundariesCarryReasons) {
  Graph g("reasons");
  auto x = g.input("x", DType::f32, {8, 16});
  auto w = g.input("w", DType::f32, {16, 16});
  auto h = g.relu(g.matmul(x, w));
  auto h2 = g.matmul(h, w);                        // second anchor
  auto col = g.sum(h2, {0}, true);                 // [1, 16]: all-but-last = columns pattern
  auto odd = g.input("odd", DType::f32, {8, 16, 4});
  auto mid = g.sum(odd, {1});                      // a middle axis: standalone reduction
  g.output(g.add(h2, col), "y");                   // reads an exit reduction of its region
  g.output(mid, "mid");
  g.validate();
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  EXPECT_EQ(region_of(g, p, "mid").kind, RegionKind::reduction);
  bool saw_anchor = false, saw_exit = false;
  for (const Boundary& b : p.boundaries) {
    saw_anchor = saw_anchor || b.reason.find("starts its own region") != std::string::npos;
    saw_exit = saw_exit || b.reason.find("exit reduction") != std::string::npos;
  }
  EXPECT_TRUE(saw_anchor);
  EXPECT_TRUE(saw_exit);
}

// An exit reduction accumulates in f32 and gives a float result: a reduction whose output is an
// integer or bool type (a sum of i32 values, out_dtype i64) runs as its own reduction region,
// with the reason on the boundary, instead of joining a region no engine could run (the jit
// engine refuses such exits).
TEST(Partition, IntegerResultReductionsRunInTheirOwnRegion) {
  Graph g("int_exit");
  auto a = g.input("a", DType::i32, {64, 64});
  auto y = g.relu(a);
  g.output(g.sum(y, {1}), "s");
  auto x = g.input("x", DType::f32, {64, 64});
  g.output(g.reduce(OpKind::reduce_sum, g.relu(x), {}, false, DType::i64), "total");
  g.validate();
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  EXPECT_EQ(region_of(g, p, "s").kind, RegionKind::reduction);
  EXPECT_EQ(region_of(g, p, "total").kind, RegionKind::reduction);
  for (const Region& r : p.regions) EXPECT_TRUE(r.reductions.empty()) << to_string(r.kind);
  int reasons = 0;
  for (const Boundary& b : p.boundaries) {
    reasons += b.reason.find(": exit reductions accumulate in f32") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(reasons, 2);
}

TEST(Partition, LayoutOpsAndAliases) {
  const Graph g = examples::transformer_block();
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  int alias = 0, layout = 0, sdpa = 0, rowwise = 0, matmul = 0;
  for (const Region& r : p.regions) {
    alias += r.kind == RegionKind::alias;
    layout += r.kind == RegionKind::layout;
    sdpa += r.kind == RegionKind::sdpa;
    rowwise += r.kind == RegionKind::rowwise;
    matmul += r.kind == RegionKind::matmul;
  }
  EXPECT_EQ(sdpa, 1);
  EXPECT_EQ(rowwise, 2);
  EXPECT_EQ(matmul, 4);
  EXPECT_GT(alias, 0);
  EXPECT_GT(layout, 0);
}

// A permute that moves only size-1 axes keeps the row-major order: an alias, like a reshape; one
// that reorders two axes of size > 1 stays a copy.
TEST(Partition, UnitAxisPermuteIsAnAlias) {
  Graph g("unit_permute");
  auto x = g.input("x", DType::bf16, {1, 1, 4, 8});
  g.output(g.permute(x, {0, 2, 1, 3}), "heads");     // [1, 4, 1, 8]: same order
  g.output(g.permute(x, {1, 3, 0, 2}), "swapped");   // [1, 8, 1, 4]: 4 and 8 swap
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  EXPECT_EQ(region_of(g, p, "heads").kind, RegionKind::alias);
  EXPECT_EQ(region_of(g, p, "swapped").kind, RegionKind::layout);
}

// An embedding lookup is a gather region of its own; the rmsnorm that reads it starts its own
// region (a gather takes no epilogue), and a pointwise op on the table stays before it.
TEST(Partition, GatherIsARegionOfItsOwn) {
  Graph g("embedding");
  auto table = g.input("table", DType::bf16, {100, 16});
  auto e = g.gather(g.neg(table), g.input("ids", DType::i64, {2, 3}));
  g.output(g.rmsnorm(e, g.input("w", DType::bf16, {16})), "y");
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  ASSERT_EQ(p.regions.size(), 3u);
  EXPECT_EQ(p.regions[0].kind, RegionKind::pointwise);
  EXPECT_EQ(p.regions[1].kind, RegionKind::gather);
  EXPECT_EQ(region_of(g, p, "y").kind, RegionKind::rowwise);
}

TEST(Partition, NoFusionGivesOneRegionPerNode) {
  const Graph g = examples::mlp_layer();
  const Partition p = partition_graph(g, FusionOptions::none());
  verify_partition(g, p);
  EXPECT_EQ(p.regions.size(), g.nodes().size());
}

TEST(Partition, ExamplesComputeTheSameWhenPartitioned) {
  for (const auto& ex : examples::all_examples()) {
    const Graph g = ex.build();
    const Partition p = partition_graph(g);
    verify_partition(g, p);
    const TensorMap inputs = random_inputs(g, 3);
    expect_same_outputs(g, run_reference(g, inputs), run_partitioned(g, p, inputs));
  }
}

// ---- random graphs (tests/random_graph.hpp) --------------------------------------------------

using sinter::testing::RandomGraph;

TEST(Partition, RandomGraphsComputeTheSameWhenPartitioned) {
  int regions = 0, fused_nodes = 0, folded_norms = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Graph g = RandomGraph(seed).build();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Partition p = partition_graph(g);
    ASSERT_NO_THROW(verify_partition(g, p));
    const TensorMap inputs = random_inputs(g, seed);
    expect_same_outputs(g, run_reference(g, inputs), run_partitioned(g, p, inputs));
    if (HasFatalFailure()) return;
    regions += static_cast<int>(p.regions.size());
    for (const Region& r : p.regions) {
      fused_nodes += static_cast<int>(r.nodes().size()) > 1;
      folded_norms += r.kind == RegionKind::matmul && !r.prologue.empty();
    }
  }
  std::printf("300 random graphs: %d regions, %d of them fused, %d matmuls with a folded norm\n", regions, fused_nodes,
              folded_norms);
  // The generator must exercise fusion, or this test proves little.
  EXPECT_GT(fused_nodes, 150);
  EXPECT_GT(regions, 600);
}

// ---- norms folded into decode matmuls ---------------------------------------------------------

// Llama's pre-attention pattern at decode: one rmsnorm read as A by three projections of one row.
// The normalized row is "h"; `extra` adds a reader of it: "output" (h is a graph output too) or
// "relu" (a pointwise op reads it).
Graph norm_then_projections(DType dt, int64_t rows, bool bias = false, const std::string& extra = "") {
  Graph g("norm_projections");
  auto x = g.input("x", dt, {rows, 64});
  auto nw = g.input("norm_w", dt, {64});
  std::optional<Tensor> nb;
  if (bias) nb = g.input("norm_b", dt, {64});
  auto h = g.rmsnorm(x, nw, nb, 1e-5);
  g.rename(h, "h");
  for (const char* name : {"q", "k", "v"}) {
    auto w = g.input(std::string("w") + name, dt, {64, name[0] == 'q' ? 64 : 32});
    g.output(g.matmul(h, w), name);
  }
  if (extra == "output") g.output(h);
  if (extra == "relu") g.output(g.relu(h), "relu_h");
  g.validate();
  return g;
}

const Boundary* boundary_into(const Graph& g, const Partition& p, const std::string& tensor, const std::string& reader) {
  for (const Boundary& b : p.boundaries) {
    if (g.tensor(b.tensor).name == tensor && p.regions[b.consumer_region].anchor == region_of(g, p, reader).anchor) return &b;
  }
  return nullptr;
}

TEST(Partition, RmsnormFoldsIntoTheDecodeMatmulsThatReadIt) {
  for (bool bias : {false, true}) {
    const Graph g = norm_then_projections(DType::bf16, 1, bias);
    const Partition p = partition_graph(g);
    verify_partition(g, p);
    ASSERT_EQ(p.regions.size(), 3u);  // the norm's own region is gone
    const NodeId norm = g.tensor(*g.find_tensor("h")).producer;
    EXPECT_EQ(g.node(norm).op, OpKind::rmsnorm);
    EXPECT_EQ(p.region_of_node[norm], -1);
    for (const char* out : {"q", "k", "v"}) {
      const Region& r = region_of(g, p, out);
      EXPECT_EQ(r.kind, RegionKind::matmul);
      EXPECT_EQ(r.prologue, std::vector<NodeId>{norm});
      std::vector<std::string> reads;
      for (TensorId t : r.inputs) reads.push_back(g.tensor(t).name);
      std::vector<std::string> want{"x", "norm_w"};
      if (bias) want.push_back("norm_b");
      want.push_back(std::string("w") + out);
      EXPECT_EQ(reads, want) << out;
      EXPECT_EQ(r.outputs.size(), 1u);
    }
    const TensorMap inputs = random_inputs(g, 5);
    expect_same_outputs(g, run_reference(g, inputs), run_partitioned(g, p, inputs));
  }
}

// The verifier refuses a partition whose folded norm is read or stored anywhere, or whose
// matmul prologue is not the rmsnorm of its A.
TEST(Partition, VerifierChecksFoldedNorms) {
  const Graph g = norm_then_projections(DType::bf16, 1);
  const Partition good = partition_graph(g);
  auto refused = [&](const Partition& p) {
    try {
      verify_partition(g, p);
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("(accepted)");
  };
  const TensorId h = g.find_tensor("h")->id;
  Partition reads = good;
  reads.regions[1].inputs.push_back(h);
  EXPECT_NE(refused(reads).find("is read or stored"), std::string::npos) << refused(reads);
  Partition stored = good;
  stored.regions[0].outputs.push_back(h);
  EXPECT_NE(refused(stored).find("is read or stored"), std::string::npos) << refused(stored);
  Partition other = good;
  other.regions[0].prologue = {g.tensor(g.find_tensor("q")->id).producer};
  EXPECT_NE(refused(other).find("prologue"), std::string::npos) << refused(other);
}

// The norm stays a region of its own where the fold does not apply, and the boundary says why.
TEST(Partition, RmsnormStaysWhereTheFoldDoesNotApply) {
  auto reason = [](const Graph& g, const FusionOptions& o = {}) {
    const Partition p = partition_graph(g, o);
    verify_partition(g, p);
    EXPECT_EQ(p.regions.size(), 4u);  // a relu of h joins the norm's region
    const Boundary* b = boundary_into(g, p, "h", "q");
    return b ? b->reason : std::string("(no boundary)");
  };
  EXPECT_NE(reason(norm_then_projections(DType::bf16, 17)).find("more than 16 rows"), std::string::npos);
  {  // a batch of single rows, [4, 1, 64]: each batch entry would stream the weight again
    Graph g("batched_rows");
    auto h = g.rmsnorm(g.input("x", DType::bf16, {4, 1, 64}), g.input("norm_w", DType::bf16, {64}));
    g.rename(h, "h");
    g.output(g.matmul(h, g.input("wq", DType::bf16, {64, 64})), "q");
    g.validate();
    const Partition p = partition_graph(g);
    verify_partition(g, p);
    ASSERT_EQ(p.regions.size(), 2u);
    const Boundary* b = boundary_into(g, p, "h", "q");
    ASSERT_NE(b, nullptr);
    EXPECT_NE(b->reason.find("has batch dims"), std::string::npos) << b->reason;
  }
  EXPECT_NE(reason(norm_then_projections(DType::f32, 1)).find("not bf16 or f16"), std::string::npos);
  FusionOptions off;
  off.fold_norms_into_matmuls = false;
  EXPECT_NE(reason(norm_then_projections(DType::bf16, 1), off).find("turned off"), std::string::npos);
  EXPECT_NE(reason(norm_then_projections(DType::bf16, 1, false, "output")).find("graph output"), std::string::npos);
  const std::string why = reason(norm_then_projections(DType::bf16, 1, false, "relu"));
  EXPECT_NE(why.find("is not a matmul reading it as A"), std::string::npos) << why;
}

// argmax carries (value, index) pairs that no epilogue folds: it is a reduction region of its own
// even after a matmul (the LM head) or a pointwise op, with the reason on the boundary.
TEST(Partition, ArgmaxIsAStandaloneReductionRegion) {
  Graph g("lm_head_argmax");
  auto x = g.input("x", DType::bf16, {1, 64});
  auto w = g.input("w", DType::bf16, {64, 1000});
  auto logits = g.matmul(x, w);
  g.output(g.argmax(logits, -1), "token");
  g.output(g.argmin(g.relu(x), 0), "lowest");
  g.validate();
  const Partition p = partition_graph(g);
  verify_partition(g, p);
  const Region& r = region_of(g, p, "token");
  EXPECT_EQ(r.kind, RegionKind::reduction);
  EXPECT_EQ(g.node(r.anchor).op, OpKind::argmax);
  EXPECT_TRUE(r.epilogue.empty());
  EXPECT_EQ(region_of(g, p, "lowest").kind, RegionKind::reduction);
  int reasons = 0;
  for (const Boundary& b : p.boundaries) {
    reasons += b.reason.find("is a reduction region of its own") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(reasons, 2);
}
