// Which matmuls become column-parallel, found by graph structure (ShardOptions::detect). Only the
// column-parallel ones need finding: the sharding rules make a matmul that reads a value split
// along K row-parallel by themselves, so the attention output and MLP down projections follow.
//
// Structure rather than weight names, because names vary by exporter while the dataflow of a
// transformer does not:
//   attention: walk up from each of an sdpa's q, k and v through the ops that only move heads
//     around (reshape, permute, rope, cast, unary ops, and a concat with a KV cache that is a graph
//     input) to the matmul that projects them; its weight splits along N, i.e. by heads.
//   MLP: a matmul whose input 0 is computed from other matmuls through pointwise ops only (SwiGLU's
//     silu(x Wg) * (x Wu), GELU's gelu(x W1 + b1)) is a down projection; those other matmuls, all
//     reading the same input, are its up (and gate) projections and split along N.
// A matmul found neither way stays replicated (an LM head, say), which is always correct.
#include "shard/sharding.hpp"
#include "sinter/error.hpp"

namespace sinter::shard {
namespace {

[[noreturn]] void fail(const std::string& msg) {
  throw Error(ErrorCode::unsupported, "shard_tensor_parallel: " + msg);
}

bool is_input(const Graph& g, TensorId t) { return g.tensor(t).is_input; }

// A matmul whose weight (input 1) is a graph input.
bool is_projection(const Graph& g, const Node& n) { return n.op == OpKind::matmul && is_input(g, n.inputs[1]); }

// The projection that produces attention operand `t`, walking up through head-moving ops, or -1.
NodeId head_projection(const Graph& g, TensorId t) {
  for (;;) {
    const NodeId p = g.tensor(t).producer;
    if (p < 0) return -1;
    const Node& n = g.node(p);
    if (is_projection(g, n)) return p;
    const OpClass cls = op_info(n.op).cls;
    if (n.op == OpKind::reshape || n.op == OpKind::permute || n.op == OpKind::rope || cls == OpClass::unary ||
        (n.op == OpKind::cast && n.inputs.size() == 1)) {
      t = n.inputs[0];
    } else if (n.op == OpKind::concat) {
      // a KV cache (graph input) and this step's keys or values
      TensorId computed = -1;
      for (TensorId in : n.inputs) {
        if (is_input(g, in)) continue;
        if (computed >= 0) return -1;
        computed = in;
      }
      if (computed < 0) return -1;
      t = computed;
    } else {
      return -1;
    }
  }
}

// The matmuls that feed `t` through pointwise ops only, or nothing when some path from `t` up
// meets another kind of op before a projection (graph inputs and constants end a path).
std::vector<NodeId> pointwise_feeders(const Graph& g, TensorId t) {
  std::vector<NodeId> found;
  std::vector<TensorId> stack{t};
  std::vector<bool> seen(g.tensors().size(), false);
  while (!stack.empty()) {
    const TensorId x = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(x)]) continue;
    seen[static_cast<size_t>(x)] = true;
    const NodeId p = g.tensor(x).producer;
    if (p < 0) continue;
    const Node& n = g.node(p);
    if (is_projection(g, n)) {
      found.push_back(p);
    } else if (n.op == OpKind::constant) {
      continue;
    } else if (is_pointwise(n.op)) {
      for (TensorId in : n.inputs) stack.push_back(in);
    } else {
      return {};
    }
  }
  return found;
}

void check_heads(const Graph& g, const Node& sdpa, int world) {
  const int64_t h = g.tensor(sdpa.inputs[0]).dims[1], hkv = g.tensor(sdpa.inputs[1]).dims[1];
  if (h % world != 0) {
    fail("sdpa '" + sdpa.name + "' has " + std::to_string(h) + " query heads, which do not divide among " +
         std::to_string(world) + " ranks");
  }
  if (hkv % world != 0) {
    fail("sdpa '" + sdpa.name + "' has " + std::to_string(hkv) + " key/value heads (GQA, " + std::to_string(h) +
         " query heads), which do not divide among " + std::to_string(world) +
         " ranks; tensor parallelism splits both by rank");
  }
}

}  // namespace

std::set<TensorId> detect_column_weights(const Graph& g, int world) {
  std::set<TensorId> weights;
  static const char* const kOperand[] = {"q", "k", "v"};
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::sdpa) continue;
    check_heads(g, n, world);
    for (size_t i = 0; i < 3; ++i) {
      const NodeId p = head_projection(g, n.inputs[i]);
      if (p < 0) {
        fail("cannot find the projection (a matmul by a weight input) that computes " + std::string(kOperand[i]) +
             " '" + g.tensor(n.inputs[i]).name + "' of sdpa '" + n.name +
             "' through reshapes, permutes, rope and a KV-cache concat; name the weights in "
             "ShardOptions::column_parallel and set detect to false");
      }
      weights.insert(g.node(p).inputs[1]);
    }
  }
  for (const Node& n : g.nodes()) {
    if (!is_projection(g, n)) continue;
    const std::vector<NodeId> ups = pointwise_feeders(g, n.inputs[0]);
    if (ups.empty()) continue;
    const TensorId x = g.node(ups[0]).inputs[0];
    bool same_input = true;
    for (NodeId u : ups) same_input = same_input && g.node(u).inputs[0] == x;
    if (!same_input) continue;
    // a feeder that itself reads a pointwise result of projections is the row-parallel end of an
    // earlier pair (x W1 -> relu -> W2 -> W3: W2 is W1's partner, W3 stays whole)
    for (NodeId u : ups) {
      if (pointwise_feeders(g, g.node(u).inputs[0]).empty()) weights.insert(g.node(u).inputs[1]);
    }
  }
  return weights;
}

}  // namespace sinter::shard
