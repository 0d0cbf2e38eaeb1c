// Reference pointwise ops: every unary op at hand-computed points (expected values computed
// offline, written out), IEEE domain behaviour, binary ops and comparisons with broadcasting
// (rank 0 and size-1 dims on either side), select, constants, casts (fp8 with scale saturates),
// and integer arithmetic that saturates at the boundary.
#include <cmath>
#include <limits>

#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

std::vector<double> run_unary(OpKind op, DType dt, const std::vector<double>& x) {
  Graph g;
  const auto n = static_cast<int64_t>(x.size());
  auto in = g.input("x", dt, {n});
  g.output(g.unary(op, in), "y");
  return run_values(g, {{"x", tensor(dt, {n}, x)}}, "y");
}

std::vector<double> run_binary(OpKind op, DType dt, const Dims& ad, const std::vector<double>& a,
                               const Dims& bd, const std::vector<double>& b) {
  Graph g;
  auto ta = g.input("a", dt, ad);
  auto tb = g.input("b", dt, bd);
  const bool cmp = op_info(op).cls == OpClass::compare;
  g.output(cmp ? g.compare(op, ta, tb) : g.binary(op, ta, tb), "y");
  return run_values(g, {{"a", tensor(dt, ad, a)}, {"b", tensor(dt, bd, b)}}, "y");
}

const double kI32Max = 2147483647.0, kI32Min = -2147483648.0;

}  // namespace

TEST(RefPointwise, UnaryTranscendentalsAtKnownPoints) {
  const std::vector<double> x = {-2, -0.5, 0, 0.5, 1, 3};
  struct Row {
    OpKind op;
    std::vector<double> want;
  };
  const Row rows[] = {
      {OpKind::gelu, {-0.04550026389635842, -0.15426876936299344, 0.0, 0.34573123063700656,
                      0.8413447460685429, 2.99595030590511}},
      {OpKind::gelu_tanh, {-0.04540230591222494, -0.15428599017485606, 0.0, 0.34571400982514394,
                           0.8411919906082768, 2.996362607918227}},
      {OpKind::silu, {-0.2384058440442351, -0.1887703343990727, 0.0, 0.3112296656009273,
                      0.7310585786300049, 2.8577223804673}},
      {OpKind::sigmoid, {0.11920292202211755, 0.3775406687981454, 0.5, 0.6224593312018546,
                         0.7310585786300049, 0.9525741268224334}},
      {OpKind::tanh, {-0.9640275800758169, -0.46211715726000974, 0.0, 0.46211715726000974,
                      0.7615941559557649, 0.9950547536867305}},
      {OpKind::exp, {0.1353352832366127, 0.6065306597126334, 1.0, 1.6487212707001282,
                     2.718281828459045, 20.085536923187668}},
      {OpKind::relu, {0, 0, 0, 0.5, 1, 3}},
      {OpKind::identity, {-2, -0.5, 0, 0.5, 1, 3}},
      {OpKind::abs, {2, 0.5, 0, 0.5, 1, 3}},
      {OpKind::neg, {2, 0.5, 0, -0.5, -1, -3}},
      {OpKind::square, {4, 0.25, 0, 0.25, 1, 9}},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(to_string(r.op)));
    // f32 output: the exact value rounded to f32 (relative error <= 2^-24)
    expect_values(run_unary(r.op, DType::f32, x), r.want, 6e-8);
  }
  const std::vector<double> y = {0.25, 1, 2, 9};
  expect_values(run_unary(OpKind::log, DType::f32, y),
                {-1.3862943611198906, 0.0, 0.6931471805599453, 2.1972245773362196}, 6e-8);
  expect_values(run_unary(OpKind::sqrt, DType::f32, y), {0.5, 1.0, 1.4142135623730951, 3.0}, 6e-8);
  expect_values(run_unary(OpKind::rsqrt, DType::f32, y), {2.0, 1.0, 0.7071067811865475, 1.0 / 3},
                6e-8);
  expect_values(run_unary(OpKind::reciprocal, DType::f32, y), {4, 1, 0.5, 1.0 / 9}, 6e-8);
}

TEST(RefPointwise, UnaryRoundsToNarrowDtype) {
  // gelu(1) = 0.84134...; bf16 steps by 2^-8 in [0.5, 1): 215 * 2^-8 = 0.83984375.
  expect_values(run_unary(OpKind::gelu, DType::bf16, {1}), {0.83984375});
  // exp(1) = 2.71828...; fp8_e4m3 steps by 0.25 in [2, 4): 2.75.
  expect_values(run_unary(OpKind::exp, DType::fp8_e4m3, {1}), {2.75});
  // exp(100) overflows f32 and f16 to inf at the boundary; fp8 saturates instead.
  expect_values(run_unary(OpKind::exp, DType::f32, {100}), {kInf});
  expect_values(run_unary(OpKind::exp, DType::f16, {12}), {kInf});
  expect_values(run_unary(OpKind::exp, DType::fp8_e5m2, {12}), {57344});
}

TEST(RefPointwise, UnaryIeeeDomainBehaviour) {
  expect_values(run_unary(OpKind::log, DType::f32, {-1, 0, kInf, kNaN}), {kNaN, -kInf, kInf, kNaN});
  expect_values(run_unary(OpKind::sqrt, DType::f32, {-1, -0.0, kInf}), {kNaN, 0, kInf});
  expect_values(run_unary(OpKind::rsqrt, DType::f32, {0, -0.0, kInf, -4}), {kInf, -kInf, 0, kNaN});
  expect_values(run_unary(OpKind::reciprocal, DType::f32, {0, -0.0, kInf}), {kInf, -kInf, 0});
  expect_values(run_unary(OpKind::relu, DType::f32, {-1, kNaN, -kInf, kInf}), {0, kNaN, 0, kInf});
  expect_values(run_unary(OpKind::sigmoid, DType::f32, {-1000, 1000, kNaN}), {0, 1, kNaN});
  expect_values(run_unary(OpKind::tanh, DType::f32, {-kInf, kInf}), {-1, 1});
  expect_values(run_unary(OpKind::exp, DType::f32, {-kInf, kNaN}), {0, kNaN});
  expect_values(run_unary(OpKind::abs, DType::f32, {-kInf, kNaN}), {kInf, kNaN});
  expect_values(run_unary(OpKind::gelu, DType::f32, {kInf, -40}), {kInf, 0});
  expect_values(run_unary(OpKind::silu, DType::f32, {kInf, -800}), {kInf, 0});
}

TEST(RefPointwise, UnaryIntegersSaturate) {
  const std::vector<double> x = {-3, 0, 7, 50000, kI32Min};
  expect_values(run_unary(OpKind::neg, DType::i32, x), {3, 0, -7, -50000, kI32Max});
  expect_values(run_unary(OpKind::abs, DType::i32, x), {3, 0, 7, 50000, kI32Max});
  expect_values(run_unary(OpKind::square, DType::i32, x), {9, 0, 49, kI32Max, kI32Max});
  expect_values(run_unary(OpKind::relu, DType::i32, x), {0, 0, 7, 50000, 0});
  const double i64_max = static_cast<double>(std::numeric_limits<int64_t>::max());
  expect_values(run_unary(OpKind::square, DType::i64, {4e9, -3}), {i64_max, 9});
}

TEST(RefPointwise, BinaryBroadcastBothSides) {
  // [2, 1] + [1, 3] -> [2, 3]
  expect_values(run_binary(OpKind::add, DType::f32, {2, 1}, {1, 2}, {1, 3}, {10, 20, 30}),
                {11, 21, 31, 12, 22, 32});
  // rank 0 on the right and on the left (sub is not symmetric)
  expect_values(run_binary(OpKind::sub, DType::f32, {3}, {1, 2, 3}, {}, {0.5}), {0.5, 1.5, 2.5});
  expect_values(run_binary(OpKind::sub, DType::f32, {}, {0.5}, {3}, {1, 2, 3}),
                {-0.5, -1.5, -2.5});
  // [2, 3] / [3] and [2, 3] / [2, 1] and [1, 3] / [2, 1]
  expect_values(run_binary(OpKind::div, DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}, {3}, {1, 2, 4}),
                {1, 1, 0.75, 4, 2.5, 1.5});
  expect_values(run_binary(OpKind::div, DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}, {2, 1}, {2, 4}),
                {0.5, 1, 1.5, 1, 1.25, 1.5});
  expect_values(run_binary(OpKind::div, DType::f32, {1, 3}, {1, 2, 3}, {2, 1}, {2, 4}),
                {0.5, 1, 1.5, 0.25, 0.5, 0.75});
  // rank 0 with rank 0
  expect_values(run_binary(OpKind::mul, DType::f32, {}, {3}, {}, {-2}), {-6});
  // [4, 1, 3] * [2, 1] -> [4, 2, 3]: out[i, j, k] = a[i, 0, k] * b[j, 0]
  std::vector<double> a(12), want;
  for (int i = 0; i < 12; ++i) a[i] = i + 1;
  const std::vector<double> b = {2, -1};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 3; ++k) want.push_back(a[i * 3 + k] * b[j]);
    }
  }
  expect_values(run_binary(OpKind::mul, DType::f32, {4, 1, 3}, a, {2, 1}, b), want);
  // the same with the operands swapped
  expect_values(run_binary(OpKind::mul, DType::f32, {2, 1}, b, {4, 1, 3}, a), want);
}

TEST(RefPointwise, BinaryIeeeAndNanPropagation) {
  const std::vector<double> a = {1, kNaN, -kInf, 3, -0.5};
  const std::vector<double> b = {2, 0, 5, kNaN, -0.25};
  expect_values(run_binary(OpKind::max, DType::f32, {5}, a, {5}, b), {2, kNaN, 5, kNaN, -0.25});
  expect_values(run_binary(OpKind::min, DType::f32, {5}, a, {5}, b), {1, kNaN, -kInf, kNaN, -0.5});
  expect_values(run_binary(OpKind::div, DType::f32, {3}, {1, -1, 0}, {1}, {0}),
                {kInf, -kInf, kNaN});
  expect_values(run_binary(OpKind::pow, DType::f32, {5}, {2, 1.5, -8, 0, 4}, {5},
                           {10, 3, 1.0 / 3, -1, 0.5}),
                {1024, 3.375, kNaN, kInf, 2});
  expect_values(run_binary(OpKind::add, DType::f32, {2}, {kInf, kInf}, {2}, {-kInf, 1}),
                {kNaN, kInf});
  // f16 overflow at the boundary: 60000 + 10000 = 70000 > 65504 -> inf
  expect_values(run_binary(OpKind::add, DType::f16, {1}, {60000}, {1}, {10000}), {kInf});
}

TEST(RefPointwise, BinaryIntegersSaturate) {
  expect_values(run_binary(OpKind::add, DType::i32, {3}, {kI32Max, kI32Min, 5}, {3}, {1, -1, -7}),
                {kI32Max, kI32Min, -2});
  expect_values(run_binary(OpKind::sub, DType::i32, {2}, {kI32Min, 10}, {}, {1}), {kI32Min, 9});
  expect_values(run_binary(OpKind::mul, DType::i32, {2}, {65536, -65536}, {}, {65536}),
                {kI32Max, kI32Min});
  expect_values(run_binary(OpKind::max, DType::i32, {3}, {-4, 0, 9}, {1}, {1}), {1, 1, 9});
  expect_values(run_binary(OpKind::min, DType::i64, {2, 1}, {-4, 9}, {2}, {3, 12}),
                {-4, -4, 3, 9});
  const double p40 = std::ldexp(1, 40);
  expect_values(run_binary(OpKind::add, DType::i64, {2}, {p40, -5}, {2}, {p40, 3}),
                {2 * p40, -2});
}

TEST(RefPointwise, ComparisonsNanAndBroadcast) {
  const std::vector<double> a = {1, 2, kNaN, 3, -kInf};
  const std::vector<double> b = {2, 2, kNaN, 1, -kInf};
  expect_values(run_binary(OpKind::eq, DType::f32, {5}, a, {5}, b), {0, 1, 0, 0, 1});
  expect_values(run_binary(OpKind::ne, DType::f32, {5}, a, {5}, b), {1, 0, 1, 1, 0});
  expect_values(run_binary(OpKind::lt, DType::f32, {5}, a, {5}, b), {1, 0, 0, 0, 0});
  expect_values(run_binary(OpKind::le, DType::f32, {5}, a, {5}, b), {1, 1, 0, 0, 1});
  expect_values(run_binary(OpKind::gt, DType::f32, {5}, a, {5}, b), {0, 0, 0, 1, 0});
  expect_values(run_binary(OpKind::ge, DType::f32, {5}, a, {5}, b), {0, 1, 0, 1, 1});
  // NaN against a number: only ne is true
  expect_values(run_binary(OpKind::ge, DType::f32, {1}, {kNaN}, {}, {0}), {0});
  expect_values(run_binary(OpKind::ne, DType::f32, {}, {0}, {1}, {kNaN}), {1});
  // [3, 1] < [1, 3] -> [3, 3]
  expect_values(run_binary(OpKind::lt, DType::bf16, {3, 1}, {1, 2, 3}, {1, 3}, {1, 2, 3}),
                {0, 1, 1, 0, 0, 1, 0, 0, 0});
  expect_values(run_binary(OpKind::eq, DType::i32, {2}, {7, -7}, {}, {7}), {1, 0});
  expect_values(run_binary(OpKind::eq, DType::boolean, {2}, {1, 0}, {2}, {1, 1}), {1, 0});
  Graph g;
  g.output(g.lt(g.input("a", DType::f32, {2}), g.input("b", DType::f32, {})), "y");
  EXPECT_EQ(run_reference(g, {{"a", tensor(DType::f32, {2}, {0, 1})},
                              {"b", tensor(DType::f32, {}, {0.5})}})
                .at("y")
                .dtype(),
            DType::boolean);
}

TEST(RefPointwise, SelectThreeWayBroadcast) {
  auto run_select = [](const Dims& cd, const std::vector<double>& c, const Dims& ad,
                       const std::vector<double>& a, const Dims& bd,
                       const std::vector<double>& b) {
    Graph g;
    auto tc = g.input("c", DType::boolean, cd);
    auto ta = g.input("a", DType::f32, ad);
    auto tb = g.input("b", DType::f32, bd);
    g.output(g.select(tc, ta, tb), "y");
    return run_values(g, {{"c", tensor(DType::boolean, cd, c)},
                          {"a", tensor(DType::f32, ad, a)},
                          {"b", tensor(DType::f32, bd, b)}},
                      "y");
  };
  // cond [2, 1], a [3], b rank 0 -> [2, 3]
  expect_values(run_select({2, 1}, {1, 0}, {3}, {1, 2, 3}, {}, {-1}), {1, 2, 3, -1, -1, -1});
  // cond [3], a [2, 1], b [1, 3] -> [2, 3]
  expect_values(run_select({3}, {1, 0, 1}, {2, 1}, {10, 20}, {1, 3}, {-1, -2, -3}),
                {10, -2, 10, 20, -2, 20});
  // rank-0 condition; the unselected operand's NaN does not leak
  expect_values(run_select({}, {0}, {2}, {kNaN, kNaN}, {2}, {4, 5}), {4, 5});
  expect_values(run_select({2}, {1, 0}, {2}, {kNaN, 1}, {}, {7}), {kNaN, 7});
}

TEST(RefPointwise, ConstantsRoundToTheirDtype) {
  Graph g;
  g.output(g.scalar(0.1, DType::bf16), "bf16");
  g.output(g.scalar(0.1, DType::f32), "f32");
  g.output(g.scalar(3.7, DType::i32), "i32");
  g.output(g.scalar(-3.7, DType::i64), "i64");
  g.output(g.scalar(1000, DType::fp8_e4m3), "e4m3");
  g.output(g.scalar(2, DType::boolean), "bool");
  const TensorMap out = run_reference(g, {});
  EXPECT_EQ(out.at("bf16").dims(), Dims{});
  expect_values(out.at("bf16").values(), {0.10009765625});
  expect_values(out.at("f32").values(), {0.100000001490116119384765625});
  expect_values(out.at("i32").values(), {3});
  expect_values(out.at("i64").values(), {-3});
  expect_values(out.at("e4m3").values(), {448});
  expect_values(out.at("bool").values(), {1});
  EXPECT_EQ(out.at("e4m3").dtype(), DType::fp8_e4m3);
}

TEST(RefPointwise, CastRoundingRules) {
  auto run_cast = [](DType from, DType to, const std::vector<double>& x) {
    Graph g;
    const auto n = static_cast<int64_t>(x.size());
    g.output(g.cast(g.input("x", from, {n}), to), "y");
    return run_values(g, {{"x", tensor(from, {n}, x)}}, "y");
  };
  const double f32_max = std::numeric_limits<float>::max();
  // bf16: ties to even (1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6); f32 max overflows to inf
  expect_values(run_cast(DType::f32, DType::bf16,
                         {1 + std::ldexp(1, -8), 1 + 3 * std::ldexp(1, -8), f32_max, -f32_max}),
                {1, 1.015625, kInf, -kInf});
  expect_values(run_cast(DType::f32, DType::f16, {65519, 65520, 0.1}),
                {65504, kInf, 0.0999755859375});
  expect_values(run_cast(DType::f32, DType::i32, {2.9, -2.9, kNaN, 3e9, -3e9, -0.5}),
                {2, -2, 0, kI32Max, kI32Min, 0});
  expect_values(run_cast(DType::f32, DType::boolean, {0, -0.5, kNaN, -0.0}), {0, 1, 1, 0});
  expect_values(run_cast(DType::i32, DType::f32, {16777217, -7}), {16777216, -7});
  expect_values(run_cast(DType::boolean, DType::f32, {1, 0}), {1, 0});
  expect_values(run_cast(DType::f32, DType::fp8_e4m3, {kInf, -kInf, kNaN}), {448, -448, kNaN});
}

TEST(RefPointwise, CastWithScaleToFp8Saturates) {
  Graph g;
  auto x = g.input("x", DType::f32, {6});
  auto s = g.input("s", DType::f32, {});
  g.output(g.cast(x, DType::fp8_e4m3, s), "e4m3");
  g.output(g.cast(x, DType::fp8_e5m2, s), "e5m2");
  TensorMap in;
  in["x"] = tensor(DType::f32, {6}, {1, 100, 300, -1000, 0.3, 1e5});
  in["s"] = tensor(DType::f32, {}, {2});
  // x * 2 = [2, 200, 600, -2000, 0.6, 2e5]
  // e4m3: 200 is a tie between 192 and 208 -> 192 (even); 600, -2000, 2e5 saturate to +-448;
  //       0.6 -> 0.625 (step 1/16 in [0.5, 1))
  expect_values(run_values(g, in, "e4m3"), {2, 192, 448, -448, 0.625, 448});
  // e5m2: 200 -> 192 (step 32 in [128, 256), 200 is nearer 192); 600 -> 640 (step 128);
  //       -2000 -> -2048; 0.6 -> 0.625; 2e5 saturates to 57344
  expect_values(run_values(g, in, "e5m2"), {2, 192, 640, -2048, 0.625, 57344});
}

TEST(RefPointwise, CastScaleBroadcastsOverRows) {
  Graph g;
  auto x = g.input("x", DType::bf16, {2, 3});
  auto s = g.input("s", DType::f32, {2, 1});
  g.output(g.cast(x, DType::fp8_e4m3, s), "y");
  TensorMap in;
  in["x"] = tensor(DType::bf16, {2, 3}, {1, 2, 3, 4, 5, 6});
  in["s"] = tensor(DType::f32, {2, 1}, {1, 0.5});
  expect_values(run_values(g, in, "y"), {1, 2, 3, 2, 2.5, 3});
}
