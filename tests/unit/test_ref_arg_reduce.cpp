// argmax / argmin: shape inference and validation, the reference against hand-computed indices
// (any axis, keepdim, ties to the lowest index, NaN as the extreme, signed zeros), and the
// builder's errors.
#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

HostTensor run_arg(OpKind op, DType dt, const Dims& dims, const std::vector<double>& x,
                   int64_t axis, bool keepdim = false) {
  Graph g;
  g.output(g.arg_reduce(op, g.input("x", dt, dims), axis, keepdim), "i");
  return run_reference(g, {{"x", tensor(dt, dims, x)}}).at("i");
}

template <typename F>
void expect_error(F&& f, ErrorCode code, const std::vector<std::string>& parts) {
  const Error e = error_of(f);
  EXPECT_EQ(e.code(), code) << e.what();
  expect_contains(e.what(), parts);
}

std::vector<double> iota(int n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

}  // namespace

TEST(ArgReduce, InfersI64IndicesWithoutTheAxis) {
  Graph g;
  auto x = g.input("x", DType::bf16, {2, 3, 5});
  const TensorInfo& a = g.tensor(g.argmax(x, -1));
  EXPECT_EQ(a.dtype, DType::i64);
  EXPECT_EQ(a.dims, (Dims{2, 3}));
  EXPECT_EQ(g.tensor(g.argmin(x, 1, true)).dims, (Dims{2, 1, 5}));
  EXPECT_EQ(g.tensor(g.argmax(x, 0)).dims, (Dims{3, 5}));
  auto v = g.input("v", DType::f32, {7});
  EXPECT_EQ(g.tensor(g.argmax(v, 0)).dims, Dims{});
}

TEST(ArgReduce, RejectsBadAxesAndInputs) {
  Graph g;
  auto x = g.input("x", DType::f32, {4, 6});
  expect_error([&] { g.argmax(x, 2); }, ErrorCode::invalid_graph, {"argmax", "axis 2", "rank 2"});
  expect_error([&] { g.argmin(x, -3); }, ErrorCode::invalid_graph, {"argmin", "axis -3"});
  auto i = g.input("i", DType::i32, {4});
  expect_error([&] { g.argmax(i, 0); }, ErrorCode::invalid_graph,
               {"argmax", "float dtype", "found i32"});
  auto s = g.input("s", DType::f32, {});
  expect_error([&] { g.argmax(s, 0); }, ErrorCode::invalid_graph, {"argmax", "rank 0"});
  expect_error([&] { g.arg_reduce(OpKind::reduce_max, x, 0); }, ErrorCode::invalid_argument,
               {"reduce_max", "not an index reduction"});
}

TEST(ArgReduce, EveryAxisHandComputed) {
  // x[a, b, c] = 12a + 4b + c, except the maximum of each (a, c) column moved to b = 0 for axis 1
  const Dims d{2, 3, 4};
  expect_values(run_arg(OpKind::argmax, DType::f32, d, iota(24), 2).values(), {3, 3, 3, 3, 3, 3});
  expect_values(run_arg(OpKind::argmin, DType::f32, d, iota(24), 2).values(), {0, 0, 0, 0, 0, 0});
  expect_values(run_arg(OpKind::argmax, DType::f32, d, iota(24), 1).values(),
                {2, 2, 2, 2, 2, 2, 2, 2});
  HostTensor y = run_arg(OpKind::argmax, DType::f32, d, iota(24), 0, true);
  EXPECT_EQ(y.dims(), (Dims{1, 3, 4}));
  expect_values(y.values(), std::vector<double>(12, 1.0));
  std::vector<double> x = iota(24);
  for (double& v : x) v = -v;
  expect_values(run_arg(OpKind::argmax, DType::f32, d, x, 1).values(), std::vector<double>(8, 0.0));
  expect_values(run_arg(OpKind::argmin, DType::f32, d, x, 0).values(), std::vector<double>(12, 1.0));
}

TEST(ArgReduce, TiesGiveTheLowestIndex) {
  expect_values(run_arg(OpKind::argmax, DType::f32, {6}, {1, 5, 2, 5, 5, 0}, 0).values(), {1});
  expect_values(run_arg(OpKind::argmin, DType::f32, {6}, {1, 0, 2, 0, 5, 0}, 0).values(), {1});
  // bf16 rounds 1.001 and 1.002 to the same value: a tie after rounding
  expect_values(run_arg(OpKind::argmax, DType::bf16, {3}, {0.5, 1.001, 1.002}, 0).values(), {1});
  // -0.0 and +0.0 are equal
  expect_values(run_arg(OpKind::argmax, DType::f32, {3}, {-0.0, 0.0, -1}, 0).values(), {0});
  expect_values(run_arg(OpKind::argmin, DType::f32, {3}, {0.0, -0.0, 1}, 0).values(), {0});
  expect_values(run_arg(OpKind::argmax, DType::f32, {4}, {-kInf, -kInf, -kInf, -kInf}, 0).values(),
                {0});
}

TEST(ArgReduce, NaNIsTheExtremeAndTheFirstNaNWins) {
  // as torch.argmax / argmin: NaN propagates, so its index is the answer
  expect_values(run_arg(OpKind::argmax, DType::f32, {5}, {1, kInf, kNaN, 3, kNaN}, 0).values(), {2});
  expect_values(run_arg(OpKind::argmin, DType::f32, {5}, {1, -kInf, 0, kNaN, kNaN}, 0).values(),
                {3});
  expect_values(run_arg(OpKind::argmax, DType::bf16, {2, 3}, {kNaN, 1, 2, 4, 3, kNaN}, 1).values(),
                {0, 2});
}
