// Sinter's first attention kernel: flash-attention's online softmax in f32 with FFMA, no tensor
// cores. A CTA of kSdpaWarps warps owns kSdpaWarps * kRW query rows of one (batch, head); each
// warp owns kRW rows. K and V go through shared memory kSdpaKeys keys at a time:
//   scores: lane j computes row r's score for key j (q rows broadcast from shared memory);
//   softmax: the row max is a warp max per key tile, the row sum stays a per-lane partial until
//            the end (rescaled with the max like the output);
//   P @ V:  lane owns output columns lane + 32 c (c < kNV), P read back from shared memory.
// Masked scores are -inf; a row whose visible keys are all masked has max -inf and is kept at
// o = 0 (never exp(-inf - -inf)); its stats are -inf.
//
// The kernel is flash_simple_kernel<Cfg, Epilogue>(args), Cfg a struct of static constexpr
// fields (at flash_simple_tile), Epilogue the region's row functor
// (engines/jit/epilogue_functor.hpp); its tile function, flash_simple_tile, computes one block
// of query rows of one (batch, head).
#pragma once

#include "attention/sdpa_abi.h"
#include "common/pdl.cuh"
#include "common/types.cuh"

constexpr int kSdpaWarps = 4, kSdpaThreads = 32 * kSdpaWarps, kSdpaKeys = 32;

__device__ __forceinline__ float sdpa_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float sdpa_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Shared memory (floats) for row length ld: q [rows][ld], k [keys][ld], v [keys][kNV*32],
// p [rows][keys].
__host__ __device__ constexpr long long sdpa_smem_floats(int rw, int nv, int ld) {
  return static_cast<long long>(kSdpaWarps * rw + kSdpaKeys) * ld + kSdpaKeys * nv * 32 +
         kSdpaWarps * rw * kSdpaKeys;
}

// Computes the normalized output rows of query block q0.. of (b, h) into o: thread (warp, lane)
// gets row q0 + warp * kRW + r, columns lane + 32 c. Writes stats (when not null) for rows < sq.
// kBias: 0 none, 1 additive (BiasT float-like), 2 keep-mask (BiasT bool).
// kCausal: 0 none, 1 or 2 (top-left or bottom-right: s.causal_offset tells them apart).
template <typename T, typename BiasT, int kBias, int kCausal, int kRW, int kNV>
__device__ __forceinline__ void flash_attend(const SinterSdpaShape& s, const T* q, const T* k,
                                             const T* v, const BiasT* bias, float* stats, i64 b,
                                             i64 h, i64 q0, float* smem, float (&o)[kRW][kNV]) {
  constexpr int kBQ = kSdpaWarps * kRW, kLdV = kNV * 32;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int ld = s.ld, d = static_cast<int>(s.d), dv = static_cast<int>(s.dv);
  const int d4 = (d + 3) & ~3;  // the score loop reads float4s; padding is zero
  float* qs = smem;
  float* ks = qs + kBQ * ld;
  float* vs = ks + kSdpaKeys * ld;
  float* ps = vs + kSdpaKeys * kLdV;
  const i64 hkv = h / s.group;
  const T* qh = q + b * s.q_stride[0] + h * s.q_stride[1];
  const T* kh = k + b * s.k_stride[0] + hkv * s.k_stride[1];
  const T* vh = v + b * s.v_stride[0] + hkv * s.v_stride[1];

  __syncthreads();  // the previous block's readers of shared memory are done
  for (int r = warp; r < kBQ; r += kSdpaWarps) {
    const i64 i = q0 + r;
    for (int c = lane; c < d4; c += 32) {
      qs[r * ld + c] = (i < s.sq && c < d) ? to_float(qh[i * s.q_stride[2] + c * s.q_stride[3]]) : 0.0f;
    }
  }

  float m[kRW], l[kRW];
#pragma unroll
  for (int r = 0; r < kRW; ++r) {
    m[r] = -__int_as_float(0x7f800000);
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < kNV; ++c) o[r][c] = 0.0f;
  }
  // Keys past the block's last visible one are never loaded.
  i64 kv_end = s.skv;
  if (kCausal != 0) {
    const i64 last = (q0 + kBQ < s.sq ? q0 + kBQ : s.sq) - 1;
    const i64 e = last + s.causal_offset + 1;
    kv_end = e < kv_end ? e : kv_end;
  }
  const int row0 = warp * kRW;
  for (i64 kv0 = 0; kv0 < kv_end; kv0 += kSdpaKeys) {
    __syncthreads();  // every warp is done with the previous k, v tiles (and q is written)
    for (int j = warp; j < kSdpaKeys; j += kSdpaWarps) {
      const i64 key = kv0 + j;
      const bool ok = key < s.skv;
      for (int c = lane; c < d4; c += 32) {
        ks[j * ld + c] = (ok && c < d) ? to_float(kh[key * s.k_stride[2] + c * s.k_stride[3]]) : 0.0f;
      }
      // zeros past dv and skv: p = 0 there, and 0 * garbage could be NaN
      for (int c = lane; c < kLdV; c += 32) {
        vs[j * kLdV + c] = (ok && c < dv) ? to_float(vh[key * s.v_stride[2] + c * s.v_stride[3]]) : 0.0f;
      }
    }
    __syncthreads();

    float sc[kRW];
#pragma unroll
    for (int r = 0; r < kRW; ++r) sc[r] = 0.0f;
    const float* kr = ks + lane * ld;
#pragma unroll 2
    for (int c = 0; c < d4; c += 4) {
      const float4 kf = *reinterpret_cast<const float4*>(kr + c);
#pragma unroll
      for (int r = 0; r < kRW; ++r) {
        const float4 qf = *reinterpret_cast<const float4*>(qs + (row0 + r) * ld + c);
        sc[r] = fmaf(qf.x, kf.x, sc[r]);
        sc[r] = fmaf(qf.y, kf.y, sc[r]);
        sc[r] = fmaf(qf.z, kf.z, sc[r]);
        sc[r] = fmaf(qf.w, kf.w, sc[r]);
      }
    }
    const i64 key = kv0 + lane;
#pragma unroll
    for (int r = 0; r < kRW; ++r) {
      const i64 i = q0 + row0 + r;
      float x = sc[r] * s.scale;
      bool keep = key < s.skv;
      if (kCausal != 0) keep = keep && key <= i + s.causal_offset;
      if constexpr (kBias != 0) {
        if (keep && i < s.sq) {
          const BiasT bv = bias[b * s.bias_stride[0] + h * s.bias_stride[1] + i * s.bias_stride[2] +
                                key * s.bias_stride[3]];
          if constexpr (kBias == 1) {
            x += to_float(bv);
          } else {
            keep = static_cast<bool>(bv);
          }
        }
      }
      x = keep ? x : -__int_as_float(0x7f800000);
      const float m_new = fmaxf(m[r], sdpa_warp_max(x));
      const bool none = m_new == -__int_as_float(0x7f800000);  // nothing visible yet
      const float p = none ? 0.0f : expf(x - m_new);  // masked: exp(-inf) = 0
      const float alpha = none ? 1.0f : expf(m[r] - m_new);
      l[r] = l[r] * alpha + p;
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < kNV; ++c) o[r][c] *= alpha;
      ps[(row0 + r) * kSdpaKeys + lane] = p;
    }
    __syncwarp();
#pragma unroll 2
    for (int j = 0; j < kSdpaKeys; j += 4) {
      float vv[4][kNV];
#pragma unroll
      for (int jj = 0; jj < 4; ++jj)
#pragma unroll
        for (int c = 0; c < kNV; ++c) vv[jj][c] = vs[(j + jj) * kLdV + c * 32 + lane];
#pragma unroll
      for (int r = 0; r < kRW; ++r) {
        const float4 pf = *reinterpret_cast<const float4*>(ps + (row0 + r) * kSdpaKeys + j);
#pragma unroll
        for (int c = 0; c < kNV; ++c) {
          o[r][c] = fmaf(pf.x, vv[0][c], o[r][c]);
          o[r][c] = fmaf(pf.y, vv[1][c], o[r][c]);
          o[r][c] = fmaf(pf.z, vv[2][c], o[r][c]);
          o[r][c] = fmaf(pf.w, vv[3][c], o[r][c]);
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRW; ++r) {
    const float lsum = sdpa_warp_sum(l[r]);
    const bool none = m[r] == -__int_as_float(0x7f800000);
    const float inv = none ? 0.0f : 1.0f / lsum;
#pragma unroll
    for (int c = 0; c < kNV; ++c) o[r][c] *= inv;
    const i64 i = q0 + row0 + r;
    if (stats != nullptr && lane == 0 && i < s.sq) {
      stats[(b * s.heads + h) * s.sq + i] = none ? -__int_as_float(0x7f800000) : m[r] + logf(lsum);
    }
  }
}

// The config (the generated Cfg): T, BiasT (the storage types of q, k, v and of the bias), kBias,
// kCausal (as flash_attend's), kRW (query rows per warp), kNV (output columns per lane / 32: Dv
// rounded up to a power of two >= 32, over 32), kStats (the stats are stored).
// Args: the generated argument struct, with shape, q, k, v, bias (with kBias), stats (with
// kStats) and the epilogue's fields.

// The tile function: tile = (b * H + h) x query blocks + block, the blocks visited last-first so
// that under a causal mask the costliest start first. smem: sdpa_smem_floats(kRW, kNV, ld) floats.
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void flash_simple_tile(const Args& a, Epi& epi, i64 tile, float* smem) {
  constexpr int kRW = Cfg::kRW, kNV = Cfg::kNV, kBQ = kSdpaWarps * kRW;
  const SinterSdpaShape& s = a.shape;
  const i64 qblocks = (s.sq + kBQ - 1) / kBQ;
  const i64 bh = tile / qblocks, q0 = (qblocks - 1 - tile % qblocks) * kBQ;
  const i64 b = bh / s.heads, h = bh % s.heads;
  const typename Cfg::BiasT* bias = nullptr;
  if constexpr (Cfg::kBias != 0) bias = a.bias;
  float* stats = nullptr;
  if constexpr (Cfg::kStats) stats = a.stats;
  float o[kRW][kNV];
  flash_attend<typename Cfg::T, typename Cfg::BiasT, Cfg::kBias, Cfg::kCausal, kRW, kNV>(s, a.q, a.k, a.v, bias, stats, b,
                                                                                        h, q0, smem, o);
  const int warp_ = threadIdx.x >> 5;
#pragma unroll
  for (int r = 0; r < kRW; ++r) {
    const i64 i = q0 + warp_ * kRW + r;
    if (i < s.sq) epi.row(bh * s.sq + i, o[r], s.dv);
  }
}

// The kernel: a grid-stride loop over the tiles.
// o: [B, H, Sq, Dv] = [B*H*Sq, Dv] through the epilogue; one tile = kSdpaWarps x kRW query rows
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void flash_simple_kernel(const Args& a) {
  sinter_kernel_begin();
  extern __shared__ float4 flash_simple_smem[];  // float4: the tiles are read as float4
  Epi epi(a);
  const i64 tiles = a.shape.batch * a.shape.heads * ((a.shape.sq + kSdpaWarps * Cfg::kRW - 1) / (kSdpaWarps * Cfg::kRW));
  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    flash_simple_tile<Cfg>(a, epi, t, reinterpret_cast<float*>(flash_simple_smem));
  }
}
