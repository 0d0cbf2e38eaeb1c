// cp.async (sm_80+): 16-byte copies from global to shared memory that complete in the
// background, so a CTA can fetch its next row while it reduces the current one. Each thread
// later reads back only what it copied itself, so waiting on its own groups is enough: no barrier.
#pragma once

#include "common/memory.cuh"
#include "common/types.cuh"

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  const u32 s = static_cast<u32>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Copies N elements (N * sizeof(T) a multiple of 16, both addresses 16-byte aligned).
template <typename T, int N>
__device__ __forceinline__ void cp_async_vec(T* smem, const T* gmem) {
  static_assert((N * sizeof(T)) % 16 == 0, "cp.async moves 16-byte pieces");
#pragma unroll
  for (int i = 0; i < static_cast<int>(N * sizeof(T) / 16); ++i) {
    cp_async_16(reinterpret_cast<char*>(smem) + 16 * i, reinterpret_cast<const char*>(gmem) + 16 * i);
  }
}

// Reads N elements from shared memory (aligned to their total size, at most 16 bytes per load)
// into compute registers.
template <typename T, int N>
__device__ __forceinline__ void load_vec_shared(const T* p, typename ComputeOf<T>::type (&v)[N]) {
  constexpr int kBytes = ChunkBytes<N * static_cast<int>(sizeof(T))>::value;
  typedef typename Chunk<kBytes>::type C;
  constexpr int kChunks = N * static_cast<int>(sizeof(T)) / kBytes;
  union {
    C c[kChunks];
    T t[N];
  } u;
  const C* src = reinterpret_cast<const C*>(p);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) u.c[i] = src[i];
  convert_vec(u.t, v);
}
