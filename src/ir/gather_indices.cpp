#include "ir/gather_indices.hpp"

#include <algorithm>
#include <vector>

namespace sinter {

int64_t gather_index_range(const Graph& g, TensorId t) {
  std::vector<bool> reached(g.tensors().size(), false);
  reached[static_cast<size_t>(t)] = true;
  int64_t n = 0;
  for (const Node& nd : g.nodes()) {  // in order: producers before consumers
    if (nd.op == OpKind::gather) {
      if (reached[static_cast<size_t>(nd.inputs[1])]) {
        const auto axis = static_cast<size_t>(std::get<GatherAttrs>(nd.attrs).axis);
        const int64_t size = g.tensor(nd.inputs[0]).dims[axis];
        n = n == 0 ? size : std::min(n, size);
      }
      continue;
    }
    if (op_info(nd.op).cls != OpClass::layout && nd.op != OpKind::cast) continue;
    const bool from_t = std::any_of(nd.inputs.begin(), nd.inputs.end(),
                                    [&](TensorId in) { return reached[static_cast<size_t>(in)]; });
    if (from_t) {
      for (TensorId out : nd.outputs) reached[static_cast<size_t>(out)] = true;
    }
  }
  return n;
}

}  // namespace sinter
