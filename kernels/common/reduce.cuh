// Reductions inside a CTA (warp shuffles, then shared memory) and exit reductions across CTAs:
// each CTA adds its partial with one atomic into a float accumulator, and the last CTA to finish
// converts the result to the output dtype and resets the accumulator for the next launch.
#pragma once

#include "common/abi.h"
#include "common/types.cuh"
#include "common/math.cuh"

enum ReduceKind { kReduceSum = 0, kReduceMax = 1, kReduceMin = 2, kReduceAmax = 3, kReduceMean = 4 };

template <int kKind> __device__ __forceinline__ float reduce_identity() {
  return kKind == kReduceMax ? -__int_as_float(0x7f800000)
         : kKind == kReduceMin ? __int_as_float(0x7f800000) : 0.0f;
}

// The value an element contributes (|x| for amax).
template <int kKind> __device__ __forceinline__ float reduce_input(float x) {
  return kKind == kReduceAmax ? fabsf(x) : x;
}

template <int kKind> __device__ __forceinline__ float reduce_combine(float a, float b) {
  if (kKind == kReduceSum || kKind == kReduceMean) return a + b;
  if (kKind == kReduceMin) return op_min(a, b);
  return op_max(a, b);
}

template <int kKind> __device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = reduce_combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Every thread of the CTA gets the result. `scratch` holds at least 33 floats.
template <int kKind>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_reduce<kKind>(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : reduce_identity<kKind>();
  v = warp_reduce<kKind>(v);
  return v;
}

// The same with ONE barrier, for row kernels that reduce every row: no barrier guards `slots`
// (32 floats) against readers of the previous call on the same slots, so the caller must put
// another block-wide barrier between consecutive calls on one array. The row kernels alternate
// two arrays (max then sum for softmax, sum then squared deviations for layernorm): a warp can
// only write an array again after passing the other array's barrier, which every warp reaches
// after it has read this array. Fewer barriers are not always faster: rmsnorm's persistent
// kernel, with one reduction per row, ran 5% slower with this than with block_reduce (H200).
template <int kKind>
__device__ __forceinline__ float block_reduce_alternating(float v, float* slots) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_reduce<kKind>(v);
  if (lane == 0) slots[warp] = v;
  __syncthreads();
  v = lane < warps ? slots[lane] : reduce_identity<kKind>();
  return warp_reduce<kKind>(v);
}

// A reduction split over CTAs: called by every thread of each of the `splits` CTAs that count
// on `counter`, once its part is out (stored or added atomically). True in the last CTA to
// arrive, which then sees every other CTA's part; false in the others. The caller of the true
// side resets the counter for the next launch.
__device__ __forceinline__ bool last_of_splits(unsigned int* counter, int splits) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == static_cast<unsigned int>(splits - 1);
  __syncthreads();
  if (!last) return false;
  __threadfence();
  return true;
}

// Max and min accumulate through an order-preserving map of floats onto unsigned integers in
// which 0 lies below every float, so a zeroed accumulator is the identity. Min is the max of -x.
__device__ __forceinline__ unsigned int ordered_bits(float x) {
  const unsigned int b = __float_as_uint(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float from_ordered_bits(unsigned int u) {
  if (u == 0u) return -__int_as_float(0x7f800000);  // nothing seen
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

template <int kKind>
__device__ __forceinline__ void accumulate_atomic(float* acc, float v) {
  if (kKind == kReduceSum || kKind == kReduceMean) {
    atomicAdd(acc, v);
  } else {
    // A NaN of either sign must win (the CPU reference propagates NaN): make it the positive NaN
    // with all mantissa bits set, the largest ordered value.
    float w = kKind == kReduceMin ? -v : v;
    if (w != w) w = __int_as_float(0x7fffffff);
    atomicMax(reinterpret_cast<unsigned int*>(acc), ordered_bits(w));
  }
}

template <int kKind>
__device__ __forceinline__ float accumulated_value(const float* acc, float scale) {
  const float raw = *reinterpret_cast<const volatile float*>(acc);
  if (kKind == kReduceSum) return raw;
  if (kKind == kReduceMean) return raw * scale;
  const unsigned int u = __float_as_uint(raw);
  return kKind == kReduceMin ? -from_ordered_bits(u) : from_ordered_bits(u);
}

// Called by every thread of every CTA after its atomics: the last CTA writes the outputs in
// dtype OutT and zeroes the accumulators and the counter.
template <int kKind, typename OutT>
__device__ __forceinline__ void finalize_exit_reduction(const SinterReduceSlot& s) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int total = gridDim.x * gridDim.y * gridDim.z;
    last = atomicAdd(s.count, 1u) == total - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  OutT* out = static_cast<OutT*>(s.out);
  for (long long i = threadIdx.x; i < s.n_out; i += blockDim.x) {
    out[i] = from_float<OutT>(accumulated_value<kKind>(s.acc + i, s.scale));
    s.acc[i] = 0.0f;
  }
  if (threadIdx.x == 0) *s.count = 0u;
}
