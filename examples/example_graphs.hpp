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
// With lm_head, the normed state goes on through the LM head (x @ lm_head_w, lm_head_w
// [d_model, vocab] like every other weight here) and a greedy argmax over the vocabulary: the
// graph's output is then next_token [1, 1] i64 instead of y.
struct LlamaConfig {
  int layers = 16;
  int64_t d_model = 2048, heads = 32, kv_heads = 8, head_dim = 64, ffn = 8192, past = 1024;
  bool lm_head = false;
  int64_t vocab = 128256;  // Llama 3's vocabulary
  std::string name = "llama_decode_stack";
};
Graph llama_decode_stack(const LlamaConfig& config = {});

// Llama-3.2-1B's shape: the default stack with its LM head and argmax (16 layers, d 2048, ffn
// 8192, GQA 32/8 heads of 64, cache 1024). The model ties its embedding to the LM head, and the
// graph starts from the embedded token, so its one vocabulary matrix is the LM head: 1.236e9
// weights, 2.47 GB in bf16 (the whole model's size).
LlamaConfig llama_3_2_1b();
// Llama-3-8B's shape: 32 layers, d 4096, ffn 14336, GQA 32/8 heads of 128, cache 4096, LM head and
// argmax. 7.50e9 weights in the graph, 15.0 GB in bf16; the untied embedding table (another
// 0.53e9, read only to embed the token, outside this graph) makes the model's 8.03e9 (16.06 GB).
// A builder only: nobody runs it here.
LlamaConfig llama_3_8b();

struct Example {
  std::string file;  // name of the JSON file in examples/
  Graph (*build)();
};
// The small examples, checked in as examples/*.json; `sinter demo` and the tests run every one.
std::vector<Example> all_examples();
// Whole-model graphs (the Llama 3 decode steps above), written only on request
// (sinter_make_examples --models DIR): too large for the CPU reference that runs the examples.
std::vector<Example> model_examples();

}  // namespace sinter::examples
