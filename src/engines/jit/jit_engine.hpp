// Our own engine: regions become run-time compiled kernels (codegen over kernels/), compiled by
// NVRTC through the KernelCache. Its candidates are the typed configs of kernel_config.hpp; a
// saved step is its kernels' launch records and cubins.
#pragma once

#include "engines/engine.hpp"

namespace sinter::jit {

class JitEngine : public Engine {
 public:
  std::string_view name() const override { return "jit"; }
  Support supports(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const override;
  std::vector<Candidate> candidates(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const override;
  std::unique_ptr<PreparedStep> prepare(const Graph& g, const fuse::Region& r, const Candidate& c,
                                        EngineContext& ctx) const override;
  SavedStep save_step(const PreparedStep& step, BlobStore& blobs) const override;
  std::string check_saved_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                               const BlobStore& blobs) const override;
  std::unique_ptr<PreparedStep> load_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                          const BlobStore& blobs, size_t workspace_bytes,
                                          LoadContext& ctx) const override;
  std::vector<GeneratedSource> generated_sources(const Graph& g, const fuse::Region& r,
                                                 const EngineContext& ctx) const override;
  std::optional<Candidate> candidate_for_config(const Graph& g, const fuse::Region& r, const EngineContext& ctx,
                                                const std::string& config, std::string* why) const override;
  bool candidates_without_gpu() const override { return true; }
  bool runs_any_region() const override { return true; }
  std::unique_ptr<MegaStep> mega_step(const Graph& g, const fuse::Region& r, const std::string& config,
                                      PreparedStep& step, const cuda::DeviceProperties& device,
                                      std::string* why) const override;
};

}  // namespace sinter::jit
