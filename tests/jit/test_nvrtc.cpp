// NVRTC compiles for sm_90a on a machine without a GPU; errors carry NVRTC's log.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cuda/nvrtc.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

constexpr const char* kAddOne = R"(
extern "C" __global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
)";

constexpr std::uint16_t kElfMachineCuda = 190;  // EM_CUDA

TEST(JitNvrtc, CompilesAnElfCubinForSm90a) {
  CompileResult result = compile_cuda("add_one.cu", kAddOne);
  ASSERT_GE(result.cubin.size(), 64u);
  EXPECT_EQ(std::memcmp(result.cubin.data(), "\x7f" "ELF", 4), 0);
  EXPECT_EQ(result.cubin[4], 2) << "expected a 64-bit ELF";
  std::uint16_t machine = 0;
  std::memcpy(&machine, result.cubin.data() + 18, sizeof machine);
  EXPECT_EQ(machine, kElfMachineCuda);
  EXPECT_GT(result.compile_ms, 0.0);
}

TEST(JitNvrtc, UsesTheArchSpecificTarget) {
  // wgmma exists only on sm_90a: it compiles there and is refused for plain sm_90.
  const char* source = R"(
extern "C" __global__ void fence() { asm volatile("wgmma.fence.sync.aligned;"); }
)";
  EXPECT_NO_THROW(compile_cuda("fence.cu", source));
  CompileOptions sm90;
  sm90.arch = "sm_90";
  try {
    compile_cuda("fence.cu", source, sm90);
    FAIL() << "wgmma compiled for sm_90";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::compile);
    EXPECT_NE(e.message().find("wgmma"), std::string::npos) << e.message();
  }
}

TEST(JitNvrtc, SyntaxErrorGivesCompileErrorWithTheLogLine) {
  const char* source = "extern \"C\" __global__ void broken(float* x) {\n"
                       "  x[0] = 1.0f\n"
                       "}\n";
  try {
    compile_cuda("broken.cu", source);
    FAIL() << "a syntax error compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::compile);
    EXPECT_NE(e.message().find("broken.cu(3): error"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("expected a \";\""), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("sm_90a"), std::string::npos) << e.message();
  }
}

TEST(JitNvrtc, DefaultOptions) {
  CompileOptions options;
  options.extra_options = {"-DSINTER_TEST=1"};
  std::vector<std::string> all = compile_options(options);
  ASSERT_GE(all.size(), 5u);
  EXPECT_EQ(all[0], "--gpu-architecture=sm_90a");
  EXPECT_EQ(all[1], "-lineinfo");
  EXPECT_EQ(all[2], "--std=c++17");
  EXPECT_EQ(all[3], "-default-device");
  EXPECT_EQ(all.back(), "-DSINTER_TEST=1");
  EXPECT_EQ(std::count(all.begin(), all.end(), "--device-as-default-execution-space"), 0);
}

TEST(JitNvrtc, RefusesAVirtualArchitecture) {
  CompileOptions options;
  options.arch = "compute_90a";
  try {
    compile_cuda("add_one.cu", kAddOne, options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(e.message().find("compute_90a"), std::string::npos);
  }
}

TEST(JitNvrtc, ResolvesIncludesByPathIncludingNestedOnes) {
  CompileOptions options;
  options.extra_headers = {
      {"common/test_outer.cuh", "#pragma once\n#include \"common/test_inner.cuh\"\n"
                                "__device__ inline float outer() { return inner() + 1.0f; }\n"},
      {"common/test_inner.cuh", "#pragma once\n__device__ inline float inner() { return 2.0f; }\n"},
  };
  const char* source = R"(
#include "common/test_outer.cuh"
extern "C" __global__ void use(float* out) { out[0] = outer(); }
)";
  EXPECT_FALSE(compile_cuda("use.cu", source, options).cubin.empty());

  try {
    compile_cuda("missing.cu", "#include \"common/no_such_header.cuh\"\n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::compile);
    EXPECT_NE(e.message().find("common/no_such_header.cuh"), std::string::npos) << e.message();
  }
}

TEST(JitNvrtc, FindsToolkitHeaders) {
  if (cuda_include_directories().empty()) {
    GTEST_SKIP() << "no CUDA toolkit headers on this machine (set SINTER_CUDA_INCLUDE_DIR)";
  }
  const char* source = R"(
#include <cuda_bf16.h>
extern "C" __global__ void to_bf16(const float* in, __nv_bfloat16* out) {
  out[threadIdx.x] = __float2bfloat16(in[threadIdx.x]);
}
)";
  EXPECT_FALSE(compile_cuda("to_bf16.cu", source).cubin.empty());
}

TEST(JitNvrtc, ReportsItsVersion) {
  NvrtcVersion version = nvrtc_version();
  EXPECT_GE(version.major, 12);
  EXPECT_GE(version.minor, 0);
}

}  // namespace
}  // namespace sinter::cuda
