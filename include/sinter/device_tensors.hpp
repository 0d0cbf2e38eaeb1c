// Device memory for a plan's graph inputs and outputs, filled from host tensors and read back:
// the shortest way to run a Plan on host data (the CLI and tests use it; a program with its own
// device buffers binds them to a Runner directly).
//
//   sinter::DeviceTensors io(plan);
//   io.upload(inputs, stream);
//   io.bind(runner);
//   runner.enqueue(stream);
//   sinter::TensorMap outputs = io.download(stream);
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "sinter/host_tensor.hpp"
#include "sinter/plan.hpp"

namespace sinter {

class Runner;

class DeviceTensors {
 public:
  // One allocation per graph input and output, of its declared layout, on `device`.
  explicit DeviceTensors(const Plan& plan, int device = 0);
  ~DeviceTensors();
  DeviceTensors(DeviceTensors&&) noexcept;
  DeviceTensors& operator=(DeviceTensors&&) noexcept;

  // Copies every graph input (laid out as the graph declares it) on `stream`. Error(invalid_argument)
  // naming an input that is missing or of another dtype or shape.
  void upload(const TensorMap& inputs, cudaStream_t stream);
  // 0xFF bytes (NaN for floats) over every output, so an element a kernel fails to write cannot
  // pass for a correct one.
  void poison_outputs(cudaStream_t stream);
  // Waits for `stream`, then copies every graph output back.
  TensorMap download(cudaStream_t stream) const;
  // set_tensor_address of every input and output.
  void bind(Runner& runner) const;
  void* address(const std::string& name) const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace sinter
