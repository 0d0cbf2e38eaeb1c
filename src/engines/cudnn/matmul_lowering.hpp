// matmul with a bias/relu/residual epilogue chain (epilogue_chain.hpp) as one cuDNN operation
// graph: MATMUL into a float virtual tensor, then the chain. Operands are 3-d in cuDNN ([batch,
// rows, cols]); a rank-2 operand is batch 1, a batch-1 operand is broadcast over the other's
// batch, and either of the last two axes may be the unit-stride one (transposes are strides).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engines/cudnn/epilogue_chain.hpp"
#include "fuse/region.hpp"

namespace sinter::cudnn {

struct MatmulLoweringPattern {
  DType dtype = DType::bf16;
  int a_input = -1, b_input = -1;
  std::vector<int64_t> a_dims, a_strides, b_dims, b_strides, y_dims, y_strides;
  std::vector<EpilogueStep> epilogue;
  int y_output = -1;
  std::string summary;  // "bf16 [3,77,300]x[300,136]+bias+relu"
};

struct MatmulLoweringMatch {
  std::optional<MatmulLoweringPattern> pattern;
  std::string reason;
};

MatmulLoweringMatch match_matmul_lowering(const Graph& g, const fuse::Region& r);

enum MatmulUid : int64_t { kMatmulUidA = 1, kMatmulUidB = 2, kMatmulUidY = 3, kMatmulUidEpilogue = 10 };

std::unique_ptr<OperationGraph> build_matmul_operations(const MatmulLoweringPattern& p);

}  // namespace sinter::cudnn
