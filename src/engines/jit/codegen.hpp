// The code generators of the JIT engine, one per region kind. Each turns a region (at the shapes
// of the graph) into kernels: source specialized on the region's structure and access classes,
// launch shape and arguments from the actual sizes.
#pragma once

#include <utility>
#include <vector>

#include "cuda/device.hpp"
#include "engines/jit/kernel_spec.hpp"
#include "fuse/region.hpp"

namespace sinter::jit {

// Pointwise tiles: `unroll` vectors per thread per tile, all loaded before any is used (the
// bytes each thread keeps in flight).
struct PointwiseVariant {
  int unroll = 4;
};

// How a row-wise kernel is shaped. `stage`: whether the next row's prologue inputs are fetched
// into shared memory with cp.async while this row reduces (applies to register-resident norm
// and softmax rows); `heuristic` stages layernorm and softmax rows but not rmsnorm rows, as
// measured on the H200 (16384x8192 bf16 with a residual add, 512 threads: layernorm 0.216 vs
// 0.234 ms staged vs direct, softmax 0.158 vs 0.171, rmsnorm 0.220 vs 0.197). `max_threads`: a
// register-resident row is split over at most this many threads (fewer, longer per-thread slices
// below it). The jit engine offers the distinct variants as candidates and the tuner times them.
struct RowwiseVariant {
  enum class Stage { heuristic, off, on };
  Stage stage = Stage::heuristic;
  int max_threads = 512;
};

RegionKernels build_pointwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                              PointwiseVariant variant = {});
RegionKernels build_rowwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                            RowwiseVariant variant = {});
RegionKernels build_reduction(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_layout(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_conv(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_sdpa(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

// Matmul variants, best first. For M <= 16 the decode GEMV tiles (codegen_matmul_decode.cpp)
// come first: measured on the H200 the mma one streams weights 1.5x faster than the Hopper GEMM
// there; for M <= 4 the ffma tile (whole 512-byte W runs per load) before it.
// Then the Hopper warp-specialized TMA + wgmma kernel where it applies (codegen_matmul_sm90.cpp),
// then the generic mma.sync tile. Where the Hopper kernel does not apply, the generic variant's
// description says why (the fallback is reported, never silent).
enum class MatmulTile { decode_ffma, decode_gemv, sm90, generic };
std::vector<MatmulTile> matmul_tiles(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
int matmul_variants(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The variant number of `tile` for this region, or -1 where that tile does not apply.
int matmul_variant_of(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, MatmulTile tile);
RegionKernels build_matmul_variant(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                   int variant);
// Why the Hopper GEMM cannot run this region ("" when it can).
std::string sm90_gemm_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_sm90(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// Why the decode GEMV tile cannot run this region ("" when it can), and the tile itself.
std::string decode_gemv_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The same for the ffma decode tile (M <= 4, [N, K] weight).
std::string decode_ffma_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_decode_ffma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

// Dispatches on the region kind. `variant` numbers the jit engine's candidates for the region:
// 0 is the generator's default; region_variants lists the numbers that give distinct kernels
// (0 first).
RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                           int variant = 0);
std::vector<int> region_variants(const Graph& g, const fuse::Region& r,
                                 const cuda::DeviceProperties& dev);
// The same, with each variant's kernels (built once).
std::vector<std::pair<int, RegionKernels>> distinct_variants(const Graph& g, const fuse::Region& r,
                                                             const cuda::DeviceProperties& dev);

}  // namespace sinter::jit
