// The alias engine: a reshape (or unit-axis permute) of a contiguous tensor runs nothing; its
// output is its input's memory seen with other dims. The memory planner gives the output no
// buffer of its own (Engine::output_shares_input). A reshape of a strided view is a copy, which
// the jit engine's layout kernels run.
#pragma once

#include "engines/engine.hpp"

namespace sinter {

class AliasEngine : public Engine {
 public:
  std::string_view name() const override { return "alias"; }
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
  bool output_shares_input() const override { return true; }
  bool candidates_without_gpu() const override { return true; }
};

}  // namespace sinter
