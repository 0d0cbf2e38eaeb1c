#include "mega/task_graph.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "cuda/source_text.hpp"
#include "sinter/error.hpp"

namespace sinter::mega {

TaskGraph build_task_graph(std::vector<SegmentStep> steps) {
  TaskGraph g;
  g.steps = std::move(steps);
  std::map<TensorId, unsigned> writer;  // tensor -> the task kernel that completes it
  std::map<std::string, unsigned> function_of;
  for (size_t s = 0; s < g.steps.size(); ++s) {
    const SegmentStep& step = g.steps[s];
    if (step.kernels.empty()) throw Error(ErrorCode::internal, "megakernel: step " + std::to_string(step.step) + " has no kernels");
    std::vector<unsigned> reads;
    for (TensorId t : step.reads) {
      auto it = writer.find(t);
      if (it != writer.end() && std::find(reads.begin(), reads.end(), it->second) == reads.end()) reads.push_back(it->second);
    }
    std::sort(reads.begin(), reads.end());
    unsigned step_tasks = 0;
    for (const MegaTaskKernel& k : step.kernels) step_tasks += k.grid[0] * k.grid[1] * k.grid[2];
    for (size_t i = 0; i < step.kernels.size(); ++i) {
      const MegaTaskKernel& mk = step.kernels[i];
      TaskKernel k;
      k.segment_step = s;
      k.kernel = i;
      std::string source = cuda::without_line_comments(mk.source);
      auto [f, added] = function_of.emplace(source, static_cast<unsigned>(g.functions.size()));
      if (added) g.functions.push_back({std::move(source), mk.entry});
      k.function = f->second;
      std::copy(std::begin(mk.grid), std::end(mk.grid), k.grid);
      k.threads = mk.threads;
      k.dynamic_shared_memory = mk.dynamic_shared_memory;
      k.arg_bytes = mk.arg_bytes;
      if (k.tasks() == 0) throw Error(ErrorCode::internal, "megakernel: kernel '" + mk.description + "' has an empty grid");
      // the first kernel waits for the step's inputs; each later one for the kernel before it
      // (which waited for the inputs already)
      k.waits = i == 0 ? reads : std::vector<unsigned>{static_cast<unsigned>(g.kernels.size() - 1)};
      k.task_cost_us = kTaskOverheadUs + step.bytes / std::max(1u, step_tasks) / kBytesPerSmUs;
      g.tasks += k.tasks();
      g.max_threads = std::max(g.max_threads, k.threads);
      g.max_dynamic_shared_memory = std::max(g.max_dynamic_shared_memory, k.dynamic_shared_memory);
      g.max_arg_bytes = std::max(g.max_arg_bytes, k.arg_bytes);
      g.kernels.push_back(std::move(k));
    }
    for (TensorId t : step.writes) writer[t] = static_cast<unsigned>(g.kernels.size() - 1);
  }
  return g;
}

double critical_path_us(const TaskGraph& g, int sm_count) {
  std::vector<double> finish(g.kernels.size(), 0.0);
  double longest = 0;
  for (size_t i = 0; i < g.kernels.size(); ++i) {
    const TaskKernel& k = g.kernels[i];
    double start = 0;
    for (unsigned w : k.waits) start = std::max(start, finish[w]);
    const double waves = std::ceil(static_cast<double>(k.tasks()) / std::max(sm_count, 1));
    finish[i] = start + waves * k.task_cost_us;
    longest = std::max(longest, finish[i]);
  }
  return longest;
}

}  // namespace sinter::mega
