// Hopper GEMM main loop: warp-specialized, TMA -> multi-stage shared-memory ring -> wgmma.
//   CTA = 3 warpgroups (384 threads). Warpgroup 0 is the producer: one thread issues the TMA
//   loads of A and B k-blocks into a kHopperStages-deep ring, each stage guarded by a "full"
//   mbarrier (TMA transaction bytes) and an "empty" mbarrier (one arrive per consumer).
//   Warpgroups 1 and 2 are consumers: each owns 64 rows of the 128x128 output tile and runs
//   wgmma m64n128k16 from shared memory with f32 accumulators in registers.
//   Persistent: a CTA walks tiles t = blockIdx.x, + gridDim.x, ... in a grouped order (8 M tiles
//   share each N tile in turn) so concurrently running CTAs reuse A and B in L2.
// A is a K-major (k stride 1) 16-bit matrix read through a 3D tensor map {K, M, batch} with
// 128-byte swizzle and a {64, 128, 1} box; B is K-major the same way or MN-major (kBMnMajor, see
// gemm/sm90_operand_b.cuh). TMA zero-fills out-of-range rows and k, so any M, N, K works without
// predication. The accumulators leave through a f32 C tile in shared memory
// (kHopperLdC floats per row) to the region's epilogue, run by the 256 consumer threads.
// The kernel is sm90_gemm_ctile<Cfg, Epi>(args): Cfg has kBf16 (else f16 operands) and
// kBMnMajor; Args (generated) has SinterTensorMap tma_a, tma_b and SinterGemmShape shape; Epi
// (generated, src/engines/jit/codegen_sm90_gemm.cpp) has Epi() (its global exit partials at
// their identity), tile(a, tile, c_tile) (the consumers' epilogue of one tile) and finish(a)
// (the exit reductions' end). Its tile functions: hopper_produce's k-block loads of a tile, and
// sm90_ctile_consume (the main loop, the C tile, the epilogue).
#pragma once

#include "common/hopper.cuh"
#include "common/pdl.cuh"
#include "common/types.cuh"
#include "gemm/gemm_abi.h"
#include "gemm/sm90_operand_b.cuh"

constexpr int kHopperBM = 128, kHopperBN = 128, kHopperBK = 64, kHopperStages = 4;
constexpr int kHopperThreads = 384, kHopperConsumerThreads = 256;
constexpr int kHopperGroupM = 8;  // grouped rasterization: M tiles per group
constexpr int kHopperLdC = kHopperBN + 4;
constexpr int kHopperTileA = kHopperBM * kHopperBK * 2;  // bytes of one stage's A tile
constexpr int kHopperTileB = kHopperBN * kHopperBK * 2;
constexpr int kHopperStageBytes = kHopperTileA + kHopperTileB;
constexpr int kHopperSmemC = kHopperBM * kHopperLdC * 4;
// Layout of the dynamic shared memory (base rounded up to 1024 bytes for the 128B swizzle):
// [stages x (A, B)] [C tile] [full barriers] [empty barriers]
constexpr int kHopperOffC = kHopperStages * kHopperStageBytes;
constexpr int kHopperOffBars = kHopperOffC + kHopperSmemC;
constexpr int kHopperSmemBytes = 1024 + kHopperOffBars + 2 * kHopperStages * 8;
static_assert(kHopperBK * 2 == 128, "a k-block row must be exactly one 128-byte swizzle row");
static_assert(kHopperTileA % 1024 == 0 && kHopperTileB % 1024 == 0, "stage tiles must stay 1024-byte aligned");
static_assert(kHopperBM == 2 * 64 && kHopperConsumerThreads == 2 * 128, "two consumers of 64 rows each");
static_assert(kHopperSmemBytes <= 227 * 1024, "shared memory over the sm_90 limit");

struct HopperSmem {
  char* stages;
  float* c;
  u64* full;
  u64* empty;
};

__device__ __forceinline__ HopperSmem hopper_smem(char* raw) {
  char* base = reinterpret_cast<char*>((reinterpret_cast<u64>(raw) + 1023) & ~u64{1023});
  HopperSmem s;
  s.stages = base;
  s.c = reinterpret_cast<float*>(base + kHopperOffC);
  s.full = reinterpret_cast<u64*>(base + kHopperOffBars);
  s.empty = s.full + kHopperStages;
  return s;
}

// Tile t of [batch][tiles_m][tiles_n] in grouped order: within a batch, runs of kHopperGroupM
// M tiles walk down one N column before moving to the next.
struct HopperTile {
  int batch, mt, nt;
};
__device__ __forceinline__ HopperTile hopper_tile(i64 t, int tiles_m, int tiles_n) {
  const i64 per_batch = i64{tiles_m} * tiles_n;
  HopperTile r;
  r.batch = static_cast<int>(t / per_batch);
  const int local = static_cast<int>(t - r.batch * per_batch);
  const int per_group = kHopperGroupM * tiles_n;
  const int group = local / per_group, first_m = group * kHopperGroupM;
  const int group_m = min(tiles_m - first_m, kHopperGroupM);
  const int in_group = local - group * per_group;
  r.mt = first_m + in_group % group_m;
  r.nt = in_group / group_m;
  return r;
}

// Producer (one thread): fills the ring for every k-block of this CTA's tiles. `stage`/`phase`
// persist across tiles, mirrored exactly by the consumers.
template <bool kBMnMajor>
__device__ __forceinline__ void hopper_produce(const SinterTensorMap* map_a, const SinterTensorMap* map_b,
                                               const HopperSmem& sm, i64 tiles, int tiles_m, int tiles_n,
                                               int k_blocks) {
  int stage = 0;
  u32 phase = 0;
  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    const HopperTile tile = hopper_tile(t, tiles_m, tiles_n);
    for (int kb = 0; kb < k_blocks; ++kb) {
      mbarrier_wait(&sm.empty[stage], phase ^ 1u);
      char* dst = sm.stages + stage * kHopperStageBytes;
      mbarrier_arrive_expect_tx(&sm.full[stage], kHopperStageBytes);
      tma_load_3d(dst, map_a, &sm.full[stage], kb * kHopperBK, tile.mt * kHopperBM, tile.batch);
      sm90_load_b<kBMnMajor, kHopperBN>(dst + kHopperTileA, map_b, &sm.full[stage], kb * kHopperBK,
                                        tile.nt * kHopperBN, tile.batch);
      if (++stage == kHopperStages) {
        stage = 0;
        phase ^= 1u;
      }
    }
  }
}

// Consumer warpgroup `wg` (0 or 1): the 64x128 accumulator of its rows of one tile. The previous
// stage is released once the wgmma that reads it has retired (wait_group 1 keeps one in flight).
template <bool kBf16, bool kBMnMajor>
__device__ __forceinline__ void hopper_consume(float (&d)[64], const HopperSmem& sm, int wg, int k_blocks,
                                               int& stage, u32& phase) {
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  int prev = -1;
  for (int kb = 0; kb < k_blocks; ++kb) {
    mbarrier_wait(&sm.full[stage], phase);
    const char* a = sm.stages + stage * kHopperStageBytes + wg * 64 * 128;  // 64 rows of 128 bytes
    const char* b = sm.stages + stage * kHopperStageBytes + kHopperTileA;
#pragma unroll
    for (int i = 0; i < 64; ++i) wgmma_fence_operand(d[i]);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kHopperBK / 16; ++k) {
      // k step of 16 elements: 32 bytes inside A's swizzled 128-byte row
      wgmma_m64n128k16<kBf16, kBMnMajor>(d, wgmma_desc_k_sw128(a + 32 * k), sm90_b_desc<kBMnMajor>(b, k), true);
    }
    wgmma_commit();
    wgmma_wait<1>();
#pragma unroll
    for (int i = 0; i < 64; ++i) wgmma_fence_operand(d[i]);
    if (prev >= 0 && threadIdx.x % 128 == 0) mbarrier_arrive(&sm.empty[prev]);
    prev = stage;
    if (++stage == kHopperStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 64; ++i) wgmma_fence_operand(d[i]);
  if (prev >= 0 && threadIdx.x % 128 == 0) mbarrier_arrive(&sm.empty[prev]);
}

// Writes consumer `wg`'s accumulators into rows 64 wg .. 64 wg + 63 of the C tile.
__device__ __forceinline__ void hopper_store_c(const float (&d)[64], float* c, int wg) {
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  const int row = wg * 64 + warp * 16 + lane / 4, col = 2 * (lane % 4);
#pragma unroll
  for (int q = 0; q < 16; ++q) {
    *reinterpret_cast<float2*>(c + row * kHopperLdC + 8 * q + col) = make_float2(d[4 * q], d[4 * q + 1]);
    *reinterpret_cast<float2*>(c + (row + 8) * kHopperLdC + 8 * q + col) = make_float2(d[4 * q + 2], d[4 * q + 3]);
  }
}

// Consumer warpgroup `wg` (0 or 1) on one tile: the main loop from ring position (stage, phase),
// the accumulators through the C tile, then both consumers run the epilogue on it.
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void sm90_ctile_consume(const Args& a, Epi& epi, const HopperSmem& sm, const HopperTile& tile,
                                                   int wg, int k_blocks, int& stage, u32& phase) {
  float d[64];
  hopper_consume<Cfg::kBf16, Cfg::kBMnMajor>(d, sm, wg, k_blocks, stage, phase);
  named_barrier_sync(1, kHopperConsumerThreads);  // the previous tile's epilogue has read C
  hopper_store_c(d, sm.c, wg);
  named_barrier_sync(1, kHopperConsumerThreads);
  epi.tile(a, tile, reinterpret_cast<char*>(sm.c));
}

// The kernel: a persistent grid over the tiles, the producer and the consumers each a loop over
// the CTA's tiles.
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void sm90_gemm_ctile(const Args& a) {
  sinter_kernel_begin();
  extern __shared__ __align__(1024) char smem_raw[];
  const HopperSmem sm = hopper_smem(smem_raw);
  Epi epi;
  const SinterGemmShape& s = a.shape;
  const int tiles_m = static_cast<int>((s.m + kHopperBM - 1) / kHopperBM);
  const int tiles_n = static_cast<int>((s.n + kHopperBN - 1) / kHopperBN);
  const i64 tiles = s.batches * tiles_m * tiles_n;
  const int k_blocks = static_cast<int>((s.k + kHopperBK - 1) / kHopperBK);
  if (threadIdx.x == 0) {
    for (int i = 0; i < kHopperStages; ++i) {
      mbarrier_init(&sm.full[i], 1);   // the producer's arrive + TMA bytes
      mbarrier_init(&sm.empty[i], 2);  // one arrive per consumer warpgroup
    }
    fence_barrier_init();
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    if (threadIdx.x == 0) {
      tma_prefetch_descriptor(&a.tma_a);
      tma_prefetch_descriptor(&a.tma_b);
      hopper_produce<Cfg::kBMnMajor>(&a.tma_a, &a.tma_b, sm, tiles, tiles_m, tiles_n, k_blocks);
    }
  } else {
    int stage = 0;
    u32 phase = 0;
    for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
      sm90_ctile_consume<Cfg>(a, epi, sm, hopper_tile(t, tiles_m, tiles_n), wg - 1, k_blocks, stage, phase);
    }
  }
  epi.finish(a);
}
