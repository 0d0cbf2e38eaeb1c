// Which conv regions cuDNN runs as one fused operation graph: a 2-d NHWC convolution (KRSC
// weights, groups 1) followed by a chain of epilogue ops that cuDNN's runtime fusion engines take:
// add of a per-channel bias, relu, add of a residual of the output's shape; only the chain's last
// value stored, with optional exit reductions of it (sum or amax, per channel or global, f32). Pure graph analysis, no GPU.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engines/cudnn/epilogue_chain.hpp"
#include "fuse/region.hpp"

namespace sinter::cudnn {

using ConvEpilogueOp = EpilogueStep;

// An exit reduction of the stored output y, lowered as a cuDNN REDUCTION node reading y's value:
// a sum or an amax per output channel (over N, H, W: Sinter's "columns" of an NHWC tensor) or over
// everything, into an f32 output that the step zeroes before each launch.
struct ConvReduction {
  bool amax = false;      // else a sum
  bool per_channel = false;  // [K] (columns); else one value
  int output = -1;        // region output index
};

struct ConvPattern {
  DType dtype = DType::bf16;  // x, w, bias, residual and y
  int x_input = -1, w_input = -1, y_output = -1;
  // cuDNN's logical order: x [N,C,H,W], w [K,C,R,S], y [N,K,P,Q], with the NHWC strides
  std::vector<int64_t> x_dims, x_strides, w_dims, w_strides, y_dims, y_strides;
  std::array<int64_t, 2> stride{}, pad_begin{}, pad_end{}, dilation{};
  std::vector<ConvEpilogueOp> epilogue;
  std::vector<ConvReduction> reductions;
  std::string summary;  // "bf16 3x3 s1 +bias+relu"
};

struct ConvMatch {
  std::optional<ConvPattern> pattern;
  std::string reason;
};

ConvMatch match_conv(const Graph& g, const fuse::Region& r);

}  // namespace sinter::cudnn
