// The fixture of every GPU test: skips, with the reason, when this machine has no usable GPU, so
// the suite passes (as skipped) on CI and on build machines.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sinter/error.hpp"

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

// The error code and message of `f`, or a failure when it does not throw.
template <class F>
std::pair<ErrorCode, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code(), e.message()};
  }
  ADD_FAILURE() << "no error";
  return {ErrorCode::internal, ""};
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// `body(r)` for r = 0 .. ranks - 1 at once, one thread each on GPU r (ranks of one NCCL group
// must call in together); each rank's sinter::Error message, "" where it threw none.
inline std::vector<std::string> each_rank(int ranks, const std::function<void(int)>& body) {
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        cuda::set_device(r);
        body(r);
      } catch (const Error& e) {
        errors[r] = e.message();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

// For tests that compile kernels themselves: memory only, so tests never depend on disk state.
inline cuda::KernelCache& shared_cache() {
  static cuda::KernelCache cache("");
  return cache;
}

}  // namespace sinter::testing
