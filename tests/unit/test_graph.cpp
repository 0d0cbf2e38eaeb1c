// Shape and dtype inference of every op through the builder API, graph-level validation, and
// the structural hash.
#include <gtest/gtest.h>

#include "sinter/error.hpp"
#include "sinter/graph.hpp"
#include "sinter/host_tensor.hpp"

using namespace sinter;

namespace {

// Runs `f` and returns the sinter::Error message it throws ("" when it does not throw).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(stmt, ...)                                                  \
  do {                                                                           \
    const std::string msg_ = error_of([&] { stmt; });                            \
    EXPECT_FALSE(msg_.empty()) << #stmt " did not throw";                        \
    for (const char* sub_ : {__VA_ARGS__}) {                                     \
      EXPECT_NE(msg_.find(sub_), std::string::npos) << "'" << sub_ << "' not in: " << msg_; \
    }                                                                            \
  } while (0)

Dims dims_of(const Graph& g, Tensor t) { return g.tensor(t).dims; }

}  // namespace

TEST(GraphInfer, MatmulBatchBroadcastAndDtype) {
  Graph g;
  auto a = g.input("a", DType::bf16, {4, 1, 7, 33});
  auto b = g.input("b", DType::bf16, {3, 33, 5});
  auto c = g.matmul(a, b);
  EXPECT_EQ(dims_of(g, c), (Dims{4, 3, 7, 5}));
  EXPECT_EQ(g.tensor(c).dtype, DType::bf16);
  auto d = g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::f32});
  EXPECT_EQ(g.tensor(d).dtype, DType::f32);
  auto bad_k = g.input("bad_k", DType::bf16, {32, 5});
  EXPECT_ERROR(g.matmul(a, bad_k), "contraction", "K=33", "K=32", "'bad_k'");
  auto wrong_dt = g.input("wrong_dt", DType::f16, {33, 5});
  EXPECT_ERROR(g.matmul(a, wrong_dt), "dtype f16", "'wrong_dt'", "bf16");
  auto vec = g.input("vec", DType::bf16, {33});
  EXPECT_ERROR(g.matmul(a, vec), "rank >= 2", "'vec'");
  auto bb = g.input("bb", DType::bf16, {2, 3, 33, 5});
  EXPECT_ERROR(g.matmul(a, bb), "batch dimensions", "[4, 1]", "[2, 3]");
  EXPECT_ERROR(g.matmul(a, b, MatmulAttrs{ComputeType::tf32, {}}), "tf32", "f32 inputs");
}

TEST(GraphInfer, MatmulTransposedViewThroughStrides) {
  Graph g;
  // w is logically [K=64, N=32] but stored as N x K (column-major), as a transposed weight is.
  auto x = g.input("x", DType::f16, {16, 64});
  auto w = g.input("w", DType::f16, {64, 32}, {1, 64});
  auto y = g.matmul(x, w);
  EXPECT_EQ(dims_of(g, y), (Dims{16, 32}));
  EXPECT_EQ(g.tensor(w).strides, (Dims{1, 64}));
  EXPECT_ERROR(g.input("s", DType::f16, {4, 4}, {1}), "strides", "rank");
  EXPECT_ERROR(g.input("n", DType::f16, {4, 4}, {-1, 1}), "negative stride");
  EXPECT_ERROR(g.input("z", DType::f16, {4, 0}), "every dimension must be >= 1");
}

TEST(GraphInfer, Conv2dGeometry) {
  Graph g;
  auto x = g.input("x", DType::bf16, {2, 15, 17, 8});
  auto w = g.input("w", DType::bf16, {6, 3, 5, 4});
  Conv2dAttrs at;
  at.stride = {2, 1};
  at.pad_begin = {1, 2};
  at.pad_end = {0, 2};
  at.dilation = {1, 2};
  at.groups = 2;
  auto y = g.conv2d(x, w, at);
  // P = (15 + 1 + 0 - 3) / 2 + 1 = 7; Q = (17 + 4 - 9) / 1 + 1 = 13
  EXPECT_EQ(dims_of(g, y), (Dims{2, 7, 13, 6}));
  auto w3 = g.input("w3", DType::bf16, {6, 3, 3, 3});
  EXPECT_ERROR(g.conv2d(x, w3, Conv2dAttrs{.groups = 2}), "'w3'", "C/groups=3", "4 were expected");
  auto w7 = g.input("w7", DType::bf16, {7, 3, 3, 4});
  EXPECT_ERROR(g.conv2d(x, w7, Conv2dAttrs{.groups = 2}), "K=7", "not divisible by groups=2");
  auto big = g.input("big", DType::bf16, {4, 20, 3, 8});
  EXPECT_ERROR(g.conv2d(x, big), "height", "spans 20", "only 15");
  auto w4 = g.input("w4", DType::bf16, {4, 3, 3});
  EXPECT_ERROR(g.conv2d(x, w4), "rank 4", "KRSC");
  EXPECT_ERROR(g.conv2d(x, w, Conv2dAttrs{.stride = {0, 1}, .groups = 2}), "stride must be >= 1");
}

TEST(GraphInfer, SdpaShapesGqaDecodeBiasStats) {
  Graph g;
  auto q = g.input("q", DType::bf16, {2, 8, 1, 64});
  auto k = g.input("k", DType::bf16, {2, 2, 300, 64});
  auto v = g.input("v", DType::bf16, {2, 2, 300, 32});
  auto mask = g.input("mask", DType::boolean, {1, 1, 1, 300});
  auto r = g.sdpa(q, k, v, SdpaAttrs{.causal = CausalMask::bottom_right, .emit_stats = true}, mask);
  EXPECT_EQ(dims_of(g, r.o), (Dims{2, 8, 1, 32}));
  ASSERT_TRUE(r.stats.valid());
  EXPECT_EQ(dims_of(g, r.stats), (Dims{2, 8, 1, 1}));
  EXPECT_EQ(g.tensor(r.stats).dtype, DType::f32);
  auto k3 = g.input("k3", DType::bf16, {2, 3, 300, 64});
  auto v3 = g.input("v3", DType::bf16, {2, 3, 300, 64});
  EXPECT_ERROR(g.sdpa(q, k3, v3), "H=8", "Hkv=3", "GQA");
  auto kd = g.input("kd", DType::bf16, {2, 2, 300, 48});
  EXPECT_ERROR(g.sdpa(q, kd, v), "head dim D=64", "48");
  auto bias = g.input("bias", DType::f32, {2, 8, 2, 300});
  EXPECT_ERROR(g.sdpa(q, k, v, {}, bias), "'bias'", "enlarge");
  auto q3 = g.input("q3", DType::bf16, {2, 8, 64});
  EXPECT_ERROR(g.sdpa(q3, k, v), "rank 4", "[B, H, Sq, D]");
}

TEST(GraphInfer, PointwiseBroadcastingAndDtypes) {
  Graph g;
  auto x = g.input("x", DType::f32, {4, 1, 6});
  auto y = g.input("y", DType::f32, {5, 1});
  EXPECT_EQ(dims_of(g, g.add(x, y)), (Dims{4, 5, 6}));
  EXPECT_EQ(dims_of(g, g.mul(x, 2.0)), (Dims{4, 1, 6}));
  auto z = g.input("z", DType::f32, {3, 6});
  EXPECT_ERROR(g.add(y, z), "broadcast", "[5, 1]", "[3, 6]");
  auto c = g.gt(x, y);
  EXPECT_EQ(g.tensor(c).dtype, DType::boolean);
  EXPECT_EQ(dims_of(g, g.select(c, x, y)), (Dims{4, 5, 6}));
  EXPECT_ERROR(g.select(x, x, y), "condition", "must be bool");
  auto i = g.input("i", DType::i32, {4});
  EXPECT_EQ(g.tensor(g.add(i, i)).dtype, DType::i32);
  EXPECT_ERROR(g.exp(i), "integer dtype i32", "cast");
  EXPECT_ERROR(g.div(i, i), "does not take i32");
  EXPECT_ERROR(g.add(x, i), "dtype i32", "f32");
  for (OpKind op : all_ops()) {
    if (op_info(op).cls == OpClass::unary) {
      EXPECT_EQ(dims_of(g, g.unary(op, x)), (Dims{4, 1, 6})) << to_string(op);
    }
  }
}

TEST(GraphInfer, CastConstantAndReductions) {
  Graph g;
  auto x = g.input("x", DType::bf16, {3, 4, 5});
  auto s = g.input("s", DType::f32, {});
  auto f8 = g.cast(x, DType::fp8_e4m3, s);
  EXPECT_EQ(g.tensor(f8).dtype, DType::fp8_e4m3);
  auto s2 = g.input("s2", DType::f32, {2, 4, 5});
  EXPECT_ERROR(g.cast(x, DType::fp8_e4m3, s2), "scale", "enlarge");
  auto c = g.scalar(0.5, DType::f16);
  EXPECT_EQ(dims_of(g, c), Dims{});
  EXPECT_EQ(dims_of(g, g.sum(x, {-1, 0})), (Dims{4}));
  EXPECT_EQ(dims_of(g, g.amax(x)), Dims{});
  EXPECT_EQ(dims_of(g, g.mean(x, {1}, true)), (Dims{3, 1, 5}));
  EXPECT_EQ(g.tensor(g.reduce(OpKind::reduce_sum, x, {2}, false, DType::f32)).dtype, DType::f32);
  EXPECT_ERROR(g.sum(x, {3}), "axis 3", "rank 3");
}

TEST(GraphInfer, RowwiseOps) {
  Graph g;
  auto x = g.input("x", DType::bf16, {2, 7, 96});
  auto w = g.input("w", DType::bf16, {96});
  auto b = g.input("b", DType::f32, {96});
  EXPECT_EQ(dims_of(g, g.layernorm(x, w, b)), (Dims{2, 7, 96}));
  EXPECT_EQ(dims_of(g, g.rmsnorm(x, w)), (Dims{2, 7, 96}));
  EXPECT_EQ(dims_of(g, g.softmax(x)), (Dims{2, 7, 96}));
  auto w2 = g.input("w2", DType::bf16, {95});
  EXPECT_ERROR(g.layernorm(x, w2), "'w2'", "[96]", "[95]");
  auto cs = g.input("cos", DType::f32, {7, 16});  // partial rotary: 32 of 96 channels
  auto sn = g.input("sin", DType::f32, {7, 16});
  EXPECT_EQ(dims_of(g, g.rope(x, cs, sn, true)), (Dims{2, 7, 96}));
  auto cbig = g.input("cbig", DType::f32, {7, 49});
  EXPECT_ERROR(g.rope(x, cbig, cbig), "49 frequencies", "98 channels");
  auto cbad = g.input("cbad", DType::f32, {6, 16});
  EXPECT_ERROR(g.rope(x, cbad, cbad), "leading dims", "[6]");
}

TEST(GraphInfer, LayoutOps) {
  Graph g;
  auto x = g.input("x", DType::f16, {2, 3, 4});
  EXPECT_EQ(dims_of(g, g.reshape(x, {6, -1})), (Dims{6, 4}));
  EXPECT_ERROR(g.reshape(x, {5, 5}), "cannot reshape", "24 elements", "25 elements");
  EXPECT_EQ(dims_of(g, g.permute(x, {2, 0, 1})), (Dims{4, 2, 3}));
  EXPECT_EQ(dims_of(g, g.transpose(x, -1, 0)), (Dims{4, 3, 2}));
  EXPECT_ERROR(g.permute(x, {0, 0, 1}), "not a permutation");
  EXPECT_EQ(dims_of(g, g.slice(x, {2}, {1}, {100}, {2})), (Dims{2, 3, 2}));
  EXPECT_EQ(dims_of(g, g.slice(x, {-2}, {-2}, {3})), (Dims{2, 2, 4}));
  EXPECT_ERROR(g.slice(x, {0}, {1}, {1}), "empty");
  auto y = g.input("y", DType::f16, {2, 5, 4});
  EXPECT_EQ(dims_of(g, g.concat({x, y, x}, 1)), (Dims{2, 11, 4}));
  auto z = g.input("z", DType::f16, {3, 5, 4});
  EXPECT_ERROR(g.concat({x, z}, 1), "'z'", "all dims but axis 1");
}

TEST(GraphValidate, GraphLevelRules) {
  {
    Graph g("no_out");
    auto x = g.input("x", DType::f32, {4});
    g.relu(x);
    EXPECT_ERROR(g.validate(), "has no outputs");
  }
  {
    Graph g("unread");
    auto x = g.input("x", DType::f32, {4});
    g.input("lonely", DType::f32, {4});
    g.output(g.relu(x), "y");
    EXPECT_ERROR(g.validate(), "graph input 'lonely' is not read");
  }
  {
    Graph g("dead");
    auto x = g.input("x", DType::f32, {4});
    auto dead = g.exp(x);
    g.rename(dead, "wasted");
    g.output(g.relu(x), "y");
    EXPECT_ERROR(g.validate(), "'wasted'", "neither read", "nor a graph output");
  }
  {
    Graph g("passthrough");
    auto x = g.input("x", DType::f32, {4});
    g.output(g.relu(x), "y");
    g.output(x);
    EXPECT_ERROR(g.validate(), "graph output 'x' is never produced");
  }
  {
    Graph g("ok");
    auto x = g.input("x", DType::f32, {4});
    g.output(g.relu(x), "y");
    EXPECT_NO_THROW(g.validate());
    EXPECT_ERROR(g.rename(x, "y"), "already has a tensor named 'y'");
  }
}

TEST(GraphValidate, CycleThroughDeclaredNodes) {
  Graph g("cyclic");
  auto x = g.input("x", DType::f32, {4});
  auto a = g.declare_tensor("a", std::nullopt, std::nullopt);
  auto b = g.declare_tensor("b", std::nullopt, std::nullopt);
  g.add_node_declared(OpKind::add, "n1", {x.id, b.id}, {a.id}, std::monostate{});
  g.add_node_declared(OpKind::relu, "n2", {a.id}, {b.id}, std::monostate{});
  g.output(a);
  EXPECT_ERROR(g.validate(), "cycle", "'n1'", "'n2'");
}

TEST(GraphValidate, DeclaredTypesAreChecked) {
  Graph g("declared");
  auto x = g.input("x", DType::f32, {4, 3});
  auto y = g.declare_tensor("y", DType::f16, std::nullopt);
  g.add_node_declared(OpKind::relu, "r", {x.id}, {y.id}, std::monostate{});
  g.output(y);
  EXPECT_ERROR(g.validate(), "'y' is declared as f16", "node 'r' (relu) produces f32");
  Graph h("declared_dims");
  auto hx = h.input("x", DType::f32, {4, 3});
  auto hy = h.declare_tensor("y", std::nullopt, Dims{3, 4});
  h.add_node_declared(OpKind::relu, "r", {hx.id}, {hy.id}, std::monostate{});
  h.output(hy);
  EXPECT_ERROR(h.validate(), "declared with dims [3, 4]", "produces [4, 3]");
  Graph ok("inferred");
  auto ox = ok.input("x", DType::f32, {4, 3});
  auto oy = ok.declare_tensor("y", std::nullopt, std::nullopt);
  ok.add_node_declared(OpKind::relu, "r", {ox.id}, {oy.id}, std::monostate{});
  ok.output(oy);
  ok.validate();
  EXPECT_EQ(ok.tensor(oy).dims, (Dims{4, 3}));
  EXPECT_TRUE(ok.tensor(oy).known);
}

namespace {
Graph mlp(int64_t m, int64_t k, int64_t n, const std::string& prefix) {
  Graph g;
  auto x = g.input(prefix + "x", DType::bf16, {m, k});
  auto w = g.input(prefix + "w", DType::bf16, {k, n});
  auto b = g.input(prefix + "b", DType::bf16, {n});
  auto y = g.gelu(g.add(g.matmul(x, w), b));
  g.output(y, prefix + "y");
  g.output(g.amax(y), prefix + "amax");
  return g;
}
}  // namespace

TEST(GraphHash, StructureVersusShapes) {
  const Graph a = mlp(128, 256, 512, "");
  const Graph b = mlp(128, 256, 512, "other_");  // names do not count
  const Graph c = mlp(64, 256, 1024, "");        // shapes differ
  EXPECT_EQ(structural_hash(a, true), structural_hash(b, true));
  EXPECT_NE(structural_hash(a, true), structural_hash(c, true));
  EXPECT_EQ(structural_hash(a, false), structural_hash(c, false));
  Graph d;
  auto x = d.input("x", DType::bf16, {128, 256});
  auto w = d.input("w", DType::bf16, {256, 512});
  auto bb = d.input("b", DType::bf16, {512});
  auto y = d.relu(d.add(d.matmul(x, w), bb));  // relu instead of gelu
  d.output(y, "y");
  d.output(d.amax(y), "amax");
  EXPECT_NE(structural_hash(a, false), structural_hash(d, false));
}

TEST(GraphCost, FlopsAndMinimumBytes) {
  const Graph g = mlp(128, 256, 512, "");
  const GraphCost c = graph_cost(g);
  const double mm = 2.0 * 128 * 256 * 512;
  EXPECT_DOUBLE_EQ(c.flops, mm + 2 * 128 * 512 + 128 * 512);  // matmul, add, gelu, amax
  const double bytes = 2.0 * (128 * 256 + 256 * 512 + 512) + 2.0 * (128 * 512 + 1);
  EXPECT_DOUBLE_EQ(c.min_bytes, bytes);
}

// The error bound of an output follows the least precise float tensor computed on its way.
TEST(ErrorBound, FollowsTheLeastPreciseComputedTensor) {
  Graph g("bounds");
  auto x = g.input("x", DType::bf16, {4, 8});
  auto xf = g.input("xf", DType::f32, {4, 8});
  auto h = g.gelu(g.add(x, x));                     // bf16 intermediates
  g.output(g.cast(h, DType::f32), "widened");       // f32 output of a bf16 computation
  g.output(g.exp(g.cast(x, DType::f32)), "exact_input_cast");  // f32 all the way from an input
  g.output(g.mul(xf, xf), "f32");
  g.output(g.gt(h, x), "flags");                    // bool stays exact
  auto e8 = g.cast(h, DType::fp8_e4m3);
  g.output(g.cast(e8, DType::bf16), "via_fp8");
  g.validate();
  auto bound_of = [&](const std::string& name) {
    for (TensorId id : g.outputs()) {
      if (g.tensor(id).name == name) return relative_l2_bound(g, id);
    }
    ADD_FAILURE() << name;
    return -1.0;
  };
  EXPECT_EQ(bound_of("widened"), relative_l2_bound(DType::bf16));
  EXPECT_EQ(bound_of("exact_input_cast"), relative_l2_bound(DType::f32));
  EXPECT_EQ(bound_of("f32"), relative_l2_bound(DType::f32));
  EXPECT_EQ(bound_of("flags"), 0.0);
  EXPECT_EQ(bound_of("via_fp8"), relative_l2_bound(DType::fp8_e4m3));
}
