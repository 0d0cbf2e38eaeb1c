// FLOP and byte estimates. FLOPs count a multiply-add as two; pointwise ops count one per output
// element, transcendental ones too (a convention, stated in `sinter check`). Attention counts only
// the query/key pairs that the causal mask leaves visible. Collectives count the bytes a rank sends
// under the ring algorithm, the usual yardstick of their cost (bus bandwidth).
#include <algorithm>

#include "sinter/graph.hpp"

namespace sinter {
namespace {

double tensor_bytes(const TensorInfo& t) {
  return static_cast<double>(num_elements(t.dims)) * static_cast<double>(dtype_size(t.dtype));
}

double visible_pairs(int64_t sq, int64_t skv, CausalMask causal) {
  if (causal == CausalMask::none) return static_cast<double>(sq) * static_cast<double>(skv);
  const int64_t shift = causal == CausalMask::bottom_right ? skv - sq : 0;
  double pairs = 0;
  for (int64_t i = 0; i < sq; ++i) {
    pairs += static_cast<double>(std::clamp<int64_t>(i + shift + 1, 0, skv));
  }
  return pairs;
}

// The bytes of graph input `t` that must be read: all of them, except for a tensor that only
// gathers read (an embedding table), of which only the picked slices are (at most the whole).
double input_read_bytes(const Graph& g, TensorId t) {
  const double whole = tensor_bytes(g.tensor(t));
  double picked = 0;
  for (const Node& n : g.nodes()) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] != t) continue;
      if (n.op != OpKind::gather || i != 0) return whole;
      picked += tensor_bytes(g.tensor(n.outputs[0]));
    }
  }
  return picked > 0 ? std::min(picked, whole) : whole;
}

}  // namespace

NodeCost node_cost(const Graph& g, const Node& n) {
  NodeCost c;
  for (TensorId t : n.inputs) c.bytes += tensor_bytes(g.tensor(t));
  for (TensorId t : n.outputs) c.bytes += tensor_bytes(g.tensor(t));
  const auto out_elems = [&] { return static_cast<double>(num_elements(g.tensor(n.outputs[0]).dims)); };
  const auto in_elems = [&] { return static_cast<double>(num_elements(g.tensor(n.inputs[0]).dims)); };
  switch (op_info(n.op).cls) {
    case OpClass::matmul: {
      const Dims& a = g.tensor(n.inputs[0]).dims;
      c.flops = 2.0 * out_elems() * static_cast<double>(a.back());
      break;
    }
    case OpClass::conv: {
      const Dims& w = g.tensor(n.inputs[1]).dims;
      c.flops = 2.0 * out_elems() * static_cast<double>(w[1] * w[2] * w[3]);
      break;
    }
    case OpClass::sdpa: {
      const Dims& q = g.tensor(n.inputs[0]).dims;
      const Dims& k = g.tensor(n.inputs[1]).dims;
      const Dims& v = g.tensor(n.inputs[2]).dims;
      const auto& at = std::get<SdpaAttrs>(n.attrs);
      const double pairs = visible_pairs(q[2], k[2], at.causal);
      c.flops = 2.0 * static_cast<double>(q[0] * q[1]) * pairs * static_cast<double>(q[3] + v[3]);
      break;
    }
    case OpClass::reduce:
    case OpClass::arg_reduce: c.flops = in_elems(); break;
    case OpClass::softmax: c.flops = 4.0 * in_elems(); break;
    case OpClass::norm: c.flops = 6.0 * in_elems(); break;
    case OpClass::rope: c.flops = 3.0 * in_elems(); break;
    case OpClass::layout:
    case OpClass::constant: c.flops = 0; break;
    case OpClass::gather:
      // the picked slices are read, not the whole table: the indices, and the output's bytes twice
      c.flops = 0;
      c.bytes = tensor_bytes(g.tensor(n.inputs[1])) + 2 * tensor_bytes(g.tensor(n.outputs[0]));
      break;
    case OpClass::collective: {
      const auto& at = std::get<CollectiveAttrs>(n.attrs);
      const double w = static_cast<double>(at.world);
      const double share = (w - 1) / w;  // of the data, what a rank's ring neighbours need from it
      const double in = tensor_bytes(g.tensor(n.inputs[0])), out = tensor_bytes(g.tensor(n.outputs[0]));
      // the reductions add W - 1 values per element of their result
      if (n.op == OpKind::all_reduce) {
        c.comm_bytes = 2 * share * in;
        c.flops = (w - 1) * in_elems();
      } else if (n.op == OpKind::all_gather) {
        c.comm_bytes = share * out;
      } else {
        c.comm_bytes = share * in;
        c.flops = (w - 1) * out_elems();
      }
      break;
    }
    default: c.flops = out_elems(); break;
  }
  return c;
}

GraphCost graph_cost(const Graph& g) {
  GraphCost c;
  for (const Node& n : g.nodes()) {
    const NodeCost nc = node_cost(g, n);
    c.flops += nc.flops;
    c.comm_bytes += nc.comm_bytes;
  }
  for (TensorId t : g.inputs()) c.min_bytes += input_read_bytes(g, t);
  for (TensorId t : g.outputs()) c.min_bytes += tensor_bytes(g.tensor(t));
  return c;
}

}  // namespace sinter
