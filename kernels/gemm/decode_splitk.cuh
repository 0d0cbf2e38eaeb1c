// Split-K for the decode tiles (decode_gemv.cuh, decode_gemv_ffma.cuh) without a second kernel:
// every CTA of a column tile ("slot") stores its f32 partial in the workspace, and the last one
// to arrive (elected by a counter that it then resets, so the next launch finds it zero) sums
// the partials in split order -- deterministic, whichever CTA is last -- into its C tile and
// returns true: the caller runs the region's epilogue once on the full sum. The others return
// false. The partial of a slot is kPart floats: rows x kBN of the C tile (row length kBN); the
// slot's partials are `slot_part` (splits x kPart floats) and its counter `count`.
#pragma once

#include "common/hopper.cuh"  // named_barrier_sync
#include "common/types.cuh"

template <int kThreads, int kPart, int kBN>
__device__ __forceinline__ bool decode_splitk_combine(float* ctile, int rows, float* slot_part, int split, int splits,
                                                      unsigned int* count) {
  static_assert(kPart % kBN == 0, "a partial is whole C tile rows");
  __shared__ int decode_last;
  __syncthreads();  // the C tile is complete, whoever wrote which element
  float* mine = slot_part + split * kPart;
  for (int i = threadIdx.x; i < rows * kBN; i += kThreads) mine[i] = ctile[i];
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) decode_last = atomicAdd(count, 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!decode_last) return false;
  __threadfence();
  const float* all = slot_part;
  for (int i = threadIdx.x; i < rows * kBN; i += kThreads) {
    float sum = 0.0f;
    for (int q = 0; q < splits; ++q) sum += __ldcg(all + q * kPart + i);  // L2: other SMs wrote them
    ctile[i] = sum;
  }
  if (threadIdx.x == 0) *count = 0u;  // every split has arrived: ready for the next launch
  __syncthreads();
  return true;
}

// The same protocol run by a group of kThreads threads (`tid` 0..kThreads-1) meeting on barrier
// kBar (0: the whole CTA; 1: the TMA decode tile's consumer warps beside its producer warp), and
// written for latency: float4 partials, and each thread issues its reads of up to 4 partials
// before it sums them. The sums are those of
// decode_splitk_combine, in the same (split) order. ctile and slot_part are 16-byte aligned.
template <int kThreads, int kBar, int kPart, int kBN>
__device__ __forceinline__ bool decode_splitk_combine_group(float* ctile, int rows, float* slot_part, int split,
                                                            int splits, unsigned int* count, int tid) {
  static_assert(kPart % kBN == 0 && kBN % 4 == 0, "a partial is whole C tile rows of float4");
  __shared__ int group_last;
  const int n4 = rows * kBN / 4;
  float4* mine = reinterpret_cast<float4*>(slot_part + split * kPart);
  for (int i = tid; i < n4; i += kThreads) mine[i] = reinterpret_cast<const float4*>(ctile)[i];
  __threadfence();
  named_barrier_sync(kBar, kThreads);
  if (tid == 0) group_last = atomicAdd(count, 1u) == static_cast<unsigned>(splits - 1);
  named_barrier_sync(kBar, kThreads);
  if (!group_last) return false;
  __threadfence();
  const float4* all = reinterpret_cast<const float4*>(slot_part);
  constexpr int kBatch = 4;
  for (int i = tid; i < n4; i += kThreads) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int q0 = 0; q0 < splits; q0 += kBatch) {
      float4 v[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        v[j] = q0 + j < splits ? __ldcg(all + (q0 + j) * (kPart / 4) + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (q0 + j < splits) {
          sum.x += v[j].x;
          sum.y += v[j].y;
          sum.z += v[j].z;
          sum.w += v[j].w;
        }
      }
    }
    reinterpret_cast<float4*>(ctile)[i] = sum;
  }
  if (tid == 0) *count = 0u;  // every split has arrived: ready for the next launch
  named_barrier_sync(kBar, kThreads);
  return true;
}
