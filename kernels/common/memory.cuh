// Vector loads and stores between global memory and compute registers: N consecutive elements of
// storage type T move in 16-byte transactions where N * sizeof(T) allows (the caller guarantees
// the alignment), and are converted to or from the compute type on the way.
#pragma once

#include "common/types.cuh"

template <int kBytes> struct Chunk;
template <> struct Chunk<16> { typedef uint4 type; };
template <> struct Chunk<8> { typedef uint2 type; };
template <> struct Chunk<4> { typedef u32 type; };
template <> struct Chunk<2> { typedef u16 type; };
template <> struct Chunk<1> { typedef u8 type; };

template <int kTotal>
struct ChunkBytes {
  static constexpr int value = kTotal % 16 == 0 ? 16 : kTotal % 8 == 0 ? 8 : kTotal % 4 == 0 ? 4
                               : kTotal % 2 == 0 ? 2 : 1;
};

// Reads N elements starting at p (aligned to the chunk size) through the read-only path, as
// they are stored.
template <typename T, int N>
__device__ __forceinline__ void load_raw(const T* p, T (&v)[N]) {
  constexpr int kBytes = ChunkBytes<N * static_cast<int>(sizeof(T))>::value;
  typedef typename Chunk<kBytes>::type C;
  constexpr int kChunks = N * static_cast<int>(sizeof(T)) / kBytes;
  union {
    C c[kChunks];
    T t[N];
  } u;
  const C* src = reinterpret_cast<const C*>(p);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) u.c[i] = ld_ro(src + i);
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = u.t[i];
}

// Converts a vector as loaded to the compute type. bf16 pairs convert from their 32-bit word:
// the low element is the word shifted up 16 bits, the high one the word with its low half
// cleared -- one instruction each, where converting element by element extracts each 16-bit
// half first (two instructions and register moves per element in the SASS). Bit-exact the same.
template <typename T, int N>
__device__ __forceinline__ void convert_vec(const T (&raw)[N], typename ComputeOf<T>::type (&v)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = load_as_compute<T>(raw[i]);
}
template <int N>
__device__ __forceinline__ void convert_vec(const bf16 (&raw)[N], float (&v)[N]) {
  if constexpr (N % 2 == 0) {
    union {
      bf16 t[N];
      u32 w[N / 2];
    } u;
#pragma unroll
    for (int i = 0; i < N; ++i) u.t[i] = raw[i];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      v[2 * i] = __uint_as_float(u.w[i] << 16);
      v[2 * i + 1] = __uint_as_float(u.w[i] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = to_float(raw[i]);
  }
}

// The same, converted to the compute type.
template <typename T, int N>
__device__ __forceinline__ void load_vec(const T* p, typename ComputeOf<T>::type (&v)[N]) {
  T raw[N];
  load_raw(p, raw);
  convert_vec(raw, v);
}

template <typename T, int N>
__device__ __forceinline__ void store_vec(T* p, const typename ComputeOf<T>::type (&v)[N]) {
  constexpr int kBytes = ChunkBytes<N * static_cast<int>(sizeof(T))>::value;
  typedef typename Chunk<kBytes>::type C;
  constexpr int kChunks = N * static_cast<int>(sizeof(T)) / kBytes;
  union {
    C c[kChunks];
    T t[N];
  } u;
#pragma unroll
  for (int i = 0; i < N; ++i) u.t[i] = store_from_compute<T>(v[i]);
  C* dst = reinterpret_cast<C*>(p);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) dst[i] = u.c[i];
}

template <typename T>
__device__ __forceinline__ typename ComputeOf<T>::type load_one(const T* p) {
  return load_as_compute<T>(*p);
}

template <typename T>
__device__ __forceinline__ void store_one(T* p, typename ComputeOf<T>::type v) {
  *p = store_from_compute<T>(v);
}
