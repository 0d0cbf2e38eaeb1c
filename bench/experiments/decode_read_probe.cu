// Decode weight-read probe (issue 4): how fast can one kernel stream a 14336 x 4096 bf16 weight
// (117 MB, [N, K], k contiguous) into shared memory, and which box shape, ring depth and launch
// form get closest to the copy bandwidth? A probe, not a product kernel: no math, so what it
// measures is the memory side's ceiling for the TMA decode tile (kernels/gemm/decode_tma.cuh),
// which reaches 3.35 TB/s where cuBLASLt reaches 3.5-3.6 (session 10).
//   nvcc -O3 -std=c++17 -arch=sm_90a -I kernels bench/experiments/decode_read_probe.cu -lcuda -o decode_read_probe
// Every variant runs one CTA of 256 threads per SM over a stream-K split of 16 KiB steps, with
// the decode tile's ring protocol: thread 0 issues, every warp waits on a stage's `full` barrier
// and releases it on `empty`, thread 0 refills the previous step's stage. A step is one TMA box
// of a 3D view of W, {64 k, N rows, K / 64 chunks} (strides: row, 128 bytes), box {64, rows,
// chunks}: rows x (128 x chunks)-byte runs, 16 KiB whatever the shape. `linear` steps are 16 KiB
// contiguous byte ranges (cp.async.bulk), the ideal pattern for DRAM.
// Timing: 20 launches back to back between two events, the median per launch of 9 such batches
// (the method of cuda::time_calls, queued); `pdl` launches with programmatic serialization and
// waits with griddepcontrol.wait (as Sinter's kernels do); `pf` first issues an L2 prefetch of
// the CTA's first `stages` boxes before that wait.
// Second part: the TMA decode tile's own loop (decode_tma_run, kernels/gemm/decode_tma.cuh) in
// isolation, x [M, 4096] bf16 against the same weight, launched as Sinter launches it (PDL):
// `tile end false` runs loads, math and the per-tile cross-warp sums but nothing at a tile's end;
// `true` adds the split-tile combine through a workspace and a store of the f32 tile; `warps 4`
// runs the tile ends on a warpgroup of 4 more warps while the 8 others stream; `batched true`
// combines with float4 reads, all issued before the sums (decode_splitk_combine_group); `tile rows`
// runs the whole-tile cut (tiles of about N / SMs rows, one CTA each, nothing combined). Beside
// the pure read above and the generated kernel in sinter_bench_gemm, it splits the time between
// the stream, the math and the tile ends.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/bulk_copy.cuh"
#include "common/hopper.cuh"
#include "gemm/decode_tma.cuh"
#include "probe_check.cuh"


// The tile's layout from the probe's settings (bf16; kWholeTiles off: the probe cuts the work
// itself through DecodeTmaWork and calls decode_tma_run directly).
template <int kBN_, int kMTile_, int kStages_, bool kChunked_ = false, int kAccChains_ = 1, bool kProducerWarp_ = false,
          int kWarpBoxes_ = 1>
struct ProbeCfg {
  static constexpr bool kBf16 = true, kChunked = kChunked_, kProducerWarp = kProducerWarp_, kWholeTiles = false,
                        kKnWeight = false;
  static constexpr int kBN = kBN_, kMTile = kMTile_, kStages = kStages_, kWarpBoxes = kWarpBoxes_,
                       kAccChains = kAccChains_;
};
template <int kBN, int kMTile, int kStages, bool kChunked = false, int kAccChains = 1, bool kProducerWarp = false,
          int kWarpBoxes = 1>
using DecodeTmaSmem = DecodeTmaLayout<ProbeCfg<kBN, kMTile, kStages, kChunked, kAccChains, kProducerWarp, kWarpBoxes>>;

constexpr int kStep = 16384;
constexpr long long kN = 14336, kK = 4096;

__device__ __forceinline__ void prefetch_box_l2(const CUtensorMap* map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void tma_box(void* dst, const CUtensorMap* map, u64* bar, int c1, int c2) {
  tma_load_3d(dst, reinterpret_cast<const SinterTensorMap*>(map), bar, 0, c1, c2);
}

// kRows == 0: linear 16 KiB ranges of `base`; else boxes of kRows rows x (8192 / kRows) k.
template <int kRows, int kStages, bool kPdl, bool kPrefetch>
__global__ void __launch_bounds__(256, 1) read_steps(const __grid_constant__ CUtensorMap map, const char* base,
                                                     long long total, int steps_per_tile, unsigned* sink) {
  constexpr int kChunks = kRows == 0 ? 1 : 128 / kRows;
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  __shared__ u64 full[kStages], empty[kStages];
  const long long begin = blockIdx.x * total / gridDim.x, end = (blockIdx.x + 1) * total / gridDim.x;
  const int steps = static_cast<int>(end - begin);
  // the load cursor (tile, k step), advanced one step at a time
  int tile = static_cast<int>(begin / steps_per_tile), ks = static_cast<int>(begin % steps_per_tile);
  long long lin = begin;
  if (kPrefetch && threadIdx.x == 0) {
    int t = tile, k = ks;
    for (int i = 0; i < kStages && i < steps; ++i) {
      if (kRows > 0) prefetch_box_l2(&map, 0, t * kRows, k * kChunks);
      else asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(base + (begin + i) * kStep), "r"(kStep) : "memory");
      if (++k == steps_per_tile) { k = 0; ++t; }
    }
  }
  if (kPdl) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
  int ist = 0;
  auto issue = [&]() {
    mbarrier_arrive_expect_tx(&full[ist], kStep);
    if (kRows > 0) {
      tma_box(smem + ist * kStep, &map, &full[ist], tile * kRows, ks * kChunks);
      if (++ks == steps_per_tile) { ks = 0; ++tile; }
    } else {
      bulk_copy_g2s(smem + ist * kStep, base + lin * kStep, kStep, &full[ist]);
      ++lin;
    }
    ist = ist + 1 == kStages ? 0 : ist + 1;
  };
  if (threadIdx.x == 0) {
    if (kRows > 0) tma_prefetch_descriptor(reinterpret_cast<const SinterTensorMap*>(&map));
    for (int i = 0; i < kStages; ++i) {
      mbarrier_init(&full[i], 1);
      mbarrier_init(&empty[i], 8);
    }
    fence_barrier_init();
    for (int i = 0; i < steps && i < kStages; ++i) issue();
  }
  __syncthreads();
  unsigned acc = 0;
  int st = 0, prev = kStages - 1;
  u32 phase = 0, prev_phase = 1;
  const int lane = threadIdx.x & 31;
  for (int i = 0; i < steps; ++i) {
    mbarrier_wait(&full[st], phase);
    acc += reinterpret_cast<const unsigned*>(smem + st * kStep)[threadIdx.x];  // a read, so the stage is used
    __syncwarp();
    if (lane == 0) mbarrier_arrive(&empty[st]);
    if (threadIdx.x == 0 && i >= 1 && i - 1 + kStages < steps) {
      mbarrier_wait(&empty[prev], prev_phase);
      issue();
    }
    __syncwarp();
    prev = st;
    prev_phase = phase;
    if (++st == kStages) {
      st = 0;
      phase ^= 1u;
    }
  }
  if (acc == 0x12345678u) *sink = acc;
}

// The decode tile's loop; kCombine: split tiles meet through the workspace and the sum is stored
// by the 8 streaming warps at each tile's end (named barrier 1 beside a producer warp).
template <class S, bool kCombine, bool kBatched = false>
__global__ void __launch_bounds__(S::kThreads, 1) tile_loop(const __grid_constant__ CUtensorMap map_x,
                                                            const __grid_constant__ CUtensorMap map_w, DecodeTmaWork wk,
                                                            long long tiles_n, int m, int n, int max_contributors,
                                                            float* part, unsigned* counts, float* y) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  const int rows = min(m, S::kMTile);
  constexpr int kEnders = kDecodeTmaThreads;
  // a producer warp takes no part in the consumers' barriers: named barrier 1, batched
  static_assert(!S::kProducerWarp || kBatched, "with a producer warp the consumers combine batched");
  constexpr int kBar = S::kProducerWarp ? 1 : 0;
  decode_tma_run<S>(
      smem, reinterpret_cast<const SinterTensorMap*>(&map_x), reinterpret_cast<const SinterTensorMap*>(&map_w), wk,
      tiles_n, blockIdx.x, false, [&](i64 tile, int contributors, int ordinal, float* ctile) {
        if (!kCombine) return;
        const int tid = static_cast<int>(threadIdx.x);
        float* slot_part = part + tile * max_contributors * (S::kMTile * S::kBN);
        if (contributors > 1) {
          const bool last =
              kBatched ? decode_splitk_combine_group<kEnders, kBar, S::kMTile * S::kBN, S::kBN>(
                             ctile, rows, slot_part, ordinal, contributors, counts + tile, tid)
                     : decode_splitk_combine<kDecodeTmaThreads, S::kMTile * S::kBN, S::kBN>(
                           ctile, rows, slot_part, ordinal, contributors, counts + tile);
          if (!last) return;
        }
        const int n0 = static_cast<int>(tile) * wk.tile_rows;
        for (int i = tid; i < rows * S::kBN; i += kEnders) {
          const int r = i / S::kBN, c = i % S::kBN;
          if (c < wk.tile_rows && n0 + c < n) y[static_cast<long long>(r) * n + n0 + c] = ctile[i];
        }
      });
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const long long bytes = kN * kK * 2;
  char* w;
  unsigned* sink;
  CHECK(cudaMalloc(&w, bytes));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(w, 0x3c, bytes));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));

  // one CTA per SM on `stream`; pdl: with programmatic serialization (attr must outlive the launch)
  auto launch_config = [&](int threads, int smem, bool pdl, cudaLaunchAttribute& attr) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(sms);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cfg;
  };
  // 20 launches back to back between two events, the median per launch of 9 such batches
  auto report = [&](const char* label, auto&& launch, double moved) {
    for (int i = 0; i < 5; ++i) launch();
    CHECK(cudaStreamSynchronize(stream));
    std::vector<float> per;
    for (int rep = 0; rep < 9; ++rep) {
      CHECK(cudaEventRecord(a, stream));
      for (int i = 0; i < 20; ++i) launch();
      CHECK(cudaEventRecord(b, stream));
      CHECK(cudaEventSynchronize(b));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      per.push_back(ms / 20);
    }
    CHECK(cudaGetLastError());
    std::sort(per.begin(), per.end());
    const double ms = per[per.size() / 2];
    std::printf("%-44s %8.4f ms %6.3f TB/s (min %.4f max %.4f)\n", label, ms, moved / ms / 1e9, per.front(),
                per.back());
    std::fflush(stdout);
  };
  auto run = [&](const char* label, auto kernel, int rows, int stages, bool pdl) {
    CUtensorMap map{};
    int spt = 1;
    long long total = bytes / kStep;
    if (rows > 0) {
      const int chunks = 128 / rows;
      const cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(kN), static_cast<cuuint64_t>(kK / 64)};
      const cuuint64_t strides[2] = {static_cast<cuuint64_t>(kK * 2), 128};
      const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(rows), static_cast<cuuint32_t>(chunks)};
      const cuuint32_t estr[3] = {1, 1, 1};
      const CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, w, dims, strides, box, estr,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        std::printf("%-44s tensor map rejected (CUresult %d)\n", label, static_cast<int>(r));
        return;
      }
      spt = static_cast<int>(kK / 64 / chunks);
      total = (kN / rows) * spt;
    }
    const int smem = stages * kStep + 1024;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaLaunchAttribute attr{};
    const cudaLaunchConfig_t cfg = launch_config(256, smem, pdl, attr);
    report(label, [&] { CHECK(cudaLaunchKernelEx(&cfg, kernel, map, static_cast<const char*>(w), total, spt, sink)); },
           total * double(kStep));
  };
#define R(ROWS, ST, PDL, PF) \
  run("rows " #ROWS " stages " #ST " pdl " #PDL " pf " #PF, read_steps<ROWS, ST, PDL, PF>, ROWS, ST, PDL)
  R(0, 6, false, false);
  R(0, 6, true, false);
  R(0, 6, true, true);
  R(128, 6, false, false);
  R(64, 6, false, false);
  R(32, 6, false, false);
  R(16, 6, false, false);
  R(8, 6, false, false);
  R(128, 4, false, false);
  R(128, 8, false, false);
  R(128, 10, false, false);
  R(16, 4, false, false);
  R(16, 8, false, false);
  R(16, 10, false, false);
  R(128, 6, true, false);
  R(128, 6, true, true);
  R(16, 6, true, false);
  R(16, 6, true, true);
  R(32, 8, true, true);
  R(16, 8, true, true);

  // the decode tile's loop in isolation
  const int m_max = 16;
  char* x;
  float *part, *y;
  unsigned* counts;
  CHECK(cudaMalloc(&x, m_max * kK * 2));
  CHECK(cudaMemset(x, 0x3c, m_max * kK * 2));
  CHECK(cudaMalloc(&part, 64ll << 20));
  CHECK(cudaMalloc(&counts, 1 << 20));
  CHECK(cudaMemset(counts, 0, 1 << 20));
  CHECK(cudaMalloc(&y, m_max * kN * 4));
  // whole_rows > 0: the whole-tile cut (tiles of whole_rows rows, none split; DecodeTmaWork)
  auto run_tile = [&](const char* label, auto kernel, int bn, int step_k, int m_tile, int smem, int threads, int m,
                      int whole_rows = 0) {
    auto encode2d = [&](CUtensorMap* map, void* base, long long rows, int box_rows) {
      const cuuint64_t dims[3] = {static_cast<cuuint64_t>(kK), static_cast<cuuint64_t>(rows), 1};
      const cuuint64_t strides[2] = {static_cast<cuuint64_t>(kK * 2), static_cast<cuuint64_t>(rows * kK * 2)};
      const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), 1};
      const cuuint32_t estr[3] = {1, 1, 1};
      return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, base, dims, strides, box, estr,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    };
    CUtensorMap mx{}, mw{};
    const int rows = whole_rows > 0 ? whole_rows : bn;
    if (encode2d(&mx, x, m, m_tile) != CUDA_SUCCESS || encode2d(&mw, w, kN, rows) != CUDA_SUCCESS) {
      std::printf("%-44s tensor map rejected\n", label);
      return;
    }
    const long long tiles = (kN + rows - 1) / rows, spt = kK / step_k;
    const DecodeTmaWork wk{tiles * spt, spt, whole_rows > 0 ? std::min<long long>(sms, tiles) : sms,
                           whole_rows > 0 ? tiles : 0, rows};
    const int maxc = static_cast<int>(std::min<long long>(sms, (spt + (wk.total / sms) - 1) / (wk.total / sms) + 1));
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaLaunchAttribute attr{};
    cudaLaunchConfig_t cfg = launch_config(threads, smem, true, attr);
    cfg.gridDim = dim3(static_cast<unsigned>(wk.ctas));
    report(label, [&] {
      CHECK(cudaLaunchKernelEx(&cfg, kernel, mx, mw, wk, tiles, m, static_cast<int>(kN), maxc, part, counts, y));
    }, double(bytes));
  };
// a tile loop of S (a DecodeTmaSmem) at M rows: stream-K (ROWS 0) or whole tiles of ROWS rows
#define TILE(LABEL, S, COMB, BATCHED, M, ROWS) \
  run_tile(LABEL, tile_loop<S, COMB, BATCHED>, S::kBN, S::kStepK, S::kMTile, S::kBytes, S::kThreads, M, ROWS)
#define T(BN, MT, ST, COMB, M, BATCHED)                                                              \
  {                                                                                                  \
    using S = DecodeTmaSmem<BN, MT, ST>;                                                             \
    TILE("tile bn " #BN " m " #M " stages " #ST " tile end " #COMB " batched " #BATCHED, S, COMB, BATCHED, M, 0); \
  }
  T(128, 8, 6, false, 1, false);
  T(128, 8, 6, true, 1, false);
  T(128, 8, 6, true, 8, false);
  T(128, 16, 6, false, 16, false);
  T(128, 16, 6, true, 16, false);
  // in line, the partial reads batched (SINTER_DECODE_TMA_TILE_END=batched)
  T(128, 8, 6, true, 1, true);
  T(128, 8, 6, true, 8, true);
  T(128, 16, 6, true, 16, true);
  // (session 11-12's lines for a warpgroup of tile-end warps went with that variant, session 13)
  // the whole-tile cut: 132 tiles of 109 rows (14336 / 132 = 108.6), one per SM, nothing combined
  // (Sinter's decode_tma_rows candidate)
  const int rows = static_cast<int>((kN + sms - 1) / sms);
  using M8 = DecodeTmaSmem<128, 8, 6>;
  using M16 = DecodeTmaSmem<128, 16, 6>;
  TILE("tile rows m 1 stages 6 whole tiles", M8, true, false, 1, rows);
  TILE("tile rows m 8 stages 6 whole tiles", M8, true, false, 8, rows);
  TILE("tile rows m 1 stages 6 whole, no tile end", M8, false, false, 1, rows);
  TILE("tile rows m 16 stages 6 whole tiles", M16, true, false, 16, rows);
  // where M = 16's extra time goes: the tile end, or x's 16 rows (the same 16-row tile with 8 or
  // 1 rows of x: the box's other rows zero-filled, not read)
  TILE("tile rows m 16 stages 6 whole, no tile end", M16, false, false, 16, rows);
  TILE("tile rows m 8 (16-row tile) whole tiles", M16, true, false, 8, rows);
  TILE("tile rows m 1 (16-row tile) whole tiles", M16, true, false, 1, rows);
  // 5 stages: a 16-row CTA small enough for two per SM, so a programmatic launch's next CTAs can
  // start during this one's tail
  using M16s5 = DecodeTmaSmem<128, 16, 5>;
  TILE("tile rows m 16 stages 5 whole tiles", M16s5, true, false, 16, rows);
  // session 12's per-step experiments (DecodeTmaSmem::kAccChains, kProducerWarp), whole tiles
  using C8 = DecodeTmaSmem<128, 8, 6, false, 4>;
  using P8 = DecodeTmaSmem<128, 8, 6, false, 1, true>;
  using CP8 = DecodeTmaSmem<128, 8, 6, false, 4, true>;
  using CP16 = DecodeTmaSmem<128, 16, 6, false, 4, true>;
  TILE("tile rows m 1 whole, 4 acc chains", C8, true, false, 1, rows);
  TILE("tile rows m 1 whole, producer warp", P8, true, true, 1, rows);
  TILE("tile rows m 1 whole, chains + producer", CP8, true, true, 1, rows);
  TILE("tile rows m 16 whole, chains + producer", CP16, true, true, 16, rows);
  // session 13: 2 boxes of 64 k per warp a step (kWarpBoxes), whole tiles: does a step's fixed
  // SM-side cost bound the tile (half as many steps)?
  using W2 = DecodeTmaSmem<128, 8, 4, false, 1, false, 2>;
  using W2s3 = DecodeTmaSmem<128, 8, 3, false, 1, false, 2>;
  using W2s5 = DecodeTmaSmem<128, 8, 5, false, 1, false, 2>;
  using W2c16 = DecodeTmaSmem<128, 16, 4, false, 2, false, 2>;
  using W2cp16 = DecodeTmaSmem<128, 16, 4, false, 2, true, 2>;
  using W2p8 = DecodeTmaSmem<128, 8, 4, false, 1, true, 2>;
  TILE("tile rows m 1 whole, 2 boxes a warp, 4 st", W2, true, false, 1, rows);
  TILE("tile rows m 1 whole, 2 boxes, 4 st, no end", W2, false, false, 1, rows);
  TILE("tile rows m 1 whole, 2 boxes a warp, 3 st", W2s3, true, false, 1, rows);
  TILE("tile rows m 1 whole, 2 boxes a warp, 5 st", W2s5, true, false, 1, rows);
  TILE("tile rows m 8 whole, 2 boxes a warp, 4 st", W2, true, false, 8, rows);
  TILE("tile rows m 1 whole, 2 boxes + producer", W2p8, true, true, 1, rows);
  TILE("tile rows m 16 whole, 2 boxes, 2 chains", W2c16, true, false, 16, rows);
  TILE("tile rows m 16 whole, 2 boxes, 2 ch + prod", W2cp16, true, true, 16, rows);
  using C2x16 = DecodeTmaSmem<128, 16, 6, false, 2>;
  TILE("tile rows m 16 whole, 2 chains", C2x16, true, false, 16, rows);
  // whole tiles of 112 and 128 rows (128 and 112 CTAs): does the 109-row box cost, or the cut?
  TILE("tile rows m 1 stages 6 whole 112 rows", M8, true, false, 1, 112);
  TILE("tile rows m 1 stages 6 whole 128 rows", M8, true, false, 1, 128);
  TILE("tile rows m 1 stages 6 whole 112, no end", M8, false, false, 1, 112);
  return 0;
}
