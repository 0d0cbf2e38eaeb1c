#include "cuda/timing.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cuda/event.hpp"

namespace sinter::cuda {

TimingMode timing_mode() {
  const char* v = std::getenv("SINTER_TIMING");
  return v && std::string(v) == "synced" ? TimingMode::synced : TimingMode::queued;
}

std::vector<float> time_calls(cudaStream_t stream, int iters, const std::function<void()>& call,
                              const std::function<void()>& before_each) {
  const bool synced = timing_mode() == TimingMode::synced;
  std::vector<Event> start(static_cast<size_t>(std::max(iters, 0)));
  std::vector<Event> stop(start.size());
  std::vector<float> ms;
  for (size_t i = 0; i < start.size(); ++i) {
    if (before_each) before_each();
    start[i].record(stream);
    call();
    stop[i].record(stream);
    if (synced) stop[i].synchronize();
  }
  for (size_t i = 0; i < start.size(); ++i) ms.push_back(elapsed_ms(start[i], stop[i]));
  return ms;
}

}  // namespace sinter::cuda
