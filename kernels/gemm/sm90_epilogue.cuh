// The pieces a generated epilogue functor of the direct-epilogue Hopper GEMM is written in
// (src/engines/jit/codegen_sm90_epilogue.cpp, gemm/sm90_gemm_direct.cuh): operand pair loads,
// element pair stores, 16-bit packing and its packed amax, the wgmma fragment staged with
// stmatrix for 16-byte rows or TMA stores, and the held words of a tile whose stores wait for the
// next tile's main loop.
#pragma once

#include "common/abi.h"
#include "common/hopper.cuh"
#include "common/math.cuh"
#include "common/memory.cuh"
#include "common/types.cuh"

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

// Ends the live range of held words no one will read (a partial tile: its epilogue runs in line
// and nothing is held after it), with one real move each. The compiler cannot tell from the
// run-time `holding` flag that the previous tile's words, stored under this tile's first
// k-blocks, are dead here, so without this it keeps all of them through the partial tile's
// epilogue: beside the 128 accumulators that spilled the 128x256 kernels (a residual + bias +
// GELU + amax epilogue 240 bytes, some of it in the main loop). An empty asm with "=r" outputs
// defines nothing in the PTX that ptxas allocates from, so it does not do this.
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
