// L2 request-merge probe (issue 4, session 30): do TMA loads of the same box, issued by CTAs of
// different clusters at about the same moment, reach the L2 as one sector read? Under Nsight
// Compute, cuBLASLt's 4096^3 kernel delivers 50.33 M sectors to the SMs from 26.3 M L2 sector
// reads (1.91), where ours reads 33.4 M (1.5, exactly its multicast): its unshared 16 KB B load
// reaches the L2 as about 10 KB (docs/research-gemm-epilogue-and-decode.md, session 30). One
// reading: CTAs of one raster column read the same B box at the same k-block, and the L2 merges
// requests that arrive together. This probe tests that reading without any math.
// Result (session 31, H100): yes. Groups of 8 in step read 0.41 of the sectors delivered, and
// members 4 k-blocks apart read 1.02. The 32 row blocks wrap, so about 16 CTAs read each
// sequence. l2_coalesce_window_probe.cu and gpc_map_probe.cu took it further.
//   nvcc -O3 -std=c++17 -arch=sm_90a -I kernels bench/experiments/l2_merge_probe.cu -lcuda -o l2_merge_probe
//   ncu --kernel-name regex:read_boxes --metrics \
//     lts__t_sectors_srcunit_tex_aperture_device_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum \
//     ./l2_merge_probe
// Each launch: 132 CTAs (one an SM), `group` CTAs in a group read the same sequence of 16 KB
// boxes ({64 k, 128 rows} of a [4096, 4096] bf16 matrix, 128-byte swizzle, as the GEMM's B tile),
// 64 k-blocks of one 128-row block, 4 times (4 row blocks, as 4 tiles); the groups read different
// row blocks. A 4-stage ring: thread 0 issues, every warp waits on `full`, spins `pace` cycles
// (a GEMM's k-block is ~1024 cycles of tensor work), releases `empty`. Member m of a group first
// spins m x `offset` k-blocks' worth of pace, so offset 0 is lockstep and offset 4 keeps members
// 4 k-blocks apart. The probe prints one line a launch, in the order Nsight Compute lists them:
// sectors read / sectors delivered near 1 means no merging; near 1 / group means full merging.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "box_ring.cuh"
#include "probe_check.cuh"

constexpr int kKBlocks = 64, kTiles = 4;
constexpr long long kRows = 4096, kK = 4096;

__global__ void __launch_bounds__(256, 1) read_boxes(const __grid_constant__ CUtensorMap map, int group, int pace,
                                                     int offset, unsigned* sink) {
  const int g = blockIdx.x / group, member = blockIdx.x % group;
  const int row_blocks = static_cast<int>(kRows / 128);
  auto coords = [&](int i) {
    return make_int2((i % kKBlocks) * 64, ((g * kTiles + i / kKBlocks) % row_blocks) * 128);
  };
  // the member's head start: `offset` k-blocks' worth of pace each
  read_box_ring(map, kTiles * kKBlocks, pace, static_cast<long long>(member) * offset * pace, coords, sink);
}

int main() {
  CHECK(cudaSetDevice(0));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  void* w = nullptr;
  const size_t bytes = static_cast<size_t>(kRows * kK * 2);
  CHECK(cudaMalloc(&w, bytes));
  CHECK(cudaMemset(w, 1, bytes));
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&sink, 4));
  CUtensorMap map{};
  if (!encode_box_map(&map, w, kRows, kK)) return 1;
  const int smem = kRingSmem;
  CHECK(cudaFuncSetAttribute(read_boxes, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const double delivered_sectors = static_cast<double>(sms) * kTiles * kKBlocks * kRingBox / 32;
  std::printf("launch  group  pace  offset  ms        (delivered %.3f M sectors a launch)\n", delivered_sectors / 1e6);
  int launch = 0;
  for (int pace : {0, 1000}) {
    for (int group : {1, 2, 4, 8}) {
      for (int offset : {0, 4}) {
        if (group == 1 && offset > 0) continue;
        cudaEvent_t a, b;
        CHECK(cudaEventCreate(&a));
        CHECK(cudaEventCreate(&b));
        CHECK(cudaEventRecord(a));
        read_boxes<<<sms, 256, smem>>>(map, group, pace, offset, sink);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        std::printf("%6d  %5d  %4d  %6d  %.4f\n", launch++, group, pace, offset, ms);
        CHECK(cudaEventDestroy(a));
        CHECK(cudaEventDestroy(b));
      }
    }
  }
  CHECK(cudaFree(w));
  CHECK(cudaFree(sink));
  return 0;
}
