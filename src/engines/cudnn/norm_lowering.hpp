// layernorm and rmsnorm forward (inference phase) as one cuDNN NORM_FORWARD operation: x viewed
// as [rows, C, 1, 1], weight and bias as [1, C, 1, 1], epsilon a by-value scalar. Only a bare
// norm region (no fused prologue or epilogue) with row-contiguous x is lowered; the matcher is
// pure graph analysis, the builder needs the library but no GPU.
#pragma once

#include <optional>
#include <string>

#include "engines/cudnn/sdpa_graph.hpp"  // OperationGraph
#include "fuse/region.hpp"

namespace sinter::cudnn {

struct NormPattern {
  bool rms = false;
  DType dtype = DType::bf16;
  int64_t rows = 0, cols = 0;
  float epsilon = 0;
  int x_input = -1, weight_input = -1, bias_input = -1, y_output = -1;
  std::string summary;  // "layernorm bf16 C4096"
};

struct NormMatch {
  std::optional<NormPattern> pattern;
  std::string reason;
};

NormMatch match_norm(const Graph& g, const fuse::Region& r);

enum NormUid : int64_t { kNormUidX = 1, kNormUidScale, kNormUidBias, kNormUidY };

std::unique_ptr<OperationGraph> build_norm_operations(const NormPattern& p);

}  // namespace sinter::cudnn
