#include "cuda/buffer.hpp"

#include <cstdio>
#include <string>
#include <utility>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

std::string bytes_text(std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%.2f GiB)", bytes, double(bytes) / (1ull << 30));
  return text;
}

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : size_(bytes) {
  device_ = current_device();
  if (bytes == 0) return;
  cudaError_t status = cudaMalloc(&data_, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: the device stays usable, so leave no error behind
    data_ = nullptr;
    std::size_t free = 0, total = 0;
    std::string memory = "(free/total unknown)";
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
      memory = "with " + bytes_text(free) + " free of " + bytes_text(total);
    }
    cudaGetLastError();
    throw Error(ErrorCode::cuda, "out of GPU memory: cudaMalloc of " + bytes_text(bytes) +
                                     " requested on device " + std::to_string(device_) + " " +
                                     memory);
  }
  SINTER_CUDA_CHECK(status);
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      device_(other.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    device_ = other.device_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (!data_) return;
  // Free on the owning device, whichever device the caller has made current since; errors are
  // swallowed because a destructor has no one to report to.
  int previous = -1;
  if (cudaGetDevice(&previous) == cudaSuccess && previous != device_) cudaSetDevice(device_);
  cudaFree(data_);
  if (previous >= 0 && previous != device_) cudaSetDevice(previous);
  data_ = nullptr;
  size_ = 0;
}

void DeviceBuffer::check_range(const char* operation, std::size_t bytes,
                               std::size_t offset) const {
  if (offset > size_ || bytes > size_ - offset) {
    throw Error(ErrorCode::invalid_argument,
                std::string("DeviceBuffer::") + operation + " of " + std::to_string(bytes) +
                    " bytes at offset " + std::to_string(offset) + " does not fit in a buffer of " +
                    std::to_string(size_) + " bytes");
  }
}

// The synchronous operations enqueue on the legacy default stream and wait for it: cudaMemcpy
// from pageable memory may return before the data has landed, and cudaMemset may return before
// it has run, which would race with kernels on Sinter's non-blocking streams.
void DeviceBuffer::copy_from_host(const void* source, std::size_t bytes, std::size_t offset) {
  check_range("copy_from_host", bytes, offset);  // so an error names the call that was made
  copy_from_host_async(source, bytes, nullptr, offset);
  SINTER_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void DeviceBuffer::copy_to_host(void* destination, std::size_t bytes, std::size_t offset) const {
  check_range("copy_to_host", bytes, offset);
  copy_to_host_async(destination, bytes, nullptr, offset);
  SINTER_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void DeviceBuffer::copy_from_host_async(const void* source, std::size_t bytes,
                                        cudaStream_t stream, std::size_t offset) {
  check_range("copy_from_host_async", bytes, offset);
  if (bytes == 0) return;
  SINTER_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(data_) + offset, source, bytes,
                                    cudaMemcpyHostToDevice, stream));
}

void DeviceBuffer::copy_to_host_async(void* destination, std::size_t bytes, cudaStream_t stream,
                                      std::size_t offset) const {
  check_range("copy_to_host_async", bytes, offset);
  if (bytes == 0) return;
  SINTER_CUDA_CHECK(cudaMemcpyAsync(destination, static_cast<const char*>(data_) + offset, bytes,
                                    cudaMemcpyDeviceToHost, stream));
}

void DeviceBuffer::memset(int value, std::size_t bytes, std::size_t offset) {
  memset_async(value, nullptr, bytes, offset);
  SINTER_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void DeviceBuffer::memset_async(int value, cudaStream_t stream, std::size_t bytes,
                                std::size_t offset) {
  if (bytes == npos) bytes = offset <= size_ ? size_ - offset : 0;
  check_range("memset_async", bytes, offset);
  if (bytes == 0) return;
  SINTER_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(data_) + offset, value, bytes, stream));
}

}  // namespace sinter::cuda
