// An owned CUDA event, for timing (elapsed_ms) and for ordering work across streams.
#pragma once

#include <cuda_runtime_api.h>

namespace sinter::cuda {

class Event {
 public:
  // Timing is enabled by default; pass cudaEventDisableTiming for pure synchronization events,
  // which are cheaper to record and wait on.
  explicit Event(unsigned int flags = cudaEventDefault);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }

  void record(cudaStream_t stream = nullptr);
  void synchronize() const;
  // True when the work captured by the last record() has finished.
  bool query() const;
  // Makes `stream` wait for this event without blocking the host.
  void wait_on(cudaStream_t stream) const;

 private:
  cudaEvent_t event_ = nullptr;
};

// Milliseconds between two recorded events (resolution about 0.5 microseconds). Waits for `end`.
float elapsed_ms(const Event& start, const Event& end);

}  // namespace sinter::cuda
