#include "mega_explain.hpp"

#include <cstdio>

#include "format.hpp"
#include "mega_format.hpp"
#include "session.hpp"

namespace sinter::cli {

int explain_mega(const Common& c, const Plan& plan, const MegaExplainOptions& o) {
  const Runner runner(plan, runner_options(c, ExecutorOptions{"mega"}));
  const MegaDescription d = runner.mega_description();
  const std::string graph = plan.graph().name();
  const size_t steps = plan.describe().steps.size();
  const std::string device = device_info(c.device).description;
  if (!o.dot_file.empty()) write_file(o.dot_file, mega_dot(d, graph));
  if (o.json) {
    nlohmann::ordered_json j;
    j["graph"] = graph;
    j["device"] = device;
    j["plan_steps"] = steps;
    j["mega"] = mega_json(d);
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  std::printf("graph '%s': %zu plan steps on %s\n", graph.c_str(), steps, device.c_str());
  for (const std::string& n : runner.load_notes()) std::printf("   note: %s\n", n.c_str());
  std::printf("%s", mega_text(d).c_str());
  if (!o.dot_file.empty()) std::printf("wrote %s\n", o.dot_file.c_str());
  return kOk;
}

}  // namespace sinter::cli
