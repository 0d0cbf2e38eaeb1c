// Lowers a ConvPattern into a cuDNN operation graph: CONVOLUTION_FORWARD into a float virtual
// tensor, then one pointwise op per epilogue step (ADD bias [1,K,1,1], RELU_FWD, ADD residual),
// the last one writing the stored output. Tensor uids: x 1, w 2, y 3, epilogue operands 10 + i.
#pragma once

#include "engines/cudnn/conv_pattern.hpp"
#include "engines/cudnn/sdpa_graph.hpp"  // OperationGraph

namespace sinter::cudnn {

enum ConvUid : int64_t { kConvUidX = 1, kConvUidW = 2, kConvUidY = 3, kConvUidEpilogue = 10, kConvUidReduction = 40 };

std::unique_ptr<OperationGraph> build_conv_operations(const ConvPattern& p);

}  // namespace sinter::cudnn
