// The arena memory plan: every tensor stored between steps gets an offset in one arena, and two
// tensors share bytes only when one's lifetime (from the step that writes it to the last step that
// reads it) ends before the other's begins in every order of the steps that keeps their data
// dependencies: every step touching the first is an ancestor of the step writing the second. So
// the arena adds no order between steps that the data does not (graph mode runs independent
// steps side by side). Graph inputs and outputs are not in the arena: callers bind their memory.
#pragma once

#include <cstdint>
#include <vector>

#include "fuse/region.hpp"

namespace sinter::plan {

struct BufferAssignment {
  TensorId tensor = -1;
  size_t offset = 0;
  size_t bytes = 0;
  int first_step = 0;  // the step (region index) that writes it
  int last_step = 0;   // the last step that reads it (the end for graph outputs)
};

struct MemoryPlan {
  std::vector<BufferAssignment> buffers;  // stored tensors, in the order of their first step
  size_t arena_bytes = 0;                 // with reuse
  size_t naive_bytes = 0;                 // every tensor in its own slot, for comparison
};

constexpr size_t kArenaAlignment = 256;

// Bytes a tensor occupies with its strides (row-major tensors: numel * element size).
size_t storage_bytes(const TensorInfo& t);

// `aliases[t] >= 0` marks a tensor that shares the memory of another (a reshape); it gets no
// buffer of its own and extends the lifetime of the tensor it aliases.
MemoryPlan plan_memory(const Graph& g, const fuse::Partition& p, const std::vector<TensorId>& aliases);

// Checks that no two buffers with overlapping lifetimes overlap in memory; throws
// Error(internal) naming both tensors otherwise.
void verify_memory_plan(const Graph& g, const MemoryPlan& plan);

}  // namespace sinter::plan
