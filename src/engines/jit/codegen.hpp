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

// Matmul variants, best first: the Hopper warp-specialized TMA + wgmma kernel where it applies
// (codegen_matmul_sm90.cpp), then the generic mma.sync tile. Where the Hopper kernel does not
// apply, the one variant's description says why (the fallback is reported, never silent).
int matmul_variants(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_variant(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                   int variant);
// Why the Hopper GEMM cannot run this region ("" when it can).
std::string sm90_gemm_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_sm90(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

// How many candidates (variants) the engine offers for a region; build_region builds one.
int region_variants(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// Dispatches on the region kind.
RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                           int variant = 0);

}  // namespace sinter::jit
