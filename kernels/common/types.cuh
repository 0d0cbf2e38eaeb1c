// Element types for run-time compiled kernels. Kernels include no CUDA toolkit headers (they are
// large and slow to compile); storage types are plain integers and every conversion is one PTX
// instruction with the rounding Sinter's CPU reference uses: round to nearest even, fp8
// saturating to the largest finite value.
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// Loads of data a kernel does not write take the read-only path (ld.global.nc, __ldg) in a
// standalone kernel. Inside a megakernel (SINTER_MEGAKERNEL) an input of one task may be written
// by another task of the same launch, which the non-coherent path need not see: there every such
// load is a plain ld.global, ordered by the task counters' acquire (kernels/mega/megakernel.cuh).
#ifdef SINTER_MEGAKERNEL
#define SINTER_LD_RO "ld.global"
#else
#define SINTER_LD_RO "ld.global.nc"
#endif
template <typename T>
__device__ __forceinline__ T ld_ro(const T* p) {
#ifdef SINTER_MEGAKERNEL
  return *p;
#else
  return __ldg(p);
#endif
}

struct bf16 { u16 bits; };
struct f16 { u16 bits; };
struct fp8e4m3 { u8 bits; };
struct fp8e5m2 { u8 bits; };

// ---- to float ----------------------------------------------------------------------------------
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __uint_as_float(static_cast<u32>(x.bits) << 16); }
__device__ __forceinline__ float to_float(f16 x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}
__device__ __forceinline__ float to_float(fp8e4m3 x) {
  u32 h2;  // two f16 values; the low one is ours
  const u16 packed = x.bits;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(packed));
  return to_float(f16{static_cast<u16>(h2 & 0xffffu)});
}
__device__ __forceinline__ float to_float(fp8e5m2 x) {
  // e5m2 is the top byte of an f16 with the same exponent bias
  return to_float(f16{static_cast<u16>(static_cast<u16>(x.bits) << 8)});
}
__device__ __forceinline__ float to_float(int x) { return static_cast<float>(x); }
__device__ __forceinline__ float to_float(i64 x) { return static_cast<float>(x); }
__device__ __forceinline__ float to_float(bool x) { return x ? 1.0f : 0.0f; }

// ---- from float (round to nearest even; fp8 saturates; integers truncate and saturate) --------
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_float<bf16>(float x) {
  u16 b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(x));
  return bf16{b};
}
template <> __device__ __forceinline__ f16 from_float<f16>(float x) {
  u16 b;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(x));
  return f16{b};
}
template <> __device__ __forceinline__ fp8e4m3 from_float<fp8e4m3>(float x) {
  u16 b;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(b) : "f"(0.0f), "f"(x));
  return fp8e4m3{static_cast<u8>(b & 0xffu)};
}
template <> __device__ __forceinline__ fp8e5m2 from_float<fp8e5m2>(float x) {
  u16 b;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(b) : "f"(0.0f), "f"(x));
  return fp8e5m2{static_cast<u8>(b & 0xffu)};
}
template <> __device__ __forceinline__ int from_float<int>(float x) {
  int r;
  asm("cvt.rzi.sat.s32.f32 %0, %1;" : "=r"(r) : "f"(x));  // NaN -> 0
  return r;
}
template <> __device__ __forceinline__ i64 from_float<i64>(float x) {
  i64 r;
  asm("cvt.rzi.sat.s64.f32 %0, %1;" : "=l"(r) : "f"(x));
  return r;
}
template <> __device__ __forceinline__ bool from_float<bool>(float x) { return x != 0.0f || x != x; }

// Packs two floats into a bf16x2 / f16x2 register with one instruction (the hi value first).
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ u32 pack_f16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// ---- the register type each storage type computes in -----------------------------------------
// Floats compute in float; integers and bools keep their own type so that large integers stay
// exact.
template <typename T> struct ComputeOf { typedef float type; };
template <> struct ComputeOf<int> { typedef int type; };
template <> struct ComputeOf<i64> { typedef i64 type; };
template <> struct ComputeOf<bool> { typedef bool type; };

template <typename T>
__device__ __forceinline__ typename ComputeOf<T>::type load_as_compute(T x) { return to_float(x); }
template <> __device__ __forceinline__ int load_as_compute<int>(int x) { return x; }
template <> __device__ __forceinline__ i64 load_as_compute<i64>(i64 x) { return x; }
template <> __device__ __forceinline__ bool load_as_compute<bool>(bool x) { return x; }

// A compute value of a tensor of storage type T goes back to storage (floats round here).
template <typename T>
__device__ __forceinline__ T store_from_compute(typename ComputeOf<T>::type x) { return from_float<T>(x); }
template <> __device__ __forceinline__ int store_from_compute<int>(int x) { return x; }
template <> __device__ __forceinline__ i64 store_from_compute<i64>(i64 x) { return x; }
template <> __device__ __forceinline__ bool store_from_compute<bool>(bool x) { return x; }

// Rounds a float compute value to what storage type T can hold (a tensor boundary inside a fused
// region: the value a stored tensor would have had).
template <typename T>
__device__ __forceinline__ float round_to(float x) { return to_float(from_float<T>(x)); }
template <> __device__ __forceinline__ float round_to<float>(float x) { return x; }
