// Our own engine: regions become run-time compiled kernels (codegen over kernels/), compiled by
// NVRTC through the KernelCache.
#pragma once

#include <memory>
#include <span>

#include "engines/engine.hpp"
#include "cuda/library.hpp"
#include "engines/jit/kernel_spec.hpp"

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

// For plans: the kernels of a step that prepare() made, each with its final spec (persistent
// grids already sized) and its cubin; empty when `step` is not a jit step.
struct CompiledKernel {
  const KernelSpec* spec;
  std::span<const char> cubin;
  std::string cache_key;  // the KernelCache key (hex) the cubin was compiled under
};
std::vector<CompiledKernel> compiled_kernels(const PreparedStep& step);

// A jit step from compiled kernels (a plan's): one loaded library (cubin) per kernel, shared
// with other steps where they run the same cubin; nothing is generated or compiled.
std::unique_ptr<PreparedStep> load_jit_step(std::vector<KernelSpec> specs,
                                            std::vector<std::shared_ptr<const cuda::Library>> libraries,
                                            size_t workspace_bytes, int device);

}  // namespace sinter::jit
