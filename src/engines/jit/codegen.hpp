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
  // Streaming cache hints (kernels/common/stream_memory.cuh) on the operands read once and on
  // the stores: L1 no-allocate loads, evict-first stores.
  bool stream = false;
  // The next tile's loads are issued before this tile computes (two tiles of registers).
  bool pipelined = false;
  // One tile per CTA and a grid that covers the tensor, instead of a persistent grid looping over
  // tiles. The H200 probe (bench/experiments/stream_probe.cu) copied 512 MB at 4.19 TB/s this way
  // (one 16-byte vector per thread, 256 threads) against at most 3.90 with any persistent loop,
  // and cudaMemcpy's 4.12; the 10-op chain went from 0.3109 to 0.2687 ms. Regions with exit
  // reductions keep the persistent grid.
  bool flat = false;
};

// How a row-wise kernel is shaped. `stage`: whether the next row's prologue inputs are fetched
// into shared memory with cp.async while this row reduces (applies to register-resident norm
// and softmax rows); `heuristic` stages layernorm and softmax rows but not rmsnorm rows, as
// measured on the H200 (16384x8192 bf16 with a residual add, 512 threads: layernorm 0.216 vs
// 0.234 ms staged vs direct, softmax 0.158 vs 0.171, rmsnorm 0.220 vs 0.197); since the bulk
// ring exists the heuristic stages them with it (layernorm 2 buffers deep, softmax under a
// one-pass combine 3; softmax's two-pass default is flat rows; RowwiseGen::resolve_heuristic
// holds the measurements). `max_threads`: a
// register-resident row is split over at most this many threads (fewer, longer per-thread slices
// below it). `bulk` stages rows with cp.async.bulk (kernels/common/bulk_copy.cuh): one thread
// copies each staged row into a ring of `stages` row buffers, `stages - 1` rows ahead, counted
// on an mbarrier per buffer. `stream`: streaming cache hints on the loads of per-row inputs that
// are not staged and on the stores (kernels/common/stream_memory.cuh). The jit engine offers the
// distinct variants as candidates and the tuner times them.
struct RowwiseVariant {
  enum class Stage { heuristic, off, on, bulk };
  Stage stage = Stage::heuristic;
  int max_threads = 512;
  int stages = 2;  // row buffers of the bulk ring (cp.async staging always uses 2)
  bool stream = false;
  // Inputs broadcast over the rows (weight, bias) loaded into registers once per CTA.
  bool resident_weights = false;
  // > 0: __launch_bounds__ asks for this many resident CTAs per SM (caps registers per thread),
  // for rings whose shared memory would allow more CTAs than the registers do.
  int min_blocks = 0;
  // One row per CTA, the grid covering every row, instead of a persistent grid (see
  // PointwiseVariant::flat; regions with global exit reductions keep the persistent grid).
  // Staging the next row has nothing to stage then. Measured on the H200: no faster than the
  // persistent kernels for any row op with the one-pass statistics (session 7); with the two-pass
  // ones, flat rows of 256 threads are softmax's fastest kernel and its default (session 8,
  // docs/benchmarks.md).
  bool flat = false;
};

// How many variants the jit engine's tables hold (candidate numbers 0 .. count - 1), for tests
// that force each one.
int rowwise_variant_count();
int pointwise_variant_count();

RegionKernels build_pointwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                              PointwiseVariant variant = {});
RegionKernels build_rowwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                            RowwiseVariant variant = {});
RegionKernels build_reduction(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_layout(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_conv(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_sdpa(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The flash-decoding sdpa kernels (codegen_sdpa_decode.cpp) for Sq <= 16: the jit engine's sdpa
// candidate 0 where they apply, flash-simple (build_sdpa) the other. Why they cannot run a
// region ("" when they can), and the split + combine kernels themselves.
std::string sdpa_decode_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_sdpa_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// Sdpa variants: 0 the decode kernels where they apply, else flash-simple; 1 flash-simple.
int sdpa_variants(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_sdpa_variant(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                 int variant);

// Why the Hopper GEMM cannot run this region ("" when it can).
// allow_fp8: the direct-epilogue kernels also take two fp8 operands of one type, both k-contiguous
// (the C-tile kernel and the decode tiles do not).
std::string sm90_gemm_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                  bool allow_fp8 = false);
RegionKernels build_matmul_sm90(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// A tile config of the direct-epilogue Hopper GEMM (kernels/gemm/sm90_gemm_direct.cuh):
// bm x bn x (128 bytes of k) tiles through a `stages`-deep ring; cooperative (bm 128: both consumers on one
// tile; bm 256, bn 128, the tall tile: 128 rows each, as two 64-row accumulators) or ping-pong (bm
// 64: a tile per consumer, one's epilogue under the other's main loop).
// cluster 2: CTA pairs share B through TMA multicast (M-adjacent tiles), the tall tile's pairs A
// (N-adjacent tiles).
struct Sm90DirectConfig {
  int bm = 128, bn = 256, stages = 4;
  bool ping_pong = false;
  int cluster = 1;
};
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
// Why the decode GEMV tile cannot run this region ("" when it can), and the tile itself.
std::string decode_gemv_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The same for the ffma decode tile (M <= 4, [N, K] weight).
std::string decode_ffma_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
RegionKernels build_matmul_decode_ffma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);

// The TMA decode tile (M <= 16, [N, K] weight, sm_90a): persistent, an mbarrier ring of TMA
// loads, mma.sync (codegen_matmul_decode_tma.cpp). whole_tiles false: stream-K over the weight's
// k steps (split tiles combined through the workspace); true: each SM runs whole tiles of about
// N / SMs rows (decode_tma_rows: no combine; needs 64 rows or more per SM).
std::string decode_tma_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                   bool whole_tiles = false);
RegionKernels build_matmul_decode_tma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                      bool whole_tiles = false);
// The bytes of the weight (B) one call of the region's matmul reads: batches x N x K elements.
int64_t decode_weight_bytes(const Graph& g, const fuse::Region& r);

// The matmul candidates of a region, best measured first (matmul_tiles, codegen_matmul_sm90.cpp):
//   - decode_tma_rows, decode_tma: for M <= 16 and an [N, K] weight of 64 MiB or more, the TMA
//     tile, its whole-tile cut first where an SM gets 64 rows or more (4096x14336 at M = 1 / 8 /
//     16, per launch: 0.0343 / 0.0346 / 0.0360 ms, against 0.0364 / 0.0368 / 0.0385 for the
//     stream-K cut, session 12; with session 13's 32 KiB steps 0.0341 / 0.0338 / 0.0341, back to
//     back 0.0320 / 0.0317 / 0.0318); for smaller weights both come after the two register
//     tiles, which were faster there;
//   - decode_gemv: for M <= 16, the mma GEMV tile (H200: weights streamed 1.5x faster than by the
//     Hopper GEMM at M = 1, 8, 16; 0.0430 ms at M = 1 for 4096x14336);
//   - decode_ffma: for M <= 4, the FFMA GEMV tile (whole 512-byte W runs per load; 0.0453 ms there);
//   - sm90_direct / sm90_ctile: the Hopper TMA + wgmma kernels. Where 128x256 tiles fill the GPU,
//     the direct-epilogue configs first (the CTA-pair 128x256 one measured fastest: 93-97.5% of
//     cuBLASLt), then the C-tile kernel (80-85%); for smaller problems the C-tile kernel first;
//   - generic: the mma.sync tile; where the Hopper kernels do not apply its description says why
//     (the fallback is reported, never silent).
enum class MatmulTile { decode_tma_rows, decode_tma, decode_ffma, decode_gemv, sm90_ctile, sm90_direct, generic };
struct MatmulVariant {
  MatmulTile tile = MatmulTile::generic;
  Sm90DirectConfig direct;  // sm90_direct only
};
std::vector<MatmulVariant> matmul_tiles(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
int matmul_variants(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev);
// The first variant number of `tile` for this region, or -1 where that tile does not apply.
int matmul_variant_of(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, MatmulTile tile);
RegionKernels build_matmul_variant(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                   int variant);

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
