// The code generators of the JIT engine, one per region kind. Each turns a region (at the shapes
// of the graph) into kernels: source specialized on the region's structure and access classes,
// launch shape and arguments from the actual sizes.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "cuda/device.hpp"
#include "engines/jit/kernel_config.hpp"
#include "engines/jit/kernel_spec.hpp"
#include "fuse/region.hpp"

namespace sinter::jit {

// The configs of the pointwise and row-wise generators' tables, and those each offers a region
// (its candidates, best expected first; index 0: its default).
std::span<const PointwiseConfig> all_pointwise_configs();
std::span<const RowwiseConfig> all_rowwise_configs();
std::vector<PointwiseConfig> pointwise_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
std::vector<RowwiseConfig> rowwise_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

RegionKernels build_pointwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                              PointwiseConfig config = {});
RegionKernels build_rowwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                            RowwiseConfig config = {});
RegionKernels build_reduction(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// argmax / argmin regions (codegen_arg_reduction.cpp), reached through build_reduction.
RegionKernels build_arg_reduction(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_layout(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The mma.sync tile that runs any matmul region (codegen_simt_matmul.cpp).
RegionKernels build_matmul_generic(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_conv(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The flash-simple tile that runs any sdpa region (codegen_flash_simple.cpp).
RegionKernels build_sdpa_simple(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The flash-decoding sdpa kernel (codegen_flash_decode.cpp) for Sq <= 16: the jit engine's sdpa
// candidate 0 where it applies, flash-simple (build_sdpa) the other. Why it cannot run a region
// ("" when it can), and the kernel itself (splits, then the merge and the epilogue, one launch).
std::string sdpa_decode_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_sdpa_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// Sdpa configs: the decode kernel where it applies, then flash-simple.
std::vector<SdpaConfig> sdpa_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_sdpa(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                         const SdpaConfig& config);

// Why the Hopper GEMM cannot run this region ("" when it can).
// allow_fp8: the direct-epilogue kernels also take two fp8 operands of one type, both k-contiguous
// (the C-tile kernel and the decode tiles do not).
std::string sm90_gemm_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                  bool allow_fp8 = false);
RegionKernels build_matmul_sm90(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// Whether a config's CTA pairs share A (the tall tile's) rather than B.
bool sm90_direct_multicast_a(const Sm90DirectConfig& c);
// The host's copies of the kernel's HopperDirectConfig facts: 64-row accumulator blocks a
// consumer owns (kWgBlocks: 2 for the tall tile), item rows a raster group walks (kGroupM), and
// the work items (tiles, or CTA-pair items: hopper_direct_work's count).
int sm90_direct_row_blocks(const Sm90DirectConfig& c);
int sm90_direct_group_m(const Sm90DirectConfig& c);
int64_t sm90_direct_items(const Sm90DirectConfig& c, int64_t batches, int64_t m, int64_t n);
// Dynamic shared memory of a config: 1024 alignment pad, the ring, `store_stage_bytes` of TMA store
// slots, the barriers.
int sm90_direct_smem_bytes(const Sm90DirectConfig& c, int store_stage_bytes = 0);
// "128x256x64 stages4 coop(...)": tile M x N x k-block (64 16-bit or 128 8-bit elements).
std::string sm90_direct_name(const Sm90DirectConfig& c, int k_block = 64);
RegionKernels build_matmul_sm90_direct(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                       const Sm90DirectConfig& c);
// Why the mma decode GEMV tile (M <= 16, either weight layout; codegen_decode_gemv.cpp <->
// kernels/gemm/decode_gemv.cuh) cannot run this region ("" when it can), and the tile itself.
std::string decode_gemv_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The same for the ffma decode tile (M <= 4, either weight layout; kernels/gemm/decode_gemv_ffma.cuh).
std::string decode_ffma_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_decode_ffma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

// The TMA decode tile (M <= 16, [N, K] weight, sm_90a): persistent, an mbarrier ring of TMA
// loads, mma.sync (codegen_decode_tma.cpp <-> kernels/gemm/decode_tma.cuh). whole_tiles false:
// stream-K over the weight's k steps (MatmulTile::decode_tma; split tiles combined through the
// workspace); true: each SM runs whole tiles of about N / SMs rows (decode_tma_rows: no combine;
// needs 64 rows or more per SM). `config`: the per-step settings; one the kernel has no form for
// is declined with the reason.
std::string decode_tma_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                   bool whole_tiles = false, const DecodeTmaConfig& config = {});
RegionKernels build_matmul_decode_tma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                      bool whole_tiles = false, const DecodeTmaConfig& config = {});
// The configs of one cut offered for a region, best expected first (none where it does not apply).
std::vector<DecodeTmaConfig> decode_tma_configs(const Graph& g, const fuse::Region& r,
                                                const cuda::DeviceProperties& dev, bool whole_tiles);
// The decode tiles' matmul configs for a region (M <= 16), best expected first: the TMA tile's
// cuts first for weights of 64 MiB and more, and in plans for megakernels (its task prologue
// streams W while the task waits), else after the mma and ffma GEMV tiles (codegen_decode_tma.cpp
// says why).
std::vector<MatmulConfig> decode_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                         bool for_megakernels = false);
// The bytes of the weight (B) one call of the region's matmul reads: batches x N x K elements.
int64_t decode_weight_bytes(const Graph& g, const fuse::Region& r);

// The matmul candidates of a region, best measured first (codegen_matmul_sm90.cpp):
//   - the decode tiles (decode_configs) for M <= 16;
//   - sm90_direct / sm90_ctile: the Hopper TMA + wgmma kernels: the direct-epilogue configs
//     (sm90_direct_configs: the 128x256 CTA pair first where its tiles fill the GPU, the smaller
//     tiles first below), then the C-tile kernel, which was slower at every size measured;
//   - generic: the mma.sync tile; where the Hopper kernels do not apply its description says why
//     (the fallback is reported, never silent).
std::vector<MatmulConfig> matmul_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                         bool for_megakernels = false);
// The first config of `tile` for this region, or -1 where that tile does not apply.
int matmul_config_index(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, MatmulTile tile);
RegionKernels build_matmul(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                           const MatmulConfig& config);

// The generator that runs a region: "pointwise", "rowwise" (a pointwise region ending in row
// reductions runs on the row-wise kernels too), "reduction", "layout", "matmul", "conv", "sdpa".
std::string_view region_generator(const fuse::Region& r);
// Every config of the region's generator, best expected first (some may give the same kernels);
// for_megakernels: best expected as megakernel tasks first (EngineContext::for_megakernels).
std::vector<KernelConfig> region_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                         bool for_megakernels = false);
// Dispatches on the config's kind; throws Error(invalid_argument) when it is not the region's
// generator's.
RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                           const KernelConfig& config);
// The region's default kernels (its generator's first config).
RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The configs that give distinct kernels (a field that does not apply to a region gives the same
// kernels as an earlier config: the first is kept), each with its kernels, built once.
std::vector<std::pair<KernelConfig, RegionKernels>> distinct_configs(const Graph& g, const fuse::Region& r,
                                                                     const cuda::DeviceProperties& dev,
                                                                     bool for_megakernels = false);

}  // namespace sinter::jit
