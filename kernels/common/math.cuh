// The pointwise functions of Sinter's ops, in float, matching the CPU reference's definitions
// (src/ref/pointwise.cpp): NaN propagates through max and min, gelu uses the exact erf.
#pragma once

#include "common/types.cuh"

__device__ __forceinline__ float op_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float op_gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float op_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float op_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float op_rsqrt(float x) { return 1.0f / sqrtf(x); }
// NaN-propagating max/min: one FMNMX.NAN on sm_80+ (max.NaN / min.NaN return the canonical NaN
// when either input is NaN) where the portable form costs a NaN test, a select and an add.
__device__ __forceinline__ float op_max(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a != a || b != b) ? a + b : fmaxf(a, b);
#endif
}
__device__ __forceinline__ float op_min(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a != a || b != b) ? a + b : fminf(a, b);
#endif
}
// One FMNMX.NAN instead of a compare and a select (x < 0 ? 0 : x); NaN stays NaN. relu(-0.0) is
// +0.0 here where the reference keeps -0.0: equal as values, only a sign test could tell.
__device__ __forceinline__ float op_relu(float x) { return op_max(x, 0.0f); }
__device__ __forceinline__ int op_max(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ int op_min(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ i64 op_max(i64 a, i64 b) { return a > b ? a : b; }
__device__ __forceinline__ i64 op_min(i64 a, i64 b) { return a < b ? a : b; }
__device__ __forceinline__ int op_relu(int x) { return x < 0 ? 0 : x; }
__device__ __forceinline__ i64 op_relu(i64 x) { return x < 0 ? 0 : x; }

// 2^x through the SFU's ex2.approx (relative error ~2^-22, subnormal results flushed to 0): one
// instruction where exp2f adds range fix-ups. For softmax, whose terms below 2^-126 of the row
// maximum vanish in any output dtype anyway.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
