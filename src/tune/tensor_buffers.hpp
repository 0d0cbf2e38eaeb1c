// Device buffers for a set of input and output tensors of a graph, the inputs filled with data (a
// gather's indices always with valid random ones, since an index out of range traps the kernel):
// what the tuner times a region's candidates on, and what compile times a plan's megakernels on.
#pragma once

#include <cstddef>
#include <vector>

#include "cuda/buffer.hpp"
#include "engines/engine.hpp"
#include "sinter/graph.hpp"

namespace sinter::tune {

struct TensorBuffers {
  enum class Fill {
    random,   // random values made on the host (the tuner compares candidates' outputs on them)
    pattern,  // float tensors the byte 0x3C on the device: a finite, non-zero value in every
              // float dtype, made at memory speed (a whole model's weights, for timing only);
              // the others random, as above
  };
  std::vector<std::vector<cuda::DeviceBuffer>> inputs;  // [copy][input]
  std::vector<cuda::DeviceBuffer> outputs;

  // Several copies of the inputs where they would sit in `l2_bytes` of L2 (up to 8), so that
  // repeated launches do not measure the cache; one copy when `l2_bytes` is 0. One input is on
  // the host at a time.
  TensorBuffers(const Graph& g, const std::vector<TensorId>& inputs, const std::vector<TensorId>& outputs,
                size_t l2_bytes, Fill fill = Fill::random);

  // The inputs of copy `copy` (modulo the copies) and the outputs, in order.
  Binding binding(size_t copy, void* workspace) const;
};

}  // namespace sinter::tune
