// sinter bench PLAN|FILE: trtexec-style timing of a plan. Latency percentiles over timed runs of
// the whole plan (CUDA events around each run, after warm-up), throughput, a per-step breakdown
// (each step launched alone), and --json for scripts.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "cuda/device.hpp"
#include "format.hpp"
#include "plan_source.hpp"
#include "plan_timing.hpp"
#include "sinter/error.hpp"

namespace sinter::cli {

int cmd_bench(const BenchOptions& o) {
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  if (!gpu.available) throw Error(ErrorCode::unsupported, "bench needs a GPU: " + gpu.reason);
  if (o.iters < 1 || o.warmup < 0) throw Error(ErrorCode::invalid_argument, "--iters must be >= 1 and --warmup >= 0");
  PlanSource src = plan_from_file(o.file, {o.tune, o.engine, false});
  const Graph g = src.plan.graph;
  PlanRunner runner(std::move(src.plan), o.executor);
  runner.run(random_inputs(g, o.seed));
  const Percentiles p = percentiles(runner.time_runs(o.iters, o.warmup));
  const std::vector<float> steps = runner.time_steps(std::max(o.iters / 10, 5));
  const plan::Plan& plan = runner.executor().plan();
  const std::string device = cuda::describe(cuda::device_properties(0));
  if (o.json) {
    nlohmann::ordered_json j;
    j["graph"] = g.name();
    j["device"] = device;
    j["executor"] = o.executor;
    j["plan_from_bundle"] = src.from_bundle;
    j["iters"] = o.iters;
    j["latency_ms"] = {{"min", p.min}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}, {"mean", p.mean}};
    j["throughput_per_s"] = p.mean > 0 ? 1000.0 / p.mean : 0.0;
    nlohmann::ordered_json js = nlohmann::ordered_json::array();
    for (size_t i = 0; i < steps.size(); ++i) {
      js.push_back({{"step", i}, {"kind", std::string(fuse::to_string(plan.steps[i].kind))}, {"engine", plan.steps[i].engine},
                    {"description", plan.steps[i].description}, {"median_ms", steps[i]}});
    }
    j["steps"] = std::move(js);
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("graph '%s' on %s, %s executor, plan %s\n", g.name().c_str(), device.c_str(), o.executor.c_str(),
              src.from_bundle ? "from a bundle" : "built now");
  std::printf("latency over %d runs (after %d warm-up): min %s, p50 %s, p90 %s, p99 %s, max %s, mean %s\n", o.iters,
              o.warmup, human_ms(p.min).c_str(), human_ms(p.p50).c_str(), human_ms(p.p90).c_str(),
              human_ms(p.p99).c_str(), human_ms(p.max).c_str(), human_ms(p.mean).c_str());
  std::printf("throughput: %.1f runs/s\n", p.mean > 0 ? 1000.0 / p.mean : 0.0);
  std::printf("per step (launched alone, median):\n");
  double sum = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    sum += steps[i];
    std::printf("   step %-3zu %-9s [%-8s] %10s  %s\n", i, std::string(fuse::to_string(plan.steps[i].kind)).c_str(),
                plan.steps[i].engine.c_str(), human_ms(steps[i]).c_str(), plan.steps[i].description.c_str());
  }
  std::printf("   sum of steps %s\n", human_ms(sum).c_str());
  return 0;
}

}  // namespace sinter::cli
