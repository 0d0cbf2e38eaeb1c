// Our own engine: regions become run-time compiled kernels (codegen over kernels/), compiled by
// NVRTC through the KernelCache.
#pragma once

#include "engines/engine.hpp"

namespace sinter::jit {

class JitEngine : public Engine {
 public:
  std::string_view name() const override { return "jit"; }
  Support supports(const Graph& g, const fuse::Region& r) const override;
  std::vector<Candidate> candidates(const Graph& g, const fuse::Region& r,
                                    const EngineContext& ctx) const override;
  std::unique_ptr<PreparedStep> prepare(const Graph& g, const fuse::Region& r, const Candidate& c,
                                        EngineContext& ctx) const override;
};

}  // namespace sinter::jit
