// Device queries, streams, events and the driver entry points on a real GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "cuda/buffer.hpp"
#include "cuda/check.hpp"
#include "cuda/driver.hpp"
#include "cuda/event.hpp"
#include "cuda/stream.hpp"
#include "cuda/timing.hpp"
#include "gpu/gpu_test.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

using GpuDeviceTest = sinter::testing::GpuTest;

TEST_F(GpuDeviceTest, PropertiesAreSane) {
  for (int d = 0; d < gpu_availability().device_count; ++d) {
    DeviceProperties p = device_properties(d);
    std::cout << "device " << d << ": " << describe(p) << "\n";
    EXPECT_EQ(p.ordinal, d);
    EXPECT_FALSE(p.name.empty());
    EXPECT_GT(p.sm_count, 0);
    EXPECT_EQ(p.arch, arch_for_compute_capability(p.cc_major, p.cc_minor));
    if (p.cc_major == 9 && p.cc_minor == 0) {
      EXPECT_EQ(p.arch, "sm_90a");
    }
    EXPECT_GE(p.max_shared_memory_per_block_optin, 48u * 1024);
    EXPECT_GE(p.shared_memory_per_sm, p.max_shared_memory_per_block_optin);
    EXPECT_GT(p.l2_cache_bytes, 0u);
    EXPECT_GE(p.driver_version, 12000);
    EXPECT_GE(p.runtime_version, 12000);
    EXPECT_GT(p.total_memory, 0u);
    EXPECT_GT(p.free_memory, 0u);
    EXPECT_LE(p.free_memory, p.total_memory);
    EXPECT_NE(describe(p).find(p.arch), std::string::npos);
  }
}

TEST_F(GpuDeviceTest, DeviceGuardRestores) {
  const int last = gpu_availability().device_count - 1;
  set_device(0);
  {
    DeviceGuard guard(last);
    EXPECT_EQ(current_device(), last);
  }
  EXPECT_EQ(current_device(), 0);
}

TEST_F(GpuDeviceTest, StreamAndEvents) {
  Stream stream;
  EXPECT_NE(stream.get(), nullptr);
  DeviceBuffer buffer(1 << 20);
  Event start, end;
  start.record(stream);
  buffer.memset_async(0x5a, stream);
  end.record(stream);
  stream.synchronize();
  EXPECT_TRUE(stream.query());
  EXPECT_TRUE(end.query());
  EXPECT_GE(elapsed_ms(start, end), 0.0f);

  Stream moved = std::move(stream);
  EXPECT_EQ(stream.get(), nullptr);
  EXPECT_TRUE(moved.query());
}

TEST_F(GpuDeviceTest, TimeCallsQueuedSyncedAndBackToBack) {
  // both timing methods time every call and leave the work done; a 64 MB memset takes at least
  // ~10 us at any H200 bandwidth, so a time of 0 would mean the events missed the call
  Stream stream;
  DeviceBuffer buffer(64 << 20);
  for (TimingMode mode : {TimingMode::queued, TimingMode::synced}) {
    int calls = 0, flushes = 0;
    const std::vector<float> ms = time_calls(
        stream.get(), 7,
        [&] {
          buffer.memset_async(static_cast<int>(calls++), stream);
        },
        [&] { ++flushes; }, mode);
    ASSERT_EQ(ms.size(), 7u) << int(mode);
    EXPECT_EQ(calls, 7) << int(mode);
    EXPECT_EQ(flushes, 7) << int(mode);
    for (float t : ms) EXPECT_GT(t, 0.005f) << int(mode);
    EXPECT_TRUE(stream.query()) << int(mode);  // the host waited for the last call
  }
  // back to back: kBackToBackCalls calls per interval, each time the interval's share; with a
  // flush before each call, one call per interval
  int calls = 0, flushes = 0;
  std::vector<float> ms =
      time_calls(stream.get(), 7, [&] { buffer.memset_async(static_cast<int>(calls++), stream); }, {}, TimingMode::back_to_back);
  ASSERT_EQ(ms.size(), 7u);
  EXPECT_EQ(calls, 7 * kBackToBackCalls);
  for (float t : ms) EXPECT_GT(t, 0.005f);
  calls = 0;
  ms = time_calls(stream.get(), 7, [&] { buffer.memset_async(static_cast<int>(calls++), stream); }, [&] { ++flushes; },
                  TimingMode::back_to_back);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(flushes, 7);
  EXPECT_TRUE(stream.query());
}

TEST_F(GpuDeviceTest, RuntimeCheckNamesTheCall) {
  try {
    SINTER_CUDA_CHECK(cudaSetDevice(1 << 20));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda);
    EXPECT_NE(e.message().find("cudaSetDevice(1 << 20) failed: cudaErrorInvalidDevice"),
              std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("tests/gpu/test_gpu_device.cpp:"), std::string::npos)
        << e.message();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the check leaves no error behind";
}

TEST_F(GpuDeviceTest, DriverEntryPointsEncodeATensorMap) {
  const DriverApi& api = driver();
  DeviceBuffer buffer(128 * 64 * sizeof(float));
  CUtensorMap map;
  cuuint64_t dims[2] = {128, 64};                    // innermost first
  cuuint64_t strides[1] = {128 * sizeof(float)};     // bytes between rows
  cuuint32_t box[2] = {32, 32};
  cuuint32_t element_strides[2] = {1, 1};
  SINTER_CU_CHECK(api.tensor_map_encode_tiled(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, buffer.data(), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  SINTER_CU_CHECK(api.tensor_map_replace_address(&map, buffer.data()));

  // A global address that is not 16-byte aligned is refused; the message has the driver's names.
  try {
    SINTER_CU_CHECK(api.tensor_map_encode_tiled(
        &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, buffer.as<char>() + 4, dims, strides, box,
        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda);
    EXPECT_NE(e.message().find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace sinter::cuda
