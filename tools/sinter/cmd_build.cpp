// sinter build FILE -o PLAN: prepare (and tune) every region of a graph on the GPU and save the
// plan as one bundle (docs/plan-bundle.md) that `run`, `inspect` and `bench` load with no
// compilation.
#include <cstdio>

#include "commands.hpp"
#include "format.hpp"
#include "plan/bundle.hpp"
#include "plan_source.hpp"
#include "sinter/error.hpp"
#include "sinter/json.hpp"

namespace sinter::cli {

int cmd_build(const BuildOptions& o) {
  if (is_plan_bundle_file(o.file)) {
    throw Error(ErrorCode::invalid_argument, "'" + o.file + "' is already a plan bundle; build takes a graph file (.json)");
  }
  const Graph g = load_graph_file(o.file);
  const PlanSource src = build_plan_for_graph(g, {o.tune, o.engine, o.no_fusion});
  plan::save_plan_bundle(src.plan, o.output);
  const std::vector<char> bytes = plan::plan_bundle_bytes(src.plan);
  size_t kernels = 0;
  for (const plan::Step& s : src.plan.steps) kernels += s.kernels.size();
  std::printf("graph '%s': %zu steps, %zu kernels, %zu blobs; built in %s on %s\n%s", g.name().c_str(),
              src.plan.steps.size(), kernels, src.plan.blobs.size(), human_ms(src.load_ms).c_str(),
              src.plan.target.device.c_str(), src.report.c_str());
  for (const plan::Step& s : src.plan.steps) {
    std::printf("   step %-3d %-9s [%s] %s\n", s.region, std::string(fuse::to_string(s.kind)).c_str(), s.engine.c_str(),
                s.description.c_str());
  }
  std::printf("wrote %s (%s)\n", o.output.c_str(), human_bytes(double(bytes.size())).c_str());
  return 0;
}

}  // namespace sinter::cli
