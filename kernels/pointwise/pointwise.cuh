// Pointwise regions: the fused expression applied element by element over a collapsed iteration
// shape, in tiles of kBlock threads x kUnroll vectors of kVec elements, with global exit
// reductions (reduced per CTA, finished by the last CTA). The host
// (src/engines/jit/codegen_pointwise.cpp) generates:
//
//   Cfg    static constexpr int kVec, kUnroll, kBlock, kRank (of the collapsed shape);
//          static constexpr bool kIndex64 (64-bit element indices), kPipelined (the next tile's
//          loads issued before this tile computes: two tiles of registers).
//   Args   the kernel's arguments: at least `SinterIterShape shape`.
//   Fused  the region's fused expression, static members only:
//            Loaded                 the operands a tile loads before it computes (streamed
//                                   vectors, in their storage type: [kUnroll][kVec] each)
//            load(a, u, base, L)    loads vector u (elements base..base + kVec) into L
//            Scalars, scalars(a)    operands loaded once per tile (a zero-stride scalar)
//            kExits, Acc, init(acc) exit reductions: their per-thread accumulators
//            compute(a, u, base, L, s, acc)
//                                   vector u: the operands loaded late (broadcasts re-read from
//                                   cache), the expression, the stores, the exit accumulators
//            element(a, i[, acc])   one element, for the partial last vector (__noinline__: the
//                                   tail stays out of the unrolled tile)
//            finish(a, acc, scratch)  the exit reductions' block reduction, atomics, last CTA
//
// pointwise_tile is the tile function (one tile of kBlock * kUnroll * kVec elements);
// pointwise_tiles runs a CTA's tiles: a persistent loop, which also runs flat grids.
#pragma once

#include "common/abi.h"
#include "common/index.cuh"
#include "common/math.cuh"
#include "common/memory.cuh"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/stream_memory.cuh"
#include "common/types.cuh"

// A tile's loaded state: element indices and the streamed operands' vectors. Loading and
// computing are separate so a pipelined loop can load the next tile into a second PointwiseTile
// while it computes this one; tiles live in registers (all indices are static after unrolling),
// their indices 32-bit while they fit (fewer registers per unrolled vector).
template <class Cfg, class Fused>
struct PointwiseTile {
  typename IndexType<Cfg::kIndex64>::type base[Cfg::kUnroll];
  typename Fused::Loaded x;
};

// All loads of the tile first, so they are in flight together.
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void pointwise_load(const Args& a, i64 tile, PointwiseTile<Cfg, Fused>& T) {
  typedef typename IndexType<Cfg::kIndex64>::type Index;
  const Index n = static_cast<Index>(a.shape.numel);
#pragma unroll
  for (int u = 0; u < Cfg::kUnroll; ++u) {
    T.base[u] = static_cast<Index>(((tile * Cfg::kUnroll + u) * Cfg::kBlock + threadIdx.x) * static_cast<i64>(Cfg::kVec));
    if (T.base[u] + Cfg::kVec <= n) Fused::load(a, u, T.base[u], T.x);
  }
}

// Computes and stores a loaded tile; its partial last vector element by element.
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void pointwise_compute(const Args& a, const PointwiseTile<Cfg, Fused>& T,
                                                  typename Fused::Acc& acc) {
  typedef typename IndexType<Cfg::kIndex64>::type Index;
  const Index n = static_cast<Index>(a.shape.numel);
  const typename Fused::Scalars s = Fused::scalars(a);
#pragma unroll
  for (int u = 0; u < Cfg::kUnroll; ++u) {
    if (T.base[u] + Cfg::kVec > n) {
#pragma unroll 1
      for (i64 i = T.base[u]; i < static_cast<i64>(n); ++i) {
        if constexpr (Fused::kExits > 0) {
          Fused::element(a, i, acc);
        } else {
          Fused::element(a, i);
        }
      }
      continue;
    }
    Fused::compute(a, u, T.base[u], T.x, s, acc);
  }
}

// The tile function: tile `tile` of the region, its exit contributions into `acc`.
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void pointwise_tile(const Args& a, i64 tile, typename Fused::Acc& acc) {
  PointwiseTile<Cfg, Fused> T;
  pointwise_load<Cfg, Fused>(a, tile, T);
  pointwise_compute<Cfg, Fused>(a, T, acc);
}

// A CTA's tiles: blockIdx.x, + gridDim.x, ... (a persistent grid, or a flat one of a tile each).
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void pointwise_tiles(const Args& a) {
  static_assert(Cfg::kVec >= 1 && Cfg::kVec <= 16 && (Cfg::kVec & (Cfg::kVec - 1)) == 0, "kVec: a power of two");
  static_assert(Cfg::kUnroll >= 1 && Cfg::kBlock % 32 == 0 && Cfg::kBlock <= 1024, "tile shape");
  typename Fused::Acc acc;
  Fused::init(acc);
  const i64 tile_elems = static_cast<i64>(Cfg::kBlock) * Cfg::kUnroll * Cfg::kVec;
  const i64 tiles = (a.shape.numel + tile_elems - 1) / tile_elems;
  if constexpr (Cfg::kPipelined) {
    // Two tiles: the next tile's loads are issued before this tile computes and stores, so a
    // warp never sits with no loads in flight between tiles.
    PointwiseTile<Cfg, Fused> A, B;
    const i64 step = gridDim.x;
    i64 t = blockIdx.x;
    if (t < tiles) pointwise_load<Cfg, Fused>(a, t, A);
    for (; t < tiles; t += 2 * step) {
      if (t + step < tiles) pointwise_load<Cfg, Fused>(a, t + step, B);
      pointwise_compute<Cfg, Fused>(a, A, acc);
      if (t + step >= tiles) break;
      if (t + 2 * step < tiles) pointwise_load<Cfg, Fused>(a, t + 2 * step, A);
      pointwise_compute<Cfg, Fused>(a, B, acc);
    }
  } else {
    for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) pointwise_tile<Cfg, Fused>(a, t, acc);
  }
  if constexpr (Fused::kExits > 0) {
    __shared__ float scratch[33];
    Fused::finish(a, acc, scratch);
  }
}
