// Row statistics that need two numbers per row -- layernorm's mean and variance, softmax's max
// and sum of exponentials -- reduced across a CTA in ONE pass instead of two. Each thread
// summarizes its own elements exactly (they sit in its registers), then the summaries combine
// per warp (warp_combine) and across warps through shared memory. One block reduction per row
// instead of two halves the barriers and the idle memory time per row, which is what a
// memory-bound row kernel loses to.
//
// Both combines are the numerically stable forms:
//  - mean/M2: Chan, Golub and LeVeque's update (no E[x^2] - E[x]^2 cancellation);
//  - max/sum: the online-softmax rescaling sum_a * exp(max_a - max) + sum_b * exp(max_b - max).
// The pairwise `combine` is kept for code that merges two summaries.
#pragma once

#include "common/math.cuh"
#include "common/types.cuh"

// Count, mean and sum of squared deviations from the mean of a set of values.
struct MeanM2 {
  float n, mean, m2;
};

__device__ __forceinline__ MeanM2 combine(const MeanM2& a, const MeanM2& b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;  // both empty
  const float d = b.mean - a.mean;
  const float wb = __fdividef(b.n, n);  // counts are small exact integers
  return MeanM2{n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
}

__device__ __forceinline__ MeanM2 shfl_xor(const MeanM2& v, int o) {
  return MeanM2{__shfl_xor_sync(0xffffffffu, v.n, o), __shfl_xor_sync(0xffffffffu, v.mean, o),
                __shfl_xor_sync(0xffffffffu, v.m2, o)};
}

__device__ __forceinline__ MeanM2 empty_of(MeanM2) { return MeanM2{0.0f, 0.0f, 0.0f}; }

// Maximum of a set of values and the sum of exp(x - max) over it. An empty set has sum 0 and
// contributes nothing, whatever its max; NaN and infinities propagate as in exp(x - max(x)).
struct MaxSum {
  float max, sum;
};

__device__ __forceinline__ MaxSum combine(const MaxSum& a, const MaxSum& b) {
  if (a.sum == 0.0f) return b;
  if (b.sum == 0.0f) return a;
  const float m = fmaxf(a.max, b.max);
  const float sa = a.sum * fast_exp2((a.max - m) * 1.4426950408889634f);
  const float sb = b.sum * fast_exp2((b.max - m) * 1.4426950408889634f);
  return MaxSum{(a.max != a.max || b.max != b.max) ? a.max + b.max : m, sa + sb};
}

__device__ __forceinline__ MaxSum shfl_xor(const MaxSum& v, int o) {
  return MaxSum{__shfl_xor_sync(0xffffffffu, v.max, o), __shfl_xor_sync(0xffffffffu, v.sum, o)};
}

__device__ __forceinline__ MaxSum empty_of(MaxSum) { return MaxSum{-__int_as_float(0x7f800000), 0.0f}; }

// One warp's summaries combined, every lane getting the result. Not the pairwise combine per
// shuffle step (a rescale with two exp2 and branches for MaxSum, a division for MeanM2, at each
// of five steps): each statistic's shift is agreed first and applied once. The H200 profile of
// softmax 16384x8192 showed the row kernel issue-bound (77% of issue slots busy, DRAM 57%) with
// the pairwise combine as much work per row as the elements themselves.
//  - MaxSum: the warp max first (max is exact in any order), then each lane's sum rescaled to it
//    once and summed. An empty lane (sum 0, max -inf) adds 0, even when the whole warp is empty
//    (exp2(-inf - -inf) would be NaN); NaN sums propagate as before.
//  - MeanM2: the count and the sum (n x mean) first, giving the warp mean; then each lane's M2
//    about that mean, m2 + n (mean_lane - mean)^2 (Chan's identity, no E[x^2] - E[x]^2), summed.
__device__ __forceinline__ MaxSum warp_combine(MaxSum v) {
  float m = v.max;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = v.sum == 0.0f ? 0.0f : v.sum * fast_exp2((v.max - m) * 1.4426950408889634f);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return MaxSum{m, s};
}

__device__ __forceinline__ MeanM2 warp_combine(MeanM2 v) {
  float n = v.n, sum = v.n * v.mean;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    n += __shfl_xor_sync(0xffffffffu, n, o);
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
  }
  const float mean = n > 0.0f ? __fdividef(sum, n) : 0.0f;  // counts are small exact integers
  const float d = v.mean - mean;
  float q = v.m2 + v.n * d * d;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  return MeanM2{n, mean, q};
}

// Every thread of the CTA gets the combination of all threads' summaries. `scratch` holds 32.
// Pairwise at each shuffle step (verified on the H200 since session 2; softmax's default).
template <typename T>
__device__ __forceinline__ T block_combine(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine(v, shfl_xor(v, o));
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : empty_of(v);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine(v, shfl_xor(v, o));
  return v;
}

// The same through warp_combine (fewer instructions: softmax's row kernel 712 -> 536 SASS
// instructions, add+layernorm's 824 -> 696 and 46 -> 40 registers). Verified on the H200 in
// session 7 (GpuRegions.RowwiseWarpCombine, every row-wise candidate); layernorm uses it by
// default, softmax keeps the pairwise form, which timed faster (codegen_rowwise.cpp).
template <typename T>
__device__ __forceinline__ T block_combine_warp_first(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_combine(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_combine(lane < warps ? scratch[lane] : empty_of(v));
}
