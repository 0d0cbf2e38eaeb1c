// argmax and argmin along one axis, as torch.argmax/argmin: the first extreme wins ties, and the
// first NaN of a slice beats every number (NaN propagates as it does in reduce_max).
#include <cmath>

#include "ref/ops.hpp"
#include "sinter/error.hpp"

namespace sinter::ref {

// x: [outer..., n, inner...], the axis of length n
// out: [outer..., inner...] (keepdim: [outer..., 1, inner...]) of indices in [0, n)
RefTensor arg_reduce(OpKind op, const RefTensor& x, const ArgReduceAttrs& at) {
  if (op != OpKind::argmax && op != OpKind::argmin) {
    throw Error(ErrorCode::internal,
                "reference: op " + std::string(to_string(op)) + " is not an index reduction");
  }
  const auto axis = static_cast<size_t>(at.axis);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= x.dims[i];
  for (size_t i = axis + 1; i < x.dims.size(); ++i) inner *= x.dims[i];
  const int64_t n = x.dims[axis];

  Dims out_dims;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    if (i != axis) {
      out_dims.push_back(x.dims[i]);
    } else if (at.keepdim) {
      out_dims.push_back(1);
    }
  }
  RefTensor out(out_dims);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      int64_t best = 0;
      double best_v = x[base];
      for (int64_t k = 1; k < n && !std::isnan(best_v); ++k) {
        const double v = x[base + k * inner];
        const bool better = std::isnan(v) || (op == OpKind::argmax ? v > best_v : v < best_v);
        if (better) {
          best = k;
          best_v = v;
        }
      }
      out[o * inner + i] = static_cast<double>(best);
    }
  }
  return out;
}

}  // namespace sinter::ref
