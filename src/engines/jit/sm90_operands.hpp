// The operands of a matmul region as the Hopper GEMMs (kernels/gemm/sm90_gemm*.cuh) read them:
// GEMM operands over one collapsed batch dim, the byte strides of their TMA tensor maps, and the
// tensor map slots themselves. Shared by the C-tile kernel (codegen_sm90_gemm.cpp), the
// direct-epilogue kernels (codegen_sm90_gemm_direct.cpp) and the decode TMA tile.
#pragma once

#include <cstdint>
#include <utility>

#include "engines/jit/codegen_common.hpp"
#include "engines/jit/kernel_args.hpp"
#include "engines/jit/kernel_spec.hpp"
#include "gemm/gemm_abi.h"

namespace sinter::jit {

struct Sm90Operands {
  const Node* mm = nullptr;
  DType dtype = DType::f32, dtype_b = DType::f32;
  int64_t m = 0, n = 0, k = 0;
  int64_t a_stride_m = 0, a_stride_k = 0, b_stride_k = 0, b_stride_n = 0;
  // B is read n-contiguous (a row-major [K, N] weight) rather than k-contiguous (an [N, K]
  // weight viewed as [K, N]); k-contiguous wins where both hold (k or n of 1).
  bool b_mn_major = false;
  // The batch folded into M: a [..., M, K] with rows evenly spaced across batches times a weight
  // broadcast over them is one [batches x M, K] GEMM (a transformer's activations times a 2D
  // weight). The generic tile would take the batched form otherwise.
  bool batch_folded = false;
  CollapsedShape batch;
};

Sm90Operands sm90_operands(const Graph& g, const fuse::Region& r);
// Byte strides {rows, batch} of one operand, as the tensor map will have them: "rows" are M rows
// of A, N rows of a k-contiguous B, K rows of an MN-major B.
std::pair<int64_t, int64_t> sm90_operand_strides(const Sm90Operands& o, bool is_a);
// The CUtensorMapDataType the Hopper kernels' maps move `t` as: bf16, f16, or UINT8 for fp8 (TMA
// moves bytes; wgmma reads them as fp8); -1 for a type no map carries.
int tensor_map_data_type(DType t);
// The tensor map of A (box {64 k, box_rows}) or B over region `r`'s input: k-contiguous B as A
// (box {64 k, box_rows}), MN-major B as {N, K, batch} with a {64 n, 64 k} box (box_rows unused).
TensorMapSlot sm90_tensor_map(const fuse::Region& r, const Sm90Operands& o, bool is_a, uint32_t box_rows);
// The SinterGemmShape argument of the kernels.
SinterGemmShape sm90_gemm_shape(const Sm90Operands& o);

}  // namespace sinter::jit
