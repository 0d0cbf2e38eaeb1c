// The CPU reference executor: checks the host inputs against the graph, runs the nodes in
// topological order on float64 RefTensors, and rounds every node output to its dtype exactly once,
// at the tensor boundary. Between nodes a tensor holds exactly the values its dtype can hold, so a
// bf16 intermediate loses precision here just as it does on the GPU. A collective among more than
// one rank stops the run (GraphRun::run_to_collective) until run_reference_ranks() has gathered
// every rank's input.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "ref/graph_run.hpp"
#include "ref/ops.hpp"
#include "ref/ref_tensor.hpp"
#include "sinter/error.hpp"
#include "sinter/reference.hpp"

namespace sinter {
namespace {

using ref::RefTensor;

std::string describe(DType t, const Dims& d) {
  return std::string(to_string(t)) + " " + dims_to_string(d);
}

// A graph loaded from a file has unknown tensor types until validate() infers them; running it
// before that would read garbage dims.
void check_types_known(const Graph& g) {
  for (const TensorInfo& t : g.tensors()) {
    if (!t.known) {
      throw Error(ErrorCode::invalid_argument,
                  "run_reference: tensor '" + t.name + "' of graph '" + g.name() +
                      "' has no inferred type; call Graph::validate() before running the graph");
    }
  }
}

void check_inputs(const Graph& g, const TensorMap& inputs) {
  for (TensorId id : g.inputs()) {
    const TensorInfo& info = g.tensor(id);
    auto it = inputs.find(info.name);
    if (it == inputs.end()) {
      std::string given;
      for (const auto& [name, t] : inputs) given += (given.empty() ? "'" : ", '") + name + "'";
      throw Error(ErrorCode::invalid_argument,
                  "run_reference: graph input '" + info.name + "' (expected " +
                      describe(info.dtype, info.dims) + ") is missing; found inputs: " +
                      (given.empty() ? "none" : given));
    }
    const HostTensor& t = it->second;
    if (t.dtype() != info.dtype || t.dims() != info.dims) {
      throw Error(ErrorCode::invalid_argument,
                  "run_reference: graph input '" + info.name + "' expects " +
                      describe(info.dtype, info.dims) + "; found " +
                      describe(t.dtype(), t.dims()));
    }
  }
}

// Computes one node's outputs, unrounded, from its inputs' values.
std::vector<RefTensor> run_node(const Graph& g, const Node& n,
                                const std::vector<const RefTensor*>& in) {
  const auto& a = n.attrs;
  auto opt = [&](size_t i) { return in.size() > i ? in[i] : nullptr; };
  switch (op_info(n.op).cls) {
    case OpClass::matmul: return {ref::matmul(*in[0], *in[1])};
    case OpClass::conv: return {ref::conv2d(*in[0], *in[1], std::get<Conv2dAttrs>(a))};
    case OpClass::sdpa: {
      const auto& at = std::get<SdpaAttrs>(a);
      const RefTensor* bias = at.has_bias ? in[3] : nullptr;
      const bool is_mask = bias && g.tensor(n.inputs[3]).dtype == DType::boolean;
      auto r = ref::sdpa(*in[0], *in[1], *in[2], bias, is_mask, at);
      if (at.emit_stats) return {std::move(r.o), std::move(r.stats)};
      return {std::move(r.o)};
    }
    case OpClass::unary: return {ref::unary(n.op, *in[0])};
    case OpClass::binary: return {ref::binary(n.op, *in[0], *in[1])};
    case OpClass::compare: return {ref::compare(n.op, *in[0], *in[1])};
    case OpClass::select: return {ref::select(*in[0], *in[1], *in[2])};
    case OpClass::constant: return {ref::constant(std::get<ConstantAttrs>(a))};
    case OpClass::cast: return {ref::cast(*in[0], opt(1))};
    case OpClass::reduce: return {ref::reduce(n.op, *in[0], std::get<ReduceAttrs>(a))};
    case OpClass::arg_reduce:
      return {ref::arg_reduce(n.op, *in[0], std::get<ArgReduceAttrs>(a))};
    case OpClass::softmax: return {ref::softmax(*in[0])};
    case OpClass::norm: {
      const auto& at = std::get<NormAttrs>(a);
      const RefTensor* bias = at.has_bias ? in[2] : nullptr;
      if (n.op == OpKind::layernorm) return {ref::layernorm(*in[0], *in[1], bias, at.epsilon)};
      return {ref::rmsnorm(*in[0], *in[1], bias, at.epsilon)};
    }
    case OpClass::rope: return {ref::rope(*in[0], *in[1], *in[2], std::get<RopeAttrs>(a))};
    case OpClass::layout:
      switch (n.op) {
        case OpKind::reshape: return {ref::reshape(*in[0], std::get<ReshapeAttrs>(a))};
        case OpKind::permute: return {ref::permute(*in[0], std::get<PermuteAttrs>(a))};
        case OpKind::slice: return {ref::slice(*in[0], std::get<SliceAttrs>(a))};
        case OpKind::concat: return {ref::concat(in, std::get<ConcatAttrs>(a))};
        default: break;
      }
      break;
    case OpClass::gather:
      return {ref::gather(*in[0], *in[1], std::get<GatherAttrs>(a), "gather '" + n.name + "'")};
    case OpClass::collective:
      // Only a group of one rank runs here (GraphRun stops at the others): the identity.
      if (std::get<CollectiveAttrs>(a).world == 1) return {*in[0]};
      break;
  }
  throw Error(ErrorCode::internal, "run_reference: node '" + n.name + "' (" +
                                       std::string(to_string(n.op)) + ") has no reference");
}

// A contiguous host tensor holding `t`'s values, which are already exact in `dtype`.
HostTensor to_host(const RefTensor& t, DType dtype) {
  HostTensor h(dtype, t.dims);
  const int64_t es = dtype_size(dtype);
  for (int64_t i = 0; i < t.numel(); ++i) encode_value(t[i], dtype, h.data() + i * es);
  return h;
}

// Each node's step under ReferenceOptions::fused_steps (a node in none is a step of its own).
std::vector<int> step_of_node(const Graph& g, const ReferenceOptions& opts) {
  std::vector<int> step(g.nodes().size(), -1);
  if (!opts.fused_steps.empty() && opts.round_intermediates) {
    throw Error(ErrorCode::invalid_argument,
                "run_reference: fused_steps describes the fused semantics; it needs round_intermediates = false "
                "(with true every tensor is rounded and the steps would change nothing)");
  }
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < g.nodes().size(); ++i) index.emplace(g.nodes()[i].name, i);
  int next = 0;
  for (const auto& names : opts.fused_steps) {
    for (const std::string& name : names) {
      const auto it = index.find(name);
      if (it == index.end()) {
        throw Error(ErrorCode::invalid_argument,
                    "run_reference: fused_steps names node '" + name + "', which graph '" + g.name() + "' lacks");
      }
      if (step[it->second] >= 0) {
        throw Error(ErrorCode::invalid_argument, "run_reference: fused_steps puts node '" + name + "' in steps " +
                                                     std::to_string(step[it->second]) + " and " +
                                                     std::to_string(next) + "; a node belongs to one step");
      }
      step[it->second] = next;
    }
    ++next;
  }
  for (int& s : step) {
    if (s < 0) s = next++;
  }
  return step;
}

// The node that computes each tensor (an input's entry is unused: inputs are never stored copies).
std::vector<NodeId> producer_of_tensor(const Graph& g) {
  std::vector<NodeId> producer(g.tensors().size(), NodeId{0});
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    for (TensorId t : g.nodes()[i].outputs) producer[t] = static_cast<NodeId>(i);
  }
  return producer;
}

// A collective's world and group, for messages.
std::string collective_text(const Node& n) {
  const auto& at = std::get<CollectiveAttrs>(n.attrs);
  return "node '" + n.name + "' (" + std::string(to_string(n.op)) + ") is a collective among the world=" +
         std::to_string(at.world) + " ranks of group '" + at.group + "'";
}

}  // namespace

namespace ref {

GraphRun::GraphRun(const Graph& g, const TensorMap& inputs, const ReferenceOptions& opts)
    : g_(g), opts_(opts) {
  check_types_known(g);
  check_inputs(g, inputs);
  order_ = g.topological_order();

  const auto& tensors = g.tensors();
  values_.resize(tensors.size());
  ready_.assign(tensors.size(), false);
  for (TensorId id : g.inputs()) {
    // The inputs' storage may be any view; values() reads it in logical row-major order.
    values_[id] = RefTensor(tensors[id].dims, inputs.at(tensors[id].name).values());
    ready_[id] = true;
  }

  // Without keep_intermediates a tensor is dropped after its last reader, so that float64 copies
  // of a large graph's activations do not all stay alive at once.
  keep_.assign(tensors.size(), opts.keep_intermediates);
  is_output_.assign(tensors.size(), false);
  for (TensorId id : g.outputs()) keep_[id] = is_output_[id] = true;
  reads_left_.assign(tensors.size(), 0);
  for (const Node& n : g.nodes()) {
    for (TensorId t : n.inputs) ++reads_left_[t];
  }
  step_ = step_of_node(g, opts);
  producer_ = producer_of_tensor(g);
  stored_.resize(tensors.size());
}

std::vector<const RefTensor*> GraphRun::inputs_of(NodeId nid) const {
  const auto& tensors = g_.tensors();
  const Node& n = g_.node(nid);
  std::vector<const RefTensor*> in;
  for (TensorId t : n.inputs) {
    if (!ready_[t]) {
      throw Error(ErrorCode::internal, "run_reference: node '" + n.name + "' reads tensor '" +
                                           tensors[t].name + "' before it is computed");
    }
    const bool through_memory = !stored_[t].data.empty() && step_[producer_[t]] != step_[nid];
    in.push_back(through_memory ? &stored_[t] : &values_[t]);
  }
  return in;
}

std::optional<NodeId> GraphRun::run_to_collective() {
  for (; next_ < order_.size(); ++next_) {
    const NodeId nid = order_[next_];
    const Node& n = g_.node(nid);
    if (op_info(n.op).cls == OpClass::collective && std::get<CollectiveAttrs>(n.attrs).world > 1) return nid;
    store_outputs(nid, run_node(g_, n, inputs_of(nid)));
  }
  return std::nullopt;
}

void GraphRun::finish_collective(NodeId nid, std::vector<RefTensor> outputs) {
  if (next_ >= order_.size() || order_[next_] != nid) {
    throw Error(ErrorCode::internal, "run_reference: node '" + g_.node(nid).name + "' is not the pending collective");
  }
  store_outputs(nid, std::move(outputs));
  ++next_;
}

void GraphRun::store_outputs(NodeId nid, std::vector<RefTensor> out) {
  const auto& tensors = g_.tensors();
  const Node& n = g_.node(nid);
  if (out.size() != n.outputs.size()) {
    throw Error(ErrorCode::internal,
                "run_reference: node '" + n.name + "' computed " + std::to_string(out.size()) +
                    " outputs; the graph lists " + std::to_string(n.outputs.size()));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const TensorId id = n.outputs[i];
    const TensorInfo& info = tensors[id];
    if (out[i].dims != info.dims) {
      throw Error(ErrorCode::internal, "run_reference: node '" + n.name + "' computed dims " +
                                           dims_to_string(out[i].dims) + " for tensor '" +
                                           info.name + "'; inference says " +
                                           dims_to_string(info.dims));
    }
    // The tensor boundary: the one place where values are rounded to the dtype.
    // Constants are rounded either way: a kernel reads them already in their dtype.
    // Under fused_steps a graph output is rounded where it is stored, not for its own step's readers.
    const bool rounds = opts_.round_intermediates || !is_float(info.dtype) || n.op == OpKind::cast ||
                        n.op == OpKind::constant || (is_output_[id] && opts_.fused_steps.empty());
    if (rounds) {
      for (double& v : out[i].data) v = round_to_dtype(v, info.dtype);
    } else if (!opts_.fused_steps.empty()) {
      stored_[id] = out[i];
      for (double& v : stored_[id].data) v = round_to_dtype(v, info.dtype);
    }
    values_[id] = std::move(out[i]);
    ready_[id] = true;
  }
  for (TensorId t : n.inputs) {
    if (--reads_left_[t] == 0 && !keep_[t]) values_[t] = stored_[t] = RefTensor();
  }
}

TensorMap GraphRun::results() const {
  const auto& tensors = g_.tensors();
  if (next_ < order_.size()) {
    throw Error(ErrorCode::internal, "run_reference: results asked for before node '" +
                                         g_.node(order_[next_]).name + "' has run");
  }
  TensorMap result;
  for (size_t id = 0; id < tensors.size(); ++id) {
    if (!keep_[id]) continue;
    if (!ready_[id]) {
      throw Error(ErrorCode::internal,
                  "run_reference: tensor '" + tensors[id].name + "' was never computed");
    }
    const RefTensor& v = stored_[id].data.empty() ? values_[id] : stored_[id];
    result.insert_or_assign(tensors[id].name, to_host(v, tensors[id].dtype));
  }
  return result;
}

}  // namespace ref

TensorMap run_reference(const Graph& g, const TensorMap& inputs, const ReferenceOptions& opts) {
  ref::GraphRun run(g, inputs, opts);
  if (const auto pending = run.run_to_collective()) {
    throw Error(ErrorCode::invalid_argument,
                "run_reference: " + collective_text(g.node(*pending)) +
                    "; run the ranks' graphs together with run_reference_ranks()");
  }
  return run.results();
}

}  // namespace sinter
