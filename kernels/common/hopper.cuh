// Hopper (sm_90a) primitives as PTX, named by the scope that runs them: mbarriers, TMA tensor
// loads, wgmma (warpgroup MMA from shared memory) and warpgroup register reallocation. Written
// from the PTX ISA (9.7.15 wgmma, 9.7.9.25 cp.async.bulk.tensor, 9.7.13.15 mbarrier).
#pragma once

#include "common/types.cuh"

// The 128-byte CUtensorMap, opaque to device code; lives in the __grid_constant__ Args.
struct alignas(64) SinterTensorMap {
  u64 opaque[16];
};

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// ---- mbarrier (one thread inits; any thread waits) -------------------------------------------------
__device__ __forceinline__ void mbarrier_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
// Makes the inits visible to the async proxy (TMA) and to the other threads.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
// Raises the current phase's expected transaction bytes without arriving: the loads that bring
// them may be issued before the arrival that ends the phase.
__device__ __forceinline__ void mbarrier_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// Arrives on the mbarrier at shared::cta address `local` (smem_addr of it).
__device__ __forceinline__ void mbarrier_arrive_at(u32 local) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(local) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(u64* bar) { mbarrier_arrive_at(smem_addr(bar)); }
// Waits until the phase with parity `parity` has completed (a fresh barrier counts the phase
// before it, parity 1, as completed).
__device__ __forceinline__ void mbarrier_wait(u64* bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
// Ends the mbarrier at `bar` (no thread waits on it any more): before its memory is used otherwise.
__device__ __forceinline__ void mbarrier_inval(u64* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// Whether the phase with parity `parity` has completed, without waiting.
__device__ __forceinline__ bool mbarrier_test_wait(u64* bar, u32 parity) {
  u32 done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// ---- TMA (one thread issues) -----------------------------------------------------------------------
// A 3D box at (c0 innermost, c1, c2) into shared memory; completes `bar`'s transaction bytes.
// Out-of-bounds elements are written as zeros, so partial tiles need no predication.
__device__ __forceinline__ void tma_load_3d(void* dst, const SinterTensorMap* map, u64* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
      ::"r"(smem_addr(dst)), "l"(reinterpret_cast<u64>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// The same box written to the same shared-memory offset in every CTA of `cta_mask` (cluster
// ranks), completing each destination CTA's barrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const SinterTensorMap* map, u64* bar, int c0, int c1,
                                                      int c2, u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;"
      ::"r"(smem_addr(dst)), "l"(reinterpret_cast<u64>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
      "h"(cta_mask)
      : "memory");
}

// ---- TMA stores (one thread issues; bulk async-groups are tracked per thread) -------------------------
// Shared memory written by ordinary stores (st.shared, stmatrix) is visible to a TMA store only
// after the writing threads' proxy fence and a barrier with the issuing thread.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// The 3D box at (c0 innermost, c1, c2) from shared memory `src` to global memory; elements
// outside the tensor are not written. Joins the issuing thread's current bulk async-group.
__device__ __forceinline__ void tma_store_3d(const SinterTensorMap* map, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];"
               ::"l"(reinterpret_cast<u64>(map)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until at most kPending of this thread's newest bulk groups still read their shared memory.
template <int kPending>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
// Until every bulk group of this thread has completed (its writes performed).
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// ---- cluster --------------------------------------------------------------------------------------
__device__ __forceinline__ u32 cluster_cta_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster; orders shared-memory writes (barrier inits) before
// the other CTAs' accesses to them.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The shared::cluster address of the object at `p`'s offset in the shared memory of cluster CTA
// `rank` (mapa). An mbarrier's address from here, plus 8 per barrier, names its neighbours too.
__device__ __forceinline__ u32 cluster_smem_addr(const void* p, u32 rank) {
  u32 remote;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(p)), "r"(rank));
  return remote;
}
// Arrives on the mbarrier at shared::cluster address `remote` (from cluster_smem_addr). Default
// (CTA-scope) semantics: a ".release.cluster" arrive costs a GPU-wide fence (MEMBAR.ALL.GPU in
// SASS) per call, and what it publishes here (our wgmma are done reading a stage) needs none.
__device__ __forceinline__ void mbarrier_arrive_cluster_at(u32 remote) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

__device__ __forceinline__ void tma_prefetch_descriptor(const SinterTensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(map)) : "memory");
}

// ---- warpgroup ---------------------------------------------------------------------------------------
template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}
// Named barrier over `threads` threads (a multiple of 32); id 0 is __syncthreads'. Inside a
// megakernel a task's __syncthreads is barrier 15 over the task's threads (mega/megakernel.cuh),
// and barrier 0 the dispatcher's over the whole CTA: a task's barrier 0 becomes 15.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
#ifdef SINTER_MEGAKERNEL
  if (id == 0) id = 15;
#endif
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Shared-memory matrix descriptor of a K-major tile with 128-byte swizzle, as TMA writes it with
// CU_TENSOR_MAP_SWIZZLE_128B and a 64-element (128-byte) inner box: rows of 128 bytes, 8-row
// groups 1024 bytes apart (SBO); the leading offset is unused for swizzled K-major layouts. The
// tile base must be 1024-byte aligned; a k step inside the 128-byte row advances the start address.
__device__ __forceinline__ u64 wgmma_desc_k_sw128(const void* p) {
  const u64 addr = smem_addr(p);
  u64 d = (addr & 0x3FFFFull) >> 4;
  d |= u64{1} << 16;             // leading byte offset (16 bytes, unused)
  d |= u64{1024 >> 4} << 32;     // stride byte offset
  d |= u64{1} << 62;             // swizzle mode: 128B
  return d;
}

// Shared-memory matrix descriptor of an MN-major ("N contiguous") B tile with 128-byte swizzle,
// as TMA writes it from a row-major [K, N] matrix with {64 N, 64 K} boxes:
// each box is one 64-column "atom" of 64 K rows x 128 bytes (8 swizzle patterns of 8 rows,
// 1024 bytes apart), and the atoms of a wider tile follow each other 8192 bytes apart. For MN-major
// operands the two offsets swap roles: the leading byte offset steps to the next 64-column atom
// (8192 bytes), the stride byte offset to the next 8 K rows (1024 bytes). A k step of 16 rows
// advances the start address by 2048 bytes, which keeps every pattern on its 1024-byte period.
__device__ __forceinline__ u64 wgmma_desc_mn_sw128(const void* p) {
  const u64 addr = smem_addr(p);
  u64 d = (addr & 0x3FFFFull) >> 4;
  d |= u64{8192 >> 4} << 16;     // leading byte offset: next 64-column atom
  d |= u64{1024 >> 4} << 32;     // stride byte offset: next 8 K rows
  d |= u64{1} << 62;             // swizzle mode: 128B
  return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across the asynchronous wgmma.
__device__ __forceinline__ void wgmma_fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
// Ends the live range of an accumulator register whose value the next wgmma ignores (scale-d 0):
// an output of no instruction, so the compiler need not keep the old value, unlike the "+f"
// operands of the wgmma asm and of wgmma_fence_operand.
__device__ __forceinline__ void wgmma_discard_operand(float& r) { asm volatile("" : "=f"(r)::"memory"); }

#define SINTER_WGMMA_D8(i) "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                           "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
// The accumulator operands of an m64n128 (64 registers a thread) and an m64n256 (128) wgmma, as
// the instruction's register list and the asm output list; the descriptors, the scale-d flag
// and the transpose immediate follow them as %64.. (%128..).
#define SINTER_WGMMA_REGS64 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
  "%59, %60, %61, %62, %63}"
#define SINTER_WGMMA_REGS128 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
  "%59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, " \
  "%78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, " \
  "%97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, " \
  "%113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define SINTER_WGMMA_OUT64                                                                   \
  SINTER_WGMMA_D8(0), SINTER_WGMMA_D8(8), SINTER_WGMMA_D8(16), SINTER_WGMMA_D8(24), SINTER_WGMMA_D8(32), \
      SINTER_WGMMA_D8(40), SINTER_WGMMA_D8(48), SINTER_WGMMA_D8(56)
#define SINTER_WGMMA_OUT128                                                                    \
  SINTER_WGMMA_OUT64, SINTER_WGMMA_D8(64), SINTER_WGMMA_D8(72), SINTER_WGMMA_D8(80), SINTER_WGMMA_D8(88), \
      SINTER_WGMMA_D8(96), SINTER_WGMMA_D8(104), SINTER_WGMMA_D8(112), SINTER_WGMMA_D8(120)
// One wgmma with f32 accumulators: `shape` ("m64n128k16"), operand types `ta`, `tb`, the
// register list and outputs of its size, and the operand numbers after them (`p_at`: the
// scale-d flag). `tail`: what follows the predicate (16-bit: scale-a, scale-b, the transposes;
// 8-bit, which has no transposes: the scales only).
#define SINTER_WGMMA(shape, ta, tb, regs, outs, da, db, p_at, tail, ...)                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" p_at ", 0;\n"                                   \
               "wgmma.mma_async.sync.aligned." shape ".f32." ta "." tb " " regs ", %" da ", %" db ", p, " \
               tail ";\n}\n"                                                                            \
               : outs                                                                                   \
               : __VA_ARGS__)

// D[64x128] (+)= A[64x16] * B[16x128]^T from shared memory, f32 accumulate. A is K-major; B is
// K-major, or MN-major with kTransB (the instruction's imm-trans-b, an immediate: hence a template
// argument; PTX allows it for 16-bit types only). The fragment layout does not depend on it.
// Fragment of thread t (warp w, lane l): d[j] is row 16 w + l/4 + 8 ((j/2) % 2), column
// 8 (j/4) + 2 (l%4) + j%2.
template <bool kBf16, bool kTransB = false>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], u64 desc_a, u64 desc_b, bool accumulate) {
  const int scale_d = accumulate ? 1 : 0;
  if constexpr (kBf16) {
    SINTER_WGMMA("m64n128k16", "bf16", "bf16", SINTER_WGMMA_REGS64, SINTER_WGMMA_OUT64, "64", "65", "66",
                 "1, 1, 0, %67", "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(kTransB ? 1 : 0));
  } else {
    SINTER_WGMMA("m64n128k16", "f16", "f16", SINTER_WGMMA_REGS64, SINTER_WGMMA_OUT64, "64", "65", "66",
                 "1, 1, 0, %67", "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(kTransB ? 1 : 0));
  }
}
// D[64x256] (+)= A[64x16] * B[16x256]^T, operands as for m64n128k16, f32 accumulate. The
// fragment layout is that of m64n128k16 continued: d[j] is row 16 w + l/4 + 8 ((j/2) % 2),
// column 8 (j/4) + 2 (l%4) + j%2, for j < 128.
template <bool kBf16, bool kTransB = false>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], u64 desc_a, u64 desc_b, bool accumulate) {
  const int scale_d = accumulate ? 1 : 0;
  if constexpr (kBf16) {
    SINTER_WGMMA("m64n256k16", "bf16", "bf16", SINTER_WGMMA_REGS128, SINTER_WGMMA_OUT128, "128", "129", "130",
                 "1, 1, 0, %131", "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(kTransB ? 1 : 0));
  } else {
    SINTER_WGMMA("m64n256k16", "f16", "f16", SINTER_WGMMA_REGS128, SINTER_WGMMA_OUT128, "128", "129", "130",
                 "1, 1, 0, %131", "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(kTransB ? 1 : 0));
  }
}
// D[64 x kN] (+)= A[64x32] * B[32 x kN]^T with 8-bit float operands of one type (e4m3 if kE4m3,
// else e5m2), both K-major (PTX allows no transpose for 8-bit types), f32 accumulate; kN 128 or
// 256. A k step of 32 elements is 32 bytes, as a 16-bit k step of 16: the same descriptors and
// the same fragment layout as m64n128k16 / m64n256k16.
template <int kN, bool kE4m3>
__device__ __forceinline__ void wgmma_m64nk32_f8(float (&d)[kN / 2], u64 desc_a, u64 desc_b, bool accumulate) {
  static_assert(kN == 128 || kN == 256, "wgmma n of 128 or 256");
  const int scale_d = accumulate ? 1 : 0;
  if constexpr (kN == 128 && kE4m3) {
    SINTER_WGMMA("m64n128k32", "e4m3", "e4m3", SINTER_WGMMA_REGS64, SINTER_WGMMA_OUT64, "64", "65", "66", "1, 1",
                 "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else if constexpr (kN == 128) {
    SINTER_WGMMA("m64n128k32", "e5m2", "e5m2", SINTER_WGMMA_REGS64, SINTER_WGMMA_OUT64, "64", "65", "66", "1, 1",
                 "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else if constexpr (kE4m3) {
    SINTER_WGMMA("m64n256k32", "e4m3", "e4m3", SINTER_WGMMA_REGS128, SINTER_WGMMA_OUT128, "128", "129", "130",
                 "1, 1", "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else {
    SINTER_WGMMA("m64n256k32", "e5m2", "e5m2", SINTER_WGMMA_REGS128, SINTER_WGMMA_OUT128, "128", "129", "130",
                 "1, 1", "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
}
#undef SINTER_WGMMA
#undef SINTER_WGMMA_OUT128
#undef SINTER_WGMMA_OUT64
#undef SINTER_WGMMA_REGS128
#undef SINTER_WGMMA_REGS64
#undef SINTER_WGMMA_D8
