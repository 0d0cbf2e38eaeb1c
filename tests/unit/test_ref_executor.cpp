// The reference executor as a whole: input checks and their messages, unvalidated graphs,
// topological order, rounding at every tensor boundary (and only there), strided inputs,
// keep_intermediates, and a small MLP on fresh random inputs against loops written here.
#include <cmath>
#include <cstring>

#include "test_ref_util.hpp"

using namespace ref_test;

TEST(RefExecutor, MissingInputNamesTheTensor) {
  Graph g("g");
  auto x = g.input("x", DType::f32, {2, 3});
  auto w = g.input("weight", DType::f32, {3});
  g.output(g.mul(x, w), "y");
  TensorMap in{{"x", HostTensor(DType::f32, {2, 3})}, {"wieght", HostTensor(DType::f32, {3})}};
  const Error e = error_of([&] { run_reference(g, in); });
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  expect_contains(e.message(), {"'weight'", "missing", "f32 [3]", "'wieght'"});
}

TEST(RefExecutor, WrongDtypeOrDimsNamesExpectedAndFound) {
  Graph g;
  auto x = g.input("x", DType::f32, {2, 3});
  g.output(g.relu(x), "y");
  Error e = error_of([&] { run_reference(g, {{"x", HostTensor(DType::bf16, {2, 3})}}); });
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  expect_contains(e.message(), {"'x'", "f32 [2, 3]", "bf16 [2, 3]"});
  e = error_of([&] { run_reference(g, {{"x", HostTensor(DType::f32, {3, 2})}}); });
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  expect_contains(e.message(), {"'x'", "f32 [2, 3]", "f32 [3, 2]"});
  e = error_of([&] { run_reference(g, {{"x", HostTensor(DType::f32, {2, 3, 1})}}); });
  expect_contains(e.message(), {"'x'", "[2, 3, 1]"});
  // a rank-0 input given as [1]
  Graph g0;
  g0.output(g0.neg(g0.input("s", DType::f32, {})), "y");
  e = error_of([&] { run_reference(g0, {{"s", HostTensor(DType::f32, {1})}}); });
  expect_contains(e.message(), {"'s'", "f32 []", "f32 [1]"});
}

TEST(RefExecutor, ExtraInputsAreIgnored) {
  Graph g;
  g.output(g.neg(g.input("x", DType::f32, {1})), "y");
  TensorMap in{{"x", tensor(DType::f32, {1}, {2})}, {"unused", HostTensor(DType::i32, {4})}};
  expect_values(run_values(g, in, "y"), {-2});
}

TEST(RefExecutor, UnvalidatedGraphIsRejectedThenRunsInTopologicalOrder) {
  // Built the way a file loader builds it: the consumer node is added before its producer.
  Graph g("loaded");
  auto x = g.input("x", DType::f32, {2});
  auto t = g.declare_tensor("t", std::nullopt, std::nullopt);
  auto y = g.declare_tensor("y", DType::f32, Dims{2});
  g.add_node_declared(OpKind::add, "second", {t.id, x.id}, {y.id}, std::monostate{});
  g.add_node_declared(OpKind::mul, "first", {x.id, x.id}, {t.id}, std::monostate{});
  g.output(y);
  TensorMap in{{"x", tensor(DType::f32, {2}, {3, -0.5})}};
  const Error e = error_of([&] { run_reference(g, in); });
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  expect_contains(e.message(), {"'t'", "validate"});
  g.validate();
  // y = x * x + x
  expect_values(run_values(g, in, "y"), {12, -0.25});
}

TEST(RefExecutor, Bf16IntermediateRoundsAtItsBoundary) {
  // x = 1 + 2^-7 is exact in bf16. x * x = 1 + 2^-6 + 2^-14: stored as bf16 (8 significant bits)
  // it becomes 1 + 2^-6, so (x * x) - 1 = 2^-6 exactly; with an f32 intermediate the 2^-14
  // survives: 2^-6 + 2^-14.
  const double x0 = 1 + std::ldexp(1, -7);
  for (DType mid : {DType::bf16, DType::f32}) {
    Graph g;
    auto x = g.input("x", mid, {1});
    auto sq = g.mul(x, x);                               // rounded to `mid` here
    g.output(g.sub(g.cast(sq, DType::f32), 1.0), "y");  // f32 from here on
    const auto y = run_values(g, {{"x", tensor(mid, {1}, {x0})}}, "y");
    const double want =
        mid == DType::bf16 ? std::ldexp(1, -6) : std::ldexp(1, -6) + std::ldexp(1, -14);
    expect_values(y, {want});
  }
}

TEST(RefExecutor, EachNodeRoundsOnceNotEachOperation) {
  // bf16 a = 256, b = 255, c = 0.25. (a - b) + c: both nodes are exact, 1.25. (a + c) - b: the
  // add node's output 256.25 is stored as bf16 (step 2 at 256), so it is 256 and the result is
  // 1. In float64 without boundary rounding both would be 1.25.
  Graph g;
  auto a = g.input("a", DType::bf16, {1});
  auto b = g.input("b", DType::bf16, {1});
  auto c = g.input("c", DType::bf16, {1});
  g.output(g.add(g.sub(a, b), c), "sub_first");
  g.output(g.sub(g.add(a, c), b), "add_first");
  TensorMap in{{"a", tensor(DType::bf16, {1}, {256})},
               {"b", tensor(DType::bf16, {1}, {255})},
               {"c", tensor(DType::bf16, {1}, {0.25})}};
  const TensorMap out = run_reference(g, in);
  expect_values(out.at("sub_first").values(), {1.25});
  expect_values(out.at("add_first").values(), {1});
  // f16 overflow of an intermediate cannot be undone downstream: 60000 + 60000 = inf in f16
  Graph h;
  auto x = h.input("x", DType::f16, {1});
  h.output(h.sub(h.add(x, x), x), "y");
  expect_values(run_values(h, {{"x", tensor(DType::f16, {1}, {60000})}}, "y"), {kInf});
}

TEST(RefExecutor, FusedSemanticsRoundOnlyOutputsCastsAndIntegers) {
  // The same (a + c) - b as above without rounding intermediates: 1.25, as a fused kernel keeping
  // the add in f32 computes it. An explicit cast still rounds: cast(a + c, bf16) is 256.
  Graph g;
  auto a = g.input("a", DType::bf16, {1});
  auto b = g.input("b", DType::bf16, {1});
  auto c = g.input("c", DType::bf16, {1});
  g.output(g.sub(g.add(a, c), b), "add_first");
  g.output(g.sub(g.cast(g.cast(g.add(a, c), DType::f32), DType::bf16), b), "cast_first");
  TensorMap in{{"a", tensor(DType::bf16, {1}, {256})},
               {"b", tensor(DType::bf16, {1}, {255})},
               {"c", tensor(DType::bf16, {1}, {0.25})}};
  ReferenceOptions fused;
  fused.round_intermediates = false;
  const TensorMap out = run_reference(g, in, fused);
  expect_values(out.at("add_first").values(), {1.25});
  expect_values(out.at("cast_first").values(), {1});
  // the default rounds every boundary
  expect_values(run_reference(g, in).at("add_first").values(), {1});
}

// The plan's semantics: a value read inside its step is unrounded even where it is also a stored
// graph output; read by another step, it is the rounded value from memory.
TEST(RefExecutor, FusedStepsReadUnroundedInsideAStepAndRoundedAcross) {
  Graph g;
  auto a = g.input("a", DType::bf16, {1});
  auto m = g.mul(a, a);  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14, rounds to 1 + 2^-6
  g.output(m, "m");
  g.output(g.sub(m, a), "s");
  g.validate();
  const std::string mul = g.nodes()[0].name, sub = g.nodes()[1].name;
  TensorMap in{{"a", tensor(DType::bf16, {1}, {1.0078125})}};
  ReferenceOptions plan;
  plan.round_intermediates = false;
  plan.fused_steps = {{mul, sub}};
  TensorMap out = run_reference(g, in, plan);
  expect_values(out.at("m").values(), {1.015625});
  expect_values(out.at("s").values(), {0.00787353515625});  // 2^-7 (1 + 2^-7): m unrounded
  plan.fused_steps = {{mul}, {sub}};
  out = run_reference(g, in, plan);
  expect_values(out.at("s").values(), {0.0078125});  // the stored m, rounded
  plan.fused_steps = {{"nope"}};
  EXPECT_THROW(run_reference(g, in, plan), Error);
  plan.fused_steps = {{mul, sub}, {sub}};  // a node in two steps
  EXPECT_THROW(run_reference(g, in, plan), Error);
  plan.fused_steps = {{mul, sub}};
  plan.round_intermediates = true;  // the steps would change nothing
  EXPECT_THROW(run_reference(g, in, plan), Error);
}

TEST(RefExecutor, StridedInputIsReadLogicallyAndOutputsAreContiguous) {
  // x is logically [2, 3] but stored column-major: storage [1, 4, 2, 5, 3, 6].
  Graph g;
  auto x = g.input("x", DType::f32, {2, 3}, {1, 2});
  g.output(g.identity(x), "y");
  HostTensor xv(DType::f32, {2, 3}, {1, 2});
  const float storage[] = {1, 4, 2, 5, 3, 6};
  std::memcpy(xv.data(), storage, sizeof storage);
  const TensorMap out = run_reference(g, {{"x", xv}});
  EXPECT_TRUE(out.at("y").is_contiguous());
  expect_values(out.at("y").values(), {1, 2, 3, 4, 5, 6});
  // a broadcast view (stride 0) is read the same way
  Graph gb;
  auto r = gb.input("row", DType::f32, {3, 2}, {0, 1});
  gb.output(gb.add(r, gb.scalar(0.5, DType::f32)), "y");
  HostTensor rv(DType::f32, {3, 2}, {0, 1});
  rv.set(0, 1);
  rv.set(1, 2);
  expect_values(run_values(gb, {{"row", rv}}, "y"), {1.5, 2.5, 1.5, 2.5, 1.5, 2.5});
}

TEST(RefExecutor, KeepIntermediatesReturnsEveryTensor) {
  Graph g;
  auto x = g.input("x", DType::f32, {2});
  auto h = g.exp(x);
  g.rename(h, "h");
  auto y = g.mul(h, 2.0);
  g.output(y, "y");
  TensorMap in{{"x", tensor(DType::f32, {2}, {0, 1})}};
  const TensorMap only = run_reference(g, in);
  EXPECT_EQ(only.size(), 1u);
  EXPECT_TRUE(only.count("y"));
  const TensorMap all = run_reference(g, in, ReferenceOptions{true});
  EXPECT_EQ(all.size(), g.tensors().size());  // x, h, the constant 2, y
  for (const TensorInfo& t : g.tensors()) {
    ASSERT_TRUE(all.count(t.name)) << t.name;
    EXPECT_EQ(all.at(t.name).dtype(), t.dtype);
    EXPECT_EQ(all.at(t.name).dims(), t.dims);
  }
  expect_values(all.at("x").values(), {0, 1});
  expect_values(all.at("h").values(), rounded({1, 2.718281828459045}, DType::f32));
  const double e_f32 = round_to_dtype(2.718281828459045, DType::f32);
  expect_values(all.at("y").values(), {2, 2 * e_f32});  // doubling is exact in f32
}

TEST(RefExecutor, OutputReadByAnotherNodeAndMultipleOutputs) {
  Graph g;
  auto x = g.input("x", DType::f32, {3});
  auto a = g.relu(x);
  g.output(a, "a");
  g.output(g.sum(a), "total");
  g.output(g.neg(a), "negated");
  const TensorMap out = run_reference(g, {{"x", tensor(DType::f32, {3}, {-1, 2, 3})}});
  EXPECT_EQ(out.size(), 3u);
  expect_values(out.at("a").values(), {0, 2, 3});
  expect_values(out.at("total").values(), {5});
  expect_values(out.at("negated").values(), {0, -2, -3});
}

TEST(RefExecutor, MlpOnRandomInputsMatchesLoops) {
  // y = gelu(x @ w + b) in bf16 with an f32 matmul output, odd sizes.
  const int64_t m = 7, k = 33, n = 5;
  Graph g;
  auto x = g.input("x", DType::bf16, {m, k});
  auto w = g.input("w", DType::bf16, {k, n});
  auto b = g.input("b", DType::f32, {n});
  auto h = g.matmul(x, w, MatmulAttrs{ComputeType::f32, DType::f32});
  g.output(g.cast(g.gelu(g.add(h, b)), DType::bf16), "y");
  const TensorMap in = random_inputs(g, 4242);
  const auto xv = in.at("x").values(), wv = in.at("w").values(), bv = in.at("b").values();
  std::vector<double> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t t = 0; t < k; ++t) acc += xv[i * k + t] * wv[t * n + j];
      // each node's output is rounded: matmul -> f32, add -> f32, gelu -> f32, cast -> bf16
      const double hb = round_to_dtype(round_to_dtype(acc, DType::f32) + bv[j], DType::f32);
      const double ge = round_to_dtype(0.5 * hb * (1 + std::erf(hb / std::sqrt(2.0))), DType::f32);
      want[i * n + j] = round_to_dtype(ge, DType::bf16);
    }
  }
  expect_values(run_values(g, in, "y"), want);
  // The same inputs give the same bits on every run.
  const TensorMap again = run_reference(g, in);
  expect_values(again.at("y").values(), want);
}

TEST(RefExecutor, LargeRandomGraphHasNoNanAndIsDeterministic) {
  Graph g;
  auto x = g.input("x", DType::f16, {33, 64});
  auto w = g.input("w", DType::f16, {64});
  auto y = g.softmax(g.rmsnorm(x, w));
  g.output(g.amax(y, {1}), "m");
  const TensorMap in = random_inputs(g, 1);
  const TensorMap a = run_reference(g, in), b = run_reference(g, in);
  EXPECT_EQ(a.at("m").dims(), (Dims{33}));
  EXPECT_EQ(tensor_stats(a.at("m")).nan_count, 0);
  expect_values(a.at("m").values(), b.at("m").values());
}
