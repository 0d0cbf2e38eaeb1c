#include "format.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "sinter/error.hpp"

namespace sinter::cli {
namespace {
std::string scaled(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s%s" : "%.3g %s%s", v, prefixes[i], unit);
  return buf;
}
}  // namespace

std::string human_flops(double flops) { return scaled(flops, "FLOP"); }
std::string human_bytes(double bytes) { return scaled(bytes, "B"); }

std::string human_ms(double ms) {
  char buf[64];
  if (ms < 1) {
    std::snprintf(buf, sizeof buf, "%.0f us", ms * 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  }
  return buf;
}

std::string type_string(const TensorInfo& t) {
  std::string s = std::string(to_string(t.dtype)) + " " + dims_to_string(t.dims);
  if (t.is_input && t.strides != contiguous_strides(t.dims)) {
    s += " strides " + dims_to_string(t.strides);
  }
  return s;
}

std::string stats_string(const HostTensor& t) {
  const TensorStats s = tensor_stats(t);
  if (s.nan_count == t.numel()) return "every value is NaN (" + std::to_string(s.nan_count) + ")";
  char buf[160];
  std::snprintf(buf, sizeof buf, "min %-10.4g max %-10.4g mean %-10.4g l2 %-10.4g", s.min, s.max,
                s.mean, s.l2);
  std::string r = buf;
  if (s.nan_count) r += " nan " + std::to_string(s.nan_count);
  if (s.inf_count) r += " inf " + std::to_string(s.inf_count);
  return r;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw Error(ErrorCode::io, "cannot write '" + path + "': " + std::strerror(errno));
}

void print_graph_summary(const Graph& g, bool detailed) {
  const auto& tensors = g.tensors();
  const size_t intermediates = tensors.size() - g.inputs().size();
  std::printf("graph '%s': valid; %zu nodes, %zu tensors (%zu inputs, %zu outputs, %zu computed)\n",
              g.name().c_str(), g.nodes().size(), tensors.size(), g.inputs().size(),
              g.outputs().size(), intermediates);
  if (detailed) {
    std::printf("\ninputs:\n");
    for (TensorId id : g.inputs()) {
      std::printf("  %-20s %s\n", g.tensor(id).name.c_str(), type_string(g.tensor(id)).c_str());
    }
    std::printf("\nnodes (in execution order):\n");
    for (NodeId ni : g.topological_order()) {
      const Node& n = g.node(ni);
      std::string ins, outs;
      for (TensorId t : n.inputs) ins += (ins.empty() ? "" : ", ") + g.tensor(t).name;
      for (TensorId t : n.outputs) {
        outs += (outs.empty() ? "" : ", ") + g.tensor(t).name + " " + type_string(g.tensor(t));
      }
      const NodeCost c = node_cost(g, n);
      std::printf("  %-18s %-12s (%s) -> %s   %s\n", n.name.c_str(),
                  std::string(to_string(n.op)).c_str(), ins.c_str(), outs.c_str(),
                  c.flops > 0 ? human_flops(c.flops).c_str() : "");
    }
    std::printf("\noutputs:\n");
    for (TensorId id : g.outputs()) {
      std::printf("  %-20s %s\n", g.tensor(id).name.c_str(), type_string(g.tensor(id)).c_str());
    }
  }
  std::map<std::string, int> op_counts;
  for (const Node& n : g.nodes()) ++op_counts[std::string(to_string(n.op))];
  std::string ops;
  for (const auto& [name, count] : op_counts) {
    ops += (ops.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  }
  const GraphCost cost = graph_cost(g);
  std::printf("\nops: %s\n", ops.c_str());
  std::printf("work: %s (a multiply-add counts 2; pointwise 1 per element)\n",
              human_flops(cost.flops).c_str());
  std::printf("minimum traffic: %s (inputs read once, outputs written once)", 
              human_bytes(cost.min_bytes).c_str());
  if (cost.min_bytes > 0) std::printf("; intensity %.1f FLOP/B", cost.flops / cost.min_bytes);
  if (cost.comm_bytes > 0) {
    std::printf("\ncollectives: %s sent per rank (ring algorithm)", human_bytes(cost.comm_bytes).c_str());
  }
  std::printf("\nstructural hash: %016llx (with shapes %016llx)\n",
              static_cast<unsigned long long>(structural_hash(g, false)),
              static_cast<unsigned long long>(structural_hash(g, true)));
}

}  // namespace sinter::cli
