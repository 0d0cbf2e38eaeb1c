// A mega-mode runner's megakernels: the plan's steps split into segments (mega/segments.hpp),
// each segment's task graph, schedule and compiled megakernel (mega::Segment), and the steps that
// run on their own between them. The Runner (runner.cpp) owns one and hands it the bindings.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "engines/engine.hpp"
#include "engines/library_cache.hpp"
#include "fuse/region.hpp"
#include "mega/mega_segment.hpp"
#include "mega/segments.hpp"
#include "plan/plan.hpp"
#include "sinter/runner.hpp"

namespace sinter {

class MegaRuntime {
 public:
  // `alias_of[t]`: the tensor whose memory t shares, or -1.
  // Each segment's megakernel comes from the plan's cubins (CompileOptions::megakernels) or,
  // where the plan has none for it, is compiled through the kernel cache (a note says so). A
  // segment whose steps the plan measured faster launches its steps instead (MegaOptions::
  // segments); its megakernel is loaded all the same, for time_segments.
  MegaRuntime(const plan::Plan& data, const fuse::Partition& partition,
              const std::vector<std::unique_ptr<PreparedStep>>& steps, const std::vector<TensorId>& alias_of,
              const cuda::DeviceProperties& device, const MegaOptions& options, LibraryCache& libraries,
              std::vector<std::string>& notes);
  ~MegaRuntime();

  // Binds the task arguments of every segment launched as a megakernel (after the stream's queued
  // work).
  void bind(const std::vector<Binding>& bindings, cudaStream_t stream);
  // The segments and the steps outside them, in plan order.
  void enqueue(const std::vector<std::unique_ptr<PreparedStep>>& steps, const std::vector<Binding>& bindings,
               cudaStream_t stream);
  void check(cudaStream_t stream);
  // The segments launched as megakernels; their steps, and the steps of segments launched as
  // steps, as `outside`.
  MegaDescription describe() const;
  std::vector<MegaTaskEvent> trace() const;
  // Runner::time_mega_segments, the plan bound and enqueued once.
  std::vector<MegaSegmentTiming> time_segments(const std::vector<std::unique_ptr<PreparedStep>>& steps,
                                               const std::vector<Binding>& bindings, cudaStream_t stream, int iters);

 private:
  std::unique_ptr<cuda::KernelCache> cache_;  // opened only when the plan lacks a megakernel
  std::vector<std::unique_ptr<MegaStep>> mega_steps_;  // by plan step (null: outside)
  std::vector<mega::Piece> pieces_;
  std::vector<std::unique_ptr<mega::Segment>> segments_;  // by piece (null: a step on its own)
  std::vector<std::string> source_keys_;                  // by piece: its megakernel's source key ("" none)
  std::vector<bool> as_steps_;                            // by piece: a segment launched as its steps
  // A megakernel segment is launched as a megakernel.
  bool launched(size_t piece) const { return segments_[piece] && !as_steps_[piece]; }
  void bind_segment(size_t piece, const std::vector<Binding>& bindings, cudaStream_t stream);
  std::vector<MegaDescription::Outside> outside_;
  int sm_count_ = 0;
};

}  // namespace sinter
