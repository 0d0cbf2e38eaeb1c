// Matmul regions with M <= 16 and an [N, K] weight on the TMA decode tile
// (kernels/gemm/decode_tma.cuh): one persistent CTA per SM, TMA into an mbarrier ring, mma.sync
// from shared memory, then the region's epilogue (AnchorEpilogue::gemm_tile over the C tile).
// Two cuts of the weight over the SMs, so every SM streams about the same bytes: whole tiles of
// about N / SMs rows (MatmulTile::decode_tma_rows, nothing combined), or a stream-K split of
// 128-row tiles' 16 KiB boxes with split tiles combined through the workspace.
//
// Compile-time: dtype, the M tile (8 or 16 rows), the ring depth and the epilogue. Run-time:
// every size and stride (in the tensor maps and the shape) and the stream-K split, so one binary
// serves every decode shape of a class.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/codegen_gemm.hpp"
#include "engines/jit/sm90_operands.hpp"
#include "gemm/gemm_abi.h"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// Mirrors kernels/gemm/decode_tma.cuh; the generated source static_asserts that they agree.
constexpr int kThreadsHost = 256, kStepBytesHost = 16384, kDecodeTmaWarpsHost = kThreadsHost / 32;
constexpr int64_t kMaxM = 16;

// The tile: bn W rows per tile (a step: warp_boxes x 128 / bn boxes of 64 k, warp_boxes x 16 KiB)
// and the ring depth. Sessions 10-12 below measured 16 KiB steps (warp_boxes 1).
// H200, 4096 x 14336 [N, K] bf16, L2 hot, session 10 (same process as cuBLASLt at 0.0325-0.0335):
//   bn 128: M = 1 0.0351 ms (6 stages), 0.0366 (4), 0.0368 (8), 0.0393 (12); M = 8 0.0382,
//           M = 16 0.0416 (6 stages)
//   bn 64:  M = 1 0.0371, M = 8 0.0377, M = 16 0.0399 (6 stages)
//   bn 32:  M = 1 0.0450, M = 8 0.0452, M = 16 0.0465 (6 stages; 4 or 10 no better)
// Longer runs along each W row (bn 32: 512-byte runs) streamed slower, not faster; deeper rings
// past 6 did not help either. Those bn 32 / 64 steps were 4 / 2 TMA boxes of W and as many of x;
// with K % 64 == 0 and one batch they are now one chunked box each (DecodeTmaSmem::kChunked).
// Session 11 (call 2, tile ends still in line): bn 32 chunked M = 1 / 8 / 16 0.0367 / 0.0369 /
// 0.0389 ms, bn 64 0.0366 / 0.0374 / 0.0397, bn 128 0.0356 / 0.0385 / 0.0422.
// Tried and removed in session 11: x's fragments read by the warps from global memory instead
// of a TMA box (0.072 ms at M = 1, twice as slow: every step waited on its loads), and an L2
// prefetch of each CTA's first steps before griddepcontrol.wait (0.0374 against 0.0356; the
// read probe agreed: 3.96 against 4.02 TB/s).
// SINTER_DECODE_TMA_BN=32|64|128 and SINTER_DECODE_TMA_STAGES=2..12 override the tile, for A/B
// timing in one process (read at each build).
// SINTER_DECODE_TMA_TILE_END: how split tiles end (stream-K). Session 12 (H200, same process
// as cuBLASLt at 0.0329-0.0348 ms), M = 1 / 8 / 16:
//   batched (default): the 8 warps, decode_splitk_combine_group (float4, every read issued
//     before the sums): 0.03571 / 0.03664 / 0.03811 ms;
//   inline: the 8 warps, decode_splitk_combine (one L2 round trip per element group):
//     0.03584 / 0.03888 / 0.04189;
//   warps (removed in session 13): a warpgroup of 4 more warps ended the tiles with the batched
//     combine while the 8 streaming warps went on: 0.03555 / 0.03798 / 0.04054 (with bn 32:
//     0.03648 / 0.03664 / 0.03702). Any value but inline now means batched.
// The whole-tile cut (MatmulTile::decode_tma_rows) has no split tile to end.
// SINTER_DECODE_TMA_ACC_CHAINS=1|2|4 and SINTER_DECODE_TMA_PRODUCER=0|1 (both cuts): independent
// accumulator chains per step and a producer warp (DecodeTmaSmem), written after session 12's
// Nsight Compute run showed the tile bound by its per-step SM-side path. With 32 KiB steps they
// are the whole-tile cut's default since session 13 (config_of); the stream-K cut keeps 16 KiB
// steps, one chain and thread 0 issuing until they are measured there.
// SINTER_DECODE_TMA_WARP_BOXES=1|2|4 (both cuts): each warp reads 1, 2 or 4 boxes of 64 k a step
// (DecodeTmaSmem::kWarpBoxes), so a step is 16, 32 or 64 KiB of W; the ring is 6, 3 or 2 stages
// deep unless SINTER_DECODE_TMA_STAGES says otherwise.
struct TmaConfig {
  int bn = 128, stages = 6;
  bool batched_combine = true;
  bool whole_tiles = false;  // DecodeTmaWork's whole-tile cut (MatmulTile::decode_tma_rows)
  // DecodeTmaSmem::kAccChains, kProducerWarp and kWarpBoxes (config_of sets them per cut)
  int acc_chains = 1;
  bool producer_warp = false;
  int warp_boxes = 1;  // 64-k boxes per warp a step
  int kboxes() const { return 128 / bn; }
  int step_boxes() const { return kboxes() * warp_boxes; }
  int step_k() const { return 64 * step_boxes(); }
};
TmaConfig config_of(bool whole_tiles) {
  TmaConfig c;
  c.whole_tiles = whole_tiles;
  if (whole_tiles) {
    // 32 KiB steps (2 boxes of 64 k a warp), 2 accumulator chains and a producer warp: session
    // 13 call 2 (H200, back to back, 4096 x 14336, 4 stages): M = 1 / 8 / 16 0.03218 / 0.03197 /
    // 0.03207 ms (3.65 / 3.67 / 3.66 TB/s) against 0.03267 / 0.03316 / 0.03454 with session 12's
    // 16 KiB steps, one chain and thread 0 issuing the loads (stages: below)
    c.warp_boxes = 2;
    c.acc_chains = 2;
    c.producer_warp = true;
  }
  if (const char* v = std::getenv("SINTER_DECODE_TMA_WARP_BOXES")) {
    const int n = std::atoi(v);
    if (n == 1 || n == 2 || n == 4) c.warp_boxes = n;
  }
  // 32 KiB steps: 3 stages (session 13 call 3, back to back, M = 1 / 8 / 16: 3 stages 0.03219 /
  // 0.03188 / 0.03189 ms, 4 stages 0.03231 / 0.03203 / 0.03213, 5 stages 0.03249 / 0.03218 /
  // 0.03232); 64 KiB steps: 2 (3 would not fit beside the C tile at M = 16)
  c.stages = c.warp_boxes == 1 ? 6 : c.warp_boxes == 2 ? 3 : 2;
  if (const char* v = std::getenv("SINTER_DECODE_TMA_STAGES")) {
    const int n = std::atoi(v);
    if (n >= 2 && n <= 12) c.stages = n;
  }
  if (const char* v = std::getenv("SINTER_DECODE_TMA_ACC_CHAINS")) {
    const int n = std::atoi(v);
    if (n == 1 || n == 2 || n == 4) c.acc_chains = n;
  }
  if (const char* v = std::getenv("SINTER_DECODE_TMA_PRODUCER")) c.producer_warp = std::string(v) == "1";
  if (whole_tiles) return c;  // 128-row boxes cut to the tile's rows; no tile is combined
  if (const char* v = std::getenv("SINTER_DECODE_TMA_BN")) {
    const int n = std::atoi(v);
    if (n == 32 || n == 64 || n == 128) c.bn = n;
  }
  if (const char* v = std::getenv("SINTER_DECODE_TMA_TILE_END")) c.batched_combine = std::string(v) != "inline";
  if (c.producer_warp) c.batched_combine = true;  // the consumers meet on named barrier 1: batched
  return c;
}

// Whether a step's boxes are one chunked TMA box (DecodeTmaSmem::kChunked): several k boxes a
// step, K a multiple of 64 and one batch.
bool chunked(const Sm90Operands& o, const TmaConfig& c) {
  return !c.whole_tiles && c.step_boxes() > 1 && o.k % 64 == 0 && o.batch.numel == 1;
}
// The chunked view of x (is_a) or W: {64 k, rows, K / 64 chunks}, chunks 128 bytes apart, box
// {64, box_rows, a step's boxes}; a step's chunks past K / 64 read as zeros.
TensorMapSlot chunked_map(const fuse::Region& r, const Sm90Operands& o, bool is_a, uint32_t box_rows,
                          const TmaConfig& c) {
  TensorMapSlot t = sm90_tensor_map(r, o, is_a, box_rows);
  t.dims[0] = 64;
  t.dims[1] = static_cast<uint64_t>(is_a ? o.m : o.n);
  t.dims[2] = static_cast<uint64_t>(o.k / 64);
  t.strides[1] = 128;  // t.strides[0], the row stride, stays
  t.box[2] = static_cast<uint32_t>(c.step_boxes());
  return t;
}

int m_tile_of(int64_t m) { return m <= 8 ? 8 : 16; }
int smem_bytes(const TmaConfig& c, int m_tile) {
  const int stage = (kStepBytesHost + c.kboxes() * m_tile * 128) * c.warp_boxes;
  const int red = c.kboxes() > 1 ? c.kboxes() * 16 * c.bn * 4 : 0;
  return 1024 + c.stages * stage + 16 * c.bn * 4 + red + 2 * c.stages * 8;
}
int threads_of(const TmaConfig& c) { return kThreadsHost + (c.producer_warp ? 32 : 0); }

// The cut of the steps over `ctas` CTAs (one per SM, none without a step): stream-K over `total`
// steps of bn-row tiles, or whole tiles of tile_rows rows (DecodeTmaWork).
struct Work {
  int64_t tiles = 0, steps_per_tile = 0, total = 0, ctas = 0;
  int64_t max_contributors = 1;  // the most CTAs that share one tile: the partials per tile
  int64_t tile_rows = 0, tiles_n = 0;  // W rows per tile, tiles per batch
};

// Whole tiles: the rows of all batches spread over the SMs, R = ceil(batch x N / SMs) rows each,
// cut into j = ceil(R / bn) tiles of ceil(R / j) rows, so a CTA runs at most j whole tiles of
// about R / j rows (14336 x 4096 on 132 SMs: 132 tiles of 109 rows, one per SM).
int64_t whole_tile_rows(const Sm90Operands& o, const TmaConfig& c, int64_t sms) {
  const int64_t per_sm = std::max<int64_t>((o.batch.numel * o.n + sms - 1) / sms, 1);
  const int64_t j = (per_sm + c.bn - 1) / c.bn;
  return (per_sm + j - 1) / j;
}

Work plan_work(const Sm90Operands& o, const TmaConfig& c, const cuda::DeviceProperties& dev) {
  Work w;
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 132;
  w.tile_rows = c.whole_tiles ? whole_tile_rows(o, c, sms) : c.bn;
  w.tiles_n = (o.n + w.tile_rows - 1) / w.tile_rows;
  w.tiles = o.batch.numel * w.tiles_n;
  w.steps_per_tile = (o.k + c.step_k() - 1) / c.step_k();
  w.total = w.tiles * w.steps_per_tile;
  if (c.whole_tiles) {
    w.ctas = std::clamp<int64_t>(sms, 1, std::max<int64_t>(w.tiles, 1));
    return w;  // max_contributors 1: every tile is inside one CTA
  }
  w.ctas = std::clamp<int64_t>(sms, 1, std::max<int64_t>(w.total, 1));
  // Every CTA runs at least q = total / ctas steps, so a tile's steps_per_tile steps meet at most
  // ceil(steps_per_tile / q) + 1 CTAs (a bound, not a walk over every tile; it sizes the partials).
  const int64_t q = std::max<int64_t>(w.total / w.ctas, 1);
  w.max_contributors = std::min(w.ctas, (w.steps_per_tile + q - 1) / q + 1);
  return w;
}

}  // namespace

int64_t decode_weight_bytes(const Graph& g, const fuse::Region& r) {
  const Sm90Operands o = sm90_operands(g, r);
  return o.batch.numel * o.n * o.k * static_cast<int64_t>(dtype_size(o.dtype_b));
}

namespace {

// What the TMA tile would build for a region, worked out once for both decode_tma_unsupported
// and build_matmul_decode_tma: `why` says why it declines ("" when it takes the region); the rest
// is set as far as the checks got (all of it when why is empty).
struct TmaPlan {
  std::string why;
  Sm90Operands o;
  TmaConfig c;
  Work work;
  std::optional<AnchorEpilogue> epi;
};

TmaPlan plan_tma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, bool whole_tiles) {
  TmaPlan p;
  p.why = sm90_gemm_unsupported(g, r, dev);
  if (!p.why.empty()) return p;
  p.o = sm90_operands(g, r);
  const Sm90Operands& o = p.o;
  if (o.m > kMaxM) {
    p.why = "M = " + std::to_string(o.m) + " is more than 16 rows";
    return p;
  }
  if (o.b_mn_major) {
    p.why = "the weight is n-contiguous ([K, N]); this tile streams k-contiguous [N, K] weights";
    return p;
  }
  p.c = config_of(whole_tiles);
  p.work = plan_work(o, p.c, dev);
  // the kernel counts a CTA's steps in int (and step x CTA count stays far inside i64)
  if (p.work.total >= (int64_t{1} << 31)) {
    p.why = "2^31 or more weight steps";
    return p;
  }
  // whole tiles want rows enough per SM: a tile of a few rows moves a few KiB a step, too little
  // in flight to stream (below this the stream-K cut stays the only TMA tile)
  constexpr int64_t kMinWholeTileRows = 64;
  if (whole_tiles && p.work.tile_rows < kMinWholeTileRows) {
    p.why = "whole tiles of " + std::to_string(p.work.tile_rows) + " weight rows (fewer than " +
            std::to_string(kMinWholeTileRows) + " per SM): too few bytes a step; the stream-K cut streams them";
    return p;
  }
  // + the static shared memory beside the ring: the epilogue's column-sum buffers (8 warps x bn
  // floats per column-sum output) and scratch, the combine's flag (a deep ring set through the
  // environment can reach the limit)
  p.epi.emplace(g, r, o.mm->outputs[0]);
  const int smem =
      smem_bytes(p.c, m_tile_of(o.m)) + std::max(1, p.epi->column_exits()) * kDecodeTmaWarpsHost * p.c.bn * 4 + 1024;
  if (dev.max_shared_memory_per_block_optin < static_cast<size_t>(smem)) {
    p.why = "needs " + std::to_string(smem) + " bytes of shared memory per block";
  }
  return p;
}

}  // namespace

std::string decode_tma_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                   bool whole_tiles) {
  return plan_tma(g, r, dev, whole_tiles).why;
}

RegionKernels build_matmul_decode_tma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                      bool whole_tiles) {
  TmaPlan plan = plan_tma(g, r, dev, whole_tiles);
  if (!plan.why.empty()) {
    throw Error(ErrorCode::internal, "build_matmul_decode_tma: region " + std::to_string(r.id) + ": " + plan.why);
  }
  const Sm90Operands& o = plan.o;
  const TmaConfig& c = plan.c;
  const Work& work = plan.work;
  AnchorEpilogue& epi = *plan.epi;
  const bool bf16 = o.dtype == DType::bf16;
  const int m_tile = m_tile_of(o.m);
  const int smem = smem_bytes(c, m_tile);

  // a tile's partials: max_contributors slots of m_tile x bn floats
  const size_t part_bytes =
      work.max_contributors > 1 ? static_cast<size_t>(work.tiles * work.max_contributors) * m_tile * c.bn * 4 : 0;
  const SplitKWorkspace ws = splitk_workspace(epi.workspace_bytes(), part_bytes, work.tiles);

  RegionKernels rk;
  KernelSpec spec;
  ArgsWriter w(spec);
  const bool chunk = chunked(o, c);
  w.tensor_map("tma_x", chunk ? chunked_map(r, o, true, static_cast<uint32_t>(m_tile), c)
                              : sm90_tensor_map(r, o, true, static_cast<uint32_t>(m_tile)));
  w.tensor_map("tma_w", chunk ? chunked_map(r, o, false, static_cast<uint32_t>(c.bn), c)
                              : sm90_tensor_map(r, o, false, static_cast<uint32_t>(work.tile_rows)));
  w.field("SinterGemmShape", "shape", sm90_gemm_shape(o));
  w.field("i64", "total", work.total);
  w.field("i64", "steps_per_tile", work.steps_per_tile);
  w.field("i64", "ctas", work.ctas);
  w.field("i64", "tiles_n", work.tiles_n);
  w.field("i64", "whole_tiles", c.whole_tiles ? work.tiles : 0);
  w.field("int", "tile_rows", static_cast<int>(work.tile_rows));
  w.field("i64", "max_contributors", work.max_contributors);
  // the batched combine reads and writes the partials as float4
  w.workspace_pointer("float*", "part", ws.part_offset, c.batched_combine ? 16 : 4);
  w.workspace_pointer("unsigned int*", "counts", ws.count_offset, 4);
  epi.declare(w);
  const std::string args = w.finish();

  GemmTileScope scope;
  scope.threads = "kDecodeTmaThreads";
  if (c.producer_warp) scope.sync = "named_barrier_sync(1, kDecodeTmaThreads);";  // not the producer
  scope.bn = "Cfg::kBN";
  scope.ldc = "Cfg::kBN";
  const std::string mt = std::to_string(m_tile), st = std::to_string(c.stages), bf = bf16 ? "true" : "false";

  std::ostringstream src;
  src << "// matmul region " << r.id << " of graph '" << g.name() << "' (decode tma, M <= 16, [N, K] weight)\n"
      << kernel_includes({"gemm/gemm_abi.h", "gemm/decode_tma.cuh"})
      << "using Cfg = DecodeTmaSmem<" << c.bn << ", " << mt << ", " << st << ", " << (chunk ? "true" : "false") << ", "
      << c.acc_chains << ", " << (c.producer_warp ? "true" : "false") << ", "
      << c.warp_boxes << ">;\n"
      << "static_assert(kDecodeTmaThreads == " << kThreadsHost << " && Cfg::kThreads == " << threads_of(c)
      << " && kDecodeTmaStepBytes == " << kStepBytesHost << " && Cfg::kBytes == " << smem
      << ", \"the host's TMA decode constants are stale\");\n"
      << "[[maybe_unused]] constexpr bool kIndex64 = " << (epi.index64() ? "true" : "false") << ";\n\n"
      << args << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(Cfg::kThreads, 1) sinter_region(const __grid_constant__ Args a) {\n"
      << "  sinter_kernel_begin();\n"
      << "  extern __shared__ __align__(1024) char smem_raw[];\n"
      << "  char* smem_al = reinterpret_cast<char*>((reinterpret_cast<u64>(smem_raw) + 1023) & ~u64{1023});\n"
      << epi.kernel_begin("  ")
      << "  const SinterGemmShape& s = a.shape;\n"
      << "  const DecodeTmaWork wk{a.total, a.steps_per_tile, a.ctas, a.whole_tiles, a.tile_rows};\n"
      << "  const int rows = static_cast<int>(min(s.m, i64{" << m_tile << "}));\n"
      << "  decode_tma_run<Cfg, " << bf << ">(smem_al, &a.tma_x, &a.tma_w, wk, a.tiles_n,\n"
      << "      [&](i64 tile, int contributors, int ordinal, float* ctile) {\n";
  if (c.whole_tiles) {
    // every tile is inside one CTA (contributors is 1, ordinal 0): straight to the epilogue
    src << "    (void)contributors;\n"
        << "    (void)ordinal;\n";
  } else if (c.batched_combine) {
    // on the consumer warps (named barrier 1) beside a producer warp, or on the whole CTA (barrier 0)
    src << "    if (contributors > 1 && !decode_splitk_combine_group<" << scope.threads << ", "
        << (c.producer_warp ? 1 : 0) << ", Cfg::kMTile * Cfg::kBN, Cfg::kBN>(\n"
        << "            ctile, rows, a.part + tile * a.max_contributors * (Cfg::kMTile * Cfg::kBN), ordinal,\n"
        << "            contributors, a.counts + tile, " << scope.tid << ")) {\n";
  } else {
    src << "    if (contributors > 1 && !decode_splitk_combine<kDecodeTmaThreads, Cfg::kMTile * Cfg::kBN, Cfg::kBN>(\n"
        << "            ctile, rows, a.part + tile * a.max_contributors * (Cfg::kMTile * Cfg::kBN), ordinal,\n"
        << "            contributors, a.counts + tile)) {\n";
  }
  if (!c.whole_tiles) {
    src << "      return;  // another CTA of this tile sums the partials\n"
        << "    }\n";
  }
  src << "    const i64 bi = tile / a.tiles_n;\n"
      << "    const int n0 = static_cast<int>(tile - bi * a.tiles_n) * a.tile_rows;\n"
      << "    const char* smem = reinterpret_cast<const char*>(ctile);\n"
      << epi.gemm_tile("bi * s.m", "static_cast<int>(s.m)", "static_cast<i64>(n0)",
                       "min(a.tile_rows, static_cast<int>(s.n - n0))", scope)
      << "  });\n"
      << epi.kernel_end("  ") << "}\n";

  spec.source = src.str();
  spec.description = std::string("matmul decode tma mma.") + (bf16 ? "bf16" : "f16") + " m" + mt + "x" +
                     std::to_string(c.bn) + " k" + std::to_string(c.step_k()) + " stages" + st +
                     (chunk ? " chunked" : "") +
                     (c.whole_tiles || c.batched_combine ? "" : " inline-combine") +
                     (c.acc_chains > 1 ? " chains" + std::to_string(c.acc_chains) : "") +
                     (c.producer_warp ? " producer-warp" : "") +
                     (c.warp_boxes > 1 ? " warp-boxes" + std::to_string(c.warp_boxes) : "") +
                     " w:[N,K] " +
                     (c.whole_tiles ? "whole tiles " + std::to_string((work.tiles + work.ctas - 1) / work.ctas) + "x" +
                                          std::to_string(work.tile_rows) + " rows"
                                    : "streamk" + std::to_string(work.ctas) + "x" +
                                          std::to_string((work.total + work.ctas - 1) / work.ctas) + " steps") +
                     (o.batch_folded ? " batch-folded" : "") + (epi.index64() ? " idx64" : "") + epi.describe();
  spec.launch.grid = dim3(static_cast<unsigned>(work.ctas));
  spec.launch.block = dim3(static_cast<unsigned>(threads_of(c)));
  spec.launch.dynamic_shared_memory = static_cast<size_t>(smem);
  rk.workspace_bytes = ws.bytes;
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
