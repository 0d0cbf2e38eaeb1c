// Reference reductions (sum, mean, max, min, amax over axes, keepdim, NaN, out_dtype, integers)
// and row-wise ops (softmax, layernorm, rmsnorm, rope in both pairings, partial rotary and
// broadcast cos/sin), all against hand-computed numbers.
#include <cmath>

#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

// x[a, b, c] = 12a + 4b + c over [2, 3, 4]: the values 0..23.
std::vector<double> iota24() {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  return v;
}

HostTensor run_reduce(OpKind op, DType dt, const Dims& dims, const std::vector<double>& x,
                      std::vector<int64_t> axes, bool keepdim,
                      std::optional<DType> out_dtype = std::nullopt) {
  Graph g;
  g.output(g.reduce(op, g.input("x", dt, dims), std::move(axes), keepdim, out_dtype), "y");
  return run_reference(g, {{"x", tensor(dt, dims, x)}}).at("y");
}

}  // namespace

TEST(RefReduce, SumOverAxesHandComputed) {
  const Dims d{2, 3, 4};
  // over b: sum_b (12a + 4b + c) = 36a + 3c + 12
  HostTensor y = run_reduce(OpKind::reduce_sum, DType::f32, d, iota24(), {1}, false);
  EXPECT_EQ(y.dims(), (Dims{2, 4}));
  expect_values(y.values(), {12, 15, 18, 21, 48, 51, 54, 57});
  y = run_reduce(OpKind::reduce_sum, DType::f32, d, iota24(), {1}, true);
  EXPECT_EQ(y.dims(), (Dims{2, 1, 4}));
  expect_values(y.values(), {12, 15, 18, 21, 48, 51, 54, 57});
  // over a and c: 48 + 32b + 12; negative axis -1 means c
  y = run_reduce(OpKind::reduce_sum, DType::f32, d, iota24(), {0, -1}, false);
  EXPECT_EQ(y.dims(), (Dims{3}));
  expect_values(y.values(), {60, 92, 124});
  // every axis: 0 + 1 + ... + 23 = 276, rank 0 (or [1, 1, 1] with keepdim)
  y = run_reduce(OpKind::reduce_sum, DType::f32, d, iota24(), {}, false);
  EXPECT_EQ(y.dims(), Dims{});
  expect_values(y.values(), {276});
  y = run_reduce(OpKind::reduce_sum, DType::f32, d, iota24(), {}, true);
  EXPECT_EQ(y.dims(), (Dims{1, 1, 1}));
  expect_values(y.values(), {276});
}

TEST(RefReduce, MeanMaxMinAmax) {
  const Dims d{2, 3, 4};
  expect_values(run_reduce(OpKind::reduce_mean, DType::f32, d, iota24(), {}, false).values(),
                {11.5});
  // over c: max = 12a + 4b + 3, min = 12a + 4b
  expect_values(run_reduce(OpKind::reduce_max, DType::f32, d, iota24(), {2}, false).values(),
                {3, 7, 11, 15, 19, 23});
  expect_values(run_reduce(OpKind::reduce_min, DType::f32, d, iota24(), {2}, false).values(),
                {0, 4, 8, 12, 16, 20});
  // mean over a: 6 + 4b + c
  expect_values(run_reduce(OpKind::reduce_mean, DType::f32, d, iota24(), {0}, false).values(),
                {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  // amax = max |x| per row
  const std::vector<double> x = {-5, 3, 1, 2, -0.5, 0.25};
  expect_values(run_reduce(OpKind::reduce_amax, DType::f32, {2, 3}, x, {1}, false).values(),
                {5, 2});
  expect_values(run_reduce(OpKind::reduce_max, DType::f32, {2, 3}, x, {1}, true).values(),
                {3, 2});
  expect_values(run_reduce(OpKind::reduce_min, DType::f32, {2, 3}, x, {0}, false).values(),
                {-5, -0.5, 0.25});
}

TEST(RefReduce, NanPropagatesAndInfinitiesStay) {
  const std::vector<double> x = {1, kNaN, 3, -kInf, -kInf, -kInf};
  for (OpKind op : {OpKind::reduce_sum, OpKind::reduce_mean, OpKind::reduce_max,
                    OpKind::reduce_min, OpKind::reduce_amax}) {
    SCOPED_TRACE(std::string(to_string(op)));
    const auto y = run_reduce(op, DType::f32, {2, 3}, x, {1}, false).values();
    EXPECT_TRUE(std::isnan(y[0]));
    const double want = op == OpKind::reduce_amax ? kInf : -kInf;
    EXPECT_EQ(y[1], want);
  }
  // NaN last in the row still wins over a larger earlier value
  expect_values(run_reduce(OpKind::reduce_max, DType::f32, {3}, {5, 1, kNaN}, {}, false).values(),
                {kNaN});
  expect_values(run_reduce(OpKind::reduce_min, DType::f32, {3}, {kNaN, 5, 1}, {}, false).values(),
                {kNaN});
}

TEST(RefReduce, OutDtypeAndIntegers) {
  // bf16 256 + 1 = 257: rounded once to a bf16 output it is 256 (a tie, to even); as f32 it is
  // 257 exactly. The sum itself is never rounded to the input dtype.
  expect_values(
      run_reduce(OpKind::reduce_sum, DType::bf16, {2}, {256, 1}, {}, false, DType::f32).values(),
      {257});
  expect_values(run_reduce(OpKind::reduce_sum, DType::bf16, {2}, {256, 1}, {}, false).values(),
                {256});
  // i32 sums saturate at the boundary; max over ints
  expect_values(run_reduce(OpKind::reduce_sum, DType::i32, {3}, {2147483647, 1, 1}, {}, false)
                    .values(),
                {2147483647});
  expect_values(run_reduce(OpKind::reduce_sum, DType::i32, {3}, {2147483647, 1, -2}, {}, false)
                    .values(),
                {2147483646});
  expect_values(
      run_reduce(OpKind::reduce_max, DType::i64, {2, 2}, {-7, 3, 9, -1}, {0}, false).values(),
      {9, 3});
  EXPECT_EQ(run_reduce(OpKind::reduce_amax, DType::bf16, {2}, {-3, 1}, {}, false, DType::f32)
                .dtype(),
            DType::f32);
}

TEST(RefRowwise, SoftmaxHandComputed) {
  Graph g;
  g.output(g.softmax(g.input("x", DType::f32, {4, 3})), "y");
  TensorMap in;
  // row 0: e^i / (e + e^2 + e^3); row 1: huge but equal -> 1/3 each (max subtraction);
  // row 2: a -inf entry gets weight 0; row 3: one large gap
  in["x"] = tensor(DType::f32, {4, 3}, {1, 2, 3, 1000, 1000, 1000, 0, -kInf, 0, 0, -200, 0});
  expect_values(run_values(g, in, "y"),
                {0.09003057317038046, 0.24472847105479767, 0.6652409557748219, 1.0 / 3, 1.0 / 3,
                 1.0 / 3, 0.5, 0, 0.5, 0.5, 0, 0.5},
                6e-8, 1e-45);
  // a single column softmaxes to 1; NaN poisons its row only
  Graph g2;
  g2.output(g2.softmax(g2.input("x", DType::f32, {2, 2})), "y");
  expect_values(run_values(g2, {{"x", tensor(DType::f32, {2, 2}, {kNaN, 0, 5, 5})}}, "y"),
                {kNaN, kNaN, 0.5, 0.5});
  Graph g3;
  g3.output(g3.softmax(g3.input("x", DType::bf16, {3, 1})), "y");
  expect_values(run_values(g3, {{"x", tensor(DType::bf16, {3, 1}, {-7, 0, 33})}}, "y"), {1, 1, 1});
}

TEST(RefRowwise, LayernormHandComputed) {
  // x = [1, 2, 3, 4]: mean 2.5, population variance 1.25; with eps = 1, sqrt(2.25) = 1.5, so
  // (x - mean) / 1.5 = [-1, -1/3, 1/3, 1]; times w = [1, 1, 2, 0.5] plus b = [0, 1, 0, -1]
  // gives [-1, 2/3, 2/3, -0.5]. A constant row normalizes to 0, leaving the bias.
  Graph g;
  auto x = g.input("x", DType::f32, {2, 4});
  auto w = g.input("w", DType::f32, {4});
  auto b = g.input("b", DType::f32, {4});
  g.output(g.layernorm(x, w, b, 1.0), "y");
  g.output(g.layernorm(x, w, std::nullopt, 1.0), "y_nobias");
  TensorMap in;
  in["x"] = tensor(DType::f32, {2, 4}, {1, 2, 3, 4, 5, 5, 5, 5});
  in["w"] = tensor(DType::f32, {4}, {1, 1, 2, 0.5});
  in["b"] = tensor(DType::f32, {4}, {0, 1, 0, -1});
  expect_values(run_values(g, in, "y"), {-1, 2.0 / 3, 2.0 / 3, -0.5, 0, 1, 0, -1}, 6e-8);
  expect_values(run_values(g, in, "y_nobias"), {-1, -1.0 / 3, 2.0 / 3, 0.5, 0, 0, 0, 0}, 6e-8);
}

TEST(RefRowwise, LayernormDefaultEpsilon) {
  // x = [-1, 1]: mean 0, variance 1 -> y = x / sqrt(1 + 1e-5)
  Graph g;
  auto x = g.input("x", DType::f32, {2});
  auto w = g.input("w", DType::bf16, {2});
  g.output(g.layernorm(x, w), "y");
  const double inv = 1 / std::sqrt(1 + 1e-5);
  expect_values(run_values(g, {{"x", tensor(DType::f32, {2}, {-1, 1})},
                               {"w", tensor(DType::bf16, {2}, {1, 1})}},
                           "y"),
                {-inv, inv}, 6e-8);
}

TEST(RefRowwise, RmsnormHandComputed) {
  // x = [1, 2, 3, 4]: mean(x^2) = 7.5; with eps = 1.5, sqrt(9) = 3: x / 3 = [1/3, 2/3, 1, 4/3];
  // times w = [1, 1, 2, 0.5] -> [1/3, 2/3, 2, 2/3]; plus b = [0, 1, 0, -1] -> [1/3, 5/3, 2, -1/3]
  Graph g;
  auto x = g.input("x", DType::f32, {1, 4});
  auto w = g.input("w", DType::f32, {4});
  auto b = g.input("b", DType::f32, {4});
  g.output(g.rmsnorm(x, w, std::nullopt, 1.5), "y");
  g.output(g.rmsnorm(x, w, b, 1.5), "y_bias");
  TensorMap in;
  in["x"] = tensor(DType::f32, {1, 4}, {1, 2, 3, 4});
  in["w"] = tensor(DType::f32, {4}, {1, 1, 2, 0.5});
  in["b"] = tensor(DType::f32, {4}, {0, 1, 0, -1});
  expect_values(run_values(g, in, "y"), {1.0 / 3, 2.0 / 3, 2, 2.0 / 3}, 6e-8);
  expect_values(run_values(g, in, "y_bias"), {1.0 / 3, 5.0 / 3, 2, -1.0 / 3}, 6e-8);
}

TEST(RefRowwise, RopeHalfSplitAndInterleaved) {
  // cos = [0.5, 0.25], sin = [0.75, -1]; (a, b) -> (a c - b s, b c + a s)
  // half_split, x = [1, 2, 3, 4]: pairs (x0, x2) = (1, 3) and (x1, x3) = (2, 4):
  //   (1*0.5 - 3*0.75, 3*0.5 + 1*0.75) = (-1.75, 2.25); (2*0.25 + 4, 4*0.25 - 2) = (4.5, -1)
  // interleaved: pairs (1, 2) and (3, 4):
  //   (0.5 - 1.5, 1 + 0.75) = (-1, 1.75); (0.75 + 4, 1 - 3) = (4.75, -2)
  // partial rotary, D = 6 and R = 4: the last two channels pass through
  for (int64_t d : {4, 6}) {
    Graph g;
    auto x = g.input("x", DType::f32, {1, d});
    auto c = g.input("cos", DType::f32, {1, 2});
    auto s = g.input("sin", DType::f32, {1, 2});
    g.output(g.rope(x, c, s, false), "half");
    g.output(g.rope(x, c, s, true), "inter");
    TensorMap in;
    std::vector<double> xv = {1, 2, 3, 4, 5, 6};
    xv.resize(d);
    in["x"] = tensor(DType::f32, {1, d}, xv);
    in["cos"] = tensor(DType::f32, {1, 2}, {0.5, 0.25});
    in["sin"] = tensor(DType::f32, {1, 2}, {0.75, -1});
    std::vector<double> half = {-1.75, 4.5, 2.25, -1, 5, 6}, inter = {-1, 1.75, 4.75, -2, 5, 6};
    half.resize(d);
    inter.resize(d);
    expect_values(run_values(g, in, "half"), half);
    expect_values(run_values(g, in, "inter"), inter);
  }
}

TEST(RefRowwise, RopeBroadcastsCosSinOverLeadingDims) {
  // x [B=2, S=3, H=2, D=4], cos/sin [S=3, 1, 2]: position s rotates every batch and head alike.
  Graph g;
  auto x = g.input("x", DType::f32, {2, 3, 2, 4});
  auto c = g.input("cos", DType::f32, {3, 1, 2});
  auto s = g.input("sin", DType::f32, {3, 1, 2});
  g.output(g.rope(x, c, s), "y");
  const TensorMap in = random_inputs(g, 17);
  const auto xv = in.at("x").values(), cv = in.at("cos").values(), sv = in.at("sin").values();
  std::vector<double> want(xv.size());
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t p = 0; p < 3; ++p) {
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t row = ((b * 3 + p) * 2 + h) * 4;
        for (int64_t i = 0; i < 2; ++i) {
          const double a = xv[row + i], bb = xv[row + i + 2];
          want[row + i] = a * cv[p * 2 + i] - bb * sv[p * 2 + i];
          want[row + i + 2] = bb * cv[p * 2 + i] + a * sv[p * 2 + i];
        }
      }
    }
  }
  expect_values(run_values(g, in, "y"), rounded(want, DType::f32), 1e-7, 1e-12);
}
