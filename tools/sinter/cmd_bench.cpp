// sinter bench PLAN|FILE: trtexec-style timing of a plan. Latency percentiles over timed runs of
// the whole plan (CUDA events around each run, after warm-up), throughput, a per-step breakdown
// (each step launched alone), and --json for scripts. With --executor mega --trace FILE: one more
// run after the timed ones, its tasks written as a Chrome/Perfetto trace and summarized per step.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "format.hpp"
#include "mega_format.hpp"
#include "session.hpp"
#include "sinter/mega_trace.hpp"

namespace sinter::cli {
namespace {

// The megakernel's segments, and the trace of one run (written to `file`) when one is asked for.
struct MegaReport {
  MegaDescription description;
  std::optional<std::vector<MegaSegmentTime>> trace;
};

MegaReport mega_report(PlanSession& session, const std::string& trace_file) {
  MegaReport r{session.runner().mega_description(), std::nullopt};
  if (trace_file.empty()) return r;
  session.enqueue_and_wait();
  const std::vector<MegaTaskEvent> events = session.runner().mega_trace();
  write_file(trace_file, mega_trace_json(r.description, events));
  r.trace = summarize_mega_trace(r.description, events);
  return r;
}

}  // namespace

int cmd_bench(const Common& c, const BenchOptions& o) {
  const RunnerOptions runner_opts = runner_options(c, o.exec, !o.trace_file.empty());
  require_gpu("bench");
  const LoadedPlan loaded = plan_from_file(c, o.file, {o.tune, o.engine, false, o.exec.executor == "mega"});
  const Graph& g = loaded.plan.graph();
  PlanSession session(loaded.plan, runner_opts);
  session.run(random_inputs(g, o.seed));
  const Percentiles p = percentiles(session.time(o.iters, o.warmup));
  const std::vector<float> steps = session.time_steps(std::max(o.iters / 10, 5));
  std::optional<MegaReport> mega;
  if (runner_opts.mode == ExecMode::mega) mega = mega_report(session, o.trace_file);
  const PlanDescription d = loaded.plan.describe();
  const std::string device = device_info(c.device).description;
  const RunnerStats stats = session.runner().stats();
  const bool graph = runner_opts.mode == ExecMode::graph;
  if (o.json) {
    nlohmann::ordered_json j;
    j["graph"] = g.name();
    j["device"] = device;
    j["executor"] = o.exec.executor;
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
    if (graph) {
      j["cuda_graph"] = {{"capture_streams", stats.capture_streams},
                         {"launches", stats.capture_launches},
                         {"longest_chain", stats.capture_chain}};
    }
    if (mega) j["mega"] = mega_json(mega->description);
    if (mega && mega->trace) j["mega_trace"] = {{"file", o.trace_file}, {"segments", mega_trace_summary_json(*mega->trace)}};
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  std::printf("graph '%s' on %s, %s executor, plan %s\n", g.name().c_str(), device.c_str(), o.exec.executor.c_str(),
              loaded.from_bundle ? "from a bundle" : "compiled now");
  if (mega) std::printf("megakernel: %s\n", mega_overview(mega->description).c_str());
  if (graph) {
    std::printf("CUDA graph: %d launches on %d capture streams, the longest chain of dependent launches %d\n",
                stats.capture_launches, stats.capture_streams, stats.capture_chain);
  }
  std::printf("latency over %d runs (after %d warm-up%s): min %s, p50 %s, p90 %s, p99 %s, max %s, mean %s\n", o.iters,
              o.warmup, mega && mega->trace ? ", every task traced" : "", human_ms(p.min).c_str(),
              human_ms(p.p50).c_str(), human_ms(p.p90).c_str(), human_ms(p.p99).c_str(), human_ms(p.max).c_str(),
              human_ms(p.mean).c_str());
  std::printf("throughput: %.1f runs/s\n", p.mean > 0 ? 1000.0 / p.mean : 0.0);
  std::printf("per step (launched alone, median):\n");
  double sum = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    sum += steps[i];
    std::printf("   step %-3zu %-9s [%-8s] %10s  %s\n", i, d.steps[i].kind.c_str(), d.steps[i].engine.c_str(),
                human_ms(steps[i]).c_str(), d.steps[i].description.c_str());
  }
  std::printf("   sum of steps %s\n", human_ms(sum).c_str());
  if (mega && mega->trace) {
    std::printf("megakernel trace of one more run: wrote %s (chrome://tracing, ui.perfetto.dev)\n%s", o.trace_file.c_str(),
                mega_trace_summary_text(*mega->trace).c_str());
  }
  return kOk;
}

}  // namespace sinter::cli
