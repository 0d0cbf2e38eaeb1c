// PlanExecutor: runs a Plan (usually loaded from a bundle) on one GPU, step by step on a stream,
// with no code generation and no compilation: jit steps load the plan's cubins, cuBLASLt steps
// are rebuilt from their saved algo config (and the load notes say so). The memory layout is the
// plan's: one allocation for the arena and the step workspaces, inputs in their own buffers.
// GraphExecutor (graph_executor.hpp) captures its launches into a CUDA graph.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/buffer.hpp"
#include "cuda/stream.hpp"
#include "engines/engine.hpp"
#include "plan/plan.hpp"
#include "sinter/host_tensor.hpp"

namespace sinter {

class PlanExecutor {
 public:
  // Throws Error(corrupt_bundle) when the plan was built for another architecture, and the
  // error of the step that fails to load (naming it) otherwise.
  explicit PlanExecutor(plan::Plan plan, int device = 0);
  ~PlanExecutor();

  const plan::Plan& plan() const { return plan_; }
  const Graph& graph() const { return plan_.graph; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  // What loading did besides loading cubins (cuBLASLt rebuilds, another SM count), one line each.
  const std::vector<std::string>& load_notes() const { return notes_; }
  double load_ms() const { return load_ms_; }  // wall time of the constructor

  void set_inputs(const TensorMap& inputs);
  void poison();  // 0xFF over every computed tensor (NaN for floats)
  void launch(cudaStream_t stream);  // every step, in order
  void launch() { launch(stream_); }
  void launch_step(size_t step, cudaStream_t stream);  // one step (alias steps do nothing)
  // Median milliseconds of each step launched alone on the executor's stream, `iters` times
  // after one warm-up, CUDA events around each launch (their few microseconds included): the
  // per-step breakdown of `sinter bench` and sinter_bench_plan.
  std::vector<float> time_steps(int iters);
  TensorMap outputs();  // waits for the stream, then copies the graph outputs back
  TensorMap run(const TensorMap& inputs);  // set_inputs, poison, launch, outputs

  // Device memory of the graph inputs and outputs, in graph order.
  std::vector<const void*> input_pointers() const;
  std::vector<void*> output_pointers() const;
  // Caller-owned device memory for graph inputs and outputs (graph order, the graph's layout;
  // nullptr keeps the executor's own). Later launches use it. Throws Error(invalid_argument)
  // for a wrong count, a misaligned pointer, or an output that is a reshape sharing another
  // tensor's memory.
  void bind(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);

 private:
  void resolve_pointers();
  const Binding& binding(size_t step) const { return bindings_[step]; }

  plan::Plan plan_;
  fuse::Partition partition_;
  int device_;
  cuda::Stream stream_;
  std::vector<std::unique_ptr<PreparedStep>> steps_;  // null for an alias
  std::vector<std::string> notes_;
  double load_ms_ = 0;
  std::vector<cuda::DeviceBuffer> input_buffers_;
  cuda::DeviceBuffer arena_;
  std::vector<TensorId> alias_of_;       // by tensor id, -1: none
  std::vector<void*> own_pointer_;       // by tensor id: the executor's memory
  std::vector<void*> bound_;             // by tensor id: caller memory, nullptr: none
  std::vector<void*> pointer_of_;        // by tensor id: what launches use
  std::vector<Binding> bindings_;        // by step, from pointer_of_: launches allocate nothing
};

}  // namespace sinter
