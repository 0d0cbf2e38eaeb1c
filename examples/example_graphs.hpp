// The example graphs, written with the C++ builder API. examples/*.json are generated from these
// by `sinter_make_examples` (and a unit test checks they agree), so each function here doubles as
// a readable example of the API.
#pragma once

#include <string>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter::examples {

// matmul + bias + GELU, with the amax of the result (what fp8 scaling of the next layer needs).
Graph mlp_layer();
// ResNet basic block, NHWC: conv3x3 + bias + relu, conv3x3 + bias, + residual, relu.
Graph conv_block();
// Pre-norm transformer block: layernorm, QKV projection, causal SDPA, output projection +
// residual, layernorm, GELU MLP + residual.
Graph transformer_block();
// Llama-style decoder layer for one decode step: rmsnorm, QKV, rope, the new key/value appended
// to a KV cache, GQA attention with Sq=1, output projection + residual, rmsnorm, SwiGLU MLP +
// residual. The updated cache is an output.
Graph llama_decode_layer();

// A stack of those layers (one decode step of a whole model, batch 1) with a final rmsnorm. The
// defaults are the plan issue's benchmark model: 16 layers, d 2048, ffn 8192, GQA 32/8 heads of
// 64, a KV cache of 1024 positions: about 1.98 GB of bf16 weights and cache.
struct LlamaConfig {
  int layers = 16;
  int64_t d_model = 2048, heads = 32, kv_heads = 8, head_dim = 64, ffn = 8192, past = 1024;
};
Graph llama_decode_stack(const LlamaConfig& config = {});

struct Example {
  std::string file;  // name of the JSON file in examples/
  Graph (*build)();
};
std::vector<Example> all_examples();

}  // namespace sinter::examples
