// Graph storage and the builder API. Every builder call goes through add_node(), which infers the
// outputs at once, so a graph built in C++ is valid at every step.
#include "sinter/graph.hpp"

#include <algorithm>
#include <sstream>

#include "sinter/error.hpp"

namespace sinter {

Dims contiguous_strides(const Dims& dims) {
  Dims s(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

int64_t num_elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string dims_to_string(const Dims& dims) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
  os << ']';
  return os.str();
}

std::optional<Dims> broadcast_dims(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Graph::Graph(std::string name) : name_(std::move(name)) {}

const TensorInfo& Graph::tensor(Tensor t) const { return tensor(t.id); }

const TensorInfo& Graph::tensor(TensorId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tensors_.size()) {
    throw Error(ErrorCode::invalid_argument, "tensor id " + std::to_string(id) +
                                                 " does not belong to graph '" + name_ + "'");
  }
  return tensors_[id];
}

const Node& Graph::node(NodeId id) const {
  if (id < 0 || static_cast<size_t>(id) >= nodes_.size()) {
    throw Error(ErrorCode::invalid_argument, "node id " + std::to_string(id) +
                                                 " does not belong to graph '" + name_ + "'");
  }
  return nodes_[id];
}

std::optional<Tensor> Graph::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  if (it == tensor_index_.end()) return std::nullopt;
  return Tensor{it->second};
}

std::optional<NodeId> Graph::find_node(std::string_view name) const {
  auto it = node_index_.find(std::string(name));
  if (it == node_index_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::vector<NodeId>> Graph::consumers() const {
  std::vector<std::vector<NodeId>> out(tensors_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (TensorId t : nodes_[n].inputs) {
      auto& list = out[t];
      if (list.empty() || list.back() != static_cast<NodeId>(n)) list.push_back(static_cast<NodeId>(n));
    }
  }
  return out;
}

std::vector<NodeId> Graph::topological_order() const {
  // Kahn's algorithm over node -> node edges, taking the lowest ready id first so that the order
  // is deterministic and equals insertion order for builder-made graphs.
  const auto cons = consumers();
  std::vector<int> pending(nodes_.size(), 0);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (TensorId t : nodes_[n].inputs) {
      if (tensors_[t].producer >= 0) ++pending[n];
    }
  }
  std::vector<NodeId> ready, order;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (pending[n] == 0) ready.push_back(static_cast<NodeId>(n));
  }
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    const NodeId n = *it;
    ready.erase(it);
    order.push_back(n);
    for (TensorId t : nodes_[n].outputs) {
      for (NodeId c : cons[t]) {
        for (TensorId in : nodes_[c].inputs) {
          if (in == t && --pending[c] == 0) ready.push_back(c);
        }
      }
    }
  }
  if (order.size() != nodes_.size()) {
    std::vector<bool> done(nodes_.size(), false);
    for (NodeId n : order) done[n] = true;
    std::string stuck;
    size_t count = 0;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (!done[n]) stuck += (count++ == 0 ? "'" : ", '") + nodes_[n].name + "'";
    }
    throw Error(ErrorCode::invalid_graph,
                "graph '" + name_ + "' has a cycle: " +
                    (count == 1 ? "node " + stuck + " reads its own output, so it cannot run"
                                : "nodes " + stuck + " depend on each other's outputs, so none of them can run first"));
  }
  return order;
}

std::string Graph::fresh_name(std::string_view base) {
  for (;;) {
    std::string candidate = std::string(base) + std::to_string(name_counter_++);
    if (!find_tensor(candidate) && !find_node(candidate)) return candidate;
  }
}

void Graph::check_name_free(const std::string& name) const {
  if (name.empty()) throw Error(ErrorCode::invalid_argument, "a tensor name must not be empty");
  if (find_tensor(name)) {
    throw Error(ErrorCode::invalid_argument,
                "graph '" + name_ + "' already has a tensor named '" + name + "'");
  }
}

void Graph::check_tensor(Tensor t, std::string_view what) const {
  if (t.id < 0 || static_cast<size_t>(t.id) >= tensors_.size()) {
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": tensor handle " + std::to_string(t.id) +
                    " does not belong to graph '" + name_ + "'");
  }
}

Tensor Graph::input(const std::string& name, DType dtype, const Dims& dims, const Dims& strides) {
  check_name_free(name);
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    throw Error(ErrorCode::invalid_graph, "input '" + name + "' has rank " +
                                              std::to_string(dims.size()) + "; at most " +
                                              std::to_string(kMaxRank) + " is supported");
  }
  for (int64_t d : dims) {
    if (d < 1) {
      throw Error(ErrorCode::invalid_graph, "input '" + name + "' has dims " +
                                                dims_to_string(dims) +
                                                "; every dimension must be >= 1");
    }
  }
  if (!strides.empty()) {
    if (strides.size() != dims.size()) {
      throw Error(ErrorCode::invalid_graph,
                  "input '" + name + "' has strides " + dims_to_string(strides) +
                      " of rank " + std::to_string(strides.size()) + " but dims " +
                      dims_to_string(dims) + " of rank " + std::to_string(dims.size()));
    }
    for (int64_t s : strides) {
      if (s < 0) {
        throw Error(ErrorCode::invalid_graph, "input '" + name + "' has a negative stride in " +
                                                  dims_to_string(strides));
      }
    }
  }
  TensorInfo t;
  t.name = name;
  t.dtype = dtype;
  t.dims = dims;
  t.strides = strides.empty() ? contiguous_strides(dims) : strides;
  t.is_input = true;
  tensor_index_.emplace(t.name, static_cast<TensorId>(tensors_.size()));
  tensors_.push_back(std::move(t));
  inputs_.push_back(static_cast<TensorId>(tensors_.size() - 1));
  return Tensor{static_cast<TensorId>(tensors_.size() - 1)};
}

void Graph::rename(Tensor t, const std::string& name) {
  check_tensor(t, "rename");
  if (tensors_[t.id].name == name) return;
  check_name_free(name);
  tensor_index_.erase(tensors_[t.id].name);
  tensor_index_.emplace(name, t.id);
  tensors_[t.id].name = name;
}

void Graph::output(Tensor t, const std::string& name) {
  check_tensor(t, "output");
  if (!name.empty()) rename(t, name);
  if (std::find(outputs_.begin(), outputs_.end(), t.id) == outputs_.end()) {
    outputs_.push_back(t.id);
  }
}

std::vector<Tensor> Graph::add_node(OpKind op, const std::vector<Tensor>& inputs, Attrs attrs,
                                    const std::string& node_name,
                                    const std::vector<std::string>& output_names) {
  Node n;
  n.op = op;
  n.name = node_name.empty() ? fresh_name(to_string(op)) : node_name;
  if (find_node(n.name)) {
    throw Error(ErrorCode::invalid_argument,
                "graph '" + name_ + "' already has a node named '" + n.name + "'");
  }
  for (Tensor t : inputs) {
    check_tensor(t, "node '" + n.name + "'");
    n.inputs.push_back(t.id);
  }
  n.attrs = std::move(attrs);
  const std::vector<TensorType> types = infer_node(*this, n);
  if (!output_names.empty() && output_names.size() != types.size()) {
    throw Error(ErrorCode::invalid_argument,
                "node '" + n.name + "' has " + std::to_string(types.size()) + " outputs but " +
                    std::to_string(output_names.size()) + " names were given");
  }
  const auto id = static_cast<NodeId>(nodes_.size());
  std::vector<Tensor> out;
  for (size_t i = 0; i < types.size(); ++i) {
    TensorInfo t;
    if (!output_names.empty()) {
      check_name_free(output_names[i]);
      t.name = output_names[i];
    } else {
      t.name = fresh_name(to_string(op));
    }
    t.dtype = types[i].dtype;
    t.dims = types[i].dims;
    t.strides = contiguous_strides(t.dims);
    t.producer = id;
    tensor_index_.emplace(t.name, static_cast<TensorId>(tensors_.size()));
    tensors_.push_back(std::move(t));
    n.outputs.push_back(static_cast<TensorId>(tensors_.size() - 1));
    out.push_back(Tensor{static_cast<TensorId>(tensors_.size() - 1)});
  }
  node_index_.emplace(n.name, id);
  nodes_.push_back(std::move(n));
  return out;
}

Tensor Graph::declare_tensor(const std::string& name, std::optional<DType> dtype,
                             std::optional<Dims> dims) {
  check_name_free(name);
  TensorInfo t;
  t.name = name;
  t.known = false;
  if (dtype) t.dtype = *dtype;
  if (dims) t.dims = *dims;
  // A declared type is remembered so validate() can compare it with the inferred one.
  t.strides = dims ? contiguous_strides(*dims) : Dims{};
  tensor_index_.emplace(t.name, static_cast<TensorId>(tensors_.size()));
  tensors_.push_back(std::move(t));
  declared_.resize(tensors_.size());
  declared_.back() = DeclaredType{dtype, dims};
  return Tensor{static_cast<TensorId>(tensors_.size() - 1)};
}

NodeId Graph::add_node_declared(OpKind op, const std::string& node_name,
                                const std::vector<TensorId>& inputs,
                                const std::vector<TensorId>& outputs, Attrs attrs) {
  if (node_name.empty()) throw Error(ErrorCode::invalid_argument, "a node name must not be empty");
  if (find_node(node_name)) {
    throw Error(ErrorCode::invalid_graph,
                "graph '" + name_ + "' already has a node named '" + node_name + "'");
  }
  Node n;
  n.op = op;
  n.name = node_name;
  n.inputs = inputs;
  n.outputs = outputs;
  n.attrs = std::move(attrs);
  const auto id = static_cast<NodeId>(nodes_.size());
  for (TensorId t : outputs) {
    TensorInfo& info = tensors_.at(t);
    if (info.is_input) {
      throw Error(ErrorCode::invalid_graph, "node '" + node_name + "' writes tensor '" +
                                                info.name + "', which is a graph input");
    }
    if (info.producer >= 0) {
      throw Error(ErrorCode::invalid_graph,
                  "tensor '" + info.name + "' is produced by two nodes: '" +
                      nodes_[info.producer].name + "' and '" + node_name + "'");
    }
    info.producer = id;
  }
  node_index_.emplace(n.name, id);
  nodes_.push_back(std::move(n));
  return id;
}

// ---- builder conveniences ---------------------------------------------------------------------

Tensor Graph::matmul(Tensor a, Tensor b, MatmulAttrs attrs) {
  return add_node(OpKind::matmul, {a, b}, attrs)[0];
}

Tensor Graph::conv2d(Tensor x, Tensor w, Conv2dAttrs attrs) {
  return add_node(OpKind::conv2d, {x, w}, attrs)[0];
}

Graph::SdpaResult Graph::sdpa(Tensor q, Tensor k, Tensor v, SdpaAttrs attrs,
                              std::optional<Tensor> bias) {
  attrs.has_bias = bias.has_value();
  std::vector<Tensor> ins{q, k, v};
  if (bias) ins.push_back(*bias);
  auto out = add_node(OpKind::sdpa, ins, attrs);
  SdpaResult r{out[0], Tensor{}};
  if (out.size() > 1) r.stats = out[1];
  return r;
}

Tensor Graph::unary(OpKind op, Tensor x) {
  if (op_info(op).cls != OpClass::unary) {
    throw Error(ErrorCode::invalid_argument, std::string(to_string(op)) + " is not a unary op");
  }
  return add_node(op, {x}, std::monostate{})[0];
}

Tensor Graph::binary(OpKind op, Tensor a, Tensor b) {
  if (op_info(op).cls != OpClass::binary) {
    throw Error(ErrorCode::invalid_argument, std::string(to_string(op)) + " is not a binary op");
  }
  return add_node(op, {a, b}, std::monostate{})[0];
}

Tensor Graph::compare(OpKind op, Tensor a, Tensor b) {
  if (op_info(op).cls != OpClass::compare) {
    throw Error(ErrorCode::invalid_argument, std::string(to_string(op)) + " is not a comparison");
  }
  return add_node(op, {a, b}, std::monostate{})[0];
}

Tensor Graph::select(Tensor cond, Tensor a, Tensor b) {
  return add_node(OpKind::select, {cond, a, b}, std::monostate{})[0];
}

Tensor Graph::scalar(double value, DType dtype) {
  return add_node(OpKind::constant, {}, ConstantAttrs{value, dtype})[0];
}

Tensor Graph::scalar_like(double value, Tensor like) {
  check_tensor(like, "scalar operand");
  return scalar(value, tensors_[like.id].dtype);
}

Tensor Graph::cast(Tensor x, DType dtype, std::optional<Tensor> scale) {
  std::vector<Tensor> ins{x};
  if (scale) ins.push_back(*scale);
  return add_node(OpKind::cast, ins, CastAttrs{dtype})[0];
}

namespace {
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    throw Error(ErrorCode::invalid_graph, what + ": axis " + std::to_string(axis) +
                                              " is out of range for rank " + std::to_string(rank));
  }
  return a;
}
}  // namespace

Tensor Graph::reduce(OpKind op, Tensor x, std::vector<int64_t> axes, bool keepdim,
                     std::optional<DType> out_dtype) {
  check_tensor(x, "reduce");
  if (op_info(op).cls != OpClass::reduce) {
    throw Error(ErrorCode::invalid_argument, std::string(to_string(op)) + " is not a reduction");
  }
  const auto rank = static_cast<int64_t>(tensors_[x.id].dims.size());
  for (int64_t& a : axes) a = normalize_axis(a, rank, std::string(to_string(op)));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return add_node(op, {x}, ReduceAttrs{axes, keepdim, out_dtype})[0];
}

Tensor Graph::arg_reduce(OpKind op, Tensor x, int64_t axis, bool keepdim) {
  check_tensor(x, "arg_reduce");
  if (op_info(op).cls != OpClass::arg_reduce) {
    throw Error(ErrorCode::invalid_argument,
                std::string(to_string(op)) + " is not an index reduction (argmax, argmin)");
  }
  const auto rank = static_cast<int64_t>(tensors_[x.id].dims.size());
  return add_node(op, {x}, ArgReduceAttrs{normalize_axis(axis, rank, std::string(to_string(op))), keepdim})[0];
}

Tensor Graph::all_reduce(Tensor x, const std::string& group, int64_t world, CollectiveReduce reduce) {
  check_tensor(x, "all_reduce");
  return add_node(OpKind::all_reduce, {x}, CollectiveAttrs{group, world, reduce, 0})[0];
}

Tensor Graph::all_gather(Tensor x, int64_t axis, const std::string& group, int64_t world) {
  check_tensor(x, "all_gather");
  const auto rank = static_cast<int64_t>(tensors_[x.id].dims.size());
  return add_node(OpKind::all_gather, {x},
                  CollectiveAttrs{group, world, CollectiveReduce::sum, normalize_axis(axis, rank, "all_gather")})[0];
}

Tensor Graph::reduce_scatter(Tensor x, int64_t axis, const std::string& group, int64_t world,
                             CollectiveReduce reduce) {
  check_tensor(x, "reduce_scatter");
  const auto rank = static_cast<int64_t>(tensors_[x.id].dims.size());
  return add_node(OpKind::reduce_scatter, {x},
                  CollectiveAttrs{group, world, reduce, normalize_axis(axis, rank, "reduce_scatter")})[0];
}

Tensor Graph::softmax(Tensor x) { return add_node(OpKind::softmax, {x}, std::monostate{})[0]; }

Tensor Graph::layernorm(Tensor x, Tensor weight, std::optional<Tensor> bias, double epsilon) {
  std::vector<Tensor> ins{x, weight};
  if (bias) ins.push_back(*bias);
  return add_node(OpKind::layernorm, ins, NormAttrs{epsilon, bias.has_value()})[0];
}

Tensor Graph::rmsnorm(Tensor x, Tensor weight, std::optional<Tensor> bias, double epsilon) {
  std::vector<Tensor> ins{x, weight};
  if (bias) ins.push_back(*bias);
  return add_node(OpKind::rmsnorm, ins, NormAttrs{epsilon, bias.has_value()})[0];
}

Tensor Graph::rope(Tensor x, Tensor cos, Tensor sin, bool interleaved) {
  return add_node(OpKind::rope, {x, cos, sin}, RopeAttrs{interleaved})[0];
}

Tensor Graph::reshape(Tensor x, Dims dims) {
  check_tensor(x, "reshape");
  const int64_t total = num_elements(tensors_[x.id].dims);
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer_at >= 0) {
        throw Error(ErrorCode::invalid_graph,
                    "reshape to " + dims_to_string(dims) + ": only one dimension may be -1");
      }
      infer_at = static_cast<int>(i);
    } else {
      known *= dims[i];
    }
  }
  if (infer_at >= 0 && known > 0 && total % known == 0) dims[infer_at] = total / known;
  return add_node(OpKind::reshape, {x}, ReshapeAttrs{dims})[0];
}

Tensor Graph::permute(Tensor x, std::vector<int64_t> perm) {
  return add_node(OpKind::permute, {x}, PermuteAttrs{std::move(perm)})[0];
}

Tensor Graph::transpose(Tensor x, int64_t axis0, int64_t axis1) {
  check_tensor(x, "transpose");
  const auto rank = static_cast<int64_t>(tensors_[x.id].dims.size());
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[normalize_axis(axis0, rank, "transpose")],
            perm[normalize_axis(axis1, rank, "transpose")]);
  return permute(x, perm);
}

Tensor Graph::slice(Tensor x, std::vector<int64_t> axes, std::vector<int64_t> starts,
                    std::vector<int64_t> ends, std::vector<int64_t> steps) {
  check_tensor(x, "slice");
  const Dims& d = tensors_[x.id].dims;
  const auto rank = static_cast<int64_t>(d.size());
  if (axes.empty()) {
    for (int64_t i = 0; i < static_cast<int64_t>(starts.size()); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(axes.size(), 1);
  if (starts.size() != axes.size() || ends.size() != axes.size() || steps.size() != axes.size()) {
    throw Error(ErrorCode::invalid_graph,
                "slice: axes, starts, ends and steps must have the same length");
  }
  SliceAttrs at;
  at.starts.assign(rank, 0);
  at.ends = d;
  at.steps.assign(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = normalize_axis(axes[i], rank, "slice");
    auto clamp = [&](int64_t v) {
      if (v < 0) v += d[a];
      return std::clamp<int64_t>(v, 0, d[a]);
    };
    at.starts[a] = clamp(starts[i]);
    at.ends[a] = clamp(ends[i]);
    at.steps[a] = steps[i];
  }
  return add_node(OpKind::slice, {x}, at)[0];
}

Tensor Graph::gather(Tensor x, Tensor indices, int64_t axis) {
  check_tensor(x, "gather");
  const auto rank = static_cast<int64_t>(tensors_[x.id].dims.size());
  return add_node(OpKind::gather, {x, indices}, GatherAttrs{normalize_axis(axis, rank, "gather")})[0];
}

Tensor Graph::concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw Error(ErrorCode::invalid_graph, "concat needs at least one input");
  check_tensor(xs[0], "concat");
  const auto rank = static_cast<int64_t>(tensors_[xs[0].id].dims.size());
  return add_node(OpKind::concat, xs, ConcatAttrs{normalize_axis(axis, rank, "concat")})[0];
}

}  // namespace sinter
