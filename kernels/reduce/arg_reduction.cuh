// argmax / argmin along one axis: the i64 index of the first extreme of each slice, as
// torch.argmax/argmin (the CPU reference, src/ref/arg_reduce.cpp, is the oracle). The host
// (src/engines/jit/codegen_arg_reduction.cpp) views x as
//   kept dims: one output each, outputs row-major over them (out is contiguous)
//   the axis:  a.n elements at x stride a.s
// and generates an Args struct (the fields read below, by name) and a config C:
//   C::kKind (kArgMax or kArgMin), C::In, C::kGroup (threads per output: a power of two <= 32
//   lanes of one warp, or the whole CTA), C::kBlock, C::kUnroll, C::kIndex64.
//
// Every candidate is one 64-bit key: the value, mapped onto an unsigned integer in the order that
// makes the wanted extreme the largest (NaN above everything, -0.0 equal to +0.0), in the high
// word, and 0xffffffff - index in the low word. The largest key is the extreme with the lowest
// index, and a maximum of keys does not depend on the order it is taken in: the result is the
// same whichever lanes, warps or CTAs combine first. Keys are never 0 (the value word of any key
// is >= 0x007fffff), so 0 is the identity and a zeroed workspace word is an empty accumulator.
//
// Tiles are (tile_x, split): tile_x picks kBlock / kGroup outputs, split a slice of a.chunk
// elements of the axis. With a.splits > 1 the slices meet in workspace keys (a.acc, one per
// output) through atomicMax, and the last CTA of each tile_x writes the indices and zeroes the
// keys and its counter again, so the workspace needs zeroing only once, when it is allocated.
#pragma once

#include "common/abi.h"
#include "common/index.cuh"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"

enum ArgReduceKind { kArgMax = 0, kArgMin = 1 };

// A float as an unsigned integer in the order of its value: NaN (any sign, any payload) on top,
// -0.0 and +0.0 equal, then argmin's order reversed so that its extreme is the largest too.
template <int kKind>
__device__ __forceinline__ u32 arg_value_word(float v) {
  if (v != v) return 0xffffffffu;
  const u32 b = __float_as_uint(v == 0.0f ? 0.0f : v);
  const u32 ordered = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return kKind == kArgMax ? ordered : ~ordered;
}

template <int kKind>
__device__ __forceinline__ u64 arg_key(float v, i64 index) {
  return (static_cast<u64>(arg_value_word<kKind>(v)) << 32) |
         static_cast<u64>(0xffffffffu - static_cast<u32>(index));
}

__device__ __forceinline__ i64 arg_key_index(u64 key) {
  return static_cast<i64>(0xffffffffu - static_cast<u32>(key & 0xffffffffull));
}

__device__ __forceinline__ u64 max_u64(u64 a, u64 b) { return a > b ? a : b; }

// Threads of one group (kGroup <= 32 lanes aligned in the warp, or the whole CTA) end with the
// group's largest key. Every thread of the CTA must call it.
template <int kGroup>
__device__ __forceinline__ u64 group_max_key(u64 k) {
  if constexpr (kGroup <= 32) {
#pragma unroll
    for (int o = kGroup / 2; o > 0; o >>= 1) k = max_u64(k, __shfl_xor_sync(0xffffffffu, k, o));
    return k;
  } else {
    __shared__ u64 scratch[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) k = max_u64(k, __shfl_xor_sync(0xffffffffu, k, o));
    __syncthreads();
    if (lane == 0) scratch[warp] = k;
    __syncthreads();
    k = lane < warps ? scratch[lane] : 0ull;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) k = max_u64(k, __shfl_xor_sync(0xffffffffu, k, o));
    return k;
  }
}

// The tile function. kGroup threads per output sweep elements [split * a.chunk, +a.chunk) of its
// axis; consecutive lanes read consecutive elements (coalesced when a.s == 1). With kGroup == 1
// (many outputs along a strided axis) consecutive threads take consecutive outputs instead.
//   x: kept (a.n_out) x axis (a.n at stride a.s); out: [a.n_out] i64
template <class C, class Args>
__device__ __forceinline__ void arg_reduce_tile(const Args& a, i64 tile) {
  static_assert(C::kBlock % 32 == 0 && C::kBlock <= 1024, "whole warps");
  static_assert(C::kGroup == C::kBlock || (C::kGroup <= 32 && (C::kGroup & (C::kGroup - 1)) == 0),
                "a group: a power of two lanes of one warp, or the whole CTA");
  constexpr int kOutsPerCta = C::kBlock / C::kGroup;
  const i64 tile_x = tile % a.tiles_x, split = tile / a.tiles_x;
  const int group = threadIdx.x / C::kGroup, lane = threadIdx.x % C::kGroup;
  const i64 o = tile_x * kOutsPerCta + group;
  const i64 k_end = min(a.n, (split + 1) * a.chunk);
  u64 best = 0;
  if (o < a.n_out) {
    const typename C::In* x = a.x + offset_of<C::kIndex64>(a.kept, a.kept_x, o);
    for (i64 k0 = split * a.chunk + lane; k0 < k_end;
         k0 += static_cast<i64>(C::kGroup) * C::kUnroll) {
      float vals[C::kUnroll];
#pragma unroll
      for (int u = 0; u < C::kUnroll; ++u) {  // all loads first: kUnroll in flight per thread
        const i64 k = k0 + static_cast<i64>(u) * C::kGroup;
        if (k < k_end) vals[u] = to_float(x[k * a.s]);
      }
#pragma unroll
      for (int u = 0; u < C::kUnroll; ++u) {
        const i64 k = k0 + static_cast<i64>(u) * C::kGroup;
        if (k < k_end) best = max_u64(best, arg_key<C::kKind>(vals[u], k));
      }
    }
  }
  best = group_max_key<C::kGroup>(best);
  const bool writer = lane == 0 && o < a.n_out;
  if (a.splits == 1) {
    if (writer) a.out[o] = arg_key_index(best);
    return;
  }
  if (writer) atomicMax(a.acc + o, best);
  // The last of the a.splits CTAs of tile_x writes the outputs and leaves the workspace zeroed.
  if (!last_of_splits(a.counters + tile_x, a.splits)) return;
  const i64 o_begin = tile_x * kOutsPerCta, o_end = min(a.n_out, o_begin + kOutsPerCta);
  for (i64 i = o_begin + threadIdx.x; i < o_end; i += blockDim.x) {
    a.out[i] = arg_key_index(*reinterpret_cast<volatile u64*>(a.acc + i));
    a.acc[i] = 0ull;
  }
  if (threadIdx.x == 0) a.counters[tile_x] = 0u;
}
