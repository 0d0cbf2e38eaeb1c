#include "mega/schedule.hpp"

#include <algorithm>

#include "sinter/error.hpp"

namespace sinter::mega {

Schedule schedule_tasks(const TaskGraph& g, int ctas) {
  if (ctas <= 0) throw Error(ErrorCode::internal, "megakernel: a schedule needs at least one CTA");
  std::vector<std::vector<ScheduledTask>> queues(ctas);
  std::vector<double> free_at(ctas, 0.0);
  std::vector<std::vector<int>> cta_of(g.kernels.size());
  std::vector<std::vector<double>> finish_of(g.kernels.size());
  std::vector<double> counter_finish(g.counters.size(), 0.0);
  std::vector<int> counter_cta(g.counters.size(), -1);  // the one CTA that ran all its tasks, else -1
  std::vector<std::vector<unsigned>> counters_of(g.kernels.size());
  for (unsigned c = 0; c < g.counters.size(); ++c) counters_of[g.counters[c].kernel].push_back(c);
  double makespan = 0;
  constexpr double kTie = 1e-9;
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    const TaskKernel& tk = g.kernels[k];
    cta_of[k].assign(tk.tasks(), -1);
    finish_of[k].assign(tk.tasks(), 0.0);
    for (unsigned b = 0; b < tk.tasks(); ++b) {
      const std::vector<unsigned>& waits = tk.task_waits[b];
      // the ready time on a CTA that ran none of the producers, and the CTAs that ran some
      double remote_ready = 0;
      for (unsigned w : waits) remote_ready = std::max(remote_ready, counter_finish[w] + kRemoteWaitUs);
      auto ready_on = [&](int c) {
        double r = 0;
        for (unsigned w : waits) r = std::max(r, counter_finish[w] + (counter_cta[w] == c ? 0.0 : kRemoteWaitUs));
        return r;
      };
      int best = -1;
      double best_start = 0;
      bool best_near = false;
      for (int c = 0; c < ctas; ++c) {
        bool near = false;
        for (unsigned w : waits) near |= counter_cta[w] == c;
        const double start = std::max(free_at[c], near ? ready_on(c) : remote_ready);
        if (best < 0 || start < best_start - kTie || (start < best_start + kTie && near && !best_near)) {
          best = c;
          best_start = start;
          best_near = near;
        }
      }
      bool local = !waits.empty();
      for (unsigned w : waits) local &= counter_cta[w] == best;
      queues[best].push_back({static_cast<unsigned>(k), b, local});
      free_at[best] = best_start + tk.task_cost_us;
      cta_of[k][b] = best;
      finish_of[k][b] = free_at[best];
      makespan = std::max(makespan, free_at[best]);
    }
    for (unsigned c : counters_of[k]) {
      const Counter& ct = g.counters[c];
      double f = 0;
      int cta = cta_of[k][ct.lo];
      for (unsigned b = ct.lo; b < ct.hi; ++b) {
        f = std::max(f, finish_of[k][b]);
        if (cta_of[k][b] != cta) cta = -1;
      }
      counter_finish[c] = f;
      counter_cta[c] = ct.ranks > 0 ? -1 : cta;  // other ranks add to a collective's arrivals
    }
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
    const TaskKernel& tk = g.kernels[k];
    if (tk.task_waits.size() != tk.tasks()) fail("task kernel " + std::to_string(k) + " lacks the waits of some task");
    for (const auto& waits : tk.task_waits) {
      for (unsigned w : waits) {
        if (w >= g.counters.size() || g.counters[w].kernel >= k) {
          fail("a task of kernel " + std::to_string(k) + " waits for counter " + std::to_string(w) +
               ", not one of an earlier kernel");
        }
      }
    }
  }
  if (static_cast<int>(s.queue_start.size()) != s.ctas + 1 || s.queue_start.front() != 0 ||
      s.queue_start.back() != s.tasks.size()) {
    fail("the queue bounds do not cover the task list");
  }
  // where each task runs: CTA and position in the task list (-1: nowhere yet)
  std::vector<std::vector<std::pair<int, long>>> at(g.kernels.size());
  for (size_t k = 0; k < g.kernels.size(); ++k) at[k].assign(g.kernels[k].tasks(), {-1, -1});
  for (int c = 0; c < s.ctas; ++c) {
    if (s.queue_start[c] > s.queue_start[c + 1]) fail("CTA " + std::to_string(c) + "'s queue ends before it starts");
    for (unsigned i = s.queue_start[c]; i < s.queue_start[c + 1]; ++i) {
      const ScheduledTask& t = s.tasks[i];
      if (t.kernel >= g.kernels.size() || t.block >= g.kernels[t.kernel].tasks()) {
        fail("CTA " + std::to_string(c) + " has a task outside every grid");
      }
      if (at[t.kernel][t.block].first >= 0) {
        fail("task " + std::to_string(t.block) + " of kernel " + std::to_string(t.kernel) + " runs twice");
      }
      at[t.kernel][t.block] = {c, static_cast<long>(i)};
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
    for (size_t b = 0; b < at[k].size(); ++b) {
      if (at[k][b].first < 0) fail("task " + std::to_string(b) + " of kernel " + std::to_string(k) + " is in no queue");
    }
  }
  // a task that skips its waits: every task it waits for ran earlier on its CTA
  for (const ScheduledTask& t : s.tasks) {
    if (!t.waits_met_locally) continue;
    const auto [cta, pos] = at[t.kernel][t.block];
    for (unsigned w : g.kernels[t.kernel].task_waits[t.block]) {
      const Counter& ct = g.counters[w];
      if (ct.ranks > 0) {
        fail("task " + std::to_string(t.block) + " of kernel " + std::to_string(t.kernel) +
             " skips its wait for arrivals from other ranks (counter " + std::to_string(w) + ")");
      }
      for (unsigned b = ct.lo; b < ct.hi; ++b) {
        if (at[ct.kernel][b].first != cta || at[ct.kernel][b].second >= pos) {
          fail("task " + std::to_string(t.block) + " of kernel " + std::to_string(t.kernel) + " on CTA " +
               std::to_string(cta) + " skips its wait for task " + std::to_string(b) + " of kernel " +
               std::to_string(ct.kernel) + ", which does not run before it there");
        }
      }
    }
  }
}

}  // namespace sinter::mega
