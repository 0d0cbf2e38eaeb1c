// A strided copy: permute, slice, concat parts and reshapes of views all move elements from one
// strided view to another over an iteration shape. T is the element type, or a 16/8/4-byte word
// when codegen found every vector start aligned (contiguous innermost rows on both sides; the
// iteration shape then counts words).
#pragma once

#include "common/abi.h"
#include "common/index.cuh"

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
