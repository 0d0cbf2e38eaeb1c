// Tensor parallelism (sinter/shard.hpp): the shape of the rank graphs of a Llama decode stack, the
// acceptance test of the issue (the sharded stack on run_reference_ranks equals the unsharded one
// on run_reference within the dtype's bound, at W = 2 and 4, bf16 and f32), an MLP with biases, the
// slicing of weights, and the errors where a graph cannot be split.
#include <cstdio>

#include "example_graphs.hpp"
#include "sinter/explain.hpp"
#include "sinter/json.hpp"
#include "sinter/shard.hpp"
#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

examples::LlamaConfig small_llama(DType dtype = DType::bf16, int64_t batch = 1) {
  examples::LlamaConfig c{.layers = 2, .d_model = 64, .heads = 8, .kv_heads = 4, .head_dim = 16, .ffn = 128,
                          .past = 7};
  c.dtype = dtype;
  c.batch = batch;
  return c;
}

const TensorInfo& tensor_named(const Graph& g, const std::string& name) { return g.tensor(*g.find_tensor(name)); }

template <typename F>
void expect_error(F&& f, ErrorCode code, const std::vector<std::string>& parts) {
  const Error e = error_of(f);
  EXPECT_EQ(e.code(), code) << e.what();
  expect_contains(e.what(), parts);
}

// Runs `full` on the reference and its rank graphs on run_reference_ranks, from the same random
// inputs, and checks every output within its bound; returns the largest error seen.
double compare_sharded(const Graph& full, const std::vector<Graph>& ranks, uint64_t seed) {
  const TensorMap values = random_inputs(full, seed);
  const TensorMap want = run_reference(full, values);
  const TensorMap got = gather_outputs(full, ranks, run_reference_ranks(ranks, shard_inputs(full, ranks, values)));
  double worst = 0;
  for (TensorId id : full.outputs()) {
    const std::string& name = full.tensor(id).name;
    const double err = relative_l2_error(got.at(name), want.at(name));
    const double bound = relative_l2_bound(full, id);
    EXPECT_LE(err, bound) << name << " at world " << ranks.size();
    EXPECT_GT(tensor_stats(want.at(name)).l2, 0.0) << name;
    worst = std::max(worst, err);
  }
  return worst;
}

}  // namespace

TEST(TensorParallel, LlamaRankGraphsHoldTheShards) {
  const examples::LlamaConfig c = small_llama();
  Graph full = examples::llama_decode_stack(c);
  full.validate();
  const std::vector<Graph> ranks = shard_tensor_parallel(full, 2);
  ASSERT_EQ(ranks.size(), 2u);
  const Graph& r = ranks[0];
  EXPECT_EQ(save_graph_json(ranks[1]), save_graph_json(r));  // every rank runs the same program
  EXPECT_EQ(r.inputs().size(), full.inputs().size());
  for (const std::string l : {"l0.", "l1."}) {
    EXPECT_EQ(tensor_named(r, l + "wq").dims, (Dims{64, 64}));  // column-parallel: N / 2
    EXPECT_EQ(tensor_named(r, l + "wk").dims, (Dims{64, 32}));
    EXPECT_EQ(tensor_named(r, l + "wv").dims, (Dims{64, 32}));
    EXPECT_EQ(tensor_named(r, l + "wo").dims, (Dims{64, 64}));  // row-parallel: K / 2
    EXPECT_EQ(tensor_named(r, l + "w_gate").dims, (Dims{64, 64}));
    EXPECT_EQ(tensor_named(r, l + "w_up").dims, (Dims{64, 64}));
    EXPECT_EQ(tensor_named(r, l + "w_down").dims, (Dims{64, 64}));
    EXPECT_EQ(tensor_named(r, l + "k_cache").dims, (Dims{1, 2, 7, 16}));  // KV heads by rank
    EXPECT_EQ(tensor_named(r, l + "attn_norm_w").dims, (Dims{64}));      // replicated
    EXPECT_EQ(tensor_named(r, l + "k_cache_next").dims, (Dims{1, 2, 8, 16}));
  }
  EXPECT_EQ(tensor_named(r, "x").dims, (Dims{1, 1, 64}));
  EXPECT_EQ(tensor_named(r, "y").dims, (Dims{1, 1, 64}));
  int all_reduces = 0, sdpas = 0;
  for (const Node& n : r.nodes()) {
    if (n.op == OpKind::sdpa) {
      ++sdpas;
      EXPECT_EQ(r.tensor(n.inputs[0]).dims, (Dims{1, 4, 1, 16}));  // 8 query heads / 2
      EXPECT_EQ(r.tensor(n.inputs[1]).dims, (Dims{1, 2, 8, 16}));  // 4 KV heads / 2
    }
    if (n.op != OpKind::all_reduce) continue;
    ++all_reduces;
    const auto& at = std::get<CollectiveAttrs>(n.attrs);
    EXPECT_EQ(at.group, "tp");
    EXPECT_EQ(at.world, 2);
    EXPECT_EQ(at.reduce, CollectiveReduce::sum);
    // each follows a row-parallel matmul
    EXPECT_EQ(r.node(r.tensor(n.inputs[0]).producer).op, OpKind::matmul);
  }
  EXPECT_EQ(all_reduces, 4);  // the attention output and down projections of 2 layers
  EXPECT_EQ(sdpas, 2);
  // explain shows them as regions of their own, each with its engine (or, without NCCL, why not)
  const std::string text = to_text(explain(r));
  expect_contains(text, {"collective anchored on", "all_reduce sum over group 'tp' (world 2): 128 B in"});
  EXPECT_TRUE(text.find("engine:     nccl: all_reduce: one NCCL call") != std::string::npos ||
              text.find("engine:     none: alias: ") != std::string::npos)
      << text;
  // world 1 is the graph itself
  const std::vector<Graph> one = shard_tensor_parallel(full, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(save_graph_json(one[0]), save_graph_json(full));
}

// The acceptance test of the tensor-parallel issue: the sharded decode stack on the multi-rank
// reference equals the unsharded stack on the reference, every output (y and the updated caches,
// gathered by head), within the bound of its dtype, from random inputs; at batch 1 and at batch 2
// (two sequences as the rows of each projection, each with its own caches split by head).
TEST(TensorParallel, ShardedLlamaMatchesTheUnshardedReference) {
  for (DType dtype : {DType::bf16, DType::f32}) {
    for (int64_t batch : {1, 2}) {
      Graph full = examples::llama_decode_stack(small_llama(dtype, batch));
      full.validate();
      for (int world : {2, 4}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + " batch " + std::to_string(batch) + " world " +
                     std::to_string(world));
        const std::vector<Graph> ranks = shard_tensor_parallel(full, world);
        EXPECT_EQ(tensor_named(ranks[0], "l1.k_cache").dims, (Dims{batch, 4 / world, 7, 16}));
        const double err = compare_sharded(full, ranks, 100 + world);
        std::printf("sharded llama decode stack, %s, batch %d, world %d: worst relative L2 error %.3g\n",
                    std::string(to_string(dtype)).c_str(), static_cast<int>(batch), world, err);
      }
    }
  }
}

// A GELU MLP with biases, f32: the first bias splits with its column-parallel matmul, the second
// is added once, after the all_reduce.
TEST(TensorParallel, MlpWithBiasesMatchesTheUnshardedReference) {
  Graph g("mlp");
  auto x = g.input("x", DType::f32, {3, 32});
  auto w1 = g.input("w1", DType::f32, {32, 48});
  auto b1 = g.input("b1", DType::f32, {48});
  auto w2 = g.input("w2", DType::f32, {48, 32});
  auto b2 = g.input("b2", DType::f32, {32});
  g.output(g.add(g.matmul(g.gelu(g.add(g.matmul(x, w1), b1)), w2), b2), "y");
  g.validate();
  for (int world : {2, 4}) {
    const std::vector<Graph> ranks = shard_tensor_parallel(g, world);
    EXPECT_EQ(tensor_named(ranks[0], "b1").dims, (Dims{48 / world}));
    EXPECT_EQ(tensor_named(ranks[0], "b2").dims, (Dims{32}));
    EXPECT_EQ(tensor_named(ranks[0], "w2").dims, (Dims{48 / world, 32}));
    compare_sharded(g, ranks, 7);
  }
}

// Three projections in a row, a pointwise op after the first: W1 column-parallel, W2 its
// row-parallel partner with the all_reduce, W3 (which reads W2's output directly) whole.
TEST(TensorParallel, AProjectionAfterARowParallelPairStaysWhole) {
  Graph g("chain");
  auto x = g.input("x", DType::f32, {3, 32});
  auto w1 = g.input("w1", DType::f32, {32, 48});
  auto w2 = g.input("w2", DType::f32, {48, 32});
  auto w3 = g.input("w3", DType::f32, {32, 16});
  g.output(g.matmul(g.matmul(g.relu(g.matmul(x, w1)), w2), w3), "y");
  g.validate();
  for (int world : {2, 4}) {
    const std::vector<Graph> ranks = shard_tensor_parallel(g, world);
    EXPECT_EQ(tensor_named(ranks[0], "w1").dims, (Dims{32, 48 / world}));
    EXPECT_EQ(tensor_named(ranks[0], "w2").dims, (Dims{48 / world, 32}));
    EXPECT_EQ(tensor_named(ranks[0], "w3").dims, (Dims{32, 16}));
    compare_sharded(g, ranks, 11);
  }
}

TEST(TensorParallel, ShardInputsSlicesAndGatherOutputsJoins) {
  Graph g("proj");
  auto x = g.input("x", DType::f32, {1, 2});
  auto w = g.input("w", DType::f32, {2, 4});
  g.output(g.matmul(x, w), "y");
  const std::vector<Graph> ranks = shard_tensor_parallel(g, 2, ShardOptions{.column_parallel = {"w"}});
  const TensorMap values{{"x", tensor(DType::f32, {1, 2}, {1, 10})},
                         {"w", tensor(DType::f32, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})}};
  const std::vector<TensorMap> parts = shard_inputs(g, ranks, values);
  expect_values(parts[0].at("w").values(), {0, 1, 4, 5});
  expect_values(parts[1].at("w").values(), {2, 3, 6, 7});
  expect_values(parts[1].at("x").values(), {1, 10});
  // y stays split by column on the ranks; gathered, it is the whole product
  const std::vector<TensorMap> outs = run_reference_ranks(ranks, parts);
  EXPECT_EQ(outs[0].at("y").dims(), (Dims{1, 2}));
  expect_values(gather_outputs(g, ranks, outs).at("y").values(), {40, 51, 62, 73});
  expect_error([&] { shard_inputs(g, ranks, {{"x", values.at("x")}}); }, ErrorCode::invalid_argument,
               {"no value for input 'w'"});
}

TEST(TensorParallel, HeadsThatDoNotDivideAreErrors) {
  examples::LlamaConfig c = small_llama();
  c.heads = 6;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.d_model = 96;
  const Graph q6 = examples::llama_decode_stack(c);
  expect_error([&] { shard_tensor_parallel(q6, 4); }, ErrorCode::unsupported,
               {"sdpa 'sdpa", "6 query heads, which do not divide among 4 ranks"});
  c.heads = 8;
  c.d_model = 128;
  const Graph kv2 = examples::llama_decode_stack(c);
  expect_error([&] { shard_tensor_parallel(kv2, 4); }, ErrorCode::unsupported,
               {"2 key/value heads (GQA, 8 query heads), which do not divide among 4 ranks"});
  EXPECT_NO_THROW(shard_tensor_parallel(kv2, 2));
}

TEST(TensorParallel, UnsplittableGraphsAndBadOptionsAreErrors) {
  const Graph llama = examples::llama_decode_stack(small_llama());
  expect_error([&] { shard_tensor_parallel(llama, 0); }, ErrorCode::invalid_argument, {"world 0"});
  expect_error([&] { shard_tensor_parallel(llama, 2, ShardOptions{.column_parallel = {"nope"}}); },
               ErrorCode::invalid_argument, {"'nope'", "not an input"});
  expect_error([&] { shard_tensor_parallel(llama, 2, ShardOptions{.column_parallel = {"l0.attn_norm_w"}}); },
               ErrorCode::invalid_argument, {"'l0.attn_norm_w'", "not read only as the second operand"});
  // A fused QKV projection: its heads cannot be found through the slices, and split along N by
  // name it would give each rank a mix of q, k and v columns.
  const Graph block = examples::transformer_block();
  expect_error([&] { shard_tensor_parallel(block, 2); }, ErrorCode::unsupported,
               {"cannot find the projection", "of sdpa 'sdpa", "column_parallel"});
  expect_error([&] { shard_tensor_parallel(block, 2, ShardOptions{.column_parallel = {"w_qkv"}, .detect = false}); },
               ErrorCode::unsupported, {"(reshape)", "split along axis 2", "fused projection"});
  // a norm over the split axis
  Graph g("norm_of_split");
  auto x = g.input("x", DType::f32, {2, 8});
  auto y = g.matmul(x, g.input("w", DType::f32, {8, 8}));
  g.output(g.rmsnorm(y, g.input("gamma", DType::f32, {8})), "y");
  expect_error([&] { shard_tensor_parallel(g, 2, ShardOptions{.column_parallel = {"w"}}); }, ErrorCode::unsupported,
               {"(rmsnorm)", "last axis", "split"});
  // a graph with collectives already
  Graph c("has_collective");
  c.output(c.all_reduce(c.input("x", DType::f32, {4}), "tp", 2), "y");
  expect_error([&] { shard_tensor_parallel(c, 2); }, ErrorCode::unsupported, {"already holds collectives"});
}
