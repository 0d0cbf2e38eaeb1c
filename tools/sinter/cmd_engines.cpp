// sinter engines FILE: for every region, each engine's support (or its reason) and candidates.
#include <cstdio>

#include "commands.hpp"
#include "sinter/explain.hpp"
#include "sinter/json.hpp"

namespace sinter::cli {

int cmd_engines(const Common& c, const EnginesOptions& o) {
  const Graph g = load_graph_file(o.file);
  EngineListOptions opts;
  opts.device = c.device;
  opts.max_vendor_candidates = o.max_candidates;
  const EngineReport r = list_engines(g, opts);
  if (o.json) {
    std::printf("%s\n", to_json(r).c_str());
  } else {
    std::printf("graph '%s'\n%s", g.name().c_str(), to_text(r).c_str());
  }
  return kOk;
}

}  // namespace sinter::cli
