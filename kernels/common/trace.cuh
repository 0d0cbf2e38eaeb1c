// Per-CTA time stamps for diagnostics (kernels whose config asks for them only). One
// thread a CTA takes SINTER_TRACE_STAMPS stamps of the GPU-wide %globaltimer (ns, comparable across
// SMs) and of its SM's clock64 (cycles) into shared memory, and at its exit copies them, with
// its SM's id, to the module's global sinter_trace, which the host reads after a chosen launch
// (jit_engine.cpp, SINTER_TRACE_FILE). Shared memory first: before the kernel's PDL wait the
// previous launch may still be writing its rows. A global array, not printf: a call in the
// kernel makes ptxas serialize every wgmma (C7510).
#pragma once

#include "common/trace_abi.h"
#include "common/types.cuh"

constexpr int kTraceWords = SINTER_TRACE_WORDS;  // SM id, then (ns, cycles) per stamp
constexpr int kTraceMaxCtas = SINTER_TRACE_MAX_CTAS;
__device__ u64 sinter_trace[kTraceMaxCtas * kTraceWords];  // named SINTER_TRACE_GLOBAL

// Stamp i into this CTA's shared row.
__device__ __forceinline__ void sinter_trace_stamp(u64 (&row)[kTraceWords], int i) {
  u64 ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  row[1 + 2 * i] = ns;
  row[2 + 2 * i] = static_cast<u64>(clock64());
}

// The shared row to the global array, with the SM's id (CTAs past kTraceMaxCtas write nothing).
__device__ __forceinline__ void sinter_trace_flush(u64 (&row)[kTraceWords]) {
  if (blockIdx.x >= kTraceMaxCtas) return;
  u32 sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  row[0] = sm;
  u64* out = sinter_trace + static_cast<u64>(blockIdx.x) * kTraceWords;
  for (int i = 0; i < kTraceWords; ++i) out[i] = row[i];
}

// One CTA's stamps, taken by one of its threads, as a kernel's Trace type (the direct-epilogue
// Hopper GEMM's config; gemm/sm90_direct_config.cuh's Sm90NoTrace takes none).
struct SinterCtaTrace {
  static constexpr bool kOn = true;
  __device__ __forceinline__ static u64 (&row())[kTraceWords] {
    __shared__ u64 r[kTraceWords];
    return r;
  }
  __device__ __forceinline__ static void stamp(int i) { sinter_trace_stamp(row(), i); }
  __device__ __forceinline__ static void flush() { sinter_trace_flush(row()); }
};
