// The engine interface (DESIGN.md key idea 4). An engine says whether it supports a region (and
// if not, why), which candidates it has (ranked by its own heuristic, each a typed config written
// as text), prepares one candidate into a step that can be launched, and saves, checks and loads
// its own steps in a plan. Everything above the engines (tune/, plan/, exec/, compile/, tools/)
// reaches them through this interface and the registry (registry.hpp), never by name.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "engines/library_cache.hpp"
#include "engines/saved_step.hpp"
#include "engines/task_box.hpp"
#include "fuse/region.hpp"
#include "sinter/communicator.hpp"
#include "sinter/log.hpp"

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
  // Enqueues the step's work on `stream`. Allocates nothing; may encode what depends on the
  // pointers (TMA tensor maps) when they changed since the last launch.
  virtual void launch(const Binding& binding, cudaStream_t stream) = 0;
  // Workspace the step needs; it must be zero before the first launch and the step leaves it
  // zero after each launch (exit reductions reset their accumulators).
  virtual size_t workspace_bytes() const { return 0; }
  virtual std::string describe() const = 0;
};

// A prepared step as the megakernel runs it (src/mega/): its kernels' sources, each kernel's
// grid (one task a CTA) and block, and the argument bytes for a binding. An engine that can run
// a step inside a megakernel returns one from Engine::mega_step; the others run their steps
// between megakernel segments.
// A collective's push kernel (kernels/mega/collective.cuh): each task writes into every rank's
// memory, and its arrival is counted on every rank (SINTER_MEGA_PUBLISH_RANKS); task b of the
// step's next kernel waits for block b's arrivals from all `world` ranks.
struct MegaRankArrivals {
  int world = 0;                               // 0: an ordinary kernel
  std::string group;                           // the collective's group
  std::shared_ptr<Communicator::State> comm;   // its communicator (null: world 1, or not bound yet)
};

struct MegaTaskKernel {
  std::string source;       // the standalone kernel's generated source
  std::string entry;        // its __global__ function
  std::string description;  // as the step describes it
  unsigned grid[3] = {1, 1, 1};
  unsigned threads = 0;     // block size (1D)
  size_t dynamic_shared_memory = 0;
  size_t arg_bytes = 0;     // size of its argument struct
  unsigned registers = 0;   // registers a thread its standalone kernel was compiled with (0: not known)
  // What each task reads and writes of the step's tensors where the kernel knows its tiling
  // (task_box.hpp); a tensor without a box is read or written whole by every task.
  std::vector<TaskBox> boxes;
  MegaRankArrivals arrivals;
  // The step input its source's task prologue (sinter_task_prologue) reads before the task's
  // waits, e.g. the weight a TMA decode tile starts streaming; -1: it has none.
  int prologue_slot = -1;
};

class MegaStep {
 public:
  virtual ~MegaStep() = default;
  // In launch order: each kernel's tasks may start only when the previous kernel's are all done.
  virtual const std::vector<MegaTaskKernel>& kernels() const = 0;
  // Kernel k's argument bytes with the pointers of `binding` (arg_bytes of them).
  virtual std::vector<char> arguments(size_t k, const Binding& binding) = 0;
  // Memory its tasks share with other ranks (a collective's receive buffer), allocated once when
  // a runner is made, before its megakernels: every rank allocates in plan order, at the same
  // time (NCCL registers symmetric memory collectively).
  virtual void allocate() {}
};

struct EngineContext {
  cuda::KernelCache& cache;
  cuda::DeviceProperties device;
  // The engines the user named, in order ("" none): an engine may offer more when named (cuDNN
  // lowers matmuls and norms only then).
  std::vector<std::string> named_engines;
  int max_vendor_candidates = 4;  // per vendor engine (cuBLASLt, cuDNN) and region
  LogCallback log;                // where an engine reports; may be empty
  // The plan is compiled for megakernels (CompileOptions::megakernels): an engine ranks first the
  // candidates that run well as megakernel tasks.
  bool for_megakernels = false;

  bool named(std::string_view engine) const;
  void say(LogSeverity s, std::string_view message) const {
    if (log) log(s, message);
  }
};

// What loading a step needs besides its record.
struct LoadContext {
  int device = 0;
  LibraryCache& libraries;  // cubins loaded once per plan, shared by its steps and runners
  std::string note;         // set by load_step: what loading did besides loading code, or ""
  // The runner's communicators by group (RunnerOptions::communicators); null: none bound.
  const CommunicatorBindings* communicators = nullptr;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  virtual Support supports(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const = 0;
  virtual std::vector<Candidate> candidates(const Graph& g, const fuse::Region& r,
                                            const EngineContext& ctx) const = 0;
  virtual std::unique_ptr<PreparedStep> prepare(const Graph& g, const fuse::Region& r,
                                                const Candidate& c, EngineContext& ctx) const = 0;

  // A candidate for a config the user forced that candidates() does not offer (a variant the
  // engine can build but does not expect to win): nullopt, with the reason in `why`, when this
  // engine cannot run region `r` with it. Engines whose candidates are all offered keep the
  // default.
  virtual std::optional<Candidate> candidate_for_config(const Graph& g, const fuse::Region& r, const EngineContext& ctx,
                                                        const std::string& config, std::string* why) const {
    if (why) *why = std::string(name()) + " offers no candidate '" + config + "' for this region";
    return std::nullopt;
  }

  // Plans. save_step records a step this engine prepared (its cubins or vendor config into
  // `blobs`). check_saved_step says why `saved` cannot be one of this engine's steps for region
  // `r` ("" when it can): a bundle is checked with it before anything loads. load_step rebuilds
  // the step from its record with no compilation; Error(unsupported) when this GPU or library
  // cannot run it.
  virtual SavedStep save_step(const PreparedStep& step, BlobStore& blobs) const = 0;
  virtual std::string check_saved_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                       const BlobStore& blobs) const = 0;
  virtual std::unique_ptr<PreparedStep> load_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                                  const BlobStore& blobs, size_t workspace_bytes,
                                                  LoadContext& ctx) const = 0;
  // Whether this engine supports every region (our code generators do): where no engine the user
  // named supports a region, such an engine runs it.
  virtual bool runs_any_region() const { return false; }
  // Whether candidates() works from the device properties alone, with no GPU (our code generators
  // need only the architecture and the SM count; vendor heuristics need the GPU itself).
  virtual bool candidates_without_gpu() const { return false; }
  // Whether load_step takes milliseconds of host time (cuDNN deserializes execution plans): a
  // runner loads such steps on a worker thread, one at a time, while it loads the others.
  virtual bool loads_slowly() const { return false; }
  // The source each distinct candidate compiles, for reading (`sinter explain --kernels`):
  // engines that generate code list it, vendor engines have none.
  struct GeneratedSource {
    int candidate = 0;
    std::string config, description, code;
  };
  virtual std::vector<GeneratedSource> generated_sources(const Graph& g, const fuse::Region& r,
                                                         const EngineContext& ctx) const {
    return {};
  }
  // Whether this engine's steps launch nothing because their region's output shares its input's
  // memory (the alias engine): the memory planner gives the output no buffer of its own.
  virtual bool output_shares_input() const { return false; }
  // Whether the engine stays allowed whatever engines the user names: those whose steps launch
  // nothing, and those that are the only way to run their regions (collectives on NCCL).
  virtual bool always_allowed() const { return output_shares_input(); }
  // Whether tuning may time this engine's candidates at compile time. An engine whose steps need
  // what only a Runner is given (a communicator) is not timed: its best-ranked candidate is taken.
  virtual bool timed_when_tuning() const { return !output_shares_input(); }

  // The prepared `step` (of region `r`, candidate `config`) as tasks of a megakernel
  // (MegaStep above), or null with the reason in `why` when it must run on its own (vendor
  // steps; kernels that need clusters, TMA descriptors or co-resident CTAs).
  virtual std::unique_ptr<MegaStep> mega_step(const Graph& g, const fuse::Region& r, const std::string& config,
                                              PreparedStep& step, const cuda::DeviceProperties& device,
                                              std::string* why) const {
    if (why) *why = std::string(name()) + " steps run outside the megakernel";
    return nullptr;
  }
};

}  // namespace sinter
