// DeviceBuffer: an owned allocation of global memory on one device, with the copies and fills a
// test, the tuner or an executor needs. Sizes and offsets are in bytes and range-checked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

namespace sinter::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates on the current device. Zero bytes gives an empty buffer with data() == nullptr.
  // Out of memory throws ErrorCode::cuda naming the bytes requested, the device and its
  // free/total memory.
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int device() const { return device_; }

  // Synchronous copies: when they return, the data has arrived.
  void copy_from_host(const void* source, std::size_t bytes, std::size_t offset = 0);
  void copy_to_host(void* destination, std::size_t bytes, std::size_t offset = 0) const;
  // Enqueued on `stream`. The host memory must stay alive and unchanged until the stream reaches
  // the copy; only page-locked host memory makes the copy truly asynchronous.
  void copy_from_host_async(const void* source, std::size_t bytes, cudaStream_t stream,
                            std::size_t offset = 0);
  void copy_to_host_async(void* destination, std::size_t bytes, cudaStream_t stream,
                          std::size_t offset = 0) const;
  // Sets `bytes` bytes from `offset` to `value`; bytes == npos means to the end. memset waits
  // for completion, memset_async is ordered on `stream`.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  void memset(int value, std::size_t bytes = npos, std::size_t offset = 0);
  void memset_async(int value, cudaStream_t stream, std::size_t bytes = npos,
                    std::size_t offset = 0);

  // Whole-span conveniences for tests and tools; the span must fit in the buffer.
  template <typename T>
  void upload(std::span<const T> values) {
    copy_from_host(values.data(), values.size_bytes());
  }
  template <typename T>
  void download(std::span<T> values) const {
    copy_to_host(values.data(), values.size_bytes());
  }

 private:
  // Throws ErrorCode::invalid_argument when [offset, offset + bytes) is not inside the buffer.
  void check_range(const char* operation, std::size_t bytes, std::size_t offset) const;
  void release() noexcept;

  void* data_ = nullptr;
  std::size_t size_ = 0;
  int device_ = 0;
};

}  // namespace sinter::cuda
