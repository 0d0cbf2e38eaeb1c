/* Run-time sizes of a (batched) matmul, shared by the host packer and the generated kernels.
   a [..., M, K] x b [..., K, N] -> [batch..., M, N]; the broadcast batch dims are collapsed into
   `batch`, with each operand's element strides over them (0 where it broadcasts). */
#ifndef SINTER_KERNELS_GEMM_ABI_H
#define SINTER_KERNELS_GEMM_ABI_H

#include "common/abi.h"

struct SinterGemmShape {
  long long m, n, k;
  long long batches;                 /* product of the batch dims */
  long long a_stride_m, a_stride_k;  /* element strides of a's last two dims */
  long long b_stride_k, b_stride_n;  /* element strides of b's last two dims */
  struct SinterIterShape batch;      /* the batch dims, collapsed */
  struct SinterStridedView a_batch, b_batch;
};

/* The first work item of each unit (a CTA, or a cluster) of a persistent GEMM grid: a permutation
   of 0 .. units - 1 that gives the units one GPC holds items reading the same rows of A, where
   the L2 request coalescer merges their reads (src/engines/jit/gpc_order.hpp). units 0, or a
   grid of another size than the one it was made for: unit u starts at item u. */
#define SINTER_MAX_ORDERED_UNITS 132
struct SinterUnitOrder {
  int units;
  unsigned char first[SINTER_MAX_ORDERED_UNITS];
};

#endif
