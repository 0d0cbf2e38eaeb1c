// The nccl engine: runs collective regions (all_reduce, all_gather, reduce_scatter) as one NCCL
// call on the plan's stream, so they run in stream and graph mode alike (NCCL calls can be
// captured into a CUDA graph); in mega mode as megakernel tasks over symmetric memory.
//
// It claims every collective region it can run without a communicator: compiling needs none, and
// a plan records the collective (CollectiveRecord) but no communicator. The communicator of the
// step's group is found when a Runner loads the step (LoadContext::communicators); a missing one,
// or one of another world or GPU, is refused there by name. A collective of world 1 is the
// identity: its step is a device-to-device copy, with no NCCL and no communicator needed.
#pragma once

#include "engines/engine.hpp"

namespace sinter::nccl {

class NcclEngine : public Engine {
 public:
  std::string_view name() const override { return "nccl"; }
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
  bool candidates_without_gpu() const override { return true; }
  bool always_allowed() const override { return true; }
  bool timed_when_tuning() const override { return false; }
  // In mega mode a collective runs as tasks over its group's symmetric memory
  // (collective_mega_step.hpp); a group without it (ranks outside one NVLink domain, an NCCL
  // without windows) runs the NCCL call between segments.
  std::unique_ptr<MegaStep> mega_step(const Graph& g, const fuse::Region& r, const std::string& config,
                                      PreparedStep& step, const cuda::DeviceProperties& device,
                                      std::string* why) const override;
};

}  // namespace sinter::nccl
