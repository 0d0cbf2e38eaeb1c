// The fixture of every GPU test: skips, with the reason, when this machine has no usable GPU, so
// the suite passes (as skipped) on CI and on build machines.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"

namespace sinter::testing {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const cuda::GpuAvailability& gpu = cuda::gpu_availability();
    if (!gpu.available) GTEST_SKIP() << "no GPU: " << gpu.reason;
    cuda::set_device(0);
    properties_ = cuda::device_properties(0);
  }

  // A request compiled for device 0's architecture.
  cuda::KernelRequest request(std::string name, std::string source) const {
    cuda::KernelRequest r{std::move(name), std::move(source), {}};
    r.options.arch = properties_.arch;
    return r;
  }

  cuda::DeviceProperties properties_;
};

// For tests that compile kernels themselves: memory only, so tests never depend on disk state.
inline cuda::KernelCache& shared_cache() {
  static cuda::KernelCache cache("");
  return cache;
}

}  // namespace sinter::testing
