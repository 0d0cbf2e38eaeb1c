// A Runner runs a Plan on the caller's device memory and CUDA stream (the execution context of
// TensorRT, the "execute" stage of cudnn-frontend). Bind every graph input and output by name,
// then enqueue as often as needed; rebinding between enqueues is cheap.
//
//   sinter::Runner runner(plan);                       // loads the plan's kernels, allocates its memory
//   runner.set_tensor_address("x", x_dev);             // every input and output of the graph
//   runner.set_tensor_address("y", y_dev);
//   runner.enqueue(stream);                            // asynchronous, like a kernel launch
//
// In graph mode the first enqueue captures the plan's launches into a CUDA graph and later ones
// replay it with one cudaGraphLaunch; a changed address is applied by updating the instantiated
// graph in place (cudaGraphExecUpdate), not by capturing again.
//
// A Runner is used by one thread at a time. Several runners may share one Plan, each with its own
// memory, on different threads.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "sinter/log.hpp"
#include "sinter/plan.hpp"

namespace sinter {

enum class ExecMode { stream, graph };

struct RunnerOptions {
  ExecMode mode = ExecMode::stream;
  // The plan's intermediates and step workspaces (PlanDescription::memory.device_bytes) in the
  // caller's memory: 256-byte aligned, on `device`, at least that large, and used by nothing else
  // while the runner lives. Null: the runner allocates its own.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int device = 0;
  LogCallback on_log;  // what loading did (rebuilt vendor configs, another SM count)
};

struct RunnerStats {
  int enqueues = 0;
  int captures = 0;          // graph mode: launches recorded into a graph
  int instantiations = 0;    // graph mode: cudaGraphInstantiate calls
  int updates = 0;           // graph mode: address changes applied by cudaGraphExecUpdate
  int refused_updates = 0;   // updates the driver refused (the graph was instantiated again)
  double load_ms = 0;        // wall time of the constructor
};

class Runner {
 public:
  // Loads every step (no compilation) and, without RunnerOptions::workspace, allocates the
  // plan's memory. Error(corrupt_bundle) when the plan was built for another GPU architecture,
  // Error(unsupported) naming the step when this GPU or library cannot run it, Error(cuda) when
  // memory runs out.
  explicit Runner(const Plan& plan, const RunnerOptions& options = {});
  ~Runner();
  Runner(Runner&&) noexcept;
  Runner& operator=(Runner&&) noexcept;
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  const Plan& plan() const;

  // Binds graph input or output `name` to device memory laid out as the graph declares it (its
  // dims and strides). Error(invalid_argument) naming the tensor for an unknown name, an
  // intermediate, an output that is a reshape sharing another tensor's memory, a pointer that is
  // not 256-byte aligned or not device memory of this runner's GPU.
  void set_tensor_address(const std::string& name, const void* address);
  // The bound address, or null.
  const void* tensor_address(const std::string& name) const;

  // Enqueues the plan on `stream` (on this runner's device). Error(invalid_state) naming every
  // input and output still unbound.
  void enqueue(cudaStream_t stream);

  RunnerStats stats() const;
  // What loading did besides loading kernels, one line each.
  const std::vector<std::string>& load_notes() const;

  // Diagnostics. Fills every intermediate tensor's memory with 0xFF bytes (NaN for floats), so a
  // value a kernel fails to write cannot pass for a correct one.
  void poison_intermediates(cudaStream_t stream);
  // Median milliseconds of each step launched alone on `stream`, `iters` times after a warm-up,
  // CUDA events around each launch.
  std::vector<float> time_steps(cudaStream_t stream, int iters);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace sinter
