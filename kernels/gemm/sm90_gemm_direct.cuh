// Hopper GEMM with the epilogue run straight from the wgmma accumulators (no C tile in shared
// memory), in configurations the tuner times:
//   cooperative (kPingPong false): a kBM = 128 tile; consumer warpgroup c owns rows 64 c .. 64 c
//     + 63 of every tile, both run the main loop of the same tile, then both run its epilogue
//     (the tall tile below: kBM = 256, 128 rows each).
//   ping-pong (kPingPong true): a kBM = 64 tile; consumer c takes every other tile of the CTA, so
//     one consumer's epilogue runs while the other's wgmma keep the tensor cores busy. Consumer c
//     starts the main loop of tile j only after the other one has issued all of tile j - 1's
//     (an "order" mbarrier each): that alternates their main loops, and it keeps every ring
//     wait within one lap of the producer, which parity waits need.
// CTA = 3 warpgroups: warpgroup 0 produces (one thread issues TMA loads into a kStages ring,
// "full"/"empty" mbarriers per stage), warpgroups 1 and 2 consume with wgmma m64n{kBN}k16 (k32 for
// 8-bit operands: a k-block is 128 bytes of each row either way). The producer gives its
// registers to the consumers (setmaxnreg), which hold kAcc f32 accumulators per thread (kBN / 2
// a 64-row block). Persistent: a CTA walks tiles blockIdx.x, + gridDim.x, ... in grouped order
// (kGroupM M tiles walk down one N column together) so co-running CTAs share A and B in L2;
// with the engine's GPC order (hopper_direct_order) a unit starts at the item its table names,
// so the units of one GPC read the same A rows in step and the L2 merges their reads.
// The producer never waits on an epilogue: a stage is released as soon as its wgmma retire, so
// the next tile's k-blocks are already loading while the consumers run the epilogue. Held stores
// (coop, full tiles, one 16-bit output): the epilogue only packs the output into registers, and
// the TMA stores leave under the next tile's first k-blocks (store_held_chunk), the CTA's last
// tile's after its loop; the kernel needs at least kWgBlocks x kBN / 64 k-blocks (the host
// checks K).
//   clustered (kCluster 2, either of the above; the tall tile's pairs below): CTA pairs of a
//     cluster take vertically adjacent tiles (M tiles 2 p and 2 p + 1, same N tile), and each
//     loads half of the shared B tile with a TMA multicast into both CTAs' shared memory: B's
//     L2 -> SM traffic halves. A stage is free only when the consumers of both CTAs have
//     released it (2 x its consumers arrivals on "empty"), so the pair runs in lockstep.
//   tall (kBM 256, kBN 128, coop): consumer c owns rows 128 c .. 128 c + 127 as two 64 x 128
//     wgmma accumulators ("row blocks", kWgBlocks 2: d[64 b + i] is block b's d[i]); with
//     kCluster 2 the pair takes horizontally adjacent tiles (N tiles 2 p and 2 p + 1, same M
//     tile) and multicasts halves of the shared A tile instead (kMulticastA). The shape of
//     cuBLASLt's 4096^3 kernel on the H100 (nvjet ..._256x128_64x4_1x2_..._coopA; its "1x2" is
//     M x N, and so is the "cluster1x2" in our description; the launch's cluster is (2, 1, 1)).
//   offloaded epilogue (coop held kernels with an epilogue, gemm/sm90_epilogue_offload.cuh): the
//     consumers hold a full tile rounded to 16 bits and the producer warpgroup's idle warps run
//     its epilogue and stores under the next tile's main loop.
//   stream-K (coop kernels the generator builds with a plan, gemm/stream_k.h): the items past the
//     last whole wave are cut along K, one k range a unit; a piece that starts inside an item
//     leaves f32 partial sums in the workspace (hopper_sk_stash), the item's owner adds them
//     (hopper_sk_gather_item) before its epilogue. The pieces come from shared memory
//     (HopperSkPieces), planned once per CTA.
// A is a K-major 16-bit (or 8-bit) matrix read through a 3D tensor map {K, M, batch} with 128-byte
// swizzle and a {kBK, kBM} box (kBK: 128 bytes of k); B is K-major ({kBK, kBN} box) or, 16-bit
// only, with kBMnMajor N-contiguous ({64, 64} boxes, gemm/sm90_operand_b.cuh). TMA zero-fills rows and k outside the matrix, so any M, N, K
// works without predication in the main loop.
#pragma once

#include "common/abi.h"
#include "common/hopper.cuh"
#include "common/math.cuh"
#include "common/memory.cuh"
#include "common/types.cuh"
#include "gemm/gemm_abi.h"
#include "gemm/sm90_operand_b.cuh"
#include "gemm/stream_k.h"

// The operand types of the wgmma: 16-bit (f16 or bf16) or 8-bit floats (e4m3 or e5m2, both operands
// the same type).
enum : int { kWgmmaF16 = 0, kWgmmaBf16 = 1, kWgmmaE4m3 = 2, kWgmmaE5m2 = 3 };

template <int kBM_, int kBN_, int kStages_, bool kPingPong_, int kCluster_ = 1, bool kBMnMajor_ = false,
          int kStoreStageBytes_ = 0, int kElemBytes_ = 2, bool kOffload_ = false>
struct HopperDirectConfig {
  // a k-block is one 128-byte swizzle row of each operand row: 64 16-bit or 128 8-bit values
  static constexpr int kElemBytes = kElemBytes_;
  static constexpr int kBM = kBM_, kBN = kBN_, kBK = 128 / kElemBytes_, kStages = kStages_;
  static constexpr bool kPingPong = kPingPong_;
  // rows of a tile a consumer warpgroup owns, in 64-row blocks of one wgmma accumulator each
  static constexpr int kWgRows = kPingPong ? kBM : kBM / 2, kWgBlocks = kWgRows / 64;
  static constexpr bool kBMnMajor = kBMnMajor_;  // B n-contiguous (a row-major [K, N] weight)
  static constexpr int kCluster = kCluster_;
  // which operand a cluster shares: A for the tall tile (N-adjacent pairs), B otherwise
  static constexpr bool kMulticastA = kBM == 256 && kCluster > 1;
  static constexpr int kThreads = 384;
  static constexpr int kTileA = kBM * 128, kTileB = kBN * 128;  // bytes per stage
  static constexpr int kStageBytes = kTileA + kTileB;
  // after the ring: the consumer warps' staging slots for TMA stores of the epilogue's outputs
  static constexpr int kStoreStageBytes = kStoreStageBytes_;
  static constexpr int kOffStore = kStages * kStageBytes;
  static constexpr int kOffBars = kOffStore + kStoreStageBytes;
  static constexpr int kSmemBytes = 1024 + kOffBars + 2 * kStages * 8 + 2 * 8;  // + 2 order barriers
  // item rows per raster group (hopper_direct_tile): 1024 / kBM tile rows (1024 rows of A), or
  // with clusters as many tile-pair rows (2048 rows). H100, 4096^3, session 26: 8 pair rows
  // 1.004-1.005x cuBLASLt, 1, 2, 4, 16 or 32 of them 1.009-1.014 (docs/benchmarks.md)
  // The tall tile's pair items are 256 x 256 like the 128x256 pair's, and its group is as many
  // rows of A (8 item rows, 2048 rows).
  static constexpr int kGroupM = kBM == 256 ? 8 : 1024 / kBM;
  static constexpr int kBlockAcc = kBN / 2;           // a 64 x kBN accumulator over 128 threads
  static constexpr int kAcc = kWgBlocks * kBlockAcc;  // a consumer thread's accumulators
  static constexpr int kEmptyArrivals = (kPingPong ? 1 : 2) * kCluster;
  // rows of A and of B each CTA of a cluster loads (the shared operand's share, the other's all)
  static constexpr int kALoadRows = kMulticastA ? kBM / kCluster : kBM;
  static constexpr int kBLoadRows = kMulticastA ? kBN : kBN / kCluster;
  // Registers per thread: 168 at launch (384 threads, 1 CTA/SM), then 40 for the producer and
  // 232 for the consumers: 128 x 40 + 256 x 232 = 64512, the launch's 384 x 168 (setmaxnreg
  // moves registers within the CTA's pool). With the offloaded epilogue
  // (gemm/sm90_epilogue_offload.cuh) the producer warpgroup's helper warps run the epilogue and
  // take 56, the consumers (no epilogue arithmetic on most tiles) 224.
  static constexpr bool kOffload = kOffload_;
  static constexpr int kEntryRegs = 168, kProducerRegs = kOffload ? 56 : 40, kConsumerRegs = kOffload ? 224 : 232;
  static_assert(kElemBytes == 1 || kElemBytes == 2, "16-bit or 8-bit operands");
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
};

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

struct HopperDirectTile {
  int batch, mt, nt;
};
// Tile t of [batch][tiles_m][tiles_n] in grouped order.
template <class C>
__device__ __forceinline__ HopperDirectTile hopper_direct_tile(i64 t, int tiles_m, int tiles_n) {
  const i64 per_batch = i64{tiles_m} * tiles_n;
  HopperDirectTile r;
  r.batch = static_cast<int>(t / per_batch);
  const int local = static_cast<int>(t - r.batch * per_batch);
  const int per_group = C::kGroupM * tiles_n;
  const int group = local / per_group, first_m = group * C::kGroupM;
  const int group_m = min(tiles_m - first_m, C::kGroupM);
  const int in_group = local - group * per_group;
  r.mt = first_m + in_group % group_m;
  r.nt = in_group / group_m;
  return r;
}

// The work items of one CTA: tiles, or with clusters, tile pairs (the cluster walks pairs; CTA
// rank r takes M tile 2 p + r of pair row p, or with kMulticastA N tile 2 p + r of pair column
// p; a tile past the matrix computes zeros and stores nothing, but still takes part in the
// multicasts).
struct HopperDirectWork {
  int first, stride;  // items first, first + stride, ... below count (int: fewer live registers)
  i64 count;
  int rank;                  // in the cluster
  int item_rows;             // M extent of the item grid (tiles_m, or pair rows)
};
// The item grid's extent along M and N: a pair halves the dimension its CTAs split (N for
// kMulticastA, else M). The count of hopper_direct_work and the coordinates of
// hopper_direct_item both come from here, so they cannot disagree.
template <class C>
__device__ __forceinline__ int hopper_direct_item_rows(int tiles_m) {
  return C::kMulticastA ? tiles_m : (tiles_m + C::kCluster - 1) / C::kCluster;
}
template <class C>
__device__ __forceinline__ int hopper_direct_item_cols(int tiles_n) {
  return C::kMulticastA ? (tiles_n + C::kCluster - 1) / C::kCluster : tiles_n;
}
template <class C>
__device__ __forceinline__ HopperDirectWork hopper_direct_work(i64 batches, int tiles_m, int tiles_n) {
  HopperDirectWork w;
  w.rank = C::kCluster == 1 ? 0 : static_cast<int>(cluster_cta_rank());
  w.item_rows = hopper_direct_item_rows<C>(tiles_m);
  w.first = static_cast<int>(blockIdx.x) / C::kCluster;
  w.stride = static_cast<int>(gridDim.x) / C::kCluster;
  w.count = batches * w.item_rows * hopper_direct_item_cols<C>(tiles_n);
  return w;
}
// The unit's first item under the engine's GPC order (gemm_abi.h), made for a grid of o.units
// units; any other grid keeps the index order.
__device__ __forceinline__ int hopper_direct_ordered_first(const HopperDirectWork& w, const SinterUnitOrder& o) {
  return o.units == w.stride ? o.first[w.first] : w.first;
}
// Whole-item kernels walk from there. (Stream-K kernels keep w.first: their cut ranges rely on
// units starting in index order, hopper_sk_range; only their whole items take the order,
// hopper_sk_plan_pieces.)
__device__ __forceinline__ void hopper_direct_order(HopperDirectWork& w, const SinterUnitOrder& o) {
  w.first = hopper_direct_ordered_first(w, o);
}
template <class C>
__device__ __forceinline__ HopperDirectTile hopper_direct_item(const HopperDirectWork& w, i64 t, int tiles_n) {
  HopperDirectTile tile = hopper_direct_tile<C>(t, w.item_rows, hopper_direct_item_cols<C>(tiles_n));
  if constexpr (C::kMulticastA) {
    tile.nt = tile.nt * C::kCluster + w.rank;
  } else {
    tile.mt = tile.mt * C::kCluster + w.rank;
  }
  return tile;
}

// Keeps a tile's coordinates computed where this stands: the compiler may not sink the integer
// divisions of hopper_direct_item past it (to the tile's end, where the tensor cores would idle
// through their latency).
__device__ __forceinline__ void hopper_direct_pin(HopperDirectTile& t) {
  asm volatile("" : "+r"(t.batch), "+r"(t.mt), "+r"(t.nt));
}

// Ends the live range of held words no one will read (a partial tile: its epilogue runs in line
// and nothing is held after it), with one real move each. The compiler cannot tell from the
// run-time `holding` flag that the previous tile's words, stored under this tile's first
// k-blocks, are dead here, so without this it keeps all of them through the partial tile's
// epilogue: beside the 128 accumulators that spilled the 128x256 kernels (a residual + bias +
// GELU + amax epilogue 240 bytes, some of it in the main loop; ptxas, session 19). Session 18's
// form, an empty asm with "=r" outputs, defines nothing in the PTX that ptxas allocates from
// (196 -> 180 bytes on a deferred kernel with a global sum).
template <int kWords>
__device__ __forceinline__ void hopper_direct_clear_words(u32 (&held)[kWords]) {
#pragma unroll
  for (int i = 0; i < kWords; ++i) held[i] = 0u;
}

// Keeps held words computed where this stands: the compiler may not sink the epilogue's packing
// below the next tile's first wgmma, which overwrite the accumulators it reads. (The F2FP pack
// compiles to the same SASS with or without it. A diagnostic build that packed with a byte
// permute instead had its wgmma serialized by ptxas: C7514, reads under in-flight wgmma, without
// the pin; C7511, register resources, with it.)
template <int kWords>
__device__ __forceinline__ void hopper_direct_pin_words(u32 (&held)[kWords]) {
#pragma unroll
  for (int i = 0; i < kWords; ++i) asm volatile("" : "+r"(held[i]));
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

// Producer (one thread): every k-block of this CTA's tiles, in tile order, into the ring.
template <class C>
__device__ __forceinline__ void hopper_direct_produce(const SinterTensorMap* map_a, const SinterTensorMap* map_b,
                                                      const HopperDirectSmem& sm, const HopperDirectWork& w,
                                                      int tiles_n, int k_blocks) {
  int stage = 0;
  u32 phase = 0;
  for (i64 t = w.first; t < w.count; t += w.stride) {
    const HopperDirectTile tile = hopper_direct_item<C>(w, t, tiles_n);
    for (int kb = 0; kb < k_blocks; ++kb) hopper_direct_load_k_block<C>(map_a, map_b, sm, w, tile, kb, stage, phase);
  }
}

// Stream-K (gemm/stream_k.h): a unit's work is its k range over the cut items, then whole items.
// A piece: k-blocks [kb0, kb1) of work item `item`.
struct HopperDirectPiece {
  int item, kb0, kb1;
};
struct HopperDirectCursor {
  int pos, end;  // the unit's range still to walk, in k-blocks over the cut items
};
// Unit u walks range units - 1 - u (hopper_sk_range): the owner of a cut item waits only for
// ranges after its own, which are then units of lower index. The hardware starts a grid's CTAs in
// index order, so every unit an owner waits for has started before it, and the waits end even
// where not all of the grid fits on the GPU at once (MPS, other kernels beside it).
__device__ __forceinline__ int hopper_sk_range(const HopperDirectWork& w) { return w.stride - 1 - w.first; }
__device__ __forceinline__ HopperDirectCursor hopper_direct_cursor(const HopperDirectWork& w, const SinterStreamK& sk) {
  HopperDirectCursor c;
  const int range = hopper_sk_range(w);
  c.pos = sinter_sk_boundary(&sk, range);
  c.end = sinter_sk_boundary(&sk, range + 1);
  return c;
}
// The unit's next piece of a cut item into p; false when its range is done (p unchanged).
__device__ __forceinline__ bool hopper_direct_next_cut_piece(HopperDirectCursor& c, int k_blocks, HopperDirectPiece& p) {
  if (c.pos >= c.end) return false;
  p.item = c.pos / k_blocks;
  p.kb0 = c.pos - p.item * k_blocks;
  p.kb1 = min(k_blocks, p.kb0 + (c.end - c.pos));
  c.pos += p.kb1 - p.kb0;
  return true;
}

// A unit's pieces, worked out once (by one thread, into shared memory, so that the consumers hold
// no cursor in registers through their main loops): `count` pieces of the cut items, at most 2 (a
// range is shorter than an item plus 2 k-blocks, sinter_sk_fits, so it cannot hold one item whole
// and touch two more), then its whole items; `total` pieces in all.
struct HopperSkPieces {
  int count, total;
  int first_whole;   // the unit's first whole item
  HopperDirectPiece piece[2];
};
// `sk`: the generator's plan, for the grid it asked for; under any other grid (the engine may
// launch fewer units) nothing is cut and every unit walks whole items. The whole items start at
// `whole_first` (w.first, or the unit's place in the GPC order: a permutation of the units, so
// the whole items are still each walked once) past the cut ones.
__device__ __forceinline__ void hopper_sk_plan_pieces(HopperSkPieces& out, const HopperDirectWork& w,
                                                      const SinterStreamK& sk, int k_blocks, int whole_first) {
  const bool planned = w.stride == sk.units && k_blocks == sk.k_blocks;
  HopperDirectCursor cur = hopper_direct_cursor(w, sk);
  if (!planned) cur.pos = cur.end = 0;
  int n = 0;
  HopperDirectPiece p;
  while (hopper_direct_next_cut_piece(cur, sk.k_blocks, p)) {
    if (n == 2) __trap();  // a plan sinter_sk_fits refuses: fail loudly, not skip k-blocks
    out.piece[n++] = p;
  }
  out.count = n;
  const i64 first_whole = (planned ? sk.sk_items : 0) + whole_first;
  out.first_whole = static_cast<int>(first_whole);
  out.total = n + static_cast<int>(first_whole < w.count ? (w.count - first_whole + w.stride - 1) / w.stride : 0);
}
// Piece i of the unit (any i: past its last piece, a whole item past the matrix's, which nothing
// reads but its coordinates).
// (It reads only `ps`, the grid and k_blocks: the plan's fields, read from shared memory
// beside the accumulator, spilled the consumers.)
__device__ __forceinline__ HopperDirectPiece hopper_sk_piece(const HopperSkPieces& ps, const HopperDirectWork& w,
                                                             int k_blocks, int i) {
  if (i < ps.count) return ps.piece[i];
  HopperDirectPiece p;
  p.item = ps.first_whole + (i - ps.count) * w.stride;
  p.kb0 = 0;
  p.kb1 = k_blocks;
  return p;
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
    for (int kb = p.kb0; kb < p.kb1; ++kb) hopper_direct_load_k_block<C>(map_a, map_b, sm, w, tile, kb, stage, phase);
  }
}

// A consumer warp's slab (kAcc sums a thread) of a stream-K slot (one CTA's kBM x kBN partial
// sums), laid out as the lanes hold it: float4 j of lane l at j * 32 + l, so each warp-wide
// access is 512 contiguous bytes. Consumer warps 4 .. 11 are slabs 4 .. 7, 0 .. 3.
template <class C>
__device__ __forceinline__ float4* hopper_sk_slab(float* partials, int slot) {
  const int warp = (threadIdx.x >> 5) & 7;
  return reinterpret_cast<float4*>(partials) + (static_cast<i64>(slot) * 8 + warp) * (C::kAcc / 4) * 32 +
         (threadIdx.x & 31);
}

// Stores this warp's partial sums in `slot` and raises its flag. The lanes' stores happen before
// lane 0's release (the warp barrier orders them), so a reader that acquires the flag sees them.
template <class C>
__device__ __forceinline__ void hopper_sk_stash(float* partials, u32* flags, int slot, const float (&d)[C::kAcc]) {
  float4* p = hopper_sk_slab<C>(partials, slot);
#pragma unroll
  for (int j = 0; j < C::kAcc / 4; ++j) __stcg(p + j * 32, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
  __syncwarp();
  if ((threadIdx.x & 31) == 0) {
    u32* f = flags + slot * 8 + ((threadIdx.x >> 5) & 7);
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(f), "r"(1u) : "memory");
  }
}

// Adds the partial sums in `slot` to d once its flag is up, and lowers the flag for the next
// launch (no one else touches it in this one). The wait is not bounded: the unit that raises the
// flag has started before this one (hopper_sk_range) and waits for nothing that has not. (A
// bounded spin would end in a trap, and any trap in these kernels makes ptxas spill the
// accumulators: 528 bytes.)
// All kAcc / 4 float4 loads of a thread go out at once, one L2 round trip (8 at a time measured
// the same on the H200, session 23; ptxas keeps them beside the accumulator without spilling).
template <class C>
__device__ __forceinline__ void hopper_sk_gather(const float* partials, u32* flags, int slot, float (&d)[C::kAcc]) {
  if ((threadIdx.x & 31) == 0) {
    u32* f = flags + slot * 8 + ((threadIdx.x >> 5) & 7);
    for (;;) {
      u32 v;
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
      if (v != 0u) break;
      __nanosleep(64);
    }
    *reinterpret_cast<volatile u32*>(f) = 0u;
  }
  __syncwarp();
  const float4* p = hopper_sk_slab<C>(const_cast<float*>(partials), slot);
#pragma unroll
  for (int j = 0; j < C::kAcc / 4; ++j) {
    const float4 v = __ldcg(p + j * 32);
    d[4 * j] += v.x;
    d[4 * j + 1] += v.y;
    d[4 * j + 2] += v.z;
    d[4 * j + 3] += v.w;
  }
}

// A stream-K slot: one a CTA, by range (the pieces that start inside an item are first pieces).
template <class C>
__device__ __forceinline__ int hopper_sk_slot(const HopperDirectWork& w, int range) {
  return range * C::kCluster + w.rank;
}

// The owner of a cut item (its piece `p` starts at k-block 0 and ends before the item does): adds
// the partial sums of the later ranges that start inside the item, in range order.
template <class C>
__device__ __forceinline__ void hopper_sk_gather_item(const SinterStreamK& sk, const float* partials, u32* flags,
                                                      const HopperDirectWork& w, const HopperDirectPiece& p,
                                                      float (&d)[C::kAcc]) {
  const int item_end = (p.item + 1) * sk.k_blocks;
  for (int r = hopper_sk_range(w) + 1; r < sk.units && sinter_sk_boundary(&sk, r) < item_end; ++r) {
    hopper_sk_gather<C>(partials, flags, hopper_sk_slot<C>(w, r), d);
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
// then serializes every wgmma of the kernel (C7520, session 16).
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
  // branch is warp-uniform (held kernels, codegen_matmul_sm90_direct.cpp), ptxas keeps the ring
  // position and the adds in uniform registers: ~47, and 4096^3 went from 1.012-1.016 to
  // 1.001-1.006x cuBLASLt (session 25, docs/benchmarks.md); with HopperDirectRelease, ~42.
  // Elsewhere the adds stay in vector registers (~60); a_rows from lane 0 makes only the bases
  // uniform there, and without that broadcast those kernels' loops grew by 7-13 instructions a
  // k-block (session 26, bench/sass_loops.py). Broadcasting the ring position once a tile
  // instead made ptxas serialize the wgmma (C7515).
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
    // same accumulator back to back, as cuBLASLt's 256x128 kernel orders them. (The order that
    // alternated the blocks every k step was only timed beside a bug that doubled the work, so
    // what it costs alone is not known: session 30, docs/benchmarks.md.)
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

// Whether p allows a vector access of two elements.
template <typename T>
__device__ __forceinline__ bool pair_aligned(const T* p) {
  return (reinterpret_cast<u64>(p) & (2 * sizeof(T) - 1)) == 0;
}

// Whether every row of a strided view starts at an even element offset (every stride over the
// rows is even), so that a pair-aligned base keeps each row's column pairs pair-aligned.
__device__ __forceinline__ bool view_rows_even(const SinterIterShape& s, const SinterStridedView& v) {
  long long any = 0;
  for (int i = 0; i < s.rank; ++i) any |= v.stride[i];
  return (any & 1) == 0;
}

// Two consecutive elements as one word (a pair-aligned vector of two).
template <typename T>
using PairWord = typename Chunk<2 * sizeof(T)>::type;

// A pair word's two elements as compute values, the first from the lower address.
template <typename T>
__device__ __forceinline__ void unpack_pair_word(PairWord<T> w, typename ComputeOf<T>::type& v0,
                                                 typename ComputeOf<T>::type& v1) {
  union {
    PairWord<T> c;
    T t[2];
  } u;
  u.c = w;
  v0 = load_as_compute<T>(u.t[0]);
  v1 = load_as_compute<T>(u.t[1]);
}
// bf16: each value is the top half of its f32, so one shift and one mask (the generic unpack of
// the high half takes a byte permute and a shift)
template <>
__device__ __forceinline__ void unpack_pair_word<bf16>(u32 w, float& v0, float& v1) {
  v0 = __uint_as_float(w << 16);
  v1 = __uint_as_float(w & 0xffff0000u);
}

// Loads two consecutive elements (p pair-aligned) with one plain vector load. Not through the
// read-only path on purpose: __ldg lets the compiler hoist a whole tile's bias loads above the
// epilogue's stores, and with 128 accumulators live that spills the 168-register consumers.
template <typename T>
__device__ __forceinline__ PairWord<T> load_pair_word(const T* p) {
  return *reinterpret_cast<const PairWord<T>*>(p);
}
template <typename T>
__device__ __forceinline__ void load_pair(const T* p, typename ComputeOf<T>::type& v0,
                                          typename ComputeOf<T>::type& v1) {
  unpack_pair_word<T>(load_pair_word(p), v0, v1);
}

// Stores two consecutive elements of row `p` (columns c, c + 1). kFull (the caller knows both
// are in range and p is pair-aligned): one vector store. Otherwise (a tile on the matrix edge, or
// an output whose rows do not start on a pair) one predicated scalar store per element in range:
// no alignment branch, which keeps the partial-tile copy of the epilogue small to compile.
template <bool kFull, typename T>
__device__ __forceinline__ void store_pair(T* p, typename ComputeOf<T>::type v0, typename ComputeOf<T>::type v1,
                                           bool ok0, bool ok1) {
  if constexpr (kFull) {
    const typename ComputeOf<T>::type v[2] = {v0, v1};
    store_vec<T, 2>(p, v);
  } else {
    if (ok0) store_one(p, v0);
    if (ok1) store_one(p + 1, v1);
  }
}

// Two 16-bit values packed in one 32-bit word (the low one first), as stmatrix takes them.
template <typename T>
__device__ __forceinline__ u32 pack_pair(float v0, float v1) {
  static_assert(sizeof(T) == 2, "16-bit element types only");
  union {
    T t[2];
    u32 w;
  } u;
  u.t[0] = store_from_compute<T>(v0);
  u.t[1] = store_from_compute<T>(v1);
  return u.w;
}

// pack_pair's inverse: the two 16-bit values of a word as floats, v0 from the low half.
template <typename T>
__device__ __forceinline__ void unpack_pair(u32 w, float& v0, float& v1) {
  static_assert(sizeof(T) == 2, "16-bit element types only");
  v0 = to_float(T{static_cast<u16>(w & 0xffffu)});
  v1 = to_float(T{static_cast<u16>(w >> 16)});
}
template <>
__device__ __forceinline__ void unpack_pair<bf16>(u32 w, float& v0, float& v1) {
  v0 = __uint_as_float(w << 16);
  v1 = __uint_as_float(w & 0xffff0000u);
}

// An amax over packed words: acc's halves take the larger magnitude of theirs and w's (one
// HMNMX2 for two elements, where the f32 values took one FMNMX each). The halves' signs are the
// XOR of the inputs' (.xorsign), so only their magnitudes mean anything; a NaN in either makes
// the half NaN (.NaN), as op_max does. The amax of the rounded values is the rounded amax of the
// f32 ones (rounding is monotone), and it is what the graph's amax of a 16-bit tensor reads.
template <typename T>
__device__ __forceinline__ u32 amax_pair(u32 acc, u32 w);
template <>
__device__ __forceinline__ u32 amax_pair<bf16>(u32 acc, u32 w) {
  u32 r;
  asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(acc), "r"(w));
  return r;
}
template <>
__device__ __forceinline__ u32 amax_pair<f16>(u32 acc, u32 w) {
  u32 r;
  asm("max.NaN.xorsign.abs.f16x2 %0, %1, %2;" : "=r"(r) : "r"(acc), "r"(w));
  return r;
}
// amax_pair's result as one float: the larger magnitude of its halves (NaN if either is).
template <typename T>
__device__ __forceinline__ float amax_pair_value(u32 acc) {
  float v0, v1;
  unpack_pair<T>(acc, v0, v1);
  return op_max(fabsf(v0), fabsf(v1));
}

// Stores 8 rows x 32 columns of 16-bit values held in the wgmma fragment layout (word m of lane
// l: row l / 4, columns 8 m + 2 (l % 4) + {0, 1}) as 16-byte rows: stmatrix writes the four 8x8
// blocks to this warp's 512-byte scratch, each lane reads back one block row (block l / 8, row
// l % 8) and stores it with one 16-byte store, so a warp's store covers 8 rows x 64 bytes (two full
// sectors a row) where pair stores covered 8 rows x 16 bytes in four times the instructions.
// `row` points at this lane's row (l % 8) at the group's first column plus 8 (l / 8); rows and
// the scratch 16-byte aligned. Every lane of the warp takes part.
template <typename T>
__device__ __forceinline__ void store_fragment_rows_wide(u32* scratch, const u32 (&w)[4], T* row) {
  const int lane = threadIdx.x & 31;
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(
                   smem_addr(scratch + (lane >> 3) * 32 + (lane & 7) * 4)),
               "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
               : "memory");
  __syncwarp();
  const uint4 v = *reinterpret_cast<const uint4*>(scratch + lane * 4);
  __syncwarp();  // read before the next group overwrites the scratch
  *reinterpret_cast<uint4*>(row) = v;
}

// Stages 8 rows x 32 columns of 16-bit values held in the wgmma fragment layout (as
// store_fragment_rows_wide's `w`) into `slot`, a 16-row x 64-column chunk (128-byte rows,
// 1024-byte aligned) laid out as a TMA box with 128-byte swizzle: 16-byte unit u of row r sits at
// unit u ^ (r % 8), so the 8 rows of each stmatrix block land in 8 different bank groups.
// `half`: rows 8 half .. 8 half + 7 of the chunk; `group`: its columns 32 group .. 32 group + 31.
// Every lane of the warp takes part.
__device__ __forceinline__ void stage_fragment_rows_sw128(char* slot, const u32 (&w)[4], int half, int group) {
  const int lane = threadIdx.x & 31;
  const int r = 8 * half + (lane & 7), unit = 4 * group + (lane >> 3);  // lane: block lane / 8, row lane % 8
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(
                   smem_addr(slot + r * 128 + ((unit ^ (r & 7)) << 4))),
               "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
               : "memory");
}

// Deferred epilogues: a full tile's 64 x kBN accumulator rounded to T (the matmul's own 16-bit
// type) and packed into held in store_held_chunk's layout (word 8 q4 + 4 h + qi: rows r0 + 8 h,
// columns 8 (4 q4 + qi) + c0 + {0, 1}), for the epilogue to run on under the next tile's k-blocks.
template <typename T, int kBN>
__device__ __forceinline__ void hold_accumulators(const float (&d)[kBN / 2], u32 (&held)[kBN / 4]) {
#pragma unroll
  for (int q = 0; q < kBN / 8; ++q) {
#pragma unroll
    for (int h = 0; h < 2; ++h) held[8 * (q / 4) + 4 * h + q % 4] = pack_pair<T>(d[4 * q + 2 * h], d[4 * q + 2 * h + 1]);
  }
}

// Slot s (0 or 1) of consumer warp `warp` (0-7): its two 2 KB TMA-store slots in `store_stage`.
__device__ __forceinline__ char* held_store_slot(char* store_stage, int warp, int s) {
  return store_stage + warp * (2 * 2048) + s * 2048;
}

// Stages chunk p of the held words into `slot` (2 KB, 1024-byte aligned); every lane takes part.
template <int kWords>
__device__ __forceinline__ void stage_held_chunk(char* slot, const u32 (&held)[kWords], int p) {
#pragma unroll
  for (int g = 0; g < 2; ++g) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int base = 8 * (2 * p + g) + 4 * h;
      const u32 w[4] = {held[base], held[base + 1], held[base + 2], held[base + 3]};
      stage_fragment_rows_sw128(slot, w, h, g);
    }
  }
}
// Held stores (the coop kernels' full tiles, one 16-bit output): a consumer thread keeps its
// tile's packed outputs in registers, held[8 q4 + 4 h + i] = word i of rows r0 + 8 h in column
// group q4 (32 columns; words as stage_fragment_rows_sw128 takes them), and stores them under the
// next tile's first k-blocks, one chunk per k-block. Chunk p (this warp's 16 rows x columns
// 64 p .. 64 p + 63, from (col0, row0)) goes through slot p % 2 of the warp's two 2 KB slots in
// `store_stage` with one TMA store through `map`; before staging, the store that used the slot
// two chunks ago must have read it. With row blocks (the tall tile: kChunksPerRow = kBN / 64
// chunks a block, whose words follow the block before's) chunk p is block p / kChunksPerRow's
// columns 64 (p % kChunksPerRow) ..., 64 rows further down a block.
template <int kChunksPerRow, int kWords>
__device__ __forceinline__ void store_held_chunk(const SinterTensorMap* map, char* store_stage,
                                                 const u32 (&held)[kWords], int p, int col0, int row0) {
  const int lane = threadIdx.x & 31;
  char* slot = held_store_slot(store_stage, (threadIdx.x >> 5) & 7, p & 1);
  if (lane == 0) bulk_wait_group_read<1>();
  __syncwarp();
  stage_held_chunk(slot, held, p);
  fence_proxy_async_shared();
  __syncwarp();
  if (lane == 0) {
    tma_store_3d(map, slot, col0 + 64 * (p % kChunksPerRow), row0 + 64 * (p / kChunksPerRow), 0);
    bulk_commit_group();
  }
}
