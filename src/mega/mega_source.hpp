// The generated megakernel: kernels/mega/megakernel.cuh's persistent loop over a CTA's tasks, and
// a dispatcher whose cases are the segment's task functions, each the standalone kernel's own
// generated source in a namespace of its own with its __global__ entry made a __device__ function.
#pragma once

#include <string>

#include "mega/task_graph.hpp"

namespace sinter::mega {

// The entry point of the generated source.
inline constexpr const char* kMegakernelEntry = "sinter_mega";

// The CTAs of the megakernel an SM should hold at once (its __launch_bounds__ minimum): as many as
// leave each thread 128 registers, or the registers the hungriest task's standalone kernel was
// compiled with where that is more, so no task spills where its standalone kernel does not. More
// resident CTAs keep more loads in flight, as the standalone kernels' several CTAs an SM do; fewer
// registers than 128 are not offered: the dispatcher itself would spill.
int megakernel_min_blocks(const TaskGraph& g);

// Throws Error(internal) when a task function's source lacks the standalone kernel's entry.
std::string megakernel_source(const TaskGraph& g);

}  // namespace sinter::mega
