#include "plan_timing.hpp"

#include <algorithm>
#include <numeric>

#include "cuda/check.hpp"
#include "cuda/timing.hpp"
#include "sinter/error.hpp"

namespace sinter::cli {

PlanRunner::PlanRunner(plan::Plan plan, const std::string& executor) {
  if (executor != "stream" && executor != "graph") {
    throw Error(ErrorCode::invalid_argument, "--executor must be stream or graph; found '" + executor + "'");
  }
  ex_ = std::make_unique<PlanExecutor>(std::move(plan));
  // Captured with the executor's own buffers, which run() fills; nothing to rebind.
  if (executor == "graph") graph_ = std::make_unique<GraphExecutor>(*ex_);
}

void PlanRunner::launch() {
  if (graph_) {
    graph_->replay();
  } else {
    ex_->launch();
  }
}

TensorMap PlanRunner::run(const TensorMap& inputs) {
  ex_->set_inputs(inputs);
  ex_->poison();
  launch();
  return ex_->outputs();
}

std::vector<float> PlanRunner::time_runs(int iters, int warmup) {
  for (int i = 0; i < warmup; ++i) launch();
  return cuda::time_calls(ex_->stream(), iters, [&] { launch(); });
}

std::vector<float> PlanRunner::time_steps(int iters) { return ex_->time_steps(iters); }

Percentiles percentiles(std::vector<float> ms) {
  Percentiles p;
  if (ms.empty()) return p;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return double(ms[std::min(ms.size() - 1, size_t(q * double(ms.size() - 1) + 0.5))]); };
  p.min = ms.front();
  p.max = ms.back();
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  p.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / double(ms.size());
  return p;
}

}  // namespace sinter::cli
