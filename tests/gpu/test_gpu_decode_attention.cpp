// The flash-decoding sdpa kernel (kernels/attention/flash_decode.cuh), the jit engine's sdpa
// candidate 0 for Sq <= 16, against the CPU reference: Sq 1..16, Skv 1 .. 5000 (one key, fewer
// keys than one tile, splits with a short last chunk), GQA 32/8, 8/2, 4/4 and MQA, D 64/128/256
// and Dv != D (also not powers of two), both causal alignments (rows with no visible key: o = 0,
// stats -inf), additive bias and bool mask with broadcasts, batch 1 and 3, strided views (BSHD
// with 16-byte loads, a transposed K with element loads), f16, a pointwise epilogue on o, the
// stats output, and the llama_decode_layer example. Every case checks that the step really ran
// the decode kernels, so a silent fallback fails; each executor runs twice on fresh inputs (the
// workspace partials of one launch must not leak into the next).
#include "engines/jit/codegen.hpp"
#include "example_graphs.hpp"
#include "fuse/region.hpp"
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

// How q, k, v are laid out: contiguous BHSD; BSHD (a permuted view, rows still 16-byte
// vectors); K and V as [B, H, D, S] in memory (head dim strided: element loads).
enum class Layout { bhsd, bshd, d_strided };
enum class Extra { none, bias, mask };

struct Case {
  int64_t b, h, hkv, sq, skv, d, dv;
  CausalMask causal;
  Extra extra;
  bool stats;
  Layout layout;
  DType t;
};

Tensor input_view(Graph& g, const std::string& name, DType t, int64_t b, int64_t h, int64_t s, int64_t d,
                  Layout layout, bool is_q) {
  switch (layout) {
    case Layout::bhsd: return g.input(name, t, {b, h, s, d});
    case Layout::bshd: return g.input(name, t, {b, h, s, d}, {s * h * d, d, h * d, 1});
    case Layout::d_strided:
      if (is_q) return g.input(name, t, {b, h, s, d});
      return g.input(name, t, {b, h, s, d}, {h * d * s, d * s, 1, s});
  }
  return g.input(name, t, {b, h, s, d});
}

Graph decode_sdpa(const Case& c) {
  Graph g("dattn_b" + std::to_string(c.b) + "_h" + std::to_string(c.h) + "/" + std::to_string(c.hkv) + "_sq" +
          std::to_string(c.sq) + "_skv" + std::to_string(c.skv) + "_d" + std::to_string(c.d) + "_dv" +
          std::to_string(c.dv));
  auto q = input_view(g, "q", c.t, c.b, c.h, c.sq, c.d, c.layout, true);
  auto k = input_view(g, "k", c.t, c.b, c.hkv, c.skv, c.d, c.layout, false);
  auto v = input_view(g, "v", c.t, c.b, c.hkv, c.skv, c.dv, c.layout, false);
  std::optional<Tensor> bias;
  if (c.extra == Extra::bias) bias = g.input("bias", DType::f32, {1, c.h, c.sq, c.skv});
  if (c.extra == Extra::mask) bias = g.input("mask", DType::boolean, {c.b, 1, 1, c.skv});
  auto r = g.sdpa(q, k, v, SdpaAttrs{.causal = c.causal, .emit_stats = c.stats}, bias);
  g.output(g.mul(r.o, 2.0), "o");  // an epilogue on o
  if (c.stats) g.output(r.stats, "stats");
  return g;
}

class GpuDecodeAttention : public GpuRegions {
 protected:
  void expect_decode_step(const TestPlan& ex, const std::string& name) {
    bool found = false;
    for (const StepDescription& s : ex.steps()) {
      if (s.kind != "sdpa") continue;
      found = true;
      std::printf("  %s: %s\n", name.c_str(), s.description.c_str());
      EXPECT_NE(s.description.find("sdpa flash-decode r"), std::string::npos) << s.description;
    }
    EXPECT_TRUE(found) << "no sdpa step in " << name;
  }

  // check() on the jit engine's candidate 0, then the same executor twice on fresh inputs.
  void check_decode(Graph g, double bound_scale = 1.0) {
    CompileOptions opts;
    opts.engines = {"jit"};
    opts.candidate = 0;
    const Graph copy = g;
    check(std::move(g), bound_scale, opts);
    TestPlan ex(copy, opts);
    expect_decode_step(ex, copy.name());
    check_reruns(ex, copy, bound_scale);
  }
};

constexpr auto kNone = CausalMask::none, kTl = CausalMask::top_left, kBr = CausalMask::bottom_right;

TEST_F(GpuDecodeAttention, LlamaShapesAndGqa) {
  const Case cases[] = {
      {1, 32, 8, 1, 1025, 128, 128, kBr, Extra::none, true, Layout::bhsd, DType::bf16},  // the decode stack
      {3, 32, 8, 1, 4096, 128, 128, kNone, Extra::none, true, Layout::bhsd, DType::bf16},
      {1, 8, 2, 16, 5000, 128, 128, kBr, Extra::none, true, Layout::bhsd, DType::bf16},
      {3, 4, 4, 7, 7, 64, 64, kTl, Extra::none, true, Layout::bhsd, DType::bf16},
      {1, 8, 2, 9, 1025, 64, 64, kBr, Extra::none, false, Layout::bhsd, DType::f16},  // 9 row blocks
      {2, 8, 1, 1, 5000, 256, 256, kBr, Extra::none, true, Layout::bhsd, DType::bf16},  // MQA, D 256
      {1, 4, 4, 2, 1, 64, 64, kNone, Extra::none, true, Layout::bhsd, DType::bf16},     // one key
  };
  for (const Case& c : cases) check_decode(decode_sdpa(c));
}

TEST_F(GpuDecodeAttention, CausalAlignmentsAndMaskedRows) {
  const Case cases[] = {
      // bottom-right with Sq > Skv: the first rows see no key (o = 0, stats -inf)
      {1, 8, 2, 3, 1, 64, 64, kBr, Extra::none, true, Layout::bhsd, DType::bf16},
      {3, 8, 2, 16, 7, 128, 128, kBr, Extra::none, true, Layout::bhsd, DType::bf16},
      {1, 32, 8, 5, 4096, 128, 128, kTl, Extra::none, true, Layout::bhsd, DType::bf16},
      {3, 4, 4, 16, 1025, 64, 64, kBr, Extra::none, true, Layout::bhsd, DType::bf16},
  };
  for (const Case& c : cases) check_decode(decode_sdpa(c));
}

TEST_F(GpuDecodeAttention, BiasMaskAndValueDims) {
  const Case cases[] = {
      {3, 8, 2, 5, 1025, 64, 32, kTl, Extra::bias, true, Layout::bhsd, DType::bf16},    // dv < d
      {1, 4, 4, 16, 777, 128, 64, kBr, Extra::mask, true, Layout::bhsd, DType::bf16},   // bool keep-mask
      {3, 32, 8, 1, 1025, 64, 128, kNone, Extra::mask, false, Layout::bhsd, DType::bf16},  // dv > d
      {1, 8, 2, 4, 300, 80, 200, kNone, Extra::bias, true, Layout::bhsd, DType::bf16},  // not powers of 2
  };
  for (const Case& c : cases) check_decode(decode_sdpa(c));
}

TEST_F(GpuDecodeAttention, StridedViews) {
  const Case cases[] = {
      {3, 32, 8, 2, 1025, 128, 128, kNone, Extra::none, true, Layout::bshd, DType::bf16},
      {1, 8, 2, 1, 5000, 64, 64, kBr, Extra::none, true, Layout::bshd, DType::f16},
      {1, 8, 2, 3, 300, 64, 64, kBr, Extra::none, true, Layout::d_strided, DType::bf16},  // element loads
      {3, 4, 4, 1, 77, 72, 40, kNone, Extra::none, true, Layout::bshd, DType::bf16},  // D, Dv padded lanes
      {2, 4, 2, 3, 99, 60, 36, kTl, Extra::none, true, Layout::bhsd, DType::bf16},    // rows not 16-byte aligned
  };
  for (const Case& c : cases) check_decode(decode_sdpa(c));
}

// The example decode layer: q from a permuted, roped tensor, k and v from concat outputs.
TEST_F(GpuDecodeAttention, LlamaDecodeLayerExample) { check_decode(examples::llama_decode_layer()); }

}  // namespace
}  // namespace sinter::testing
