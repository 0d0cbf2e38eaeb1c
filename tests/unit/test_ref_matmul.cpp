// Reference matmul: hand-computed products, broadcast batch dims, odd sizes against a plain dot
// product, strided (transposed) weight views, rounding once at the output boundary, and speed.
#include <chrono>
#include <cmath>
#include <iostream>

#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

// c[i][j] = sum_k a[i][k] * b[k][j], the dot product in order k = 0..K-1, unrounded.
std::vector<double> naive_matmul(const std::vector<double>& a, const std::vector<double>& b,
                                 int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t t = 0; t < k; ++t) dot += a[i * k + t] * b[t * n + j];
      c[i * n + j] = dot;
    }
  }
  return c;
}

}  // namespace

TEST(RefMatmul, HandComputed) {
  Graph g;
  auto a = g.input("a", DType::f32, {2, 3});
  auto b = g.input("b", DType::f32, {3, 2});
  g.output(g.matmul(a, b), "c");
  TensorMap in;
  in["a"] = tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  in["b"] = tensor(DType::f32, {3, 2}, {7, 8, 9, 10, 11, 12});
  // [1 2 3] . [7 9 11] = 58, [1 2 3] . [8 10 12] = 64, [4 5 6] . [7 9 11] = 139, ... = 154
  expect_values(run_values(g, in, "c"), {58, 64, 139, 154});
}

TEST(RefMatmul, VectorShapesOneByOne) {
  Graph g;
  auto a = g.input("a", DType::f32, {1, 3});
  auto b = g.input("b", DType::f32, {3, 1});
  g.output(g.matmul(a, b), "c");
  TensorMap in;
  in["a"] = tensor(DType::f32, {1, 3}, {0.5, -2, 4});
  in["b"] = tensor(DType::f32, {3, 1}, {2, 0.25, -1});
  expect_values(run_values(g, in, "c"), {1 - 0.5 - 4});
}

TEST(RefMatmul, BatchDimsBroadcastOnBothSides) {
  // a [2, 1, 2, 3] x b [3, 3, 2] -> [2, 3, 2, 2]: a's batch axis 1 and b's missing axis repeat.
  Graph g;
  auto a = g.input("a", DType::f32, {2, 1, 2, 3});
  auto b = g.input("b", DType::f32, {3, 3, 2});
  g.output(g.matmul(a, b), "c");
  std::vector<double> av(12), bv(18);
  for (int i = 0; i < 12; ++i) av[i] = i - 5;
  for (int i = 0; i < 18; ++i) bv[i] = 0.5 * i - 4;
  TensorMap in;
  in["a"] = tensor(DType::f32, {2, 1, 2, 3}, av);
  in["b"] = tensor(DType::f32, {3, 3, 2}, bv);
  const auto got = run_values(g, in, "c");
  ASSERT_EQ(got.size(), 24u);
  for (int64_t p = 0; p < 2; ++p) {      // a's batch
    for (int64_t q = 0; q < 3; ++q) {    // b's batch
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 2; ++j) {
          double want = 0;
          for (int64_t t = 0; t < 3; ++t) want += av[p * 6 + i * 3 + t] * bv[q * 6 + t * 2 + j];
          EXPECT_EQ(got[((p * 3 + q) * 2 + i) * 2 + j], want) << p << q << i << j;
        }
      }
    }
  }
  // one entry by hand: p=1, q=2, i=0, j=1: a row [1 2 3], b column [2.5 3.5 4.5]
  // -> 2.5 + 7 + 13.5 = 23
  EXPECT_EQ(got[((1 * 3 + 2) * 2 + 0) * 2 + 1], 23);
}

TEST(RefMatmul, OddSizesMatchPlainDotProduct) {
  const int64_t shapes[][3] = {{1, 1, 1},   {7, 33, 1}, {1, 7, 33},
                               {33, 7, 7}, {7, 1, 33}, {33, 33, 33}};
  uint64_t seed = 11;
  for (const auto& s : shapes) {
    const int64_t m = s[0], k = s[1], n = s[2];
    Graph g;
    auto a = g.input("a", DType::f32, {m, k});
    auto b = g.input("b", DType::f32, {k, n});
    g.output(g.matmul(a, b), "c");
    const TensorMap in = random_inputs(g, seed++);
    const auto want = rounded(naive_matmul(in.at("a").values(), in.at("b").values(), m, k, n),
                              DType::f32);
    expect_values(run_values(g, in, "c"), want, 1e-6, 1e-12);
  }
}

TEST(RefMatmul, TransposedWeightViewEqualsExplicitTranspose) {
  const int64_t m = 7, k = 33, n = 5;
  // The weight is stored as w_t [N, K] row-major; the view w [K, N] with strides {1, K} reads it.
  HostTensor w_t(DType::bf16, {n, k});
  fill_random(w_t, 99);
  HostTensor x(DType::bf16, {m, k});
  fill_random(x, 98);

  Graph gv;
  auto xv = gv.input("x", DType::bf16, {m, k});
  auto wv = gv.input("w", DType::bf16, {k, n}, {1, k});
  gv.output(gv.matmul(xv, wv, MatmulAttrs{ComputeType::f32, DType::f32}), "y");
  HostTensor w_view(DType::bf16, {k, n}, {1, k});
  ASSERT_EQ(w_view.storage_bytes(), w_t.storage_bytes());
  std::copy(w_t.data(), w_t.data() + w_t.storage_bytes(), w_view.data());
  const auto from_view = run_values(gv, {{"x", x}, {"w", w_view}}, "y");

  // The same weight transposed element by element into a contiguous [K, N] tensor.
  Graph gc;
  auto xc = gc.input("x", DType::bf16, {m, k});
  auto wc = gc.input("w", DType::bf16, {k, n});
  gc.output(gc.matmul(xc, wc, MatmulAttrs{ComputeType::f32, DType::f32}), "y");
  HostTensor w_contig(DType::bf16, {k, n});
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) w_contig.set(i * n + j, w_t.get(j * k + i));
  }
  EXPECT_TRUE(w_contig.is_contiguous());
  EXPECT_FALSE(w_view.is_contiguous());
  expect_values(from_view, run_values(gc, {{"x", x}, {"w", w_contig}}, "y"));

  // And a third way: the contiguous w_t through a permute node.
  Graph gp;
  auto xp = gp.input("x", DType::bf16, {m, k});
  auto wp = gp.input("w_t", DType::bf16, {n, k});
  gp.output(gp.matmul(xp, gp.transpose(wp, 0, 1), MatmulAttrs{ComputeType::f32, DType::f32}),
            "y");
  expect_values(from_view, run_values(gp, {{"x", x}, {"w_t", w_t}}, "y"));
}

TEST(RefMatmul, OutputRoundedOnceToOutDtype) {
  // a . b = 1 + 2^-8 + 2^-9 = 1 + 3 * 2^-9, exact in double. Rounded once to bf16 it is
  // 1 + 2^-7 = 1.0078125 (distance 2^-9, versus 3 * 2^-9 to 1.0). Rounding after each addition
  // would give 1 + 2^-8 -> 1.0 (a tie, to even), then 1 + 2^-9 -> 1.0.
  Graph g;
  auto a = g.input("a", DType::bf16, {1, 3});
  auto b = g.input("b", DType::bf16, {3, 1});
  g.output(g.matmul(a, b), "c_bf16");
  g.output(g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::f32}), "c_f32");
  g.output(g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::fp8_e4m3}), "c_fp8");
  TensorMap in;
  in["a"] = tensor(DType::bf16, {1, 3}, {1, 1, 1});
  in["b"] = tensor(DType::bf16, {3, 1}, {1, std::ldexp(1, -8), std::ldexp(1, -9)});
  expect_values(run_values(g, in, "c_bf16"), {1.0078125});
  expect_values(run_values(g, in, "c_f32"), {1.005859375});
  expect_values(run_values(g, in, "c_fp8"), {1.0});  // e4m3 step at 1 is 0.125
  const TensorMap out = run_reference(g, in);
  EXPECT_EQ(out.at("c_bf16").dtype(), DType::bf16);
  EXPECT_EQ(out.at("c_fp8").dtype(), DType::fp8_e4m3);
}

TEST(RefMatmul, Tf32ComputeTypeDoesNotChangeReference) {
  // The reference always accumulates in float64: the compute type is an engine's latitude.
  Graph g;
  auto a = g.input("a", DType::f32, {7, 33});
  auto b = g.input("b", DType::f32, {33, 7});
  g.output(g.matmul(a, b, MatmulAttrs{ComputeType::tf32, {}}), "tf32");
  g.output(g.matmul(a, b), "f32");
  const TensorMap in = random_inputs(g, 5);
  const TensorMap out = run_reference(g, in);
  expect_values(out.at("tf32").values(), out.at("f32").values());
}

TEST(RefMatmul, Speed512Cubed) {
  const int64_t s = 512;
  Graph g;
  auto a = g.input("a", DType::f32, {s, s});
  auto b = g.input("b", DType::f32, {s, s});
  g.output(g.matmul(a, b), "c");
  const TensorMap in = random_inputs(g, 2024);
  const auto t0 = std::chrono::steady_clock::now();
  const TensorMap out = run_reference(g, in);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ RefMatmul ] 512^3 f32 matmul (incl. decode and encode): " << secs << " s\n";
  RecordProperty("matmul_512_seconds", std::to_string(secs));
  EXPECT_LT(secs, 2.0);
  // spot-check a few entries against a plain dot product
  const auto av = in.at("a").values(), bv = in.at("b").values();
  const auto cv = out.at("c").values();
  for (int64_t idx : {int64_t{0}, s * s - 1, 123 * s + 457, 511 * s + 3}) {
    const int64_t i = idx / s, j = idx % s;
    double dot = 0;
    for (int64_t t = 0; t < s; ++t) dot += av[i * s + t] * bv[t * s + j];
    EXPECT_NEAR(cv[idx], round_to_dtype(dot, DType::f32), 1e-6 * std::fabs(dot) + 1e-12);
  }
}
