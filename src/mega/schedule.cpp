#include "mega/schedule.hpp"

#include <algorithm>

#include "sinter/error.hpp"

namespace sinter::mega {

Schedule schedule_tasks(const TaskGraph& g, int ctas) {
  if (ctas <= 0) throw Error(ErrorCode::internal, "megakernel: a schedule needs at least one CTA");
  std::vector<std::vector<ScheduledTask>> queues(ctas);
  std::vector<double> free_at(ctas, 0.0);
  std::vector<double> finish(g.kernels.size(), 0.0);
  std::vector<std::vector<int>> ran_on(g.kernels.size());  // CTAs that ran each kernel's tasks
  std::vector<char> preferred(ctas, 0);
  double makespan = 0;
  constexpr double kTie = 1e-9;
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    const TaskKernel& tk = g.kernels[k];
    double ready = 0;
    for (unsigned w : tk.waits) ready = std::max(ready, finish[w]);
    std::fill(preferred.begin(), preferred.end(), 0);
    for (unsigned w : tk.waits) {
      for (int c : ran_on[w]) preferred[c] = 1;
    }
    for (unsigned b = 0; b < tk.tasks(); ++b) {
      int best = 0;
      double best_start = std::max(free_at[0], ready);
      for (int c = 1; c < ctas; ++c) {
        const double start = std::max(free_at[c], ready);
        if (start < best_start - kTie || (start < best_start + kTie && preferred[c] && !preferred[best])) {
          best = c;
          best_start = start;
        }
      }
      ScheduledTask t{static_cast<unsigned>(k), b, !tk.waits.empty()};
      for (unsigned w : tk.waits) {
        t.waits_met_locally &= ran_on[w].size() == 1 && ran_on[w][0] == best;
      }
      queues[best].push_back(t);
      preferred[best] = 0;  // the next task of this kernel: spread, not stacked on one CTA
      free_at[best] = best_start + tk.task_cost_us;
      finish[k] = std::max(finish[k], free_at[best]);
      if (ran_on[k].empty() || ran_on[k].back() != best) ran_on[k].push_back(best);
    }
    std::sort(ran_on[k].begin(), ran_on[k].end());
    ran_on[k].erase(std::unique(ran_on[k].begin(), ran_on[k].end()), ran_on[k].end());
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
      if (t.waits_met_locally) {
        // every task of every kernel it waits for is earlier in this queue
        for (unsigned w : g.kernels[t.kernel].waits) {
          unsigned here = 0;
          for (unsigned j = s.queue_start[c]; j < i; ++j) here += s.tasks[j].kernel == w;
          if (here != g.kernels[w].tasks()) {
            fail("a task of kernel " + std::to_string(t.kernel) + " on CTA " + std::to_string(c) +
                 " skips its wait for kernel " + std::to_string(w) + ", whose tasks did not all run before it there");
          }
        }
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
