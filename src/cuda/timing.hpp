// How Sinter times GPU work: CUDA events around each call, the calls enqueued back to back.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

namespace sinter::cuda {

enum class TimingMode {
  // Every call enqueued before the host waits once (as Triton's do_bench does): while the GPU
  // runs call i, the host has already enqueued call i + 1, so no interval holds the host's
  // launch latency.
  queued,
  // The host waits for each call before enqueuing the next (Sinter's method before session 9):
  // with the GPU idle, a call's start event records at once and its kernel arrives after the
  // host has prepared the launch, a few microseconds later, inside the interval.
  synced,
};

// SINTER_TIMING=synced selects the old method (to compare the two in one process); otherwise
// queued. Read at each call.
TimingMode timing_mode();

// The time of each of `iters` calls of `call` on `stream`, in milliseconds, each between two
// events. `before_each` (optional) runs before each call's start event, outside its interval:
// an L2 flush. The host waits for the last call before returning.
std::vector<float> time_calls(cudaStream_t stream, int iters, const std::function<void()>& call,
                              const std::function<void()>& before_each = {});

}  // namespace sinter::cuda
