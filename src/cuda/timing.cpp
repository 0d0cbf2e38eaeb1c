#include "cuda/timing.hpp"

#include <algorithm>

#include "cuda/event.hpp"

namespace sinter::cuda {

std::vector<float> time_calls(cudaStream_t stream, int iters, const std::function<void()>& call,
                              const std::function<void()>& before_each, TimingMode mode) {
  const bool synced = mode == TimingMode::synced;
  const int per_interval = mode == TimingMode::back_to_back && !before_each ? kBackToBackCalls : 1;
  std::vector<Event> start(static_cast<size_t>(std::max(iters, 0)));
  std::vector<Event> stop(start.size());
  std::vector<float> ms;
  for (size_t i = 0; i < start.size(); ++i) {
    if (before_each) before_each();
    start[i].record(stream);
    for (int j = 0; j < per_interval; ++j) call();
    stop[i].record(stream);
    if (synced) stop[i].synchronize();
  }
  for (size_t i = 0; i < start.size(); ++i) ms.push_back(elapsed_ms(start[i], stop[i]) / per_interval);
  return ms;
}

}  // namespace sinter::cuda
