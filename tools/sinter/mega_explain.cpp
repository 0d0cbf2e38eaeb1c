#include "mega_explain.hpp"

#include <cstdio>

#include "format.hpp"
#include "mega_format.hpp"
#include "session.hpp"

namespace sinter::cli {

int explain_mega(const Common& c, const Plan& plan, const MegaExplainOptions& o) {
  RunnerOptions ro = runner_options(c, ExecutorOptions{"mega"});
  // one rank's program: its megakernels as rank 0 of a virtual group (they are every rank's)
  std::string group;
  const int world = graph_world(plan.graph(), &group);
  std::vector<Communicator> virtual_ranks;
  if (world > 1) {
    virtual_ranks = Communicator::create_virtual(world, c.device);
    ro.communicators[group] = virtual_ranks[0];
    ro.mega.sm_count = device_info(c.device).sm_count / world;
  }
  const Runner runner(plan, ro);
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
  if (world > 1) {
    std::printf("   one rank's program of group '%s', world %d: shown as rank 0 of %d virtual ranks, on %d SMs\n",
                group.c_str(), world, world, device_info(c.device).sm_count / world);
  }
  for (const std::string& n : runner.load_notes()) std::printf("   note: %s\n", n.c_str());
  std::printf("%s", mega_text(d).c_str());
  if (!o.dot_file.empty()) std::printf("wrote %s\n", o.dot_file.c_str());
  return kOk;
}

}  // namespace sinter::cli
