// Where the direct-epilogue Hopper GEMM's work goes (gemm/sm90_gemm_direct.cuh): the tiles and
// work items of a persistent grid in grouped raster order, the engine's GPC order, and
// stream-K's pieces of the last wave with their partial sums (gemm/stream_k.h).
#pragma once

#include "common/abi.h"
#include "common/hopper.cuh"
#include "common/types.cuh"
#include "gemm/gemm_abi.h"
#include "gemm/stream_k.h"

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
// the same; ptxas keeps them beside the accumulator without spilling).
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
