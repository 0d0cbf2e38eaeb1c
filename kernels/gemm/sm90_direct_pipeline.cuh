// The main loop of the direct-epilogue Hopper GEMM (gemm/sm90_gemm_direct.cuh): the shared-memory
// ring, the producer's TMA loads (multicast within a CTA pair), and a consumer warpgroup's wgmma
// over a tile's k-blocks.
#pragma once

#include "common/hopper.cuh"
#include "common/types.cuh"
#include "gemm/sm90_direct_config.cuh"
#include "gemm/sm90_direct_schedule.cuh"
#include "gemm/sm90_operand_b.cuh"

struct HopperDirectSmem {
  char* stages;
  char* store_stage;  // C::kStoreStageBytes of TMA store slots (none: the barriers' address)
  u64* full;
  u64* empty;
  u64* order;  // ping-pong: order[c] completes a phase when consumer c has issued a tile's wgmma
};

template <class C>
__device__ __forceinline__ HopperDirectSmem hopper_direct_smem(char* raw) {
  char* base = reinterpret_cast<char*>((reinterpret_cast<u64>(raw) + 1023) & ~u64{1023});
  HopperDirectSmem s;
  s.stages = base;
  s.store_stage = base + C::kOffStore;
  s.full = reinterpret_cast<u64*>(base + C::kOffBars);
  s.empty = s.full + C::kStages;
  s.order = s.empty + C::kStages;
  return s;
}

// Producer (one thread): k-block kb of `tile` into the ring at (stage, phase), which it advances.
template <class C>
__device__ __forceinline__ void hopper_direct_load_k_block(const SinterTensorMap* map_a, const SinterTensorMap* map_b,
                                                           const HopperDirectSmem& sm, const HopperDirectWork& w,
                                                           const HopperDirectTile& tile, int kb, int& stage, u32& phase) {
  mbarrier_wait(&sm.empty[stage], phase ^ 1u);
  char* dst = sm.stages + stage * C::kStageBytes;
  mbarrier_arrive_expect_tx(&sm.full[stage], C::kStageBytes);
  if constexpr (C::kMulticastA) {
    // this CTA's half of A, into the same place in both CTAs; all of its own B
    const int half = w.rank * C::kALoadRows;
    tma_load_3d_multicast(dst + half * 128, map_a, &sm.full[stage], kb * C::kBK, tile.mt * C::kBM + half, tile.batch,
                          static_cast<u16>(0x3));
    sm90_load_b<C::kBMnMajor, C::kBN>(dst + C::kTileA, map_b, &sm.full[stage], kb * C::kBK, tile.nt * C::kBN,
                                      tile.batch);
  } else if constexpr (C::kCluster == 1) {
    tma_load_3d(dst, map_a, &sm.full[stage], kb * C::kBK, tile.mt * C::kBM, tile.batch);
    sm90_load_b<C::kBMnMajor, C::kBN>(dst + C::kTileA, map_b, &sm.full[stage], kb * C::kBK, tile.nt * C::kBN,
                                      tile.batch);
  } else {
    tma_load_3d(dst, map_a, &sm.full[stage], kb * C::kBK, tile.mt * C::kBM, tile.batch);
    // this CTA's half of B, into the same place in both CTAs
    const int half = w.rank * C::kBLoadRows;
    // (K-major: kBLoadRows rows of 128 bytes; MN-major: kBLoadRows / 64 atoms of 64 x 128 bytes;
    // the same byte offset either way)
    sm90_load_b_multicast<C::kBMnMajor, C::kBLoadRows>(dst + C::kTileA + half * 128, map_b, &sm.full[stage],
                                                        kb * C::kBK, tile.nt * C::kBN + half, tile.batch,
                                                        static_cast<u16>(0x3));
  }
  if (++stage == C::kStages) {
    stage = 0;
    phase ^= 1u;
  }
}

// Producer (one thread): k-blocks [kb0, kb1) of one work item `tile` into the ring: the
// producer's tile function.
template <class C>
__device__ __forceinline__ void hopper_direct_load_item(const SinterTensorMap* map_a, const SinterTensorMap* map_b,
                                                        const HopperDirectSmem& sm, const HopperDirectWork& w,
                                                        const HopperDirectTile& tile, int kb0, int kb1, int& stage,
                                                        u32& phase) {
  for (int kb = kb0; kb < kb1; ++kb) hopper_direct_load_k_block<C>(map_a, map_b, sm, w, tile, kb, stage, phase);
}

// Producer (one thread): every k-block of this CTA's items, in the consumers' order.
template <class C>
__device__ __forceinline__ void hopper_direct_produce(const SinterTensorMap* map_a, const SinterTensorMap* map_b,
                                                      const HopperDirectSmem& sm, const HopperDirectWork& w,
                                                      int tiles_n, int k_blocks) {
  int stage = 0;
  u32 phase = 0;
  for (i64 t = w.first; t < w.count; t += w.stride) {
    const HopperDirectTile tile = hopper_direct_item<C>(w, t, tiles_n);
    hopper_direct_load_item<C>(map_a, map_b, sm, w, tile, 0, k_blocks, stage, phase);
  }
}

// Producer (one thread) of a stream-K kernel: every piece's k-blocks, in the consumers' order.
template <class C>
__device__ __forceinline__ void hopper_direct_produce_pieces(const SinterTensorMap* map_a, const SinterTensorMap* map_b,
                                                             const HopperDirectSmem& sm, const HopperDirectWork& w,
                                                             int tiles_n, const HopperSkPieces& ps, int k_blocks) {
  int stage = 0;
  u32 phase = 0;
  for (int i = 0; i < ps.total; ++i) {
    const HopperDirectPiece p = hopper_sk_piece(ps, w, k_blocks, i);
    const HopperDirectTile tile = hopper_direct_item<C>(w, p.item, tiles_n);
    hopper_direct_load_item<C>(map_a, map_b, sm, w, tile, p.kb0, p.kb1, stage, phase);
  }
}

// One 32-byte k step: k16 of 16-bit operands, k32 of 8-bit ones.
// `accumulate` false: d = A B (the wgmma's scale-d), which spares zeroing d before a tile.
template <int kBN, int kType, bool kTransB>
__device__ __forceinline__ void hopper_direct_wgmma(float (&d)[kBN / 2], u64 da, u64 db, bool accumulate) {
  if constexpr (kType == kWgmmaE4m3 || kType == kWgmmaE5m2) {
    wgmma_m64nk32_f8<kBN, kType == kWgmmaE4m3>(d, da, db, accumulate);
  } else if constexpr (kBN == 256) {
    wgmma_m64n256k16<kType == kWgmmaBf16, kTransB>(d, da, db, accumulate);
  } else {
    wgmma_m64n128k16<kType == kWgmmaBf16, kTransB>(d, da, db, accumulate);
  }
}

// Row block b (0 .. kWgBlocks - 1) of a consumer's accumulators, as one wgmma's 64 x kBN
// accumulator (b a constant where it is called: the array stays in registers).
template <int kBlock, int kBlocks, class T>
__device__ __forceinline__ T (&row_block(T (&d)[kBlock * kBlocks], int b))[kBlock] {
  return *reinterpret_cast<T(*)[kBlock]>(d + b * kBlock);
}

// How a consumer warpgroup says it is done with a stage. With clusters the peer's producer
// writes into the stage too, so every CTA's "empty" barrier hears of it: thread r < kCluster of
// the warpgroup signals CTA r, one arrive each, issued together. Each thread's empty[0] address
// (mapa) is worked out once, a stage's is that plus 8 a stage: lane 0 issuing both arrives, each
// after its own mapa and address arithmetic, took ~10 instructions a k-block in every warp.
template <class C>
struct HopperDirectRelease {
  u32 empty0;    // empty[0] in the CTA this thread signals (shared::cluster with clusters)
  bool signals;  // whether this thread arrives at all
  __device__ __forceinline__ explicit HopperDirectRelease(const u64* empty) {
    const u32 r = threadIdx.x % 128;
    signals = r < C::kCluster;
    if constexpr (C::kCluster == 1) {
      empty0 = smem_addr(empty);
    } else {
      empty0 = cluster_smem_addr(empty, r % C::kCluster);
    }
  }
  __device__ __forceinline__ void operator()(int stage) const {
    if (!signals) return;
    const u32 at = empty0 + 8u * static_cast<u32>(stage);
    if constexpr (C::kCluster == 1) {
      mbarrier_arrive_at(at);
    } else {
      mbarrier_arrive_cluster_at(at);
    }
  }
};

// What hopper_direct_mainloop runs after issuing each of its first kPeel k-blocks: nothing.
struct HopperNoWorkUnderWgmma {
  __device__ __forceinline__ void operator()(int) const {}
};

// What hopper_direct_mainloop runs after issuing a tile's last k-block, before waiting for its
// wgmma: nothing.
struct HopperNoWorkBeforeLastWait {
  __device__ __forceinline__ void operator()() const {}
};

// One consumer warpgroup's kWgRows x kBN accumulators over all k-blocks of one tile, starting at ring
// position (stage, phase), which it advances. `a_rows` is the byte offset of its kWgRows rows inside
// the stage's A tile. A stage is released once the wgmma reading it has retired (wait_group 1
// keeps one k-block in flight). `issued`, if not null, is arrived on once every wgmma is issued.
// The first k step of a tile overwrites d (scale-d 0): no zeroing before it (kAcc instructions
// a thread and tile while the tensor cores idle).
// kPeel > 0: the first kPeel k-blocks are unrolled and `under(kb)` runs right after k-block kb's
// wgmma are issued, while they run (kb is a constant there, so `under` may index register arrays
// with it: the held stores of the previous tile). Needs k_blocks >= kPeel (the caller checks at
// build time): a k-block in a conditional would put its wgmma on a divergent path, and ptxas
// then serializes every wgmma of the kernel (ptxas warning C7520).
// `before_last_wait()` runs once the tile's last k-block is issued, before the wait for it: work
// whose latency the last k-block's wgmma cover (the epilogue's operand loads).
template <class C, int kType, int kPeel = 0, class Under = HopperNoWorkUnderWgmma,
          class Last = HopperNoWorkBeforeLastWait>
__device__ __forceinline__ void hopper_direct_mainloop(float (&d)[C::kAcc], const HopperDirectSmem& sm, int a_rows,
                                                       int k_blocks, int& stage, u32& phase, u64* issued,
                                                       Under&& under = Under{}, Last&& before_last_wait = Last{}) {
  // d's old values are dead (the tile's first wgmma ignores them): an instruction-free definition
  // ends their live range where the previous tile's epilogue last read them, as zeroing d did
#pragma unroll
  for (int i = 0; i < C::kAcc; ++i) wgmma_discard_operand(d[i]);
  if (k_blocks == 0) {  // K = 0: no wgmma writes d
#pragma unroll
    for (int i = 0; i < C::kAcc; ++i) d[i] = 0.0f;
  }
  int prev = -1;
  // Stage 0's descriptors, built once a tile; a stage's and a k step's are these plus an offset
  // in 16-byte units. The descriptors' 14-bit address field holds (address & 0x3FFFF) >> 4 and
  // shared addresses stay below 2^18, so the sum never carries out of it and the adds touch the
  // low word only. Rebuilding every descriptor from its address (mask, shift, or, moves to uniform
  // registers) took ~85 instructions a k-block and warp in the held coop kernel. Where the role
  // branch is warp-uniform (held kernels, sm90_gemm_direct), ptxas keeps the ring
  // position and the adds in uniform registers: ~47, and 4096^3 went from 1.012-1.016 to
  // 1.001-1.006x cuBLASLt (docs/benchmarks.md); with HopperDirectRelease, ~42. Elsewhere the
  // adds stay in vector registers (~60); a_rows from lane 0 makes only the bases uniform there,
  // and without that broadcast those kernels' loops grew by 7-13 instructions a k-block
  // (bench/sass_loops.py). Broadcasting the ring position once a tile instead made ptxas
  // serialize the wgmma (C7515).
  const u64 desc_a0 = wgmma_desc_k_sw128(sm.stages + __shfl_sync(0xffffffffu, a_rows, 0));
  const u64 desc_b0 = sm90_b_desc<C::kBMnMajor>(sm.stages + C::kTileA, 0);
  const u32 a_lo = static_cast<u32>(desc_a0), b_lo = static_cast<u32>(desc_b0);
  const u64 a_hi = desc_a0 & ~0xFFFFFFFFull, b_hi = desc_b0 & ~0xFFFFFFFFull;
  const HopperDirectRelease<C> release(sm.empty);
  auto issue = [&](bool first) {
    mbarrier_wait(&sm.full[stage], phase);
    const u32 at = static_cast<u32>(stage) * (C::kStageBytes / 16);
#pragma unroll
    for (int i = 0; i < C::kAcc; ++i) wgmma_fence_operand(d[i]);
    wgmma_fence();
    // Row block b (64 rows, 8 KB of A further) takes all four k steps before the next block: the
    // same accumulator back to back, as cuBLASLt's 256x128 kernel orders them. (What the order
    // that alternates the blocks every k step costs was never measured alone.)
#pragma unroll
    for (int b = 0; b < C::kWgBlocks; ++b) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        // k step of 32 bytes inside A's swizzled 128-byte row (16 16-bit or 32 8-bit elements)
        const u32 da = a_lo + at + (32 / 16) * k + b * (64 * 128 / 16);
        const u32 db = b_lo + at + static_cast<u32>(sm90_b_desc_step<C::kBMnMajor>(k));
        hopper_direct_wgmma<C::kBN, kType, C::kBMnMajor>(row_block<C::kBlockAcc, C::kWgBlocks>(d, b), a_hi | da,
                                                         b_hi | db, !first || k > 0);
      }
    }
    wgmma_commit();
  };
  auto retire_previous = [&]() {
    wgmma_wait<1>();
#pragma unroll
    for (int i = 0; i < C::kAcc; ++i) wgmma_fence_operand(d[i]);
    if (prev >= 0) release(prev);
    prev = stage;
    if (++stage == C::kStages) {
      stage = 0;
      phase ^= 1u;
    }
  };
#pragma unroll
  for (int kb = 0; kb < kPeel; ++kb) {
    issue(kb == 0);
    under(kb);
    retire_previous();
  }
  for (int kb = kPeel; kb < k_blocks; ++kb) {
    issue(kb == 0);
    retire_previous();
  }
  if (issued != nullptr && threadIdx.x % 128 == 0) mbarrier_arrive(issued);
  before_last_wait();
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < C::kAcc; ++i) wgmma_fence_operand(d[i]);
  if (prev >= 0) release(prev);
}
