// Timing a plan from the CLI (run, bench): CUDA events around each launch of the whole plan (as
// stream launches or one graph replay), after warm-up runs; and per-step times for a breakdown.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/graph_executor.hpp"
#include "exec/plan_executor.hpp"

namespace sinter::cli {

// A loaded plan with the executor the user chose ("stream" or "graph").
class PlanRunner {
 public:
  PlanRunner(plan::Plan plan, const std::string& executor);
  PlanExecutor& executor() { return *ex_; }
  GraphExecutor* graph() { return graph_.get(); }
  // set_inputs, poison, then one run through the chosen executor; the outputs.
  TensorMap run(const TensorMap& inputs);
  void launch();  // one run of the whole plan, enqueued
  // Milliseconds of each of `iters` timed runs after `warmup` untimed ones (in run order).
  std::vector<float> time_runs(int iters, int warmup);
  // Median milliseconds of each step run alone (stream launches), `iters` times each.
  std::vector<float> time_steps(int iters);

 private:
  std::unique_ptr<PlanExecutor> ex_;
  std::unique_ptr<GraphExecutor> graph_;
};

struct Percentiles {
  double min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
Percentiles percentiles(std::vector<float> ms);

}  // namespace sinter::cli
