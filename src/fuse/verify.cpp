// The partition verifier: checks a Partition against the graph and the legality rules, so a bug
// in the partitioner is caught where it happens rather than as a wrong kernel later.
#include <algorithm>
#include <set>

#include "fuse/layout_view.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"

namespace sinter::fuse {
namespace {

[[noreturn]] void broken(const std::string& msg) {
  throw Error(ErrorCode::internal, "partition verifier: " + msg);
}

bool is_pointwise_class(OpClass c) {
  return c == OpClass::unary || c == OpClass::binary || c == OpClass::compare ||
         c == OpClass::select || c == OpClass::cast || c == OpClass::constant;
}

}  // namespace

void verify_partition(const Graph& g, const Partition& p) {
  const size_t nn = g.nodes().size();
  if (p.region_of_node.size() != nn) broken("region_of_node has the wrong size");
  std::vector<int> placed(nn, -1);
  // readers of each tensor (a node reading a tensor twice is listed once)
  std::vector<std::vector<NodeId>> consumers(g.tensors().size());
  for (size_t n = 0; n < nn; ++n) {
    for (TensorId t : g.nodes()[n].inputs) {
      const auto id = static_cast<NodeId>(n);
      if (consumers[t].empty() || consumers[t].back() != id) consumers[t].push_back(id);
    }
  }
  constexpr int kFolded = -2;  // placed[n] of a norm folded into matmul prologues
  for (const Region& r : p.regions) {
    for (NodeId n : r.nodes()) {
      const bool inlined = std::find(r.constants.begin(), r.constants.end(), n) != r.constants.end();
      if (inlined) {
        if (g.node(n).op != OpKind::constant) broken("region " + std::to_string(r.id) +
                                                     " inlines a node that is not a constant");
        continue;
      }
      if (r.kind == RegionKind::matmul && std::find(r.prologue.begin(), r.prologue.end(), n) != r.prologue.end()) {
        if (r.prologue.size() != 1 || g.node(n).op != OpKind::rmsnorm || g.node(r.anchor).inputs[0] != g.node(n).outputs[0]) {
          broken("region " + std::to_string(r.id) + " (matmul): a matmul's prologue is one rmsnorm whose output is its A");
        }
        if (placed[n] >= 0) broken("node '" + g.node(n).name + "' is in a region and folded into a matmul");
        placed[n] = kFolded;
        if (p.region_of_node[n] != -1) broken("region_of_node of the folded norm '" + g.node(n).name + "' is not -1");
        continue;
      }
      if (placed[n] >= 0 || placed[n] == kFolded) broken("node '" + g.node(n).name + "' is in two regions");
      placed[n] = r.id;
      if (p.region_of_node[n] != r.id) broken("region_of_node disagrees for '" + g.node(n).name + "'");
    }
    const std::string where = "region " + std::to_string(r.id) + " (" +
                              std::string(to_string(r.kind)) + ")";
    if ((r.kind == RegionKind::pointwise) != (r.anchor < 0)) broken(where + ": anchor mismatch");
    for (NodeId n : r.epilogue) {
      const Node& nd = g.node(n);
      if (!is_pointwise_class(op_info(nd.op).cls)) broken(where + ": '" + nd.name + "' in the epilogue is not pointwise");
      if (g.tensor(nd.outputs[0]).dims != r.iteration_shape) {
        broken(where + ": '" + nd.name + "' does not have the iteration shape");
      }
    }
    if (r.kind == RegionKind::layout && !r.prologue.empty()) {
      // a layout chain: each op reads the one before, the anchor the last, and the whole chain
      // composes into one strided view of the first op's input
      std::vector<NodeId> chain = r.prologue;
      chain.push_back(r.anchor);
      for (size_t i = 0; i < chain.size(); ++i) {
        const Node& nd = g.node(chain[i]);
        if (nd.op != OpKind::slice && nd.op != OpKind::reshape && nd.op != OpKind::permute) {
          broken(where + ": '" + nd.name + "' in a layout chain is not a slice, reshape or permute");
        }
        if (i > 0 && nd.inputs[0] != g.node(chain[i - 1]).outputs[0]) {
          broken(where + ": '" + nd.name + "' does not read the layout chain's previous op");
        }
      }
      if (!compose_layout_chain(g, chain)) broken(where + ": the layout chain is not one strided view");
      // Only the end of the chain is stored: every op before it must be read by the next op
      // alone, and be neither a graph output nor a region output, or a reader would find it unwritten.
      if (r.inputs.size() != 1 || r.inputs[0] != g.node(chain.front()).inputs[0]) {
        broken(where + ": a layout chain reads one tensor, the input of its first op");
      }
      const std::set<TensorId> graph_outputs(g.outputs().begin(), g.outputs().end());
      for (size_t i = 0; i + 1 < chain.size(); ++i) {
        const TensorId mid = g.node(chain[i]).outputs[0];
        const std::vector<NodeId>& readers = consumers[mid];
        if (readers.size() != 1 || readers[0] != chain[i + 1] || graph_outputs.count(mid) ||
            std::find(r.outputs.begin(), r.outputs.end(), mid) != r.outputs.end()) {
          broken(where + ": '" + g.tensor(mid).name + "' inside a layout chain is read outside it or stored");
        }
      }
    } else if (r.kind == RegionKind::matmul && !r.prologue.empty()) {
      // a folded norm (its node checked above): read by matmuls alone (as A), stored nowhere; the
      // region reads the norm's inputs instead
      const Node& nm = g.node(r.folded_norm());
      const TensorId y = nm.outputs[0];
      for (NodeId c : consumers[y]) {
        if (g.node(c).op != OpKind::matmul || g.node(c).inputs[0] != y || g.node(c).inputs[1] == y) {
          broken(where + ": the folded norm's output '" + g.tensor(y).name + "' is read by '" + g.node(c).name +
                 "', not as a matmul's A");
        }
      }
      if (std::find(r.inputs.begin(), r.inputs.end(), y) != r.inputs.end() ||
          std::find(r.outputs.begin(), r.outputs.end(), y) != r.outputs.end()) {
        broken(where + ": the folded norm's output '" + g.tensor(y).name + "' is read or stored");
      }
      for (TensorId in : nm.inputs) {
        if (std::find(r.inputs.begin(), r.inputs.end(), in) == r.inputs.end()) {
          broken(where + ": the folded norm's input '" + g.tensor(in).name + "' is not a region input");
        }
      }
    } else {
      for (NodeId n : r.prologue) {
        if (r.kind != RegionKind::rowwise) broken(where + ": only row-wise, layout and matmul regions have a prologue");
        if (g.tensor(g.node(n).outputs[0]).dims != r.iteration_shape) {
          broken(where + ": prologue node '" + g.node(n).name + "' does not have the iteration shape");
        }
      }
    }
    for (const ExitReduce& e : r.reductions) {
      if (g.tensor(g.node(e.node).inputs[0]).dims != r.iteration_shape) {
        broken(where + ": exit reduction '" + g.node(e.node).name + "' reduces another shape");
      }
    }
  }
  for (size_t n = 0; n < nn; ++n) {
    const bool constant = g.node(static_cast<NodeId>(n)).op == OpKind::constant;
    if (placed[n] == -1 && !constant) broken("node '" + g.node(static_cast<NodeId>(n)).name + "' is in no region");
  }
  // Dependency order, and every tensor that crosses a region boundary is stored.
  std::set<TensorId> graph_outputs(g.outputs().begin(), g.outputs().end());
  for (const Region& r : p.regions) {
    for (TensorId in : r.inputs) {
      const NodeId prod = g.tensor(in).producer;
      if (prod < 0) continue;
      const int q = placed[prod];
      if (q == kFolded) {
        broken("region " + std::to_string(r.id) + " reads '" + g.tensor(in).name +
               "', the output of a norm folded into matmuls, which no region stores");
      }
      if (q < 0 || q >= r.id) {
        broken("region " + std::to_string(r.id) + " reads '" + g.tensor(in).name +
               "' from region " + std::to_string(q) + ", which does not run before it");
      }
      const auto& outs = p.regions[q].outputs;
      if (std::find(outs.begin(), outs.end(), in) == outs.end()) {
        broken("'" + g.tensor(in).name + "' crosses regions but region " + std::to_string(q) +
               " does not store it");
      }
    }
  }
  for (TensorId out : g.outputs()) {
    const int q = placed[g.tensor(out).producer];
    if (q == kFolded) broken("graph output '" + g.tensor(out).name + "' comes from a norm folded into matmuls");
    const auto& outs = p.regions[q].outputs;
    if (std::find(outs.begin(), outs.end(), out) == outs.end()) {
      broken("graph output '" + g.tensor(out).name + "' is not stored by its region");
    }
  }
}

}  // namespace sinter::fuse
