// The code generators of the JIT engine, one per region kind. Each turns a region (at the shapes
// of the graph) into kernels: source specialized on the region's structure and access classes,
// launch shape and arguments from the actual sizes.
#pragma once

#include "cuda/device.hpp"
#include "engines/jit/kernel_spec.hpp"
#include "fuse/region.hpp"

namespace sinter::jit {

RegionKernels build_pointwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// Row-wise variants: 0 keeps the row in registers and loads it directly; 1 also fetches the next
// row's prologue inputs into shared memory with cp.async while this row reduces (when that
// applies: a register-resident norm or softmax row). Which is faster depends on the row length
// and the prologue; the tuner times both.
enum class RowwiseVariant { direct = 0, staged = 1 };
RegionKernels build_rowwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                            RowwiseVariant variant = RowwiseVariant::direct);
RegionKernels build_reduction(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_layout(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_conv(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_sdpa(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

// Dispatches on the region kind. `variant` numbers the jit engine's candidates for the region
// (0 is the generator's default); region_variants says how many there are.
RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                           int variant = 0);
int region_variants(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

}  // namespace sinter::jit
