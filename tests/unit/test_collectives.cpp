// all_reduce, all_gather, reduce_scatter in the IR: shape inference and its errors, the cost of
// the exchange, the structural hash, the single-graph reference (world 1 is the identity; a larger
// world is refused), and the partition: a collective is a region of its own, which explain shows
// with its engine (test_nccl_engine.cpp has the nccl engine's own tests).
#include "fuse/region.hpp"
#include "sinter/explain.hpp"
#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

template <typename F>
void expect_error(F&& f, ErrorCode code, const std::vector<std::string>& parts) {
  const Error e = error_of(f);
  EXPECT_EQ(e.code(), code) << e.what();
  expect_contains(e.what(), parts);
}

}  // namespace

TEST(Collectives, InferShapes) {
  Graph g;
  auto x = g.input("x", DType::bf16, {2, 8, 6});
  const TensorInfo& ar = g.tensor(g.all_reduce(x, "tp", 4));
  EXPECT_EQ(ar.dtype, DType::bf16);
  EXPECT_EQ(ar.dims, (Dims{2, 8, 6}));
  EXPECT_EQ(g.tensor(g.all_gather(x, -1, "tp", 4)).dims, (Dims{2, 8, 24}));
  EXPECT_EQ(g.tensor(g.all_gather(x, 0, "tp", 3)).dims, (Dims{6, 8, 6}));
  EXPECT_EQ(g.tensor(g.reduce_scatter(x, 1, "tp", 4, CollectiveReduce::max)).dims, (Dims{2, 2, 6}));
  EXPECT_EQ(g.tensor(g.reduce_scatter(x, -1, "tp", 6)).dims, (Dims{2, 8, 1}));
  // integers reduce; bool only gathers
  auto i = g.input("i", DType::i32, {4});
  EXPECT_EQ(g.tensor(g.all_reduce(i, "tp", 2)).dtype, DType::i32);
  auto b = g.input("b", DType::boolean, {4});
  EXPECT_EQ(g.tensor(g.all_gather(b, 0, "tp", 2)).dims, (Dims{8}));
  // a scalar all-reduces
  auto s = g.input("s", DType::f32, {});
  EXPECT_EQ(g.tensor(g.all_reduce(s, "tp", 8)).dims, Dims{});
}

TEST(Collectives, RejectBadAttributesAndInputs) {
  Graph g;
  auto x = g.input("x", DType::f32, {2, 6});
  expect_error([&] { g.reduce_scatter(x, 1, "tp", 4); }, ErrorCode::invalid_graph,
               {"(reduce_scatter)", "axis 1", "[2, 6]", "world=4", "6 is not divisible by 4"});
  expect_error([&] { g.reduce_scatter(x, 0, "tp", 3); }, ErrorCode::invalid_graph, {"2 is not divisible by 3"});
  expect_error([&] { g.all_reduce(x, "", 2); }, ErrorCode::invalid_graph, {"(all_reduce)", "group name is empty"});
  expect_error([&] { g.all_reduce(x, "t\np", 2); }, ErrorCode::invalid_graph, {"control character at byte 1"});
  expect_error([&] { g.all_reduce(x, "tp", 0); }, ErrorCode::invalid_graph, {"world 0", "group 'tp'", "[1, 65536]"});
  expect_error([&] { g.all_gather(x, 0, "tp", kMaxWorld + 1); }, ErrorCode::invalid_graph, {"world 65537"});
  expect_error([&] { g.all_gather(x, 2, "tp", 2); }, ErrorCode::invalid_graph, {"all_gather", "axis 2", "rank 2"});
  expect_error([&] { g.reduce_scatter(x, -3, "tp", 2); }, ErrorCode::invalid_graph, {"reduce_scatter", "axis -3"});
  auto b = g.input("b", DType::boolean, {4});
  expect_error([&] { g.all_reduce(b, "tp", 2); }, ErrorCode::invalid_graph, {"(all_reduce)", "'b' is bool"});
  expect_error([&] { g.reduce_scatter(b, 0, "tp", 2, CollectiveReduce::max); }, ErrorCode::invalid_graph,
               {"(reduce_scatter)", "is bool", "max reduction"});
  auto s = g.input("s", DType::f32, {});
  expect_error([&] { g.all_gather(s, 0, "tp", 2); }, ErrorCode::invalid_graph, {"all_gather", "rank 0"});
  // a gathered tensor past 2^50 elements
  auto big = g.input("big", DType::bf16, {int64_t{1} << 20, int64_t{1} << 20});
  expect_error([&] { g.all_gather(big, 0, "tp", 2048); }, ErrorCode::invalid_graph, {"more than 2^50 elements"});
}

// The bytes each rank sends under the ring algorithm, and the reductions' additions.
TEST(Collectives, CostCountsTheExchange) {
  Graph g;
  auto x = g.input("x", DType::bf16, {4, 256});  // 2048 B
  g.output(g.all_reduce(x, "tp", 4), "ar");
  g.output(g.all_gather(x, 0, "tp", 4), "ag");
  g.output(g.reduce_scatter(x, 1, "tp", 4), "rs");
  g.output(g.all_reduce(x, "solo", 1), "one");
  std::vector<NodeCost> c;
  for (const Node& n : g.nodes()) c.push_back(node_cost(g, n));
  EXPECT_DOUBLE_EQ(c[0].comm_bytes, 2 * 0.75 * 2048);
  EXPECT_DOUBLE_EQ(c[0].flops, 3 * 1024.0);
  EXPECT_DOUBLE_EQ(c[1].comm_bytes, 0.75 * 8192);
  EXPECT_DOUBLE_EQ(c[1].flops, 0);
  EXPECT_DOUBLE_EQ(c[2].comm_bytes, 0.75 * 2048);
  EXPECT_DOUBLE_EQ(c[2].flops, 3 * 256.0);
  EXPECT_DOUBLE_EQ(c[3].comm_bytes, 0);
  EXPECT_DOUBLE_EQ(graph_cost(g).comm_bytes, c[0].comm_bytes + c[1].comm_bytes + c[2].comm_bytes);
  EXPECT_DOUBLE_EQ(node_cost(g, g.node(0)).bytes, 2 * 2048.0);
}

TEST(Collectives, EveryAttributeCountsInTheStructuralHash) {
  auto hash = [](const std::string& group, int64_t world, CollectiveReduce r, int64_t axis) {
    Graph g;
    g.output(g.reduce_scatter(g.input("x", DType::f32, {8, 8}), axis, group, world, r), "y");
    return structural_hash(g, false);
  };
  const uint64_t base = hash("tp", 2, CollectiveReduce::sum, 0);
  EXPECT_EQ(base, hash("tp", 2, CollectiveReduce::sum, 0));
  EXPECT_NE(base, hash("dp", 2, CollectiveReduce::sum, 0));
  EXPECT_NE(base, hash("tp", 4, CollectiveReduce::sum, 0));
  EXPECT_NE(base, hash("tp", 2, CollectiveReduce::max, 0));
  EXPECT_NE(base, hash("tp", 2, CollectiveReduce::sum, 1));
}

// A group of one rank: every collective hands its input through unchanged.
TEST(Collectives, WorldOneIsTheIdentityOnTheReference) {
  Graph g;
  auto x = g.input("x", DType::bf16, {2, 3});
  g.output(g.all_reduce(x, "solo", 1, CollectiveReduce::max), "ar");
  g.output(g.all_gather(x, 1, "solo", 1), "ag");
  g.output(g.reduce_scatter(g.mul(x, 2.0), 0, "solo", 1), "rs");
  const std::vector<double> v{0.5, -1.25, 3.0, 7.5, -0.0078125, 100.0};
  const TensorMap in{{"x", tensor(DType::bf16, {2, 3}, v)}};
  expect_values(run_values(g, in, "ar"), v);
  expect_values(run_values(g, in, "ag"), v);
  std::vector<double> twice;
  for (double d : v) twice.push_back(2 * d);
  expect_values(run_values(g, in, "rs"), twice);
}

TEST(Collectives, ALargerGroupNeedsTheRanksReference) {
  Graph g;
  g.output(g.all_reduce(g.input("x", DType::f32, {4}), "tp", 2), "y");
  expect_error([&] { run_reference(g, {{"x", tensor(DType::f32, {4}, {1, 2, 3, 4})}}); },
               ErrorCode::invalid_argument,
               {"node 'all_reduce0' (all_reduce)", "world=2", "group 'tp'", "run_reference_ranks"});
}

// Nothing fuses into or out of a collective; explain shows its group, world and bytes, and which
// engine runs it or why none can.
TEST(Collectives, AreRegionsOfTheirOwn) {
  Graph g("tp_mlp");
  auto x = g.input("x", DType::bf16, {4, 64});
  auto w = g.input("w", DType::bf16, {64, 32});
  auto partial = g.matmul(x, w);
  auto y = g.relu(g.add(g.all_reduce(partial, "tp", 4), 1.0));
  g.output(g.all_gather(y, 1, "tp", 4), "y");
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  fuse::verify_partition(g, p);
  int collectives = 0;
  for (const fuse::Region& r : p.regions) {
    if (r.kind != fuse::RegionKind::collective) continue;
    ++collectives;
    EXPECT_EQ(r.nodes().size(), 1u);
    EXPECT_EQ(op_info(g.node(r.anchor).op).cls, OpClass::collective);
  }
  EXPECT_EQ(collectives, 2);
  EXPECT_EQ(p.regions.size(), 4u);  // matmul | all_reduce | add + relu | all_gather

  const PartitionDescription d = explain(g);
  const std::string text = to_text(d);
  expect_contains(text, {"collective anchored on all_reduce", "all_reduce sum over group 'tp' (world 4): 256 B in, "
                         "384 B sent per rank (ring)",
                         "all_gather along axis 1 over group 'tp' (world 4): 256 B in, 768 B sent per rank",
                         "a collective (all_reduce) is a region of its own",
                         "a collective region takes no epilogue"});
  // the all_gather along axis 1 (4 rows outside it) is one NCCL cannot run: no engine takes it
  expect_contains(text, {"engine:     none: ", "along axis 1 of", "outermost axis only",
                         "jit: collectives run on the nccl engine (NCCL), not in generated kernels"});
  const std::string json = to_json(d);
  expect_contains(json, {"\"kind\": \"collective\"", "\"no_engine\": \"alias: ", "\"engine\": \""});
}
