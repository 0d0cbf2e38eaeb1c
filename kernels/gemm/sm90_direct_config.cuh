// The configuration of the direct-epilogue Hopper GEMM (gemm/sm90_gemm_direct.cuh). The generator
// (src/engines/jit/codegen_sm90_gemm_direct.cpp) writes a struct of the fields below, the kernel
// variant a candidate's config and the region's shape chose; HopperDirectConfig<that struct> adds
// what follows from them (shared-memory layout, accumulator counts, register budgets) and checks
// every constraint at compile time.
#pragma once

#include "common/types.cuh"

// The operand types of the wgmma: 16-bit (f16 or bf16) or 8-bit floats (e4m3 or e5m2, both operands
// the same type).
enum : int { kWgmmaF16 = 0, kWgmmaBf16 = 1, kWgmmaE4m3 = 2, kWgmmaE5m2 = 3 };

// How full tiles write their 16-bit outputs (other outputs, and every output of a partial tile,
// leave as element pairs from registers).
enum class Sm90Store : int {
  // stmatrix into a 512-byte scratch a warp, then 16-byte global stores
  chains,
  // staged per consumer warp in 16 x 64 chunks into two 2 KB slots after the ring (128-byte
  // swizzle) and written with TMA stores, in line at the tile's end
  tma,
  // one 16-bit output, packed in registers at the tile's end and staged and TMA-stored under the
  // next tile's first k-blocks (store_held_chunk); needs kWgBlocks x kBN / 64 k-blocks
  held,
};

// No time stamps (common/trace.cuh's SinterCtaTrace takes them).
struct Sm90NoTrace {
  static constexpr bool kOn = false;
  __device__ __forceinline__ static void stamp(int) {}
  __device__ __forceinline__ static void flush() {}
};

// The fields a generated config struct has:
//   kBM, kBN, kStages, kCluster (int), kPingPong (bool), kWgmma (kWgmma*), kBMnMajor (bool: B
//   n-contiguous, a row-major [K, N] weight), kStore (Sm90Store), kOffload (bool: the epilogue in
//   the producer warpgroup's idle warps, gemm/sm90_epilogue_offload.cuh), kPreloadBias (bool: a
//   full tile's bias pairs loaded under its last k-block), kStreamK (bool: the last partial wave
//   cut along K, gemm/stream_k.h; Args has sk, sk_flags, sk_partials), kUnitOrder (bool: units
//   start where the engine's GPC order says; Args has order), Trace (Sm90NoTrace or
//   SinterCtaTrace).
template <class Base>
struct HopperDirectConfig {
  static constexpr int kBM = Base::kBM, kBN = Base::kBN, kStages = Base::kStages, kCluster = Base::kCluster;
  static constexpr bool kPingPong = Base::kPingPong;
  static constexpr int kWgmma = Base::kWgmma;
  static constexpr bool kBMnMajor = Base::kBMnMajor;
  static constexpr Sm90Store kStore = Base::kStore;
  static constexpr bool kOffload = Base::kOffload, kPreloadBias = Base::kPreloadBias;
  static constexpr bool kStreamK = Base::kStreamK, kUnitOrder = Base::kUnitOrder;
  using Trace = typename Base::Trace;

  // a k-block is one 128-byte swizzle row of each operand row: 64 16-bit or 128 8-bit values
  static constexpr int kElemBytes = kWgmma == kWgmmaE4m3 || kWgmma == kWgmmaE5m2 ? 1 : 2;
  static constexpr int kBK = 128 / kElemBytes;
  // rows of a tile a consumer warpgroup owns, in 64-row blocks of one wgmma accumulator each
  static constexpr int kWgRows = kPingPong ? kBM : kBM / 2, kWgBlocks = kWgRows / 64;
  // which operand a cluster shares: A for the tall tile (N-adjacent pairs), B otherwise
  static constexpr bool kMulticastA = kBM == 256 && kCluster > 1;
  static constexpr int kThreads = 384;
  static constexpr int kTileA = kBM * 128, kTileB = kBN * 128;  // bytes per stage
  static constexpr int kStageBytes = kTileA + kTileB;
  // after the ring: the consumer warps' staging slots for TMA stores, two of 2 KB a warp
  static constexpr int kStoreStageBytes = kStore == Sm90Store::chains ? 0 : 8 * 2 * 2048;
  static constexpr int kOffStore = kStages * kStageBytes;
  static constexpr int kOffBars = kOffStore + kStoreStageBytes;
  static constexpr int kSmemBytes = 1024 + kOffBars + 2 * kStages * 8 + 2 * 8;  // + 2 order barriers
  // item rows per raster group (hopper_direct_tile): 1024 / kBM tile rows (1024 rows of A), or
  // with clusters as many tile-pair rows (2048 rows): on an H100 at 4096^3, 8 pair rows ran
  // 1.004-1.005x cuBLASLt's time, 1, 2, 4, 16 or 32 of them 1.009-1.014 (docs/benchmarks.md).
  // The tall tile's pair items are 256 x 256 like the 128x256 pair's, and its group is as many
  // rows of A (8 item rows, 2048 rows).
  static constexpr int kGroupM = kBM == 256 ? 8 : 1024 / kBM;
  static constexpr int kBlockAcc = kBN / 2;           // a 64 x kBN accumulator over 128 threads
  static constexpr int kAcc = kWgBlocks * kBlockAcc;  // a consumer thread's accumulators
  static constexpr int kEmptyArrivals = (kPingPong ? 1 : 2) * kCluster;
  // rows of A and of B each CTA of a cluster loads (the shared operand's share, the other's all)
  static constexpr int kALoadRows = kMulticastA ? kBM / kCluster : kBM;
  static constexpr int kBLoadRows = kMulticastA ? kBN : kBN / kCluster;
  // Held stores: a consumer's 16 x 64 chunks a tile, one stored under each of the next tile's
  // first k-blocks. The offloaded epilogue posts a chunk to the helpers every kOffloadSpacing
  // k-blocks, 4 messages a tile (at a spacing of 4 the helpers fell behind and the consumers
  // waited for their slots: 1.077x cuBLASLt at 4096^3 fused against 1.041 at 8).
  static constexpr int kHeldChunks = kWgBlocks * kBN / 64;
  static constexpr int kOffloadSpacing = 8;
  // the k-blocks the consumers' main loop unrolls to run work under them (hopper_direct_mainloop)
  static constexpr int kPeel = kOffload ? 4 * kOffloadSpacing : kStore == Sm90Store::held ? kHeldChunks : 0;
  // Registers per thread: 168 at launch (384 threads, 1 CTA/SM), then 40 for the producer and
  // 232 for the consumers: 128 x 40 + 256 x 232 = 64512, the launch's 384 x 168 (setmaxnreg
  // moves registers within the CTA's pool). With the offloaded epilogue the producer warpgroup's
  // helper warps run the epilogue and take 56, the consumers (no epilogue arithmetic on most
  // tiles) 224.
  static constexpr int kEntryRegs = 168, kProducerRegs = kOffload ? 56 : 40, kConsumerRegs = kOffload ? 224 : 232;

  static_assert(kWgmma >= kWgmmaF16 && kWgmma <= kWgmmaE5m2, "a wgmma operand type");
  static_assert(kElemBytes == 2 || !kBMnMajor, "8-bit wgmma reads B k-contiguous only");
  static_assert(kPingPong ? kBM == 64 : kBM == 128 || kBM == 256, "64 or 128 rows per consumer warpgroup");
  static_assert(kBM != 256 || kBN == 128, "the tall tile is 256 x 128 (its accumulators fill the registers)");
  static_assert(kBN == 128 || kBN == 256, "wgmma n of 128 or 256");
  static_assert(kCluster == 1 || kCluster == 2, "clusters of 1 or 2 CTAs");
  static_assert((kBLoadRows * 128) % 1024 == 0 && (kALoadRows * 128) % 1024 == 0,
                "a multicast half must keep the swizzle alignment");
  static_assert(kTileA % 1024 == 0 && kTileB % 1024 == 0, "stage tiles must stay 1024-byte aligned");
  static_assert(kStoreStageBytes % 1024 == 0, "TMA store slots must stay 1024-byte aligned (128-byte swizzle)");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm_90 limit");
  static_assert(kThreads * kEntryRegs <= 65536 && 128 * kProducerRegs + 256 * kConsumerRegs <= 65536,
                "register file over budget");
  static_assert(kStore != Sm90Store::held || !kPingPong, "held stores are the coop kernels'");
  static_assert(!kOffload || (kStore == Sm90Store::held && kWgBlocks == 1 && !kStreamK && !kPreloadBias),
                "the offloaded epilogue: held stores of one row block a consumer, whole items");
  static_assert(!kPreloadBias || kStore == Sm90Store::held, "preloaded bias pairs: held kernels");
  static_assert(!kStreamK || (!kPingPong && kWgBlocks == 1), "stream-K: coop kernels of one row block a consumer");
};
