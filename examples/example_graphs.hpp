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

// A stack of those layers (one decode step of a whole model) with a final rmsnorm. The defaults
// are the plan issue's benchmark model: 16 layers, d 2048, ffn 8192, GQA 32/8 heads of 64, a KV
// cache of 1024 positions, batch 1: about 1.98 GB of bf16 weights and cache.
// With lm_head, the normed state goes on through the LM head (x @ lm_head_w, lm_head_w
// [d_model, vocab] like every other weight here) and a greedy argmax over the vocabulary: the
// graph's output is then next_token [batch, 1] i64 instead of y.
// batch: B sequences decoded in one step, each with one new token (x [B, 1, d_model]) and its own
// KV caches ([B, kv_heads, past, head_dim] per layer), all at the same position (one cos/sin
// serves them all). Every weight is read once per step for all B: the B tokens are the rows (M)
// of each projection. At batch 1 the graph holds no batch reshapes: x [1, 1, d_model] is already
// a row, and the graph is the one-sequence decode step.
struct LlamaConfig {
  int layers = 16;
  int64_t d_model = 2048, heads = 32, kv_heads = 8, head_dim = 64, ffn = 8192, past = 1024;
  bool lm_head = false;
  int64_t vocab = 128256;  // Llama 3's vocabulary
  std::string name = "llama_decode_stack";
  DType dtype = DType::bf16;  // of the token, the weights and the KV cache (rope angles are f32)
  int64_t batch = 1;
  // Start from token ids ("tokens", i64 [batch, 1]) looked up in an embedding table ("embed_w",
  // [vocab, d_model]; a gather) instead of the embedded token ("x").
  bool from_token_ids = false;
  // The projection weights (and the LM head) stored as PyTorch's nn.Linear stores them, [N, K]
  // row-major (k-contiguous), declared [K, N] with strides {1, K}; otherwise [K, N] row-major.
  bool weights_nk = false;
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
// sinter_bench_plan --models 8b runs it (two of its layers checked against the CPU reference).
LlamaConfig llama_3_8b();

// The decode stack split over `world` GPUs by tensor parallelism (sinter/shard.hpp): one graph per
// rank, all alike (every rank runs the same program on its own weight shards). Each layer's Q, K,
// V, gate and up projections are column-parallel, its attention output and down projections
// row-parallel, each followed by an all_reduce over group "tp"; each rank holds heads/world query
// heads and kv_heads/world KV-cache heads.
std::vector<Graph> llama_decode_stack_tp(const LlamaConfig& config, int world);
// The configuration of the checked-in tensor-parallel examples: the benchmark model's layer
// (d 2048, ffn 8192, GQA 32/8 heads of 64, cache 1024) in a stack of 2, so the files stay small.
LlamaConfig llama_tp_example_config();

struct Example {
  std::string file;  // path of the JSON file under examples/
  Graph (*build)();
};
// The small examples, checked in as examples/*.json; `sinter demo` and the tests run every one.
std::vector<Example> all_examples();
// Whole-model graphs (the Llama 3 decode steps above), written only on request
// (sinter_make_examples --models DIR): too large for the CPU reference that runs the examples.
std::vector<Example> model_examples();
// Rank 0's graph of llama_decode_stack_tp(llama_tp_example_config(), W) for W = 2, 4, 8, checked
// in as examples/tensor_parallel/llama_decode_stack_tp{W}.json (every rank's graph is the same).
// They hold collectives of world W, which the CPU reference runs only through run_reference_ranks
// and a GPU only with a communicator of W ranks (docs/multi-gpu.md), so they are kept apart from
// all_examples() (and from the folder that `sinter demo` runs).
std::vector<Example> tensor_parallel_examples();

}  // namespace sinter::examples
