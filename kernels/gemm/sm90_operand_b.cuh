// The B operand of the Hopper GEMMs in its two shared-memory layouts, chosen at compile time:
//   K-major (kMnMajor false): b[k, n] with k contiguous, i.e. an [N, K] weight. The tensor map
//     is {K, N, batch} and one {64 K, cols} box fills a stage's B tile: rows of 128 bytes (one
//     column's 64 k values), 128-byte swizzle. A k step of 16 moves 32 bytes along the row.
//   MN-major (kMnMajor true): b[k, n] with n contiguous, i.e. a row-major [K, N] weight as most
//     frameworks store a linear layer's. The tensor map is {N, K, batch}; a {64 N, 64 K} box is
//     one swizzle "atom" column of 64 K rows x 128 bytes, and a tile of `cols` columns is cols / 64
//     such boxes, kSm90AtomBytes apart. wgmma reads it with imm-trans-b set; a k step of 16 moves
//     16 rows, 2048 bytes. (docs/research-wgmma-mn-major-b.md has the derivation.)
// Both fill the same bytes per stage (cols x 64 x 2) and zero-fill outside the matrix.
#pragma once

#include "common/hopper.cuh"

constexpr int kSm90AtomBytes = 64 * 128;  // one {64 N, 64 K} box of 16-bit values

// How far one k step (16 16-bit or 32 8-bit elements) moves the start of a stage's B tile: 32
// bytes along a K-major row, 16 rows (2048 bytes) of an MN-major atom.
template <bool kMnMajor>
constexpr int kSm90BKStepBytes = kMnMajor ? 2048 : 32;

// The descriptor of k step `k16` (0..3) of a stage's B tile starting at `b`.
template <bool kMnMajor>
__device__ __forceinline__ u64 sm90_b_desc(const char* b, int k16) {
  if constexpr (kMnMajor) {
    return wgmma_desc_mn_sw128(b + kSm90BKStepBytes<kMnMajor> * k16);
  } else {
    return wgmma_desc_k_sw128(b + kSm90BKStepBytes<kMnMajor> * k16);
  }
}

// The same step in descriptor address units (16 bytes):
// sm90_b_desc(b, k16) == sm90_b_desc(b, 0) + sm90_b_desc_step<kMnMajor>(k16).
template <bool kMnMajor>
__device__ __forceinline__ constexpr u64 sm90_b_desc_step(int k16) {
  return static_cast<u64>(kSm90BKStepBytes<kMnMajor> / 16) * k16;
}

// Loads columns n0 .. n0 + kCols - 1, k rows k0 .. k0 + 63 of batch `batch` into `dst`.
template <bool kMnMajor, int kCols>
__device__ __forceinline__ void sm90_load_b(char* dst, const SinterTensorMap* map, u64* bar, int k0, int n0,
                                            int batch) {
  if constexpr (kMnMajor) {
    static_assert(kCols % 64 == 0, "MN-major B tiles are whole 64-column atoms");
#pragma unroll
    for (int j = 0; j < kCols / 64; ++j) tma_load_3d(dst + j * kSm90AtomBytes, map, bar, n0 + 64 * j, k0, batch);
  } else {
    tma_load_3d(dst, map, bar, k0, n0, batch);
  }
}

// The same into the same offset of every CTA in `cta_mask` (a cluster's multicast half of B).
template <bool kMnMajor, int kCols>
__device__ __forceinline__ void sm90_load_b_multicast(char* dst, const SinterTensorMap* map, u64* bar, int k0, int n0,
                                                      int batch, u16 cta_mask) {
  if constexpr (kMnMajor) {
    static_assert(kCols % 64 == 0, "MN-major B tiles are whole 64-column atoms");
#pragma unroll
    for (int j = 0; j < kCols / 64; ++j) {
      tma_load_3d_multicast(dst + j * kSm90AtomBytes, map, bar, n0 + 64 * j, k0, batch, cta_mask);
    }
  } else {
    tma_load_3d_multicast(dst, map, bar, k0, n0, batch, cta_mask);
  }
}
