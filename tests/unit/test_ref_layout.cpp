// Reference layout ops: reshape keeps the row-major sequence, permute moves axes, slice takes
// Python-style ranges, concat joins along an axis, gather picks slices by index. Values pass
// through bit-exactly in any dtype.
#include <limits>

#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

std::vector<double> iota(int64_t n, double start = 0) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i);
  return v;
}

}  // namespace

TEST(RefLayout, ReshapeKeepsRowMajorOrder) {
  Graph g;
  auto x = g.input("x", DType::f32, {2, 3});
  g.output(g.reshape(x, {3, 2}), "a");
  g.output(g.reshape(x, {6}), "b");
  g.output(g.reshape(x, {1, -1, 1}), "c");
  TensorMap in{{"x", tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6})}};
  const TensorMap out = run_reference(g, in);
  EXPECT_EQ(out.at("a").dims(), (Dims{3, 2}));
  EXPECT_EQ(out.at("c").dims(), (Dims{1, 6, 1}));
  for (const char* name : {"a", "b", "c"}) expect_values(out.at(name).values(), {1, 2, 3, 4, 5, 6});
  // rank 0 <-> [1]
  Graph g0;
  g0.output(g0.reshape(g0.input("s", DType::i32, {}), {1}), "v");
  expect_values(run_values(g0, {{"s", tensor(DType::i32, {}, {-9})}}, "v"), {-9});
}

TEST(RefLayout, PermuteMovesAxes) {
  // 2-D transpose by hand
  Graph g;
  g.output(g.transpose(g.input("x", DType::f32, {2, 3}), 0, 1), "t");
  expect_values(run_values(g, {{"x", tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6})}}, "t"),
                {1, 4, 2, 5, 3, 6});
  // x [2, 3, 4] with x[a, b, c] = 12a + 4b + c; perm [2, 0, 1] -> out [4, 2, 3] with
  // out[i, j, k] = x[j, k, i] = 12j + 4k + i
  Graph g3;
  g3.output(g3.permute(g3.input("x", DType::bf16, {2, 3, 4}), {2, 0, 1}), "p");
  const auto got =
      run_values(g3, {{"x", tensor(DType::bf16, {2, 3, 4}, iota(24))}}, "p");
  std::vector<double> want;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 3; ++k) want.push_back(12 * j + 4 * k + i);
    }
  }
  expect_values(got, want);
  // identity permutation and a size-1 axis
  Graph g1;
  g1.output(g1.permute(g1.input("x", DType::f32, {1, 3, 1}), {2, 1, 0}), "p");
  expect_values(run_values(g1, {{"x", tensor(DType::f32, {1, 3, 1}, {7, 8, 9})}}, "p"), {7, 8, 9});
}

TEST(RefLayout, SliceRangesAndSteps) {
  Graph g;
  auto x = g.input("x", DType::f32, {10});
  g.output(g.slice(x, {0}, {1}, {8}, {3}), "stepped");   // 1, 4, 7
  g.output(g.slice(x, {0}, {-3}, {100}), "tail");        // 7, 8, 9 (end clamps)
  g.output(g.slice(x, {0}, {9}, {10}, {5}), "last");     // 9
  TensorMap in{{"x", tensor(DType::f32, {10}, iota(10))}};
  const TensorMap out = run_reference(g, in);
  expect_values(out.at("stepped").values(), {1, 4, 7});
  expect_values(out.at("tail").values(), {7, 8, 9});
  expect_values(out.at("last").values(), {9});
  // 2-D: x[a, b] = 10a + b over [4, 7]; rows 1..3 step 2, columns 2..5 step 3
  // -> [[12, 15], [32, 35]]
  Graph g2;
  g2.output(g2.slice(g2.input("x", DType::i32, {4, 7}), {0, 1}, {1, 2}, {4, 6}, {2, 3}), "s");
  std::vector<double> xv;
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 7; ++b) xv.push_back(10 * a + b);
  }
  expect_values(run_values(g2, {{"x", tensor(DType::i32, {4, 7}, xv)}}, "s"), {12, 15, 32, 35});
  // slicing only the last axis of a 3-D tensor
  Graph g3;
  g3.output(g3.slice(g3.input("x", DType::f32, {2, 3, 4}), {-1}, {1}, {3}), "s");
  const auto got = run_values(g3, {{"x", tensor(DType::f32, {2, 3, 4}, iota(24))}}, "s");
  expect_values(got, {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22});
}

TEST(RefLayout, ConcatAlongEachAxis) {
  Graph g;
  auto a = g.input("a", DType::f32, {2, 1});
  auto b = g.input("b", DType::f32, {2, 7});
  auto c = g.input("c", DType::f32, {2, 33});
  g.output(g.concat({a, b, c}, 1), "cols");
  g.output(g.concat({g.transpose(a, 0, 1), g.transpose(b, 0, 1)}, 0), "rows");
  g.output(g.concat({b}, -1), "single");
  TensorMap in{{"a", tensor(DType::f32, {2, 1}, {-1, -2})},
               {"b", tensor(DType::f32, {2, 7}, iota(14, 100))},
               {"c", tensor(DType::f32, {2, 33}, iota(66, 200))}};
  const TensorMap out = run_reference(g, in);
  EXPECT_EQ(out.at("cols").dims(), (Dims{2, 41}));
  std::vector<double> want_cols = {-1};
  for (int i = 0; i < 7; ++i) want_cols.push_back(100 + i);
  for (int i = 0; i < 33; ++i) want_cols.push_back(200 + i);
  want_cols.push_back(-2);
  for (int i = 0; i < 7; ++i) want_cols.push_back(107 + i);
  for (int i = 0; i < 33; ++i) want_cols.push_back(233 + i);
  expect_values(out.at("cols").values(), want_cols);
  // rows: a^T [1, 2] on top of b^T [7, 2]
  std::vector<double> want_rows = {-1, -2};
  for (int i = 0; i < 7; ++i) {
    want_rows.push_back(100 + i);
    want_rows.push_back(107 + i);
  }
  EXPECT_EQ(out.at("rows").dims(), (Dims{8, 2}));
  expect_values(out.at("rows").values(), want_rows);
  expect_values(out.at("single").values(), iota(14, 100));
}

TEST(RefLayout, ConcatMiddleAxisOfRank3) {
  // [2, 1, 2] ++ [2, 2, 2] on axis 1 -> [2, 3, 2]
  Graph g;
  g.output(g.concat({g.input("a", DType::i64, {2, 1, 2}), g.input("b", DType::i64, {2, 2, 2})}, 1),
           "y");
  TensorMap in{{"a", tensor(DType::i64, {2, 1, 2}, {1, 2, 3, 4})},
               {"b", tensor(DType::i64, {2, 2, 2}, {10, 20, 30, 40, 50, 60, 70, 80})}};
  expect_values(run_values(g, in, "y"), {1, 2, 10, 20, 30, 40, 3, 4, 50, 60, 70, 80});
}

TEST(RefLayout, ValuesPassThroughExactly) {
  // Layout never rounds: the largest i32, a bf16 subnormal and fp8 NaN survive a round trip.
  Graph g;
  auto i = g.input("i", DType::i32, {2});
  auto b = g.input("b", DType::bf16, {2});
  auto f = g.input("f", DType::fp8_e4m3, {2});
  g.output(g.reshape(g.permute(g.reshape(i, {1, 2}), {1, 0}), {2}), "i2");
  g.output(g.slice(g.concat({b, b}, 0), {0}, {1}, {3}), "b2");
  g.output(g.transpose(g.reshape(f, {2, 1}), 0, 1), "f2");
  const double tiny = std::ldexp(1.0, -133);  // the smallest bf16 subnormal
  TensorMap in{{"i", tensor(DType::i32, {2}, {2147483647, -2147483648.0})},
               {"b", tensor(DType::bf16, {2}, {tiny, -3.140625})},
               {"f", tensor(DType::fp8_e4m3, {2}, {kNaN, 448})}};
  const TensorMap out = run_reference(g, in);
  expect_values(out.at("i2").values(), {2147483647, -2147483648.0});
  expect_values(out.at("b2").values(), {-3.140625, tiny});
  expect_values(out.at("f2").values(), {kNaN, 448});
}

TEST(RefLayout, GatherPicksSlicesAlongAnAxis) {
  // an embedding: rows of a [4, 3] table by [2, 2] ids, a negative id counting from the end
  Graph g;
  auto table = g.input("t", DType::bf16, {4, 3});
  auto ids = g.input("ids", DType::i64, {2, 2});
  g.output(g.gather(table, ids), "e");
  // along the last axis of a [2, 4] matrix with i32 indices: numpy.take(x, [3, 0, 3], axis=1)
  auto x = g.input("x", DType::f32, {2, 4});
  g.output(g.gather(x, g.input("cols", DType::i32, {3}), -1), "c");
  // a scalar index drops the axis
  g.output(g.gather(x, g.input("row", DType::i32, {}), 0), "r");
  const TensorMap in{{"t", tensor(DType::bf16, {4, 3}, iota(12))},
                     {"ids", tensor(DType::i64, {2, 2}, {2, 0, -1, 2})},
                     {"x", tensor(DType::f32, {2, 4}, iota(8, 10))},
                     {"cols", tensor(DType::i32, {3}, {3, 0, 3})},
                     {"row", tensor(DType::i32, {}, {1})}};
  const TensorMap out = run_reference(g, in);
  EXPECT_EQ(out.at("e").dims(), (Dims{2, 2, 3}));
  expect_values(out.at("e").values(), {6, 7, 8, 0, 1, 2, 9, 10, 11, 6, 7, 8});
  EXPECT_EQ(out.at("c").dims(), (Dims{2, 3}));
  expect_values(out.at("c").values(), {13, 10, 13, 17, 14, 17});
  EXPECT_EQ(out.at("r").dims(), (Dims{4}));
  expect_values(out.at("r").values(), {14, 15, 16, 17});
}

TEST(RefLayout, GatherRefusesAnIndexOutOfRange) {
  Graph g;
  auto table = g.input("t", DType::f32, {4, 3});
  g.output(g.gather(table, g.input("ids", DType::i32, {3})), "e");
  for (double bad : {4.0, -5.0}) {
    try {
      run_reference(g, {{"t", tensor(DType::f32, {4, 3}, iota(12))}, {"ids", tensor(DType::i32, {3}, {0, bad, 1})}});
      ADD_FAILURE() << "index " << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(e.message().find("index " + std::to_string(static_cast<int>(bad)) + " at flat position 1"),
                std::string::npos)
          << e.message();
      EXPECT_NE(e.message().find("outside [-4, 4)"), std::string::npos) << e.message();
    }
  }
}

// random_inputs draws a gather's indices from the valid range, also through a reshape between
// them and the gather (an [8] axis: the default integer range [-8, 8] would overrun it).
TEST(RefLayout, RandomIndicesOfAGatherAreValid) {
  Graph g;
  auto ids = g.input("ids", DType::i64, {4, 25});
  g.output(g.gather(g.input("t", DType::f32, {8, 3}), g.reshape(ids, {100})), "e");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const TensorMap in = random_inputs(g, seed);
    for (double v : in.at("ids").values()) {
      EXPECT_GE(v, -8);
      EXPECT_LE(v, 7);
    }
    EXPECT_NO_THROW(run_reference(g, in));
  }
}
