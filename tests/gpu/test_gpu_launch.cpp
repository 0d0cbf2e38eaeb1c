// NVRTC-compiled kernels loaded through the KernelCache and launched: plain, with large dynamic
// shared memory, with clusters, cooperatively; events time them.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "cuda/buffer.hpp"
#include "cuda/check.hpp"
#include "cuda/event.hpp"
#include "cuda/stream.hpp"
#include "gpu/gpu_test.hpp"
#include "jit/temp_dir.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

using GpuLaunchTest = sinter::testing::GpuTest;

constexpr const char* kSaxpy = R"(
// y: [n] = a * x + y
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

void run_saxpy(const Library& library, int n) {
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i % 97) * 0.25f;
    y[i] = float(i % 13) - 6.0f;
  }
  DeviceBuffer dx(n * sizeof(float)), dy(n * sizeof(float));
  dx.upload(std::span<const float>(x));
  dy.upload(std::span<const float>(y));
  Stream stream;
  float a = 3.0f;
  float* x_ptr = dx.as<float>();
  float* y_ptr = dy.as<float>();
  void* args[] = {&a, &x_ptr, &y_ptr, &n};
  LaunchConfig config;
  config.grid = dim3((n + 255) / 256);
  config.block = dim3(256);
  config.stream = stream;
  library.get_kernel("saxpy").launch(config, args);
  stream.synchronize();
  std::vector<float> out(n);
  dy.download(std::span<float>(out));
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a * x[i] + y[i]) << "at " << i;
}

TEST_F(GpuLaunchTest, CompiledKernelLoadsThroughTheCacheAndRuns) {
  sinter::testing::TempDir dir;
  KernelCache cache(dir.path());
  auto library = cache.get_library(request("saxpy.cu", kSaxpy), 0);
  run_saxpy(*library, 100000);
  EXPECT_EQ(cache.get_library(request("saxpy.cu", kSaxpy), 0), library);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().memory_hits, 1u);

  // A fresh cache loads the cubin from disk, and it runs just the same.
  KernelCache fresh(dir.path());
  run_saxpy(*fresh.get_library(request("saxpy.cu", kSaxpy), 0), 4097);
  EXPECT_EQ(fresh.stats().disk_hits, 1u);
  EXPECT_EQ(fresh.stats().misses, 0u);
}

TEST_F(GpuLaunchTest, UnknownKernelNameIsAClearError) {
  KernelCache cache{std::filesystem::path()};
  auto library = cache.get_library(request("saxpy.cu", kSaxpy), 0);
  try {
    library->get_kernel("no_such_kernel");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda);
    EXPECT_NE(e.message().find("cudaLibraryGetKernel(\"no_such_kernel\")"), std::string::npos)
        << e.message();
  }
}

TEST_F(GpuLaunchTest, LargeDynamicSharedMemoryNeedsTheAttribute) {
  const char* source = R"(
// out: [n], the reverse of 0..n-1, staged through shared memory
extern "C" __global__ void reverse_through_smem(float* out, int n) {
  extern __shared__ float tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = float(i);
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[n - 1 - i];
}
)";
  KernelCache cache{std::filesystem::path()};
  auto library = cache.get_library(request("reverse.cu", source), 0);
  Kernel kernel = library->get_kernel("reverse_through_smem");
  const std::size_t smem =
      std::min<std::size_t>(200 * 1024, properties_.max_shared_memory_per_block_optin);
  int n = int(smem / sizeof(float));
  DeviceBuffer out(smem);
  float* out_ptr = out.as<float>();
  void* args[] = {&out_ptr, &n};
  LaunchConfig config;
  config.block = dim3(256);
  config.dynamic_shared_memory = smem;

  try {
    kernel.launch(config, args);
    FAIL() << "a launch with " << smem << " bytes of dynamic smem needed no attribute";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda);
    EXPECT_NE(e.message().find("cudaLaunchKernelExC(reverse_through_smem"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find(std::to_string(smem) + " bytes dynamic smem"), std::string::npos)
        << e.message();
  }

  kernel.set_max_dynamic_shared_memory(int(smem), 0);
  EXPECT_GE(kernel.max_active_blocks_per_sm(256, smem), 1);
  kernel.launch(config, args);
  SINTER_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> host(n);
  out.download(std::span<float>(host));
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], float(n - 1 - i)) << "at " << i;
}

TEST_F(GpuLaunchTest, ClusterLaunch) {
  if (properties_.cc_major < 9) GTEST_SKIP() << "clusters need sm_90";
  const char* source = R"(
// out: [grid, 2] = (rank in cluster, cluster size) per block
extern "C" __global__ void cluster_ranks(unsigned* out) {
  unsigned rank, size;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = rank;
    out[2 * blockIdx.x + 1] = size;
  }
}
)";
  KernelCache cache{std::filesystem::path()};
  auto library = cache.get_library(request("cluster.cu", source), 0);
  constexpr unsigned kBlocks = 8, kCluster = 2;
  DeviceBuffer out(2 * kBlocks * sizeof(unsigned));
  out.memset(0xff);
  unsigned* out_ptr = out.as<unsigned>();
  void* args[] = {&out_ptr};
  LaunchConfig config;
  config.grid = dim3(kBlocks);
  config.block = dim3(32);
  config.cluster = dim3(kCluster);
  library->get_kernel("cluster_ranks").launch(config, args);
  SINTER_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> host(2 * kBlocks);
  out.download(std::span<unsigned>(host));
  for (unsigned b = 0; b < kBlocks; ++b) {
    EXPECT_EQ(host[2 * b], b % kCluster) << "block " << b;
    EXPECT_EQ(host[2 * b + 1], kCluster) << "block " << b;
  }
}

TEST_F(GpuLaunchTest, CooperativeLaunchOfOneBlockPerSm) {
  if (!properties_.cooperative_launch) GTEST_SKIP() << "device lacks cooperative launch";
  const char* source = R"(
// out: [grid] = 1 per block that ran
extern "C" __global__ void mark(int* out) { if (threadIdx.x == 0) out[blockIdx.x] = 1; }
)";
  KernelCache cache{std::filesystem::path()};
  auto library = cache.get_library(request("mark.cu", source), 0);
  Kernel kernel = library->get_kernel("mark");
  ASSERT_GE(kernel.max_active_blocks_per_sm(128, 0), 1);
  DeviceBuffer out(properties_.sm_count * sizeof(int));
  out.memset(0);
  int* out_ptr = out.as<int>();
  void* args[] = {&out_ptr};
  LaunchConfig config;
  config.grid = dim3(properties_.sm_count);
  config.block = dim3(128);
  config.cooperative = true;
  kernel.launch(config, args);
  SINTER_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int> host(properties_.sm_count);
  out.download(std::span<int>(host));
  EXPECT_EQ(std::count(host.begin(), host.end(), 1), properties_.sm_count);
}

TEST_F(GpuLaunchTest, EventsTimeAKernel) {
  const char* source = R"(
extern "C" __global__ void spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
)";
  KernelCache cache{std::filesystem::path()};
  auto library = cache.get_library(request("spin.cu", source), 0);
  Stream stream;
  Event start, end;
  long long cycles = 4'000'000;  // about 2 ms at 2 GHz
  void* args[] = {&cycles};
  LaunchConfig config;
  config.stream = stream;
  start.record(stream);
  library->get_kernel("spin").launch(config, args);
  end.record(stream);
  const float ms = elapsed_ms(start, end);
  std::cout << "4M-cycle spin: " << ms << " ms\n";
  EXPECT_GT(ms, 0.5f);
  EXPECT_LT(ms, 1000.0f);
  EXPECT_TRUE(end.query());
}

}  // namespace
}  // namespace sinter::cuda
