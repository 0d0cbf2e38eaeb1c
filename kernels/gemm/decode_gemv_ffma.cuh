// The decode GEMV tiles for M <= 4 on plain FFMA: y[M, N] = x[M, K] @ W with W an [N, K] weight
// (k contiguous: decode_ffma_tile) or a row-major [K, N] one (n contiguous: decode_ffma_kn_tile,
// at the end of this file: the same ideas with lanes along n). At
// these M the math is a few FFMA per loaded byte, so the tile is shaped by how W streams from
// DRAM (decode_gemv.cuh's mma tile needs a lane layout that gives each load instruction 8 rows x
// 64 bytes; here one load is 512 contiguous bytes of one W row):
//  - a warp owns kFfmaRows rows of W; lane l reads k = 8l .. 8l+7 of every 256-wide k step, so
//    each 16-byte load of the warp is one contiguous 512-byte run (whole DRAM bursts, no L1:
//    nothing re-reads W), and kDepth steps of all rows are in flight per lane (a register ring,
//    no shared-memory stage, no barrier in the main loop);
//  - x (tiny, read by every CTA) is staged once per CTA in shared memory, zero past M and K;
//    the lane reads the same k as its W vector (16 bytes, conflict-free) and reuses it for all
//    of its rows;
//  - lanes hold partial dot products over their k; a butterfly sums them at the end, and the
//    CTA's C tile goes through split-K (decode_splitk.cuh) to the region's epilogue.
// The FFMA per byte grow with M (8 M per 16-byte vector): at M = 8 an SM would issue about 82
// warp instructions per 512-byte warp load, some 55% of its issue rate at 3.6 TB/s (27 GB/s per
// SM), but the registers do not fit: 8 rows of accumulators, the unpacked W and even a 2-deep
// ring spilled under the 128 registers of two CTAs per SM (ptxas, with a bias + GELU + amax
// epilogue). The mma tile takes M > 4.
#pragma once

#include "common/abi.h"
#include "common/types.cuh"
#include "gemm/decode_gemv.cuh"  // decode_load8, decode_stage_x, decode_word, decode_unpack2
#include "gemm/decode_splitk.cuh"
#include "gemm/gemm_abi.h"

constexpr int kFfmaThreads = 256;
constexpr int kFfmaRows = 4;                              // W rows (output columns) per warp
constexpr int kFfmaBN = (kFfmaThreads / 32) * kFfmaRows;  // output columns per CTA
constexpr int kFfmaLdC = kFfmaBN;                         // row length of the f32 C tile
constexpr int kFfmaKIter = 256;                           // k per step: 32 lanes x 8
constexpr int kFfmaXElems = 16384;                        // x elements a CTA stages (32 KiB)
static_assert(kFfmaThreads == kDecodeThreads, "decode_stage_x strides by kDecodeThreads");
static_assert(kFfmaBN % 32 == 0, "the epilogue gives each lane whole 32-column groups");

template <int kMTile>
struct FfmaSmem {
  static constexpr int kChunk = kFfmaXElems / kMTile;  // the most k one CTA takes (x row length)
  static constexpr int kXBytes = kFfmaXElems * 2;
  static constexpr int kBytes = kXBytes + kMTile * kFfmaLdC * 4;  // x, then the C tile
  static_assert(kMTile == 1 || kMTile == 2 || kMTile == 4, "M is padded to 1, 2 or 4 rows");
  static_assert(kChunk % kFfmaKIter == 0, "whole steps per chunk");
};

// The lane's vectors of one step: W rows n_w .. n_w + kFfmaRows - 1 at k .. k + 7 (zero past N, K).
template <int kWVec>
__device__ __forceinline__ void decode_ffma_load(uint4 (&v)[kFfmaRows], const u16* w, const SinterGemmShape& s,
                                                 int n_w, int k) {
#pragma unroll
  for (int r = 0; r < kFfmaRows; ++r) {
    const int n = n_w + r;
    const int valid = n < s.n ? static_cast<int>(s.k) - k : 0;
    v[r] = decode_load8<kWVec, true>(w + n * s.b_stride_n + k * s.b_stride_k, s.b_stride_k, valid);
  }
}

// acc[m][r] += x[m][kx .. kx+7] . W-row r's vector. W is unpacked once and reused for every m.
template <int kMTile, bool kBf16>
__device__ __forceinline__ void decode_ffma_step(const uint4 (&v)[kFfmaRows], const u16* xs, int kx,
                                                 float (&acc)[kMTile][kFfmaRows]) {
  float wf[kFfmaRows][8];
#pragma unroll
  for (int r = 0; r < kFfmaRows; ++r) {
#pragma unroll
    for (int j = 0; j < 4; ++j) decode_unpack2<kBf16>(decode_word(v[r], j), wf[r][2 * j], wf[r][2 * j + 1]);
  }
#pragma unroll
  for (int m = 0; m < kMTile; ++m) {
    const uint4 xv = *reinterpret_cast<const uint4*>(xs + m * FfmaSmem<kMTile>::kChunk + kx);
    float xf[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) decode_unpack2<kBf16>(decode_word(xv, j), xf[2 * j], xf[2 * j + 1]);
#pragma unroll
    for (int r = 0; r < kFfmaRows; ++r) {
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[m][r] = fmaf(wf[r][e], xf[e], acc[m][r]);
    }
  }
}

// Computes the C tile (f32, [kMTile][kFfmaLdC] at `ctile`, rows < M valid) of output columns
// n0 .. n0 + kFfmaBN over k in [k_lo, k_hi) (k_lo a multiple of kFfmaKIter, k_hi - k_lo at most
// FfmaSmem::kChunk). Split-K and the return value as decode_gemv_tile. Every thread calls it.
template <int kMTile, int kDepth, int kWVec, int kXVec, bool kBf16>
__device__ __forceinline__ bool decode_ffma_tile(const u16* x, const u16* w, const SinterGemmShape& s, int n0,
                                                 int k_lo, int k_hi, i64 slot, int split, int splits,
                                                 float* part, unsigned int* counts, char* smem, float* ctile) {
  static_assert(kDepth >= 1 && kDepth <= 8, "a register ring of 1 to 8 steps");
  typedef FfmaSmem<kMTile> S;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n_w = n0 + warp * kFfmaRows;
  const int iters = (k_hi - k_lo + kFfmaKIter - 1) / kFfmaKIter;
  const int kl = k_lo + 8 * lane;  // this lane's k in the first step
  u16* xs = reinterpret_cast<u16*>(smem);

  // the first kDepth steps of W are in flight while x is staged
  uint4 v[kDepth][kFfmaRows];
#pragma unroll
  for (int d = 0; d < kDepth; ++d) {
    if (d < iters) decode_ffma_load<kWVec>(v[d], w, s, n_w, kl + d * kFfmaKIter);
  }
  decode_stage_x<kMTile, kXVec, S::kChunk>(x, s, k_lo, iters * kFfmaKIter, xs);
  __syncthreads();

  float acc[kMTile][kFfmaRows];
#pragma unroll
  for (int m = 0; m < kMTile; ++m) {
#pragma unroll
    for (int r = 0; r < kFfmaRows; ++r) acc[m][r] = 0.0f;
  }
  for (int it = 0; it < iters; it += kDepth) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      if (it + d < iters) {
        decode_ffma_step<kMTile, kBf16>(v[d], xs, (it + d) * kFfmaKIter + 8 * lane, acc);
        if (it + d + kDepth < iters) decode_ffma_load<kWVec>(v[d], w, s, n_w, kl + (it + d + kDepth) * kFfmaKIter);
      }
    }
  }

  // the 32 lanes' partial sums of each (m, r) meet by butterfly; lane 0 writes the C tile
#pragma unroll
  for (int m = 0; m < kMTile; ++m) {
#pragma unroll
    for (int r = 0; r < kFfmaRows; ++r) {
      float t = acc[m][r];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
      if (lane == 0) ctile[m * kFfmaLdC + warp * kFfmaRows + r] = t;
    }
  }
  if (splits == 1) {
    __syncthreads();
    return true;
  }
  const int rows = s.m < kMTile ? static_cast<int>(s.m) : kMTile;
  return decode_splitk_combine<kFfmaThreads, kMTile * kFfmaBN, kFfmaBN>(
      ctile, rows, part + slot * splits * (kMTile * kFfmaBN), split, splits, counts + slot);
}

// ---- [K, N] weights (n contiguous) ------------------------------------------------------------
// Lanes along n: lane l owns columns n0 + 8l .. 8l+7 of the CTA's 256, so one warp load is 512
// contiguous bytes of one W row (one k). Warp w takes k rows 4w .. 4w+3 of every 32-row CTA step
// (kDepth steps in flight per lane); x[m][k] is one broadcast shared-memory read per row. Each
// lane accumulates its 8 columns; the 8 warps' partials over k meet in shared memory (x's space).
constexpr int kFfmaKnBN = 32 * 8;                          // output columns per CTA
constexpr int kFfmaKnLdC = kFfmaKnBN;
constexpr int kFfmaKnRows = 4;                             // W rows (k) per warp per step
constexpr int kFfmaKnKIter = (kFfmaThreads / 32) * kFfmaKnRows;  // k per CTA step

template <int kMTile>
struct FfmaKnSmem {
  static constexpr int kChunk = kFfmaXElems / kMTile;
  static constexpr int kXBytes = kFfmaXElems * 2;
  static constexpr int kBytes = kXBytes + kMTile * kFfmaKnLdC * 4;
  static_assert(kMTile == 1 || kMTile == 2 || kMTile == 4, "M is padded to 1, 2 or 4 rows");
  static_assert(kChunk % kFfmaKnKIter == 0, "whole steps per chunk");
  static_assert((kFfmaThreads / 32) * kMTile * kFfmaKnBN * 4 <= kXBytes, "the warps' partials reuse x's space");
};

// The lane's vectors of one step: W rows k .. k + kFfmaKnRows - 1 at columns n .. n + 7.
template <int kWVec>
__device__ __forceinline__ void decode_ffma_kn_load(uint4 (&v)[kFfmaKnRows], const u16* w, const SinterGemmShape& s,
                                                    int k, int n) {
#pragma unroll
  for (int r = 0; r < kFfmaKnRows; ++r) {
    const int kr = k + r;
    const int valid = kr < s.k ? static_cast<int>(s.n) - n : 0;
    v[r] = decode_load8<kWVec, true>(w + kr * s.b_stride_k + n * s.b_stride_n, s.b_stride_n, valid);
  }
}

// acc[m][e] += x[m][kx + r] * W[k + r][n + e] over the step's rows r.
template <int kMTile, bool kBf16>
__device__ __forceinline__ void decode_ffma_kn_step(const uint4 (&v)[kFfmaKnRows], const u16* xs, int kx,
                                                    float (&acc)[kMTile][8]) {
#pragma unroll
  for (int r = 0; r < kFfmaKnRows; ++r) {
    float wf[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) decode_unpack2<kBf16>(decode_word(v[r], j), wf[2 * j], wf[2 * j + 1]);
#pragma unroll
    for (int m = 0; m < kMTile; ++m) {
      const u16 xb = xs[m * FfmaKnSmem<kMTile>::kChunk + kx + r];  // the same address in every lane
      const float xf = kBf16 ? __uint_as_float(static_cast<u32>(xb) << 16) : to_float(f16{xb});
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[m][e] = fmaf(wf[e], xf, acc[m][e]);
    }
  }
}

// As decode_ffma_tile, for a [K, N] weight: C tile [kMTile][kFfmaKnLdC] of columns n0 .. n0+255,
// k in [k_lo, k_hi) with k_lo a multiple of kFfmaKnKIter.
template <int kMTile, int kDepth, int kWVec, int kXVec, bool kBf16>
__device__ __forceinline__ bool decode_ffma_kn_tile(const u16* x, const u16* w, const SinterGemmShape& s, int n0,
                                                    int k_lo, int k_hi, i64 slot, int split, int splits,
                                                    float* part, unsigned int* counts, char* smem, float* ctile) {
  static_assert(kDepth >= 1 && kDepth <= 8, "a register ring of 1 to 8 steps");
  typedef FfmaKnSmem<kMTile> S;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int n = n0 + 8 * lane;
  const int iters = (k_hi - k_lo + kFfmaKnKIter - 1) / kFfmaKnKIter;
  const int kw = k_lo + warp * kFfmaKnRows;  // this warp's first row
  u16* xs = reinterpret_cast<u16*>(smem);

  uint4 v[kDepth][kFfmaKnRows];
#pragma unroll
  for (int d = 0; d < kDepth; ++d) {
    if (d < iters) decode_ffma_kn_load<kWVec>(v[d], w, s, kw + d * kFfmaKnKIter, n);
  }
  decode_stage_x<kMTile, kXVec, S::kChunk>(x, s, k_lo, iters * kFfmaKnKIter, xs);
  __syncthreads();

  float acc[kMTile][8];
#pragma unroll
  for (int m = 0; m < kMTile; ++m) {
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[m][e] = 0.0f;
  }
  for (int it = 0; it < iters; it += kDepth) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      if (it + d < iters) {
        decode_ffma_kn_step<kMTile, kBf16>(v[d], xs, (it + d) * kFfmaKnKIter + warp * kFfmaKnRows, acc);
        if (it + d + kDepth < iters) decode_ffma_kn_load<kWVec>(v[d], w, s, kw + (it + d + kDepth) * kFfmaKnKIter, n);
      }
    }
  }

  // the warps' partials over k meet in shared memory (x is no longer read): red[warp][m][col]
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int m = 0; m < kMTile; ++m) {
    float4* dst = reinterpret_cast<float4*>(red + (warp * kMTile + m) * kFfmaKnBN + 8 * lane);
    dst[0] = make_float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]);
    dst[1] = make_float4(acc[m][4], acc[m][5], acc[m][6], acc[m][7]);
  }
  __syncthreads();
  const int rows = s.m < kMTile ? static_cast<int>(s.m) : kMTile;
  for (int i = threadIdx.x; i < rows * kFfmaKnBN; i += kFfmaThreads) {
    float sum = 0.0f;
#pragma unroll
    for (int q = 0; q < kFfmaThreads / 32; ++q) sum += red[q * kMTile * kFfmaKnBN + i];
    ctile[i] = sum;  // kFfmaKnLdC == kFfmaKnBN: same index
  }
  if (splits == 1) {
    __syncthreads();
    return true;
  }
  return decode_splitk_combine<kFfmaThreads, kMTile * kFfmaKnBN, kFfmaKnBN>(
      ctile, rows, part + slot * splits * (kMTile * kFfmaKnBN), split, splits, counts + slot);
}

// The config (the generated Cfg): kBf16, kKMajor (decode_ffma_tile for an [N, K] weight, else
// decode_ffma_kn_tile), kMTile (x rows: 1, 2 or 4), kDepth (W steps in flight per lane), kWVec,
// kXVec (as DecodeGemv's). The kernel is decode_gemv_kernel<DecodeFfma<Cfg>, Epilogue>.
template <class Cfg>
struct DecodeFfma {
  static constexpr int kThreads = kFfmaThreads;
  static constexpr int kBN = Cfg::kKMajor ? kFfmaBN : kFfmaKnBN;
  static constexpr int kLdC = Cfg::kKMajor ? kFfmaLdC : kFfmaKnLdC;
  static constexpr int kXBytes = Cfg::kKMajor ? FfmaSmem<Cfg::kMTile>::kXBytes : FfmaKnSmem<Cfg::kMTile>::kXBytes;
  static constexpr int kBytes = Cfg::kKMajor ? FfmaSmem<Cfg::kMTile>::kBytes : FfmaKnSmem<Cfg::kMTile>::kBytes;
  static constexpr bool kNorm = false, kNormBias = false;  // a folded norm runs on the mma tile
  __device__ __forceinline__ static bool tile(const u16* x, const u16* w, const SinterGemmShape& s, int n0, int k_lo,
                                              int k_hi, i64 slot, int split, int splits, float* part,
                                              unsigned int* counts, char* smem, float* ctile, const DecodeANorm&) {
    if constexpr (Cfg::kKMajor) {
      return decode_ffma_tile<Cfg::kMTile, Cfg::kDepth, Cfg::kWVec, Cfg::kXVec, Cfg::kBf16>(
          x, w, s, n0, k_lo, k_hi, slot, split, splits, part, counts, smem, ctile);
    } else {
      return decode_ffma_kn_tile<Cfg::kMTile, Cfg::kDepth, Cfg::kWVec, Cfg::kXVec, Cfg::kBf16>(
          x, w, s, n0, k_lo, k_hi, slot, split, splits, part, counts, smem, ctile);
    }
  }
};
