// Row-wise ops over the last axis: softmax, layernorm, rmsnorm and rotary embeddings. Each row is
// computed on its own in float64, with the textbook two-pass formulas (no Welford, no online
// softmax), so they are independent of how a fused kernel organizes its reductions.
#include <cmath>
#include <limits>

#include "ref/ops.hpp"

namespace sinter::ref {

// x: [..., C]
// out: [..., C]
RefTensor softmax(const RefTensor& x) {
  const int64_t c = x.dims.back(), rows = x.numel() / c;
  RefTensor out(x.dims);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data.data() + r * c;
    double* yr = out.data.data() + r * c;
    // Subtracting the row max keeps exp() in range. A NaN in the row reaches the sum through
    // exp(NaN - max); a row of -inf or with a +inf gives exp(inf - inf) = NaN: IEEE arithmetic,
    // as torch.softmax does.
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < c; ++i) mx = xr[i] > mx ? xr[i] : mx;
    double sum = 0;
    for (int64_t i = 0; i < c; ++i) {
      yr[i] = std::exp(xr[i] - mx);
      sum += yr[i];
    }
    for (int64_t i = 0; i < c; ++i) yr[i] /= sum;
  }
  return out;
}

// x: [..., C], weight: [C], bias: [C] or null
// out: [..., C] = (x - mean) / sqrt(var + eps) * weight (+ bias), population variance
RefTensor layernorm(const RefTensor& x, const RefTensor& weight, const RefTensor* bias,
                    double epsilon) {
  const int64_t c = x.dims.back(), rows = x.numel() / c;
  RefTensor out(x.dims);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data.data() + r * c;
    double* yr = out.data.data() + r * c;
    double mean = 0;
    for (int64_t i = 0; i < c; ++i) mean += xr[i];
    mean /= static_cast<double>(c);
    double var = 0;
    for (int64_t i = 0; i < c; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(c);
    const double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < c; ++i) {
      yr[i] = (xr[i] - mean) * inv * weight[i] + (bias ? (*bias)[i] : 0.0);
    }
  }
  return out;
}

// x: [..., C], weight: [C], bias: [C] or null
// out: [..., C] = x / sqrt(mean(x^2) + eps) * weight (+ bias)
RefTensor rmsnorm(const RefTensor& x, const RefTensor& weight, const RefTensor* bias,
                  double epsilon) {
  const int64_t c = x.dims.back(), rows = x.numel() / c;
  RefTensor out(x.dims);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data.data() + r * c;
    double* yr = out.data.data() + r * c;
    double ms = 0;
    for (int64_t i = 0; i < c; ++i) ms += xr[i] * xr[i];
    ms /= static_cast<double>(c);
    const double inv = 1.0 / std::sqrt(ms + epsilon);
    for (int64_t i = 0; i < c; ++i) yr[i] = xr[i] * inv * weight[i] + (bias ? (*bias)[i] : 0.0);
  }
  return out;
}

// x: [..., D], cos and sin: [..., R/2] with leading dims broadcastable to x's
// out: [..., D]; the first R channels rotate in pairs, the rest pass through
//   half_split:  pair i = (x[i], x[i + R/2])
//   interleaved: pair i = (x[2i], x[2i + 1])
//   (a, b) -> (a cos_i - b sin_i, b cos_i + a sin_i)
RefTensor rope(const RefTensor& x, const RefTensor& cos, const RefTensor& sin,
               const RopeAttrs& at) {
  const int64_t d = x.dims.back(), half = cos.dims.back(), rows = x.numel() / d;
  const Dims lead_x(x.dims.begin(), x.dims.end() - 1);
  const Dims lead_cs(cos.dims.begin(), cos.dims.end() - 1);
  BroadcastCursor cs_row(lead_cs, lead_x);
  RefTensor out = x;  // channels past R pass through unchanged
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data.data() + r * d;
    double* yr = out.data.data() + r * d;
    const int64_t cr = cs_row.next() * half;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t ia = at.interleaved ? 2 * i : i;
      const int64_t ib = at.interleaved ? 2 * i + 1 : i + half;
      const double a = xr[ia], b = xr[ib], c = cos[cr + i], s = sin[cr + i];
      yr[ia] = a * c - b * s;
      yr[ib] = b * c + a * s;
    }
  }
  return out;
}

}  // namespace sinter::ref
