// The task graph of one megakernel segment (DESIGN.md, "The megakernel"): every kernel of every
// step in the segment becomes a task kernel, a grid of tasks (one task a CTA of the standalone
// kernel). A task depends on the tasks of earlier kernels that write what it reads: where both
// kernels declare task boxes (engines/task_box.hpp), only on the producer tasks whose written box
// meets its read box (tile level), else on every task of the producer. Dependencies are grouped
// into counters: each task kernel has one counting all its finished tasks, and, where consumers
// need only part of it, counters over ranges of its blocks (a row block of a GEMV's output
// unlocks the rows that read it). A collective's push kernel counts each block's arrivals from
// every rank in a counter of its own, which the combine task of that block waits for. Plain
// data; a function of the segment's steps.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engines/engine.hpp"
#include "sinter/graph.hpp"

namespace sinter::mega {

// One plan step of a segment, as the task graph sees it.
struct SegmentStep {
  size_t step = 0;                  // plan step index
  std::string description;
  std::vector<TensorId> reads;      // tensors it reads, in region input order (aliases resolved to the stored tensor)
  std::vector<TensorId> writes;     // tensors it writes, in region output order
  double bytes = 0;                 // read + written once, for the cost model
  std::vector<MegaTaskKernel> kernels;
};

// Counts the finished tasks of blocks [lo, hi) of one task kernel; a collective's arrival counter
// counts them on every rank (`ranks` of them add to it).
struct Counter {
  unsigned kernel = 0;
  unsigned lo = 0, hi = 0;
  unsigned ranks = 0;  // 0: this rank's tasks only; n: the arrivals of n ranks' tasks
  unsigned tasks() const { return hi - lo; }
  // What a wait for the whole counter waits for (per launch).
  unsigned target() const { return tasks() * (ranks > 0 ? ranks : 1); }
};

struct TaskKernel {
  size_t segment_step = 0;   // index into TaskGraph::steps
  size_t kernel = 0;         // within the step
  unsigned function = 0;     // index into TaskGraph::functions
  unsigned grid[3] = {1, 1, 1};
  unsigned threads = 0;
  size_t dynamic_shared_memory = 0;
  size_t arg_bytes = 0;         // its argument struct
  unsigned registers = 0;       // its standalone kernel's registers a thread (0: not known)
  std::vector<unsigned> waits;  // task kernels some of its tasks wait for (smaller indices)
  // block -> the counters that task waits for (each of an earlier kernel)
  std::vector<std::vector<unsigned>> task_waits;
  // Its range counters: group g counts blocks [group_bounds[g], group_bounds[g + 1]) and is
  // counter first_group + g. Empty: only its whole-grid counter (counter index = kernel index).
  std::vector<unsigned> group_bounds;
  unsigned first_group = 0;
  // A collective's push kernel (MegaRankArrivals): the world whose ranks' tasks add to each of
  // its range counters (one per block); 0 for every other kernel.
  unsigned rank_arrivals = 0;
  double task_cost_us = 0;      // the cost model's estimate of one task
  // Its tasks run their function's prologue before their waits: the function has one and no
  // earlier step of the segment writes the input it reads.
  bool prologue = false;
  unsigned tasks() const { return grid[0] * grid[1] * grid[2]; }
  // The range counter block b adds to, or -1 when the kernel has none.
  long group_counter(unsigned block) const;
};

// A distinct generated source: task kernels with the same source share one device function.
struct TaskFunction {
  std::string source;
  std::string entry;
  bool prologue = false;  // the source defines sinter_task_prologue (MegaTaskKernel::prologue_slot)
};

struct TaskGraph {
  std::vector<SegmentStep> steps;
  std::vector<TaskKernel> kernels;    // topological: steps in plan order, a step's kernels in order
  std::vector<TaskFunction> functions;
  // counters[k] for k < kernels.size(): kernel k's whole grid; then every kernel's range counters
  std::vector<Counter> counters;
  size_t tasks = 0;
  unsigned max_threads = 0;
  size_t max_dynamic_shared_memory = 0;
  size_t max_arg_bytes = 0;
  unsigned max_registers = 0;  // of the task kernels' standalone kernels (0: none known)
};

// Per-SM memory bandwidth the cost model assumes (bytes per microsecond): ~3.3 TB/s over 132 SMs.
constexpr double kBytesPerSmUs = 25000.0;
// A task's fixed cost in the model (dispatch, its CTA's ramp): microseconds.
constexpr double kTaskOverheadUs = 0.3;
// What a counter wait on another CTA's task adds in the model (release, acquire, poll): microseconds.
constexpr double kRemoteWaitUs = 1.0;
// A consumer task that needs more than this many range counters of one producer waits for its
// whole grid instead.
constexpr size_t kMaxRangeWaits = 4;

TaskGraph build_task_graph(std::vector<SegmentStep> steps);

// The longest chain of dependent task kernels by the cost model (each kernel counted as the cost
// of its tasks spread over `sm_count` SMs), in microseconds.
double critical_path_us(const TaskGraph& g, int sm_count);

}  // namespace sinter::mega
