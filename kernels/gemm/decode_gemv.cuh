// The decode GEMM tile: y[M, N] = x[M, K] @ W for M <= 16, with W a weight stored [N, K]
// (k contiguous: "k-major") or [K, N] (n contiguous: "n-major"). At these M the GEMM is bound by
// reading W, so the design is about streaming every byte of W exactly once at full bandwidth:
//  - W goes global -> registers with 16-byte loads that skip L1 (nothing re-reads it), two steps
//    ahead of the math; no shared-memory stage and no barrier in the main loop.
//  - x is tiny and read by every CTA: a CTA copies its k-chunk of x once into shared memory,
//    zero-filled past M and K, so tails cost nothing in the math (W past K or N loads as zero).
//  - The math is mma.sync m16n8k16 with x as A (M padded to 8 or 16 rows) and W as B: FFMA at
//    M = 16 would take about as long as the memory stream itself. The order of k inside one mma
//    is free as long as A and B agree, so each lane's 16-byte W vector maps onto its fragment
//    registers as loaded (the mappings are spelled out at decode_mma_step).
//  - A CTA owns kDecodeBN output columns and one k-chunk; its warps split both, then reduce over
//    k in shared memory. Chunks (split-K) fill the GPU when N alone gives too few CTAs; they
//    meet through the workspace in decode_splitk_combine (decode_splitk.cuh).
//
// The kernel is decode_gemv_kernel<Tile, Epilogue>(args) with Tile = DecodeGemv<Cfg> (or
// DecodeFfma<Cfg>, decode_gemv_ffma.cuh), Cfg a struct of the static constexpr fields DecodeGemv
// names, Epilogue the region's functor (engines/jit/epilogue_functor.hpp); its tile function,
// decode_gemv_item, computes one CTA's work item: a k chunk of one column tile of one batch.
#pragma once

#include "common/abi.h"
#include "common/index.cuh"
#include "common/pdl.cuh"
#include "common/types.cuh"
#include "gemm/decode_splitk.cuh"
#include "gemm/gemm_abi.h"
#include "gemm/simt_gemm.cuh"  // mma_16816

constexpr int kDecodeThreads = 256;
constexpr int kDecodeBN = 128;           // output columns per CTA
constexpr int kDecodeLdC = kDecodeBN;    // row length of the f32 C tile the epilogue reads
constexpr int kDecodeKIter = 64;         // k per CTA iteration (one step of every k-group)
constexpr int kDecodeXElems = 32768;     // x elements a CTA stages: rows x chunk (64 KiB)

// Per weight layout: warps as kWarpsN (columns) x kWarpsK (k); one warp step covers kWarpK x
// kWarpN of W with four 16-byte loads per lane and kFrags mma accumulators. kXPad keeps the x
// fragment reads (16 bytes per lane for k-major, 8 for n-major) free of bank conflicts.
template <bool kKMajor> struct DecodeLayout;
template <> struct DecodeLayout<true> {
  static constexpr int kWarpsN = 4, kWarpsK = 2, kWarpN = 32, kWarpK = 32, kFrags = 4, kXPad = 32;
};
template <> struct DecodeLayout<false> {
  static constexpr int kWarpsN = 2, kWarpsK = 4, kWarpN = 64, kWarpK = 16, kFrags = 8, kXPad = 16;
};

template <bool kKMajor, int kMTile>
struct DecodeSmem {
  typedef DecodeLayout<kKMajor> L;
  static constexpr int kChunk = kDecodeXElems / kMTile;  // the most k one CTA takes
  static constexpr int kXLd = kChunk + L::kXPad;         // x row length in shared memory
  static constexpr int kXBytes = kMTile * kXLd * 2;
  static constexpr int kBytes = kXBytes + 16 * kDecodeLdC * 4;  // x (then k-group partials), C
  static_assert(kMTile == 8 || kMTile == 16, "x is padded to one m16 mma tile (8 rows: the upper half is zero)");
  static_assert(L::kWarpsN * L::kWarpN == kDecodeBN && L::kWarpsK * L::kWarpK == kDecodeKIter, "tile shape");
  static_assert(L::kWarpsN * L::kWarpsK * 32 == kDecodeThreads, "one warp per (column group, k group)");
  static_assert(kChunk % kDecodeKIter == 0 && (kXLd * 2) % 128 == L::kXPad * 2, "x rows keep their bank offset");
  static_assert(L::kWarpsK * kMTile * kDecodeBN * 4 <= kXBytes, "the k-group partials reuse x's space");
};

__device__ __forceinline__ uint4 decode_ld_stream(const void* p) {
  uint4 v;
  asm(SINTER_LD_RO ".L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ u32 decode_word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Eight 16-bit elements p[0], p[step], ... of which the first `valid` exist (none when <= 0);
// the rest read as zero. kVec 8: step is 1 and p is 16-byte aligned (the host checked the
// strides; the launch checks the base), so a whole vector is one load.
template <int kVec, bool kStream>
__device__ __forceinline__ uint4 decode_load8(const u16* p, i64 step, int valid) {
  if (kVec == 8 && valid >= 8) return kStream ? decode_ld_stream(p) : ld_ro(reinterpret_cast<const uint4*>(p));
  u32 w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const u32 lo = 2 * j < valid ? static_cast<u32>(ld_ro(p + 2 * j * step)) : 0u;
    const u32 hi = 2 * j + 1 < valid ? static_cast<u32>(ld_ro(p + (2 * j + 1) * step)) : 0u;
    w[j] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// The lane's four W vectors of the warp step at k = kk (g = lane / 4, t = lane % 4):
//   k-major: rows n = n_warp + 8r + g (r < 4), k = kk + 8t .. +8
//   n-major: rows k = kk + 4t + q (q < 4), n = n_warp + 8g .. +8
template <bool kKMajor, int kVec>
__device__ __forceinline__ void decode_load_step(uint4 (&v)[4], const u16* w, const SinterGemmShape& s,
                                                 int n_warp, int kk, int g, int t) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if (kKMajor) {
      const int n = n_warp + 8 * i + g, k = kk + 8 * t;
      const int valid = n < s.n ? static_cast<int>(s.k) - k : 0;
      v[i] = decode_load8<kVec, true>(w + n * s.b_stride_n + k * s.b_stride_k, s.b_stride_k, valid);
    } else {
      const int k = kk + 4 * t + i, n = n_warp + 8 * g;
      const int valid = k < s.k ? static_cast<int>(s.n) - n : 0;
      v[i] = decode_load8<kVec, true>(w + k * s.b_stride_k + n * s.b_stride_n, s.b_stride_n, valid);
    }
  }
}

// One warp step: acc += x[:, chunk cols kx ..] * W-step. m16n8k16 fragments (PTX ISA), lane
// (g, t): A (g | g+8, k 2t,2t+1 | 2t+8,2t+9); B (k 2t,2t+1 | 2t+8,2t+9, n g); C (g | g+8, n 2t,2t+1).
//   k-major: the lane's vector is k 8t..8t+7 of one W row; in mma half h, physical k
//     8t+4h+{0,1} plays logical 2t,2t+1 and 8t+4h+{2,3} plays 2t+8,2t+9, for A and B alike.
//     Fragment r holds columns n_warp + 8r + 2t, +1.
//   n-major: the lane holds k rows 4t..4t+3 for columns 8g..8g+7; physical k 4t+{0,1} plays
//     logical 2t,2t+1 and 4t+{2,3} plays 2t+8,2t+9. mma j takes column 8g+j of every lane, its
//     B pairs packed from two rows (prmt), so fragment j holds columns n_warp + 16t + j, +8.
template <bool kKMajor, int kMTile, bool kBf16>
__device__ __forceinline__ void decode_mma_step(const uint4 (&v)[4], const u16* xs, int kx, int g, int t,
                                                float (&acc)[DecodeLayout<kKMajor>::kFrags][4]) {
  constexpr int kLd = DecodeSmem<kKMajor, kMTile>::kXLd;
  if (kKMajor) {
    const uint4 xa = *reinterpret_cast<const uint4*>(xs + g * kLd + kx + 8 * t);
    const uint4 xb = kMTile == 16 ? *reinterpret_cast<const uint4*>(xs + (g + 8) * kLd + kx + 8 * t)
                                  : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const u32 a[4] = {decode_word(xa, 2 * h), decode_word(xb, 2 * h), decode_word(xa, 2 * h + 1),
                        decode_word(xb, 2 * h + 1)};
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const u32 b[2] = {decode_word(v[r], 2 * h), decode_word(v[r], 2 * h + 1)};
        mma_16816<kBf16>(acc[r], a, b);
      }
    }
  } else {
    const uint2 xa = *reinterpret_cast<const uint2*>(xs + g * kLd + kx + 4 * t);
    const uint2 xb = kMTile == 16 ? *reinterpret_cast<const uint2*>(xs + (g + 8) * kLd + kx + 4 * t)
                                  : make_uint2(0u, 0u);
    const u32 a[4] = {xa.x, xb.x, xa.y, xb.y};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const unsigned sel = (j & 1) ? 0x7632u : 0x5410u;  // the high or low halves of two words
      const u32 b[2] = {__byte_perm(decode_word(v[0], j >> 1), decode_word(v[1], j >> 1), sel),
                        __byte_perm(decode_word(v[2], j >> 1), decode_word(v[3], j >> 1), sel)};
      mma_16816<kBf16>(acc[j], a, b);
    }
  }
}

// x[m][k_lo + c] for m < kMTile and c < cols into xs (row length kXLd), zero past M and K.
// kVec 8: x is k-contiguous with 16-byte aligned rows; k_lo is a multiple of 64.
template <int kMTile, int kVec, int kLd>
__device__ __forceinline__ void decode_stage_x(const u16* x, const SinterGemmShape& s, int k_lo, int cols, u16* xs) {
  const int vecs = cols / 8;  // cols is a multiple of 64
  for (int i = threadIdx.x; i < kMTile * vecs; i += kDecodeThreads) {
    const int m = i / vecs, c = (i - m * vecs) * 8, k = k_lo + c;
    const int valid = m < s.m ? static_cast<int>(s.k) - k : 0;
    const uint4 v = decode_load8<kVec, false>(x + m * s.a_stride_m + k * s.a_stride_k, s.a_stride_k, valid);
    *reinterpret_cast<uint4*>(xs + m * kLd + c) = v;
  }
}

// The A operand's rmsnorm, when the region folds one (Cfg::kNorm): x is then the norm's input,
// and the tile stages y[m][k] = x[m][k] * rstd[m] * w[k] (+ b[k]) rounded to the operand type,
// as the norm's own kernel would have stored it, with rstd[m] = 1 / sqrt(mean over all of K of
// x[m][k]^2 + eps). Every CTA computes the statistics of its rows itself from x (M x K elements,
// in L2 after the first CTA), so no CTA waits for another's.
struct DecodeANorm {
  const u16* w = nullptr;
  const u16* b = nullptr;  // null: no bias
  i64 w_stride = 1, b_stride = 1;
  float eps = 0.0f;
};

// Two 16-bit values of one 32-bit word as floats (bf16: a shift and a mask, no conversion).
template <bool kBf16>
__device__ __forceinline__ void decode_unpack2(u32 w, float& lo, float& hi) {
  if (kBf16) {
    lo = __uint_as_float(w << 16);
    hi = __uint_as_float(w & 0xffff0000u);
  } else {
    lo = to_float(f16{static_cast<u16>(w & 0xffffu)});
    hi = to_float(f16{static_cast<u16>(w >> 16)});
  }
}

// One 16-bit value as a float.
template <bool kBf16>
__device__ __forceinline__ float decode_float(u16 bits) {
  return kBf16 ? to_float(bf16{bits}) : to_float(f16{bits});
}

// rstd[m] for m < kMTile (0 past M) into shared memory, through red[warps][kMTile] of shared
// memory: each thread sums the squares of its 8-element runs of every row (runs t, t + 256, ..),
// the warps reduce by shuffles and the 8 warp sums add in warp order (deterministic). Every
// thread calls it; it ends with a barrier.
template <int kMTile, int kVec, bool kBf16>
__device__ __forceinline__ void decode_norm_rstd(const u16* x, const SinterGemmShape& s, float eps, float* red,
                                                 float* rstd) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int runs = static_cast<int>((s.k + 7) / 8);
  float sum[kMTile];
#pragma unroll
  for (int m = 0; m < kMTile; ++m) {
    sum[m] = 0.0f;
    if (m >= s.m) continue;
    for (int i = threadIdx.x; i < runs; i += kDecodeThreads) {
      const uint4 v = decode_load8<kVec, false>(x + m * s.a_stride_m + 8 * i * s.a_stride_k, s.a_stride_k,
                                                static_cast<int>(s.k) - 8 * i);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float lo, hi;
        decode_unpack2<kBf16>(decode_word(v, j), lo, hi);
        sum[m] += lo * lo + hi * hi;
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kMTile; ++m) {
    for (int o = 16; o > 0; o >>= 1) sum[m] += __shfl_xor_sync(0xffffffffu, sum[m], o);
    if (lane == 0) red[warp * kMTile + m] = sum[m];
  }
  __syncthreads();
  if (threadIdx.x < kMTile) {
    float total = 0.0f;
    for (int q = 0; q < kDecodeThreads / 32; ++q) total += red[q * kMTile + threadIdx.x];
    rstd[threadIdx.x] = threadIdx.x < s.m ? rsqrtf(total / static_cast<float>(s.k) + eps) : 0.0f;
  }
  __syncthreads();
}

// decode_stage_x with the norm applied (rows < M, k < K; zero elsewhere, bias included).
template <int kMTile, int kVec, int kLd, bool kBf16, bool kBias>
__device__ __forceinline__ void decode_stage_x_norm(const u16* x, const SinterGemmShape& s, int k_lo, int cols,
                                                    u16* xs, const DecodeANorm& nrm, const float* rstd) {
  const int vecs = cols / 8;
  for (int i = threadIdx.x; i < kMTile * vecs; i += kDecodeThreads) {
    const int m = i / vecs, c = (i - m * vecs) * 8, k = k_lo + c;
    const int valid = m < s.m ? static_cast<int>(s.k) - k : 0;
    uint4 v = decode_load8<kVec, false>(x + m * s.a_stride_m + k * s.a_stride_k, s.a_stride_k, valid);
    if (valid > 0) {
      const float r = rstd[m];
      u32 out[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float y[2];
        decode_unpack2<kBf16>(decode_word(v, j), y[0], y[1]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int e = 2 * j + h;
          if (e < valid) {
            y[h] = y[h] * r * decode_float<kBf16>(ld_ro(nrm.w + (k + e) * nrm.w_stride));
            if (kBias) y[h] += decode_float<kBf16>(ld_ro(nrm.b + (k + e) * nrm.b_stride));
          } else {
            y[h] = 0.0f;
          }
        }
        out[j] = kBf16 ? pack_bf16x2(y[0], y[1]) : pack_f16x2(y[0], y[1]);
      }
      v = make_uint4(out[0], out[1], out[2], out[3]);
    }
    *reinterpret_cast<uint4*>(xs + m * kLd + c) = v;
  }
}

// Computes the C tile (f32, [16][kDecodeLdC] at `ctile`, rows < M valid) of output columns
// n0 .. n0 + kDecodeBN over k in [k_lo, k_hi) into shared memory. With splits > 1, the partial
// goes to part[(slot * splits + split)] and only the last CTA of `slot` gets the full sum (true);
// the others return false. Every thread of the CTA calls it; it ends with a barrier.
// With kNorm, x is the input of the A operand's rmsnorm `nrm` (DecodeANorm); ctile serves as
// scratch for its statistics before the C tile is written.
template <bool kKMajor, int kMTile, int kWVec, int kXVec, bool kBf16, bool kNorm, bool kNormBias>
__device__ __forceinline__ bool decode_gemv_tile(const u16* x, const u16* w, const SinterGemmShape& s, int n0,
                                                 int k_lo, int k_hi, i64 slot, int split, int splits,
                                                 float* part, unsigned int* counts, char* smem, float* ctile,
                                                 const DecodeANorm& nrm) {
  typedef DecodeLayout<kKMajor> L;
  typedef DecodeSmem<kKMajor, kMTile> S;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wn = warp % L::kWarpsN, wk = warp / L::kWarpsN;
  const int n_warp = n0 + wn * L::kWarpN;
  const int iters = (k_hi - k_lo + kDecodeKIter - 1) / kDecodeKIter;
  u16* xs = reinterpret_cast<u16*>(smem);

  // W's first two steps are in flight while x is staged
  uint4 v0[4], v1[4];
  const int kw = k_lo + wk * L::kWarpK;
  if (iters > 0) decode_load_step<kKMajor, kWVec>(v0, w, s, n_warp, kw, g, t);
  if (iters > 1) decode_load_step<kKMajor, kWVec>(v1, w, s, n_warp, kw + kDecodeKIter, g, t);
  if constexpr (kNorm) {
    float* rstd = ctile;  // [kMTile], then the warps' partial sums
    decode_norm_rstd<kMTile, kXVec, kBf16>(x, s, nrm.eps, ctile + kMTile, rstd);
    decode_stage_x_norm<kMTile, kXVec, S::kXLd, kBf16, kNormBias>(x, s, k_lo, iters * kDecodeKIter, xs, nrm, rstd);
  } else {
    decode_stage_x<kMTile, kXVec, S::kXLd>(x, s, k_lo, iters * kDecodeKIter, xs);
  }
  __syncthreads();

  float acc[L::kFrags][4];
#pragma unroll
  for (int f = 0; f < L::kFrags; ++f) acc[f][0] = acc[f][1] = acc[f][2] = acc[f][3] = 0.0f;
  for (int it = 0; it < iters; it += 2) {
    const int kx = it * kDecodeKIter + wk * L::kWarpK;
    decode_mma_step<kKMajor, kMTile, kBf16>(v0, xs, kx, g, t, acc);
    if (it + 2 < iters) decode_load_step<kKMajor, kWVec>(v0, w, s, n_warp, kw + (it + 2) * kDecodeKIter, g, t);
    if (it + 1 < iters) {
      decode_mma_step<kKMajor, kMTile, kBf16>(v1, xs, kx + kDecodeKIter, g, t, acc);
      if (it + 3 < iters) decode_load_step<kKMajor, kWVec>(v1, w, s, n_warp, kw + (it + 3) * kDecodeKIter, g, t);
    }
  }

  // k-groups meet in shared memory (x is no longer read): red[wk][m][col]
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int f = 0; f < L::kFrags; ++f) {
    const int c0 = wn * L::kWarpN + (kKMajor ? 8 * f + 2 * t : 16 * t + f);
    const int c1 = c0 + (kKMajor ? 1 : 8);
    float* r0 = red + (wk * kMTile + g) * kDecodeBN;
    r0[c0] = acc[f][0];
    r0[c1] = acc[f][1];
    if (kMTile == 16) {
      r0[8 * kDecodeBN + c0] = acc[f][2];
      r0[8 * kDecodeBN + c1] = acc[f][3];
    }
  }
  __syncthreads();
  const int rows = s.m < kMTile ? static_cast<int>(s.m) : kMTile;
  for (int i = threadIdx.x; i < rows * kDecodeBN; i += kDecodeThreads) {
    float sum = 0.0f;
#pragma unroll
    for (int q = 0; q < L::kWarpsK; ++q) sum += red[q * kMTile * kDecodeBN + i];
    ctile[i] = sum;  // kDecodeLdC == kDecodeBN: same index
  }
  if (splits == 1) {
    __syncthreads();
    return true;
  }
  return decode_splitk_combine<kDecodeThreads, kMTile * kDecodeBN, kDecodeBN>(
      ctile, rows, part + slot * splits * (kMTile * kDecodeBN), split, splits, counts + slot);
}

// The config (the generated Cfg): kBf16 (bf16 operands, else f16), kKMajor (W is [N, K], else
// [K, N]), kMTile (x rows: 8 or 16), kWVec and kXVec (8: W's and x's rows are read as 16-byte
// vectors, 1: element by element; the host checked strides and alignment), kNorm (x is the input
// of an rmsnorm folded into A: DecodeANorm; the Args then hold norm_w, norm_w_stride, norm_eps
// and, with kNormBias, norm_b and norm_b_stride).
template <class Cfg>
struct DecodeGemv {
  static constexpr int kThreads = kDecodeThreads, kBN = kDecodeBN, kLdC = kDecodeLdC;
  static constexpr bool kNorm = Cfg::kNorm, kNormBias = Cfg::kNormBias;
  static constexpr int kXBytes = DecodeSmem<Cfg::kKMajor, Cfg::kMTile>::kXBytes;
  static constexpr int kBytes = DecodeSmem<Cfg::kKMajor, Cfg::kMTile>::kBytes;
  static_assert(Cfg::kWVec == 1 || Cfg::kWVec == 8, "W: elements or 16-byte vectors");
  static_assert(Cfg::kXVec == 1 || Cfg::kXVec == 8, "x: elements or 16-byte vectors");
  __device__ __forceinline__ static bool tile(const u16* x, const u16* w, const SinterGemmShape& s, int n0, int k_lo,
                                              int k_hi, i64 slot, int split, int splits, float* part,
                                              unsigned int* counts, char* smem, float* ctile, const DecodeANorm& nrm) {
    return decode_gemv_tile<Cfg::kKMajor, Cfg::kMTile, Cfg::kWVec, Cfg::kXVec, Cfg::kBf16, kNorm, kNormBias>(
        x, w, s, n0, k_lo, k_hi, slot, split, splits, part, counts, smem, ctile, nrm);
  }
};

// The Args' norm fields as a DecodeANorm (empty when the tile folds no norm).
template <class Tile, class Args>
__device__ __forceinline__ DecodeANorm decode_a_norm(const Args& a) {
  DecodeANorm n;
  if constexpr (Tile::kNorm) {
    n.w = a.norm_w;
    n.w_stride = a.norm_w_stride;
    n.eps = a.norm_eps;
    if constexpr (Tile::kNormBias) {
      n.b = a.norm_b;
      n.b_stride = a.norm_b_stride;
    }
  }
  return n;
}

// The tile function: work item `item` = (batch, column tile, k chunk), chunk-minor, of a
// Tile::kBN-column tile; the full sum of a column tile (the last of its chunks to arrive, with
// split-K) goes through `epi`. Every thread of the CTA calls it.
// Args: the generated argument struct, with shape (the GEMM's sizes and strides), splits and chunk
// (the k chunks of a column tile and their length), x, w (the operands), part and counts (the
// split-K partials and a counter per column tile in the workspace: decode_splitk_combine), and
// the norm's fields with Tile::kNorm (DecodeGemv).
template <class Tile, class Epi, class Args>
__device__ __forceinline__ void decode_gemv_item(char* smem, const Args& a, Epi& epi, i64 item) {
  const SinterGemmShape& s = a.shape;
  const i64 tiles_n = (s.n + Tile::kBN - 1) / Tile::kBN;
  const i64 slot = item / a.splits;
  const int split = static_cast<int>(item - slot * a.splits);
  const i64 bi = slot / tiles_n;
  const int n0 = static_cast<int>(slot - bi * tiles_n) * Tile::kBN;
  const int k_lo = split * a.chunk;
  const int k_hi = min(static_cast<int>(s.k), k_lo + a.chunk);
  float* ctile = reinterpret_cast<float*>(smem + Tile::kXBytes);
  const bool full = Tile::tile(a.x + offset_of<false>(s.batch, s.a_batch, bi), a.w + offset_of<false>(s.batch, s.b_batch, bi),
                               s, n0, k_lo, k_hi, slot, split, a.splits, a.part, a.counts, smem, ctile,
                               decode_a_norm<Tile>(a));
  if (full) {
    epi.tile(reinterpret_cast<const char*>(ctile), bi * s.m, static_cast<int>(s.m), static_cast<i64>(n0),
             min(Tile::kBN, static_cast<int>(s.n - n0)));
  }
}

// The kernel: one work item per CTA (a grid of batches x column tiles x splits CTAs of
// Tile::kThreads threads, Tile::kBytes of dynamic shared memory).
// out: y [batches, M, N] through the epilogue; x [batches, M, K]; W [batches, N, K] or [K, N]
template <class Tile, class Epi, class Args>
__device__ __forceinline__ void decode_gemv_kernel(const Args& a) {
  sinter_kernel_begin();
  extern __shared__ float4 decode_gemv_smem[];  // float4: 16-byte aligned x rows
  Epi epi(a);
  decode_gemv_item<Tile>(reinterpret_cast<char*>(decode_gemv_smem), a, epi, blockIdx.x);
  epi.finish();
}
