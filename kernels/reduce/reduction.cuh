// Standalone reductions (sum, mean, max, min, amax) over any set of axes. The host
// (src/engines/jit/codegen_reduction.cpp) collapses the input x into
//   kept dims:    one output each, outputs row-major over them (out is contiguous)
//   reduced dims: sorted by stride, so the innermost one is a "run" of r0 elements at stride s0,
//                 and the rest ("outer") is a shape of its own
// and generates an Args struct (the fields read below, by name) and a config C:
//   C::kKind (ReduceKind), C::In, C::Out, C::Acc (float, or i64 for integer inputs: exact),
//   C::kRowTile (row tiles; else column tiles), C::kVec (elements per load), C::kGroup (threads
//   per output, row tiles), C::kOutLanes and C::kSubs (column tiles), C::kBlock, C::kUnroll,
//   C::kIndex64, C::kOuter (the reduced dims are more than one run).
// Tiles are (tile_x, split): tile_x picks a group of outputs, split a slice of the reduced range.
// With a.splits > 1 the slices meet in workspace accumulators (a.acc, one per output) through
// atomics, and the last CTA of each tile_x converts them and zeroes them again (with its counter),
// so the workspace needs zeroing only once, when it is allocated. reduce_tile is the tile function;
// the kernel runs one tile per CTA: reduce_tile<Cfg>(a, blockIdx.y * a.tiles_x + blockIdx.x).
#pragma once

#include "common/abi.h"
#include "common/index.cuh"
#include "common/math.cuh"
#include "common/memory.cuh"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/types.cuh"

// ---- accumulator arithmetic: float (via common/reduce.cuh) or i64 ------------------------------

template <int kKind, typename Acc>
struct RedIdentity {  // float: -inf for max, +inf for min, 0 for sum, mean and amax (|x| >= 0)
  static __device__ __forceinline__ float get() { return reduce_identity<kKind>(); }
};
template <int kKind>
struct RedIdentity<kKind, i64> {
  static __device__ __forceinline__ i64 get() {
    return kKind == kReduceMax   ? static_cast<i64>(0x8000000000000000ull)
           : kKind == kReduceMin ? 0x7fffffffffffffffll
                                 : 0;
  }
};
template <int kKind, typename Acc>
__device__ __forceinline__ Acc red_identity() {
  return RedIdentity<kKind, Acc>::get();
}

template <int kKind>
__device__ __forceinline__ float red_input(float x) {
  return reduce_input<kKind>(x);
}
template <int kKind>
__device__ __forceinline__ i64 red_input(i64 x) {
  return kKind == kReduceAmax && x < 0 ? -x : x;
}

template <int kKind>
__device__ __forceinline__ float red_combine(float a, float b) {
  return reduce_combine<kKind>(a, b);  // max/min propagate NaN, like the CPU reference
}
template <int kKind>
__device__ __forceinline__ i64 red_combine(i64 a, i64 b) {
  if (kKind == kReduceSum) return a + b;
  if (kKind == kReduceMin) return a < b ? a : b;
  return a > b ? a : b;
}

// Threads of one group (a power of two <= 32 lanes, aligned in the warp, or the whole CTA) end
// with the group's result. Every thread of the CTA must call it.
template <int kKind, int kGroup, typename Acc>
__device__ __forceinline__ Acc group_reduce(Acc v) {
  if constexpr (kGroup <= 32) {
#pragma unroll
    for (int o = kGroup / 2; o > 0; o >>= 1)
      v = red_combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
  } else {
    __shared__ Acc scratch[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = red_combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();  // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : red_identity<kKind, Acc>();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = red_combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
  }
}

// A finished accumulator in the output dtype. Float: mean scales; integer outputs truncate and
// saturate, NaN -> 0, as round_to_dtype does. i64: exact for integer outputs (saturating to i32).
template <int kKind, typename Out>
__device__ __forceinline__ Out red_finish(float v, float scale) {
  return from_float<Out>(kKind == kReduceMean ? v * scale : v);
}
template <typename Out>
struct FromI64 {
  static __device__ __forceinline__ Out conv(i64 v) {
    return from_float<Out>(static_cast<float>(v));
  }
};
template <>
struct FromI64<i64> {
  static __device__ __forceinline__ i64 conv(i64 v) { return v; }
};
template <>
struct FromI64<bool> {
  static __device__ __forceinline__ bool conv(i64 v) { return v != 0; }
};
template <>
struct FromI64<int> {
  static __device__ __forceinline__ int conv(i64 v) {
    return v > 2147483647ll    ? 2147483647
           : v < -2147483648ll ? static_cast<int>(0x80000000u)
                               : static_cast<int>(v);
  }
};
template <int kKind, typename Out>
__device__ __forceinline__ Out red_finish(i64 v, float) {
  return FromI64<Out>::conv(v);
}

// Workspace accumulators. Float: common/reduce.cuh's atomics. i64: sum wraps in two's complement
// (exact); max and min map onto unsigned integers in order, so a zeroed word is the identity.
template <int kKind>
__device__ __forceinline__ void red_atomic(float* acc, float v) {
  accumulate_atomic<kKind>(acc, v);
}
template <int kKind>
__device__ __forceinline__ void red_atomic(i64* acc, i64 v) {
  unsigned long long* p = reinterpret_cast<unsigned long long*>(acc);
  const unsigned long long ord = static_cast<unsigned long long>(v) ^ 0x8000000000000000ull;
  if (kKind == kReduceSum)
    atomicAdd(p, static_cast<unsigned long long>(v));
  else if (kKind == kReduceMin)
    atomicMax(p, ~ord);
  else
    atomicMax(p, ord);
}
template <int kKind, typename Out>
__device__ __forceinline__ Out red_drain(float* acc, float scale) {
  const Out r = from_float<Out>(accumulated_value<kKind>(acc, scale));
  *acc = 0.0f;
  return r;
}
template <int kKind, typename Out>
__device__ __forceinline__ Out red_drain(i64* acc, float) {
  const unsigned long long u = *reinterpret_cast<const volatile unsigned long long*>(acc);
  const i64 v = kKind == kReduceSum   ? static_cast<i64>(u)
                : kKind == kReduceMin ? static_cast<i64>(~u ^ 0x8000000000000000ull)
                                      : static_cast<i64>(u ^ 0x8000000000000000ull);
  *acc = 0;
  return FromI64<Out>::conv(v);
}

// Called by every thread of a split CTA after its atomics: the last of the a.splits CTAs of
// tile_x writes outputs [o_begin, o_end) and resets their accumulators and the tile's counter.
template <class C, class Args>
__device__ __forceinline__ void finish_split(const Args& a, i64 tile_x, i64 o_begin, i64 o_end) {
  if (!last_of_splits(a.counters + tile_x, a.splits)) return;
  for (i64 o = o_begin + threadIdx.x; o < o_end; o += blockDim.x) {
    a.out[o] = red_drain<C::kKind, typename C::Out>(a.acc + o, a.scale);
  }
  if (threadIdx.x == 0) a.counters[tile_x] = 0u;
}

// Offset of vector v (kVec elements) of one output's reduced range (runs of a.r0 elements).
template <class C, class Args>
__device__ __forceinline__ i64 row_vector_offset(const Args& a, i64 v) {
  if (!C::kOuter) return v * C::kVec * a.s0;
  const i64 q = C::kIndex64 ? v / a.vpr_n : static_cast<i64>(fast_div(a.vpr, static_cast<u32>(v)));
  return offset_of<C::kIndex64>(a.outer, a.outer_x, q) + (v - q * a.vpr_n) * C::kVec * a.s0;
}

// Row tile: kGroup threads per output (kBlock / kGroup outputs per CTA) sweep vectors
// [split * a.chunk, +a.chunk) of its reduced range; consecutive lanes read consecutive vectors.
// Also the global reduction: one output, kGroup = kBlock, many splits.
//   x: kept (a.n_out) x reduced (a.nv vectors of kVec); out: [a.n_out]
template <class C, class Args>
__device__ __forceinline__ void reduce_row_tile(const Args& a, i64 tile) {
  typedef typename C::Acc Acc;
  typedef typename ComputeOf<typename C::In>::type V;
  constexpr int kOutsPerCta = C::kBlock / C::kGroup;
  const i64 tile_x = tile % a.tiles_x, split = tile / a.tiles_x;
  const int group = threadIdx.x / C::kGroup, lane = threadIdx.x % C::kGroup;
  const i64 o = tile_x * kOutsPerCta + group;
  const i64 v_end = min(a.nv, (split + 1) * a.chunk);
  Acc acc = red_identity<C::kKind, Acc>();
  if (o < a.n_out) {
    const typename C::In* x = a.x + offset_of<C::kIndex64>(a.kept, a.kept_x, o);
    for (i64 v0 = split * a.chunk + lane; v0 < v_end;
         v0 += static_cast<i64>(C::kGroup) * C::kUnroll) {
      V vals[C::kUnroll][C::kVec];
#pragma unroll
      for (int u = 0; u < C::kUnroll; ++u) {  // all loads first: kUnroll in flight per thread
        const i64 v = v0 + static_cast<i64>(u) * C::kGroup;
        if (v < v_end) load_vec(x + row_vector_offset<C>(a, v), vals[u]);
      }
#pragma unroll
      for (int u = 0; u < C::kUnroll; ++u) {
        if (v0 + static_cast<i64>(u) * C::kGroup < v_end) {
#pragma unroll
          for (int j = 0; j < C::kVec; ++j) {
            acc = red_combine<C::kKind>(acc, red_input<C::kKind>(static_cast<Acc>(vals[u][j])));
          }
        }
      }
    }
  }
  acc = group_reduce<C::kKind, C::kGroup>(acc);
  const bool writer = lane == 0 && o < a.n_out;
  if (a.splits == 1) {
    if (writer) a.out[o] = red_finish<C::kKind, typename C::Out>(acc, a.scale);
    return;
  }
  if (writer) red_atomic<C::kKind>(a.acc + o, acc);
  const i64 o_begin = tile_x * kOutsPerCta;
  finish_split<C>(a, tile_x, o_begin, min(a.n_out, o_begin + kOutsPerCta));
}

// Column tile (also the general fallback). A warp covers kOutLanes x kVec consecutive outputs:
// lane = red_lane * kOutLanes + out_lane, and each lane loads kVec outputs' elements at once (kVec
// > 1 only when kept dim 0 has x stride 1 and every stride allows it). The warp's 32 / kOutLanes
// red_lanes take interleaved reduced elements, so narrow columns still read whole rows per step;
// kSubs warps share one output group, each a contiguous part of this split's reduced range. When
// kept dim 0 is contiguous (a column reduction) every step of a warp is one coalesced access.
//   x: kept (a.n_out) x reduced (a.count elements: a.r0 per run); out: [a.n_out]
template <class C, class Args>
__device__ __forceinline__ void reduce_col_tile(const Args& a, i64 tile) {
  typedef typename C::Acc Acc;
  constexpr int kWarps = C::kBlock / 32, kRedLanes = 32 / C::kOutLanes;
  constexpr int kGroupOuts = C::kOutLanes * C::kVec, kCtaOuts = kWarps / C::kSubs * kGroupOuts;
  static_assert(kWarps % C::kSubs == 0 && 32 % C::kOutLanes == 0, "column tile shape");
  const i64 tile_x = tile % a.tiles_x, split = tile / a.tiles_x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int out_lane = lane % C::kOutLanes, red_lane = lane / C::kOutLanes;
  const int sub = warp % C::kSubs, col = warp / C::kSubs;
  const i64 o = tile_x * kCtaOuts + col * kGroupOuts + out_lane * C::kVec;  // first of kVec outputs
  const i64 begin = split * a.chunk, end = min(a.count, begin + a.chunk);
  const i64 per_sub = end > begin ? (end - begin + C::kSubs - 1) / C::kSubs : 0;
  i64 i = begin + sub * per_sub;
  const i64 stop = min(end, i + per_sub);
  Acc acc[C::kVec];
#pragma unroll
  for (int e = 0; e < C::kVec; ++e) acc[e] = red_identity<C::kKind, Acc>();
  if (o < a.n_out) {  // the host makes kVec divide kept dim 0: all kVec outputs exist
    const typename C::In* x = a.x + offset_of<C::kIndex64>(a.kept, a.kept_x, o);
    while (i < stop) {
      const i64 q = C::kOuter ? i / a.r0 : 0;  // one division per run, not per element
      const i64 i0 = i - q * a.r0;
      const i64 run = min(a.r0 - i0, stop - i);
      const typename C::In* p =
          x + (C::kOuter ? offset_of<C::kIndex64>(a.outer, a.outer_x, q) : 0) + i0 * a.s0;
#pragma unroll 4
      for (i64 j = red_lane; j < run; j += kRedLanes) {
        typename ComputeOf<typename C::In>::type vals[C::kVec];
        load_vec(p + j * a.s0, vals);
#pragma unroll
        for (int e = 0; e < C::kVec; ++e) {
          acc[e] = red_combine<C::kKind>(acc[e], red_input<C::kKind>(static_cast<Acc>(vals[e])));
        }
      }
      i += run;
    }
  }
  // Lanes that share out_lane hold partials of the same outputs: combine them, then the warps.
#pragma unroll
  for (int off = C::kOutLanes; off < 32; off <<= 1) {
#pragma unroll
    for (int e = 0; e < C::kVec; ++e)
      acc[e] = red_combine<C::kKind>(acc[e], __shfl_xor_sync(0xffffffffu, acc[e], off));
  }
  if constexpr (C::kSubs > 1) {
    __shared__ Acc part[kWarps][kGroupOuts];
    if (red_lane == 0) {
#pragma unroll
      for (int e = 0; e < C::kVec; ++e) part[warp][out_lane * C::kVec + e] = acc[e];
    }
    __syncthreads();
    if (sub == 0 && red_lane == 0) {
      for (int w = 1; w < C::kSubs; ++w) {
#pragma unroll
        for (int e = 0; e < C::kVec; ++e)
          acc[e] = red_combine<C::kKind>(acc[e], part[warp + w][out_lane * C::kVec + e]);
      }
    }
  }
  const bool writer = sub == 0 && red_lane == 0 && o < a.n_out;
  if (a.splits == 1) {
    if (writer) {
#pragma unroll
      for (int e = 0; e < C::kVec; ++e)
        a.out[o + e] = red_finish<C::kKind, typename C::Out>(acc[e], a.scale);
    }
    return;
  }
  if (writer) {
#pragma unroll
    for (int e = 0; e < C::kVec; ++e) red_atomic<C::kKind>(a.acc + o + e, acc[e]);
  }
  finish_split<C>(a, tile_x, tile_x * kCtaOuts, min(a.n_out, (tile_x + 1) * kCtaOuts));
}

// The tile function: tile (tile_x, split) = (tile % a.tiles_x, tile / a.tiles_x) of the reduction.
template <class C, class Args>
__device__ __forceinline__ void reduce_tile(const Args& a, i64 tile) {
  static_assert(C::kBlock % 32 == 0 && C::kBlock <= 1024, "whole warps");
  static_assert(C::kVec >= 1 && (C::kVec & (C::kVec - 1)) == 0, "kVec: a power of two");
  if constexpr (C::kRowTile) {
    static_assert(C::kGroup == C::kBlock || (C::kGroup <= 32 && (C::kGroup & (C::kGroup - 1)) == 0),
                  "a row group: a power of two lanes of one warp, or the whole CTA");
    reduce_row_tile<C>(a, tile);
  } else {
    reduce_col_tile<C>(a, tile);
  }
}
