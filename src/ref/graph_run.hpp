// One graph's run on the CPU reference, node by node. run_reference() drives it to the end in one
// go; run_reference_ranks() drives one per rank and stops each at its collectives, which need
// every rank's input before they can produce anything.
#pragma once

#include <optional>
#include <vector>

#include "ref/ref_tensor.hpp"
#include "sinter/reference.hpp"

namespace sinter::ref {

class GraphRun {
 public:
  // Checks `inputs` against the graph (every input present, with its dtype and dims) and loads
  // them. The graph must outlive the run.
  GraphRun(const Graph& g, const TensorMap& inputs, const ReferenceOptions& opts);

  // Runs nodes in topological order up to the next collective whose group has more than one rank
  // (a collective of world 1 is the identity and runs here), and returns that node without running
  // it; nullopt once every node has run.
  std::optional<NodeId> run_to_collective();
  // The values the pending collective `node` reads, in the order of its inputs.
  std::vector<const RefTensor*> inputs_of(NodeId node) const;
  // Stores the pending collective's result (unrounded; rounded here to its dtype at the tensor
  // boundary, as every node's) and moves past it.
  void finish_collective(NodeId node, std::vector<RefTensor> outputs);

  // The graph outputs (and intermediates, with keep_intermediates) by name, once every node has
  // run.
  TensorMap results() const;

 private:
  void store_outputs(NodeId nid, std::vector<RefTensor> out);

  const Graph& g_;
  ReferenceOptions opts_;
  std::vector<NodeId> order_;
  size_t next_ = 0;                   // index into order_ of the next node to run
  std::vector<RefTensor> values_;     // by tensor
  std::vector<bool> ready_;           // by tensor
  std::vector<bool> keep_;            // by tensor: outputs (and intermediates when asked)
  std::vector<bool> is_output_;       // by tensor
  std::vector<int64_t> reads_left_;   // by tensor: readers not yet run
  std::vector<int> step_;             // by node: its step under ReferenceOptions::fused_steps
  std::vector<NodeId> producer_;      // by tensor
  // The rounded copy of a float value that stays unrounded for readers in its own step and is
  // read rounded by readers in other steps (ReferenceOptions::fused_steps).
  std::vector<RefTensor> stored_;
};

}  // namespace sinter::ref
