// A strided copy: permute, slice, concat parts and reshapes of views all move elements from one
// strided view to another over an iteration shape.
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

// out: the elements [first, first + count) of the iteration shape
template <typename T, bool kIndex64>
__device__ __forceinline__ void copy_tile(const CopyArgs<T>& a, i64 first, i64 count) {
  for (i64 i = first + threadIdx.x; i < first + count && i < a.shape.numel; i += blockDim.x) {
    a.out[offset_of<kIndex64>(a.shape, a.out_view, i)] = a.in[offset_of<kIndex64>(a.shape, a.in_view, i)];
  }
}
