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
#include "fuse/region.hpp"
#include "plan/memory_plan.hpp"
#include "sinter/graph.hpp"

namespace sinter::plan {

// Where a kernel argument's device pointer comes from at launch (mirrors jit::PointerSlot, kept
// separate so a Plan needs no CUDA header and the bundle code no engine).
enum class PointerSource { input, output, workspace };
std::string_view to_string(PointerSource s);

struct PointerSlot {
  PointerSource source = PointerSource::input;
  int index = 0;                  // input or output index within the step's region
  uint64_t workspace_offset = 0;  // for PointerSource::workspace: within the step's workspace
  uint64_t arg_offset = 0;        // where the 8-byte pointer sits in the argument bytes
  uint32_t alignment = 1;         // bytes the kernel's vector accesses need (a power of two)
  int64_t byte_offset = 0;        // added to the bound pointer (a slice, a concat part)
  bool operator==(const PointerSlot&) const = default;
};

using Dim3 = std::array<uint32_t, 3>;

// A TMA tensor map (CUtensorMap, 128 bytes) in the argument bytes, encoded by the runner once the
// tensor's address is known: a tiled 3D view {dims[0] innermost, dims[1], dims[2]} of 16-bit or
// fp8 elements (data_type: CUtensorMapDataType, f16, bf16, or uint8 for fp8) with byte strides for dims 1 and 2,
// a box, and 128-byte swizzle (kernels/common/hopper.cuh).
struct TensorMapRecord {
  PointerSource source = PointerSource::input;  // input or output
  int index = 0;
  int64_t byte_offset = 0;
  uint64_t arg_offset = 0;  // 64-aligned; the 128 bytes there are zero in a bundle
  int data_type = 0;
  std::array<uint64_t, 3> dims{1, 1, 1};
  std::array<uint64_t, 2> strides{0, 0};
  std::array<uint32_t, 3> box{1, 1, 1};
  bool operator==(const TensorMapRecord&) const = default;
};

// One launch of one of our kernels: its launch shape, its packed argument struct with every
// pointer zeroed (the slots say what goes there), and its cubin by blob key.
struct KernelRecord {
  std::string entry;        // the extern "C" kernel in the cubin
  std::string description;  // the variant, for explain/inspect
  Dim3 grid{1, 1, 1};
  Dim3 block{1, 1, 1};
  uint32_t dynamic_shared_memory = 0;
  std::optional<Dim3> cluster;  // thread block cluster shape (sm_90+)
  bool cooperative = false;
  bool programmatic = false;  // absent in older bundles: their kernels do not wait (no early launch)
  // Work items of a persistent (grid-stride) kernel, 0 otherwise: a runner may resize the grid
  // to the CTAs resident on the actual device; `grid` is what the builder chose.
  int64_t persistent_work = 0;
  bool persistent_fill = false;  // KernelSpec::persistent_fill; absent in older bundles
  std::vector<uint8_t> args;
  std::vector<PointerSlot> pointers;
  std::vector<TensorMapRecord> tensor_maps;  // absent in older bundles (none of their kernels used TMA)
  std::string cubin;  // key into Plan::blobs
  // The KernelCache key (hex) the cubin was compiled under, for inspect; informational, since a
  // runner loads the cubin itself and never consults a cache. Empty when unknown.
  std::string cache_key;
  bool operator==(const KernelRecord&) const = default;
};

// Engine names a step may have.
inline constexpr std::string_view kJitEngine = "jit";
inline constexpr std::string_view kCublasLtEngine = "cublaslt";
inline constexpr std::string_view kCudnnEngine = "cudnn";  // SINTER_PLAN_CUDNN=0 leaves it out (cudnn_engine.hpp)
inline constexpr std::string_view kAliasEngine = "alias";  // a reshape (or unit-axis permute) sharing its input's memory

struct Step {
  int region = 0;  // index into plan_partition(plan).regions; steps run in region order
  fuse::RegionKind kind = fuse::RegionKind::pointwise;
  std::string engine;
  int candidate = 0;  // the engine's candidate index (cuBLASLt: the heuristic's rank)
  std::string description;
  // Within the plan's workspace area; zero before the first launch, kept zero by the step.
  uint64_t workspace_offset = 0;
  uint64_t workspace_bytes = 0;
  std::vector<KernelRecord> kernels;  // jit steps: launched in order
  std::string config;                 // vendor steps: key of the engine's opaque config blob
  std::string config_description;     // e.g. "algo 6 tile 20 stages 8 splitK 1 ws 0 KiB"
  bool operator==(const Step&) const = default;
};

enum class BlobKind { cubin, vendor_config };
std::string_view to_string(BlobKind k);  // "cubin", "vendor-config"

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

struct Plan {
  std::string producer;  // who built it, e.g. "sinter 0.1.0"; informational
  Graph graph;
  fuse::FusionOptions fusion;
  Target target;
  MemoryPlan memory;
  WorkspaceLayout workspace;
  std::vector<Step> steps;
  std::map<std::string, Blob> blobs;  // key: lower-case hex SHA-256 of the bytes
};

// The partition the steps refer to.
fuse::Partition plan_partition(const Plan& plan);

// Lower-case hex SHA-256 of `bytes`: the key a blob is stored under.
std::string blob_key(std::span<const char> bytes);
// Stores `bytes` once (content-addressed) and returns its key. Throws Error(internal) when the
// key is already taken by a blob of another kind.
std::string add_blob(Plan& plan, BlobKind kind, std::span<const char> bytes);

// Bytes of the arena plus workspaces one allocation must hold (at least 256, as the executors
// allocate).
uint64_t device_bytes(const Plan& plan);

// For a runner, before it loads any cubin: throws Error(corrupt_bundle) when the plan was built
// for another architecture ("built for sm_90a, this GPU is sm_80 (NVIDIA A100...)"). Returns a
// note, empty when there is none, for differences that do not stop the plan from running (another
// SM count: persistent grids were sized for the builder's GPU).
std::string check_plan_target(const Plan& plan, const cuda::DeviceProperties& device);

}  // namespace sinter::plan
