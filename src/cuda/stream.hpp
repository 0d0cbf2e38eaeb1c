// An owned CUDA stream. Functions that merely enqueue work take a plain cudaStream_t, so the
// legacy default stream (nullptr) and streams owned by callers work as well.
#pragma once

#include <cuda_runtime_api.h>

namespace sinter::cuda {

class Stream {
 public:
  // Non-blocking by default: Sinter's streams must not serialize with the legacy default stream
  // that other libraries in the same process may use.
  explicit Stream(unsigned int flags = cudaStreamNonBlocking);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }
  int device() const { return device_; }

  void synchronize() const;
  // True when all work enqueued so far has finished.
  bool query() const;

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

}  // namespace sinter::cuda
