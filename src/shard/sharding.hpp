// Private to the tensor-parallel pass (src/shard/): how a tensor lies across the ranks, and the
// per-op rules that carry that from a node's inputs to its outputs.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter::shard {

struct Sharding {
  enum class Kind : uint8_t {
    unset,       // a graph input no node has constrained yet
    replicated,  // every rank holds all of it
    split,       // rank r holds the r-th of `world` contiguous parts along `axis`
    partial,     // every rank holds a term of it: the sum over ranks is the value
  };
  Kind kind = Kind::unset;
  int64_t axis = -1;  // split only

  static Sharding replicated() { return {Kind::replicated, -1}; }
  static Sharding split(int64_t axis) { return {Kind::split, axis}; }
  static Sharding partial() { return {Kind::partial, -1}; }
  bool is_split() const { return kind == Kind::split; }
  bool operator==(const Sharding&) const = default;
};
// "replicated", "split along axis 2", "a partial sum", "unconstrained"
std::string to_string(Sharding s);

// [[noreturn]] Error(unsupported) "shard_tensor_parallel: node 'n' (op): msg".
[[noreturn]] void fail_at(const Node& n, const std::string& msg);

// The sharding of every tensor of one graph, filled in topological order.
class ShardState {
 public:
  ShardState(const Graph& g, int world) : g_(g), world_(world), of_(g.tensors().size()) {}

  const Graph& graph() const { return g_; }
  int world() const { return world_; }
  Sharding of(TensorId t) const { return of_[static_cast<size_t>(t)]; }
  void set(TensorId t, Sharding s) { of_[static_cast<size_t>(t)] = s; }
  // Pins `t`, a graph input not constrained yet, to `want` (a split axis must divide by the
  // world), or checks that `t` already lies that way; `reader` names the node in messages.
  void require(TensorId t, Sharding want, const Node& reader);

 private:
  const Graph& g_;
  int world_;
  std::vector<Sharding> of_;
};

// What a node becomes on a rank: its outputs' shardings (a partial one is completed by an
// all_reduce the pass inserts) and its attributes there (a reshape's target or a slice's end with
// the split axis divided by the world; the others unchanged). Pins the unset graph inputs it reads.
struct NodeShard {
  std::vector<Sharding> outputs;
  Attrs attrs;
};
NodeShard shard_node(ShardState& s, const Node& n);

// The weights (graph inputs) of the matmuls that ShardOptions::detect makes column-parallel.
// Throws where an sdpa's heads do not divide by the world or its q, k, v have no projection.
std::set<TensorId> detect_column_weights(const Graph& g, int world);

}  // namespace sinter::shard
