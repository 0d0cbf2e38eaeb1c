// sinter bench PLAN|FILE: trtexec-style timing of a plan. Latency percentiles over timed runs of
// the whole plan (CUDA events around each run, after warm-up), throughput, a per-step breakdown
// (each step launched alone), and --json for scripts.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "format.hpp"
#include "session.hpp"

namespace sinter::cli {

int cmd_bench(const Common& c, const BenchOptions& o) {
  require_gpu("bench");
  const LoadedPlan loaded = plan_from_file(c, o.file, {o.tune, o.engine, false});
  const Graph& g = loaded.plan.graph();
  PlanSession session(loaded.plan, c, o.executor == "graph" ? ExecMode::graph : ExecMode::stream);
  session.run(random_inputs(g, o.seed));
  const Percentiles p = percentiles(session.time(o.iters, o.warmup));
  const std::vector<float> steps = session.runner().time_steps(session.stream(), std::max(o.iters / 10, 5));
  const PlanDescription d = loaded.plan.describe();
  const std::string device = device_info(c.device).description;
  if (o.json) {
    nlohmann::ordered_json j;
    j["graph"] = g.name();
    j["device"] = device;
    j["executor"] = o.executor;
    j["plan_from_bundle"] = loaded.from_bundle;
    j["iters"] = o.iters;
    j["latency_ms"] = {{"min", p.min}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}, {"mean", p.mean}};
    j["throughput_per_s"] = p.mean > 0 ? 1000.0 / p.mean : 0.0;
    nlohmann::ordered_json js = nlohmann::ordered_json::array();
    for (size_t i = 0; i < steps.size(); ++i) {
      js.push_back({{"step", i}, {"kind", d.steps[i].kind}, {"engine", d.steps[i].engine}, {"config", d.steps[i].config},
                    {"description", d.steps[i].description}, {"median_ms", steps[i]}});
    }
    j["steps"] = std::move(js);
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  std::printf("graph '%s' on %s, %s executor, plan %s\n", g.name().c_str(), device.c_str(), o.executor.c_str(),
              loaded.from_bundle ? "from a bundle" : "compiled now");
  std::printf("latency over %d runs (after %d warm-up): min %s, p50 %s, p90 %s, p99 %s, max %s, mean %s\n", o.iters,
              o.warmup, human_ms(p.min).c_str(), human_ms(p.p50).c_str(), human_ms(p.p90).c_str(),
              human_ms(p.p99).c_str(), human_ms(p.max).c_str(), human_ms(p.mean).c_str());
  std::printf("throughput: %.1f runs/s\n", p.mean > 0 ? 1000.0 / p.mean : 0.0);
  std::printf("per step (launched alone, median):\n");
  double sum = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    sum += steps[i];
    std::printf("   step %-3zu %-9s [%-8s] %10s  %s\n", i, d.steps[i].kind.c_str(), d.steps[i].engine.c_str(),
                human_ms(steps[i]).c_str(), d.steps[i].description.c_str());
  }
  std::printf("   sum of steps %s\n", human_ms(sum).c_str());
  return kOk;
}

}  // namespace sinter::cli
