// The engine interface (DESIGN.md key idea 4). An engine says whether it supports a region (and
// if not, why), which candidates it has (ranked by its own heuristic), and prepares one candidate
// into a step that can be launched. The tuner and executors know nothing of engine internals.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "fuse/region.hpp"

namespace sinter {

struct Support {
  bool ok = true;
  std::string reason;  // why not, when !ok
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

struct Candidate {
  std::string engine;       // the engine's name
  int index = 0;            // rank within the engine's list, 0 = its favourite
  // The engine's typed config as text (jit: kernel_config.hpp; cuBLASLt: the algo's fields):
  // what the timing cache keys on and a plan records. Two candidates of one engine for one
  // region never share a config.
  std::string config;
  std::string description;  // human-readable ("pointwise vec8 unroll4 block256")
};

// Device pointers of one launch, in the region's input and output order.
struct Binding {
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  void* workspace = nullptr;  // workspace_bytes() of memory, zeroed once when allocated
};

class PreparedStep {
 public:
  virtual ~PreparedStep() = default;
  virtual void launch(const Binding& binding, cudaStream_t stream) = 0;
  // Workspace the step needs; it must be zero before the first launch and the step leaves it
  // zero after each launch (exit reductions reset their accumulators).
  virtual size_t workspace_bytes() const { return 0; }
  virtual std::string describe() const = 0;
};

struct EngineContext {
  cuda::KernelCache& cache;
  cuda::DeviceProperties device;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  virtual Support supports(const Graph& g, const fuse::Region& r) const = 0;
  virtual std::vector<Candidate> candidates(const Graph& g, const fuse::Region& r,
                                            const EngineContext& ctx) const = 0;
  virtual std::unique_ptr<PreparedStep> prepare(const Graph& g, const fuse::Region& r,
                                                const Candidate& c, EngineContext& ctx) const = 0;
  // Whether a plan bundle can store this engine's steps (src/exec/plan_builder.cpp); a build
  // for a plan leaves the others out.
  virtual bool steps_can_be_saved() const { return true; }
};

}  // namespace sinter
