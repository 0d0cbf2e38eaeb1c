#include "exec/graph_executor.hpp"

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "sinter/error.hpp"

namespace sinter {
namespace {

// Owns a cudaGraph_t for one scope.
struct GraphHolder {
  cudaGraph_t g = nullptr;
  ~GraphHolder() {
    if (g) cudaGraphDestroy(g);
  }
};

}  // namespace

GraphExecutor::GraphExecutor(PlanExecutor& executor) : ex_(executor) { recapture(); }

GraphExecutor::~GraphExecutor() {
  if (exec_) cudaGraphExecDestroy(exec_);
}

cudaGraph_t GraphExecutor::capture() {
  cuda::DeviceGuard guard(ex_.device());
  cudaStream_t s = ex_.stream();
  // Thread-local mode: other threads' CUDA calls are not forbidden while this one captures.
  SINTER_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    ex_.launch(s);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(s, &broken);  // leaves the stream usable
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t g = nullptr;
  SINTER_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  ++stats_.captures;
  SINTER_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &nodes_));
  return g;
}

void GraphExecutor::recapture() {
  GraphHolder g{capture()};
  if (exec_) {
    SINTER_CUDA_CHECK(cudaGraphExecDestroy(exec_));
    exec_ = nullptr;
  }
  SINTER_CUDA_CHECK(cudaGraphInstantiate(&exec_, g.g, 0));
  ++stats_.instantiations;
}

void GraphExecutor::rebind(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  ex_.bind(inputs, outputs);
  GraphHolder g{capture()};
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t e = cudaGraphExecUpdate(exec_, g.g, &info);
  if (e == cudaSuccess) {
    ++stats_.updates;
    return;
  }
  // The topology changed (it should not: the same plan launches the same kernels), or the driver
  // cannot update some node in place: instantiate again, and count it.
  (void)cudaGetLastError();
  ++stats_.refused_updates;
  SINTER_CUDA_CHECK(cudaGraphExecDestroy(exec_));
  exec_ = nullptr;
  SINTER_CUDA_CHECK(cudaGraphInstantiate(&exec_, g.g, 0));
  ++stats_.instantiations;
}

void GraphExecutor::replay(cudaStream_t stream) {
  cuda::DeviceGuard guard(ex_.device());
  SINTER_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

void GraphExecutor::replay() { replay(ex_.stream()); }

}  // namespace sinter
