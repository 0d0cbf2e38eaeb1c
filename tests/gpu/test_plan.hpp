// A graph compiled for a GPU test through the public API (sinter/compile.hpp) and run on host
// inputs through a Runner: outputs and intermediates poisoned before each run, so a value a kernel
// fails to write cannot pass. Kernels are cached on disk in a folder made fresh for this test
// process: tests share compiled kernels but never depend on an earlier run's files.
#pragma once

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sinter/sinter.hpp"

namespace sinter::testing {

inline const std::string& test_kernel_cache_dir() {
  static const std::string dir = [] {
    const std::filesystem::path p = std::filesystem::temp_directory_path() /
                                    ("sinter_gpu_tests_kernels_" + std::to_string(::getpid()));
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p.string();
  }();
  return dir;
}

inline CompileOptions with_test_cache(CompileOptions o) {
  if (o.kernel_cache_dir.empty()) o.kernel_cache_dir = test_kernel_cache_dir();
  return o;
}

// A runner's options for `mode`, megakernels compiled into the test's kernel cache.
inline RunnerOptions test_runner_options(ExecMode mode, MegaOptions mega = {}) {
  RunnerOptions o;
  o.mode = mode;
  o.mega = std::move(mega);
  if (o.mega.kernel_cache_dir.empty()) o.mega.kernel_cache_dir = test_kernel_cache_dir();
  return o;
}

class TestPlan {
 public:
  explicit TestPlan(const Graph& g, const CompileOptions& o = {}, ExecMode mode = ExecMode::stream)
      : TestPlan(compile(g, with_test_cache(o)), mode) {}
  explicit TestPlan(const Plan& plan, ExecMode mode = ExecMode::stream)
      : TestPlan(plan, test_runner_options(mode)) {}
  TestPlan(const Plan& plan, const RunnerOptions& options)
      : plan_(plan), description_(plan.describe()), runner_(plan, options), io_(plan) {
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) {
      throw Error(ErrorCode::cuda, "test: cudaStreamCreate failed");
    }
    io_.bind(runner_);
  }
  ~TestPlan() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  TestPlan(const TestPlan&) = delete;
  TestPlan& operator=(const TestPlan&) = delete;

  const Plan& plan() const { return plan_; }
  const PlanDescription& description() const { return description_; }
  const std::vector<StepDescription>& steps() const { return description_.steps; }
  Runner& runner() { return runner_; }
  DeviceTensors& io() { return io_; }
  cudaStream_t stream() const { return stream_; }

  TensorMap run(const TensorMap& inputs) {
    io_.upload(inputs, stream_);
    io_.poison_outputs(stream_);
    runner_.poison_intermediates(stream_);
    runner_.enqueue(stream_);
    TensorMap out = io_.download(stream_);
    runner_.check();  // a megakernel's watchdog
    return out;
  }

  // The runner rebound to `other`'s memory (every input and output) and run there once, outputs
  // poisoned first. The runner stays bound to `other`.
  TensorMap run_rebound(DeviceTensors& other, const TensorMap& inputs) {
    other.upload(inputs, stream_);
    other.poison_outputs(stream_);
    other.bind(runner_);
    runner_.enqueue(stream_);
    TensorMap out = other.download(stream_);
    runner_.check();
    return out;
  }

 private:
  Plan plan_;
  PlanDescription description_;
  Runner runner_;
  DeviceTensors io_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace sinter::testing
