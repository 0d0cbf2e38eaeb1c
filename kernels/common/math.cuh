// The pointwise functions of Sinter's ops, in float, matching the CPU reference's definitions
// (src/ref/pointwise.cpp): NaN propagates through max and min; gelu is x Phi(x) (the erf GELU)
// through a rational approximation (within 3.3e-6 relative for |x| <= 9), see op_gelu, or for a
// 16-bit result through a cheaper polynomial one (5.4e-5), see op_gelu_lowp.
#pragma once

#include "common/types.cuh"

// gelu(x) = x Phi(x), Phi the standard normal CDF, from its tail T(a) = Phi(-a), a = |x|:
// Phi(x) = 1 - T(a) for x >= 0 and T(a) below. T(a) = exp(-a^2 / 2) R(a), where R (the Mills
// ratio over sqrt(2 pi)) is smooth and decays like 1 / a; a (4, 5) rational fits it on [0, 13]
// within 2e-8 relative with its f32 coefficients (minimax; bench/experiments/gelu_fit.py). With one reciprocal and one
// exp2 on the SFU that is 19 SASS instructions, where 0.5 x (1 + erff(x / sqrt 2)) takes ~29
// (two polynomials whose coefficients erff selects per element): in a matmul epilogue those are
// time the tensor cores wait (H200, 4096^3 bf16 + bias + GELU + amax on the coop kernel: 0.2012
// ms with the erf form, 0.1917 with this one). Accuracy in f32 against the exact value, measured
// on the H200 (GpuRegions.GeluIsAccurateElementByElement): 6.1e-7 relative for
// |x| <= 3, 1.9e-6 to 6, 3.3e-6 to 9 (f32 rounding of a^2 / 2 dominates), where 1 + erff(x /
// sqrt 2) loses the tail below x ~ -2 to cancellation (2e-5 relative at x = -3). a is clamped
// to 20, where T is 0: x = +inf gives +inf, -inf gives NaN (as the erf form: -inf * 0), NaN
// stays NaN through the final product.
__device__ __forceinline__ float op_gelu(float x) {
  const float a = fminf(fabsf(x), 20.0f);
  const float p = fmaf(fmaf(fmaf(fmaf(0.00399399968f, a, 0.039806515f), a, 0.18077746f), a, 0.434967667f), a, 0.5f);
  const float q = fmaf(fmaf(fmaf(fmaf(fmaf(0.0100113219f, a, 0.0997877941f), a, 0.462983459f), a, 1.19227898f), a,
                            1.66782022f),
                       a, 1.0f);
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(q));
  float e;  // exp(-a^2 / 2) = 2^(-a^2 log2(e) / 2)
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"((a * -0.72134752044448170f) * a));
  const float tail = p * r * e;
  return x * (x >= 0.0f ? 1.0f - tail : tail);
}
// gelu for a result that is a 16-bit (or 8-bit) float tensor: the rounding to that type is
// 2^-9 (bf16) or 2^-11 (f16) relative, so op_gelu's f32 accuracy buys nothing there, and in a
// matmul epilogue every instruction an element is time the tensor cores wait. Phi(-a) = 2^q(a),
// q a degree-8 polynomial fit of log2 Phi(-a) on [0, 13.2] (bench/experiments/gelu_lowp_fit.py):
// one ex2 and 8 FFMA, no reciprocal. gelu(x) = relu(x) - a Phi(-a), a = |x|, which keeps the
// negative tail's relative accuracy (no 1 - Phi cancellation). Relative error in the f32
// model: 5.4e-5 for |x| <= 9 (at most 0.11 of an f16 ulp, 0.014 of a bf16 one), 2.7e-4 to 11, 1.4e-3
// beyond (where |gelu| < 3e-27). H200, 4096^3 bf16 + bias + GELU + amax in the coop kernel's
// epilogue: 1.078x cuBLASLt's bare GEMM against 1.100 with op_gelu;
// at a = 13.2, q = -130.8 and ex2.ftz gives 0 (a is clamped there): x >= 13.2 gives x and x <=
// -13.2 gives 0 (the exact value is below 1e-38). Special values as op_gelu: +inf gives +inf,
// -inf NaN (relu's x - min(x, 0) is -inf + inf there), NaN NaN (min.NaN).
__device__ __forceinline__ float op_gelu_lowp(float x) {
  float a;
  asm("min.NaN.f32 %0, %1, 0f41533333;" : "=f"(a) : "f"(fabsf(x)));  // min(|x|, 13.2)
  float q = fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(4.12210035e-08f, a, -2.39005362e-06f), a, 5.99675877e-05f), a,
                                                -0.000864140806f),
                                           a, 0.00805907324f),
                                      a, -0.052635055f),
                                 a, -0.460230112f),
                            a, -1.15038037f),
                       a, -1.00006819f);
  float t;  // Phi(-a)
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(q));
  float m;
  asm("min.NaN.f32 %0, %1, 0f00000000;" : "=f"(m) : "f"(x));
  return fmaf(-a, t, x - m);
}
// gelu for a bf16 (or 8-bit) result: op_gelu_lowp's form with a degree-7 q (one FFMA fewer),
// 2.3e-4 relative for |x| <= 9 in the f32 model (0.12 of bf16's 2^-9 rounding; too coarse for
// f16's 2^-11, which keeps op_gelu_lowp), 6e-3 to 11 and 1.1e-2 beyond (|gelu| < 1e-19 there).
// Special values as op_gelu_lowp.
__device__ __forceinline__ float op_gelu_bf16(float x) {
  float a;
  asm("min.NaN.f32 %0, %1, 0f41533333;" : "=f"(a) : "f"(fabsf(x)));  // min(|x|, 13.2)
  float q = fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(-5.39308303e-07f, a, 2.65417511e-05f), a, -0.000552374055f), a,
                                          0.00645958399f),
                                     a, -0.0482069179f),
                                a, -0.466216564f),
                           a, -1.14731097f),
                      a, -1.00032604f);
  float t;  // Phi(-a)
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(q));
  float m;
  asm("min.NaN.f32 %0, %1, 0f00000000;" : "=f"(m) : "f"(x));
  return fmaf(-a, t, x - m);
}
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
