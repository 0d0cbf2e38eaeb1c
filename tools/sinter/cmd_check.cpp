// sinter check FILE: load, validate, summarize.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "format.hpp"
#include "sinter/json.hpp"

namespace sinter::cli {
namespace {

nlohmann::ordered_json tensor_json(const TensorInfo& t) {
  return {{"name", t.name}, {"dtype", std::string(to_string(t.dtype))}, {"dims", t.dims}, {"strides", t.strides}};
}

}  // namespace

int cmd_check(const Common&, const CheckOptions& o) {
  const Graph g = load_graph_file(o.file);  // validates; throws with the location on error
  if (o.json) {
    nlohmann::ordered_json j;
    j["file"] = o.file;
    j["graph"] = g.name();
    j["valid"] = true;
    j["nodes"] = g.nodes().size();
    j["tensors"] = g.tensors().size();
    j["inputs"] = nlohmann::ordered_json::array();
    for (TensorId id : g.inputs()) j["inputs"].push_back(tensor_json(g.tensor(id)));
    j["outputs"] = nlohmann::ordered_json::array();
    for (TensorId id : g.outputs()) j["outputs"].push_back(tensor_json(g.tensor(id)));
    std::map<std::string, int> ops;
    for (const Node& n : g.nodes()) ++ops[std::string(to_string(n.op))];
    j["ops"] = ops;
    const GraphCost cost = graph_cost(g);
    j["flops"] = cost.flops;
    j["min_bytes"] = cost.min_bytes;
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(structural_hash(g, true)));
    j["structural_hash"] = hash;
    std::printf("%s\n", j.dump(2).c_str());
  } else if (o.quiet) {
    std::printf("%s: valid graph '%s' (%zu nodes)\n", o.file.c_str(), g.name().c_str(), g.nodes().size());
  } else {
    print_graph_summary(g, true);
  }
  return kOk;
}

}  // namespace sinter::cli
