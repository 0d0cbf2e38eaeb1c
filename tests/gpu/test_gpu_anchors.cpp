// Matmul, conv, sdpa and standalone reductions on the GPU against the CPU reference, with their
// fused epilogues and exit reductions, at odd shapes, batched, broadcast and transposed.
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

TEST_F(GpuRegions, MatmulOddShapesWithEpilogue) {
  struct Case { int64_t m, n, k; };
  for (Case c : {Case{1, 1, 1}, Case{7, 13, 5}, Case{129, 67, 300}, Case{256, 512, 1024}, Case{1, 4096, 777}}) {
    Graph g("mm_" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    auto a = g.input("a", DType::bf16, {c.m, c.k});
    auto b = g.input("b", DType::bf16, {c.k, c.n});
    auto bias = g.input("bias", DType::bf16, {c.n});
    auto pre = g.add(g.matmul(a, b), bias);
    g.output(pre, "pre");
    auto y = g.gelu(pre);
    g.output(y, "y");
    g.output(g.amax(y), "amax");
    check(std::move(g));
  }
}

TEST_F(GpuRegions, MatmulBatchedBroadcastTransposedAndReductions) {
  Graph g("mm_batched");
  auto a = g.input("a", DType::f16, {3, 1, 33, 70});
  auto bt = g.input("bt", DType::f16, {4, 70, 45}, {45 * 70, 1, 70});  // each batch column-major
  auto res = g.input("res", DType::f16, {3, 4, 33, 45});
  auto y = g.add(g.matmul(a, bt), res);
  g.output(y, "y");
  g.output(g.sum(y, {-1}), "rows");
  g.output(g.sum(y, {0, 1, 2}), "cols");
  check(std::move(g), 2.0);
  Graph f("mm_f32");
  auto fa = f.input("a", DType::f32, {65, 129});
  auto fb = f.input("b", DType::f32, {129, 31});
  f.output(f.matmul(fa, fb), "y");
  check(std::move(f), 10.0);  // f32 FMA order differs from the float64 reference
}

TEST_F(GpuRegions, ConvGeometryAndEpilogue) {
  Graph g("conv");
  auto x = g.input("x", DType::bf16, {2, 15, 17, 8});
  auto w = g.input("w", DType::bf16, {6, 3, 5, 4});
  auto b = g.input("b", DType::bf16, {6});
  Conv2dAttrs at{.stride = {2, 1}, .pad_begin = {1, 2}, .pad_end = {0, 2}, .dilation = {1, 2}, .groups = 2};
  auto y = g.relu(g.add(g.conv2d(x, w, at), b));
  g.output(y, "y");
  g.output(g.sum(y, {0, 1, 2}), "per_channel");
  check(std::move(g));
  Graph h("conv3x3");
  auto hx = h.input("x", DType::bf16, {4, 28, 28, 64});
  auto hw = h.input("w", DType::bf16, {64, 3, 3, 64});
  h.output(h.conv2d(hx, hw, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}}), "y");
  check(std::move(h));
}

TEST_F(GpuRegions, SdpaVariants) {
  struct Case { int64_t b, h, hkv, sq, skv, d, dv; CausalMask causal; bool bias, mask, stats; };
  const Case cases[] = {
      {2, 4, 4, 77, 77, 64, 64, CausalMask::none, false, false, true},
      {1, 8, 2, 1, 300, 128, 128, CausalMask::bottom_right, false, false, true},  // decode, GQA
      {2, 4, 1, 50, 20, 32, 48, CausalMask::top_left, true, false, false},       // MQA, Sq > Skv
      {1, 2, 2, 30, 70, 64, 64, CausalMask::bottom_right, false, true, true},     // chunked prefill
      {1, 2, 2, 64, 64, 256, 256, CausalMask::none, false, false, false},
  };
  for (const Case& c : cases) {
    Graph g("sdpa");
    auto q = g.input("q", DType::bf16, {c.b, c.h, c.sq, c.d});
    auto k = g.input("k", DType::bf16, {c.b, c.hkv, c.skv, c.d});
    auto v = g.input("v", DType::bf16, {c.b, c.hkv, c.skv, c.dv});
    std::optional<Tensor> bias;
    if (c.bias) bias = g.input("bias", DType::f32, {1, c.h, c.sq, c.skv});
    if (c.mask) bias = g.input("mask", DType::boolean, {c.b, 1, 1, c.skv});
    auto r = g.sdpa(q, k, v, SdpaAttrs{.causal = c.causal, .emit_stats = c.stats}, bias);
    g.output(g.mul(r.o, 2.0), "o");
    if (c.stats) g.output(r.stats, "stats");
    check(std::move(g), 1.0);
  }
}

TEST_F(GpuRegions, StandaloneReductions) {
  Graph g("reduce");
  auto x = g.input("x", DType::bf16, {5, 6, 700});
  auto xt = g.input("xt", DType::f32, {40, 30}, {1, 40});
  g.output(g.sum(x, {1}), "mid");
  g.output(g.reduce(OpKind::reduce_sum, x, {0, 2}, true, DType::f32), "outer");
  g.output(g.amax(x), "all");
  g.output(g.reduce_max(x, {2}), "inner");
  g.output(g.mean(xt, {0}), "tcols");
  g.output(g.reduce_min(xt, {1}, true), "trows");
  check(std::move(g), 2.0);
}

}  // namespace
}  // namespace sinter::testing
