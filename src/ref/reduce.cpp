// Reductions over a set of axes. Sums accumulate in float64 in row-major order of the input;
// max, min and amax propagate NaN (as torch.amax does), which a plain `>` comparison would drop.
#include <cmath>
#include <limits>
#include <vector>

#include "ref/ops.hpp"
#include "sinter/error.hpp"

namespace sinter::ref {

// x: [d0, ..., dn-1], axes A (all when empty)
// out: x's dims without the axes in A (keepdim: with size 1 there)
RefTensor reduce(OpKind op, const RefTensor& x, const ReduceAttrs& at) {
  // The keepdim shape: reduced axes become 1. Broadcasting this shape back over x maps every input
  // element to the output element it reduces into, and dropping the size-1 axes afterwards does
  // not change the row-major order.
  std::vector<bool> reduced(x.dims.size(), at.axes.empty());
  for (int64_t a : at.axes) reduced[static_cast<size_t>(a)] = true;
  Dims kept = x.dims;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (reduced[i]) kept[i] = 1;
  }
  const int64_t count = x.numel() / num_elements(kept);  // elements per output

  const double inf = std::numeric_limits<double>::infinity();
  double init = 0;
  switch (op) {
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::reduce_amax: init = 0; break;  // |x| >= 0
    case OpKind::reduce_max: init = -inf; break;
    case OpKind::reduce_min: init = inf; break;
    default:
      throw Error(ErrorCode::internal,
                  "reference: op " + std::string(to_string(op)) + " is not a reduction");
  }
  RefTensor out(kept);
  for (double& v : out.data) v = init;
  std::vector<bool> saw_nan(static_cast<size_t>(out.numel()), false);

  BroadcastCursor to_out(kept, x.dims);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t o = to_out.next();
    const double v = x[i];
    if (std::isnan(v)) saw_nan[o] = true;
    switch (op) {
      case OpKind::reduce_sum:
      case OpKind::reduce_mean: out[o] += v; break;
      case OpKind::reduce_max: out[o] = v > out[o] ? v : out[o]; break;
      case OpKind::reduce_min: out[o] = v < out[o] ? v : out[o]; break;
      case OpKind::reduce_amax: out[o] = std::fabs(v) > out[o] ? std::fabs(v) : out[o]; break;
      default: break;
    }
  }
  for (int64_t o = 0; o < out.numel(); ++o) {
    if (op == OpKind::reduce_mean) out[o] /= static_cast<double>(count);
    if (saw_nan[o]) out[o] = std::numeric_limits<double>::quiet_NaN();
  }

  if (!at.keepdim) {
    Dims dropped;
    for (size_t i = 0; i < x.dims.size(); ++i) {
      if (!reduced[i]) dropped.push_back(x.dims[i]);
    }
    out.dims = dropped;
  }
  return out;
}

}  // namespace sinter::ref
