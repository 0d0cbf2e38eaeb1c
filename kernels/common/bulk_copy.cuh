// cp.async.bulk (sm_90): ONE thread copies a whole contiguous row (a multiple of 16 bytes, both
// addresses 16-byte aligned) from global into shared memory through the copy engine; the bytes
// are counted on an mbarrier (complete_tx), and every thread of the CTA waits on its phase.
// Compared with cp.async (16 bytes per thread-instruction, one wait per thread) a row costs one
// instruction, so a CTA can keep several rows in flight while its threads reduce and store.
// PTX ISA 9.7.9.25.4 (cp.async.bulk) and 9.7.13.15 (mbarrier).
#pragma once

#include "common/hopper.cuh"
#include "common/types.cuh"

// Starts the copy of `bytes` bytes; its completion counts against `bar`'s expected transaction
// bytes (set by mbarrier_arrive_expect_tx before or after, within the same phase). A CTA launched
// without a cluster is its own cluster, so a CTA shared address is a valid ::cluster address.
__device__ __forceinline__ void bulk_copy_g2s(void* smem, const void* gmem, u32 bytes, u64* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_addr(smem)),
      "l"(gmem), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

// The same, with an L2 evict-first policy: for rows read exactly once, so they leave L2 before
// data that is reused (a norm's weights) does.
__device__ __forceinline__ void bulk_copy_g2s_evict_first(void* smem, const void* gmem, u32 bytes, u64* bar) {
  u64 policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_addr(smem)),
      "l"(gmem), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}
