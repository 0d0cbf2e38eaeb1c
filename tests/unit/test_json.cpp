// Graph files: every op and attribute survives save -> load -> save byte for byte, with the same
// structural hash and names; the convenience forms of hand-written files load to the normalized
// graph; the example graphs round-trip.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "sinter/error.hpp"
#include "sinter/graph.hpp"
#include "sinter/json.hpp"

using namespace sinter;
namespace fs = std::filesystem;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A builder graph must read every input and use every result; make each unread result an output.
void output_leaves(Graph& g) {
  const auto cons = g.consumers();
  for (size_t t = 0; t < g.tensors().size(); ++t) {
    if (g.tensors()[t].producer >= 0 && cons[t].empty()) g.output(Tensor{static_cast<TensorId>(t)});
  }
}

std::vector<std::string> names_of(const Graph& g) {
  std::vector<std::string> names{g.name()};
  for (TensorId id : g.inputs()) names.push_back("in:" + g.tensor(id).name);
  for (const Node& n : g.nodes()) {
    names.push_back("node:" + n.name);
    for (TensorId id : n.inputs) names.push_back("<" + g.tensor(id).name);
    for (TensorId id : n.outputs) names.push_back(">" + g.tensor(id).name);
  }
  for (TensorId id : g.outputs()) names.push_back("out:" + g.tensor(id).name);
  return names;
}

// save -> load -> save: the same text, hash and names; returns the loaded graph.
Graph round_trip(const Graph& g) {
  const std::string text = save_graph_json(g);
  Graph back = load_graph_json(text, "round-trip");
  EXPECT_EQ(save_graph_json(back), text);
  EXPECT_EQ(structural_hash(back, true), structural_hash(g, true));
  EXPECT_EQ(structural_hash(back, false), structural_hash(g, false));
  EXPECT_EQ(names_of(back), names_of(g));
  return back;
}

std::set<OpKind> ops_of(const Graph& g) {
  std::set<OpKind> ops;
  for (const Node& n : g.nodes()) ops.insert(n.op);
  return ops;
}

Graph anchors_graph() {
  Graph g("anchors");
  // matmul: strided (transposed) weight, batch broadcast, every compute type and out_dtype
  auto x = g.input("x", DType::bf16, {2, 64, 96});
  auto wt = g.input("wt", DType::bf16, {96, 128}, {1, 96});
  g.matmul(x, wt, MatmulAttrs{ComputeType::f32, DType::f32});
  auto a32 = g.input("a32", DType::f32, {16, 32});
  auto b32 = g.input("b32", DType::f32, {3, 32, 8});
  g.matmul(a32, b32, MatmulAttrs{ComputeType::tf32, std::nullopt});
  auto a16 = g.input("a16", DType::f16, {8, 8});
  g.matmul(a16, a16, MatmulAttrs{ComputeType::f16, std::nullopt});
  // conv2d with every attribute away from its default
  auto img = g.input("img", DType::f16, {2, 17, 19, 8});
  auto filt = g.input("filt", DType::f16, {6, 3, 3, 4});
  Conv2dAttrs ca;
  ca.stride = {2, 1};
  ca.pad_begin = {1, 0};
  ca.pad_end = {2, 1};
  ca.dilation = {1, 2};
  ca.groups = 2;
  ca.out_dtype = DType::f32;
  g.conv2d(img, filt, ca);
  // sdpa: GQA, explicit scale, bottom-right causal, additive bias, stats
  auto q = g.input("q", DType::bf16, {1, 8, 16, 64});
  auto k = g.input("k", DType::bf16, {1, 2, 24, 64});
  auto v = g.input("v", DType::bf16, {1, 2, 24, 32});
  auto bias = g.input("bias", DType::f32, {1, 1, 16, 24});
  SdpaAttrs sa;
  sa.scale = 0.125;
  sa.causal = CausalMask::bottom_right;
  sa.emit_stats = true;
  g.sdpa(q, k, v, sa, bias);
  // and a bool keep-mask with top-left causality and the default scale
  auto mask = g.input("mask", DType::boolean, {16, 24});
  SdpaAttrs sb;
  sb.causal = CausalMask::top_left;
  g.sdpa(q, k, v, sb, mask);
  output_leaves(g);
  return g;
}

Graph pointwise_graph() {
  Graph g("pointwise");
  auto x = g.input("x", DType::f32, {4, 1, 6});
  auto y = g.input("y", DType::f32, {5, 1});
  for (OpKind op : all_ops()) {
    if (op_info(op).cls == OpClass::unary) g.unary(op, x);
    if (op_info(op).cls == OpClass::binary) g.binary(op, x, y);
    if (op_info(op).cls == OpClass::compare) g.compare(op, x, y);
  }
  auto i = g.input("i", DType::i32, {3});
  for (OpKind op : {OpKind::identity, OpKind::relu, OpKind::abs, OpKind::neg, OpKind::square}) {
    g.unary(op, i);
  }
  g.add(i, 2.0);
  g.select(g.gt(x, y), x, g.mul(y, 0.5));
  output_leaves(g);
  return g;
}

Graph constants_graph() {
  Graph g("constants");
  auto x = g.input("x", DType::f32, {4});
  for (double v : {kNaN, kInf, -kInf, -0.0, 0.0, 0.1, 1.0 / 3.0, 1e300, -5e-324, 65504.0}) {
    g.add(x, v);
  }
  g.output(g.scalar(-7, DType::i64), "i64_const");
  g.output(g.scalar(1, DType::boolean), "bool_const");
  g.output(g.scalar(3.5, DType::bf16), "bf16_const");
  output_leaves(g);
  return g;
}

Graph cast_reduce_norm_graph() {
  Graph g("cast_reduce_norm");
  auto x = g.input("x", DType::bf16, {2, 3, 8});
  auto s = g.input("scale", DType::f32, {});
  g.output(g.cast(x, DType::fp8_e4m3, s), "x_fp8");
  g.output(g.cast(x, DType::fp8_e5m2), "x_e5m2");
  g.output(g.cast(x, DType::boolean), "x_bool");
  g.output(g.cast(x, DType::i64), "x_i64");
  g.reduce(OpKind::reduce_sum, x, {-1, 0}, true, DType::f32);
  g.mean(x, {1});
  g.reduce_max(x, {-2, -2, 2});
  g.reduce_min(x);
  g.output(g.amax(x, {}, true), "amax");
  g.argmax(x, -1);
  g.argmin(x, 1, true);
  g.softmax(x);
  auto w = g.input("w", DType::bf16, {8});
  auto b = g.input("b", DType::bf16, {8});
  g.layernorm(x, w, b, 1e-6);
  g.layernorm(x, w);
  g.rmsnorm(x, w, std::nullopt, 1e-5);
  g.rmsnorm(x, w, b);
  auto cs = g.input("cos", DType::f32, {3, 2});
  auto sn = g.input("sin", DType::f32, {3, 2});
  auto xf = g.cast(x, DType::f32);
  g.rope(xf, cs, sn, false);
  g.rope(xf, cs, sn, true);
  output_leaves(g);
  return g;
}

Graph layout_graph() {
  Graph g("layout");
  auto x = g.input("x", DType::f16, {2, 3, 4, 5});
  g.reshape(x, {6, -1});
  g.reshape(x, {120});
  g.permute(x, {3, 1, 0, 2});
  g.transpose(x, -1, 0);
  g.slice(x, {-1, 1}, {-4, 0}, {100, -1}, {2, 1});
  g.slice(x, {}, {1, 0, 1, 0}, {2, 3, 4, 5}, {1, 2, 3, 4});
  auto y = g.input("y", DType::f16, {2, 3, 1, 5});
  g.concat({x, y, x}, -2);
  g.concat({y}, 0);
  auto ids = g.input("ids", DType::i32, {2, 7});
  g.gather(x, ids, -3);
  g.gather(y, g.input("pos", DType::i64, {}), 0);
  output_leaves(g);
  return g;
}

Graph collectives_graph() {
  Graph g("collectives");
  auto x = g.input("x", DType::bf16, {2, 8, 6});
  g.all_reduce(x, "tp", 4);
  g.all_reduce(x, "dp", 2, CollectiveReduce::max);
  g.all_gather(x, -1, "tp", 4);
  g.reduce_scatter(x, 1, "tp", 4, CollectiveReduce::max);
  g.reduce_scatter(g.cast(x, DType::i32), 0, "pair", 2);
  g.all_gather(g.cast(x, DType::boolean), 0, "solo", 1);
  output_leaves(g);
  return g;
}

}  // namespace

TEST(Json, EveryOpRoundTrips) {
  std::set<OpKind> covered;
  for (const Graph& g : {anchors_graph(), pointwise_graph(), constants_graph(),
                         cast_reduce_norm_graph(), layout_graph(), collectives_graph()}) {
    SCOPED_TRACE(g.name());
    round_trip(g);
    for (OpKind op : ops_of(g)) covered.insert(op);
  }
  for (OpKind op : all_ops()) EXPECT_TRUE(covered.count(op)) << to_string(op) << " is not tested";
}

// Every attribute is saved (reduce only where it applies, axis non-negative); the group name and
// world take part in the structural hash.
TEST(Json, CollectiveAttributesRoundTrip) {
  Graph back = round_trip(collectives_graph());
  const std::string text = save_graph_json(back);
  EXPECT_NE(text.find(R"("attrs": {"group": "tp", "world": 4, "reduce": "sum"})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("attrs": {"group": "tp", "world": 4, "axis": 2})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("attrs": {"group": "tp", "world": 4, "axis": 1, "reduce": "max"})"), std::string::npos)
      << text;
  const std::string hand = R"({"format": "sinter.graph", "version": 1, "name": "g",
    "inputs": [{"name": "x", "dtype": "f32", "dims": [4, 6]}],
    "nodes": [{"name": "ag", "op": "all_gather", "inputs": ["x"], "outputs": ["y"],
               "attrs": {"group": "tp", "world": 2, "axis": -2}},
              {"name": "rs", "op": "reduce_scatter", "inputs": ["y"], "outputs": ["z"],
               "attrs": {"group": "tp", "world": 2, "axis": -1}}],
    "outputs": ["z"]})";
  const Graph h = load_graph_json(hand, "hand");
  const auto& ag = std::get<CollectiveAttrs>(h.node(*h.find_node("ag")).attrs);
  EXPECT_EQ(ag.axis, 0);
  EXPECT_EQ(h.tensor(*h.find_tensor("y")).dims, (Dims{8, 6}));
  const auto& rs = std::get<CollectiveAttrs>(h.node(*h.find_node("rs")).attrs);
  EXPECT_EQ(rs.axis, 1);
  EXPECT_EQ(rs.reduce, CollectiveReduce::sum);  // the default
  EXPECT_EQ(h.tensor(*h.find_tensor("z")).dims, (Dims{8, 3}));

  std::string other_group = hand;
  other_group.replace(other_group.find("\"tp\""), 4, "\"pp\"");
  EXPECT_NE(structural_hash(load_graph_json(other_group, "g2"), false), structural_hash(h, false));
}

TEST(Json, StridedInputKeepsItsStrides) {
  Graph back = round_trip(anchors_graph());
  const TensorInfo& wt = back.tensor(*back.find_tensor("wt"));
  EXPECT_EQ(wt.strides, (Dims{1, 96}));
  const std::string text = save_graph_json(back);
  EXPECT_NE(text.find("\"strides\": [1, 96]"), std::string::npos);
  // contiguous inputs are written without strides
  EXPECT_EQ(text.find("\"dims\": [2, 64, 96], \"strides\""), std::string::npos);
}

TEST(Json, NonFiniteAndSignedZeroConstants) {
  Graph back = round_trip(constants_graph());
  std::vector<double> values;
  for (const Node& n : back.nodes()) {
    if (n.op == OpKind::constant) values.push_back(std::get<ConstantAttrs>(n.attrs).value);
  }
  ASSERT_GE(values.size(), 10u);
  EXPECT_TRUE(std::isnan(values[0]));
  EXPECT_EQ(values[1], kInf);
  EXPECT_EQ(values[2], -kInf);
  EXPECT_TRUE(values[3] == 0 && std::signbit(values[3]));
  EXPECT_TRUE(values[4] == 0 && !std::signbit(values[4]));
  EXPECT_EQ(values[5], 0.1);
  EXPECT_EQ(values[6], 1.0 / 3.0);
  EXPECT_EQ(values[7], 1e300);
  EXPECT_EQ(values[8], -5e-324);
  const std::string text = save_graph_json(back);
  EXPECT_NE(text.find("\"value\": \"nan\""), std::string::npos);
  EXPECT_NE(text.find("\"value\": \"-inf\""), std::string::npos);
  EXPECT_NE(text.find("\"value\": -0.0"), std::string::npos);
}

TEST(Json, NegativeNaNHashesLikeNaN) {
  // JSON keeps no NaN sign or payload; the structural hash must not depend on them either.
  Graph a("nan"), b("nan");
  a.output(a.add(a.input("x", DType::f32, {2}), -kNaN), "y");
  b.output(b.add(b.input("x", DType::f32, {2}), kNaN), "y");
  EXPECT_EQ(structural_hash(a, true), structural_hash(b, true));
  round_trip(a);
}

TEST(Json, SavedLayoutIsFixed) {
  Graph g("tiny");
  auto x = g.input("x", DType::f32, {2, 3});
  g.output(g.relu(x), "y");
  g.output(g.sum(x, {-1}), "s");
  const std::string expected = R"({
  "format": "sinter.graph",
  "version": 1,
  "name": "tiny",
  "inputs": [
    {"name": "x", "dtype": "f32", "dims": [2, 3]}
  ],
  "nodes": [
    {
      "name": "relu0",
      "op": "relu",
      "inputs": ["x"],
      "outputs": [{"name": "y", "dtype": "f32", "dims": [2, 3]}]
    },
    {
      "name": "reduce_sum2",
      "op": "reduce_sum",
      "inputs": ["x"],
      "outputs": [{"name": "s", "dtype": "f32", "dims": [2]}],
      "attrs": {"axes": [1], "keepdim": false}
    }
  ],
  "outputs": ["y", "s"]
}
)";
  EXPECT_EQ(save_graph_json(g), expected);
}

// Python-style slice bounds take the whole int64 range: INT64_MIN / INT64_MAX mean "from the
// start" / "to the end", as ONNX exports write them (they were refused past 2^62).
TEST(Json, SliceBoundsTakeAnyInt64) {
  const std::string text = R"({
    "format": "sinter.graph", "version": 1, "name": "s",
    "inputs": [{"name": "x", "dtype": "f32", "dims": [6, 4]}],
    "nodes": [{"name": "cut", "op": "slice", "inputs": ["x"], "outputs": ["y"],
               "attrs": {"axes": [0, 1], "starts": [-9223372036854775808, 1],
                         "ends": [9223372036854775807, 9223372036854775807]}}],
    "outputs": ["y"]
  })";
  const Graph g = load_graph_json(text, "s.json");
  const auto cut = std::get<SliceAttrs>(g.node(*g.find_node("cut")).attrs);
  EXPECT_EQ(cut.starts, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(cut.ends, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(g.tensor(*g.find_tensor("y")).dims, (Dims{6, 3}));
}

TEST(Json, HandWrittenFormsNormalize) {
  // Bare output names, omitted attributes, negative axes, a -1 in reshape, python-style slices,
  // symmetric "padding", and outputs listed before the nodes that read them.
  const std::string text = R"({
    "format": "sinter.graph", "version": 1, "name": "hand",
    "inputs": [{"name": "x", "dtype": "f32", "dims": [2, 8, 8, 4]},
               {"name": "w", "dtype": "f32", "dims": [4, 3, 3, 4]}],
    "nodes": [
      {"name": "cat", "op": "concat", "inputs": ["r", "r"], "outputs": ["c"], "attrs": {"axis": -1}},
      {"name": "conv", "op": "conv2d", "inputs": ["x", "w"], "outputs": ["y"],
       "attrs": {"padding": [1, 1]}},
      {"name": "sum", "op": "reduce_sum", "inputs": ["y"], "outputs": ["s"],
       "attrs": {"axes": [-1, 1, -3], "keepdim": true}},
      {"name": "flat", "op": "reshape", "inputs": ["s"], "outputs": ["r"], "attrs": {"dims": [2, -1]}},
      {"name": "cut", "op": "slice", "inputs": ["c"], "outputs": ["t"],
       "attrs": {"axes": [-1], "starts": [-3], "ends": [1000]}}
    ],
    "outputs": ["t"]
  })";
  Graph g = load_graph_json(text, "hand.json");
  auto attrs = [&](const char* node) { return g.node(*g.find_node(node)).attrs; };
  EXPECT_EQ(std::get<ConcatAttrs>(attrs("cat")).axis, 1);
  const auto conv = std::get<Conv2dAttrs>(attrs("conv"));
  EXPECT_EQ(conv.pad_begin, (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(conv.pad_end, (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(std::get<ReduceAttrs>(attrs("sum")).axes, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(std::get<ReshapeAttrs>(attrs("flat")).dims, (Dims{2, 8}));
  const auto cut = std::get<SliceAttrs>(attrs("cut"));
  EXPECT_EQ(cut.starts, (std::vector<int64_t>{0, 13}));
  EXPECT_EQ(cut.ends, (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(g.tensor(*g.find_tensor("t")).dims, (Dims{2, 3}));
  // file order is kept even though "cat" reads what later nodes produce
  EXPECT_EQ(g.nodes()[0].name, "cat");
  const Graph back = round_trip(g);
  EXPECT_EQ(back.nodes()[0].name, "cat");

  // The same graph from the builder has the same structure.
  Graph b("hand");
  auto x = b.input("x", DType::f32, {2, 8, 8, 4});
  auto w = b.input("w", DType::f32, {4, 3, 3, 4});
  Conv2dAttrs ca;
  ca.pad_begin = ca.pad_end = {1, 1};
  auto r = b.reshape(b.sum(b.conv2d(x, w, ca), {1, 3}, true), {2, -1});
  b.output(b.slice(b.concat({r, r}, 1), {1}, {13}, {16}));
  EXPECT_EQ(structural_hash(b, true), structural_hash(g, true));
}

TEST(Json, DeclaredOutputTypesAreChecked) {
  const std::string ok = R"({"format": "sinter.graph", "version": 1,
    "inputs": [{"name": "x", "dtype": "bf16", "dims": [4]}],
    "nodes": [{"name": "n", "op": "cast", "inputs": ["x"], "attrs": {"dtype": "f32"},
               "outputs": [{"name": "y", "dtype": "f32", "dims": [4]}]}],
    "outputs": ["y"]})";
  Graph g = load_graph_json(ok);
  EXPECT_EQ(g.name(), "graph");  // the default when "name" is absent
  EXPECT_EQ(g.tensor(*g.find_tensor("y")).dtype, DType::f32);
}

TEST(Json, FilesRoundTripAndReportIo) {
  const fs::path dir =
      fs::temp_directory_path() / ("sinter_json_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "g.json").string();
  const Graph g = layout_graph();
  save_graph_file(g, path);
  save_graph_file(g, path);  // overwriting is fine
  const Graph back = load_graph_file(path);
  EXPECT_EQ(save_graph_json(back), save_graph_json(g));
  // no temporary files are left behind
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);
  try {
    save_graph_file(g, (dir / "missing" / "g.json").string());
    ADD_FAILURE() << "saving into a missing folder must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(e.message().find("missing/g.json"), std::string::npos) << e.message();
  }
  fs::remove_all(dir);
}

TEST(Json, ExampleGraphsRoundTrip) {
  // The examples folder may be empty while it is being written; check whatever is there.
  const fs::path dir = SINTER_EXAMPLES_DIR;
  size_t count = 0;
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".json") continue;
      SCOPED_TRACE(e.path().string());
      const Graph g = load_graph_file(e.path().string());
      round_trip(g);
      ++count;
    }
  }
  std::cout << "round-tripped " << count << " example graph(s) from " << dir << "\n";
}

TEST(Json, DocumentedExampleLoads) {
  // The first JSON block of docs/graph-format.md is the format's example; keep it true.
  std::ifstream in(fs::path(SINTER_TESTS_DIR) / ".." / "docs" / "graph-format.md");
  ASSERT_TRUE(in) << "docs/graph-format.md is missing";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = doc.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  const Graph g = load_graph_json(doc.substr(begin + 8, end - begin - 8), "docs/graph-format.md");
  EXPECT_EQ(g.tensor(*g.find_tensor("wt")).strides, (Dims{1, 512}));
  EXPECT_EQ(g.tensor(*g.find_tensor("amax")).dims, Dims{});
  round_trip(g);
}
