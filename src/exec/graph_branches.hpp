// Graph mode's concurrent branches: which steps of a plan must wait for which, from the bytes each
// step reads and writes, and on which of a few capture streams each step is recorded, so that
// the CUDA graph holds the steps' true dependencies instead of one chain. Steps with no path
// between them (a layer's q, k and v projections; the rope of q beside the cache copy of v) then
// run at the same time, which matters where each is too small to fill the GPU.
//
// Two steps conflict where one writes bytes the other reads or writes (graph inputs and outputs
// at their bound addresses, intermediates at their arena offsets, which the memory plan may give
// to several tensors in turn, and each step's workspace); a later step depends on every earlier
// step it conflicts with. A barrier step (a collective: every rank must issue its collectives in
// one order) depends on every earlier step, and every later step on it.
//
// Pure functions of plain data; the runner (src/exec/runner.cpp) fills the accesses from its
// bindings and records the launches, events and waits this returns.
//
// Programmatic dependent launch: our kernels launch with programmatic stream serialization and
// each waits for its prerequisite grids (griddepcontrol.wait) before anything else and before it
// lets its dependents launch, so a kernel is done only after all its ancestors are, whether the
// capture makes an edge from another stream programmatic or full. Vendor kernels, memsets and
// cooperative launches carry no programmatic edge. Branches rely on that.
#pragma once

#include <cstdint>
#include <vector>

#include "engines/engine.hpp"
#include "fuse/region.hpp"

namespace sinter::exec {

// Bytes [begin, end) of device memory.
struct ByteRange {
  uintptr_t begin = 0, end = 0;
};

struct StepAccess {
  std::vector<ByteRange> reads, writes;
  bool barrier = false;
  bool launches = true;  // false: the step enqueues nothing (an alias), touches nothing, orders nothing
};

// What the step of region `r` touches at binding `b`: its inputs (read), its outputs and its
// workspace of `workspace_bytes` (written), each tensor over its storage bytes (an alias over its
// root's, where that is more). A step that launches nothing (an alias: its output is its input's
// memory) touches nothing: its readers read its input's bytes, so they follow that input's
// producer directly. `alias_of`: by tensor, the tensor whose memory it shares, or -1.
StepAccess step_access(const Graph& g, const fuse::Region& r, const Binding& b, uint64_t workspace_bytes,
                       bool launches_nothing, const std::vector<TensorId>& alias_of);

// The pairs (owner[a], owner[b]), a < b by owner then index order, of ranges whose bytes meet,
// sorted: what decides the dependencies among bound tensors.
std::vector<std::pair<int, int>> overlapping_pairs(const std::vector<ByteRange>& ranges, const std::vector<int>& owner);

// For each step, the earlier steps it must follow, transitively reduced (no step listed is
// already an ancestor of another one listed), in increasing order.
std::vector<std::vector<int>> step_dependencies(const std::vector<StepAccess>& steps);

struct GraphBranches {
  int streams = 1;              // capture streams used (stream 0: the one the capture began on)
  int launches = 0;             // steps that launch something
  int chain = 0;                // the most launching steps on one path of the dependencies
  std::vector<int> stream_of;   // by step
  // by step: the steps on other streams whose events it waits for before its launch
  std::vector<std::vector<int>> waits;
  std::vector<char> record;     // by step: record an event after its launch (some step waits for it)
};

// Puts each step on a stream, after its step_dependencies: a step continues the stream of a
// dependency that is that stream's last step (the dependency at the end of the longest chain
// first, then the latest), else takes a stream whose last step it already follows, else opens a
// new stream while fewer than max_streams are open, else takes the stream that went idle earliest
// (an extra order, never a missing one). max_streams 1: one chain in step order. A step that
// launches nothing goes on stream 0 with no waits and leaves the streams as they were.
GraphBranches place_branches(const std::vector<StepAccess>& steps, int max_streams);

}  // namespace sinter::exec
