// Index arithmetic for kernels whose shapes are run-time arguments (kernels/common/abi.h): the
// element offset of an operand over a collapsed iteration shape, with divisions by run-time
// sizes done as a multiply-high (SinterFastDivmod) while indices fit in 31 bits.
#pragma once

#include "common/abi.h"
#include "common/types.cuh"

__device__ __forceinline__ u32 fast_div(const SinterFastDivmod& f, u32 n) {
  return (__umulhi(n, f.mul) + n) >> f.shift;
}

// The element index type of a kernel: 32-bit while every index fits in 31 bits.
template <bool kIndex64> struct IndexType { typedef i64 type; };
template <> struct IndexType<false> { typedef u32 type; };

// Offset, in elements, of the element with row-major index `linear` of shape `s` in `v`.
// kRank >= 0 is the shape's rank known when the kernel is generated (the loop is then exactly
// that long, with no per-dimension predicate); -1 reads it from `s` at run time.
// kStrided (with kRank >= 0): bit i set when the view's stride of dimension i may be nonzero;
// a clear bit is a broadcast dimension, known when the kernel is generated, whose coordinate
// contributes nothing and needs no multiply (a row bias, a column scale).
template <bool kIndex64, int kRank = -1, unsigned kStrided = ~0u>
__device__ __forceinline__ i64 offset_of(const SinterIterShape& s, const SinterStridedView& v,
                                         i64 linear) {
  constexpr int kLoop = kRank >= 0 ? kRank : SINTER_MAX_RANK;
  i64 off = 0;
  if (kIndex64) {
#pragma unroll
    for (int i = 0; i < kLoop; ++i) {
      if (kRank >= 0 || i < s.rank) {
        const i64 q = linear / s.size[i];
        if ((kStrided >> i) & 1u) off += (linear - q * s.size[i]) * v.stride[i];
        linear = q;
      }
    }
  } else {
    u32 n = static_cast<u32>(linear);
#pragma unroll
    for (int i = 0; i < kLoop; ++i) {
      if (kRank >= 0 || i < s.rank) {
        // the outermost dimension needs no division: what is left of the index is its coordinate
        const u32 q = (kRank >= 0 && i == kLoop - 1) ? 0u : fast_div(s.dim[i], n);
        if ((kStrided >> i) & 1u) off += static_cast<i64>(n - q * s.dim[i].d) * v.stride[i];
        n = q;
      }
    }
  }
  return off;
}

// row_offset + col * col_stride, an operand element's offset, in 32-bit arithmetic where the
// kernel's index class says every operand offset is below 2^31 (AnchorEpilogue's kIndex64 false).
// A 64-bit multiply-add an element (two registers an address) ran the partial-tile epilogue of
// the 128x256 Hopper GEMM short of registers: with a residual + bias + GELU + amax it spilled
// 248 bytes even once full tiles read the residual as pairs (ptxas); 0 with this.
template <bool kIndex64>
__device__ __forceinline__ i64 operand_offset(i64 row_offset, i64 col, i64 col_stride) {
  if constexpr (kIndex64) {
    return row_offset + col * col_stride;
  } else {
    return static_cast<i64>(static_cast<u32>(row_offset) + static_cast<u32>(col) * static_cast<u32>(col_stride));
  }
}
