// A Plan: everything needed to run a graph on one GPU architecture with no code generation and
// no compilation (DESIGN.md key idea 5). It is plain data, visible field by field: the graph, the
// fusion options that partition it, the target it was built for, the arena layout, the steps in
// order (one per region of partition_graph(graph, fusion)) and the binaries the steps need.
// bundle.hpp saves and loads it as one self-contained file; docs/plan-bundle.md describes both.
//
// Steps name their region by index only: the partition is a deterministic function of the graph
// and the fusion options, so it is recomputed (plan_partition) rather than stored, and a loader
// checks that it still matches what the steps were built for.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/device.hpp"
#include "engines/saved_step.hpp"
#include "fuse/region.hpp"
#include "plan/memory_plan.hpp"
#include "sinter/graph.hpp"

namespace sinter::plan {

// Engine names a step may have: whatever the registry lists (engines/registry.hpp).

struct Step {
  int region = 0;  // index into plan_partition(plan).regions; steps run in region order
  fuse::RegionKind kind = fuse::RegionKind::pointwise;
  std::string engine;  // a registered engine's name
  int candidate = 0;   // the candidate's rank in the engine's list when it was chosen
  std::string config;  // the candidate's config text (Candidate::config)
  std::string description;
  // Why the step is not on the engine the user preferred, "" when it is (or none was named).
  std::string fallback;
  double tuned_ms = -1;  // the candidate's timed median when tuning timed it (informational)
  // Within the plan's workspace area; zero before the first launch, kept zero by the step.
  uint64_t workspace_offset = 0;
  uint64_t workspace_bytes = 0;
  SavedStep saved;  // what the engine needs to load the step again
  bool operator==(const Step&) const = default;
};

struct Blob {
  BlobKind kind = BlobKind::cubin;
  std::vector<char> bytes;
  bool operator==(const Blob&) const = default;
};

struct Target {
  std::string arch;    // what the cubins were compiled for, e.g. "sm_90a"
  std::string device;  // the GPU the plan was built (and tuned) on, e.g. "NVIDIA H200"
  int sm_count = 0;
  bool operator==(const Target&) const = default;
};

// The per-step workspaces live after the arena, in one allocation of offset + bytes:
// offset = the arena bytes rounded up to kArenaAlignment, bytes = the end of the last step's
// workspace.
struct WorkspaceLayout {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  bool operator==(const WorkspaceLayout&) const = default;
};

// A megakernel's cubin (CompileOptions::megakernels): a mega-mode runner regenerates each
// segment's source from the steps and loads the cubin stored under that source's digest.
// Compiled with a timing tune mode, the plan also holds what a segment of the megakernel took (the
// mean, where several share the source) as the megakernel and as its steps launched one by one;
// a mega-mode runner launches the steps of a megakernel whose steps were faster
// (MegaOptions::segments).
struct MegakernelRecord {
  std::string source_sha256;  // lower-case hex SHA-256 of the generated source
  std::string cubin;          // blob key
  double megakernel_ms = -1;  // < 0: not timed
  double steps_ms = -1;
  bool steps_faster() const { return megakernel_ms >= 0 && steps_ms >= 0 && steps_ms < megakernel_ms; }
  bool operator==(const MegakernelRecord&) const = default;
};

struct Plan {
  std::string producer;  // who built it, e.g. "sinter 0.1.0"; informational
  Graph graph;
  fuse::FusionOptions fusion;
  Target target;
  MemoryPlan memory;
  WorkspaceLayout workspace;
  std::vector<Step> steps;
  std::vector<MegakernelRecord> megakernels;
  std::map<std::string, Blob> blobs;  // key: lower-case hex SHA-256 of the bytes
};

// The partition the steps refer to.
fuse::Partition plan_partition(const Plan& plan);

// Lower-case hex SHA-256 of `bytes`: the key a blob is stored under.
std::string blob_key(std::span<const char> bytes);
// Stores `bytes` once (content-addressed) and returns its key. Throws Error(internal) when the
// key is already taken by a blob of another kind.
std::string add_blob(Plan& plan, BlobKind kind, std::span<const char> bytes);

// The plan's blobs as an engine reads and writes them.
class PlanBlobs : public BlobStore {
 public:
  explicit PlanBlobs(Plan& plan) : plan_(&plan), const_plan_(&plan) {}
  explicit PlanBlobs(const Plan& plan) : const_plan_(&plan) {}
  std::string put(BlobKind kind, std::span<const char> bytes) override;
  std::span<const char> get(const std::string& key, BlobKind kind) const override;

 private:
  Plan* plan_ = nullptr;  // null: read only
  const Plan* const_plan_;
};

// Bytes of the arena plus workspaces one allocation must hold (at least 256, as the executors
// allocate).
uint64_t device_bytes(const Plan& plan);

// For a runner, before it loads any cubin: throws Error(corrupt_bundle) when the plan was built
// for another architecture ("built for sm_90a, this GPU is sm_80 (NVIDIA A100...)"). Returns a
// note, empty when there is none, for differences that do not stop the plan from running (another
// SM count: persistent grids were sized for the builder's GPU).
std::string check_plan_target(const Plan& plan, const cuda::DeviceProperties& device);

}  // namespace sinter::plan
