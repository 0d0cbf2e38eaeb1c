// conv2d as an implicit GEMM over kernels/gemm/simt_gemm.cuh's main loops: per group g,
//   out[m, g*kg + n] = sum over kd of A[m, kd] * B[kd, n]
// with m = (n_img, p, q) an output pixel, kd = (r, s, c) a filter tap and channel (the filter's
// own memory order), A the im2col view of x (zero in the padding) and B the group's filters.
// Nothing is materialized: the loaders below compute each element's address on the fly.
#pragma once

#include "common/index.cuh"
#include "conv/conv_abi.h"
#include "gemm/simt_gemm.cuh"

// A tile: rows are output pixels m0.., k along the reduction. x points at the group's first
// channel. kVec > 1 needs channel stride 1, cg % kVec == 0 (a vector stays inside one filter tap)
// and aligned pixel strides; then kdim % kVec == 0 too, so a vector is wholly in or out.
template <typename T, int kRows, int kBK, int kThreads, int kVec>
struct Im2colLoader : TileRegs<T, kRows, kBK, kThreads, true, kVec> {
  typedef TileRegs<T, kRows, kBK, kThreads, true, kVec> Regs;
  const SinterConvShape& s;
  const T* x;
  int m0;

  __device__ __forceinline__ Im2colLoader(const SinterConvShape& s_, const T* x_, int m0_)
      : s(s_), x(x_), m0(m0_) {}

  __device__ __forceinline__ void load(int k0) {
#pragma unroll
    for (int it = 0; it < Regs::kIters; ++it) {
      int row, k;
      Regs::coords(it, row, k);
      const int m = m0 + row, kd = k0 + k;
      bool in = m < s.m && kd < s.kdim;
      i64 off = 0;
      if (in) {
        // m = (n_img * p + oh) * q + ow; kd = (r * s + fs) * cg + c
        const u32 nq = fast_div(s.div_q, static_cast<u32>(m));
        const int ow = m - static_cast<int>(nq * s.div_q.d);
        const u32 n_img = fast_div(s.div_p, nq);
        const int oh = static_cast<int>(nq - n_img * s.div_p.d);
        const u32 rs = fast_div(s.div_cg, static_cast<u32>(kd));
        const int c = kd - static_cast<int>(rs * s.div_cg.d);
        const u32 fr = fast_div(s.div_s, rs);
        const int fs = static_cast<int>(rs - fr * s.div_s.d);
        const int ih = oh * s.stride_h - s.pad_h + static_cast<int>(fr) * s.dil_h;
        const int iw = ow * s.stride_w - s.pad_w + fs * s.dil_w;
        in = ih >= 0 && ih < s.h && iw >= 0 && iw < s.w;
        off = static_cast<i64>(n_img) * s.x_stride[0] + static_cast<i64>(ih) * s.x_stride[1] +
              static_cast<i64>(iw) * s.x_stride[2] + static_cast<i64>(c) * s.x_stride[3];
      }
      if (in) {
        if constexpr (kVec > 1) {
          load_raw(x + off, this->v[it]);
        } else {
          this->v[it][0] = x[off];
        }
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j) this->v[it][j] = T{};
      }
    }
  }
};

// B tile for filters that are not contiguous over (r, s, c): rows are output channels n0.. of
// the group (w points at the first), k along the reduction, one element at a time. Contiguous
// filters use StridedLoader instead (row stride w_stride[0], k stride 1).
template <typename T, int kRows, int kBK, int kThreads>
struct FilterLoader : TileRegs<T, kRows, kBK, kThreads, true, 1> {
  typedef TileRegs<T, kRows, kBK, kThreads, true, 1> Regs;
  const SinterConvShape& s;
  const T* w;
  int rows;

  __device__ __forceinline__ FilterLoader(const SinterConvShape& s_, const T* w_, int rows_)
      : s(s_), w(w_), rows(rows_) {}

  __device__ __forceinline__ void load(int k0) {
#pragma unroll
    for (int it = 0; it < Regs::kIters; ++it) {
      int row, k;
      Regs::coords(it, row, k);
      const int kd = k0 + k;
      T val{};
      if (row < rows && kd < s.kdim) {
        const u32 rs = fast_div(s.div_cg, static_cast<u32>(kd));
        const int c = kd - static_cast<int>(rs * s.div_cg.d);
        const u32 fr = fast_div(s.div_s, rs);
        const int fs = static_cast<int>(rs - fr * s.div_s.d);
        val = w[static_cast<i64>(row) * s.w_stride[0] + static_cast<i64>(fr) * s.w_stride[1] +
                static_cast<i64>(fs) * s.w_stride[2] + static_cast<i64>(c) * s.w_stride[3]];
      }
      this->v[it][0] = val;
    }
  }
};
