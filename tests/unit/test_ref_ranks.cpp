// run_reference_ranks: several ranks' graphs in one process. Hand-checked values of each
// collective (sum and max, the rank order of gathers and scatters, one rounding of a bf16 sum),
// groups that span only some ranks, a row-parallel matmul, and the errors: collectives that differ
// between ranks, a rank that never reaches one, ranks that deadlock across groups.
#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

// One rank's graph: y = op(x) with x of `dims`.
Graph one_collective(OpKind op, const Dims& dims, DType dt, int64_t world, int64_t axis = 0,
                     CollectiveReduce r = CollectiveReduce::sum, const std::string& group = "tp") {
  Graph g("rank");
  auto x = g.input("x", dt, dims);
  Tensor y;
  if (op == OpKind::all_reduce) y = g.all_reduce(x, group, world, r);
  if (op == OpKind::all_gather) y = g.all_gather(x, axis, group, world);
  if (op == OpKind::reduce_scatter) y = g.reduce_scatter(x, axis, group, world, r);
  g.output(y, "y");
  return g;
}

// The values of output "y" on every rank, with x[r] = xs[r].
std::vector<std::vector<double>> run_ranks(const std::vector<Graph>& graphs, DType dt, const Dims& dims,
                                           const std::vector<std::vector<double>>& xs) {
  std::vector<TensorMap> inputs;
  for (const auto& x : xs) inputs.push_back({{"x", tensor(dt, dims, x)}});
  std::vector<std::vector<double>> out;
  for (const TensorMap& m : run_reference_ranks(graphs, inputs)) out.push_back(m.at("y").values());
  return out;
}

template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  const Error e = error_of(f);
  EXPECT_EQ(e.code(), ErrorCode::invalid_graph) << e.what();
  expect_contains(e.what(), parts);
}

}  // namespace

TEST(ReferenceRanks, AllReduceSumsAndMaxesOverTheRanks) {
  const Dims d{2, 2};
  const std::vector<std::vector<double>> xs{{1, -2, 0.5, 4}, {10, 20, -0.5, 8}, {100, -200, 3, -16}};
  const auto sum = run_ranks(std::vector<Graph>(3, one_collective(OpKind::all_reduce, d, DType::f32, 3)),
                             DType::f32, d, xs);
  for (const auto& v : sum) expect_values(v, {111, -182, 3, -4});
  const auto max = run_ranks(
      std::vector<Graph>(3, one_collective(OpKind::all_reduce, d, DType::f32, 3, 0, CollectiveReduce::max)),
      DType::f32, d, {{1, kNaN, -7, 4}, {10, 2, -9, 8}, {-5, 3, -8, -16}});
  for (const auto& v : max) expect_values(v, {10, kNaN, -7, 8});
  // integers
  const auto ints = run_ranks(std::vector<Graph>(2, one_collective(OpKind::all_reduce, {3}, DType::i32, 2)),
                              DType::i32, {3}, {{1, -5, 7}, {100, 5, -8}});
  for (const auto& v : ints) expect_values(v, {101, 0, -1});
}

// 1 + 2^-8 + 2^-8 in bf16 (ulp 2^-7 at 1): rounding after each addition would give 1 (two ties to
// even); the sum is exact in float64 and rounded once: 1 + 2^-7.
TEST(ReferenceRanks, ABf16SumIsRoundedOnce) {
  const double e = std::ldexp(1.0, -8);
  const auto v = run_ranks(std::vector<Graph>(3, one_collective(OpKind::all_reduce, {1}, DType::bf16, 3)),
                           DType::bf16, {1}, {{1}, {e}, {e}});
  for (const auto& r : v) expect_values(r, {1 + 2 * e});
}

TEST(ReferenceRanks, AllGatherJoinsInRankOrder) {
  const Dims d{2, 2};
  const std::vector<std::vector<double>> xs{{1, 2, 3, 4}, {5, 6, 7, 8}};
  const auto cols = run_ranks(std::vector<Graph>(2, one_collective(OpKind::all_gather, d, DType::f32, 2, 1)),
                              DType::f32, d, xs);
  for (const auto& v : cols) expect_values(v, {1, 2, 5, 6, 3, 4, 7, 8});  // [2, 4]
  const auto rows = run_ranks(std::vector<Graph>(2, one_collective(OpKind::all_gather, d, DType::f32, 2, 0)),
                              DType::f32, d, xs);
  for (const auto& v : rows) expect_values(v, {1, 2, 3, 4, 5, 6, 7, 8});  // [4, 2]
}

TEST(ReferenceRanks, ReduceScatterGivesRankRItsPart) {
  const Dims d{2, 4};
  const std::vector<std::vector<double>> xs{{1, 2, 3, 4, 5, 6, 7, 8}, {10, 20, 30, 40, 50, 60, 70, 80}};
  const auto v = run_ranks(std::vector<Graph>(2, one_collective(OpKind::reduce_scatter, d, DType::f32, 2, 1)),
                           DType::f32, d, xs);
  // the sum [[11, 22, 33, 44], [55, 66, 77, 88]], split along axis 1
  expect_values(v[0], {11, 22, 55, 66});
  expect_values(v[1], {33, 44, 77, 88});
  const auto m = run_ranks(std::vector<Graph>(2, one_collective(OpKind::reduce_scatter, d, DType::f32, 2, 0,
                                                                CollectiveReduce::max)),
                           DType::f32, d, {{1, 9, 3, 4, 5, 6, 7, 8}, {2, 2, 2, 2, 9, 0, 9, 0}});
  expect_values(m[0], {2, 9, 3, 4});
  expect_values(m[1], {9, 6, 9, 8});
}

// Two groups of two among four ranks: ranks 0 and 1 reduce together, ranks 2 and 3 together.
TEST(ReferenceRanks, GroupsSpanOnlyTheirRanks) {
  const Graph a = one_collective(OpKind::all_reduce, {2}, DType::f32, 2, 0, CollectiveReduce::sum, "pair01");
  const Graph b = one_collective(OpKind::all_reduce, {2}, DType::f32, 2, 0, CollectiveReduce::sum, "pair23");
  const auto v = run_ranks({a, a, b, b}, DType::f32, {2}, {{1, 2}, {3, 4}, {5, 6}, {7, 8}});
  expect_values(v[0], {4, 6});
  expect_values(v[1], {4, 6});
  expect_values(v[2], {12, 14});
  expect_values(v[3], {12, 14});
}

// Row-parallel x @ w: each rank multiplies its K-columns of x by its K-rows of w, and an
// all_reduce adds the partial products; collectives of world 1 in the same program run locally.
TEST(ReferenceRanks, RowParallelMatmulEqualsTheFullOne) {
  Graph full;
  full.output(full.matmul(full.input("x", DType::f32, {2, 4}), full.input("w", DType::f32, {4, 3})), "y");
  Graph rank("rank");
  auto part = rank.matmul(rank.input("x", DType::f32, {2, 2}), rank.input("w", DType::f32, {2, 3}));
  rank.output(rank.all_reduce(rank.all_reduce(part, "tp", 2), "self", 1), "y");
  const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<double> w{1, 0, 2, -1, 3, 1, 0.5, 0.25, -2, 4, 1, 1};
  const std::vector<double> want = run_values(full, {{"x", tensor(DType::f32, {2, 4}, x)},
                                                     {"w", tensor(DType::f32, {4, 3}, w)}}, "y");
  std::vector<TensorMap> inputs(2);
  for (int r = 0; r < 2; ++r) {
    inputs[r]["x"] = tensor(DType::f32, {2, 2}, {x[2 * r], x[2 * r + 1], x[4 + 2 * r], x[5 + 2 * r]});
    inputs[r]["w"] = tensor(DType::f32, {2, 3}, std::vector<double>(w.begin() + 6 * r, w.begin() + 6 * r + 6));
  }
  const auto out = run_reference_ranks({rank, rank}, inputs);
  expect_values(out[0].at("y").values(), want);
  expect_values(out[1].at("y").values(), want);
}

TEST(ReferenceRanks, CollectivesThatDifferBetweenRanksAreErrors) {
  const Dims d{2, 4};
  const std::vector<std::vector<double>> xs(2, std::vector<double>(8, 1.0));
  const Graph ar = one_collective(OpKind::all_reduce, d, DType::f32, 2);
  expect_error([&] { run_ranks({ar, one_collective(OpKind::all_gather, d, DType::f32, 2, 1)}, DType::f32, d, xs); },
               {"collective #0 on group 'tp' differs between ranks", "rank 0 runs node 'all_reduce0' (all_reduce sum",
                "rank 1 runs node 'all_gather0' (all_gather along axis 1, world 2, f32 [2, 4])"});
  expect_error([&] {
    run_ranks({ar, one_collective(OpKind::all_reduce, d, DType::f32, 2, 0, CollectiveReduce::max)}, DType::f32, d, xs);
  }, {"differs between ranks", "(all_reduce max, world 2"});
  expect_error([&] {
    run_ranks({one_collective(OpKind::reduce_scatter, d, DType::f32, 2, 0),
               one_collective(OpKind::reduce_scatter, d, DType::f32, 2, 1)}, DType::f32, d, xs);
  }, {"differs between ranks", "along axis 0", "along axis 1"});
  // other dims on rank 1
  Graph wide = one_collective(OpKind::all_reduce, {2, 2}, DType::f32, 2);
  std::vector<TensorMap> inputs{{{"x", tensor(DType::f32, d, xs[0])}}, {{"x", tensor(DType::f32, {2, 2}, {1, 1, 1, 1})}}};
  expect_error([&] { run_reference_ranks({ar, wide}, inputs); }, {"differs between ranks", "f32 [2, 4]", "f32 [2, 2]"});
  // another world on rank 1: the group's collectives disagree on its world
  expect_error([&] { run_ranks({ar, one_collective(OpKind::all_reduce, d, DType::f32, 3)}, DType::f32, d, xs); },
               {"group 'tp'", "of rank 1 has world 3", "of rank 0 has world 2",
                "every collective of a group has the group's world"});
}

TEST(ReferenceRanks, ARankThatNeverReachesACollectiveIsAnError) {
  const Dims d{4};
  const std::vector<std::vector<double>> xs(2, {1, 2, 3, 4});
  Graph none("rank");
  none.output(none.relu(none.input("x", DType::f32, d)), "y");
  expect_error([&] { run_ranks({one_collective(OpKind::all_reduce, d, DType::f32, 2), none}, DType::f32, d, xs); },
               {"group 'tp' has world 2", "node 'all_reduce0'", "of rank 0", "rank(s) 1 never reach a collective"});
  // rank 1 issues one all_reduce, rank 0 two: rank 0 waits in its second while rank 1 is done
  Graph two("rank");
  two.output(two.all_reduce(two.all_reduce(two.input("x", DType::f32, d), "tp", 2), "tp", 2), "y");
  expect_error([&] { run_ranks({two, one_collective(OpKind::all_reduce, d, DType::f32, 2)}, DType::f32, d, xs); },
               {"rank 0 waits in node 'all_reduce2'", "collective #1 on group 'tp'",
                "rank 1 finished its graph without reaching it"});
}

// Every collective of a group has the group's world: one of world 4 on a group of world 2 is an
// error naming it, not a failure inside the reduction.
TEST(ReferenceRanks, ACollectiveOfAnotherWorldOnTheGroupIsAnError) {
  auto program = [] {
    Graph g("rank");
    g.output(g.all_reduce(g.all_reduce(g.input("x", DType::f32, {2}), "tp", 2), "tp", 4), "y");
    return g;
  };
  expect_error([&] { run_ranks({program(), program()}, DType::f32, {2}, {{1, 2}, {3, 4}}); },
               {"group 'tp'", "has world 4", "has world 2", "every collective of a group has the group's world"});
}

// Rank 0 reduces over group a, then b; rank 1 over b, then a: each waits for the other forever.
TEST(ReferenceRanks, ACrossGroupDeadlockIsAnErrorNotAHang) {
  auto program = [](const std::string& first, const std::string& second) {
    Graph g("rank");
    g.output(g.all_reduce(g.all_reduce(g.input("x", DType::f32, {2}), first, 2), second, 2), "y");
    return g;
  };
  expect_error([&] { run_ranks({program("a", "b"), program("b", "a")}, DType::f32, {2}, {{1, 2}, {3, 4}}); },
               {"deadlock", "rank 0 in node 'all_reduce0'", "on group 'a'", "rank 1 in node 'all_reduce0'",
                "on group 'b'"});
  // and the same program on both ranks runs
  const auto v = run_ranks({program("a", "b"), program("a", "b")}, DType::f32, {2}, {{1, 2}, {3, 4}});
  expect_values(v[0], {8, 12});
}

TEST(ReferenceRanks, ArgumentsAreChecked) {
  const Graph g = one_collective(OpKind::all_reduce, {2}, DType::f32, 2);
  const Error e = error_of([&] { run_reference_ranks({g, g}, {{{"x", tensor(DType::f32, {2}, {1, 2})}}}); });
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  expect_contains(e.what(), {"2 rank graphs but 1 input maps"});
  EXPECT_THROW(run_reference_ranks({}, {}), Error);
  // each rank's inputs are checked as run_reference checks them
  const Error missing = error_of([&] { run_reference_ranks({g, g}, {{{"x", tensor(DType::f32, {2}, {1, 2})}}, {}}); });
  expect_contains(missing.what(), {"graph input 'x'", "is missing"});
}
