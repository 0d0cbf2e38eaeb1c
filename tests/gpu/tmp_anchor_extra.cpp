// TEMPORARY (helper session): extra anchor cases and timings; deleted before hand-off.
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

TEST_F(GpuRegions, TmpExtraMatmul) {
  {
    Graph g("rowcol_f32");
    auto a = g.input("a", DType::f32, {130, 33});
    auto b = g.input("b", DType::f32, {33, 257});
    auto y = g.relu(g.matmul(a, b));
    g.output(y, "y");
    g.output(g.sum(y, {1}), "row_sum");
    g.output(g.reduce_max(y, {0}, true), "col_max");
    g.output(g.mean(y, {1}, true), "row_mean");
    g.output(g.reduce_min(y), "gmin");
    check(std::move(g), 10.0);
  }
  {
    Graph g("fp8");
    auto a = g.input("a", DType::fp8_e4m3, {1, 5});
    auto b = g.input("b", DType::fp8_e4m3, {5, 3});
    auto y = g.matmul(a, b, MatmulAttrs{.out_dtype = DType::bf16});
    g.output(g.sum(y), "total");
    g.output(y, "y");
    check(std::move(g));
  }
  {
    Graph g2("e5m2");
    auto a2 = g2.input("a", DType::fp8_e5m2, {4, 64, 96}, {6144, 1, 64});
    auto b2 = g2.input("b", DType::fp8_e5m2, {96, 48});
    g2.output(g2.matmul(a2, b2, MatmulAttrs{.out_dtype = DType::f32}), "y");
    check(std::move(g2), 1000.0);  // f32 output of fp8 products: compare loosely (1e-2)
  }
  {
    Graph g("bt_f32");  // transposed A (m contiguous) and column-major B, f32 vectors
    auto a = g.input("a", DType::f32, {2, 200, 64}, {200 * 64, 1, 200});
    auto b = g.input("b", DType::f32, {64, 300}, {1, 64});
    auto c = g.input("c", DType::f32, {2, 1, 300});
    g.output(g.mul(g.matmul(a, b), c), "y");
    check(std::move(g), 10.0);
  }
}

TEST_F(GpuRegions, TmpExtraConv) {
  {
    Graph g("conv");
    auto x = g.input("x", DType::bf16, {2, 15, 17, 32});
    auto w = g.input("w", DType::bf16, {48, 3, 3, 8});
    auto res = g.input("res", DType::bf16, {2, 8, 15, 48});
    Conv2dAttrs at{.stride = {2, 1}, .pad_begin = {1, 0}, .pad_end = {2, 2}, .dilation = {1, 2}, .groups = 4};
    auto z = g.relu(g.add(g.conv2d(x, w, at), res));
    g.output(z, "z");
    g.output(g.sum(z, {0, 1, 2}), "channel_sum");
    g.output(g.reduce_max(z, {3}), "pixel_max");
    check(std::move(g), 2.0);
  }
  {
    Graph g("stem");
    auto x = g.input("x", DType::f32, {1, 31, 29, 3});
    auto w = g.input("w", DType::f32, {16, 7, 7, 3});
    auto b = g.input("b", DType::f32, {16});
    g.output(g.add(g.conv2d(x, w, Conv2dAttrs{.stride = {2, 2}, .pad_begin = {3, 3}, .pad_end = {3, 3}}), b), "y");
    check(std::move(g), 10.0);
  }
  {
    Graph g2("strided_filter");
    auto x2 = g2.input("x", DType::f16, {2, 9, 9, 16});
    auto w2 = g2.input("w", DType::f16, {24, 3, 3, 16}, {144, 3, 1, 9});
    g2.output(g2.conv2d(x2, w2, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}}), "y");
    check(std::move(g2));
  }
  {
    Graph g("depthwise");
    auto x = g.input("x", DType::fp8_e4m3, {2, 10, 10, 24});
    auto w = g.input("w", DType::fp8_e4m3, {24, 3, 3, 1});
    auto y = g.conv2d(x, w, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}, .groups = 24, .out_dtype = DType::bf16});
    g.output(g.gelu_tanh(y), "y");
    check(std::move(g));
  }
}

Graph attention(DType dt, CausalMask causal, int64_t d, int64_t dv, std::optional<DType> bias, Dims bias_dims,
                bool stats, bool epilogue) {
  Graph g("attention");
  const int64_t b = 2, h = 8, hkv = 2, sq = 50, skv = 70;
  auto q = g.input("q", dt, {b, h, sq, d});
  auto k = g.input("k", dt, {b, hkv, skv, d});
  auto v = g.input("v", dt, {b, hkv, skv, dv});
  std::optional<Tensor> bt;
  if (bias) bt = g.input("bias", *bias, bias_dims);
  SdpaAttrs at{.causal = causal, .has_bias = bias.has_value(), .emit_stats = stats};
  auto res = g.sdpa(q, k, v, at, bt);
  Tensor o = res.o;
  if (epilogue) {
    auto skip = g.input("skip", dt, {b, h, sq, dv});
    o = g.add(g.mul(o, 2.0), skip);
  }
  g.output(o, "o");
  if (stats) g.output(res.stats, "lse");
  return g;
}

TEST_F(GpuRegions, TmpExtraSdpa) {
  check(attention(DType::bf16, CausalMask::top_left, 64, 64, std::nullopt, {}, true, false));
  check(attention(DType::bf16, CausalMask::bottom_right, 64, 64, std::nullopt, {}, true, false));
  check(attention(DType::f16, CausalMask::none, 64, 64, DType::boolean, {2, 1, 50, 70}, true, true));
  check(attention(DType::f32, CausalMask::top_left, 128, 128, DType::f32, {8, 50, 70}, true, true), 10.0);
  check(attention(DType::bf16, CausalMask::none, 80, 200, std::nullopt, {}, true, false));
  check(attention(DType::bf16, CausalMask::bottom_right, 256, 256, DType::bf16, {50, 70}, false, true));
  check(attention(DType::fp8_e4m3, CausalMask::none, 8, 3, std::nullopt, {}, false, false));
}

void timeit(Graph g, double flops) {
  g.validate();
  StreamExecutor ex(g, shared_cache());
  ex.set_inputs(random_inputs(g, 1));
  const double ms = ex.time_ms(20, 3);
  std::printf("  TIME %-40s %8.3f ms  %7.1f TFLOP/s  [%s]\n", g.name().c_str(), ms, flops / ms / 1e9,
              ex.steps().at(0).description.c_str());
}

TEST_F(GpuRegions, TmpTiming) {
  for (auto [dt, name] : {std::pair{DType::bf16, "bf16"}, std::pair{DType::f32, "f32"}, std::pair{DType::fp8_e4m3, "e4m3"}}) {
    const int64_t n = 4096;
    Graph g(std::string("mm4096_") + name);
    auto a = g.input("a", dt, {n, n});
    auto b = g.input("b", dt, {n, n});
    g.output(g.matmul(a, b, MatmulAttrs{.out_dtype = DType::bf16}), "y");
    timeit(std::move(g), 2.0 * n * n * n);
  }
  {
    const int64_t n = 4096;
    Graph g("mm4096_bf16_colmajor_b");
    auto a = g.input("a", DType::bf16, {n, n});
    auto b = g.input("b", DType::bf16, {n, n}, {1, n});
    g.output(g.matmul(a, b), "y");
    timeit(std::move(g), 2.0 * n * n * n);
  }
  {
    Graph g("conv3x3_n32_56x56_c128_bf16");
    auto x = g.input("x", DType::bf16, {32, 56, 56, 128});
    auto w = g.input("w", DType::bf16, {128, 3, 3, 128});
    g.output(g.relu(g.conv2d(x, w, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}})), "y");
    timeit(std::move(g), 2.0 * 32 * 56 * 56 * 128 * 9 * 128);
  }
  for (bool causal : {false, true}) {
    const int64_t b = 4, h = 16, s = 2048, d = 128;
    Graph g(std::string("sdpa_b4h16s2048d128") + (causal ? "_causal" : ""));
    auto q = g.input("q", DType::bf16, {b, h, s, d});
    auto k = g.input("k", DType::bf16, {b, h, s, d});
    auto v = g.input("v", DType::bf16, {b, h, s, d});
    g.output(g.sdpa(q, k, v, SdpaAttrs{.causal = causal ? CausalMask::top_left : CausalMask::none}).o, "o");
    timeit(std::move(g), 4.0 * b * h * s * s * d / (causal ? 2 : 1));
  }
}

}  // namespace
}  // namespace sinter::testing
