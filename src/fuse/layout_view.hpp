// Layout ops as strided views: a chain of slices, reshapes and permutes, each reading the one
// before, moves no data until its last op is copied out, so the whole chain reads its first
// input through one (dims, strides, offset) view. The partitioner folds such chains into one
// layout region (one copy kernel instead of one per op), and codegen_layout.cpp emits that copy.
#pragma once

#include <optional>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter::fuse {

// dims[i] elements, strides[i] elements apart, starting `offset` elements into the buffer.
struct StridedView {
  Dims dims;
  Dims strides;
  int64_t offset = 0;
};

// The view `base` becomes after `op` (a slice, reshape or permute), or nullopt where a reshape
// would have to merge dims that are not laid out one after the other (no strides express it).
std::optional<StridedView> apply_layout_op(const Node& op, const StridedView& base);

// The view of the first node's input (as its TensorInfo lays it out) after every node of
// `chain` in order, or nullopt where a reshape cannot be expressed.
std::optional<StridedView> compose_layout_chain(const Graph& g, const std::vector<NodeId>& chain);

// Strides for `to` over the same elements as a view (from, from_strides), or nullopt.
std::optional<Dims> reshape_strides(const Dims& from, const Dims& from_strides, const Dims& to);

}  // namespace sinter::fuse
