// Decode attention (small Sq), flash-decoding style: the keys of one kv head are split across
// warps all over the GPU, and the last CTA of each head to finish merges the partial softmaxes.
// At decode sizes (B * H_kv of 8..256, Sq of 1..16) one CTA per head leaves most SMs idle and
// walks thousands of keys serially; here every key range is a separate work item, so the kernel
// streams K and V once at close to memory bandwidth, in one launch.
//
// Split (decode_split_warp): a warp owns one kv head (b, hkv), kR query rows of that head's GQA
// group (row rho = g * Sq + i, query head hkv * group + g), and one range of keys. K and V rows
// are read straight into registers with 16-byte loads (kLk = kD / 8 lanes per K row, so a load
// instruction covers 32 / kLk keys), all loads of a tile issued before any math. Scores are dot
// products reduced over the kLk lanes of a key with shuffles; the tile's p values go through a
// small per-warp shared buffer because V rows map to lanes differently when Dv != D. Each warp
// writes its (row max, row sum, unnormalized o) per row to the workspace.
// Merge (decode_merge_row): the CTA that finishes a unit's splits last (elected by a counter per
// unit in the workspace, which it resets for the next launch) merges the unit's rows, one warp a
// row, reading every split's partial from L2 in batches of independent loads, in split order:
// the result is the same whichever CTA is last. Masked scores are -inf; a partial that saw no
// visible key has m = -inf, l = 0, o = 0, and a row with no visible key at all gets o = 0 and
// stats -inf (never exp(-inf - -inf)).
//
// The kernel is flash_decode_kernel<Cfg, Epilogue>(args), Cfg a struct of static constexpr fields
// (named at it), Epilogue the region's row functor (engines/jit/epilogue_functor.hpp). Its tile
// function, flash_decode_tile, runs one CTA: its four warps' splits of one unit, then the merge
// if it is the unit's last.
#pragma once

#include "attention/sdpa_abi.h"
#include "common/pdl.cuh"
#include "common/types.cuh"

constexpr int kDecodeAttnWarps = 4, kDecodeAttnThreads = 32 * kDecodeAttnWarps;

__device__ __forceinline__ float dattn_neg_inf() { return -__int_as_float(0x7f800000); }

// Eight 16-bit elements p[0], p[step], ... of which the first `valid` exist (none when <= 0); the
// rest read as zero. kVec: step is 1, p is 16-byte aligned and `valid` is a multiple of 8 (the
// host checked strides and head dims, the launch the base), so a row slice is one predicated
// load (no branch between the loads of a tile) that skips L1: nothing re-reads K or V.
template <bool kVec>
__device__ __forceinline__ uint4 dattn_load8(const u16* p, i64 step, int valid) {
  if (kVec) {
    uint4 v;
    asm volatile(
        "{\n .reg .pred p;\n setp.gt.s32 p, %5, 0;\n"
        " mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
        " @p " SINTER_LD_RO ".L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n}"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "r"(valid));
    return v;
  }
  u32 w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const u32 lo = 2 * j < valid ? static_cast<u32>(p[2 * j * step]) : 0u;
    const u32 hi = 2 * j + 1 < valid ? static_cast<u32>(p[(2 * j + 1) * step]) : 0u;
    w[j] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Element e (0..7) of a loaded vector as f32.
template <typename T>
__device__ __forceinline__ float dattn_elem(const uint4& v, int e) {
  const u32 w = (e >> 1) == 0 ? v.x : (e >> 1) == 1 ? v.y : (e >> 1) == 2 ? v.z : v.w;
  return to_float(T{static_cast<u16>((e & 1) ? (w >> 16) : (w & 0xffffu))});
}

// One warp's partial for `unit` = (b * H_kv + hkv) * row_blocks + row block, keys [key_lo,
// key_hi). Partial index: (output row) * nsplit + split; part_ml holds (m, l) pairs, part_o kDV
// floats per partial. ps: this warp's kR * kTK floats of shared memory.
// kBias: 0 none, 1 additive, 2 keep-mask. kCausal: 0 none, else keys j <= i + causal_offset.
template <typename T, typename BiasT, int kBias, int kCausal, int kR, int kD, int kDV, int kTK, bool kVecQ,
          bool kVecK, bool kVecV>
__device__ __forceinline__ void decode_split_warp(const SinterSdpaShape& s, const T* q, const T* k, const T* v,
                                                  const BiasT* bias, i64 unit, int row_blocks, i64 key_lo,
                                                  i64 key_hi, int split, int nsplit, float* part_ml,
                                                  float* part_o, float* ps) {
  constexpr int kLk = kD / 8, kKPI = 32 / kLk;    // lanes per K row, keys per K load
  constexpr int kLv = kDV / 8, kKPIv = 32 / kLv;  // the same for V
  constexpr int kLoadsK = kTK / kKPI, kLoadsV = kTK / kKPIv;
  static_assert(kD >= 32 && kD <= 256 && (kD & (kD - 1)) == 0, "kD: a power of two in [32, 256]");
  static_assert(kDV >= 32 && kDV <= 256 && (kDV & (kDV - 1)) == 0, "kDV: a power of two in [32, 256]");
  static_assert(kTK % kKPI == 0 && kTK % kKPIv == 0 && kLoadsK >= 1 && kLoadsV >= 1, "whole loads per tile");
  const int lane = threadIdx.x & 31;
  const int kslot = lane / kLk, kl = lane % kLk, vslot = lane / kLv, vl = lane % kLv;
  const int sq = static_cast<int>(s.sq), group = static_cast<int>(s.group);
  const i64 bhkv = unit / row_blocks;
  const int rb = static_cast<int>(unit - bhkv * row_blocks);
  const i64 b = bhkv / s.kv_heads, hkv = bhkv - b * s.kv_heads;

  // the warp's rows: query position qi (-1 past the group's rows) and query head qh
  int qi[kR], qh[kR];
  int max_i = -1;
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const int rho = rb * kR + r;
    const bool ok = rho < group * sq;
    const int g = ok ? rho / sq : 0;
    qi[r] = ok ? rho - g * sq : -1;
    qh[r] = static_cast<int>(hkv) * group + g;
    max_i = max(max_i, qi[r]);
  }
  // q rows, scaled, as f32: lane (kslot, kl) holds elements 8 kl .. 8 kl + 7 of each row
  float qf[kR][8];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const int valid = qi[r] >= 0 ? static_cast<int>(s.d) - 8 * kl : 0;
    const u16* p = reinterpret_cast<const u16*>(q + b * s.q_stride[0] + qh[r] * s.q_stride[1] +
                                                qi[r] * s.q_stride[2] + 8 * kl * s.q_stride[3]);
    const uint4 x = dattn_load8<kVecQ>(p, s.q_stride[3], valid);
#pragma unroll
    for (int e = 0; e < 8; ++e) qf[r][e] = dattn_elem<T>(x, e) * s.scale;
  }

  // keys past the rows' last visible one are never loaded
  i64 hi = key_hi < s.skv ? key_hi : s.skv;
  if (kCausal != 0) {
    const i64 e = static_cast<i64>(max_i) + s.causal_offset + 1;
    hi = e < hi ? e : hi;
  }
  const u16* kb = reinterpret_cast<const u16*>(k + b * s.k_stride[0] + hkv * s.k_stride[1]) + 8 * kl * s.k_stride[3];
  const u16* vb = reinterpret_cast<const u16*>(v + b * s.v_stride[0] + hkv * s.v_stride[1]) + 8 * vl * s.v_stride[3];
  const int kvalid = static_cast<int>(s.d) - 8 * kl, vvalid = static_cast<int>(s.dv) - 8 * vl;

  float m[kR], l[kR], o[kR][8];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    m[r] = dattn_neg_inf();
    l[r] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) o[r][e] = 0.0f;
  }

  for (i64 t0 = key_lo; t0 < hi; t0 += kTK) {
    uint4 kv[kLoadsK], vv[kLoadsV];
#pragma unroll
    for (int j = 0; j < kLoadsK; ++j) {
      const i64 key = t0 + j * kKPI + kslot;
      kv[j] = dattn_load8<kVecK>(kb + key * s.k_stride[2], s.k_stride[3], key < hi ? kvalid : 0);
    }
#pragma unroll
    for (int j = 0; j < kLoadsV; ++j) {
      const i64 key = t0 + j * kKPIv + vslot;
      // zeros past Dv and the range: p = 0 there, and 0 * garbage could be NaN
      vv[j] = dattn_load8<kVecV>(vb + key * s.v_stride[2], s.v_stride[3], key < hi ? vvalid : 0);
    }

    float sc[kLoadsK][kR];
#pragma unroll
    for (int j = 0; j < kLoadsK; ++j) {
      float kf[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) kf[e] = dattn_elem<T>(kv[j], e);
      const i64 key = t0 + j * kKPI + kslot;
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        float x = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) x = fmaf(qf[r][e], kf[e], x);
#pragma unroll
        for (int off = kLk / 2; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
        bool keep = key < hi && qi[r] >= 0;
        if (kCausal != 0) keep = keep && key <= qi[r] + s.causal_offset;
        if constexpr (kBias != 0) {
          if (keep) {
            const BiasT bv = bias[b * s.bias_stride[0] + qh[r] * s.bias_stride[1] + qi[r] * s.bias_stride[2] +
                                  key * s.bias_stride[3]];
            if constexpr (kBias == 1) {
              x += to_float(bv);
            } else {
              keep = static_cast<bool>(bv);
            }
          }
        }
        sc[j][r] = keep ? x : dattn_neg_inf();
      }
    }

    // online softmax per row over the tile; lanes of one key hold equal values, so only kl == 0
    // counts towards l and writes p
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      float mt = sc[0][r];
#pragma unroll
      for (int j = 1; j < kLoadsK; ++j) mt = fmaxf(mt, sc[j][r]);
#pragma unroll
      for (int off = kLk; off < 32; off <<= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
      const float m_new = fmaxf(m[r], mt);
      const bool none = m_new == dattn_neg_inf();  // nothing visible yet
      const float alpha = none ? 1.0f : expf(m[r] - m_new);
      float psum = 0.0f;
#pragma unroll
      for (int j = 0; j < kLoadsK; ++j) {
        const float p = none ? 0.0f : expf(sc[j][r] - m_new);  // masked: exp(-inf) = 0
        psum += p;
        if (kl == 0) ps[r * kTK + j * kKPI + kslot] = p;
      }
      l[r] = l[r] * alpha + (kl == 0 ? psum : 0.0f);
      m[r] = m_new;
#pragma unroll
      for (int e = 0; e < 8; ++e) o[r][e] *= alpha;
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j < kLoadsV; ++j) {
      float vf[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) vf[e] = dattn_elem<T>(vv[j], e);
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        const float p = ps[r * kTK + j * kKPIv + vslot];
#pragma unroll
        for (int e = 0; e < 8; ++e) o[r][e] = fmaf(p, vf[e], o[r][e]);
      }
    }
    __syncwarp();  // ps is rewritten by the next tile
  }

#pragma unroll
  for (int r = 0; r < kR; ++r) {
    float lsum = l[r];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) lsum += __shfl_xor_sync(0xffffffffu, lsum, off);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
#pragma unroll
      for (int off = kLv; off < 32; off <<= 1) o[r][e] += __shfl_xor_sync(0xffffffffu, o[r][e], off);
    }
    if (qi[r] < 0) continue;
    const i64 idx = ((b * s.heads + qh[r]) * s.sq + qi[r]) * nsplit + split;
    if (lane == 0) reinterpret_cast<float2*>(part_ml)[idx] = make_float2(m[r], lsum);
    if (vslot == 0) {
      float4* dst = reinterpret_cast<float4*>(part_o + idx * kDV + 8 * vl);
      dst[0] = make_float4(o[r][0], o[r][1], o[r][2], o[r][3]);
      dst[1] = make_float4(o[r][4], o[r][5], o[r][6], o[r][7]);
    }
  }
}

// The merged, normalized output row `grow` (= (b * H + h) * Sq + i) from its nsplit partials,
// which other SMs wrote in this launch (read from L2): lane holds columns lane + 32 c. Writes
// stats[grow] when stats is not null. Every lane of the warp calls it. The row max first (the m
// of up to 128 splits a batch of loads), then the splits 32 at a time: split base + lane's
// (m, l) on that lane, their o rows in batches of kB splits whose loads are all issued before the
// first is used (up to 128 floats a lane in flight), summed in split order.
template <int kDV>
__device__ __forceinline__ void decode_merge_row(const float* part_ml, const float* part_o, int nsplit, i64 grow,
                                                 float* stats, float (&o)[kDV / 32]) {
  constexpr int kC = kDV / 32;
  constexpr int kB = 128 / kC < 32 ? 128 / kC : 32;  // splits a batch: 32 up to Dv 128, 16 at 256
  const int lane = threadIdx.x & 31;
  const float2* ml = reinterpret_cast<const float2*>(part_ml) + grow * nsplit;
  float mx = dattn_neg_inf();
  for (int base = 0; base < nsplit; base += 128) {
    float mv[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int sp = base + 32 * i + lane;
      mv[i] = sp < nsplit ? __ldcg(&ml[sp].x) : dattn_neg_inf();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) mx = fmaxf(mx, mv[i]);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  const bool none = mx == dattn_neg_inf();
#pragma unroll
  for (int c = 0; c < kC; ++c) o[c] = 0.0f;
  float lw = 0.0f;  // this lane's splits' share of the row sum
  if (!none) {
    const float* po = part_o + grow * nsplit * kDV + lane;
    for (int base = 0; base < nsplit; base += 32) {
      const int count = nsplit - base < 32 ? nsplit - base : 32;
      const float2 x = lane < count ? __ldcg(&ml[base + lane]) : make_float2(dattn_neg_inf(), 0.0f);
      float w = 0.0f;
      for (int j0 = 0; j0 < count; j0 += kB) {
        float v[kB][kC];
#pragma unroll
        for (int j = 0; j < kB; ++j) {
#pragma unroll
          for (int c = 0; c < kC; ++c) {
            v[j][c] = j0 + j < count ? __ldcg(po + static_cast<i64>(base + j0 + j) * kDV + 32 * c) : 0.0f;
          }
        }
        if (j0 == 0) {  // after the first batch's loads are issued
          w = x.x == dattn_neg_inf() ? 0.0f : expf(x.x - mx);
          lw = fmaf(w, x.y, lw);
        }
#pragma unroll
        for (int j = 0; j < kB; ++j) {
          const float wj = __shfl_sync(0xffffffffu, w, (j0 + j) & 31);
#pragma unroll
          for (int c = 0; c < kC; ++c) o[c] = fmaf(wj, v[j][c], o[c]);
        }
      }
    }
  }
  float lsum = lw;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) lsum += __shfl_xor_sync(0xffffffffu, lsum, off);
  const float inv = none ? 0.0f : 1.0f / lsum;
#pragma unroll
  for (int c = 0; c < kC; ++c) o[c] *= inv;
  if (stats != nullptr && lane == 0) stats[grow] = none ? dattn_neg_inf() : mx + logf(lsum);
}

// The kernel's config (the generated Cfg): T, BiasT (the storage types of q, k, v and of the
// bias), kBias, kCausal (as decode_split_warp's), kR (query rows per warp), kD, kDV (D and Dv
// rounded up to powers of two >= 32), kTK (keys per tile), kVecQ, kVecK, kVecV (16-byte loads),
// kStats (the row statistics are stored).
// Args: the generated argument struct, with shape, chunk (keys per split), row_blocks,
// cta_splits (CTAs per unit), nsplit (splits per unit = cta_splits * kDecodeAttnWarps), q, k, v,
// bias (with kBias), stats (with kStats), the workspace's part_ml, part_o and count (one counter
// per unit, zero between launches), and the epilogue's fields.

// The tile function: CTA `cta` of the grid (unit cta / cta_splits, its splits (cta % cta_splits)
// x kDecodeAttnWarps + warp), then, on the unit's last CTA to finish, the unit's rows merged and
// handed to `epi`. ps: kDecodeAttnWarps x kR x kTK floats of shared memory; last: an int of
// shared memory. Every thread of the CTA calls it.
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void flash_decode_tile(const Args& a, Epi& epi, i64 cta, float* ps, int* last) {
  const SinterSdpaShape& s = a.shape;
  const int warp = threadIdx.x >> 5;
  const i64 unit = cta / a.cta_splits;
  const int split = static_cast<int>(cta - unit * a.cta_splits) * kDecodeAttnWarps + warp;
  const i64 lo = split * a.chunk;
  const typename Cfg::BiasT* bias = nullptr;
  if constexpr (Cfg::kBias != 0) bias = a.bias;
  decode_split_warp<typename Cfg::T, typename Cfg::BiasT, Cfg::kBias, Cfg::kCausal, Cfg::kR, Cfg::kD, Cfg::kDV,
                    Cfg::kTK, Cfg::kVecQ, Cfg::kVecK, Cfg::kVecV>(s, a.q, a.k, a.v, bias, unit, a.row_blocks, lo,
                                                                  lo + a.chunk, split, a.nsplit, a.part_ml, a.part_o,
                                                                  ps + warp * Cfg::kR * Cfg::kTK);
  // this CTA's partials are stored; the unit's last CTA merges them all
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) *last = atomicAdd(a.count + unit, 1u) == static_cast<unsigned>(a.cta_splits - 1);
  __syncthreads();
  if (*last == 0) return;
  __threadfence();
  if (threadIdx.x == 0) a.count[unit] = 0u;  // every CTA of the unit has arrived: ready for the next launch
  float* stats = nullptr;
  if constexpr (Cfg::kStats) stats = a.stats;
  const int sq = static_cast<int>(s.sq), group = static_cast<int>(s.group);
  const i64 bhkv = unit / a.row_blocks;
  const int rb = static_cast<int>(unit - bhkv * a.row_blocks);
  const i64 b = bhkv / s.kv_heads, hkv = bhkv - b * s.kv_heads;
  for (int r = warp; r < Cfg::kR; r += kDecodeAttnWarps) {
    const int rho = rb * Cfg::kR + r;
    if (rho >= group * sq) break;  // a whole warp
    const int g = rho / sq, qi = rho - g * sq;
    const i64 grow = (b * s.heads + hkv * group + g) * s.sq + qi;
    float o[Cfg::kDV / 32];
    decode_merge_row<Cfg::kDV>(a.part_ml, a.part_o, a.nsplit, grow, stats, o);
    epi.row(grow, o, s.dv);
  }
}

// The kernel: CTA = (unit, kDecodeAttnWarps consecutive splits), a warp each.
// workspace: partials [B*H*Sq, nsplit] of (m, l) and o[kDV]; o: [B, H, Sq, Dv] through the epilogue
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void flash_decode_kernel(const Args& a) {
  sinter_kernel_begin();
  __shared__ float ps_[kDecodeAttnWarps * Cfg::kR * Cfg::kTK];  // each warp's p values of one tile
  __shared__ int last_;
  Epi epi(a);
  flash_decode_tile<Cfg>(a, epi, blockIdx.x, ps_, &last_);
}
