// Which sdpa regions cuDNN's fused flash attention can run, and how: the operands' dims and
// strides as cuDNN sees them (BHSD logical order, any strides with a unit head-dim stride), the
// scale, the causal alignment, a float bias, GQA, and whether the statistics are stored.
// Pure analysis of the graph (and of the loaded cuDNN's version, passed in): it needs no GPU,
// so `sinter engines` can say why not anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuse/region.hpp"

namespace sinter::cudnn {

struct SdpaOperand {
  int input = -1;               // index among the region's inputs
  std::vector<int64_t> dims;    // 4-d, BHSD order (bias: broadcastable to [B,H,Sq,Skv])
  std::vector<int64_t> strides;  // in elements; a broadcast axis of extent 1 keeps its stride
};

struct SdpaPattern {
  DType dtype = DType::bf16;  // q, k, v and o
  int64_t b = 0, h = 0, h_kv = 0, s_q = 0, s_kv = 0, d = 0, d_v = 0;
  SdpaOperand q, k, v;
  std::optional<SdpaOperand> bias;
  float scale = 1.0f;
  CausalMask causal = CausalMask::none;
  int o_output = -1;      // index among the region's outputs
  int stats_output = -1;  // -1: the statistics are not stored (a virtual tensor in cuDNN)
  std::string summary;    // "bf16 causal(top_left) gqa 32/8 bias", for candidates' descriptions
};

struct SdpaMatch {
  std::optional<SdpaPattern> pattern;
  std::string reason;
};

// `cudnn_version` as cudnnGetVersion() returns it (91400); some limits depend on it.
SdpaMatch match_sdpa(const Graph& g, const fuse::Region& r, size_t cudnn_version);

}  // namespace sinter::cudnn
