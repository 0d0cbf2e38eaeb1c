// Which values a tensor may take when some gather uses them as indices: random test and tuning
// inputs draw such tensors from the valid range, so that a gather never sees an index out of it.
#pragma once

#include <cstdint>

#include "sinter/graph.hpp"

namespace sinter {

// The size n of the smallest axis a gather picks from with the values of tensor `t`, directly or
// through ops that move values unchanged (reshape, permute, slice, concat, cast), so that any
// value in [-n, n) is a valid index; 0 when no gather reads them.
int64_t gather_index_range(const Graph& g, TensorId t);

}  // namespace sinter
