// StreamExecutor: runs a partitioned graph on one GPU, one step per region, in order, on a
// stream. Intermediates and outputs live in one arena; inputs in their own buffers with the
// layout (strides) the graph declares.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/buffer.hpp"
#include "cuda/stream.hpp"
#include "engines/engine.hpp"
#include "plan/memory_plan.hpp"
#include "tune/tuner.hpp"
#include "sinter/host_tensor.hpp"

namespace sinter {

struct ExecutorOptions {
  fuse::FusionOptions fusion;
  int device = 0;
  // "auto": per region the first engine that supports it, in the order cublaslt, cudnn, jit
  // (cuBLASLt wins matmuls whose epilogue it has, cuDNN the sdpa it can fuse; our kernels take
  // everything else). A named engine is
  // used wherever it supports a region; elsewhere the region falls back to jit and the step's
  // description says why.
  std::string engine = "auto";
  // How each region's candidate is chosen; timing modes need `timing_cache` to remember results
  // (null: time everything, remember nothing).
  tune::TuneOptions tuning;
  // The executor will be saved as a plan (build_plan): only engines whose steps a plan bundle
  // can store take part (Engine::steps_can_be_saved; cuDNN's cannot yet), and their regions go
  // to the next engine.
  bool for_plan = false;
  tune::TimingCache* timing_cache = nullptr;
};

struct StepInfo {
  int region = 0;
  std::string kind;     // region kind
  std::string engine;   // "jit", or "alias" for reshapes that share memory
  std::string description;
  double tuned_ms = -1;  // the candidate's timed median, when tuning timed it
  bool from_timing_cache = false;
};

class StreamExecutor {
 public:
  StreamExecutor(Graph graph, cuda::KernelCache& cache, ExecutorOptions options = {});
  ~StreamExecutor();

  const Graph& graph() const { return graph_; }
  const fuse::Partition& partition() const { return partition_; }
  const std::vector<StepInfo>& steps() const { return infos_; }
  const tune::TuneReport& tune_report() const { return tune_report_; }
  size_t arena_bytes() const { return arena_.size(); }
  const plan::MemoryPlan& memory_plan() const { return memory_; }
  // For plans (exec/plan_builder): what was prepared per step (null for an alias), each step's
  // workspace offset within the workspace area, and that area's place and size in the arena.
  const fuse::FusionOptions& fusion() const { return fusion_; }
  int device() const { return device_; }
  const PreparedStep* prepared_step(size_t step) const { return steps_.at(step).prepared.get(); }
  size_t step_workspace_offset(size_t step) const { return steps_.at(step).workspace_offset - workspace_base_; }
  size_t workspace_base() const { return workspace_base_; }
  size_t workspace_bytes() const { return workspace_bytes_; }

  void set_inputs(const TensorMap& inputs);
  // Fills every computed tensor with 0xFF bytes (NaN for floats), so an element a kernel fails to
  // write cannot pass for a correct one.
  void poison();
  void launch();  // enqueue every step on the executor's stream
  TensorMap outputs();  // waits, then copies the graph outputs back
  // set_inputs, poison, launch, outputs
  TensorMap run(const TensorMap& inputs);
  // Median milliseconds of `iters` timed launches of the whole graph after `warmup` untimed ones,
  // enqueued back to back (cuda::time_calls).
  // `cold_l2`: before each timed launch (outside the events) a buffer of twice the L2 size is
  // overwritten, so inputs come from DRAM as in a model that streams its weights once per step
  // (a 2-32 MB weight timed hot sits in the 60 MB L2 of an H200 and looks faster than it is).
  double time_ms(int iters = 50, int warmup = 5, bool cold_l2 = false);

 private:
  struct Step {
    int region;
    std::unique_ptr<PreparedStep> prepared;  // null for an alias
    size_t workspace_offset = 0;
    Binding binding;  // the step's pointers, fixed once memory is laid out
  };

  Graph graph_;
  fuse::Partition partition_;
  fuse::FusionOptions fusion_;
  size_t workspace_base_ = 0, workspace_bytes_ = 0;
  int device_;
  cuda::Stream stream_;
  std::vector<Step> steps_;
  std::vector<StepInfo> infos_;
  tune::TuneReport tune_report_;
  std::vector<cuda::DeviceBuffer> input_buffers_;
  plan::MemoryPlan memory_;
  cuda::DeviceBuffer arena_;
  std::vector<void*> pointer_of_;  // by tensor id
  std::vector<std::pair<size_t, size_t>> computed_ranges_;  // (offset, bytes) in the arena
};

}  // namespace sinter
