// DeviceBuffer on a real GPU: copies, fills, bounds, and the out-of-memory message.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "cuda/buffer.hpp"
#include "cuda/stream.hpp"
#include "gpu/gpu_test.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

using GpuBufferTest = sinter::testing::GpuTest;

TEST_F(GpuBufferTest, CopyRoundTrip) {
  std::vector<float> host(1 << 20);
  std::iota(host.begin(), host.end(), 0.5f);
  DeviceBuffer buffer(host.size() * sizeof(float));
  EXPECT_EQ(buffer.device(), 0);
  buffer.upload(std::span<const float>(host));
  std::vector<float> back(host.size(), -1.0f);
  buffer.download(std::span<float>(back));
  EXPECT_EQ(back, host);

  // Offsets: overwrite the second half from the first half of another vector.
  std::vector<float> half(host.size() / 2, 7.0f);
  buffer.copy_from_host(half.data(), half.size() * sizeof(float), half.size() * sizeof(float));
  buffer.download(std::span<float>(back));
  EXPECT_EQ(back[half.size() - 1], host[half.size() - 1]);
  EXPECT_EQ(back[half.size()], 7.0f);
  EXPECT_EQ(back.back(), 7.0f);
}

TEST_F(GpuBufferTest, AsyncRoundTripAndMemset) {
  Stream stream;
  std::vector<int> host(4096);
  std::iota(host.begin(), host.end(), 1);
  DeviceBuffer buffer(host.size() * sizeof(int));
  buffer.copy_from_host_async(host.data(), buffer.size(), stream);
  std::vector<int> back(host.size());
  buffer.copy_to_host_async(back.data(), buffer.size(), stream);
  stream.synchronize();
  EXPECT_EQ(back, host);

  buffer.memset_async(0, stream, buffer.size() / 2);
  buffer.copy_to_host_async(back.data(), buffer.size(), stream);
  stream.synchronize();
  EXPECT_EQ(back[0], 0);
  EXPECT_EQ(back[host.size() / 2 - 1], 0);
  EXPECT_EQ(back[host.size() / 2], host[host.size() / 2]);

  buffer.memset(0xff);
  buffer.download(std::span<int>(back));
  EXPECT_EQ(back.front(), -1);
  EXPECT_EQ(back.back(), -1);
}

TEST_F(GpuBufferTest, OutOfRangeCopiesAreRefused) {
  DeviceBuffer buffer(256);
  std::vector<char> host(512);
  EXPECT_THROW(buffer.copy_from_host(host.data(), 257), Error);
  EXPECT_THROW(buffer.copy_to_host(host.data(), 8, 250), Error);
  EXPECT_THROW(buffer.memset(0, 1, 256), Error);
  try {
    buffer.copy_from_host(host.data(), 512);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(e.message().find("256 bytes"), std::string::npos) << e.message();
  }
}

TEST_F(GpuBufferTest, EmptyAndMovedBuffers) {
  DeviceBuffer empty(0);
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.data(), nullptr);
  DeviceBuffer a(1024);
  void* pointer = a.data();
  DeviceBuffer b = std::move(a);
  EXPECT_EQ(b.data(), pointer);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  a = std::move(b);
  EXPECT_EQ(a.data(), pointer);
}

TEST_F(GpuBufferTest, OutOfMemoryMessageNamesBytesDeviceAndMemory) {
  const std::size_t absurd = std::size_t(1) << 50;  // 1 PiB
  try {
    DeviceBuffer buffer(absurd);
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda);
    const std::string& m = e.message();
    EXPECT_NE(m.find("out of GPU memory"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(absurd) + " bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("device 0"), std::string::npos) << m;
    EXPECT_NE(m.find(" free of "), std::string::npos) << m;
  }
  // Not sticky: the device is still usable, and no error is left behind.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  DeviceBuffer small(1024);
  small.memset(0);
}

}  // namespace
}  // namespace sinter::cuda
