#include "mega/segments.hpp"

namespace sinter::mega {

std::vector<Piece> split_segments(const std::vector<StepView>& steps) {
  std::vector<Piece> out;
  Piece run{true, {}};
  bool has_task = false;
  auto flush = [&] {
    if (has_task) {
      out.push_back(run);
    } else {
      for (size_t s : run.steps) out.push_back({false, {s}});  // aliases alone: nothing to run
    }
    run = Piece{true, {}};
    has_task = false;
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].mega || steps[i].launches_nothing) {
      run.steps.push_back(i);
      has_task |= steps[i].mega != nullptr;
    } else {
      flush();
      out.push_back({false, {i}});
    }
  }
  flush();
  return out;
}

}  // namespace sinter::mega
