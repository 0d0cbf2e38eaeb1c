// The task graph of one megakernel segment (DESIGN.md, "The megakernel"): every kernel of every
// step in the segment becomes a task kernel, a grid of tasks (one task a CTA of the standalone
// kernel), and a task kernel waits for every task of the task kernels that write what it reads.
// Dependencies are grouped by producer: one monotonic counter per task kernel, counting its
// finished tasks, with the producer's task count as the target. Plain data; a function of the
// segment's steps.
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
  std::vector<TensorId> reads;      // tensors it reads (aliases resolved to the stored tensor)
  std::vector<TensorId> writes;     // tensors it writes
  double bytes = 0;                 // read + written once, for the cost model
  std::vector<MegaTaskKernel> kernels;
};

struct TaskKernel {
  size_t segment_step = 0;   // index into TaskGraph::steps
  size_t kernel = 0;         // within the step
  unsigned function = 0;     // index into TaskGraph::functions
  unsigned grid[3] = {1, 1, 1};
  unsigned threads = 0;
  size_t dynamic_shared_memory = 0;
  size_t arg_bytes = 0;         // its argument struct
  std::vector<unsigned> waits;  // task kernels whose every task must be done first (smaller indices)
  double task_cost_us = 0;      // the cost model's estimate of one task
  unsigned tasks() const { return grid[0] * grid[1] * grid[2]; }
};

// A distinct generated source: task kernels with the same source share one device function.
struct TaskFunction {
  std::string source;
  std::string entry;
};

struct TaskGraph {
  std::vector<SegmentStep> steps;
  std::vector<TaskKernel> kernels;    // topological: steps in plan order, a step's kernels in order
  std::vector<TaskFunction> functions;
  size_t tasks = 0;
  unsigned max_threads = 0;
  size_t max_dynamic_shared_memory = 0;
  size_t max_arg_bytes = 0;
};

// Per-SM memory bandwidth the cost model assumes (bytes per microsecond): ~3.3 TB/s over 132 SMs.
constexpr double kBytesPerSmUs = 25000.0;
// A task's fixed cost in the model (waits, dispatch, its CTA's ramp): microseconds.
constexpr double kTaskOverheadUs = 0.5;

TaskGraph build_task_graph(std::vector<SegmentStep> steps);

// The longest chain of dependent task kernels by the cost model (each kernel counted as the cost
// of its tasks spread over `sm_count` SMs), in microseconds.
double critical_path_us(const TaskGraph& g, int sm_count);

}  // namespace sinter::mega
