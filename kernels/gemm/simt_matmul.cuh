// The generic matmul kernel: any strides, any dtypes the main loops of gemm/simt_gemm.cuh take
// (tensor cores for 16-bit and fp8 inputs, FFMA for f32), out[batch, M, N] = epilogue(a x b). A
// template over a config and the region's epilogue functor (src/engines/jit/codegen_simt_matmul.cpp
// writes both and a kernel that calls simt_matmul<Cfg, Epi>(args)):
//   Cfg: kPath (SimtPath), LoaderA and LoaderB (StridedLoader types: each operand's access class);
//   Args: SinterGemmShape shape, the operands a and b, and the epilogue's fields;
//   Epi: Epi() (its global exit partials at their identity), tile(a, row0, rows, col0, cols, smem)
//     (the epilogue of one tile from the C tile in smem: matrix rows row0 .. row0 + rows - 1 of
//     [batches * M], columns col0 .. col0 + cols - 1) and finish(a) (the exit reductions' end).
// simt_matmul_tile is the tile function: one 128x128 tile of one batch, from its index.
#pragma once

#include "common/index.cuh"
#include "common/pdl.cuh"
#include "common/types.cuh"
#include "gemm/gemm_abi.h"
#include "gemm/simt_gemm.cuh"

enum class SimtPath : int { ffma, mma_f16, mma_bf16 };

// Tile `tile` of [batches][tiles_m][tiles_n] (N fastest): the main loop into the C tile in
// `smem`, then the epilogue; the next tile's operand stages may overwrite the C tile after the
// final barrier.
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void simt_matmul_tile(const Args& a, Epi& epi, i64 tile, char* smem) {
  const SinterGemmShape& s = a.shape;
  const i64 tiles_n = (s.n + kGemmBN - 1) / kGemmBN, tiles_m = (s.m + kGemmBM - 1) / kGemmBM;
  const i64 nt = tile % tiles_n, rest = tile / tiles_n;
  const i64 mt = rest % tiles_m, bi = rest / tiles_m;
  const int m0 = static_cast<int>(mt * kGemmBM), n0 = static_cast<int>(nt * kGemmBN);
  typename Cfg::LoaderA la(a.a + offset_of<false>(s.batch, s.a_batch, bi) + m0 * s.a_stride_m, s.a_stride_m,
                           s.a_stride_k, static_cast<int>(s.m - m0), static_cast<int>(s.k));
  typename Cfg::LoaderB lb(a.b + offset_of<false>(s.batch, s.b_batch, bi) + n0 * s.b_stride_n, s.b_stride_n,
                           s.b_stride_k, static_cast<int>(s.n - n0), static_cast<int>(s.k));
  if constexpr (Cfg::kPath == SimtPath::ffma) {
    gemm_ffma_mainloop(la, lb, static_cast<int>(s.k), smem);
  } else {
    gemm_mma_mainloop<Cfg::kPath == SimtPath::mma_bf16>(la, lb, static_cast<int>(s.k), smem);
  }
  epi.tile(a, bi * s.m + m0, min(kGemmBM, static_cast<int>(s.m - m0)), static_cast<i64>(n0),
           min(kGemmBN, static_cast<int>(s.n - n0)), smem);
  __syncthreads();  // the next tile's operand stages overwrite the C tile
}

// The kernel: a persistent grid over the tiles.
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void simt_matmul(const Args& a) {
  sinter_kernel_begin();
  extern __shared__ float4 smem_[];  // float4: 16-byte aligned stages
  Epi epi;
  const i64 tiles = a.shape.batches * ((a.shape.m + kGemmBM - 1) / kGemmBM) * ((a.shape.n + kGemmBN - 1) / kGemmBN);
  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) simt_matmul_tile<Cfg>(a, epi, t, reinterpret_cast<char*>(smem_));
  epi.finish(a);
}
