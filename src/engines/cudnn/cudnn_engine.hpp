// cuDNN as an engine (DESIGN.md key idea 4), through the backend Graph API of a run-time loaded
// libcudnn.so.9: sdpa regions lowered to cuDNN's fused flash attention (sdpa_pattern.hpp,
// sdpa_graph.hpp), conv regions with a bias/relu/residual epilogue chain to a fused conv graph
// (conv_pattern.hpp, conv_graph.hpp), matmul with that chain (matmul_lowering.hpp) and
// layernorm/rmsnorm to NORM_FORWARD (norm_lowering.hpp); candidates are the engine configs of heuristic modes A, B and fallback that
// build into an execution plan (engine_configs.hpp). Without the library every region is refused
// with "cuDNN not found (...)".
#pragma once

#include "engines/engine.hpp"

namespace sinter::cudnn {

class CudnnEngine : public Engine {
 public:
  std::string_view name() const override { return "cudnn"; }
  // Matmul and layernorm/rmsnorm regions, where cuDNN is not expected to beat the other engines,
  // are supported only when the user names cuDNN (EngineContext::named_engines).
  Support supports(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const override;
  // Each candidate is a finalized plan, and finalizing may compile kernels: few
  // (EngineContext::max_vendor_candidates).
  std::vector<Candidate> candidates(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const override;
  std::unique_ptr<PreparedStep> prepare(const Graph& g, const fuse::Region& r, const Candidate& c,
                                        EngineContext& ctx) const override;
  // A saved step is its engine config (engine index + knobs, engine_configs.hpp SavedConfig as
  // text) and, where cuDNN serializes it, its execution plan. Loading lowers the region again
  // (every kind cuDNN lowers), builds the saved config directly (no heuristic query) and
  // finalizes it: Error(corrupt_bundle) for a config that does not parse, Error(unsupported)
  // naming the engine and cuDNN's status when this cuDNN cannot build it, or when it needs more
  // workspace than the plan reserved.
  SavedStep save_step(const PreparedStep& step, BlobStore& blobs) const override;
  std::string check_saved_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                               const BlobStore& blobs) const override;
  std::unique_ptr<PreparedStep> load_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                          const BlobStore& blobs, size_t workspace_bytes,
                                          LoadContext& ctx) const override;
  // Deserializing an execution plan takes milliseconds, and cuDNN's process-wide handle must not
  // be used by two threads at once: a runner loads cuDNN steps on one worker thread.
  bool loads_slowly() const override { return true; }
};

// The loaded cuDNN's version ("9.14.0"), or "none".
std::string cudnn_version();

}  // namespace sinter::cudnn
