// A region as a standalone graph, with the original tensor and node names.
#include <algorithm>
#include <cstdio>
#include <map>

#include "fuse/region.hpp"

namespace sinter::fuse {

Graph region_subgraph(const Graph& g, const Region& r) {
  Graph sub(g.name() + ".region" + std::to_string(r.id));
  std::map<TensorId, Tensor> map;
  for (TensorId in : r.inputs) {
    const TensorInfo& t = g.tensor(in);
    map[in] = sub.input(t.name, t.dtype, t.dims, t.is_input ? t.strides : Dims{});
  }
  std::vector<NodeId> nodes = r.nodes();
  // r.nodes() lists constants first, then prologue, anchor, epilogue and reductions: an order in
  // which every producer comes first within a region.
  for (NodeId n : nodes) {
    const Node& nd = g.node(n);
    std::vector<Tensor> ins;
    for (TensorId in : nd.inputs) ins.push_back(map.at(in));
    std::vector<std::string> names;
    for (TensorId out : nd.outputs) names.push_back(g.tensor(out).name);
    auto outs = sub.add_node(nd.op, ins, nd.attrs, nd.name, names);
    for (size_t i = 0; i < outs.size(); ++i) map[nd.outputs[i]] = outs[i];
  }
  for (TensorId out : r.outputs) sub.output(map.at(out));
  return sub;
}

std::string region_structure_hash(const Graph& g, const Region& r) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(structural_hash(region_subgraph(g, r), true)));
  return buf;
}

}  // namespace sinter::fuse
