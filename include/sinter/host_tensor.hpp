// A tensor in host memory, stored bit-exactly in its dtype (bf16 as 2-byte patterns, fp8 as
// bytes, ...), with strides so that a view (a transposed weight, a broadcast) can be described
// exactly as the GPU will see it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sinter/dtype.hpp"
#include "sinter/graph.hpp"

namespace sinter {

class HostTensor {
 public:
  HostTensor() = default;
  // Zero-filled storage large enough for the view (dims, strides); row-major when strides empty.
  HostTensor(DType dtype, Dims dims, Dims strides = {});
  static HostTensor from_values(DType dtype, Dims dims, const std::vector<double>& values);

  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  const Dims& strides() const { return strides_; }
  int64_t numel() const { return num_elements(dims_); }
  // Bytes of storage: (largest offset the view reaches + 1) * element size.
  size_t storage_bytes() const { return bytes_.size(); }
  std::byte* data() { return bytes_.data(); }
  const std::byte* data() const { return bytes_.data(); }
  bool is_contiguous() const;

  // Element access by logical row-major index (0 <= i < numel()); values are rounded on store.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  // All elements in logical row-major order.
  std::vector<double> values() const;

 private:
  int64_t offset_of(int64_t logical) const;
  DType dtype_ = DType::f32;
  Dims dims_;
  Dims strides_;
  std::vector<std::byte> bytes_;
};

using TensorMap = std::map<std::string, HostTensor>;

// Fresh pseudo-random contents (deterministic in seed): floats uniform in [lo, hi), integers
// uniform in [lo, hi], bool 0/1. Writes the whole storage, including any gaps of a view.
void fill_random(HostTensor& t, uint64_t seed, double lo = -1.0, double hi = 1.0);

// Random host inputs for every graph input, with the declared dtype, dims and strides: uniform
// in [-1, 1), weights (a matmul's second operand, a conv filter) in [-b, b) with
// b = 1/sqrt(fan-in) as PyTorch initializes Linear and Conv layers, integers in [-8, 8] except a
// gather's indices, which take every valid index of the axis they pick from ([-n, n - 1]).
TensorMap random_inputs(const Graph& g, uint64_t seed);

// ||a - b|| / ||b|| over the logical elements (both must have the same dims). NaN in either gives
// NaN; two all-zero tensors give 0.
double relative_l2_error(const HostTensor& a, const HostTensor& b);

// The largest relative L2 error a GPU result of dtype `t` may have against the CPU reference
// (DESIGN.md): f32 1e-5, bf16/f16 1e-2, fp8 e4m3 7e-2 and e5m2 1.3e-1 (about half an ulp of
// their 3 and 2 mantissa bits), integers and bool 0 (exact).
double relative_l2_bound(DType t);

// The bound for output `out` of `g`: a float output carries the rounding of every float tensor
// computed on the way to it, so its bound is the loosest of their dtypes' bounds (a bf16 chain
// cast to f32 at the end is as accurate as bf16, not f32). Graph inputs are exact and do not
// count. Integer and bool outputs stay exact (bound 0).
double relative_l2_bound(const Graph& g, TensorId out);

struct TensorStats {
  double min = 0, max = 0, mean = 0, l2 = 0;
  int64_t nan_count = 0, inf_count = 0;
};
TensorStats tensor_stats(const HostTensor& t);

}  // namespace sinter
