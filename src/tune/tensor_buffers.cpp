#include "tune/tensor_buffers.hpp"

#include <algorithm>

#include "ir/gather_indices.hpp"
#include "plan/memory_plan.hpp"
#include "sinter/host_tensor.hpp"

namespace sinter::tune {

TensorBuffers::TensorBuffers(const Graph& g, const std::vector<TensorId>& in, const std::vector<TensorId>& out,
                             size_t l2_bytes, Fill fill) {
  size_t in_bytes = 0;
  for (TensorId t : in) in_bytes += plan::storage_bytes(g.tensor(t));
  const size_t copies = in_bytes == 0 ? 1 : std::clamp<size_t>((2 * l2_bytes + in_bytes - 1) / in_bytes, 1, 8);
  inputs.resize(copies);
  uint64_t seed = 1;
  for (TensorId t : in) {
    const TensorInfo& info = g.tensor(t);
    const int64_t n = is_integer(info.dtype) ? gather_index_range(g, t) : 0;
    const size_t bytes = plan::storage_bytes(info);
    if (fill == Fill::pattern && is_float(info.dtype)) {
      for (size_t c = 0; c < copies; ++c) {
        inputs[c].emplace_back(bytes);
        inputs[c].back().memset(0x3C);
      }
      continue;
    }
    HostTensor h(info.dtype, info.dims, info.strides);
    if (n > 0) {
      fill_random(h, seed++, -static_cast<double>(n), static_cast<double>(n - 1));
    } else {
      fill_random(h, seed++);
    }
    for (size_t c = 0; c < copies; ++c) {
      inputs[c].emplace_back(h.storage_bytes());
      inputs[c].back().copy_from_host(h.data(), h.storage_bytes());
    }
  }
  for (TensorId t : out) outputs.emplace_back(plan::storage_bytes(g.tensor(t)));
}

Binding TensorBuffers::binding(size_t copy, void* workspace) const {
  Binding b;
  for (const cuda::DeviceBuffer& d : inputs[copy % inputs.size()]) b.inputs.push_back(d.data());
  for (const cuda::DeviceBuffer& d : outputs) b.outputs.push_back(d.data());
  b.workspace = workspace;
  return b;
}

}  // namespace sinter::tune
