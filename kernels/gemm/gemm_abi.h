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

#endif
