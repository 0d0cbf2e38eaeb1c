#include "mega/schedule.hpp"

#include <algorithm>
#include <queue>

#include "sinter/error.hpp"

namespace sinter::mega {

Schedule schedule_tasks(const TaskGraph& g, int ctas) {
  if (ctas <= 0) throw Error(ErrorCode::internal, "megakernel: a schedule needs at least one CTA");
  std::vector<std::vector<ScheduledTask>> queues(ctas);
  // CTAs by the time they become free (the cost model's), earliest first; ties by index
  using Slot = std::pair<double, int>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_at;
  for (int c = 0; c < ctas; ++c) free_at.push({0.0, c});
  std::vector<double> finish(g.kernels.size(), 0.0);
  double makespan = 0;
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    const TaskKernel& tk = g.kernels[k];
    double ready = 0;
    for (unsigned w : tk.waits) ready = std::max(ready, finish[w]);
    for (unsigned b = 0; b < tk.tasks(); ++b) {
      auto [t, c] = free_at.top();
      free_at.pop();
      const double end = std::max(t, ready) + tk.task_cost_us;
      queues[c].push_back({static_cast<unsigned>(k), b});
      free_at.push({end, c});
      finish[k] = std::max(finish[k], end);
    }
    makespan = std::max(makespan, finish[k]);
  }
  Schedule s;
  s.ctas = ctas;
  s.estimated_us = makespan;
  for (const auto& q : queues) {
    s.queue_start.push_back(static_cast<unsigned>(s.tasks.size()));
    s.tasks.insert(s.tasks.end(), q.begin(), q.end());
  }
  s.queue_start.push_back(static_cast<unsigned>(s.tasks.size()));
  return s;
}

void check_schedule(const TaskGraph& g, const Schedule& s) {
  auto fail = [](const std::string& what) { throw Error(ErrorCode::internal, "megakernel schedule: " + what); };
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    for (unsigned w : g.kernels[k].waits) {
      if (w >= k) fail("task kernel " + std::to_string(k) + " waits for kernel " + std::to_string(w) + ", not an earlier one");
    }
  }
  if (static_cast<int>(s.queue_start.size()) != s.ctas + 1 || s.queue_start.front() != 0 ||
      s.queue_start.back() != s.tasks.size()) {
    fail("the queue bounds do not cover the task list");
  }
  std::vector<std::vector<char>> seen(g.kernels.size());
  for (size_t k = 0; k < g.kernels.size(); ++k) seen[k].assign(g.kernels[k].tasks(), 0);
  for (int c = 0; c < s.ctas; ++c) {
    if (s.queue_start[c] > s.queue_start[c + 1]) fail("CTA " + std::to_string(c) + "'s queue ends before it starts");
    for (unsigned i = s.queue_start[c]; i < s.queue_start[c + 1]; ++i) {
      const ScheduledTask& t = s.tasks[i];
      if (t.kernel >= g.kernels.size() || t.block >= g.kernels[t.kernel].tasks()) {
        fail("CTA " + std::to_string(c) + " has a task outside every grid");
      }
      if (seen[t.kernel][t.block]++) {
        fail("task " + std::to_string(t.block) + " of kernel " + std::to_string(t.kernel) + " runs twice");
      }
      if (i > s.queue_start[c]) {
        const ScheduledTask& p = s.tasks[i - 1];
        if (p.kernel > t.kernel || (p.kernel == t.kernel && p.block > t.block)) {
          fail("CTA " + std::to_string(c) + "'s queue leaves the global order at position " +
               std::to_string(i - s.queue_start[c]));
        }
      }
    }
  }
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    for (size_t b = 0; b < seen[k].size(); ++b) {
      if (!seen[k][b]) fail("task " + std::to_string(b) + " of kernel " + std::to_string(k) + " is in no queue");
    }
  }
}

}  // namespace sinter::mega
