// sinter check FILE: load, validate, summarize.
#include <cstdio>

#include "commands.hpp"
#include "format.hpp"
#include "sinter/json.hpp"

namespace sinter::cli {

int cmd_check(const CheckOptions& o) {
  const Graph g = load_graph_file(o.file);  // validates; throws with the location on error
  if (o.quiet) {
    std::printf("%s: valid graph '%s' (%zu nodes)\n", o.file.c_str(), g.name().c_str(),
                g.nodes().size());
  } else {
    print_graph_summary(g, true);
  }
  return 0;
}

}  // namespace sinter::cli
