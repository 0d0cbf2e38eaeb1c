// Layout ops. They move values without changing them, so each is a copy through a strided view:
// reshape keeps the row-major order, permute and slice read with rearranged or stepped strides,
// concat copies each input's blocks next to the others'.
#include "ref/ops.hpp"

#include <iomanip>
#include <sstream>
#include <string>

#include "sinter/error.hpp"

namespace sinter::ref {

// x: [...] with numel n
// out: at.dims with numel n, the same row-major sequence of values
RefTensor reshape(const RefTensor& x, const ReshapeAttrs& at) { return RefTensor(at.dims, x.data); }

// x: [d0, ..., dn-1]
// out: [d_perm[0], ..., d_perm[n-1]]; out[i0, ..., in-1] = x[j] with j[perm[a]] = i_a
RefTensor permute(const RefTensor& x, const PermuteAttrs& at) {
  const Dims in_strides = contiguous_strides(x.dims);
  Dims out_dims, strides;
  for (int64_t p : at.perm) {
    out_dims.push_back(x.dims[p]);
    strides.push_back(in_strides[p]);  // stepping output axis a steps input axis perm[a]
  }
  RefTensor out(out_dims);
  StridedCursor src(out_dims, strides);
  for (int64_t i = 0; i < out.numel(); ++i) out[i] = x[src.next()];
  return out;
}

// x: [d0, ..., dn-1]
// out: [ceil((end_a - start_a) / step_a) for each axis a]; out[i] = x[start + i * step]
RefTensor slice(const RefTensor& x, const SliceAttrs& at) {
  const Dims in_strides = contiguous_strides(x.dims);
  Dims out_dims, strides;
  int64_t base = 0;
  for (size_t a = 0; a < x.dims.size(); ++a) {
    out_dims.push_back((at.ends[a] - at.starts[a] + at.steps[a] - 1) / at.steps[a]);
    strides.push_back(in_strides[a] * at.steps[a]);
    base += at.starts[a] * in_strides[a];
  }
  RefTensor out(out_dims);
  StridedCursor src(out_dims, strides, base);
  for (int64_t i = 0; i < out.numel(); ++i) out[i] = x[src.next()];
  return out;
}

// xs: [..., c_i, ...] with c_i on axis at.axis, every other dim equal
// out: [..., sum(c_i), ...]
RefTensor concat(const std::vector<const RefTensor*>& xs, const ConcatAttrs& at) {
  const auto axis = static_cast<size_t>(at.axis);
  Dims out_dims = xs[0]->dims;
  out_dims[axis] = 0;
  for (const RefTensor* x : xs) out_dims[axis] += x->dims[axis];
  // Seen as [outer, axis * inner], each input contributes one contiguous block per outer index.
  int64_t outer = 1;
  for (size_t i = 0; i < axis; ++i) outer *= out_dims[i];
  RefTensor out(out_dims);
  const int64_t out_block = out.numel() / outer;
  int64_t col = 0;  // where this input's block starts inside an output block
  for (const RefTensor* x : xs) {
    const int64_t block = x->numel() / outer;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t t = 0; t < block; ++t) out[o * out_block + col + t] = (*x)[o * block + t];
    }
    col += block;
  }
  return out;
}

// x [..., n, ...] (n on axis at.axis), indices of any shape: out = x's axes before the axis, the
// indices' axes, x's axes after it. Seen as x [outer, n, inner] and out [outer, k, inner].
RefTensor gather(const RefTensor& x, const RefTensor& indices, const GatherAttrs& at, const std::string& who) {
  const auto axis = static_cast<size_t>(at.axis);
  Dims out_dims(x.dims.begin(), x.dims.begin() + at.axis);
  out_dims.insert(out_dims.end(), indices.dims.begin(), indices.dims.end());
  out_dims.insert(out_dims.end(), x.dims.begin() + at.axis + 1, x.dims.end());
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= x.dims[i];
  for (size_t i = axis + 1; i < x.dims.size(); ++i) inner *= x.dims[i];
  const int64_t n = x.dims[axis], k = indices.numel();
  std::vector<int64_t> picked(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) {
    const double v = indices[j];
    if (v < static_cast<double>(-n) || v >= static_cast<double>(n)) {
      // |v| may be past int64's range (a huge i64 index as a double): print it as a number
      std::ostringstream index;
      index << std::setprecision(19) << v;
      throw Error(ErrorCode::invalid_argument,
                  who + ": index " + index.str() + " at flat position " + std::to_string(j) +
                      " of the indices is outside [-" + std::to_string(n) + ", " + std::to_string(n) + ") (axis " +
                      std::to_string(at.axis) + " of size " + std::to_string(n) + ")");
    }
    const auto i = static_cast<int64_t>(v);
    picked[static_cast<size_t>(j)] = i < 0 ? i + n : i;
  }
  RefTensor out(out_dims);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t from = (o * n + picked[static_cast<size_t>(j)]) * inner, to = (o * k + j) * inner;
      for (int64_t t = 0; t < inner; ++t) out[to + t] = x[from + t];
    }
  }
  return out;
}

}  // namespace sinter::ref
