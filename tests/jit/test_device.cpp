// What the CUDA layer says and does on a machine with no usable GPU (CI, this build machine), and
// the parts of device.hpp that need no GPU at all.
#include <gtest/gtest.h>

#include "cuda/buffer.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "cuda/kernel_cache.hpp"
#include "jit/temp_dir.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

TEST(JitDevice, ArchForComputeCapability) {
  EXPECT_EQ(arch_for_compute_capability(9, 0), "sm_90a");
  EXPECT_EQ(arch_for_compute_capability(8, 0), "sm_80");
  EXPECT_EQ(arch_for_compute_capability(8, 9), "sm_89");
  EXPECT_EQ(arch_for_compute_capability(10, 0), "sm_100");
  EXPECT_EQ(arch_for_compute_capability(12, 0), "sm_120");
}

TEST(JitDevice, AvailabilityIsConsistent) {
  const GpuAvailability& gpu = gpu_availability();
  if (gpu.available) {
    EXPECT_GT(gpu.device_count, 0);
    EXPECT_TRUE(gpu.reason.empty());
  } else {
    EXPECT_EQ(gpu.device_count, 0);
    EXPECT_FALSE(gpu.reason.empty());
    std::cout << "no GPU: " << gpu.reason << "\n";
  }
  EXPECT_EQ(&gpu, &gpu_availability()) << "probed once";
}

// Without a GPU, each entry point fails with ErrorCode::cuda and says why there is no GPU.
class JitNoGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_availability().available) GTEST_SKIP() << "a GPU is present; tests/gpu covers it";
  }
  static void expect_no_gpu_error(const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda);
    EXPECT_NE(e.message().find(gpu_availability().reason), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(" at src/cuda/"), std::string::npos) << e.message();
  }
};

TEST_F(JitNoGpu, AllocationSaysWhy) {
  try {
    DeviceBuffer buffer(1024);
    FAIL();
  } catch (const Error& e) {
    expect_no_gpu_error(e);
  }
}

TEST_F(JitNoGpu, DevicePropertiesSaysWhy) {
  try {
    device_properties(0);
    FAIL();
  } catch (const Error& e) {
    expect_no_gpu_error(e);
  }
}

TEST_F(JitNoGpu, DriverEntryPointsSayWhy) {
  try {
    driver();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda);
    EXPECT_NE(e.message().find("cuGetErrorName"), std::string::npos) << e.message();
  }
  EXPECT_THROW(driver(), Error) << "a failed resolution is retried and fails again";
}

TEST_F(JitNoGpu, CacheStillCompilesButCannotLoad) {
  sinter::testing::TempDir dir;
  KernelCache cache(dir.path());
  KernelRequest request{"noop.cu", "extern \"C\" __global__ void noop() {}\n", {}};
  EXPECT_FALSE(cache.get_binary(request)->cubin.empty());
  try {
    cache.get_library(request, 0);
    FAIL();
  } catch (const Error& e) {
    expect_no_gpu_error(e);
  }
}

TEST_F(JitNoGpu, DriverCheckFallsBackToTheNumber) {
  try {
    SINTER_CU_CHECK(CUDA_ERROR_INVALID_VALUE);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda);
    EXPECT_NE(e.message().find("CUDA_ERROR_INVALID_VALUE failed: CUresult 1"), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace sinter::cuda
