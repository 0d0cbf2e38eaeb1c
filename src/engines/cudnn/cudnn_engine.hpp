// cuDNN as an engine (DESIGN.md key idea 4), through the backend Graph API of a run-time loaded
// libcudnn.so.9: sdpa regions lowered to cuDNN's fused flash attention (sdpa_pattern.hpp,
// sdpa_graph.hpp), conv regions with a bias/relu/residual epilogue chain to a fused conv graph
// (conv_pattern.hpp, conv_graph.hpp), matmul with that chain (matmul_lowering.hpp) and
// layernorm/rmsnorm to NORM_FORWARD (norm_lowering.hpp); candidates are the engine configs of heuristic modes A, B and fallback that
// build into an execution plan (engine_configs.hpp). Without the library every region is refused
// with "cuDNN not found (...)".
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "engines/engine.hpp"

namespace sinter::cudnn {

class CudnnEngine : public Engine {
 public:
  // Each candidate is a finalized plan, and finalizing may compile kernels: few by default.
  // `lower_secondary` false refuses the kinds where cuDNN is not expected to beat the default
  // engines, matmul (cuBLASLt, jit) and layernorm/rmsnorm (jit): the executor's `auto` leaves
  // them there; forcing cudnn, or `sinter engines`, offers them.
  explicit CudnnEngine(int max_candidates = 4, bool lower_secondary = true)
      : max_candidates_(max_candidates), lower_secondary_(lower_secondary) {}
  std::string_view name() const override { return "cudnn"; }
  // Plan bundles store a cuDNN step as its engine config (engine index + knobs) and, where cuDNN
  // serializes it, its execution plan, rebuilt at load (load_cudnn_step). SINTER_PLAN_CUDNN=0
  // keeps cuDNN steps out of plans (every step then loads without cuDNN).
  bool steps_can_be_saved() const override;
  Support supports(const Graph& g, const fuse::Region& r) const override;
  std::vector<Candidate> candidates(const Graph& g, const fuse::Region& r,
                                    const EngineContext& ctx) const override;
  std::unique_ptr<PreparedStep> prepare(const Graph& g, const fuse::Region& r, const Candidate& c,
                                        EngineContext& ctx) const override;

 private:
  int max_candidates_;
  bool lower_secondary_;
};

// The loaded cuDNN's version ("9.14.0"), or "none".
std::string cudnn_version();

// What a plan bundle stores for a cuDNN step (engine_configs.hpp SavedConfig as text), or
// nullopt when `step` is not one.
std::optional<std::vector<char>> engine_config(const PreparedStep& step);
// A cuDNN step rebuilt from a bundle: the region lowered again (every kind cuDNN lowers, as if it
// were forced), the saved engine config built directly (no heuristic query) and finalized. Throws
// Error(corrupt_bundle) for a config that does not parse, Error(unsupported) naming the engine and
// cuDNN's status when this cuDNN cannot build it, or when it needs more workspace than `workspace`.
std::unique_ptr<PreparedStep> load_cudnn_step(const Graph& g, const fuse::Region& r, std::span<const char> config,
                                              size_t workspace);

}  // namespace sinter::cudnn
