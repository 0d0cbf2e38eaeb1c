#include "example_graphs.hpp"

#include <string>

#include "sinter/error.hpp"
#include "sinter/shard.hpp"

namespace sinter::examples {

Graph mlp_layer() {
  Graph g("mlp_layer");
  // x: [tokens, d_model]; w: [d_model, d_ff]; b: [d_ff]
  auto x = g.input("x", DType::bf16, {128, 1024});
  auto w = g.input("w", DType::bf16, {1024, 4096});
  auto b = g.input("b", DType::bf16, {4096});
  auto y = g.gelu(g.add(g.matmul(x, w), b));
  g.output(y, "y");
  g.output(g.amax(y), "y_amax");
  return g;
}

Graph conv_block() {
  Graph g("conv_block");
  const int64_t n = 4, h = 28, w = 28, c = 64;
  auto x = g.input("x", DType::bf16, {n, h, w, c});  // NHWC
  auto w1 = g.input("w1", DType::bf16, {c, 3, 3, c});  // KRSC
  auto b1 = g.input("b1", DType::bf16, {c});
  auto w2 = g.input("w2", DType::bf16, {c, 3, 3, c});
  auto b2 = g.input("b2", DType::bf16, {c});
  const Conv2dAttrs same{.pad_begin = {1, 1}, .pad_end = {1, 1}};
  auto h1 = g.relu(g.add(g.conv2d(x, w1, same), b1));
  auto h2 = g.add(g.conv2d(h1, w2, same), b2);
  g.output(g.relu(g.add(h2, x)), "y");
  return g;
}

Graph transformer_block() {
  Graph g("transformer_block");
  const int64_t b = 2, s = 128, d = 512, heads = 8, dh = 64, ff = 2048;
  auto x = g.input("x", DType::bf16, {b, s, d});
  auto ln1_w = g.input("ln1_w", DType::bf16, {d});
  auto ln1_b = g.input("ln1_b", DType::bf16, {d});
  auto w_qkv = g.input("w_qkv", DType::bf16, {d, 3 * d});
  auto b_qkv = g.input("b_qkv", DType::bf16, {3 * d});
  auto w_o = g.input("w_o", DType::bf16, {d, d});
  auto b_o = g.input("b_o", DType::bf16, {d});
  auto ln2_w = g.input("ln2_w", DType::bf16, {d});
  auto ln2_b = g.input("ln2_b", DType::bf16, {d});
  auto w_up = g.input("w_up", DType::bf16, {d, ff});
  auto b_up = g.input("b_up", DType::bf16, {ff});
  auto w_down = g.input("w_down", DType::bf16, {ff, d});
  auto b_down = g.input("b_down", DType::bf16, {d});

  // attention
  auto h = g.layernorm(x, ln1_w, ln1_b);
  auto qkv = g.add(g.matmul(h, w_qkv), b_qkv);           // [b, s, 3d]
  auto qkv5 = g.reshape(qkv, {b, s, 3, heads, dh});       // [b, s, 3, H, Dh]
  auto head = [&](int64_t i) {                            // -> [b, H, s, Dh]
    auto part = g.slice(qkv5, {2}, {i}, {i + 1});
    return g.permute(g.reshape(part, {b, s, heads, dh}), {0, 2, 1, 3});
  };
  // (one statement each: C++ leaves the order of function arguments unspecified, and the
  // generated names must not depend on the compiler)
  auto q = head(0);
  auto k = head(1);
  auto v = head(2);
  auto attn = g.sdpa(q, k, v, SdpaAttrs{.causal = CausalMask::top_left});
  auto merged = g.reshape(g.permute(attn.o, {0, 2, 1, 3}), {b, s, d});
  auto x1 = g.add(g.add(g.matmul(merged, w_o), b_o), x);

  // MLP
  auto h2 = g.layernorm(x1, ln2_w, ln2_b);
  auto up = g.gelu(g.add(g.matmul(h2, w_up), b_up));
  auto y = g.add(g.add(g.matmul(up, w_down), b_down), x1);
  g.output(y, "y");
  return g;
}

namespace {

// One Llama-style decoder layer for a decode step of B = c.batch sequences, added to `g`: reads
// x [1, B, d] (the B new tokens as rows), returns the layer's output, also [1, B, d]; its
// weights and KV caches ([B, Hkv, past, dh]: each sequence its own) are graph inputs named
// prefix + "wq" etc., and the updated caches are graph outputs prefix + "k_cache_next" /
// "v_cache_next".
//
// The tokens are rows of one [1, B, d] matrix rather than a batch of [B, 1, d]: each projection
// is then one matmul with M = B against the shared weight, which every engine streams once. A
// [B, 1, d] x [d, n] matmul is a batch of B products with M = 1: the decode GEMV
// (codegen_decode_gemv.cpp) gives each batch entry tiles of its own, each streaming all of W.
// The heads are formed per sequence ([1, B, n*dh] -> [B, 1, n, dh] -> [B, n, 1, dh]) and merged
// back into rows after attention; at B = 1 they are [1, 1, n, dh] and [1, 1, H*dh], the
// one-sequence layer's.
Tensor add_llama_layer(Graph& g, Tensor x, const LlamaConfig& c, const std::string& prefix,
                       Tensor cos, Tensor sin) {
  const int64_t b = c.batch, d = c.d_model, heads = c.heads, kv_heads = c.kv_heads, dh = c.head_dim, ff = c.ffn;
  auto in = [&](const std::string& name, DType t, Dims dims) { return g.input(prefix + name, t, std::move(dims)); };
  auto weight = [&](const std::string& name, int64_t k, int64_t n) {  // [K, N]: see LlamaConfig::weights_nk
    return c.weights_nk ? g.input(prefix + name, c.dtype, {k, n}, {1, k}) : g.input(prefix + name, c.dtype, {k, n});
  };
  auto attn_norm = in("attn_norm_w", c.dtype, {d});
  auto wq = weight("wq", d, heads * dh);
  auto wk = weight("wk", d, kv_heads * dh);
  auto wv = weight("wv", d, kv_heads * dh);
  auto wo = weight("wo", heads * dh, d);
  auto ffn_norm = in("ffn_norm_w", c.dtype, {d});
  auto w_gate = weight("w_gate", d, ff);
  auto w_up = weight("w_up", d, ff);
  auto w_down = weight("w_down", ff, d);
  auto k_cache = in("k_cache", c.dtype, {b, kv_heads, c.past, dh});
  auto v_cache = in("v_cache", c.dtype, {b, kv_heads, c.past, dh});

  auto h = g.rmsnorm(x, attn_norm, std::nullopt, 1e-5);
  auto to_heads = [&](Tensor t, int64_t n) {  // [1, B, n*dh] -> [B, n, 1, dh]
    return g.permute(g.reshape(t, {b, 1, n, dh}), {0, 2, 1, 3});
  };
  auto q = g.rope(to_heads(g.matmul(h, wq), heads), cos, sin);
  auto k_new = g.rope(to_heads(g.matmul(h, wk), kv_heads), cos, sin);
  auto v_new = to_heads(g.matmul(h, wv), kv_heads);
  auto k_all = g.concat({k_cache, k_new}, 2);  // [B, Hkv, past + 1, dh]
  auto v_all = g.concat({v_cache, v_new}, 2);
  auto attn = g.sdpa(q, k_all, v_all, SdpaAttrs{.causal = CausalMask::bottom_right});
  auto merged = g.reshape(g.permute(attn.o, {0, 2, 1, 3}), {1, b, heads * dh});  // [B, 1, H, dh] -> rows
  auto x1 = g.add(g.matmul(merged, wo), x);

  auto h2 = g.rmsnorm(x1, ffn_norm, std::nullopt, 1e-5);
  auto gate = g.silu(g.matmul(h2, w_gate));
  auto up = g.matmul(h2, w_up);
  auto swiglu = g.mul(gate, up);
  auto y = g.add(g.matmul(swiglu, w_down), x1);
  g.output(k_all, prefix + "k_cache_next");
  g.output(v_all, prefix + "v_cache_next");
  return y;
}

// `t` reshaped to `dims`, or `t` itself where it has them already (at batch 1 the rows [1, 1, n]
// and the per-sequence [1, 1, n] are one shape, and the graph holds no reshape that does nothing).
Tensor reshaped(Graph& g, Tensor t, const Dims& dims) {
  return g.tensor(t.id).dims == dims ? t : g.reshape(t, dims);
}

}  // namespace

Graph llama_decode_layer() {
  Graph g("llama_decode_layer");
  const LlamaConfig c{.layers = 1, .d_model = 512, .heads = 8, .kv_heads = 2, .head_dim = 64,
                      .ffn = 1408, .past = 255};
  auto x = g.input("x", DType::bf16, {1, 1, c.d_model});  // one new token
  auto cos = g.input("cos", DType::f32, {1, c.head_dim / 2});  // this token's position
  auto sin = g.input("sin", DType::f32, {1, c.head_dim / 2});
  g.output(add_llama_layer(g, x, c, "", cos, sin), "y");
  return g;
}

Graph llama_decode_stack(const LlamaConfig& c) {
  if (c.layers < 1) throw Error(ErrorCode::invalid_argument, "llama_decode_stack: layers must be >= 1");
  if (c.batch < 1) {
    throw Error(ErrorCode::invalid_argument,
                "llama_decode_stack: batch must be >= 1; found " + std::to_string(c.batch));
  }
  const int64_t b = c.batch;
  Graph g(c.name);
  // one new token per sequence, embedded, or its id looked up in the embedding table
  const Tensor tokens = c.from_token_ids
                            ? g.gather(g.input("embed_w", c.dtype, {c.vocab, c.d_model}), g.input("tokens", DType::i64, {b, 1}))
                            : g.input("x", c.dtype, {b, 1, c.d_model});
  auto cos = g.input("cos", DType::f32, {1, c.head_dim / 2});  // the position all B share
  auto sin = g.input("sin", DType::f32, {1, c.head_dim / 2});
  Tensor x = reshaped(g, tokens, {1, b, c.d_model});  // as rows: see add_llama_layer
  for (int l = 0; l < c.layers; ++l) x = add_llama_layer(g, x, c, "l" + std::to_string(l) + ".", cos, sin);
  auto final_norm = g.input("final_norm_w", c.dtype, {c.d_model});
  Tensor y = g.rmsnorm(x, final_norm, std::nullopt, 1e-5);
  if (!c.lm_head) {
    g.output(reshaped(g, y, {b, 1, c.d_model}), "y");
    return g;
  }
  auto lm_head_w = c.weights_nk ? g.input("lm_head_w", c.dtype, {c.d_model, c.vocab}, {1, c.d_model})
                                : g.input("lm_head_w", c.dtype, {c.d_model, c.vocab});
  auto logits = g.matmul(y, lm_head_w);  // [1, B, vocab]: the LM head read once for all B
  // [1, B] -> [B, 1] i64: greedy decoding, a token per sequence
  g.output(reshaped(g, g.argmax(logits, -1), {b, 1}), "next_token");
  return g;
}

LlamaConfig llama_3_2_1b() {
  return LlamaConfig{.layers = 16, .d_model = 2048, .heads = 32, .kv_heads = 8, .head_dim = 64,
                     .ffn = 8192, .past = 1024, .lm_head = true, .vocab = 128256,
                     .name = "llama3_2_1b_decode_step"};
}

LlamaConfig llama_3_8b() {
  return LlamaConfig{.layers = 32, .d_model = 4096, .heads = 32, .kv_heads = 8, .head_dim = 128,
                     .ffn = 14336, .past = 4096, .lm_head = true, .vocab = 128256,
                     .name = "llama3_8b_decode_step"};
}

std::vector<Graph> llama_decode_stack_tp(const LlamaConfig& c, int world) {
  ShardOptions options;
  options.group = "tp";
  return shard_tensor_parallel(llama_decode_stack(c), world, options);
}

LlamaConfig llama_tp_example_config() {
  LlamaConfig c;
  c.layers = 2;
  return c;
}

std::vector<Example> tensor_parallel_examples() {
  return {
      {"tensor_parallel/llama_decode_stack_tp2.json", [] { return llama_decode_stack_tp(llama_tp_example_config(), 2)[0]; }},
      {"tensor_parallel/llama_decode_stack_tp4.json", [] { return llama_decode_stack_tp(llama_tp_example_config(), 4)[0]; }},
      {"tensor_parallel/llama_decode_stack_tp8.json", [] { return llama_decode_stack_tp(llama_tp_example_config(), 8)[0]; }},
  };
}

std::vector<Example> model_examples() {
  return {
      {"llama3_2_1b_decode_step.json", [] { return llama_decode_stack(llama_3_2_1b()); }},
      {"llama3_8b_decode_step.json", [] { return llama_decode_stack(llama_3_8b()); }},
  };
}

std::vector<Example> all_examples() {
  return {
      {"mlp_layer.json", &mlp_layer},
      {"conv_block.json", &conv_block},
      {"transformer_block.json", &transformer_block},
      {"llama_decode_layer.json", &llama_decode_layer},
  };
}

}  // namespace sinter::examples
