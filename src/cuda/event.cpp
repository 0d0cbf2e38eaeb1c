#include "cuda/event.hpp"

#include <utility>

#include "cuda/check.hpp"

namespace sinter::cuda {

Event::Event(unsigned int flags) { SINTER_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(cudaStream_t stream) { SINTER_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void Event::synchronize() const { SINTER_CUDA_CHECK(cudaEventSynchronize(event_)); }

bool Event::query() const {
  cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  SINTER_CUDA_CHECK(status);
  return true;
}

void Event::wait_on(cudaStream_t stream) const {
  SINTER_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

float elapsed_ms(const Event& start, const Event& end) {
  end.synchronize();
  float ms = 0;
  SINTER_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

}  // namespace sinter::cuda
