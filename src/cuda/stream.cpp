#include "cuda/stream.hpp"

#include <utility>

#include "cuda/check.hpp"
#include "cuda/device.hpp"

namespace sinter::cuda {

Stream::Stream(unsigned int flags) {
  device_ = current_device();
  SINTER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, flags));
}

Stream::~Stream() {
  // Destroying a stream with work still queued is allowed: the work completes, then the stream
  // goes. Errors here have no one to go to.
  if (stream_) cudaStreamDestroy(stream_);
}

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Stream::synchronize() const { SINTER_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

bool Stream::query() const {
  cudaError_t status = cudaStreamQuery(stream_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();  // "not ready" is an answer, not an error to leave behind
    return false;
  }
  SINTER_CUDA_CHECK(status);
  return true;
}

}  // namespace sinter::cuda
