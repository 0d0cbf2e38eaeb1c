// The code generators of the JIT engine, one per region kind. Each turns a region (at the shapes
// of the graph) into kernels: source specialized on the region's structure and access classes,
// launch shape and arguments from the actual sizes.
#pragma once

#include "cuda/device.hpp"
#include "engines/jit/kernel_spec.hpp"
#include "fuse/region.hpp"

namespace sinter::jit {

RegionKernels build_pointwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_rowwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_reduction(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_layout(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_conv(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_sdpa(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

// Dispatches on the region kind.
RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

}  // namespace sinter::jit
