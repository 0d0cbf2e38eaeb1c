// The collectives' values, given every rank's input at once. A reduction combines the ranks in
// rank order (rank 0, then 1, ...) in float64, so its result does not depend on which rank asks
// and the executor rounds it once, at the tensor boundary, like any other node's.
#include <algorithm>
#include <cmath>

#include "ref/ops.hpp"
#include "sinter/error.hpp"

namespace sinter::ref {
namespace {

// xs: W tensors of the same dims
// out: those dims; out[i] = xs[0][i] (+ or max) xs[1][i] ... in rank order; NaN propagates in max
RefTensor reduce_ranks(const std::vector<const RefTensor*>& xs, CollectiveReduce reduce) {
  RefTensor acc = *xs[0];
  for (size_t r = 1; r < xs.size(); ++r) {
    const RefTensor& x = *xs[r];
    for (int64_t i = 0; i < acc.numel(); ++i) {
      if (reduce == CollectiveReduce::sum) {
        acc[i] += x[i];
      } else if (std::isnan(acc[i]) || std::isnan(x[i])) {
        acc[i] = std::nan("");
      } else {
        acc[i] = std::max(acc[i], x[i]);
      }
    }
  }
  return acc;
}

}  // namespace

std::vector<RefTensor> collective(OpKind op, const CollectiveAttrs& at, const std::vector<const RefTensor*>& xs) {
  const auto world = static_cast<int64_t>(xs.size());
  if (world != at.world || xs.empty()) {
    throw Error(ErrorCode::internal, "reference: a " + std::string(to_string(op)) + " of world " +
                                         std::to_string(at.world) + " got " + std::to_string(world) + " inputs");
  }
  switch (op) {
    case OpKind::all_reduce: return std::vector<RefTensor>(xs.size(), reduce_ranks(xs, at.reduce));
    case OpKind::all_gather: return std::vector<RefTensor>(xs.size(), concat(xs, ConcatAttrs{at.axis}));
    case OpKind::reduce_scatter: {
      // rank r's part: [r * n / W, (r + 1) * n / W) along the axis
      const RefTensor full = reduce_ranks(xs, at.reduce);
      const auto axis = static_cast<size_t>(at.axis);
      const int64_t part = full.dims[axis] / world;
      SliceAttrs s{Dims(full.dims.size(), 0), full.dims, Dims(full.dims.size(), 1)};
      std::vector<RefTensor> out;
      for (int64_t r = 0; r < world; ++r) {
        s.starts[axis] = r * part;
        s.ends[axis] = (r + 1) * part;
        out.push_back(slice(full, s));
      }
      return out;
    }
    default: break;
  }
  throw Error(ErrorCode::internal, "reference: op " + std::string(to_string(op)) + " is not a collective");
}

}  // namespace sinter::ref
