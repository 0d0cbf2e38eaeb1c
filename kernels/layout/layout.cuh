// Layout regions as strided copies: permute, slice, concat parts and reshapes of views all move
// elements from one strided view to another over an iteration shape. T is the element type, or
// a 16/8/4-byte word when the host (src/engines/jit/codegen_layout.cpp) found every vector start
// aligned (contiguous innermost rows on both sides; the iteration shape then counts words). The
// host generates `using Copy = CopyKernel<T, CopyPart<kIndex64, kRank>, ...>` (one part per
// copied input: a concat's inputs share one launch) and the kernel that runs Copy::run.
#pragma once

#include "common/abi.h"
#include "common/index.cuh"
#include "common/pdl.cuh"

template <typename T>
struct CopyArgs {
  SinterIterShape shape;
  const T* in;
  SinterStridedView in_view;
  T* out;
  SinterStridedView out_view;
};

// The parts of one copy kernel (a concat's inputs), each its own CopyArgs, one launch for all.
template <typename T, int kParts>
struct CopyPartsArgs {
  CopyArgs<T> part[kParts];
};

constexpr int kCopyBlock = 256;
constexpr int kCopyUnroll = 4;
constexpr int kCopyTile = kCopyBlock * kCopyUnroll;  // elements (words) per tile

// out[i] = in[i] for i in [first, first + kCopyTile) of the iteration shape. All kCopyUnroll loads
// of a thread are issued before its stores, so a thread keeps that many words in flight.
template <typename T, bool kIndex64, int kRank>
__device__ __forceinline__ void copy_tile(const CopyArgs<T>& a, i64 first) {
  T v[kCopyUnroll];
#pragma unroll
  for (int u = 0; u < kCopyUnroll; ++u) {
    const i64 i = first + u * kCopyBlock + threadIdx.x;
    if (i < a.shape.numel) v[u] = a.in[offset_of<kIndex64, kRank>(a.shape, a.in_view, i)];
  }
#pragma unroll
  for (int u = 0; u < kCopyUnroll; ++u) {
    const i64 i = first + u * kCopyBlock + threadIdx.x;
    if (i < a.shape.numel) a.out[offset_of<kIndex64, kRank>(a.shape, a.out_view, i)] = v[u];
  }
}

__device__ __forceinline__ i64 copy_tiles(i64 numel) { return (numel + kCopyTile - 1) / kCopyTile; }

// One part's structure: 64-bit element indices, and the rank of its collapsed shape.
template <bool kIndex64_, int kRank_>
struct CopyPart {
  static constexpr bool kIndex64 = kIndex64_;
  static constexpr int kRank = kRank_;
};

// The copy of a region's parts, tiles of part 0 first, then part 1's, ...
template <typename T, class... Parts>
struct CopyKernel {
  static constexpr int kParts = sizeof...(Parts);
  static_assert(kParts >= 1, "a copy of at least one part");
  typedef CopyPartsArgs<T, kParts> Args;

  // The tile function: tile `t` of all the parts' tiles.
  static __device__ __forceinline__ void tile(const Args& a, i64 t) { part_tile<0, Parts...>(a, t); }

  // A CTA's tiles: blockIdx.x, + gridDim.x, ...
  static __device__ __forceinline__ void run(const Args& a) {
    i64 tiles = 0;
    for (int k = 0; k < kParts; ++k) tiles += copy_tiles(a.part[k].shape.numel);
    for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) tile(a, t);
  }

 private:
  template <int K, class Part, class... Rest>
  static __device__ __forceinline__ void part_tile(const Args& a, i64 t) {
    static_assert(Part::kRank >= 1 && Part::kRank <= SINTER_MAX_RANK, "a collapsed rank");
    const i64 n = copy_tiles(a.part[K].shape.numel);
    if (t < n) {
      copy_tile<T, Part::kIndex64, Part::kRank>(a.part[K], t * kCopyTile);
      return;
    }
    if constexpr (sizeof...(Rest) > 0) part_tile<K + 1, Rest...>(a, t - n);
  }
};
