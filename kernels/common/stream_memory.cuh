// Streaming variants of load_raw / store_vec (memory.cuh) for data a kernel touches exactly once:
// loads skip L1 allocation (ld.global.nc.L1::no_allocate) and ask L2 for 256-byte sectors ahead;
// stores are cache-streaming (st.global.cs: evict first), so neither displaces what IS reused
// (a norm's weights, a broadcast operand) from L1/L2. Only 16-byte chunks take the hinted path;
// narrower vectors fall back to the plain accesses (they are rare and not bandwidth-bound).
#pragma once

#include "common/memory.cuh"
#include "common/types.cuh"

__device__ __forceinline__ uint4 ld_stream_16(const void* p) {
  uint4 v;
  asm volatile(SINTER_LD_RO ".L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void st_stream_16(void* p, const uint4& v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

template <typename T, int N>
__device__ __forceinline__ void load_raw_stream(const T* p, T (&v)[N]) {
  constexpr int kTotal = N * static_cast<int>(sizeof(T));
  if constexpr (kTotal % 16 == 0) {
    union {
      uint4 c[kTotal / 16];
      T t[N];
    } u;
#pragma unroll
    for (int i = 0; i < kTotal / 16; ++i) u.c[i] = ld_stream_16(reinterpret_cast<const char*>(p) + 16 * i);
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = u.t[i];
  } else {
    load_raw(p, v);
  }
}

template <typename T, int N>
__device__ __forceinline__ void load_vec_stream(const T* p, typename ComputeOf<T>::type (&v)[N]) {
  T raw[N];
  load_raw_stream(p, raw);
  convert_vec(raw, v);
}

template <typename T, int N>
__device__ __forceinline__ void store_vec_stream(T* p, const typename ComputeOf<T>::type (&v)[N]) {
  constexpr int kTotal = N * static_cast<int>(sizeof(T));
  if constexpr (kTotal % 16 == 0) {
    union {
      uint4 c[kTotal / 16];
      T t[N];
    } u;
#pragma unroll
    for (int i = 0; i < N; ++i) u.t[i] = store_from_compute<T>(v[i]);
#pragma unroll
    for (int i = 0; i < kTotal / 16; ++i) st_stream_16(reinterpret_cast<char*>(p) + 16 * i, u.c[i]);
  } else {
    store_vec(p, v);
  }
}
