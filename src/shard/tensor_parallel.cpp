// shard_tensor_parallel: the column-parallel weights (named, or found by detect.cpp) are split
// along N; the sharding rules (rules.cpp) carry the splits through the graph in topological order;
// then the rank graph is rebuilt with the builder, which infers every shard's shape again (so a
// rule that got a shape wrong fails there, not at run time), with an all_reduce(sum) after each
// matmul that leaves partial sums.
#include <set>

#include "shard/sharding.hpp"
#include "sinter/error.hpp"
#include "sinter/shard.hpp"

namespace sinter {
namespace {

using shard::Sharding;

[[noreturn]] void fail(ErrorCode code, const std::string& msg) {
  throw Error(code, "shard_tensor_parallel: " + msg);
}

// Every tensor's sharding and every node's attributes on a rank.
struct ShardPlan {
  std::vector<Sharding> tensors;
  std::vector<Attrs> attrs;  // by node
};

ShardPlan plan_shards(const Graph& g, int world, const std::set<TensorId>& column_weights) {
  shard::ShardState s(g, world);
  const auto cons = g.consumers();
  for (TensorId w : column_weights) {
    const TensorInfo& t = g.tensor(w);
    bool is_weight = !cons[w].empty();
    for (NodeId c : cons[w]) {
      const Node& n = g.node(c);
      is_weight = is_weight && n.op == OpKind::matmul && n.inputs[1] == w && n.inputs[0] != w;
    }
    if (!is_weight) {
      fail(ErrorCode::invalid_argument, "'" + t.name + "' is named column-parallel but is not read only as the "
                                        "second operand (the weight) of matmuls");
    }
    const auto axis = static_cast<int64_t>(t.dims.size()) - 1;
    if (t.dims.back() % world != 0) {
      fail(ErrorCode::unsupported, "weight '" + t.name + "' " + dims_to_string(t.dims) + " has N=" +
                                       std::to_string(t.dims.back()) + " columns, which do not divide among " +
                                       std::to_string(world) + " ranks");
    }
    s.set(w, Sharding::split(axis));
  }
  ShardPlan plan;
  plan.attrs.resize(g.nodes().size());
  std::set<TensorId> partial;
  for (NodeId nid : g.topological_order()) {
    const Node& n = g.node(nid);
    shard::NodeShard ns = shard::shard_node(s, n);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      // A partial sum is completed at once by the all_reduce inserted after its node: its readers
      // (and the graph's outputs) see the replicated sum under the same name.
      if (ns.outputs[i].kind == Sharding::Kind::partial) {
        partial.insert(n.outputs[i]);
        ns.outputs[i] = Sharding::replicated();
      }
      s.set(n.outputs[i], ns.outputs[i]);
    }
    plan.attrs[static_cast<size_t>(nid)] = std::move(ns.attrs);
  }
  for (size_t t = 0; t < g.tensors().size(); ++t) {
    const auto id = static_cast<TensorId>(t);
    const Sharding sh = partial.count(id) ? Sharding::partial() : s.of(id);
    plan.tensors.push_back(sh.kind == Sharding::Kind::unset ? Sharding::replicated() : sh);
  }
  return plan;
}

// `base`, or `base.2`, `base.3`, ... : the first not in `taken`, which it joins.
std::string fresh_name(std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int i = 2; taken.count(name); ++i) name = base + "." + std::to_string(i);
  taken.insert(name);
  return name;
}

Graph build_rank_graph(const Graph& g, int world, const ShardPlan& plan, const std::string& group) {
  Graph r(g.name() + "_tp" + std::to_string(world));
  std::vector<Tensor> map(g.tensors().size());
  for (TensorId id : g.inputs()) {
    const TensorInfo& t = g.tensor(id);
    const Sharding sh = plan.tensors[static_cast<size_t>(id)];
    if (sh.is_split()) {
      Dims dims = t.dims;
      dims[static_cast<size_t>(sh.axis)] /= world;
      map[static_cast<size_t>(id)] = r.input(t.name, t.dtype, dims);  // a shard is a fresh contiguous tensor
    } else {
      const bool view = t.strides != contiguous_strides(t.dims);
      map[static_cast<size_t>(id)] = r.input(t.name, t.dtype, t.dims, view ? t.strides : Dims{});
    }
  }
  // The inserted tensors and nodes must not take a name that a later original node uses.
  std::set<std::string> tensor_names, node_names;
  for (const TensorInfo& t : g.tensors()) tensor_names.insert(t.name);
  for (const Node& n : g.nodes()) node_names.insert(n.name);
  for (NodeId nid : g.topological_order()) {
    const Node& n = g.node(nid);
    std::vector<Tensor> ins;
    for (TensorId t : n.inputs) ins.push_back(map[static_cast<size_t>(t)]);
    std::vector<std::string> out_names;
    const bool partial = plan.tensors[static_cast<size_t>(n.outputs[0])].kind == Sharding::Kind::partial;
    for (TensorId t : n.outputs) {
      out_names.push_back(partial ? fresh_name(tensor_names, g.tensor(t).name + ".partial") : g.tensor(t).name);
    }
    std::vector<Tensor> outs = r.add_node(n.op, ins, plan.attrs[static_cast<size_t>(nid)], n.name, out_names);
    if (partial) {
      const std::string node_name = fresh_name(node_names, n.name + ".all_reduce");
      outs = r.add_node(OpKind::all_reduce, {outs[0]}, CollectiveAttrs{group, world, CollectiveReduce::sum, 0},
                        node_name, {g.tensor(n.outputs[0]).name});
    }
    for (size_t i = 0; i < outs.size(); ++i) map[static_cast<size_t>(n.outputs[i])] = outs[i];
  }
  for (TensorId out : g.outputs()) r.output(map[static_cast<size_t>(out)]);
  return r;
}

}  // namespace

std::vector<Graph> shard_tensor_parallel(const Graph& graph, int world, const ShardOptions& options) {
  if (world < 1 || world > kMaxWorld) {
    fail(ErrorCode::invalid_argument, "world " + std::to_string(world) + " must be in [1, " +
                                          std::to_string(kMaxWorld) + "]");
  }
  if (options.group.empty()) fail(ErrorCode::invalid_argument, "the group name is empty");
  Graph g = graph;
  g.validate();
  std::set<TensorId> columns;
  for (const std::string& name : options.column_parallel) {
    const auto t = g.find_tensor(name);
    if (!t || !g.tensor(*t).is_input) {
      fail(ErrorCode::invalid_argument, "column_parallel names '" + name + "', which is not an input of graph '" +
                                            g.name() + "'");
    }
    columns.insert(t->id);
  }
  if (world == 1) return {g};  // one rank holds everything: nothing to split or exchange
  if (options.detect) {
    const std::set<TensorId> found = shard::detect_column_weights(g, world);
    columns.insert(found.begin(), found.end());
  }
  const ShardPlan plan = plan_shards(g, world, columns);
  Graph rank = build_rank_graph(g, world, plan, options.group);
  rank.validate();
  // Every rank runs the same program on its own shards (the shard values differ, not the graph).
  return std::vector<Graph>(static_cast<size_t>(world), rank);
}

}  // namespace sinter
