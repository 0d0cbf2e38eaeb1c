// Index arithmetic for kernels whose shapes are run-time arguments: a tensor view over an
// iteration shape of up to kMaxRank dims, with strides in elements (0 on broadcast dims), and a
// division by a run-time divisor that costs a multiply-high instead of a hardware divide.
#pragma once

#include "common/types.cuh"

constexpr int kMaxRank = 8;

// Division by a run-time constant d (1 <= d < 2^31) for numerators below 2^31 (Granlund and
// Montgomery; the host computes mul and shift, see src/engines/jit/launch_args.cpp).
struct FastDivmod {
  u32 d, mul, shift;
  __device__ __forceinline__ u32 div(u32 n) const { return (__umulhi(n, mul) + n) >> shift; }
  __device__ __forceinline__ void divmod(u32 n, u32& q, u32& r) const {
    q = div(n);
    r = n - q * d;
  }
};

// The element offsets of one operand over a collapsed iteration shape. Dims are stored innermost
// first so that the loop below peels the fastest-moving index first.
struct StridedView {
  i64 stride[kMaxRank];  // elements; 0 where the operand is broadcast
};

struct IterShape {
  int rank;                  // collapsed rank, >= 1
  i64 numel;
  FastDivmod dim[kMaxRank];  // innermost first; dim[i].d is the size of that dim
  i64 size[kMaxRank];        // innermost first, for the 64-bit path
};

// Offset of the element with linear (row-major) index `linear` in `view`.
template <bool kIndex64>
__device__ __forceinline__ i64 offset_of(const IterShape& s, const StridedView& v, i64 linear) {
  i64 off = 0;
  if (kIndex64) {
#pragma unroll
    for (int i = 0; i < kMaxRank; ++i) {
      if (i < s.rank) {
        const i64 q = linear / s.size[i];
        off += (linear - q * s.size[i]) * v.stride[i];
        linear = q;
      }
    }
  } else {
    u32 n = static_cast<u32>(linear);
#pragma unroll
    for (int i = 0; i < kMaxRank; ++i) {
      if (i < s.rank) {
        u32 q, r;
        s.dim[i].divmod(n, q, r);
        off += static_cast<i64>(r) * v.stride[i];
        n = q;
      }
    }
  }
  return off;
}
