// A Plan: a compiled graph, ready to run with no code generation and no compilation (DESIGN.md key
// idea 5). It holds the graph, the steps in order (one per fused region, each on one engine with
// one candidate config), the memory layout and the kernel binaries. Plans are immutable and cheap
// to copy (copies share one state); save() writes one self-contained bundle file
// (docs/plan-bundle.md) that load() checks completely before returning it.
//
// A Runner (runner.hpp) runs a Plan on device pointers and a CUDA stream; several runners may
// share one Plan.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter {

struct KernelDescription {
  std::string entry;        // the extern "C" kernel
  std::string description;  // the variant
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamic_shared_memory = 0;
  std::optional<std::array<uint32_t, 3>> cluster;
  bool cooperative = false;
  size_t argument_bytes = 0;
  size_t pointers = 0;    // pointer slots bound at launch
  size_t tensor_maps = 0;  // TMA descriptors encoded at launch
  std::string cubin;       // blob key (SHA-256 of the cubin)
  size_t cubin_bytes = 0;
  std::string cache_key;  // the kernel cache key it was compiled under, "" unknown
};

// A candidate timed while compiling.
struct CandidateTiming {
  std::string engine;
  std::string config;
  std::string description;
  double median_ms = -1;  // < 0: not timed, see `skipped`
  std::string skipped;    // why not (failed to build, too much workspace, wrong result)
};

struct StepDescription {
  int index = 0;
  std::string kind;    // the region kind: "matmul", "rowwise", ...
  std::string engine;  // "jit", "cublaslt", "cudnn", "nccl", "alias"
  int candidate = 0;   // rank in the engine's list when chosen
  std::string config;  // the candidate's config text
  std::string description;
  std::string fallback;  // why not on the preferred engine, "" when it is
  std::vector<std::string> nodes, inputs, outputs;  // by name
  uint64_t workspace_offset = 0, workspace_bytes = 0;
  std::vector<KernelDescription> kernels;  // jit steps
  std::string vendor_config;               // vendor steps: blob key of the engine's config
  std::string vendor_config_description;
  double tuned_ms = -1;  // the timed median of the chosen candidate, < 0 when not timed
  // Only for a plan compiled in this process:
  bool from_timing_cache = false;
  std::vector<CandidateTiming> tried;
};

struct MemoryDescription {
  uint64_t arena_bytes = 0;  // intermediates and outputs the plan owns, reused by lifetime
  uint64_t naive_bytes = 0;  // what they would take without reuse
  size_t buffers = 0;
  uint64_t workspace_offset = 0;  // step workspaces, after the arena
  uint64_t workspace_bytes = 0;
  uint64_t device_bytes = 0;  // one allocation for both: what a Runner needs (RunnerOptions)
};

struct TensorDescription {
  std::string name;
  DType dtype = DType::f32;
  Dims dims, strides;
};

// What compile() did; absent for a loaded plan.
struct CompileReport {
  std::vector<std::pair<std::string, double>> pass_ms;  // each pass of the pipeline, in order
  int kernels_compiled = 0;
  int kernel_cache_hits = 0;  // memory and disk
  double nvrtc_ms = 0;
  int candidates_timed = 0;
  int timing_cache_hits = 0;  // regions whose choice came from the timing cache
  std::string timing_cache;   // its file, "" none
  std::string kernel_cache;   // "kernel cache: 3 memory hits, 1 disk hit, 2 compiles (812.4 ms), ..."
};

// A megakernel the plan carries (CompileOptions::megakernels) and what compile measured of it.
struct MegakernelDescription {
  std::string source_sha256;  // the digest of its generated source
  uint64_t cubin_bytes = 0;
  double megakernel_ms = -1;  // a segment of it as the megakernel (< 0: not timed)
  double steps_ms = -1;       // the same segment as its steps launched one by one
  bool steps_faster = false;  // a mega-mode runner launches its segments' steps (MegaOptions::segments)
};

struct PlanDescription {
  std::string graph;  // its name
  size_t nodes = 0;
  std::string producer;  // "sinter 0.2.0"
  std::string arch;      // what the cubins are for, "sm_90a"
  std::string device;    // the GPU it was built and tuned on
  int sm_count = 0;
  std::vector<TensorDescription> inputs, outputs;  // what a Runner binds, in graph order
  MemoryDescription memory;
  std::vector<StepDescription> steps;
  std::vector<MegakernelDescription> megakernels;
  size_t blobs = 0;
  uint64_t blob_bytes = 0;
  std::optional<CompileReport> compile;
};

// Human-readable, as `sinter inspect` prints it; and JSON (`sinter inspect --json`), with the
// field names above.
std::string to_text(const PlanDescription& d);
std::string to_json(const PlanDescription& d);

class Plan {
 public:
  // Reads and checks a bundle: Error(io) when the file cannot be read, Error(corrupt_bundle)
  // naming what is wrong for a truncated, damaged, foreign or future-version bundle, or one whose
  // steps do not match its graph.
  static Plan load(const std::string& path);
  static Plan from_bytes(std::span<const char> bytes, std::string_view source = "<bytes>");

  // Atomic (a temporary file renamed into place); deterministic (the same plan, the same bytes).
  void save(const std::string& path) const;
  std::vector<char> to_bytes() const;

  const Graph& graph() const;
  PlanDescription describe() const;

  struct State;  // private to the library
  explicit Plan(std::shared_ptr<const State> state);
  const State& state() const { return *state_; }

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace sinter
