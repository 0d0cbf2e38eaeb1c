// conv2d as an implicit GEMM over kernels/gemm/simt_gemm.cuh's main loops: per group g,
//   out[m, g*kg + n] = sum over kd of A[m, kd] * B[kd, n]
// with m = (n_img, p, q) an output pixel, kd = (r, s, c) a filter tap and channel (the filter's
// own memory order), A the im2col view of x (zero in the padding) and B the group's filters.
// Nothing is materialized: the loaders below compute each element's address on the fly.
//
// The kernel is conv_kernel<Cfg, Epilogue>(args), Cfg a struct of static constexpr fields (at
// conv_tile), Epilogue the region's functor (engines/jit/epilogue_functor.hpp); its tile
// function, conv_tile, computes one 128-pixel x 128-channel output tile of one group.
#pragma once

#include "common/index.cuh"
#include "common/pdl.cuh"
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

// The config (the generated Cfg): TX, TW (the storage types of x and the filters), kFfma (the
// f32 FFMA main loop, else mma.sync with kBf16 or f16 fragments), kXVec (x read kXVec channels at
// a time: Im2colLoader's kVec), kWPlain (the filters are a plain matrix [K, R*S*C/groups]: read by
// StridedLoader, kWVec elements at a time along k; else element by element by FilterLoader).
// Args: the generated argument struct, with shape, x, w and the epilogue's fields.

// The tile function: tile = (group x pixel tiles + pixel tile) x channel tiles + channel tile;
// its C tile goes through `epi`. Every thread of the CTA calls it; smem: kGemmSmemBytes.
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void conv_tile(const Args& a, Epi& epi, i64 tile, char* smem) {
  constexpr int kBK = Cfg::kFfma ? kGemmBKFfma : kGemmBKMma;
  typedef Im2colLoader<typename Cfg::TX, kGemmBM, kBK, kGemmThreads, Cfg::kXVec> LoaderA;
  const SinterConvShape& s = a.shape;
  const i64 tiles_n = (s.kg + kGemmBN - 1) / kGemmBN, tiles_m = (s.m + kGemmBM - 1) / kGemmBM;
  const i64 nt = tile % tiles_n, rest = tile / tiles_n;
  const i64 mt = rest % tiles_m, gi = rest / tiles_m;
  const int m0 = static_cast<int>(mt * kGemmBM), n0 = static_cast<int>(nt * kGemmBN);
  LoaderA la(s, a.x + gi * s.cg * s.x_stride[3], m0);
  auto mainloop = [&](auto& lb) {
    if constexpr (Cfg::kFfma) {
      gemm_ffma_mainloop(la, lb, static_cast<int>(s.kdim), smem);
    } else {
      gemm_mma_mainloop<Cfg::kBf16>(la, lb, static_cast<int>(s.kdim), smem);
    }
  };
  if constexpr (Cfg::kWPlain) {
    StridedLoader<typename Cfg::TW, kGemmBN, kBK, kGemmThreads, true, Cfg::kWVec> lb(
        a.w + (gi * s.kg + n0) * s.w_stride[0], s.w_stride[0], 1, static_cast<int>(s.kg - n0), static_cast<int>(s.kdim));
    mainloop(lb);
  } else {
    FilterLoader<typename Cfg::TW, kGemmBN, kBK, kGemmThreads> lb(s, a.w + (gi * s.kg + n0) * s.w_stride[0],
                                                                   static_cast<int>(s.kg - n0));
    mainloop(lb);
  }
  epi.tile(smem, static_cast<i64>(m0), min(kGemmBM, static_cast<int>(s.m - m0)), gi * s.kg + n0,
           min(kGemmBN, static_cast<int>(s.kg - n0)));
  __syncthreads();  // the next tile's operand stages overwrite the C tile
}

// The kernel: a grid-stride loop over the tiles.
// out: [N, P, Q, K] = [M, K] through the epilogue; x NHWC; w KRSC
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void conv_kernel(const Args& a) {
  sinter_kernel_begin();
  extern __shared__ float4 conv_smem[];  // float4: 16-byte aligned stages
  Epi epi(a);
  const i64 tiles = a.shape.groups * ((a.shape.m + kGemmBM - 1) / kGemmBM) * ((a.shape.kg + kGemmBN - 1) / kGemmBN);
  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) conv_tile<Cfg>(a, epi, t, reinterpret_cast<char*>(conv_smem));
  epi.finish();
}
