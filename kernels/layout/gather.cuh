// Gather regions: out = x's slices along one axis picked by integer indices (an embedding lookup,
// numpy.take). The host (src/engines/jit/codegen_layout.cpp, gather_kernel) iterates over the output as
//   S = [x's axes before the axis..., K (the indices, flattened), x's axes after it...]
// collapsed (innermost first), in words of T (16/8/4 bytes, or the element) where every row it
// moves is contiguous and aligned, and gives three views over S: x without the picked axis (stride
// 0 on K), the K coordinate itself (stride 1 on K, 0 elsewhere), and the output. The indices are
// read through their own view; an index outside [-n, n) stops the kernel with a trap (a CUDA launch
// failure), as torch's device-side assert does.
#pragma once

#include "common/abi.h"
#include "common/index.cuh"
#include "common/pdl.cuh"

template <typename T, typename I>
struct GatherArgs {
  SinterIterShape shape;        // S, in words
  const T* x;
  SinterStridedView x_view;     // over S, in words; 0 on K
  SinterStridedView k_view;     // the K coordinate: 1 on K, 0 elsewhere
  T* out;
  SinterStridedView out_view;   // over S, in words
  const I* indices;
  SinterIterShape index_shape;  // the indices, collapsed, in elements
  SinterStridedView index_view;
  long long n;                  // the picked axis's size
  long long axis_stride;        // x's stride along it, in words
};

constexpr int kGatherBlock = 256;
constexpr int kGatherUnroll = 4;
constexpr int kGatherTile = kGatherBlock * kGatherUnroll;

template <typename T, typename I, bool kIndex64, int kRank, int kIndexRank>
struct GatherKernel {
  typedef GatherArgs<T, I> Args;

  static __device__ __forceinline__ i64 source(const Args& a, i64 w) {
    const i64 k = offset_of<kIndex64, kRank>(a.shape, a.k_view, w);
    i64 j = static_cast<i64>(a.indices[offset_of<kIndex64, kIndexRank>(a.index_shape, a.index_view, k)]);
    if (j < -a.n || j >= a.n) __trap();
    if (j < 0) j += a.n;
    return offset_of<kIndex64, kRank>(a.shape, a.x_view, w) + j * a.axis_stride;
  }

  // The tile function: words [t * kGatherTile, (t + 1) * kGatherTile) of S, all loads first.
  static __device__ __forceinline__ void tile(const Args& a, i64 t) {
    T v[kGatherUnroll];
#pragma unroll
    for (int u = 0; u < kGatherUnroll; ++u) {
      const i64 w = t * kGatherTile + u * kGatherBlock + threadIdx.x;
      if (w < a.shape.numel) v[u] = a.x[source(a, w)];
    }
#pragma unroll
    for (int u = 0; u < kGatherUnroll; ++u) {
      const i64 w = t * kGatherTile + u * kGatherBlock + threadIdx.x;
      if (w < a.shape.numel) a.out[offset_of<kIndex64, kRank>(a.shape, a.out_view, w)] = v[u];
    }
  }

  // A CTA's tiles: blockIdx.x, + gridDim.x, ...
  static __device__ __forceinline__ void run(const Args& a) {
    const i64 tiles = (a.shape.numel + kGatherTile - 1) / kGatherTile;
    for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) tile(a, t);
  }
};
