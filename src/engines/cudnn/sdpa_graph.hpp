// Lowers an SdpaPattern into a cuDNN operation graph in the shape cuDNN's fused flash attention
// recognizes (the same decomposition cudnn-frontend emits):
//   S = Q K^T (K read through transposed strides; GQA by broadcasting K/V heads)
//   S *= scale (a by-value scalar); S += bias
//   causal: row/col GEN_INDEX, row (+ Skv - Sq for bottom-right) >= col, BINARY_SELECT(S, -inf)
//   softmax: M = max(S), E = exp(S - M), Z = sum(E), stats = M + log(Z), P = E / Z
//   (P stored in q's dtype: the second matmul takes its A operand only in the io type)
//   O = P V
// Other virtual tensors are float; the statistics are virtual when the region does not store them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engines/cudnn/backend_descriptor.hpp"
#include "engines/cudnn/sdpa_pattern.hpp"

namespace sinter::cudnn {

// Tensor uids of the device operands (variant pack entries).
enum SdpaUid : int64_t { kUidQ = 1, kUidK, kUidV, kUidO, kUidStats, kUidBias };

// A finalized operation graph and everything it refers to (cuDNN keeps pointers to the
// descriptors, and by-value scalars are read from host memory at execute time).
struct OperationGraph {
  std::vector<DescriptorPtr> keep;  // tensors and operations, alive as long as the graph
  DescriptorPtr graph;
  // Host storage of by-value scalars, by uid; pointers into it go into every variant pack.
  struct Scalar {
    int64_t uid;
    union {
      float f;
      int32_t i;
    } value;
  };
  std::vector<Scalar> scalars;
  std::vector<cudnnBackendDescriptor_t> ops;  // the operations, in order
  // One line per operation with its tensors' names, types, dims and flags, in order
  // ("DIV(f32) E[f32 1x2x3x4 virtual], Z[...] -> P[bf16 1x2x3x4 virtual]"); empty for lowerings
  // that do not write one. Shown when cuDNN finds no engine for the graph.
  std::vector<std::string> recipe;
};

// The finalized operations (no handle needed, so this runs without a GPU), then the graph.
std::unique_ptr<OperationGraph> build_sdpa_operations(const SdpaPattern& p);
// Finalizes the operation graph of any lowering's operations (needs a handle: a GPU).
void finalize_graph(OperationGraph& g, cudnnHandle_t handle);

}  // namespace sinter::cudnn
