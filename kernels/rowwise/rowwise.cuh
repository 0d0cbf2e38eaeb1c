// Row-wise regions: layernorm, rmsnorm, softmax or rope over the last axis (the row), with the
// region's pointwise prologue in front of the row op, its epilogue behind it, and exit reductions
// per row or over the whole tensor; or no row op at all (a pointwise region that ends in row
// reductions). The host (src/engines/jit/codegen_rowwise.cpp) generates:
//
//   Cfg    the kernel's structure, a struct of static constexpr fields:
//            kOp (RowOp), kThreads, kVec (elements per vector access), kItems (vectors per
//            thread when the row sits in registers), kIndex64, kLeadRank (collapsed dims above
//            the row), kInRegisters (the row is read once into registers; else streamed in
//            passes), kStaging (RowStaging) and kStages (row buffers of the bulk ring), kEps.
//   Args   the kernel's arguments: at least `i64 rows, cols` and `float inv_cols` (1 / cols,
//          rounded as the device would: a division there costs a subroutine call).
//   Fused  the region's fused expression, one object per CTA (its members live in registers):
//            begin_cta(a)                 exit accumulators, weights held in registers
//            begin_row(a, row, stage)     input row offsets, staged row pointers (stage: this
//                                         row's buffer, or null), row-exit accumulators
//            prologue<kStore>(a, row, k, c0, x)
//                                         x[kVec]: the row op's input at columns c0.. (vector k
//                                         of this thread); with kStore, the prologue's stored
//                                         values are written too
//            epilogue(a, row, k, c0, x, stats)
//                                         the anchor's output at c0.. from x[kVec] and the row
//                                         statistics: row_value<Cfg>(x[j], stats), then a norm's
//                                         weight and bias; the epilogue nodes, the stored outputs,
//                                         the exit accumulators. x: the prologue's values (in
//                                         registers: as the statistics left them; rope: its value)
//            end_row(a, row, scratch), end_cta(a, scratch)
//                                         the row and the CTA exit reductions
//            rope_factors(a, pair, cs, sn)
//                                         rope: cos and sin of a rotation pair
//            stage_bytes(a), stage_row_bulk(a, row, buffer, bar), stage_row_async(a, row, buffer)
//                                         staging: a row buffer's bytes, and a row's copies
//
// rowwise_row is the tile function: one row. rowwise_rows runs a CTA's rows: a persistent loop
// (row = blockIdx.x, + gridDim.x, ...) that also runs flat grids, one row per CTA. The host
// instantiates it in `extern "C" __global__ void sinter_region(const __grid_constant__ Args a)`.
#pragma once

#include "common/abi.h"
#include "common/async_copy.cuh"
#include "common/bulk_copy.cuh"
#include "common/index.cuh"
#include "common/math.cuh"
#include "common/memory.cuh"
#include "common/pdl.cuh"
#include "common/reduce.cuh"
#include "common/stream_memory.cuh"
#include "common/types.cuh"

enum class RowOp { none, layernorm, rmsnorm, softmax, rope };
// How the next rows' prologue inputs reach shared memory while this row computes: not at all,
// by cp.async (each thread its own vectors, double-buffered), or by cp.async.bulk (one thread a
// whole row, a ring of kStages buffers counted on mbarriers).
enum class RowStaging { none, cp_async, bulk };

// The bytes of a row buffer of a staged input of element type T (16-byte aligned rows).
template <class T, class Args>
__device__ __forceinline__ i64 row_buffer_bytes(const Args& a) {
  return (a.cols * static_cast<i64>(sizeof(T)) + 15) & ~static_cast<i64>(15);
}

// A row's two statistics (kernels below say which), and the row op's value of an element x from
// them: softmax's exp(x - max) / sum, a norm's (x - mean) / std or x / rms before its weight and
// bias. A row held in registers has x - mean and exp(x - max) there already.
struct RowStats {
  float stat0, stat1;
};
template <class Cfg>
__device__ __forceinline__ float row_value(float x, const RowStats& s) {
  if constexpr (Cfg::kOp == RowOp::layernorm) {
    return Cfg::kInRegisters ? x * s.stat1 : (x - s.stat0) * s.stat1;
  } else if constexpr (Cfg::kOp == RowOp::rmsnorm) {
    return x * s.stat1;
  } else if constexpr (Cfg::kOp == RowOp::softmax) {
    return Cfg::kInRegisters ? x * s.stat1 : exp2f((x - s.stat0) * 1.4426950408889634f) * s.stat1;
  } else {
    return x;  // rope's value, or no row op
  }
}

// The column of vector k of this thread in a register-resident row, and whether it lies in the
// row. The test compares k * kThreads * kVec with one per-thread value, cols - tid * kVec (32-bit
// where indices fit): with the columns themselves compared, the compiler keeps every vector's
// column in a 64-bit register across the row loop (the softmax kernel spilled).
template <class Cfg>
__device__ __forceinline__ i64 row_vector_column(int k) {
  return (static_cast<i64>(k) * Cfg::kThreads + threadIdx.x) * Cfg::kVec;
}
template <class Cfg, class Args>
__device__ __forceinline__ bool row_vector_in_row(const Args& a, int k) {
  if constexpr (Cfg::kIndex64) {
    return static_cast<i64>(k) * Cfg::kThreads * Cfg::kVec < a.cols - static_cast<i64>(threadIdx.x) * Cfg::kVec;
  } else {  // every index below 2^31
    return k * Cfg::kThreads * Cfg::kVec < static_cast<int>(a.cols) - static_cast<int>(threadIdx.x) * Cfg::kVec;
  }
}

// f(x) for each element x (by reference) of this thread's vectors of a register-resident row.
template <class Cfg, class Args, class F>
__device__ __forceinline__ void for_own_elements(const Args& a, float (&xs)[Cfg::kItems][Cfg::kVec], F&& f) {
#pragma unroll
  for (int k = 0; k < Cfg::kItems; ++k) {
    if (row_vector_in_row<Cfg>(a, k)) {
#pragma unroll
      for (int j = 0; j < Cfg::kVec; ++j) f(xs[k][j]);
    }
  }
}

// The row statistics from a row in registers: stat0 (the mean, or the max) and stat1 (the
// reciprocal standard deviation, rms or sum). Layernorm and softmax take two passes over the
// registers, each statistic one single-barrier block reduction, alternating between the two
// arrays of rowstat (see block_reduce_alternating); layernorm's second pass replaces x by x -
// mean (an exact two-pass variance), softmax's by exp(x - max). rmsnorm's one reduction is the
// guarded block_reduce: the single-barrier one made its persistent kernel 5% slower on the H200.
template <class Cfg, class Args>
__device__ __forceinline__ void row_statistics(const Args& a, float (&xs)[Cfg::kItems][Cfg::kVec], float& stat0,
                                               float& stat1, float* scratch) {
  const float inv_cols = a.inv_cols;
  if constexpr (Cfg::kOp == RowOp::layernorm) {
    __shared__ float rowstat[2][32];
    float s = 0.0f;
    for_own_elements<Cfg>(a, xs, [&](float& x) { s += x; });
    const float mean = block_reduce_alternating<kReduceSum>(s, rowstat[0]) * inv_cols;
    float q = 0.0f;
    for_own_elements<Cfg>(a, xs, [&](float& x) {
      const float d = x - mean;
      x = d;
      q += d * d;
    });
    stat0 = mean;
    stat1 = rsqrtf(block_reduce_alternating<kReduceSum>(q, rowstat[1]) * inv_cols + Cfg::kEps);
  } else if constexpr (Cfg::kOp == RowOp::rmsnorm) {
    float p = 0.0f;
    for_own_elements<Cfg>(a, xs, [&](float& x) { p += x * x; });
    stat1 = rsqrtf(block_reduce<kReduceSum>(p, scratch) * inv_cols + Cfg::kEps);
  } else if constexpr (Cfg::kOp == RowOp::softmax) {
    // max.NaN: a NaN element makes the row NaN, and a row of -inf comes out NaN (exp(-inf -
    // -inf)), as in the reference.
    __shared__ float rowstat[2][32];
    float m = reduce_identity<kReduceMax>();
    for_own_elements<Cfg>(a, xs, [&](float& x) { m = op_max(m, x); });
    m = block_reduce_alternating<kReduceMax>(m, rowstat[0]);
    const float ml = m * 1.4426950408889634f;
    float s = 0.0f;
    for_own_elements<Cfg>(a, xs, [&](float& x) {
      x = fast_exp2(fmaf(x, 1.4426950408889634f, -ml));
      s += x;
    });
    stat0 = m;
    stat1 = 1.0f / block_reduce_alternating<kReduceSum>(s, rowstat[1]);
  }
}

// One row held in registers: the prologue once per element, the statistics, the epilogue.
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void row_in_registers(const Args& a, i64 row, Fused& f, float* scratch) {
  static_assert(Cfg::kOp == RowOp::layernorm || Cfg::kOp == RowOp::rmsnorm || Cfg::kOp == RowOp::softmax,
                "only norms and softmax keep their rows in registers");
  float xs[Cfg::kItems][Cfg::kVec];
#pragma unroll
  for (int k = 0; k < Cfg::kItems; ++k) {
    if (row_vector_in_row<Cfg>(a, k)) f.template prologue<true>(a, row, k, row_vector_column<Cfg>(k), xs[k]);
  }
  RowStats stats{0.0f, 1.0f};
  row_statistics<Cfg>(a, xs, stats.stat0, stats.stat1, scratch);
#pragma unroll
  for (int k = 0; k < Cfg::kItems; ++k) {
    if (row_vector_in_row<Cfg>(a, k)) f.epilogue(a, row, k, row_vector_column<Cfg>(k), xs[k], stats);
  }
}

// A block reduction of update(p, x) over the row, recomputing the prologue (a streamed row).
template <class Cfg, int kKind, class Fused, class Args, class U>
__device__ __forceinline__ float row_pass(const Args& a, i64 row, Fused& f, float init, float* scratch, U&& update) {
  float p = init;
  for (i64 c0 = static_cast<i64>(threadIdx.x) * Cfg::kVec; c0 < a.cols; c0 += static_cast<i64>(Cfg::kThreads) * Cfg::kVec) {
    float x[Cfg::kVec];
    f.template prologue<false>(a, row, 0, c0, x);
#pragma unroll
    for (int j = 0; j < Cfg::kVec; ++j) update(p, x[j]);
  }
  return block_reduce<kKind>(p, scratch);
}

// Rope's value at column c0 (kVec is 1): x rotated with its partner, the element at the other
// end of its pair, whose x is the prologue recomputed there. Columns past 2 * rope_half pass.
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ float rope_value(const Args& a, i64 row, Fused& f, i64 c0, float x) {
  static_assert(Cfg::kVec == 1, "rope reads its partner element by element");
  const i64 half = a.rope_half;
  if (c0 >= 2 * half) return x;
  bool first;
  i64 pair, partner;
  if constexpr (Cfg::kRopeInterleaved) {
    pair = c0 / 2;
    first = (c0 % 2) == 0;
    partner = first ? c0 + 1 : c0 - 1;
  } else {
    first = c0 < half;
    pair = first ? c0 : c0 - half;
    partner = first ? c0 + half : c0 - half;
  }
  float other[1];
  f.template prologue<false>(a, row, 0, partner, other);
  float cs, sn;
  f.rope_factors(a, pair, cs, sn);
  return first ? x * cs - other[0] * sn : x * cs + other[0] * sn;
}

// One row streamed (too long for registers, or rope): a pass per statistic, then the output
// pass, each recomputing the prologue.
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void row_streamed(const Args& a, i64 row, Fused& f, float* scratch) {
  RowStats stats{0.0f, 1.0f};
  const float inv_cols = a.inv_cols;
  if constexpr (Cfg::kOp == RowOp::layernorm) {
    stats.stat0 = row_pass<Cfg, kReduceSum>(a, row, f, 0.0f, scratch, [](float& p, float x) { p += x; }) * inv_cols;
    const float mean = stats.stat0;
    stats.stat1 = rsqrtf(row_pass<Cfg, kReduceSum>(a, row, f, 0.0f, scratch,
                                                   [mean](float& p, float x) { p += (x - mean) * (x - mean); }) *
                             inv_cols +
                         Cfg::kEps);
  } else if constexpr (Cfg::kOp == RowOp::rmsnorm) {
    stats.stat1 = rsqrtf(
        row_pass<Cfg, kReduceSum>(a, row, f, 0.0f, scratch, [](float& p, float x) { p += x * x; }) * inv_cols + Cfg::kEps);
  } else if constexpr (Cfg::kOp == RowOp::softmax) {
    stats.stat0 = row_pass<Cfg, kReduceMax>(a, row, f, reduce_identity<kReduceMax>(), scratch,
                                            [](float& p, float x) { p = op_max(p, x); });
    const float max = stats.stat0;
    stats.stat1 = 1.0f / row_pass<Cfg, kReduceSum>(a, row, f, 0.0f, scratch, [max](float& p, float x) {
                    p += exp2f((x - max) * 1.4426950408889634f);
                  });
  }
  for (i64 c0 = static_cast<i64>(threadIdx.x) * Cfg::kVec; c0 < a.cols; c0 += static_cast<i64>(Cfg::kThreads) * Cfg::kVec) {
    float x[Cfg::kVec];
    f.template prologue<true>(a, row, 0, c0, x);
    if constexpr (Cfg::kOp == RowOp::rope) x[0] = rope_value<Cfg>(a, row, f, c0, x[0]);
    f.epilogue(a, row, 0, c0, x, stats);
  }
}

// No row op: the epilogue is the whole region, its row exits reduced at the end of the row.
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void row_pointwise(const Args& a, i64 row, Fused& f) {
  for (i64 c0 = static_cast<i64>(threadIdx.x) * Cfg::kVec; c0 < a.cols; c0 += static_cast<i64>(Cfg::kThreads) * Cfg::kVec) {
    const float none[Cfg::kVec] = {};
    f.epilogue(a, row, 0, c0, none, RowStats{0.0f, 1.0f});
  }
}

// The tile function: row `row` of the region. `stage` is this row's staged buffer (null when
// unstaged); `scratch` 33 floats of shared memory.
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void rowwise_row(const Args& a, i64 row, Fused& f, const char* stage, float* scratch) {
  f.begin_row(a, row, stage);
  if constexpr (Cfg::kOp == RowOp::none) {
    row_pointwise<Cfg>(a, row, f);
  } else if constexpr (Cfg::kInRegisters) {
    row_in_registers<Cfg>(a, row, f, scratch);
  } else {
    row_streamed<Cfg>(a, row, f, scratch);
  }
  f.end_row(a, row, scratch);
}

// The staging ring of a CTA: the next rows' staged inputs in flight while this one computes.
// The ring starts kStages - 1 rows ahead. Buffer s holds this CTA's rows s, s + kStages, ...;
// the k-th of them completes phase k of bars[s], so its wait parity flips each time the ring
// wraps.
template <class Cfg, class Fused>
struct RowRing {
  static_assert(Cfg::kStaging == RowStaging::none || Cfg::kInRegisters, "only rows held in registers are staged");
  static_assert(Cfg::kStaging != RowStaging::bulk || (Cfg::kStages >= 2 && Cfg::kStages <= 4),
                "the bulk ring holds 2 to 4 rows");
  char* smem;
  u64* bars;
  int stage = 0;    // the ring position of this CTA's next row
  u32 phase = 0;    // its wait parity
  i64 iteration = 0;

  template <class Args>
  __device__ __forceinline__ void start(const Args& a, char* buffers, u64* barriers) {
    smem = buffers;
    bars = barriers;
    if constexpr (Cfg::kStaging == RowStaging::bulk) {
      if (threadIdx.x == 0) {
        for (int s = 0; s < Cfg::kStages; ++s) mbarrier_init(&bars[s], 1);
        fence_barrier_init();
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int s = 0; s < Cfg::kStages - 1; ++s) {
          const i64 r = blockIdx.x + static_cast<i64>(s) * gridDim.x;
          if (r < a.rows) issue_bulk(a, r, s);
        }
      }
    } else if constexpr (Cfg::kStaging == RowStaging::cp_async) {
      if (blockIdx.x < a.rows) Fused::stage_row_async(a, blockIdx.x, smem);
      cp_async_commit();
    }
  }

  // Thread 0 only: starts the copies of `row` into buffer s, counted on bars[s].
  template <class Args>
  __device__ __forceinline__ void issue_bulk(const Args& a, i64 row, int s) {
    Fused::stage_row_bulk(a, row, smem + s * Fused::stage_bytes(a), &bars[s]);
  }

  // Issues the copies of the row kStages - 1 rows ahead of `row`, waits for `row`'s and returns
  // its buffer (null when unstaged).
  template <class Args>
  __device__ __forceinline__ const char* next(const Args& a, i64 row) {
    if constexpr (Cfg::kStaging == RowStaging::bulk) {
      // Refilling buffer (this - 1) is safe: every thread finished reading it before the block
      // reduction of the previous row, whose barrier thread 0 has passed to get here. (The ring
      // position and parity are counters: a 64-bit division by kStages cost ~20 instructions.)
      const int s = stage;
      if (threadIdx.x == 0) {
        const i64 ahead = row + static_cast<i64>(Cfg::kStages - 1) * gridDim.x;
        if (ahead < a.rows) issue_bulk(a, ahead, s == 0 ? Cfg::kStages - 1 : s - 1);
      }
      mbarrier_wait(&bars[s], phase);  // this row has landed
      if (++stage == Cfg::kStages) {
        stage = 0;
        phase ^= 1u;
      }
      return smem + s * Fused::stage_bytes(a);
    } else if constexpr (Cfg::kStaging == RowStaging::cp_async) {
      // Each thread waits for its own copies only: it reads back only what it copied itself.
      const int s = static_cast<int>(iteration++ & 1);
      const i64 ahead = row + gridDim.x;
      if (ahead < a.rows) Fused::stage_row_async(a, ahead, smem + (s ^ 1) * Fused::stage_bytes(a));
      cp_async_commit();
      cp_async_wait<1>();  // this row's own chunks have landed
      return smem + s * Fused::stage_bytes(a);
    } else {
      return nullptr;
    }
  }
};

// A CTA's rows: blockIdx.x, + gridDim.x, ... (a persistent grid, or a flat one of a row each).
template <class Cfg, class Fused, class Args>
__device__ __forceinline__ void rowwise_rows(const Args& a) {
  static_assert(Cfg::kThreads % 32 == 0 && Cfg::kThreads <= 1024, "whole warps, one CTA");
  static_assert(Cfg::kOp != RowOp::rope || !Cfg::kInRegisters, "rope streams its rows");
  __shared__ float scratch[33];
  RowRing<Cfg, Fused> ring;
  if constexpr (Cfg::kStaging == RowStaging::bulk) {
    extern __shared__ __align__(128) char bulk_buffers[];
    __shared__ __align__(8) u64 bars[Cfg::kStages];
    ring.start(a, bulk_buffers, bars);
  } else if constexpr (Cfg::kStaging == RowStaging::cp_async) {
    extern __shared__ __align__(16) char async_buffers[];
    ring.start(a, async_buffers, nullptr);
  }
  Fused f;
  f.begin_cta(a);
  for (i64 row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const char* stage = ring.next(a, row);
    rowwise_row<Cfg>(a, row, f, stage, scratch);
  }
  f.end_cta(a, scratch);
}
