// Host tensors to and from the C-contiguous float64 arrays the reference bindings exchange with
// python/sinter (reference.py, ranks.py convert the caller's numpy arrays): values are rounded to
// the tensor's dtype by HostTensor::set, as in C++.
#pragma once

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "sinter/host_tensor.hpp"

namespace sinter::python {

using Float64In = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using Float64Out = nb::ndarray<nb::numpy, double>;

// `values` as a host tensor of `dtype` with the array's shape.
inline HostTensor host_tensor(DType dtype, const Float64In& values) {
  Dims dims(values.ndim());
  for (size_t i = 0; i < values.ndim(); ++i) dims[i] = static_cast<int64_t>(values.shape(i));
  HostTensor h(dtype, dims);
  const double* data = values.data();
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, data[i]);
  return h;
}

inline Float64Out to_array(const HostTensor& t) {
  std::vector<double>* values = new std::vector<double>(t.values());
  nb::capsule owner(values, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  std::vector<size_t> shape(t.dims().begin(), t.dims().end());
  return Float64Out(values->data(), shape.size(), shape.data(), owner);
}

// {name: array} of every tensor of `m`.
inline nb::dict to_arrays(const TensorMap& m) {
  nb::dict d;
  for (const auto& [name, t] : m) d[name.c_str()] = to_array(t);
  return d;
}

}  // namespace sinter::python
