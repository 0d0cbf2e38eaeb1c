// A Sinter graph: tensors and the nodes that produce them, plus the builder API.
//
//   sinter::Graph g("mlp");
//   auto x = g.input("x", DType::bf16, {128, 512});
//   auto w = g.input("w", DType::bf16, {512, 2048});
//   auto b = g.input("b", DType::bf16, {2048});
//   auto y = g.gelu(g.add(g.matmul(x, w), b));
//   g.output(y, "y");
//
// Every builder call infers its outputs' dtype and shape at once and throws sinter::Error on an
// inconsistency. Graphs that come from files are assembled through add_node() with declared
// outputs and checked as a whole by validate().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sinter/dtype.hpp"
#include "sinter/ops.hpp"

namespace sinter {

using TensorId = int32_t;
using NodeId = int32_t;
using Dims = std::vector<int64_t>;

inline constexpr int kMaxRank = 8;

// A handle to a tensor of one graph. Cheap to copy.
struct Tensor {
  TensorId id = -1;
  bool valid() const { return id >= 0; }
  bool operator==(const Tensor&) const = default;
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  Dims dims;     // row-major logical shape; rank 0 is a scalar
  Dims strides;  // in elements; row-major unless the tensor is an input declared as a view
  NodeId producer = -1;  // -1 for graph inputs
  bool is_input = false;
  bool known = true;  // false while a file-loaded graph has not inferred this tensor yet
};

struct Node {
  std::string name;
  OpKind op = OpKind::identity;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  Attrs attrs;
};

// Row-major strides of `dims`.
Dims contiguous_strides(const Dims& dims);
int64_t num_elements(const Dims& dims);
// "[2, 3, 4]"
std::string dims_to_string(const Dims& dims);
// The numpy broadcast of two shapes, or nullopt when they do not broadcast.
std::optional<Dims> broadcast_dims(const Dims& a, const Dims& b);

class Graph {
 public:
  explicit Graph(std::string name = "graph");

  // ---- inspection --------------------------------------------------------------------------
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<TensorId>& inputs() const { return inputs_; }
  const std::vector<TensorId>& outputs() const { return outputs_; }
  const TensorInfo& tensor(Tensor t) const;
  const TensorInfo& tensor(TensorId id) const;
  const Node& node(NodeId id) const;
  std::optional<Tensor> find_tensor(std::string_view name) const;
  std::optional<NodeId> find_node(std::string_view name) const;
  // Node ids in an order where every producer comes before its consumers. Throws on a cycle.
  std::vector<NodeId> topological_order() const;
  // For each tensor, the nodes that read it.
  std::vector<std::vector<NodeId>> consumers() const;

  // Full check: names, references, topology (cycles), per-node shape and dtype inference against
  // the declared outputs, graph outputs that are produced, inputs that are read. Fills in the
  // dtype and shape of outputs that a file left undeclared. Throws sinter::Error(invalid_graph).
  void validate();

  // ---- building ----------------------------------------------------------------------------
  // A graph input. `strides` (in elements) make it a view, e.g. a transposed weight; empty means
  // row-major.
  Tensor input(const std::string& name, DType dtype, const Dims& dims, const Dims& strides = {});
  // Marks `t` as a graph output, renaming it first when `name` is given.
  void output(Tensor t, const std::string& name = "");
  void rename(Tensor t, const std::string& name);

  // Low-level: adds a node whose inputs exist. With infer = true the outputs are inferred now and
  // created with fresh names (or `output_names`); this is what every builder call uses.
  std::vector<Tensor> add_node(OpKind op, const std::vector<Tensor>& inputs, Attrs attrs,
                               const std::string& node_name = "",
                               const std::vector<std::string>& output_names = {});
  // Low-level for loaders: declares a tensor whose producer will be attached later, with an
  // optional declared type. validate() infers and checks it.
  Tensor declare_tensor(const std::string& name, std::optional<DType> dtype,
                        std::optional<Dims> dims);
  // Low-level for loaders: adds a node over already declared tensors, inferring nothing.
  NodeId add_node_declared(OpKind op, const std::string& node_name,
                           const std::vector<TensorId>& inputs,
                           const std::vector<TensorId>& outputs, Attrs attrs);

  // anchors
  Tensor matmul(Tensor a, Tensor b, MatmulAttrs attrs = {});
  Tensor conv2d(Tensor x, Tensor w, Conv2dAttrs attrs = {});
  struct SdpaResult {
    Tensor o;
    Tensor stats;  // valid only when emit_stats was set
  };
  SdpaResult sdpa(Tensor q, Tensor k, Tensor v, SdpaAttrs attrs = {},
                  std::optional<Tensor> bias = std::nullopt);

  // unary pointwise
  Tensor unary(OpKind op, Tensor x);
  Tensor identity(Tensor x) { return unary(OpKind::identity, x); }
  Tensor relu(Tensor x) { return unary(OpKind::relu, x); }
  Tensor gelu(Tensor x) { return unary(OpKind::gelu, x); }
  Tensor gelu_tanh(Tensor x) { return unary(OpKind::gelu_tanh, x); }
  Tensor silu(Tensor x) { return unary(OpKind::silu, x); }
  Tensor sigmoid(Tensor x) { return unary(OpKind::sigmoid, x); }
  Tensor tanh(Tensor x) { return unary(OpKind::tanh, x); }
  Tensor exp(Tensor x) { return unary(OpKind::exp, x); }
  Tensor log(Tensor x) { return unary(OpKind::log, x); }
  Tensor sqrt(Tensor x) { return unary(OpKind::sqrt, x); }
  Tensor rsqrt(Tensor x) { return unary(OpKind::rsqrt, x); }
  Tensor abs(Tensor x) { return unary(OpKind::abs, x); }
  Tensor neg(Tensor x) { return unary(OpKind::neg, x); }
  Tensor reciprocal(Tensor x) { return unary(OpKind::reciprocal, x); }
  Tensor square(Tensor x) { return unary(OpKind::square, x); }

  // binary pointwise with numpy broadcasting; the double overloads make a scalar constant of the
  // other operand's dtype
  Tensor binary(OpKind op, Tensor a, Tensor b);
  Tensor add(Tensor a, Tensor b) { return binary(OpKind::add, a, b); }
  Tensor sub(Tensor a, Tensor b) { return binary(OpKind::sub, a, b); }
  Tensor mul(Tensor a, Tensor b) { return binary(OpKind::mul, a, b); }
  Tensor div(Tensor a, Tensor b) { return binary(OpKind::div, a, b); }
  Tensor max(Tensor a, Tensor b) { return binary(OpKind::max, a, b); }
  Tensor min(Tensor a, Tensor b) { return binary(OpKind::min, a, b); }
  Tensor pow(Tensor a, Tensor b) { return binary(OpKind::pow, a, b); }
  Tensor add(Tensor a, double b) { return add(a, scalar_like(b, a)); }
  Tensor sub(Tensor a, double b) { return sub(a, scalar_like(b, a)); }
  Tensor mul(Tensor a, double b) { return mul(a, scalar_like(b, a)); }
  Tensor div(Tensor a, double b) { return div(a, scalar_like(b, a)); }
  Tensor max(Tensor a, double b) { return max(a, scalar_like(b, a)); }
  Tensor min(Tensor a, double b) { return min(a, scalar_like(b, a)); }
  Tensor pow(Tensor a, double b) { return pow(a, scalar_like(b, a)); }
  Tensor compare(OpKind op, Tensor a, Tensor b);
  Tensor eq(Tensor a, Tensor b) { return compare(OpKind::eq, a, b); }
  Tensor ne(Tensor a, Tensor b) { return compare(OpKind::ne, a, b); }
  Tensor lt(Tensor a, Tensor b) { return compare(OpKind::lt, a, b); }
  Tensor le(Tensor a, Tensor b) { return compare(OpKind::le, a, b); }
  Tensor gt(Tensor a, Tensor b) { return compare(OpKind::gt, a, b); }
  Tensor ge(Tensor a, Tensor b) { return compare(OpKind::ge, a, b); }
  Tensor select(Tensor cond, Tensor a, Tensor b);
  Tensor scalar(double value, DType dtype);
  // cast(x) or, with a scale tensor, round(x * scale) (e.g. to fp8)
  Tensor cast(Tensor x, DType dtype, std::optional<Tensor> scale = std::nullopt);

  // reductions; negative axes count from the end; no axes means all axes
  Tensor reduce(OpKind op, Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false,
                std::optional<DType> out_dtype = std::nullopt);
  Tensor sum(Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false) {
    return reduce(OpKind::reduce_sum, x, std::move(axes), keepdim);
  }
  Tensor mean(Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false) {
    return reduce(OpKind::reduce_mean, x, std::move(axes), keepdim);
  }
  Tensor reduce_max(Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false) {
    return reduce(OpKind::reduce_max, x, std::move(axes), keepdim);
  }
  Tensor reduce_min(Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false) {
    return reduce(OpKind::reduce_min, x, std::move(axes), keepdim);
  }
  Tensor amax(Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false) {
    return reduce(OpKind::reduce_amax, x, std::move(axes), keepdim);
  }

  // index of the first maximum (minimum) along `axis`, as i64; NaN counts as the maximum
  // (minimum), as in torch.argmax. Negative axes count from the end.
  Tensor arg_reduce(OpKind op, Tensor x, int64_t axis, bool keepdim = false);
  Tensor argmax(Tensor x, int64_t axis, bool keepdim = false) {
    return arg_reduce(OpKind::argmax, x, axis, keepdim);
  }
  Tensor argmin(Tensor x, int64_t axis, bool keepdim = false) {
    return arg_reduce(OpKind::argmin, x, axis, keepdim);
  }

  // row-wise, last axis
  Tensor softmax(Tensor x);
  Tensor layernorm(Tensor x, Tensor weight, std::optional<Tensor> bias = std::nullopt,
                   double epsilon = 1e-5);
  Tensor rmsnorm(Tensor x, Tensor weight, std::optional<Tensor> bias = std::nullopt,
                 double epsilon = 1e-6);
  Tensor rope(Tensor x, Tensor cos, Tensor sin, bool interleaved = false);

  // layout
  Tensor reshape(Tensor x, Dims dims);  // one entry may be -1
  Tensor permute(Tensor x, std::vector<int64_t> perm);
  Tensor transpose(Tensor x, int64_t axis0, int64_t axis1);
  // Python-style ranges over `axes` (all axes when empty); negative and out-of-range bounds clamp
  // as in numpy.
  Tensor slice(Tensor x, std::vector<int64_t> axes, std::vector<int64_t> starts,
               std::vector<int64_t> ends, std::vector<int64_t> steps = {});
  Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
  // x's slices along `axis` (negative counts from the end) picked by the integer `indices`
  // (GatherAttrs: numpy.take; an embedding lookup is gather(table, token_ids, 0)).
  Tensor gather(Tensor x, Tensor indices, int64_t axis = 0);

  // collectives among the `world` ranks of the group named `group` (CollectiveAttrs); negative
  // axes count from the end. A graph with collectives of world > 1 is one rank's program: run the
  // ranks' graphs together with run_reference_ranks (sinter/reference.hpp).
  Tensor all_reduce(Tensor x, const std::string& group, int64_t world,
                    CollectiveReduce reduce = CollectiveReduce::sum);
  Tensor all_gather(Tensor x, int64_t axis, const std::string& group, int64_t world);
  Tensor reduce_scatter(Tensor x, int64_t axis, const std::string& group, int64_t world,
                        CollectiveReduce reduce = CollectiveReduce::sum);

 private:
  Tensor scalar_like(double value, Tensor like);
  std::string fresh_name(std::string_view base);
  void check_tensor(Tensor t, std::string_view what) const;
  void check_name_free(const std::string& name) const;

  std::string name_;
  std::vector<TensorInfo> tensors_;
  std::vector<Node> nodes_;
  std::vector<TensorId> inputs_;
  std::vector<TensorId> outputs_;
  // What a file declared for tensors made by declare_tensor(), indexed by tensor id; validate()
  // checks the inferred type against it.
  struct DeclaredType {
    std::optional<DType> dtype;
    std::optional<Dims> dims;
  };
  std::vector<DeclaredType> declared_;
  // Name lookups (files of thousands of nodes resolve names in linear time overall).
  std::unordered_map<std::string, TensorId> tensor_index_;
  std::unordered_map<std::string, NodeId> node_index_;
  int64_t name_counter_ = 0;
};

// Output types that `node` must produce, given its inputs' (known) types. Throws
// sinter::Error(invalid_graph) naming the node and tensor on any inconsistency. Used by the
// builder and by validate().
struct TensorType {
  DType dtype;
  Dims dims;
};
std::vector<TensorType> infer_node(const Graph& g, const Node& node);

// A structural hash: ops, attributes, dtypes and topology, with or without dims and strides.
// Names do not count. Two graphs that differ only in shapes share the shapeless hash.
uint64_t structural_hash(const Graph& g, bool with_shapes);

// Work and traffic estimates for `sinter check`.
struct NodeCost {
  double flops = 0;
  double bytes = 0;  // its inputs read once and outputs written once
  // Collectives: the bytes each rank sends to its peers under the ring algorithm (all_reduce
  // 2 (W-1)/W of the tensor, all_gather (W-1)/W of its output, reduce_scatter (W-1)/W of its
  // input); 0 for every other op and for world 1.
  double comm_bytes = 0;
};
NodeCost node_cost(const Graph& g, const Node& n);
// FLOPs of every node; minimum bytes = graph inputs read once + graph outputs written once (of an
// input only gathers read, such as an embedding table, the slices they pick).
struct GraphCost {
  double flops = 0;
  double min_bytes = 0;
  double comm_bytes = 0;  // the sum of every collective's comm_bytes
};
GraphCost graph_cost(const Graph& g);

}  // namespace sinter
