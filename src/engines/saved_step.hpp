// What an engine keeps of one prepared step in a plan, so that the step runs again later, in
// another process, with no code generation and no compilation (DESIGN.md key idea 5). Plain data,
// written and read by the engine that made the step (Engine::save_step, load_step,
// check_saved_step); the plan bundle stores it field by field (docs/plan-bundle.md).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sinter/dtype.hpp"

namespace sinter {

// Where a kernel argument's device pointer comes from at launch.
enum class PointerSource { input, output, workspace };
std::string_view to_string(PointerSource s);

struct PointerRecord {
  PointerSource source = PointerSource::input;
  int index = 0;                  // input or output index within the step's region
  uint64_t workspace_offset = 0;  // for PointerSource::workspace: within the step's workspace
  uint64_t arg_offset = 0;        // where the 8-byte pointer sits in the argument bytes
  uint32_t alignment = 1;         // bytes the kernel's vector accesses need (a power of two)
  int64_t byte_offset = 0;        // added to the bound pointer (a slice, a concat part)
  bool operator==(const PointerRecord&) const = default;
};

using Dim3 = std::array<uint32_t, 3>;

// A TMA tensor map (CUtensorMap, 128 bytes) in the argument bytes, encoded by the runner once the
// tensor's address is known: a tiled 3D view {dims[0] innermost, dims[1], dims[2]} of 16-bit or
// fp8 elements (data_type: CUtensorMapDataType, f16, bf16, or uint8 for fp8) with byte strides for
// dims 1 and 2, a box, and 128-byte swizzle (kernels/common/hopper.cuh).
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

// One launch of a compiled kernel: its launch shape, its packed argument struct with every
// pointer zeroed (the records say what goes there), and its cubin by blob key.
struct KernelRecord {
  std::string entry;        // the extern "C" kernel in the cubin
  std::string description;  // the variant, for explain/inspect
  Dim3 grid{1, 1, 1};
  Dim3 block{1, 1, 1};
  uint32_t dynamic_shared_memory = 0;
  std::optional<Dim3> cluster;  // thread block cluster shape (sm_90+)
  bool cooperative = false;
  bool programmatic = false;  // launched early under programmatic dependent launch
  // Work items of a persistent (grid-stride) kernel, 0 otherwise: a runner may resize the grid
  // to the CTAs resident on the actual device; `grid` is what the builder chose.
  int64_t persistent_work = 0;
  bool persistent_fill = false;  // every resident unit, rather than a balanced grid
  std::vector<uint8_t> args;
  std::vector<PointerRecord> pointers;
  std::vector<TensorMapRecord> tensor_maps;
  std::string cubin;  // key into the plan's blobs
  // The KernelCache key (hex) the cubin was compiled under, for inspect; informational, since a
  // runner loads the cubin itself and never consults a cache. Empty when unknown.
  std::string cache_key;
  bool operator==(const KernelRecord&) const = default;
};

// The CUtensorMapDataType of a TMA map over a tensor of `t`: 16-bit floats as themselves, fp8
// as bytes; -1 for types no map describes.
int tensor_map_record_type(DType t);

enum class BlobKind { cubin, vendor_config };
std::string_view to_string(BlobKind k);  // "cubin", "vendor-config"

// A collective step (the nccl engine): what it exchanges, recorded so that a loader checks it
// against the graph's node, and `sinter inspect` shows it without the graph.
struct CollectiveRecord {
  std::string op;      // "all_reduce", "all_gather", "reduce_scatter"
  std::string group;   // CollectiveAttrs::group
  int64_t world = 1;
  std::string reduce;  // "sum", "max"; "" for all_gather
  int64_t axis = 0;    // all_gather, reduce_scatter; 0 for all_reduce
  DType dtype = DType::f32;
  uint64_t count = 0;  // the NCCL count: elements sent per rank (reduce_scatter: received)
  bool operator==(const CollectiveRecord&) const = default;
};

// An engine's record of one step.
struct SavedStep {
  std::vector<KernelRecord> kernels;  // launched in order
  std::string config_blob;            // key of an opaque vendor config blob, "" for none
  std::string config_description;     // what the blob holds, for inspect
  std::optional<CollectiveRecord> collective;  // collective steps only
  bool operator==(const SavedStep&) const = default;
};

// A plan's blobs, content-addressed by the SHA-256 of their bytes: engines store cubins and
// vendor configs through it and read them back.
class BlobStore {
 public:
  virtual ~BlobStore() = default;
  // Stores the bytes once and returns their key.
  virtual std::string put(BlobKind kind, std::span<const char> bytes) = 0;
  // The blob `key` of `kind`; throws Error(corrupt_bundle) when there is none.
  virtual std::span<const char> get(const std::string& key, BlobKind kind) const = 0;
};

}  // namespace sinter
