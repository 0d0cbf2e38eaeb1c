// examples/*.json are generated from examples/example_graphs.cpp; they must not drift apart.
#include <gtest/gtest.h>

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
  for (const auto& ex : examples::all_examples()) {
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
