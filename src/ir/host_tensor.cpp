#include "sinter/host_tensor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <random>

#include "ir/gather_indices.hpp"
#include "sinter/error.hpp"

namespace sinter {

HostTensor::HostTensor(DType dtype, Dims dims, Dims strides)
    : dtype_(dtype), dims_(std::move(dims)), strides_(std::move(strides)) {
  if (strides_.empty()) strides_ = contiguous_strides(dims_);
  if (strides_.size() != dims_.size()) {
    throw Error(ErrorCode::invalid_argument, "HostTensor: strides " + dims_to_string(strides_) +
                                                 " do not match dims " + dims_to_string(dims_));
  }
  int64_t last = 0;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] < 1 || strides_[i] < 0) {
      throw Error(ErrorCode::invalid_argument, "HostTensor: bad dims " + dims_to_string(dims_) +
                                                   " or strides " + dims_to_string(strides_));
    }
    last += (dims_[i] - 1) * strides_[i];
  }
  const int64_t bytes = (last + 1) * static_cast<int64_t>(dtype_size(dtype_));
  try {
    bytes_.assign(static_cast<size_t>(bytes), std::byte{0});
  } catch (const std::bad_alloc&) {
    // a valid graph can hold tensors no host can (dims up to 2^50 elements): say which and how big
    throw Error(ErrorCode::unsupported, "host memory: a " + std::string(to_string(dtype_)) + " " +
                                            dims_to_string(dims_) + " tensor needs " + std::to_string(bytes) +
                                            " bytes, more than this machine can allocate");
  }
}

HostTensor HostTensor::from_values(DType dtype, Dims dims, const std::vector<double>& values) {
  HostTensor t(dtype, std::move(dims));
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    throw Error(ErrorCode::invalid_argument,
                "HostTensor::from_values: " + std::to_string(values.size()) + " values for dims " +
                    dims_to_string(t.dims()));
  }
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, values[i]);
  return t;
}

bool HostTensor::is_contiguous() const { return strides_ == contiguous_strides(dims_); }

int64_t HostTensor::offset_of(int64_t logical) const {
  int64_t off = 0;
  for (size_t i = dims_.size(); i-- > 0;) {
    off += (logical % dims_[i]) * strides_[i];
    logical /= dims_[i];
  }
  return off;
}

double HostTensor::get(int64_t i) const {
  return decode_value(bytes_.data() + offset_of(i) * dtype_size(dtype_), dtype_);
}

void HostTensor::set(int64_t i, double v) {
  encode_value(v, dtype_, bytes_.data() + offset_of(i) * dtype_size(dtype_));
}

std::vector<double> HostTensor::values() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  if (is_contiguous()) {
    const int64_t es = dtype_size(dtype_);
    for (size_t i = 0; i < out.size(); ++i) out[i] = decode_value(bytes_.data() + i * es, dtype_);
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = get(static_cast<int64_t>(i));
  }
  return out;
}

void fill_random(HostTensor& t, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  const int64_t es = dtype_size(t.dtype());
  const int64_t n = static_cast<int64_t>(t.storage_bytes()) / es;
  std::byte* p = t.data();
  if (is_float(t.dtype())) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < n; ++i) encode_value(dist(rng), t.dtype(), p + i * es);
  } else if (is_integer(t.dtype())) {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(std::ceil(lo)),
                                                static_cast<int64_t>(std::floor(hi)));
    for (int64_t i = 0; i < n; ++i) {
      encode_value(static_cast<double>(dist(rng)), t.dtype(), p + i * es);
    }
  } else {
    std::bernoulli_distribution dist(0.5);
    for (int64_t i = 0; i < n; ++i) encode_value(dist(rng) ? 1.0 : 0.0, t.dtype(), p + i * es);
  }
}

namespace {

// 1/sqrt(fan-in) for a tensor that some node uses as weights (a matmul's second operand, a conv
// filter), else 1: the bound of PyTorch's default Linear and Conv init, which keeps activations
// near unit scale through a network, as trained weights do. Without it, random weights make
// attention scores so large that softmax becomes an argmax whose winner flips with any rounding.
double weight_scale(const Graph& g, TensorId id) {
  for (const Node& n : g.nodes()) {
    if (n.inputs.size() < 2 || n.inputs[1] != id) continue;
    const Dims& d = g.tensor(id).dims;
    if (n.op == OpKind::matmul) return 1.0 / std::sqrt(static_cast<double>(d[d.size() - 2]));
    if (n.op == OpKind::conv2d) return 1.0 / std::sqrt(static_cast<double>(d[1] * d[2] * d[3]));
  }
  return 1.0;
}

}  // namespace

TensorMap random_inputs(const Graph& g, uint64_t seed) {
  TensorMap m;
  uint64_t s = seed;
  for (TensorId id : g.inputs()) {
    const TensorInfo& info = g.tensor(id);
    HostTensor t(info.dtype, info.dims, info.strides);
    const bool is_int = is_integer(info.dtype);
    double lo = is_int ? -8.0 : -weight_scale(g, id), hi = -lo;
    if (const int64_t n = is_int ? gather_index_range(g, id) : 0; n > 0) {
      lo = -static_cast<double>(n), hi = static_cast<double>(n - 1);  // every valid index, negative ones too
    }
    fill_random(t, s++ * 0x9e3779b97f4a7c15ull + 1, lo, hi);
    m.emplace(info.name, std::move(t));
  }
  return m;
}

double relative_l2_error(const HostTensor& a, const HostTensor& b) {
  if (a.dims() != b.dims()) {
    throw Error(ErrorCode::invalid_argument, "relative_l2_error: dims " +
                                                 dims_to_string(a.dims()) + " and " +
                                                 dims_to_string(b.dims()) + " differ");
  }
  const auto va = a.values(), vb = b.values();
  double num = 0, den = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) || std::isnan(vb[i])) return std::numeric_limits<double>::quiet_NaN();
    if (std::isinf(va[i]) || std::isinf(vb[i])) {
      if (va[i] == vb[i]) continue;  // the same infinity is a match
      return std::numeric_limits<double>::infinity();
    }
    const double d = va[i] - vb[i];
    num += d * d;
    den += vb[i] * vb[i];
  }
  if (den == 0) return num == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

double relative_l2_bound(DType t) {
  switch (t) {
    case DType::f32: return 1e-5;
    case DType::f16:
    case DType::bf16: return 1e-2;
    case DType::fp8_e4m3: return 7e-2;
    case DType::fp8_e5m2: return 1.3e-1;
    default: return 0;
  }
}

double relative_l2_bound(const Graph& g, TensorId out) {
  const DType own = g.tensor(out).dtype;
  if (!is_float(own)) return relative_l2_bound(own);
  double bound = relative_l2_bound(own);
  std::vector<bool> seen(g.tensors().size(), false);
  std::vector<TensorId> todo{out};
  while (!todo.empty()) {
    const TensorId t = todo.back();
    todo.pop_back();
    if (seen[t]) continue;
    seen[t] = true;
    const TensorInfo& info = g.tensor(t);
    if (info.producer < 0) continue;  // a graph input: exact
    if (is_float(info.dtype)) bound = std::max(bound, relative_l2_bound(info.dtype));
    for (TensorId in : g.node(info.producer).inputs) todo.push_back(in);
  }
  return bound;
}

TensorStats tensor_stats(const HostTensor& t) {
  TensorStats s;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  double sum = 0, sq = 0;
  int64_t finite = 0;
  for (double v : t.values()) {
    if (std::isnan(v)) {
      ++s.nan_count;
      continue;
    }
    if (std::isinf(v)) ++s.inf_count;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    if (std::isfinite(v)) {
      sum += v;
      sq += v * v;
      ++finite;
    }
  }
  s.mean = finite ? sum / static_cast<double>(finite) : 0;
  s.l2 = std::sqrt(sq);
  return s;
}

}  // namespace sinter
