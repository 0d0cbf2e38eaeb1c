// sinter build FILE -o PLAN: compile (and tune) a graph on the GPU and save the plan as one bundle
// (docs/plan-bundle.md) that `run`, `inspect` and `bench` load with no compilation.
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "format.hpp"
#include "session.hpp"

namespace sinter::cli {

int cmd_build(const Common& c, const BuildOptions& o) {
  if (is_plan_bundle_file(o.file)) {
    throw Error(ErrorCode::invalid_argument, "'" + o.file + "' is already a plan bundle; build takes a graph file (.json)");
  }
  const LoadedPlan built = plan_from_file(c, o.file, {o.tune, o.engine, o.no_fusion, o.megakernels, false, o.unfolded_norms});
  built.plan.save(o.output);
  const PlanDescription d = built.plan.describe();
  if (o.json) {
    std::printf("%s\n", to_json(d).c_str());
    return kOk;
  }
  size_t kernels = 0;
  for (const StepDescription& s : d.steps) kernels += s.kernels.size();
  std::printf("graph '%s': %zu steps, %zu kernels, %zu blobs; built in %s on %s\n", d.graph.c_str(), d.steps.size(),
              kernels, d.blobs, human_ms(built.ms).c_str(), d.device.c_str());
  if (d.compile) {
    std::printf("   %s\n", d.compile->kernel_cache.c_str());
    if (d.compile->candidates_timed > 0 || d.compile->timing_cache_hits > 0) {
      std::printf("   tuning (%s): %d candidates timed, %d regions from the timing cache (%s)%s\n", o.tune.c_str(),
                  d.compile->candidates_timed, d.compile->timing_cache_hits, d.compile->timing_cache.c_str(),
                  d.compile->candidates_timed == 0 ? ": zero timings, every choice came from the timing cache" : "");
    }
  }
  for (const StepDescription& s : d.steps) {
    std::printf("   step %-3d %-9s [%s] %s\n", s.index, s.kind.c_str(), s.engine.c_str(), s.description.c_str());
    if (!s.fallback.empty()) std::printf("            fallback: %s\n", s.fallback.c_str());
  }
  std::printf("wrote %s (%s)\n", o.output.c_str(), human_bytes(double(std::filesystem::file_size(o.output))).c_str());
  return kOk;
}

}  // namespace sinter::cli
