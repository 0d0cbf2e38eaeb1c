// examples/*.json are generated from examples/example_graphs.cpp; they must not drift apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "example_graphs.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"
#include "sinter/host_tensor.hpp"
#include "sinter/json.hpp"
#include "sinter/reference.hpp"

using namespace sinter;

TEST(Examples, CheckedInJsonMatchesTheBuilders) {
  std::vector<examples::Example> list = examples::all_examples();
  for (const auto& ex : examples::tensor_parallel_examples()) list.push_back(ex);
  for (const auto& ex : list) {
    Graph g = ex.build();
    g.validate();
    std::ifstream in(std::string(SINTER_EXAMPLES_DIR) + "/" + ex.file);
    ASSERT_TRUE(in) << ex.file << " is missing: run build/sinter_make_examples";
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), save_graph_json(g))
        << ex.file << " is stale: run build/sinter_make_examples";
  }
}

// The plan issue's decode model: 16 layers, d 2048, ffn 8192, GQA 32/8, cache 1024 -- about
// 1.98 GB of bf16 weights and KV cache read per decode step.
TEST(Examples, LlamaDecodeStackHasTheBenchmarkSize) {
  const Graph g = examples::llama_decode_stack();
  const double gb = graph_cost(g).min_bytes / 1e9;
  EXPECT_GT(gb, 1.95);
  EXPECT_LT(gb, 2.05);
  EXPECT_EQ(g.outputs().size(), 1u + 2u * 16u);  // y and each layer's two updated caches
}

// A small stack runs on the reference, and its partition reproduces it exactly.
TEST(Examples, SmallLlamaDecodeStackRunsAndPartitions) {
  const examples::LlamaConfig c{.layers = 3, .d_model = 64, .heads = 4, .kv_heads = 2,
                                .head_dim = 16, .ffn = 96, .past = 7};
  Graph g = examples::llama_decode_stack(c);
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  fuse::verify_partition(g, p);
  const TensorMap out = run_reference(g, random_inputs(g, 5));
  const HostTensor& y = out.at("y");
  EXPECT_EQ(y.dims(), (Dims{1, 1, 64}));
  const TensorStats st = tensor_stats(y);
  EXPECT_EQ(st.nan_count + st.inf_count, 0);
  EXPECT_GT(st.l2, 0.0);
  EXPECT_EQ(out.at("l2.k_cache_next").dims(), (Dims{1, 2, 8, 16}));
  const examples::LlamaConfig none{.layers = 0};
  EXPECT_THROW(examples::llama_decode_stack(none), Error);
}

// From token ids: the ids' rows of the embedding table are the embedded tokens, so the stack from
// ids computes exactly what the stack from those embeddings computes (batch 2, LM head and argmax).
TEST(Examples, LlamaFromTokenIdsEqualsFromTheirEmbeddings) {
  examples::LlamaConfig c{.layers = 2, .d_model = 64, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 96,
                          .past = 7, .lm_head = true, .vocab = 300, .batch = 2};
  const Graph embedded = examples::llama_decode_stack(c);
  c.from_token_ids = true;
  const Graph ids = examples::llama_decode_stack(c);
  TensorMap in = random_inputs(ids, 11);
  const std::vector<double> table = in.at("embed_w").values(), tokens = in.at("tokens").values();
  std::vector<double> rows;
  for (double t : tokens) {
    const auto r = static_cast<int64_t>(t < 0 ? t + 300 : t);
    rows.insert(rows.end(), table.begin() + r * 64, table.begin() + (r + 1) * 64);
  }
  TensorMap in_embedded = in;
  in_embedded.erase("embed_w");
  in_embedded.erase("tokens");
  in_embedded.emplace("x", HostTensor::from_values(DType::bf16, {2, 1, 64}, rows));
  const TensorMap a = run_reference(ids, in), b = run_reference(embedded, in_embedded);
  EXPECT_EQ(a.at("next_token").values(), b.at("next_token").values());
  EXPECT_EQ(a.at("l1.k_cache_next").values(), b.at("l1.k_cache_next").values());
  // the step reads the embedding table's two picked rows, not the table: the read-once floor is
  // the embedded token's bytes plus the two i64 ids
  EXPECT_DOUBLE_EQ(graph_cost(ids).min_bytes, graph_cost(embedded).min_bytes + 2 * 8);
}

// The checked-in tensor-parallel examples: the benchmark model's layers split 2, 4 and 8 ways,
// each rank holding its share of the weights and of the KV cache, four all_reduces (attention
// output and down projection of each of 2 layers) exchanging the [1, 1, 2048] bf16 residual.
TEST(Examples, TensorParallelLlamaSplitsTheWeights) {
  const examples::LlamaConfig c = examples::llama_tp_example_config();
  Graph full = examples::llama_decode_stack(c);
  full.validate();
  const double full_bytes = graph_cost(full).min_bytes;
  for (int world : {2, 4, 8}) {
    const std::vector<Graph> ranks = examples::llama_decode_stack_tp(c, world);
    ASSERT_EQ(ranks.size(), static_cast<size_t>(world));
    const GraphCost cost = graph_cost(ranks[0]);
    // the replicated norms, token and rope angles are a small part: each rank reads about 1/W
    EXPECT_NEAR(cost.min_bytes * world / full_bytes, 1.0, 0.01) << world;
    EXPECT_DOUBLE_EQ(cost.comm_bytes, 4 * 2.0 * (world - 1) / world * 2048 * 2);
    const TensorInfo& kc = ranks[0].tensor(*ranks[0].find_tensor("l1.k_cache"));
    EXPECT_EQ(kc.dims, (Dims{1, c.kv_heads / world, c.past, c.head_dim}));
  }
}

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "" where the texts are equal, else their first differing line (a whole graph's JSON in a
// failure message would hide it).
std::string first_difference(const std::string& got, const std::string& want) {
  std::istringstream a(got), b(want);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "";
    if (!more_a || !more_b || la != lb) {
      return "line " + std::to_string(line) + ": built '" + (more_a ? la : "(end)") + "', file '" +
             (more_b ? lb : "(end)") + "'";
    }
  }
}

}  // namespace

// Batch 1 is the graph every benchmark and example so far was measured on, and stays it: the same
// ops, names, attributes and shapes as tests/unit/data/llama_batch1/*.json, which the builder
// wrote before LlamaConfig had a batch (no tool writes them: regenerated from the current builder,
// this test could not fail). Two layers each: the layers are one loop, and the files stay small.
TEST(Examples, LlamaBatchOneIsTheOneSequenceGraph) {
  examples::LlamaConfig stack;  // the benchmark stack's layer, output y
  stack.layers = 2;
  examples::LlamaConfig model = examples::llama_3_2_1b();  // LM head and argmax
  model.layers = 2;
  const std::pair<std::string, examples::LlamaConfig> cases[] = {{"llama_decode_stack_2_layers.json", stack},
                                                                {"llama3_2_1b_decode_step_2_layers.json", model}};
  for (const auto& [file, config] : cases) {
    const std::string want = read_text(std::string(SINTER_TESTS_DIR) + "/unit/data/llama_batch1/" + file);
    ASSERT_FALSE(want.empty()) << file << " is missing";
    EXPECT_EQ(config.batch, 1);
    EXPECT_EQ(first_difference(save_graph_json(examples::llama_decode_stack(config)), want), "") << file;
  }
}

namespace {

// Entry i of axis 0 of `t`, as a tensor of extent 1 along that axis.
HostTensor sequence_of(const HostTensor& t, int64_t i) {
  Dims dims = t.dims();
  const int64_t per = t.numel() / dims[0];
  dims[0] = 1;
  const std::vector<double> all = t.values();
  return HostTensor::from_values(t.dtype(), dims, std::vector<double>(all.begin() + i * per, all.begin() + (i + 1) * per));
}

// Tensors of a decode step that hold one entry per sequence: the token and the KV caches.
bool per_sequence(const std::string& name) { return name == "x" || name.find("_cache") != std::string::npos; }

}  // namespace

// A decode step of B = 3 sequences is B independent decode steps: each sequence's outputs (y or
// next_token, and every updated cache) equal a batch-1 run of the same weights on that sequence's
// token and caches. Each projection is one matmul over all B rows (the weight read once).
TEST(Examples, BatchedLlamaDecodesEachSequenceAlone) {
  for (bool lm_head : {false, true}) {
    SCOPED_TRACE(lm_head ? "with LM head" : "without LM head");
    examples::LlamaConfig one{.layers = 2, .d_model = 64, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 96,
                              .past = 7, .lm_head = lm_head, .vocab = 50};
    examples::LlamaConfig three = one;
    three.batch = 3;
    Graph batched = examples::llama_decode_stack(three);
    batched.validate();
    const Graph single = examples::llama_decode_stack(one);
    EXPECT_EQ(batched.tensor(*batched.find_tensor("x")).dims, (Dims{3, 1, 64}));
    EXPECT_EQ(batched.tensor(*batched.find_tensor("l1.v_cache")).dims, (Dims{3, 2, 7, 16}));
    EXPECT_EQ(batched.tensor(*batched.find_tensor("l1.v_cache_next")).dims, (Dims{3, 2, 8, 16}));
    if (lm_head) {
      const TensorInfo& token = batched.tensor(*batched.find_tensor("next_token"));
      EXPECT_EQ(token.dims, (Dims{3, 1}));
      EXPECT_EQ(token.dtype, DType::i64);
    } else {
      EXPECT_EQ(batched.tensor(*batched.find_tensor("y")).dims, (Dims{3, 1, 64}));
    }
    int matmuls = 0;
    for (const Node& n : batched.nodes()) {
      if (n.op != OpKind::matmul) continue;
      ++matmuls;
      const Dims& a = batched.tensor(n.inputs[0]).dims;
      EXPECT_EQ(a.size(), 3u) << n.name;
      EXPECT_EQ(a[0], 1) << n.name << ": the sequences must be rows (M), not a batch axis";
      EXPECT_EQ(a[1], 3) << n.name;
    }
    EXPECT_EQ(matmuls, 2 * 7 + (lm_head ? 1 : 0));

    const TensorMap in = random_inputs(batched, 41);
    const TensorMap out = run_reference(batched, in);
    double worst = 0;
    for (int64_t i = 0; i < three.batch; ++i) {
      TensorMap in1;
      for (TensorId t : single.inputs()) {
        const std::string& name = single.tensor(t).name;
        in1[name] = per_sequence(name) ? sequence_of(in.at(name), i) : in.at(name);
        EXPECT_EQ(in1[name].dims(), single.tensor(t).dims) << name;
      }
      const TensorMap out1 = run_reference(single, in1);
      for (TensorId t : single.outputs()) {
        const std::string& name = single.tensor(t).name;
        const HostTensor got = sequence_of(out.at(name), i);
        ASSERT_EQ(got.dims(), out1.at(name).dims()) << name;
        const double err = relative_l2_error(got, out1.at(name));
        EXPECT_LE(err, relative_l2_bound(single, t)) << name << " of sequence " << i;
        if (is_float(single.tensor(t).dtype)) {
          EXPECT_GT(tensor_stats(out1.at(name)).l2, 0.0) << name;
        }
        worst = std::max(worst, err);
      }
    }
    // the sequences' results differ (random inputs, not a case that any mix-up of them would pass)
    if (!lm_head) {
      EXPECT_GT(relative_l2_error(sequence_of(out.at("y"), 0), sequence_of(out.at("y"), 1)), 0.1);
    }
    std::printf("batch-3 llama decode stack%s against 3 batch-1 runs: worst relative L2 error %.3g\n",
                lm_head ? " with LM head" : "", worst);
  }
  examples::LlamaConfig none;
  none.batch = 0;
  EXPECT_THROW(examples::llama_decode_stack(none), Error);
}

namespace {

// Bytes of a graph's weights: every input but the token, the rope angles and the KV caches.
double weight_bytes(const Graph& g) {
  double bytes = 0;
  for (TensorId t : g.inputs()) {
    const TensorInfo& ti = g.tensor(t);
    const bool state = ti.name == "x" || ti.name == "cos" || ti.name == "sin" ||
                       ti.name.find("_cache") != std::string::npos;
    if (!state) bytes += static_cast<double>(num_elements(ti.dims) * dtype_size(ti.dtype));
  }
  return bytes;
}

}  // namespace

// Llama-3.2-1B: 16 x 60,821,504 layer weights + the final norm + the LM head [2048, 128256]
// (tied to the embedding, which the graph does not read: the model's 1,235,814,400 weights).
TEST(Examples, Llama3_2_1bDecodeStepHasTheModelsSize) {
  Graph g = examples::llama_decode_stack(examples::llama_3_2_1b());
  g.validate();
  EXPECT_EQ(g.name(), "llama3_2_1b_decode_step");
  EXPECT_DOUBLE_EQ(weight_bytes(g), 2.0 * 1'235'814'400);  // 2.47 GB of bf16
  const TensorInfo& token = g.tensor(*g.find_tensor("next_token"));
  EXPECT_EQ(token.dtype, DType::i64);
  EXPECT_EQ(token.dims, (Dims{1, 1}));
  EXPECT_EQ(g.outputs().size(), 1u + 2u * 16u);
  // per decode step: the weights, and the caches read and written back
  const GraphCost cost = graph_cost(g);
  EXPECT_GT(cost.min_bytes, 2.47e9 + 2 * 0.0335e9);
  EXPECT_GT(cost.flops, 2.0 * 1.2e9);
  // the partition puts the argmax in a reduction region of its own after the LM head
  const fuse::Partition p = fuse::partition_graph(g);
  fuse::verify_partition(g, p);
  const fuse::Region& last = p.regions.back();
  EXPECT_EQ(last.kind, fuse::RegionKind::reduction);
  EXPECT_EQ(g.node(last.anchor).op, OpKind::argmax);
  // its JSON (no weights) is small, and loads back to the same graph
  const std::string json = save_graph_json(g);
  EXPECT_LT(json.size(), 200'000u);
  EXPECT_EQ(save_graph_json(load_graph_json(json)), json);
}

// Llama-3-8B: 32 x 218,112,000 layer weights + the final norm + the LM head [4096, 128256]; the
// untied embedding table (525,336,576 more, outside the graph) makes the model's 8.03e9.
TEST(Examples, Llama3_8bDecodeStepHasTheModelsSize) {
  Graph g = examples::llama_decode_stack(examples::llama_3_8b());
  g.validate();
  const double graph_weights = 32.0 * 218'112'000 + 4096 + 4096.0 * 128256;
  EXPECT_DOUBLE_EQ(weight_bytes(g), 2.0 * graph_weights);  // 15.0 GB of bf16
  EXPECT_NEAR(2.0 * (graph_weights + 128256.0 * 4096) / 1e9, 16.06, 0.01);
  EXPECT_EQ(g.tensor(*g.find_tensor("l31.k_cache")).dims, (Dims{1, 8, 4096, 128}));
  EXPECT_EQ(g.outputs().size(), 1u + 2u * 32u);
}
