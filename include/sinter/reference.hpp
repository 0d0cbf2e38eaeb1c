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
// A collective of world 1 is the identity; one of a larger group throws (run the ranks' graphs
// with run_reference_ranks).
TensorMap run_reference(const Graph& g, const TensorMap& inputs, const ReferenceOptions& opts = {});

// Runs a multi-rank program in this process: rank_graphs[r] is rank r's graph and rank_inputs[r]
// its inputs. The ranks run in lockstep: each runs its nodes in topological order up to its next
// collective; a collective runs once every rank of its group has reached it, and every rank then
// goes on. A group is named by its collectives' `group`; its ranks are the ranks whose graphs issue
// collectives on it (of world > 1), numbered in rank order, and there must be `world` of them.
// Collectives of a group are matched by their order of issue on that group; each must agree
// across the group's ranks in op, reduction, axis, world, dtype and dims. A mismatch, a rank that
// finishes its graph without reaching a collective another rank waits in, or ranks waiting in
// collectives of different groups (a deadlock) throw sinter::Error naming the nodes and ranks;
// nothing hangs. Reductions add (or take the max) in rank order in float64 and round once to the
// dtype. Returns each rank's outputs, by name.
std::vector<TensorMap> run_reference_ranks(const std::vector<Graph>& rank_graphs,
                                           const std::vector<TensorMap>& rank_inputs,
                                           const ReferenceOptions& opts = {});

}  // namespace sinter
