// Which steps of a plan run inside megakernels: a segment is a maximal run of consecutive steps
// that are megakernel tasks (Engine::mega_step gave a MegaStep) or launch nothing (aliases); every
// other step runs as its own launch between segments, in plan order, on the same stream.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sinter {
class MegaStep;
}

namespace sinter::mega {

struct StepView {
  bool launches_nothing = false;  // an alias: its output is its input's memory
  MegaStep* mega = nullptr;       // null: it runs as its own launch
};

struct Piece {
  bool mega = false;          // a megakernel segment, else one step launched on its own
  std::vector<size_t> steps;  // plan steps, in order (a segment's aliases included)
};

std::vector<Piece> split_segments(const std::vector<StepView>& steps);

}  // namespace sinter::mega
