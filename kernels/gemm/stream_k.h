/* Stream-K over a persistent GEMM's last wave, the plan the host and the kernels share.

   A persistent grid of `units` (CTAs, or clusters) walking `items` whole tiles one after another
   ends on a partial wave when items % units != 0: at 4096^3 with 128x256 tiles, 512 tiles on 132
   SMs are 3.88 tiles a CTA, so 16 SMs idle through the last tile (3% of the kernel). With stream-K
   the first sk_items = items % units items are cut along K instead: their sk_items x k_blocks
   k-blocks, in item order, are split into one contiguous range a unit (sinter_sk_boundary), and
   every unit then walks its share of the remaining items whole (items sk_items + u, + units, ...),
   which are a whole number of waves. A unit's range covers pieces of at most a few items:
     - a piece that starts at an item's k-block 0 belongs to the item's owner, the unit that runs
       the item's epilogue: if the piece ends before the item does, the owner adds the partial sums
       the next units left for that item (in unit order, so the sum is the same on every run);
     - a piece that starts inside an item (only a unit's first piece does) is stored as f32
       partial sums in the unit's slot of the workspace, and a flag says they are there.
   No piece is shorter than min_piece k-blocks (the held-store kernels store the previous tile under
   a piece's first kWgBlocks x kBN / 64 k-blocks, one a chunk): a range end that falls closer than that to an item's edge
   moves to the nearest place that is not (at 4096^3, 66 CTA pairs: the longest range 58 k-blocks
   against 60 if it moved to the edge, and 56.24 on average). The host checks sinter_sk_fits before
   it builds a kernel with a plan.

   Plain C so that host code (the generator, its tests) and NVRTC read the same arithmetic. */
#ifndef SINTER_KERNELS_GEMM_STREAM_K_H
#define SINTER_KERNELS_GEMM_STREAM_K_H

#if defined(__CUDACC__)
#define SINTER_SK_FN __host__ __device__ __forceinline__
#else
#define SINTER_SK_FN inline
#endif

struct SinterStreamK {
  int units;     /* work units (CTAs, or clusters) of the persistent grid */
  int sk_items;  /* items [0, sk_items) are cut into k ranges, one range a unit */
  int k_blocks;  /* k-blocks of an item */
  int min_piece; /* no piece shorter than this many k-blocks */
};

/* The first k-block of unit u's range, counted over the sk_items x k_blocks k-blocks in item
   order; u = units gives the end. Non-decreasing in u. */
SINTER_SK_FN int sinter_sk_boundary(const struct SinterStreamK* s, int u) {
  if (s->sk_items <= 0) return 0; /* nothing cut */
  /* floor(total u / units) in 32-bit arithmetic (a 64-bit division is a subroutine call on the
     GPU, and the registers live across it spill): total = q units + r, r u < units^2 */
  const int total = s->sk_items * s->k_blocks;
  const int q = total / s->units, rest = total % s->units;
  int b = q * u + rest * u / s->units;
  /* a boundary closer than min_piece to an item's edge moves to the nearest place that is not:
     the edge, or min_piece inside it (at most min_piece / 2 k-blocks either way) */
  const int r = b % s->k_blocks, m = s->min_piece;
  if (r > 0 && r < m) {
    b += 2 * r <= m ? -r : m - r;
  } else if (r > s->k_blocks - m) {
    const int to_edge = s->k_blocks - r;
    b += 2 * to_edge < m ? to_edge : -(m - to_edge);
  }
  return b;
}

/* Whether the plan holds what the kernels rely on: every unit's range at least 2 min_piece long
   before the moves (each end moves at most min_piece / 2, so no piece ends up shorter than
   min_piece, and none empty) and at most k_blocks + 1 after them (so it touches at most two
   items: it cannot hold one whole and reach into two more), items of at least 2 min_piece
   k-blocks, and k-block counts that fit an int. */
SINTER_SK_FN int sinter_sk_fits(const struct SinterStreamK* s, long long items) {
  if (s->units <= 0 || s->sk_items <= 0 || s->k_blocks <= 0 || s->min_piece <= 0) return 0;
  if (items * (long long)s->k_blocks >= (1ll << 30)) return 0;
  if (s->k_blocks < 2 * s->min_piece) return 0;
  const long long total = (long long)s->sk_items * s->k_blocks;
  const long long longest = (total + s->units - 1) / s->units + s->min_piece;
  return total / s->units >= 2 * s->min_piece && longest <= s->k_blocks + 1;
}

/* The plan for `units` units walking `items` items of k_blocks each: the items past the last
   whole wave are cut where sinter_sk_fits admits it and each unit's range is at most 3/4 of an
   item (the cut then saves at least a quarter of the last wave); otherwise sk_items = 0, and every unit
   walks whole items. Measured (128x256 CTA pairs, docs/benchmarks.md): at 8192^3 (ranges of 66
   of 128 k-blocks) 0.956-0.961x cuBLASLt's time against 0.969 uncut; at 4096^3 (56 of 64)
   1.071-1.073 against 1.009-1.010. The cut walk alone, with no partial sums stored or read,
   already took 1.050 there, and the fix-up (a 128 KB stash and read a CTA) cost the rest. Walking
   the whole items first and cutting the last wave after them cost as much (4096^3 1.079-1.081):
   the cut pieces are the cost, not the walk order. */
SINTER_SK_FN struct SinterStreamK sinter_sk_plan(int units, long long items, int k_blocks, int min_piece) {
  struct SinterStreamK s;
  s.units = units;
  s.k_blocks = k_blocks;
  s.min_piece = min_piece;
  s.sk_items = units > 0 && items > units ? (int)(items % units) : 0;
  if (s.sk_items > 0 && !(sinter_sk_fits(&s, items) && 4 * ((long long)s.sk_items * k_blocks / units) <= 3ll * k_blocks)) {
    s.sk_items = 0;
  }
  return s;
}

#endif
