// Split-K for the decode tiles (decode_gemv.cuh, decode_gemv_ffma.cuh) without a second kernel:
// every CTA of a column tile ("slot") stores its f32 partial in the workspace, and the last one
// to arrive (elected by a counter that it then resets, so the next launch finds it zero) sums
// the partials in split order -- deterministic, whichever CTA is last -- into its C tile and
// returns true: the caller runs the region's epilogue once on the full sum. The others return
// false. The partial of a slot is kPart floats: rows x kBN of the C tile (row length kBN); the
// slot's partials are `slot_part` (splits x kPart floats) and its counter `count`.
#pragma once

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
