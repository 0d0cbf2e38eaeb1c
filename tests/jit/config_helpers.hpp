// Tests pick a generator's candidate by its place in the generator's config list.
#pragma once

#include "engines/jit/codegen.hpp"

namespace sinter::jit {

inline int matmul_config_count(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  return static_cast<int>(matmul_configs(g, r, dev).size());
}
// The kernels of the region's `i`-th matmul config.
inline RegionKernels build_matmul_nth(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, int i) {
  return build_matmul(g, r, dev, matmul_configs(g, r, dev).at(static_cast<size_t>(i)));
}

}  // namespace sinter::jit
