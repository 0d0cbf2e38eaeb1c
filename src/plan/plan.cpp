#include "plan/plan.hpp"

#include <algorithm>

#include "cuda/sha256.hpp"
#include "sinter/error.hpp"

namespace sinter::plan {

fuse::Partition plan_partition(const Plan& plan) { return fuse::partition_graph(plan.graph, plan.fusion); }

std::string blob_key(std::span<const char> bytes) {
  return cuda::to_hex(cuda::sha256(bytes.data(), bytes.size()));
}

std::string add_blob(Plan& plan, BlobKind kind, std::span<const char> bytes) {
  std::string key = blob_key(bytes);
  auto [it, inserted] = plan.blobs.try_emplace(key);
  if (inserted) {
    it->second.kind = kind;
    it->second.bytes.assign(bytes.begin(), bytes.end());
  } else if (it->second.kind != kind) {
    // The same bytes as a cubin and as a vendor config: one key cannot say which it is.
    throw Error(ErrorCode::internal, "plan blob " + key + " is stored as a " +
                                         std::string(to_string(it->second.kind)) +
                                         " and added again as a " + std::string(to_string(kind)));
  }
  return key;
}

std::string PlanBlobs::put(BlobKind kind, std::span<const char> bytes) {
  if (!plan_) throw Error(ErrorCode::internal, "PlanBlobs::put on a read-only plan");
  return add_blob(*plan_, kind, bytes);
}

std::span<const char> PlanBlobs::get(const std::string& key, BlobKind kind) const {
  auto it = const_plan_->blobs.find(key);
  if (it == const_plan_->blobs.end()) throw Error(ErrorCode::corrupt_bundle, "blob " + key + " is not in the plan");
  if (it->second.kind != kind) {
    throw Error(ErrorCode::corrupt_bundle, "blob " + key + " is a " + std::string(to_string(it->second.kind)) +
                                               ", expected a " + std::string(to_string(kind)));
  }
  return it->second.bytes;
}

uint64_t device_bytes(const Plan& plan) {
  return std::max<uint64_t>(plan.workspace.offset + plan.workspace.bytes, kArenaAlignment);
}

std::string check_plan_target(const Plan& plan, const cuda::DeviceProperties& device) {
  // Cubins for sm_90a run on compute capability 9.0 only: anything but the same arch is foreign.
  if (device.arch != plan.target.arch) {
    throw Error(ErrorCode::corrupt_bundle,
                "the plan was built for " + plan.target.arch + " (" + plan.target.device +
                    "), this GPU is " + device.arch + " (" + device.name +
                    "); build the plan again on this GPU");
  }
  if (device.sm_count != plan.target.sm_count) {
    return "the plan was built on " + plan.target.device + " with " +
           std::to_string(plan.target.sm_count) + " SMs, this GPU has " +
           std::to_string(device.sm_count) + ": persistent grids were sized for " +
           std::to_string(plan.target.sm_count);
  }
  return "";
}

}  // namespace sinter::plan
