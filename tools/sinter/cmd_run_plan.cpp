// sinter run PLAN|FILE with a plan: a bundle is loaded (no compilation) or a graph is built into a
// plan first; then run through the stream or graph executor on seeded random inputs and compared
// with the CPU reference.
#include <chrono>
#include <cstdio>

#include "commands.hpp"
#include "cuda/device.hpp"
#include "format.hpp"
#include "gpu_run.hpp"
#include "plan_source.hpp"
#include "plan_timing.hpp"
#include "sinter/error.hpp"
#include "sinter/reference.hpp"

namespace sinter::cli {

int cmd_run_plan(const RunOptions& o) {
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  if (!gpu.available) throw Error(ErrorCode::unsupported, "running a plan needs a GPU: " + gpu.reason);
  const auto t0 = std::chrono::steady_clock::now();
  PlanSource src = plan_from_file(o.file, {o.tune, o.engine, false});
  const Graph g = src.plan.graph;
  const TensorMap inputs = random_inputs(g, o.seed);
  PlanRunner runner(std::move(src.plan), o.executor);
  const TensorMap got = runner.run(inputs);
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const PlanExecutor& ex = runner.executor();
  std::printf("graph '%s': plan %s; %zu steps on %s, %s executor\n", g.name().c_str(),
              src.from_bundle ? ("loaded from " + o.file + ", 0 compilations").c_str() : "built now", ex.plan().steps.size(),
              cuda::describe(cuda::device_properties(0)).c_str(), o.executor.c_str());
  std::printf("%s   load to first result %s (bundle read and checked %s, steps loaded %s)\n", src.report.c_str(),
              human_ms(first_ms).c_str(), human_ms(src.load_ms).c_str(), human_ms(ex.load_ms()).c_str());
  for (const std::string& n : ex.load_notes()) std::printf("   note: %s\n", n.c_str());
  const Percentiles p = percentiles(runner.time_runs(o.iters, 5));
  std::printf("   gpu time %s (median of %d runs)\n", human_ms(p.p50).c_str(), o.iters);
  return print_comparison(g, got, run_reference(g, inputs)) ? 0 : 2;
}

}  // namespace sinter::cli
