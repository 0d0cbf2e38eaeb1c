// 2-D convolution, NHWC activations and KRSC weights, as cuDNN and PyTorch define it: a
// cross-correlation (the filter is not flipped) with stride, dilation, asymmetric zero padding
// and groups.
#include <vector>

#include "ref/ops.hpp"

namespace sinter::ref {

// x: [N, H, W, C], w: [K, R, S, C/G]
// out: [N, P, Q, K] with P = (H + pad_top + pad_bottom - dil_h * (R - 1) - 1) / stride_h + 1
//   out[n, p, q, k] = sum over r, s, c < C/G of
//       x[n, p * stride_h - pad_top + r * dil_h, q * stride_w - pad_left + s * dil_w, g * C/G + c]
//       * w[k, r, s, c]        where g = k / (K/G), and x outside the image is zero.
RefTensor conv2d(const RefTensor& x, const RefTensor& w, const Conv2dAttrs& at) {
  const int64_t n_img = x.dims[0], h = x.dims[1], wd = x.dims[2], c = x.dims[3];
  const int64_t k = w.dims[0], r = w.dims[1], s = w.dims[2], cg = w.dims[3];
  const int64_t groups = at.groups, kg = k / groups;
  const int64_t p_out = (h + at.pad_begin[0] + at.pad_end[0] - at.dilation[0] * (r - 1) - 1) /
                            at.stride[0] + 1;
  const int64_t q_out = (wd + at.pad_begin[1] + at.pad_end[1] - at.dilation[1] * (s - 1) - 1) /
                            at.stride[1] + 1;
  RefTensor out({n_img, p_out, q_out, k});

  // The weights regrouped as [G, R, S, C/G, K/G] so that the innermost loop runs over the output
  // channels of one group contiguously (a vectorizable axpy). Each output still sums its products
  // in the order (r, s, c), the order of an im2col column.
  std::vector<double> wt(static_cast<size_t>(w.numel()));
  for (int64_t ko = 0; ko < k; ++ko) {
    const int64_t g = ko / kg, kk = ko % kg;
    for (int64_t ri = 0; ri < r; ++ri) {
      for (int64_t si = 0; si < s; ++si) {
        for (int64_t ci = 0; ci < cg; ++ci) {
          wt[(((g * r + ri) * s + si) * cg + ci) * kg + kk] = w[((ko * r + ri) * s + si) * cg + ci];
        }
      }
    }
  }

  for (int64_t ni = 0; ni < n_img; ++ni) {
    for (int64_t pi = 0; pi < p_out; ++pi) {
      for (int64_t qi = 0; qi < q_out; ++qi) {
        double* acc = out.data.data() + ((ni * p_out + pi) * q_out + qi) * k;  // zero-initialized
        for (int64_t ri = 0; ri < r; ++ri) {
          const int64_t ih = pi * at.stride[0] - at.pad_begin[0] + ri * at.dilation[0];
          if (ih < 0 || ih >= h) continue;  // zero padding adds nothing
          for (int64_t si = 0; si < s; ++si) {
            const int64_t iw = qi * at.stride[1] - at.pad_begin[1] + si * at.dilation[1];
            if (iw < 0 || iw >= wd) continue;
            const double* xpix = x.data.data() + ((ni * h + ih) * wd + iw) * c;
            for (int64_t g = 0; g < groups; ++g) {
              double* acc_g = acc + g * kg;
              for (int64_t ci = 0; ci < cg; ++ci) {
                const double xv = xpix[g * cg + ci];
                const double* wrow = wt.data() + (((g * r + ri) * s + si) * cg + ci) * kg;
                for (int64_t kk = 0; kk < kg; ++kk) acc_g[kk] += xv * wrow[kk];
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace sinter::ref
