// Scaled dot-product attention, one query row at a time, exactly as the math reads: scores, bias
// or keep-mask, causal mask, a max-subtracted softmax, and the weighted sum of values. No tiling
// and no online softmax, so it is independent of how a flash-attention kernel is organized.
#include <cmath>
#include <limits>
#include <vector>

#include "ref/ops.hpp"

namespace sinter::ref {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Whether query row i may see key j under the causal mask.
bool causal_visible(CausalMask mask, int64_t i, int64_t j, int64_t sq, int64_t skv) {
  switch (mask) {
    case CausalMask::none: return true;
    case CausalMask::top_left: return j <= i;
    case CausalMask::bottom_right: return j <= i + (skv - sq);
  }
  return true;
}

}  // namespace

// q: [B, H, Sq, D], k: [B, Hkv, Skv, D], v: [B, Hkv, Skv, Dv], bias: broadcastable to
// [B, H, Sq, Skv]
// out: o [B, H, Sq, Dv]; stats [B, H, Sq, 1] when at.emit_stats
SdpaOutputs sdpa(const RefTensor& q, const RefTensor& k, const RefTensor& v, const RefTensor* bias,
                 bool bias_is_mask, const SdpaAttrs& at) {
  const int64_t nb = q.dims[0], nh = q.dims[1], sq = q.dims[2], d = q.dims[3];
  const int64_t nhkv = k.dims[1], skv = k.dims[2], dv = v.dims[3];
  const int64_t group = nh / nhkv;  // query heads per kv head (GQA / MQA)
  const double scale = at.scale.value_or(1.0 / std::sqrt(static_cast<double>(d)));

  SdpaOutputs out;
  out.o = RefTensor({nb, nh, sq, dv});
  if (at.emit_stats) out.stats = RefTensor({nb, nh, sq, 1});

  // The bias is read through broadcast strides over the full score shape.
  Dims bs(4, 0);
  if (bias) bs = broadcast_strides(bias->dims, {nb, nh, sq, skv});

  std::vector<double> scores(static_cast<size_t>(skv));
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t hkv = h / group;
      const double* kh = k.data.data() + (b * nhkv + hkv) * skv * d;
      const double* vh = v.data.data() + (b * nhkv + hkv) * skv * dv;
      for (int64_t i = 0; i < sq; ++i) {
        const double* qi = q.data.data() + ((b * nh + h) * sq + i) * d;
        // scores[j] = scale * q_i . k_j (+ bias, or -inf where masked)
        for (int64_t j = 0; j < skv; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < d; ++t) dot += qi[t] * kh[j * d + t];
          double sc = scale * dot;
          if (bias) {
            const double bv = (*bias)[b * bs[0] + h * bs[1] + i * bs[2] + j * bs[3]];
            if (bias_is_mask) {
              if (bv == 0) sc = kNegInf;
            } else {
              sc += bv;
            }
          }
          if (!causal_visible(at.causal, i, j, sq, skv)) sc = kNegInf;
          scores[j] = sc;
        }

        // The max ignores NaN so that a NaN score is not mistaken for a fully masked row; the NaN
        // then propagates through exp() into the output.
        double mx = kNegInf;
        bool has_nan = false;
        for (double sc : scores) {
          if (std::isnan(sc)) has_nan = true;
          if (sc > mx) mx = sc;
        }
        double* oi = out.o.data.data() + ((b * nh + h) * sq + i) * dv;
        if (mx == kNegInf && !has_nan) {
          // No visible key: o = 0 (already zero) and the log-sum-exp of nothing is -inf.
          if (at.emit_stats) out.stats[(b * nh + h) * sq + i] = kNegInf;
          continue;
        }
        double sum = 0;
        for (double& sc : scores) {
          sc = std::exp(sc - mx);  // masked keys give exp(-inf) = 0
          sum += sc;
        }
        for (int64_t j = 0; j < skv; ++j) {
          const double p = scores[j] / sum;
          for (int64_t t = 0; t < dv; ++t) oi[t] += p * vh[j * dv + t];
        }
        if (at.emit_stats) out.stats[(b * nh + h) * sq + i] = mx + std::log(sum);
      }
    }
  }
  return out;
}

}  // namespace sinter::ref
