// Matmul regions with M <= 16 and an [N, K] or row-major [K, N] weight on the TMA decode tile
// (kernels/gemm/decode_tma.cuh): one persistent CTA per SM, TMA into an mbarrier ring, mma.sync
// from shared memory, then the region's epilogue over each C tile. Two cuts of the weight over
// the SMs, so every SM streams about the same bytes: whole tiles of about N / SMs rows
// (MatmulTile::decode_tma_rows, nothing combined), or a stream-K split of bn-row tiles' steps
// with split tiles combined through the workspace (MatmulTile::decode_tma). The per-step
// settings are a DecodeTmaConfig (kernel_config.hpp).
//
// The generated source is the kernel's Cfg, the region's epilogue functor and the instantiation
// of decode_tma_kernel. Compile-time: dtype, the M tile (8 or 16 rows), the config and the
// epilogue. Run-time: every size and stride (in the tensor maps and the shape) and the cut, so
// one binary serves every decode shape of a class.
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/codegen_gemm.hpp"
#include "engines/jit/epilogue_functor.hpp"
#include "engines/jit/sm90_operands.hpp"
#include "gemm/gemm_abi.h"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// Mirrors kernels/gemm/decode_tma.cuh; the generated source static_asserts that they agree.
constexpr int kThreadsHost = 256, kStepBytesHost = 16384, kDecodeTmaWarpsHost = kThreadsHost / 32;
constexpr int64_t kMaxM = 16;

// What a config and a region make of the tile (DecodeTmaLayout's host side).
struct TmaTile {
  DecodeTmaConfig c;
  bool whole_tiles = false;  // the whole-tile cut (MatmulTile::decode_tma_rows)
  bool bf16 = true;
  int m_tile = 8;            // x rows: 8 or 16
  bool chunked = false;      // a step's boxes are one chunked TMA box
  bool kn = false;           // W is a row-major [K, N]: boxes of 64 k x 64 n, read with ldmatrix.trans
  // The ring's depth for the step size: 6 stages of 16 KiB steps, 3 of 32 KiB (4, 8 and 12 of
  // 16 KiB were slower, as were 4 and 5 of 32 KiB; docs/benchmarks.md).
  int stages() const { return c.warp_boxes == 1 ? 6 : 3; }
  int kboxes() const { return 128 / c.bn; }
  int step_boxes() const { return kboxes() * c.warp_boxes; }
  int step_k() const { return 64 * step_boxes(); }
  int threads() const { return kThreadsHost + (c.producer_warp ? 32 : 0); }
  int smem_bytes() const {
    const int stage = (kStepBytesHost + kboxes() * m_tile * 128) * c.warp_boxes;
    const int red = kboxes() > 1 ? kboxes() * 16 * c.bn * 4 : 0;
    return 1024 + stages() * stage + 16 * c.bn * 4 + red + 2 * stages() * 8;
  }
};

// Why the kernel has no form for `c` ("" when it has); kn: an n-contiguous [K, N] weight.
std::string config_unsupported(const DecodeTmaConfig& c, bool whole_tiles, bool kn) {
  if (c.bn != 32 && c.bn != 64 && c.bn != 128) return "bn = " + std::to_string(c.bn) + " (32, 64 or 128)";
  if (kn && c.bn == 32) return "bn = 32 with an n-contiguous [K, N] weight (64 or 128: its boxes are 64 n wide)";
  if (whole_tiles && c.bn != 128) return "bn = " + std::to_string(c.bn) + " with whole tiles (128: the box's height)";
  if (c.warp_boxes != 1 && c.warp_boxes != 2) return "warp_boxes = " + std::to_string(c.warp_boxes) + " (1 or 2)";
  if (c.acc_chains != 1 && c.acc_chains != 2 && c.acc_chains != 4) {
    return "chains = " + std::to_string(c.acc_chains) + " (1, 2 or 4)";
  }
  return "";
}

// The chunked view of x (is_a) or W: {64 k, rows, K / 64 chunks}, chunks 128 bytes apart, box
// {64, box_rows, a step's boxes}; a step's chunks past K / 64 read as zeros.
TensorMapSlot chunked_map(const fuse::Region& r, const Sm90Operands& o, bool is_a, uint32_t box_rows, const TmaTile& t) {
  TensorMapSlot m = sm90_tensor_map(r, o, is_a, box_rows);
  m.dims[0] = 64;
  m.dims[1] = static_cast<uint64_t>(is_a ? o.m : o.n);
  m.dims[2] = static_cast<uint64_t>(o.k / 64);
  m.strides[1] = 128;  // m.strides[0], the row stride, stays
  m.box[2] = static_cast<uint32_t>(t.step_boxes());
  return m;
}

// The cut of the steps over `ctas` CTAs (one per SM, none without a step): stream-K over `total`
// steps of bn-row tiles, or whole tiles of tile_rows rows (DecodeTmaWork).
struct Work {
  int64_t tiles = 0, steps_per_tile = 0, total = 0, ctas = 0;
  int64_t max_contributors = 1;  // the most CTAs that share one tile: the partials per tile
  int64_t tile_rows = 0, tiles_n = 0;  // W rows per tile, tiles per batch
  int64_t rows_per_sm = 0;  // whole tiles: the rows a tile would have to spread them evenly
  int64_t even_rows = 0;    // whole tiles: ceil(batch x N / SMs), every SM's even share of rows
  int64_t most_rows = 0;    // whole tiles: the most rows one CTA streams
};

// Every SM's even share of the weight rows of all batches: R = ceil(batch x N / SMs).
int64_t even_rows(const Sm90Operands& o, int64_t sms) { return std::max<int64_t>((o.batch.numel * o.n + sms - 1) / sms, 1); }

// Whole tiles: the rows of all batches spread over the SMs, R rows each (even_rows), cut into
// j = ceil(R / bn) tiles of ceil(R / j) rows, so a CTA runs at most j whole tiles of about R / j
// rows (14336 x 4096 on 132 SMs: 132 tiles of 109 rows, one per SM).
int64_t whole_tile_rows(const Sm90Operands& o, const TmaTile& t, int64_t sms) {
  const int64_t per_sm = even_rows(o, sms);
  const int64_t j = (per_sm + t.c.bn - 1) / t.c.bn;
  return (per_sm + j - 1) / j;
}

// A [K, N] weight's whole tiles are whole 64-n boxes (a box past a tile's rows would bring the
// next tile's columns for nothing): 64 or 128 columns, whichever leaves the busiest CTA fewer
// rows (128 on a tie).
int64_t kn_whole_tile_rows(const Sm90Operands& o, int64_t sms) {
  auto most = [&](int64_t rows) { return (o.batch.numel * ((o.n + rows - 1) / rows) + sms - 1) / sms * rows; };
  return most(64) < most(128) ? 64 : 128;
}

Work plan_work(const Sm90Operands& o, const TmaTile& t, const cuda::DeviceProperties& dev) {
  Work w;
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 132;
  w.rows_per_sm = t.whole_tiles ? whole_tile_rows(o, t, sms) : 0;
  w.tile_rows = !t.whole_tiles ? t.c.bn : t.kn ? kn_whole_tile_rows(o, sms) : w.rows_per_sm;
  w.tiles_n = (o.n + w.tile_rows - 1) / w.tile_rows;
  w.tiles = o.batch.numel * w.tiles_n;
  w.steps_per_tile = (o.k + t.step_k() - 1) / t.step_k();
  w.total = w.tiles * w.steps_per_tile;
  if (t.whole_tiles) {
    w.ctas = std::clamp<int64_t>(sms, 1, std::max<int64_t>(w.tiles, 1));
    w.even_rows = even_rows(o, sms);
    w.most_rows = (w.tiles + w.ctas - 1) / w.ctas * w.tile_rows;
    return w;  // max_contributors 1: every tile is inside one CTA
  }
  w.ctas = std::clamp<int64_t>(sms, 1, std::max<int64_t>(w.total, 1));
  // Every CTA runs at least q = total / ctas steps, so a tile's steps_per_tile steps meet at most
  // ceil(steps_per_tile / q) + 1 CTAs (a bound, not a walk over every tile; it sizes the partials).
  const int64_t q = std::max<int64_t>(w.total / w.ctas, 1);
  w.max_contributors = std::min(w.ctas, (w.steps_per_tile + q - 1) / q + 1);
  return w;
}

// What the TMA tile would build for a region, worked out once for both decode_tma_unsupported
// and build_matmul_decode_tma: `why` says why it declines ("" when it takes the region); the rest
// is set as far as the checks got (all of it when why is empty).
struct TmaPlan {
  std::string why;
  Sm90Operands o;
  TmaTile t;
  Work work;
  std::optional<AnchorEpilogue> epi;
};

TmaPlan plan_tma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, bool whole_tiles,
                 const DecodeTmaConfig& c) {
  TmaPlan p;
  p.why = sm90_gemm_unsupported(g, r, dev);
  if (!p.why.empty()) return p;
  p.o = sm90_operands(g, r);
  const Sm90Operands& o = p.o;
  p.why = config_unsupported(c, whole_tiles, o.b_mn_major);
  if (!p.why.empty()) return p;
  if (o.m > kMaxM) {
    p.why = "M = " + std::to_string(o.m) + " is more than 16 rows";
    return p;
  }
  TmaTile& t = p.t;
  t.c = c;
  t.whole_tiles = whole_tiles;
  t.bf16 = o.dtype == DType::bf16;
  t.m_tile = o.m <= 8 ? 8 : 16;
  t.kn = o.b_mn_major;
  // several k boxes a step, K a multiple of 64 and one batch: one chunked box a step (the chunked
  // view is of k-contiguous rows)
  t.chunked = !whole_tiles && !t.kn && t.step_boxes() > 1 && o.k % 64 == 0 && o.batch.numel == 1;
  p.work = plan_work(o, t, dev);
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
  // whole tiles may leave some SMs more rows than others (a [K, N] weight's tiles are whole
  // 64-column boxes): past 10% over the even share the slowest SM sets the time, and the
  // stream-K cut (balanced to one step) wins
  if (whole_tiles && p.work.most_rows * 10 > p.work.even_rows * 11) {
    p.why = "whole tiles of " + std::to_string(p.work.tile_rows) + " weight rows give an SM up to " +
            std::to_string(p.work.most_rows) + " rows against an even share of " + std::to_string(p.work.even_rows) +
            ": the stream-K cut balances them";
    return p;
  }
  // + the static shared memory beside the ring: the epilogue's column-sum buffers (8 warps x bn
  // floats per column-sum output) and scratch, the combine's flag
  p.epi.emplace(g, r, o.mm->outputs[0]);
  const int smem = t.smem_bytes() + std::max(1, p.epi->column_exits()) * kDecodeTmaWarpsHost * c.bn * 4 + 1024;
  if (dev.max_shared_memory_per_block_optin < static_cast<size_t>(smem)) {
    p.why = "needs " + std::to_string(smem) + " bytes of shared memory per block";
  }
  return p;
}

// The generated source: the Cfg of kernels/gemm/decode_tma.cuh, the args, the epilogue functor
// and the instantiation.
std::string tma_source(const Graph& g, const fuse::Region& r, const TmaPlan& p, const std::string& args) {
  const TmaTile& t = p.t;
  auto b = [](bool v) { return v ? "true" : "false"; };
  GemmTileScope scope;
  scope.threads = "kDecodeTmaThreads";
  if (t.c.producer_warp) scope.sync = "named_barrier_sync(1, kDecodeTmaThreads);";  // not the producer
  scope.bn = "Cfg::kBN";
  scope.ldc = "Cfg::kBN";
  std::ostringstream src;
  src << "// matmul region " << r.id << " of graph '" << g.name() << "' (decode tma, M <= 16, "
      << (t.kn ? "[K, N]" : "[N, K]") << " weight)\n"
      << kernel_includes({"gemm/gemm_abi.h", "gemm/decode_tma.cuh"}) << "struct Cfg {\n"
      << "  static constexpr bool kBf16 = " << b(t.bf16) << ", kChunked = " << b(t.chunked)
      << ", kProducerWarp = " << b(t.c.producer_warp) << ", kWholeTiles = " << b(t.whole_tiles)
      << ", kKnWeight = " << b(t.kn) << ";\n"
      << "  static constexpr int kBN = " << t.c.bn << ", kMTile = " << t.m_tile << ", kStages = " << t.stages()
      << ", kWarpBoxes = " << t.c.warp_boxes << ", kAccChains = " << t.c.acc_chains << ";\n"
      << "};\n"
      << "static_assert(kDecodeTmaThreads == " << kThreadsHost << " && DecodeTmaLayout<Cfg>::kThreads == " << t.threads()
      << " && kDecodeTmaStepBytes == " << kStepBytesHost << " && DecodeTmaLayout<Cfg>::kBytes == " << t.smem_bytes()
      << ", \"the host's TMA decode constants are stale\");\n\n"
      << args << "\n"
      << gemm_tile_epilogue(*p.epi, scope) << "\n"
      << "// inside a megakernel: W's first boxes issued before the task waits for x (KernelSpec::prologue_slot)\n"
      << "__device__ __forceinline__ void sinter_task_prologue(const Args& a, bool drain) {\n"
      << "  decode_tma_prologue<Cfg>(a, blockIdx.x, drain);\n"
      << "}\n\n"
      << "extern \"C\" __global__ void __launch_bounds__(DecodeTmaLayout<Cfg>::kThreads, 1)\n"
      << "sinter_region(const __grid_constant__ Args a) {\n"
      << "  decode_tma_kernel<Cfg, Epilogue>(a);\n"
      << "}\n";
  return src.str();
}

std::string tma_description(const TmaPlan& p) {
  const TmaTile& t = p.t;
  const Work& work = p.work;
  return std::string("matmul decode tma mma.") + (t.bf16 ? "bf16" : "f16") + " m" + std::to_string(t.m_tile) + "x" +
         std::to_string(t.c.bn) + " k" + std::to_string(t.step_k()) + " stages" + std::to_string(t.stages()) +
         (t.chunked ? " chunked" : "") + (t.c.acc_chains > 1 ? " chains" + std::to_string(t.c.acc_chains) : "") +
         (t.c.producer_warp ? " producer-warp" : "") +
         (t.c.warp_boxes > 1 ? " warp-boxes" + std::to_string(t.c.warp_boxes) : "") + (t.kn ? " w:[K,N] " : " w:[N,K] ") +
         (t.whole_tiles ? "whole tiles " + std::to_string((work.tiles + work.ctas - 1) / work.ctas) + "x" +
                              std::to_string(work.tile_rows) + " rows"
                        : "streamk" + std::to_string(work.ctas) + "x" +
                              std::to_string((work.total + work.ctas - 1) / work.ctas) + " steps") +
         (p.o.batch_folded ? " batch-folded" : "") + (p.epi->index64() ? " idx64" : "") + p.epi->describe();
}

// The whole-tile cut with one tile a CTA (as many CTAs as tiles) and one batch: task c writes
// the result's columns [c x tile_rows, +tile_rows) and reads those of its epilogue operands (it
// reads all of x, and W is a graph input). Otherwise none: consumers wait for the whole kernel.
std::vector<TaskBox> tma_task_boxes(const Graph& g, const fuse::Region& r, const TmaPlan& p) {
  const Work& w = p.work;
  if (!p.t.whole_tiles || w.ctas != w.tiles || p.o.batch.numel != 1) return {};
  return result_tile_boxes(g, r, p.o.m, p.o.n, {{w.ctas, 0, w.tile_rows}}, w.tile_rows,
                           {p.o.mm->inputs[0], p.o.mm->inputs[1]});
}

}  // namespace

int64_t decode_weight_bytes(const Graph& g, const fuse::Region& r) {
  const Sm90Operands o = sm90_operands(g, r);
  return o.batch.numel * o.n * o.k * static_cast<int64_t>(dtype_size(o.dtype_b));
}

std::string decode_tma_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                   bool whole_tiles, const DecodeTmaConfig& config) {
  return plan_tma(g, r, dev, whole_tiles, config).why;
}

std::vector<DecodeTmaConfig> decode_tma_configs(const Graph& g, const fuse::Region& r,
                                                const cuda::DeviceProperties& dev, bool whole_tiles) {
  // whole tiles: the defaults (measured fastest); stream-K: 16 KiB steps with one chain and
  // thread 0 issuing, then the defaults (6-22% faster on the Llama decode stack's 2-32 MB weights
  // forced onto this cut), then for M > 1 tiles of 32 rows (one chunked box of 4 k boxes a step:
  // 4% / 8% faster than 128 rows at M = 8 / 16, slower at M = 1; docs/benchmarks.md)
  std::vector<DecodeTmaConfig> all;
  if (whole_tiles) {
    all = {DecodeTmaConfig{}};
  } else {
    all = {DecodeTmaConfig{.bn = 128, .warp_boxes = 1, .acc_chains = 1, .producer_warp = false}, DecodeTmaConfig{}};
    if (sm90_gemm_unsupported(g, r, dev).empty() && sm90_operands(g, r).m > 1) {
      all.push_back(DecodeTmaConfig{.bn = 32, .warp_boxes = 1, .acc_chains = 1, .producer_warp = false});
    }
  }
  std::vector<DecodeTmaConfig> out;
  for (const DecodeTmaConfig& c : all) {
    if (decode_tma_unsupported(g, r, dev, whole_tiles, c).empty()) out.push_back(c);
  }
  return out;
}

RegionKernels build_matmul_decode_tma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                      bool whole_tiles, const DecodeTmaConfig& config) {
  const TmaPlan plan = plan_tma(g, r, dev, whole_tiles, config);
  if (!plan.why.empty()) {
    throw Error(ErrorCode::internal, "build_matmul_decode_tma: region " + std::to_string(r.id) + ": " + plan.why);
  }
  const Sm90Operands& o = plan.o;
  const TmaTile& t = plan.t;
  const Work& work = plan.work;
  const AnchorEpilogue& epi = *plan.epi;

  // a tile's partials: max_contributors slots of m_tile x bn floats
  const size_t part_bytes =
      work.max_contributors > 1 ? static_cast<size_t>(work.tiles * work.max_contributors) * t.m_tile * t.c.bn * 4 : 0;
  const SplitKWorkspace ws = splitk_workspace(epi.workspace_bytes(), part_bytes, work.tiles);

  RegionKernels rk;
  KernelSpec spec;
  ArgsWriter w(spec);
  const auto m_rows = static_cast<uint32_t>(t.m_tile);
  w.tensor_map("tma_x", t.chunked ? chunked_map(r, o, true, m_rows, t) : sm90_tensor_map(r, o, true, m_rows));
  w.tensor_map("tma_w", t.chunked ? chunked_map(r, o, false, static_cast<uint32_t>(t.c.bn), t)
                                  : sm90_tensor_map(r, o, false, static_cast<uint32_t>(work.tile_rows)));
  w.field("SinterGemmShape", "shape", sm90_gemm_shape(o));
  w.field("i64", "total", work.total);
  w.field("i64", "steps_per_tile", work.steps_per_tile);
  w.field("i64", "ctas", work.ctas);
  w.field("i64", "tiles_n", work.tiles_n);
  w.field("i64", "whole_tiles", t.whole_tiles ? work.tiles : 0);
  w.field("int", "tile_rows", static_cast<int>(work.tile_rows));
  w.field("i64", "max_contributors", work.max_contributors);
  // the combine reads and writes the partials as float4
  w.workspace_pointer("float*", "part", ws.part_offset, 16);
  w.workspace_pointer("unsigned int*", "counts", ws.count_offset, 4);
  epi.declare(w);

  spec.source = tma_source(g, r, plan, w.finish());
  spec.description = tma_description(plan);
  spec.launch.grid = dim3(static_cast<unsigned>(work.ctas));
  spec.launch.block = dim3(static_cast<unsigned>(t.threads()));
  spec.launch.dynamic_shared_memory = static_cast<size_t>(t.smem_bytes());
  spec.prologue_slot = region_input_index(r, o.mm->inputs[1]);  // W
  spec.task_boxes = tma_task_boxes(g, r, plan);
  rk.workspace_bytes = ws.bytes;
  rk.kernels.push_back(std::move(spec));
  return rk;
}

std::vector<MatmulConfig> decode_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                         bool for_megakernels) {
  // The TMA tile goes first for weights of 64 MiB and more, its whole-tile cut before its
  // stream-K one (no split tile to combine): faster there than the register tiles (117 MB at M =
  // 1 / 8 / 16: 3.67-3.70 TB/s, the mma tile 2.5-2.9). On 2-32 MB weights (the Llama decode
  // stack's) it was slower than both register tiles, so below 64 MiB they go first and the TMA
  // tile after them. Of the register tiles the mma one goes first (117 MB, M = 1: 0.0430 ms
  // against the ffma tile's 0.0453), the ffma one (M <= 4) after it. docs/benchmarks.md. In a
  // plan for megakernels the TMA tile goes first at every size: as a task, its prologue streams
  // the first stages of W into shared memory while the task waits for x. Its [K, N] form has not
  // been timed on its own yet, so outside megakernel plans it stays after the register tiles.
  const bool tma_ok = decode_tma_unsupported(g, r, dev).empty();
  const bool tma_first = tma_ok && (for_megakernels || (!sm90_operands(g, r).b_mn_major &&
                                                        decode_weight_bytes(g, r) >= (int64_t{64} << 20)));
  std::vector<MatmulConfig> out;
  auto add_tma = [&](MatmulTile cut) {
    for (const DecodeTmaConfig& c : decode_tma_configs(g, r, dev, cut == MatmulTile::decode_tma_rows)) {
      MatmulConfig m;
      m.tile = cut;
      m.tma = c;
      out.push_back(m);
    }
  };
  if (tma_first) {
    add_tma(MatmulTile::decode_tma_rows);
    add_tma(MatmulTile::decode_tma);
  }
  if (decode_gemv_unsupported(g, r, dev).empty()) out.push_back({MatmulTile::decode_gemv, {}, {}});
  if (decode_ffma_unsupported(g, r, dev).empty()) out.push_back({MatmulTile::decode_ffma, {}, {}});
  if (!tma_first) {
    add_tma(MatmulTile::decode_tma);
    add_tma(MatmulTile::decode_tma_rows);
  }
  return out;
}

}  // namespace sinter::jit
