// The static schedule of a task graph: one queue of tasks per CTA of the megakernel, built by list
// scheduling over the cost model: tasks in topological order (task kernels in order, a kernel's
// tasks by block), each to the CTA that can start it first, where a task whose producers all ran
// on that CTA starts when they finish and any other waits kRemoteWaitUs longer (a chain of tasks
// that each read what one task wrote stays on one CTA and needs no counter waits); among equal
// starts, to a CTA that ran one of its producers. Every queue is then
// in the one global topological order, which is what makes the megakernel deadlock-free with
// every CTA resident: the earliest unfinished task has all its producers done and every task
// before it on its CTA done, so it can always run. check_schedule proves that property of a
// schedule (and that every task runs exactly once) before it is used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mega/task_graph.hpp"

namespace sinter::mega {

struct ScheduledTask {
  unsigned kernel = 0;  // task kernel index
  unsigned block = 0;   // linear block index within its grid
  // Every task of every kernel it waits for ran earlier on the same CTA: the CTA's own order
  // (and its barriers) make their writes visible, so it skips the counters.
  bool waits_met_locally = false;
};

struct Schedule {
  int ctas = 0;
  std::vector<ScheduledTask> tasks;     // every CTA's queue, one after the other
  std::vector<unsigned> queue_start;    // ctas + 1 entries: CTA c runs tasks[queue_start[c] .. queue_start[c + 1])
  double estimated_us = 0;              // the cost model's makespan
};

Schedule schedule_tasks(const TaskGraph& g, int ctas);

// Throws Error(internal) naming the first violation: a task missing or run twice, a wait on a
// kernel that is not earlier, a queue out of the global order.
void check_schedule(const TaskGraph& g, const Schedule& s);

}  // namespace sinter::mega
