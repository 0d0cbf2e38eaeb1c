// The L2 probes' shared parts (l2_merge_probe.cu, l2_coalesce_window_probe.cu): a bf16 matrix's
// TMA map with the GEMM's B-tile box, and a CTA of 256 threads that reads a sequence of those
// boxes through a 4-stage mbarrier ring, as a GEMM's producer and consumers would, with no math.
#pragma once

#include <cuda.h>

#include <cstdio>

#include "common/hopper.cuh"

constexpr int kRingBox = 16384, kRingStages = 4;
constexpr int kRingSmem = kRingStages * kRingBox + 1024;  // dynamic shared memory, with the alignment pad

__device__ __forceinline__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// Reads `steps` boxes, box i at coords(i) -> {k element, row}; every warp waits for a box, reads
// a word of it, spins `pace` cycles (a GEMM's tensor time for a k-block is about 1000), and
// releases the stage. The CTA starts issuing after `head_start` cycles.
template <class Coords>
__device__ __forceinline__ void read_box_ring(const CUtensorMap& map, int steps, long long pace, long long head_start,
                                              Coords coords, unsigned* sink) {
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  __shared__ u64 full[kRingStages], empty[kRingStages];
  const SinterTensorMap* m = reinterpret_cast<const SinterTensorMap*>(&map);
  int issued = 0;
  auto issue = [&]() {
    const int st = issued % kRingStages;
    const int2 c = coords(issued);
    mbarrier_arrive_expect_tx(&full[st], kRingBox);
    tma_load_3d(smem + st * kRingBox, m, &full[st], c.x, c.y, 0);
    ++issued;
  };
  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(m);
    for (int i = 0; i < kRingStages; ++i) {
      mbarrier_init(&full[i], 1);
      mbarrier_init(&empty[i], 8);
    }
    fence_barrier_init();
  }
  __syncthreads();
  spin(head_start);
  if (threadIdx.x == 0) {
    for (int i = 0; i < kRingStages; ++i) issue();
  }
  unsigned acc = 0;
  const int lane = threadIdx.x & 31;
  for (int i = 0; i < steps; ++i) {
    const int st = i % kRingStages;
    const u32 phase = static_cast<u32>((i / kRingStages) & 1);
    mbarrier_wait(&full[st], phase);
    acc += reinterpret_cast<const unsigned*>(smem + st * kRingBox)[threadIdx.x];  // a read, so the stage is used
    spin(pace);
    __syncwarp();
    if (lane == 0) mbarrier_arrive(&empty[st]);
    if (threadIdx.x == 0 && issued < steps) {
      mbarrier_wait(&empty[st], phase);  // every warp is done with step i's stage
      issue();
    }
  }
  if (acc == 0x12345678u) *sink = acc;
}

// A [rows, k] row-major bf16 matrix at w, read in {64 k, 128 rows} boxes with the 128-byte swizzle
// (the GEMM's B tile). False (and a message) when the driver rejects it.
inline bool encode_box_map(CUtensorMap* map, void* w, long long rows, long long k) {
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows), 1};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(k * 2), static_cast<cuuint64_t>(rows * k * 2)};
  const cuuint32_t box[3] = {64, 128, 1};
  const cuuint32_t estr[3] = {1, 1, 1};
  if (cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, w, dims, strides, box, estr,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    std::fprintf(stderr, "tensor map rejected\n");
    return false;
  }
  return true;
}
