// L2 request-coalescing window probe (issue 4, session 31). l2_merge_probe.cu showed that TMA
// reads of the same box by CTAs that run in step reach the L2 as fewer sector reads, and that a
// head start of 4 k-blocks between them removes the effect. Hopper's LRC (L2 request coalescer,
// between the crossbar and the L2 slices; Nsight Compute's lrc__* counters) merges them. This
// probe asks what a GEMM's raster would need to know:
//   - how close in time two requests must be to merge (member m of a group starts m x `offset`
//     cycles late: 0, 250, 1000, 4000);
//   - whether the readers must sit in one GPC: the members of a group are neighbouring CTAs
//     ("adjacent"), CTAs a grid's width apart ("strided"), or one cluster, which the hardware
//     places in one GPC ("cluster").
// Each group reads its own 128 rows (no group shares with another, unlike l2_merge_probe), 16
// k-blocks of a [16384, 1024] bf16 matrix (32 MB, L2-resident after the first pass), 16 passes, a
// 4-stage ring paced at 1000 cycles a k-block (about a GEMM's tensor time for one). Group 1 is
// the control: nothing to merge, sectors read = sectors delivered.
//   nvcc -O3 -std=c++17 -arch=sm_90a -I kernels bench/experiments/l2_coalesce_window_probe.cu -lcuda -o l2_coalesce_window_probe
//   ncu --kernel-name regex:read_group_boxes --metrics lts__t_sectors_srcunit_tex_aperture_device_op_read.sum,\
//     lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,l1tex__m_xbar2l1tex_read_sectors.sum ./l2_coalesce_window_probe
// It prints one line a launch, in the order Nsight Compute lists them, with the spread of the
// CTAs' start times (globaltimer), which bounds how in step any kernel's CTAs can start.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "box_ring.cuh"
#include "probe_check.cuh"

constexpr int kKBlocks = 16, kPasses = 16, kCtas = 128, kPace = 1000;
constexpr long long kRows = 128LL * kCtas, kK = 64LL * kKBlocks;
enum Layout { kAdjacent = 0, kStrided = 1, kClusterLayout = 2 };
const char* const kLayoutName[] = {"adjacent", "strided", "cluster"};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void __launch_bounds__(256, 1)
    read_group_boxes(const __grid_constant__ CUtensorMap map, int group, int layout, int offset, unsigned* sink,
                     unsigned long long* starts) {
  const int b = blockIdx.x, groups = gridDim.x / group;
  const int g = layout == kStrided ? b % groups : b / group;
  const int member = layout == kStrided ? b / groups : b % group;
  if (threadIdx.x == 0) starts[b] = global_ns();
  const int row = g * 128;
  auto coords = [&](int i) { return make_int2((i % kKBlocks) * 64, row); };
  // the member's late start: `offset` cycles each
  read_box_ring(map, kPasses * kKBlocks, kPace, static_cast<long long>(member) * offset, coords, sink);
}

int main() {
  CHECK(cudaSetDevice(0));
  void* w = nullptr;
  const size_t bytes = static_cast<size_t>(kRows * kK * 2);
  CHECK(cudaMalloc(&w, bytes));
  CHECK(cudaMemset(w, 1, bytes));
  unsigned* sink = nullptr;
  unsigned long long* starts = nullptr;
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMalloc(&starts, kCtas * sizeof(unsigned long long)));
  CUtensorMap map{};
  if (!encode_box_map(&map, w, kRows, kK)) return 1;
  const int smem = kRingSmem;
  CHECK(cudaFuncSetAttribute(read_group_boxes, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(read_group_boxes, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  const double delivered = static_cast<double>(kCtas) * kPasses * kKBlocks * kRingBox / 32;
  std::printf("launch  group  layout    offset  ms       start spread us  (delivered %.3f M sectors a launch)\n",
              delivered / 1e6);
  struct Case {
    int group, layout, offset;
  };
  std::vector<Case> cases = {{1, kAdjacent, 0}};
  for (int group : {2, 4, 8}) {
    for (int layout : {kAdjacent, kStrided, kClusterLayout}) {
      for (int offset : {0, 250, 1000, 4000}) cases.push_back({group, layout, offset});
    }
  }
  int launch = 0;
  std::vector<unsigned long long> host(kCtas);
  for (const Case& c : cases) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kCtas);
    cfg.blockDim = dim3(256);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = c.layout == kClusterLayout ? c.group : 1;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    cudaEvent_t a, e;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&e));
    CHECK(cudaEventRecord(a));
    CHECK(cudaLaunchKernelEx(&cfg, read_group_boxes, map, c.group, c.layout, c.offset, sink, starts));
    CHECK(cudaEventRecord(e));
    CHECK(cudaEventSynchronize(e));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, a, e));
    CHECK(cudaMemcpy(host.data(), starts, kCtas * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    const auto [lo, hi] = std::minmax_element(host.begin(), host.end());
    std::printf("%6d  %5d  %-8s  %6d  %.4f   %.2f\n", launch++, c.group, kLayoutName[c.layout], c.offset, ms,
                static_cast<double>(*hi - *lo) / 1e3);
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(e));
  }
  CHECK(cudaFree(w));
  CHECK(cudaFree(sink));
  CHECK(cudaFree(starts));
  return 0;
}
