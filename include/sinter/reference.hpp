// The CPU reference executor: runs any valid graph on host tensors. It is the oracle for every
// numeric test. Each op computes in float64 and its outputs are rounded to their dtype (round to
// nearest even; fp8 saturates) at the tensor boundary, exactly once.
#pragma once

#include <string>
#include <vector>

#include "sinter/graph.hpp"
#include "sinter/host_tensor.hpp"

namespace sinter {

struct ReferenceOptions {
  // Also return every intermediate tensor, by name (used by the fusion tests).
  bool keep_intermediates = false;
  // false: only what a fused kernel rounds is rounded (graph outputs, casts and non-float
  // tensors); other float intermediates keep float64. The unfused semantics (true) and the fused
  // one (false) are both correct answers; where they differ (a sum that cancels after its terms
  // were rounded) a GPU test accepts an output that agrees with either.
  bool round_intermediates = true;
  // With round_intermediates false, the plan's semantics: the nodes of each step of a plan (by
  // name; StepDescription::nodes). A float value read inside its step stays unrounded (a fused
  // kernel keeps it in a register); one read by another step went through memory and is read
  // rounded, as is every graph output. Nodes in no step are steps of their own.
  std::vector<std::vector<std::string>> fused_steps;
};

// `inputs` must hold every graph input by name, with its declared dtype and dims (strides may
// differ: any layout is read correctly). Returns the graph outputs by name.
TensorMap run_reference(const Graph& g, const TensorMap& inputs, const ReferenceOptions& opts = {});

}  // namespace sinter
