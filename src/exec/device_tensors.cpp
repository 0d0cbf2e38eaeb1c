#include "sinter/device_tensors.hpp"

#include <map>

#include "cuda/buffer.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "plan/memory_plan.hpp"
#include "sinter/error.hpp"
#include "sinter/runner.hpp"

namespace sinter {

struct DeviceTensors::State {
  int device = 0;
  struct Tensor {
    TensorInfo info;
    cuda::DeviceBuffer buffer;
  };
  std::map<std::string, Tensor> inputs, outputs;
};

DeviceTensors::DeviceTensors(const Plan& plan, int device) : state_(std::make_unique<State>()) {
  state_->device = device;
  cuda::DeviceGuard guard(device);
  const Graph& g = plan.graph();
  for (TensorId t : g.inputs()) {
    const TensorInfo& info = g.tensor(t);
    state_->inputs.emplace(info.name, State::Tensor{info, cuda::DeviceBuffer(std::max<size_t>(plan::storage_bytes(info), 1))});
  }
  for (TensorId t : g.outputs()) {
    const TensorInfo& info = g.tensor(t);
    state_->outputs.emplace(info.name, State::Tensor{info, cuda::DeviceBuffer(std::max<size_t>(plan::storage_bytes(info), 1))});
  }
}

DeviceTensors::~DeviceTensors() = default;
DeviceTensors::DeviceTensors(DeviceTensors&&) noexcept = default;
DeviceTensors& DeviceTensors::operator=(DeviceTensors&&) noexcept = default;

void DeviceTensors::upload(const TensorMap& inputs, cudaStream_t stream) {
  cuda::DeviceGuard guard(state_->device);
  for (auto& [name, t] : state_->inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error(ErrorCode::invalid_argument, "input '" + name + "' was not given");
    const HostTensor& h = it->second;
    if (h.dtype() != t.info.dtype || h.dims() != t.info.dims) {
      throw Error(ErrorCode::invalid_argument, "input '" + name + "': expected " + std::string(to_string(t.info.dtype)) +
                                                   " " + dims_to_string(t.info.dims) + ", got " +
                                                   std::string(to_string(h.dtype())) + " " + dims_to_string(h.dims()));
    }
    HostTensor relaid(t.info.dtype, t.info.dims, t.info.strides);
    const HostTensor* src = &h;
    if (h.strides() != t.info.strides) {
      for (int64_t e = 0; e < h.numel(); ++e) relaid.set(e, h.get(e));
      src = &relaid;
    }
    // On `stream`, so the copy waits for work enqueued there before it (which may still read
    // these inputs) and launches after it see it. From pageable memory the call returns once the
    // bytes are staged, so `relaid` may go away.
    SINTER_CUDA_CHECK(cudaMemcpyAsync(t.buffer.data(), src->data(), src->storage_bytes(), cudaMemcpyHostToDevice, stream));
  }
}

void DeviceTensors::poison_outputs(cudaStream_t stream) {
  cuda::DeviceGuard guard(state_->device);
  for (auto& [name, t] : state_->outputs) {
    SINTER_CUDA_CHECK(cudaMemsetAsync(t.buffer.data(), 0xFF, t.buffer.size(), stream));
  }
}

TensorMap DeviceTensors::download(cudaStream_t stream) const {
  cuda::DeviceGuard guard(state_->device);
  SINTER_CUDA_CHECK(cudaStreamSynchronize(stream));
  TensorMap out;
  for (const auto& [name, t] : state_->outputs) {
    HostTensor h(t.info.dtype, t.info.dims);
    t.buffer.copy_to_host(h.data(), h.storage_bytes());
    out.emplace(name, std::move(h));
  }
  return out;
}

void DeviceTensors::bind(Runner& runner) const {
  for (const auto& [name, t] : state_->inputs) runner.set_tensor_address(name, t.buffer.data());
  for (const auto& [name, t] : state_->outputs) runner.set_tensor_address(name, t.buffer.data());
}

void* DeviceTensors::address(const std::string& name) const {
  if (auto it = state_->inputs.find(name); it != state_->inputs.end()) return it->second.buffer.data();
  if (auto it = state_->outputs.find(name); it != state_->outputs.end()) return it->second.buffer.data();
  throw Error(ErrorCode::invalid_argument, "no graph input or output '" + name + "'");
}

}  // namespace sinter
