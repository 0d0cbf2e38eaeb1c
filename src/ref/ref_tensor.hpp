// The reference executor's internal tensor: dense, row-major, float64. Every value a graph
// computes lives here between nodes, already rounded to its tensor's dtype by the executor, so the
// op functions see exactly the values a GPU kernel would load. Plain on purpose: an oracle has to
// be easy to read.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter::ref {

struct RefTensor {
  Dims dims;                 // row-major logical shape; rank 0 holds one value
  std::vector<double> data;  // num_elements(dims) values in row-major order

  RefTensor() = default;
  explicit RefTensor(Dims d) : dims(std::move(d)), data(static_cast<size_t>(num_elements(dims))) {}
  RefTensor(Dims d, std::vector<double> values) : dims(std::move(d)), data(std::move(values)) {}

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  double& operator[](int64_t i) { return data[static_cast<size_t>(i)]; }
  double operator[](int64_t i) const { return data[static_cast<size_t>(i)]; }
};

// Strides (in elements) with which an operand of shape `operand` is read when it is broadcast to
// `out` (numpy rules: shapes align at the right; a size-1 or missing axis repeats, so its stride
// is 0). The result has out's rank. `operand` must broadcast to `out`.
inline Dims broadcast_strides(const Dims& operand, const Dims& out) {
  Dims s(out.size(), 0);
  const size_t lead = out.size() - operand.size();
  int64_t acc = 1;
  for (size_t i = operand.size(); i-- > 0;) {
    s[lead + i] = operand[i] == 1 ? 0 : acc;
    acc *= operand[i];
  }
  return s;
}

// Walks the elements of a strided view of a row-major operand in the view's row-major order:
// element `idx` of the view sits at operand offset base + sum(idx[i] * strides[i]). An odometer
// keeps the walk O(1) per element, so `for i in out: y[i] = x[cursor.next()]` needs no division.
// Permute and slice are such views; broadcasting is one with stride 0 on repeated axes.
class StridedCursor {
 public:
  StridedCursor(Dims view_dims, Dims strides, int64_t base = 0)
      : dims_(std::move(view_dims)), strides_(std::move(strides)), idx_(dims_.size(), 0),
        offset_(base) {}

  // Operand offset of the current view element; then steps to the next one.
  int64_t next() {
    const int64_t here = offset_;
    for (size_t i = dims_.size(); i-- > 0;) {
      offset_ += strides_[i];
      if (++idx_[i] < dims_[i]) break;
      offset_ -= strides_[i] * dims_[i];
      idx_[i] = 0;
    }
    return here;
  }

 private:
  Dims dims_;
  Dims strides_;
  Dims idx_;
  int64_t offset_;
};

// Maps the flat indices of an output shape, in order, to the flat indices of an operand that
// broadcasts to it.
class BroadcastCursor : public StridedCursor {
 public:
  BroadcastCursor(const Dims& operand, const Dims& out)
      : StridedCursor(out, broadcast_strides(operand, out)) {}
};

}  // namespace sinter::ref
