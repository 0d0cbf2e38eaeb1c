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
  // The host waits for each call before enqueuing the next: with the GPU idle, a call's start
  // event records at once and its kernel arrives after the host has prepared the launch, a few
  // microseconds later, inside the interval (host launch latency included).
  synced,
  // kBackToBackCalls calls between two events, the interval divided by their number: kernels
  // that follow one another with nothing between them, as in a model's step (a programmatic
  // launch can start the next kernel's CTAs during this one's tail, which an event between the
  // two forbids). Each interval is still one "time"; with an L2 flush before each call
  // (`before_each`) it times one call per interval, as `queued`.
  back_to_back,
};
constexpr int kBackToBackCalls = 10;

// The time of each of `iters` calls of `call` on `stream`, in milliseconds, each between two
// events, by `mode`. `before_each` (optional) runs before each call's start event, outside its
// interval: an L2 flush. The host waits for the last call before returning.
std::vector<float> time_calls(cudaStream_t stream, int iters, const std::function<void()>& call,
                              const std::function<void()>& before_each = {}, TimingMode mode = TimingMode::queued);

}  // namespace sinter::cuda
