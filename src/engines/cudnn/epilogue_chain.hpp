// The pointwise epilogue chains cuDNN's runtime fusion takes after a conv or a matmul: add of a
// per-channel bias (over the output's last axis), relu, add of a residual of the output's shape,
// in any order, each step reading the previous value; only the last value stored. Shared by the
// conv and matmul lowerings: the matcher (pure graph analysis) and the builder of the pointwise
// operations.
#pragma once

#include <string>
#include <vector>

#include "engines/cudnn/sdpa_graph.hpp"  // OperationGraph
#include "fuse/region.hpp"

namespace sinter::cudnn {

struct EpilogueStep {
  enum Kind { bias, relu, residual } kind;
  int input = -1;  // the region input it reads (bias, residual)
};

struct EpilogueChain {
  std::vector<EpilogueStep> steps;
  int output = -1;      // the region output the chain's last value is
  std::string summary;  // "+bias+relu"
  std::string reason;   // why not, when output < 0
};

// `start` is the anchor's output, `out` its TensorInfo; every step must keep `dtype`.
// `other_outputs`: region outputs the caller lowers itself (exit reductions), not chain values.
EpilogueChain match_epilogue_chain(const Graph& g, const fuse::Region& r, TensorId start, DType dtype,
                                   size_t other_outputs = 0);

// Appends one pointwise op per step after `value` (the anchor's float virtual output), the last
// writing `y`. Tensors are in cuDNN's order: `dims`/`strides` those of y (and of a residual),
// `bias_dims`/`bias_strides` the per-channel vector's. Uids of the step operands: uid_base + i.
void append_epilogue(OperationGraph& g, const std::vector<EpilogueStep>& steps, const Descriptor& value,
                     const Descriptor& y, DType dtype, const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& strides, const std::vector<int64_t>& bias_dims,
                     const std::vector<int64_t>& bias_strides, int64_t uid_base);

}  // namespace sinter::cudnn
