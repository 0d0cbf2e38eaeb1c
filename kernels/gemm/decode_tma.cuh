// The TMA decode tile: y[M, N] = x[M, K] @ W for M <= 16 with an [N, K] weight (k contiguous) or
// a row-major [K, N] one (n contiguous, kKnWeight), on sm_90a. Decode GEMMs are bound by reading W
// once, so what matters is keeping enough bytes in flight per SM (Little's law: ~4.3 TB/s x ~1.5
// us of loaded DRAM latency is ~50 KB per SM) for the whole kernel, on every SM, with no tail and
// no pause:
//  - One CTA per SM, persistent. The work is a flat list of k steps over tiles of W rows
//    (tile-major), cut into contiguous ranges, one per CTA (DecodeTmaWork), so that every SM
//    streams about the same bytes: either equal ranges of kBN-row tiles ("stream-K"), or whole
//    tiles of about N / SMs rows each (no tile split, nothing to combine). A fixed grid of
//    128-row tiles would leave SMs with one tile where others have two.
//  - A step is kWarpBoxes x 16 KiB of W: kBN rows x kWarpBoxes x 128 / kBN boxes of 64 k
//    (128-byte swizzle; with whole tiles the box is as high as a tile, kBN rows or fewer, and
//    warps past its rows idle), plus the matching boxes of x (the M tile's rows; rows past M and
//    k past K read as zeros), into a ring of kStages stages guarded by mbarriers. With kChunked
//    the boxes of a step are one TMA box.
//  - Either thread 0 issues the loads, so every thread of the CTA runs the math and the region's
//    epilogue, and __syncthreads stays usable there; it refills the stage of the step before the
//    current one, once all 8 warps have released it (an `empty` mbarrier). Or a ninth warp
//    issues them (kProducerWarp), each as soon as its stage is released, and the tile ends sync
//    on named barrier 1 of kDecodeTmaThreads threads: a __syncthreads there would wait for the
//    producer, which never comes.
//  - The math is mma.sync m16n8k16 with x as A (M padded to 8 or 16 rows) and the W box as the
//    col-major B, both read with ldmatrix from the swizzled boxes (conflict-free: 8 rows x 16
//    bytes land on 8 different 16-byte bank groups). Warp w owns 16 W rows of kWarpBoxes
//    consecutive k boxes; the warps of the same rows meet in shared memory at the end of a
//    tile, in a fixed order. A [K, N] weight's 64-k box is kBN / 64 TMA boxes of 64 k rows x 64
//    n (128 bytes, the same swizzle), and ldmatrix.trans reads the same B fragments from them.
//  - A tile whose steps span several CTAs (stream-K only) meets through the workspace
//    (decode_splitk_combine_group: the last CTA to arrive sums the partials in CTA order,
//    deterministically, and runs the epilogue); a tile inside one CTA goes straight to the
//    epilogue.
// A split tile's end (fence, atomic, partial reads, all warps) stops the SM's loads for a few
// microseconds; whole tiles have one tile end, at the end, which is why that cut goes first
// wherever an SM gets 64 rows or more (docs/benchmarks.md has the measurements).
//
// The kernel is decode_tma_kernel<Cfg, Epilogue>(args): Cfg a struct of the static constexpr
// fields below, Epilogue the region's functor (engines/jit/epilogue_functor.hpp), and the
// generated Args with the fields decode_tma_unit reads. Its tile function, decode_tma_unit, runs
// one CTA's share of the steps ("unit") from its index.
#pragma once

#include "common/abi.h"
#include "common/hopper.cuh"
#include "common/pdl.cuh"
#include "common/types.cuh"
#include "gemm/decode_splitk.cuh"
#include "gemm/gemm_abi.h"
#include "gemm/simt_gemm.cuh"  // mma_16816

constexpr int kDecodeTmaThreads = 256;
constexpr int kDecodeTmaWarps = kDecodeTmaThreads / 32;
constexpr int kDecodeTmaStepBytes = 16384;  // W bytes per step

// The config (the generated Cfg):
//   kBf16: bf16 operands, else f16.
//   kBN: W rows (output columns) per tile, 32, 64 or 128 (the generated epilogue walks a tile's
//     columns 32 at a time); a step holds kStepBoxes = kWarpBoxes x 128 / kBN boxes of 64 k.
//   kMTile: x rows, 8 or 16 (M <= 8 or <= 16).
//   kStages: the ring's depth.
//   kChunked: the tensor maps view W as {64 k, N rows, K / 64 chunks} (and x likewise), so a
//     step's kStepBoxes boxes of 64 k are ONE TMA box {64, kBN, kStepBoxes}: one instruction a
//     step whatever kBN, each W row read in a (128 x kStepBoxes)-byte run. It lands exactly where
//     the separate boxes do (box b at b x kWBoxBytes), so the math is the same. Needs K % 64 == 0
//     (a chunk past K would read the next row, not zeros) and one batch (the host checks).
//   kAccChains (1, 2 or 4): a step's 4 16-k slices accumulate into kAccChains independent
//     accumulators (a box's 16-k slice q into chain q % kAccChains), summed in chain order at a
//     tile's end, instead of one chain of dependent mma per fragment.
//   kProducerWarp: a ninth warp issues every load, each once its stage is released, instead of
//     thread 0 refilling a stage between its own steps (where it waits for the slowest warp
//     while warp 0's math stalls). The 8 consumer warps then meet at a tile's end on named
//     barrier 1 (the producer takes no part).
//   kWarpBoxes (1 or 2): each warp reads that many consecutive 64-k boxes of its rows a step,
//     so a step is kWarpBoxes x 16 KiB of W and a CTA waits on, releases and refills a stage
//     kWarpBoxes times less often for the same bytes.
//   kWholeTiles: the whole-tile cut (no tile is split, so none is combined), else stream-K.
//   kKnWeight: W is a row-major [K, N] (n contiguous): its tensor map is {N, K, batches} with a
//     box of {64 n, 64 k}, a step's 64-k box is kBN / 64 of them side by side (n-box j at
//     j x 8 KiB), and only the n-boxes a tile's rows reach are loaded (whole tiles of 64 rows:
//     one). Needs kBN 64 or 128 and no chunked view.
// A step's SM-side path (the warps' mbarrier wait, ldmatrix and mma chain, the stage refill)
// bounds the tile at these sizes, not DRAM: the tile's speed follows the SM clock. kAccChains,
// kProducerWarp and kWarpBoxes each shorten that path.
template <class Cfg>
struct DecodeTmaLayout : Cfg {
  using Cfg::kBN;
  using Cfg::kMTile;
  using Cfg::kStages;
  using Cfg::kWarpBoxes;
  using Cfg::kAccChains;
  static_assert(kWarpBoxes == 1 || kWarpBoxes == 2, "1 or 2 k boxes per warp a step");
  static_assert(kAccChains == 1 || kAccChains == 2 || kAccChains == 4, "a chain per 1, 2 or 4 of a box's 16-k slices");
  static constexpr int kThreads = kDecodeTmaThreads + (Cfg::kProducerWarp ? 32 : 0);
  static_assert(kBN == 32 || kBN == 64 || kBN == 128, "16 KiB of W per warp box: 128 / kBN boxes of kBN rows");
  static_assert(kMTile == 8 || kMTile == 16, "x is one m16 mma tile, the upper 8 rows zero for M <= 8");
  static_assert(!Cfg::kWholeTiles || (kBN == 128 && !Cfg::kChunked), "whole tiles: one box of up to 128 rows");
  static_assert(!Cfg::kKnWeight || (kBN >= 64 && !Cfg::kChunked), "[K, N] weights: boxes of 64 n, not chunked");
  static constexpr int kNBoxBytes = 64 * 128;  // a [K, N] weight's TMA box: 64 k rows x 64 n
  static constexpr int kKBoxes = 128 / kBN;           // groups of warps a step, each on its own k boxes
  static constexpr int kStepBoxes = kKBoxes * kWarpBoxes;  // 64-k boxes per step
  static constexpr int kStepK = 64 * kStepBoxes;
  static constexpr int kRowGroups = kBN / 16;          // warps per k box: 16 rows each
  static constexpr int kWBoxBytes = kBN * 128, kXBoxBytes = kMTile * 128;
  static constexpr int kWBytes = kStepBoxes * kWBoxBytes;  // 16 KiB x kWarpBoxes
  // The W bytes a step's boxes bring when a tile is tile_rows high (every box lands whole, rows
  // past N or K zero-filled): what a stage's full barrier expects of them. An [N, K] box is
  // tile_rows high; a [K, N] step loads the 64-n boxes the tile's rows reach.
  __device__ __forceinline__ static int n_boxes(int tile_rows) { return (tile_rows + 63) / 64; }
  __device__ __forceinline__ static u32 w_step_bytes(int tile_rows) {
    return static_cast<u32>(Cfg::kKnWeight ? kStepBoxes * n_boxes(tile_rows) * kNBoxBytes : kStepBoxes * tile_rows * 128);
  }
  static constexpr int kStageBytes = kWBytes + kStepBoxes * kXBoxBytes;
  static constexpr int kCOffset = kStages * kStageBytes;
  // the C tile, then the k boxes' partial C tiles (with more than one group of warps a step)
  static constexpr int kRedOffset = kCOffset + 16 * kBN * 4;
  static constexpr int kBarOffset = kRedOffset + (kKBoxes > 1 ? kKBoxes * 16 * kBN * 4 : 0);
  // barriers: full and empty per stage
  // + 1024: the dynamic shared memory base is aligned up to the swizzle period in the kernel
  static constexpr int kBytes = 1024 + kBarOffset + 2 * kStages * 8;
  static_assert(kWBytes == kDecodeTmaStepBytes * kWarpBoxes && kKBoxes * kRowGroups == kDecodeTmaWarps, "tile shape");
  static_assert(kWBoxBytes % 1024 == 0 && kXBoxBytes % 1024 == 0, "every box starts on a 1024-byte swizzle period");
  static_assert(kBytes <= 227 * 1024, "shared memory over the sm_90 limit");
};

// Which steps each CTA runs: a contiguous range of the flat list of k steps (tiles x
// steps_per_tile, tile-major), one per CTA. Two ways to cut it:
//  - stream-K (whole_tiles 0): CTA c runs steps [c * total / ctas, (c + 1) * total / ctas), so
//    every SM streams the same bytes, and a tile whose steps span CTAs is combined at its end;
//  - whole tiles (whole_tiles = the tile count): CTA c runs tiles [c * tiles / ctas, (c + 1) *
//    tiles / ctas), every one of them whole, so no tile is ever combined. The host makes the tiles
//    tile_rows high (tile_rows <= kBN, the W box's height) with about as many tiles as CTAs, e.g.
//    14336 rows over 132 SMs as 132 tiles of 109 rows: each SM streams 109 or fewer whole rows and
//    nothing is left for a tile end but the epilogue.
// tile_rows is the W rows of a tile: L::kBN for stream-K.
struct DecodeTmaWork {
  i64 total, steps_per_tile, ctas;
  i64 whole_tiles;
  int tile_rows;
  __device__ __forceinline__ i64 begin(i64 c) const {
    return whole_tiles > 0 ? c * whole_tiles / ctas * steps_per_tile : c * total / ctas;
  }
  // The CTA whose range holds step x: the largest c with begin(c) <= x.
  __device__ __forceinline__ i64 cta_of(i64 x) const {
    return whole_tiles > 0 ? ((x / steps_per_tile + 1) * ctas - 1) / whole_tiles : ((x + 1) * ctas - 1) / total;
  }
  // The first and last CTA with steps of `tile` (one and the same with whole tiles).
  __device__ __forceinline__ i64 first_cta(i64 tile) const { return cta_of(tile * steps_per_tile); }
  __device__ __forceinline__ i64 last_cta(i64 tile) const { return cta_of((tile + 1) * steps_per_tile - 1); }
};

// The cut of the generated argument struct `a` (its fields total, steps_per_tile, ctas,
// whole_tiles, tile_rows).
template <class Args>
__device__ __forceinline__ DecodeTmaWork decode_tma_work(const Args& a) {
  return DecodeTmaWork{a.total, a.steps_per_tile, a.ctas, a.whole_tiles, a.tile_rows};
}

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2(u32& r0, u32& r1, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr));
}

// One k box of a warp: acc[nb] += x-box (A, 16 x 64) * W-box rows 16 h + 8 nb .. +8 (B).
// ldmatrix: lane l addresses row l % 8 of matrix l / 8 and receives, of each matrix, row l / 4,
// elements 2 (l % 4), +1 -- for a [row][k] box that is the A and col-major B fragment of
// m16n8k16 (PTX ISA 9.7.14.5.8). A box row of 128 bytes holds 16-byte chunk j at j ^ (row % 8).
// kKn: the box is [K, N] ([k][n] rows of 64 n, n-box h / 4 of it): ldmatrix.trans gives lane l,
// of each 8 x 8 matrix, rows 2 (l % 4), +1 at column l / 4 -- W[k 2t, 2t+1][n g], the same B
// fragment.
// acc[c]: accumulator chain c, which the box's 16-k slices q with q % kChains == c add to.
template <int kMTile, bool kBf16, int kChains, bool kKn>
__device__ __forceinline__ void decode_tma_step(u32 w_box, u32 x_box, int h, int lane, float (&acc)[kChains][2][4]) {
  const int mi = lane >> 3, r = lane & 7;
  // [N, K]: lane's row of W rows 16 h + 8 (mi / 2) ..; [K, N]: the n-box of columns 16 h.., whose
  // 16-byte chunk 2 (h % 4) + mi / 2 holds the lane's 8 columns
  const u32 w_row = kKn ? w_box + static_cast<u32>(h >> 2) * (64u * 128u)
                        : w_box + static_cast<u32>(16 * h + 8 * (mi >> 1) + r) * 128u;
  const int n_chunk = 2 * (h & 3) + (mi >> 1);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    // B: matrices (rows 0-7, k 16q..+8), (rows 0-7, k 16q+8..), (rows 8-15, ...), (rows 8-15, ...)
    u32 b[4];
    if constexpr (kKn) {
      // matrix mi: k rows 16q + 8 (mi % 2) .. +8 (row r of it: k row 16q + 8 (mi % 2) + r, whose
      // swizzle phase is r), n columns 8 (mi / 2) ..
      const int k_row = 16 * q + 8 * (mi & 1) + r;
      ldmatrix_x4_trans(b, w_row + static_cast<u32>(k_row) * 128u + (static_cast<u32>(n_chunk ^ r) << 4));
    } else {
      ldmatrix_x4(b, w_row + (static_cast<u32>((2 * q + (mi & 1)) ^ r) << 4));
    }
    // A: matrices (x rows 0-7, k 16q..), (rows 8-15, k 16q..), (rows 0-7, k 16q+8..), (rows 8-15, k 16q+8..)
    u32 a[4];
    if (kMTile == 16) {
      ldmatrix_x4(a, x_box + static_cast<u32>(8 * (mi & 1) + r) * 128u + (static_cast<u32>((2 * q + (mi >> 1)) ^ r) << 4));
    } else {
      // lanes 0-15 address (rows 0-7, k 16q..) and (rows 0-7, k 16q+8..); rows 8-15 are zero
      ldmatrix_x2(a[0], a[2], x_box + static_cast<u32>(r) * 128u + (static_cast<u32>((2 * q + (mi & 1)) ^ r) << 4));
      a[1] = a[3] = 0u;
    }
    const u32 b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
    mma_16816<kBf16>(acc[q % kChains][0], a, b0);
    mma_16816<kBf16>(acc[q % kChains][1], a, b1);
  }
}

// Where a CTA's walk over its steps is: the tile (batch-major over column tiles) and the k step in
// it. Advanced by one step at a time, so the loop needs no 64-bit division: thread 0 issues a
// load per step, and a division there (~100 dependent instructions) held back every issue.
struct DecodeTmaCursor {
  i64 tile, bi;
  int nt, ks;  // column tile within the batch, k step within the tile
  __device__ __forceinline__ void start(i64 x, i64 steps_per_tile, i64 tiles_n) {
    tile = x / steps_per_tile;
    ks = static_cast<int>(x - tile * steps_per_tile);
    bi = tile / tiles_n;
    nt = static_cast<int>(tile - bi * tiles_n);
  }
  __device__ __forceinline__ void advance(int steps_per_tile, int tiles_n) {
    if (++ks < steps_per_tile) return;
    ks = 0;
    ++tile;
    if (++nt == tiles_n) {
      nt = 0;
      ++bi;
    }
  }
};

// A warp's C fragment of its k box (rows g, g + 8; columns 16 h + 8 nb + 2t, +1), its chains
// summed in chain order, into the [16][L::kBN] partial `part`, and the accumulators zeroed for
// the next tile.
template <class L>
__device__ __forceinline__ void decode_tma_store_fragment(float* part, float (&chains)[L::kAccChains][2][4], int h,
                                                          int lane) {
  float acc[2][4];
#pragma unroll
  for (int nb = 0; nb < 2; ++nb) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[nb][e] = chains[0][nb][e];
#pragma unroll
      for (int c = 1; c < L::kAccChains; ++c) acc[nb][e] += chains[c][nb][e];
#pragma unroll
      for (int c = 0; c < L::kAccChains; ++c) chains[c][nb][e] = 0.0f;
    }
  }
  constexpr int kBN = L::kBN;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nb = 0; nb < 2; ++nb) {
    const int c = 16 * h + 8 * nb + 2 * t;
    part[g * kBN + c] = acc[nb][0];
    part[g * kBN + c + 1] = acc[nb][1];
    if (L::kMTile == 16) {
      part[(g + 8) * kBN + c] = acc[nb][2];
      part[(g + 8) * kBN + c + 1] = acc[nb][3];
    }
  }
}

// The k boxes' [16][L::kBN] partials at `boxes`, summed in box order into `out` (may be box 0)
// by threads tid, tid + threads, ...
template <class L>
__device__ __forceinline__ void decode_tma_sum_boxes(float* out, const float* boxes, int tid, int threads) {
  for (int e = tid; e < L::kMTile * L::kBN; e += threads) {
    float sum = boxes[e];
#pragma unroll
    for (int b = 1; b < L::kKBoxes; ++b) sum += boxes[b * 16 * L::kBN + e];
    out[e] = sum;
  }
}

// Inside a megakernel, before the first TMA load of a task, the issuing thread orders what the
// async proxy (TMA) will touch after what the generic proxy did: x, written in this launch by
// ordinary stores of another task that the dispatcher acquired; the ring's shared memory, which
// the CTA's previous task used; and the two tensor maps, which the host wrote into the queue image
// with a copy (the tensor-map proxy's acquire, a map's 128 bytes each). A standalone kernel reads
// what earlier launches wrote and its maps are kernel parameters: it needs none of it.
__device__ __forceinline__ void decode_tma_proxy_fence(const SinterTensorMap* map_x, const SinterTensorMap* map_w) {
#ifdef SINTER_MEGAKERNEL
  asm volatile("fence.proxy.async;" ::: "memory");
  asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(map_x) : "memory");
  asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(map_w) : "memory");
#else
  (void)map_x;
  (void)map_w;
#endif
}

// The tensor map `m` of the argument struct `a` where TMA reads it: the kernel parameter itself;
// inside a megakernel, where `a` is the task's copy in shared memory, its copy in global memory.
template <class Args>
__device__ __forceinline__ const SinterTensorMap* decode_tma_map(const Args& a, const SinterTensorMap& m) {
#ifdef SINTER_MEGAKERNEL
  return static_cast<const SinterTensorMap*>(sinter_mega_global_copy(&a, &m));
#else
  (void)a;
  return &m;
#endif
}

// The ring's barriers: full (thread 0's arrive + the boxes' bytes) and empty (one arrive per warp
// done reading the stage) per stage.
template <class L>
__device__ __forceinline__ void decode_tma_init_barriers(u64* full, u64* empty) {
  for (int i = 0; i < L::kStages; ++i) {
    mbarrier_init(&full[i], 1);
    mbarrier_init(&empty[i], kDecodeTmaWarps);
  }
  fence_barrier_init();
}

// One step's W boxes (k from k0, tile rows from n0, batch bi; a tile tile_rows high) into
// `stage`, completing on `bar`.
template <class L>
__device__ __forceinline__ void decode_tma_load_w(char* stage, const SinterTensorMap* map_w, u64* bar, int k0, int n0,
                                                  int bi, int tile_rows) {
  if constexpr (L::kKnWeight) {
    const int nb = L::n_boxes(tile_rows);
#pragma unroll
    for (int b = 0; b < L::kStepBoxes; ++b) {
#pragma unroll
      for (int j = 0; j < L::kBN / 64; ++j) {
        if (j < nb) tma_load_3d(stage + b * L::kWBoxBytes + j * L::kNBoxBytes, map_w, bar, n0 + 64 * j, k0 + 64 * b, bi);
      }
    }
  } else if constexpr (L::kChunked) {
    tma_load_3d(stage, map_w, bar, 0, n0, k0 / 64);
  } else {
#pragma unroll
    for (int b = 0; b < L::kStepBoxes; ++b) tma_load_3d(stage + b * L::kWBoxBytes, map_w, bar, k0 + 64 * b, n0, bi);
  }
}

// Runs CTA `unit`'s steps (L: a DecodeTmaLayout). At the end of each tile's part of them, the
// C tile (f32, [16][L::kBN], rows < kMTile; rows past M are zero) is in `ctile` and
// tile_done(tile, contributors, ordinal, ctile) runs: contributors is the number of CTAs that
// share the tile, ordinal this CTA's place among them. It runs on the 8 streaming warps (all
// L::kThreads threads, or, with a producer warp, threads 0-255 on named barrier 1); the producer
// warp returns from here before the others. The caller must not touch ctile after tile_done
// returns until the next call (a barrier follows it here).
// steps_per_tile and tiles_n are below 2^31 (the host checks).
// pre: the task's prologue (decode_tma_prologue) ran: the ring's barriers are set up and the W
// boxes of the first min(steps, kStages) steps are on their way, so those steps issue only x.
template <class L, class TileDone>
__device__ __forceinline__ void decode_tma_run(char* smem, const SinterTensorMap* map_x, const SinterTensorMap* map_w,
                                               const DecodeTmaWork& wk, i64 tiles_n, i64 unit, bool pre,
                                               TileDone&& tile_done) {
  constexpr int kStages = L::kStages, kBN = L::kBN, kMTile = L::kMTile;
  constexpr bool kBf16 = L::kBf16;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int h = warp % L::kRowGroups, kb = warp / L::kRowGroups;  // rows 16 h.., k box kb
  u64* full = reinterpret_cast<u64*>(smem + L::kBarOffset);
  u64* empty = full + kStages;
  float* ctile = reinterpret_cast<float*>(smem + L::kCOffset);
  const i64 cta = unit, begin = wk.begin(cta), end = wk.begin(cta + 1);
  const int steps = static_cast<int>(end - begin);  // about total / ctas
  const int spt = static_cast<int>(wk.steps_per_tile), tn = static_cast<int>(tiles_n);
  // a step's bytes: kStepBoxes W boxes of tile_rows rows (L::kWBytes with stream-K; a box partly
  // past N or K still lands whole, zero-filled) and as many x boxes
  const u32 w_tx = L::w_step_bytes(wk.tile_rows), x_tx = static_cast<u32>(L::kStepBoxes * L::kXBoxBytes);
  // With whole tiles every CTA reads k steps 0, 1, 2, ... in about the same lockstep, so all ask
  // L2 for the same x box at once; starting each CTA elsewhere in k was slower, not faster.
  // rows past tile_rows (whole tiles lower than the box) hold stale bytes: their warps skip the math
  const bool has_rows = 16 * h < wk.tile_rows;

  // thread 0's load cursor: the next step to issue, into stage `ist`
  DecodeTmaCursor load{};
  int ist = 0, issued = 0;
  auto issue = [&]() {
    char* stage = smem + ist * L::kStageBytes;
    const int k0 = load.ks * L::kStepK, n0 = load.nt * wk.tile_rows, bi = static_cast<int>(load.bi);
    if (pre && issued < kStages) {
      mbarrier_arrive_expect_tx(&full[ist], x_tx);  // the prologue expects the W bytes
    } else {
      mbarrier_arrive_expect_tx(&full[ist], w_tx + x_tx);
      decode_tma_load_w<L>(stage, map_w, &full[ist], k0, n0, bi, wk.tile_rows);
    }
    if constexpr (L::kChunked) {
      tma_load_3d(stage + L::kWBytes, map_x, &full[ist], 0, 0, k0 / 64);
    } else {
#pragma unroll
      for (int b = 0; b < L::kStepBoxes; ++b) {
        tma_load_3d(stage + L::kWBytes + b * L::kXBoxBytes, map_x, &full[ist], k0 + 64 * b, 0, bi);
      }
    }
    load.advance(spt, tn);
    ist = ist + 1 == kStages ? 0 : ist + 1;
    ++issued;
  };
  if (threadIdx.x == 0) {
    decode_tma_proxy_fence(map_x, map_w);
    if (!pre) {
      tma_prefetch_descriptor(map_w);
      tma_prefetch_descriptor(map_x);
      decode_tma_init_barriers<L>(full, empty);
    }
    if constexpr (!L::kProducerWarp) {
      load.start(begin, wk.steps_per_tile, tiles_n);
      for (int i = 0; i < steps && i < kStages; ++i) issue();
    }
  }
  __syncthreads();

  if constexpr (L::kProducerWarp) {
    if (threadIdx.x >= kDecodeTmaThreads) {
      // the producer warp: one thread issues every step, each once the 8 warps have released its
      // stage from the step kStages before (that release completed the stage's empty phase
      // (i / kStages - 1), whose parity it waits on)
      if (threadIdx.x == kDecodeTmaThreads) {
        decode_tma_proxy_fence(map_x, map_w);
        load.start(begin, wk.steps_per_tile, tiles_n);
        for (int i = 0; i < steps; ++i) {
          if (i >= kStages) mbarrier_wait(&empty[ist], static_cast<u32>((i / kStages - 1) & 1));
          issue();
        }
      }
      return;
    }
  }
  // the 8 consumer warps' barrier at a tile's end: the whole CTA, or barrier 1 of their 256
  // threads when a producer warp runs beside them
  auto consumers_sync = [] {
    if constexpr (L::kProducerWarp) {
      named_barrier_sync(1, kDecodeTmaThreads);
    } else {
      __syncthreads();
    }
  };

  DecodeTmaCursor at;  // the step the warps compute
  at.start(begin, wk.steps_per_tile, tiles_n);
  float acc[L::kAccChains][2][4] = {};
  int st = 0, prev = kStages - 1;
  u32 phase = 0, prev_phase = 1;  // the phase parity of stage st / of the step before
  for (int i = 0; i < steps; ++i) {
    const u32 stage = smem_addr(smem + st * L::kStageBytes);
    mbarrier_wait(&full[st], phase);
    if (has_rows) {
      // warp group kb's boxes are kb x kWarpBoxes .. +kWarpBoxes - 1, consecutive in k
#pragma unroll
      for (int j = 0; j < L::kWarpBoxes; ++j) {
        const int b = kb * L::kWarpBoxes + j;
        decode_tma_step<kMTile, kBf16, L::kAccChains, L::kKnWeight>(stage + b * L::kWBoxBytes,
                                                                    stage + L::kWBytes + b * L::kXBoxBytes, h, lane, acc);
      }
    }
    __syncwarp();
    if (lane == 0) mbarrier_arrive(&empty[st]);
    // refill the previous step's stage: its readers have most likely all moved on by now
    if (!L::kProducerWarp && threadIdx.x == 0 && i >= 1 && i - 1 + kStages < steps) {
      mbarrier_wait(&empty[prev], prev_phase);
      issue();
    }
    __syncwarp();  // warp 0 reconverges before the next ldmatrix / mma (.sync.aligned)
    prev = st;
    prev_phase = phase;
    if (++st == kStages) {
      st = 0;
      phase ^= 1u;
    }
    const i64 tile = at.tile;
    const bool tile_ends = at.ks + 1 == spt || i + 1 == steps;
    at.advance(spt, tn);
    if (!tile_ends) continue;
    // this CTA's part of `tile` is done: the fragments straight into the C tile with one k box,
    // else per k box, summed in box order below
    float* red = reinterpret_cast<float*>(smem + L::kRedOffset);
    decode_tma_store_fragment<L>(L::kKBoxes == 1 ? ctile : red + kb * 16 * kBN, acc, h, lane);
    consumers_sync();
    if (L::kKBoxes > 1) {
      decode_tma_sum_boxes<L>(ctile, red, threadIdx.x, kDecodeTmaThreads);
      consumers_sync();
    }
    const i64 first = wk.first_cta(tile);
    tile_done(tile, static_cast<int>(wk.last_cta(tile) - first + 1), static_cast<int>(cta - first), ctile);
    consumers_sync();  // ctile is free again
  }
}

// The tile function: CTA `unit`'s share of the weight's k steps, each of its tiles ended by the
// combine (a stream-K tile split over CTAs: the last to arrive gets the sum) and `epi` (the
// region's epilogue functor: epi.tile over the C tile). Every thread of the CTA calls it.
// Args: the generated argument struct, with tma_x, tma_w (the tensor maps of x and W: one box a
// step's 64-k box of the M tile's rows and of a tile's rows, or the chunked views), shape (the
// GEMM's sizes), total, steps_per_tile, ctas, whole_tiles, tile_rows (DecodeTmaWork), tiles_n
// (tiles per batch), and for stream-K max_contributors, part and counts (the partials and a
// counter per tile in the workspace: decode_splitk_combine_group).
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void decode_tma_unit(char* smem, const Args& a, Epi& epi, i64 unit, bool pre = false) {
  typedef DecodeTmaLayout<Cfg> L;
  const SinterGemmShape& s = a.shape;
  const DecodeTmaWork wk = decode_tma_work(a);
  [[maybe_unused]] const int rows = static_cast<int>(min(s.m, i64{L::kMTile}));
  decode_tma_run<L>(smem, decode_tma_map(a, a.tma_x), decode_tma_map(a, a.tma_w), wk, a.tiles_n, unit, pre,
                    [&](i64 tile, [[maybe_unused]] int contributors, [[maybe_unused]] int ordinal, float* ctile) {
    if constexpr (!L::kWholeTiles) {
      // on the consumer warps (named barrier 1) beside a producer warp, or on the whole CTA (barrier 0)
      if (contributors > 1 && !decode_splitk_combine_group<kDecodeTmaThreads, L::kProducerWarp ? 1 : 0, L::kMTile * L::kBN, L::kBN>(
              ctile, rows, a.part + tile * a.max_contributors * (L::kMTile * L::kBN), ordinal,
              contributors, a.counts + tile, threadIdx.x)) {
        return;  // another CTA of this tile sums the partials
      }
    }
    const i64 bi = tile / a.tiles_n;
    const int n0 = static_cast<int>(tile - bi * a.tiles_n) * a.tile_rows;
    epi.tile(reinterpret_cast<const char*>(ctile), bi * s.m, static_cast<int>(s.m), static_cast<i64>(n0),
             min(a.tile_rows, static_cast<int>(s.n - n0)));
  });
#ifdef SINTER_MEGAKERNEL
  // the next task on this CTA may use this shared memory otherwise: the ring's mbarriers end here,
  // once every thread (the producer warp too) is past its last wait
  __syncthreads();
  if (threadIdx.x == 0) {
    u64* bars = reinterpret_cast<u64*>(smem + L::kBarOffset);
    for (int i = 0; i < 2 * L::kStages; ++i) mbarrier_inval(&bars[i]);
  }
#endif
}

// The ring at the start of dynamic shared memory, aligned up to the swizzle period.
__device__ __forceinline__ char* decode_tma_smem_base() {
  extern __shared__ __align__(1024) char decode_tma_smem[];
  return reinterpret_cast<char*>((reinterpret_cast<u64>(decode_tma_smem) + 1023) & ~u64{1023});
}

// The task prologue (inside a megakernel): thread 0 of the task's CTA runs it before it waits for
// the task's producers, where W is a graph input (no task of the launch writes it): it sets up
// the ring's barriers and issues the W boxes of the unit's first min(steps, kStages) steps, each
// stage's full barrier expecting their bytes (no arrival: the task's own issue of the step's x
// boxes arrives), so the weights stream into shared memory while the CTA would otherwise wait.
// drain: the launch is aborting and the task will not run: thread 0 arrives on those stages and
// waits until the W boxes have landed, so that no load is in flight when the CTA leaves.
template <class Cfg, class Args>
__device__ __forceinline__ void decode_tma_prologue(const Args& a, i64 unit, bool drain) {
  typedef DecodeTmaLayout<Cfg> L;
  char* smem = decode_tma_smem_base();
  u64* full = reinterpret_cast<u64*>(smem + L::kBarOffset);
  u64* empty = full + L::kStages;
  const DecodeTmaWork wk = decode_tma_work(a);
  const i64 steps = wk.begin(unit + 1) - wk.begin(unit);
  const int first = static_cast<int>(steps < L::kStages ? steps : L::kStages);
  if (drain) {
    for (int i = 0; i < first; ++i) {
      mbarrier_arrive(&full[i]);
      mbarrier_wait(&full[i], 0u);
    }
    for (int i = 0; i < 2 * L::kStages; ++i) mbarrier_inval(&full[i]);
    return;
  }
  const SinterTensorMap* map_w = decode_tma_map(a, a.tma_w);
  decode_tma_proxy_fence(decode_tma_map(a, a.tma_x), map_w);
  tma_prefetch_descriptor(map_w);
  tma_prefetch_descriptor(decode_tma_map(a, a.tma_x));
  decode_tma_init_barriers<L>(full, empty);
  const u32 w_tx = L::w_step_bytes(wk.tile_rows);
  DecodeTmaCursor load{};
  load.start(wk.begin(unit), wk.steps_per_tile, a.tiles_n);
  for (int i = 0; i < first; ++i) {
    mbarrier_expect_tx(&full[i], w_tx);
    decode_tma_load_w<L>(smem + i * L::kStageBytes, map_w, &full[i], load.ks * L::kStepK,
                         load.nt * wk.tile_rows, static_cast<int>(load.bi), wk.tile_rows);
    load.advance(static_cast<int>(wk.steps_per_tile), static_cast<int>(a.tiles_n));
  }
}

// The kernel: one CTA per unit (the grid is a.ctas CTAs of DecodeTmaLayout<Cfg>::kThreads
// threads, DecodeTmaLayout<Cfg>::kBytes of dynamic shared memory). Inside a megakernel, the
// dispatcher may have run the task's prologue (sinter_mega_prologue_ran).
// out: y [batches, M, N] through the epilogue; x [batches, M, K]; W [batches, N, K] (or [batches,
// K, N] with kKnWeight)
template <class Cfg, class Epi, class Args>
__device__ __forceinline__ void decode_tma_kernel(const Args& a) {
  sinter_kernel_begin();
  Epi epi(a);
#ifdef SINTER_MEGAKERNEL
  const bool pre = sinter_mega_prologue_ran();
#else
  const bool pre = false;
#endif
  decode_tma_unit<Cfg>(decode_tma_smem_base(), a, epi, blockIdx.x, pre);
  epi.finish();
}
