// GraphExecutor: a Plan's launches captured once into a CUDA graph and replayed with one
// cudaGraphLaunch (DESIGN.md key idea 6). New input/output pointers are bound by updating the
// instantiated graph in place: the launches are recorded again into a plain cudaGraph_t (cheap,
// host only) and applied with cudaGraphExecUpdate, which keeps the executable graph and only
// patches node parameters. Instantiation, the expensive part, happens once; if the driver ever
// refuses an update the graph is instantiated again, and stats() counts it (no silent fallback).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "exec/plan_executor.hpp"

namespace sinter {

struct GraphExecutorStats {
  int captures = 0;          // launches recorded into a cudaGraph_t
  int instantiations = 0;    // cudaGraphInstantiate calls
  int updates = 0;           // cudaGraphExecUpdate calls that succeeded
  int refused_updates = 0;   // updates the driver refused (then instantiated again)
};

class GraphExecutor {
 public:
  // Captures and instantiates `executor`'s launches with its current bindings. The executor must
  // outlive this object.
  explicit GraphExecutor(PlanExecutor& executor);
  ~GraphExecutor();
  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  PlanExecutor& executor() { return ex_; }
  void replay();  // enqueues the graph on the executor's stream
  void replay(cudaStream_t stream);
  // Binds new input/output memory (as PlanExecutor::bind) and updates the instantiated graph.
  void rebind(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);
  // Throws the instantiated graph away and captures and instantiates again: what rebind avoids,
  // kept to measure the difference (bench_plan).
  void recapture();
  const GraphExecutorStats& stats() const { return stats_; }
  size_t node_count() const { return nodes_; }

 private:
  cudaGraph_t capture();

  PlanExecutor& ex_;
  cudaGraphExec_t exec_ = nullptr;
  size_t nodes_ = 0;
  GraphExecutorStats stats_;
};

}  // namespace sinter
