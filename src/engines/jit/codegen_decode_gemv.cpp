// Matmul regions with M <= 16 (decode) on the GEMV-style tiles: W streamed once with 16-byte
// loads, x staged in shared memory, split-K through the workspace with a deterministic last-CTA
// sum (kernels/gemm/decode_splitk.cuh), then the region's epilogue functor over the C tile
// (epilogue_functor.hpp). Two tiles, two candidates:
//  - mma (kernels/gemm/decode_gemv.cuh): M <= 16, either weight layout; mma.sync with x as the
//    padded A operand; C tile 16 x 128.
//  - ffma (kernels/gemm/decode_gemv_ffma.cuh): M <= 4; every warp load is a whole 512-byte run
//    of one W row, 3 or 4 steps deep in a register ring; C tile (1, 2 or 4) x 32 for an [N, K]
//    weight (a warp takes 4 rows of W), x 256 for a [K, N] one (lanes along n, warps split k).
//
// A region with an rmsnorm folded into A (fuse/partition.cpp) runs on the mma tile, which stages
// the normalized x from the norm's input (DecodeANorm); the ffma tile declines it.
//
// The generated source is the tile's Cfg, the region's epilogue functor and the instantiation of
// decode_gemv_kernel. Compile-time: dtype, W's layout (k-major [N, K] or n-major [K, N] weight),
// whether W and x allow 16-byte vectors, the M tile and the epilogue. Run-time: every size and
// stride, and the split of K (chunk, splits), so one binary serves every decode shape of a class.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/codegen_gemm.hpp"
#include "engines/jit/epilogue_functor.hpp"
#include "gemm/gemm_abi.h"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// Mirror kernels/gemm/decode_gemv.cuh; the generated source static_asserts that they agree.
constexpr int kDecodeThreadsHost = 256, kDecodeBNHost = 128, kDecodeKIterHost = 64, kDecodeXElemsHost = 32768;
constexpr int64_t kDecodeMaxM = 16;
// Mirrors kernels/gemm/decode_gemv_ffma.cuh.
constexpr int kFfmaBNHost = 32, kFfmaKIterHost = 256, kFfmaXElemsHost = 16384;
constexpr int kFfmaKnBNHost = 256, kFfmaKnKIterHost = 32;  // [K, N] weights
constexpr int64_t kFfmaMaxM = 4;

int x_pad(bool k_major) { return k_major ? 32 : 16; }
int smem_bytes(bool k_major, int m_tile) {
  return m_tile * (kDecodeXElemsHost / m_tile + x_pad(k_major)) * 2 + 16 * kDecodeBNHost * 4;
}
int ffma_bn(bool k_major) { return k_major ? kFfmaBNHost : kFfmaKnBNHost; }
int ffma_kiter(bool k_major) { return k_major ? kFfmaKIterHost : kFfmaKnKIterHost; }
int ffma_smem_bytes(bool k_major, int m_tile) { return kFfmaXElemsHost * 2 + m_tile * ffma_bn(k_major) * 4; }
int ffma_m_tile(int64_t m) { return m <= 1 ? 1 : m <= 2 ? 2 : 4; }
// W steps in flight per lane (a register ring of 16 registers per step): 4 for M tiles of 1 and
// 2 (110 and 126 registers under the 128 of two CTAs per SM); 3 at 4 rows, whose accumulators and
// x take the fourth step's room (4 steps spilled there; ptxas -v, sm_90a).
int ffma_depth(int m_tile) { return m_tile >= 4 ? 3 : 4; }

struct Decode {
  const Node* mm = nullptr;
  const Node* norm = nullptr;  // the rmsnorm folded into A (the region's prologue), or null
  TensorId x = -1;             // what the tile reads as x: A, or the folded norm's input
  DType dtype = DType::f32, dtype_b = DType::f32;
  int64_t m = 0, n = 0, k = 0;
  const TensorInfo* ta = nullptr;
  const TensorInfo* tb = nullptr;
  CollapsedShape batch;  // strides[0]: a, strides[1]: b
  bool k_major = true;   // W is [N, K] in memory (b's k stride 1)
  int w_vec = 1, x_vec = 1, m_tile = 16;
};

Decode describe_operands(const Graph& g, const fuse::Region& r) {
  Decode d;
  d.mm = &g.node(r.anchor);
  if (r.folded_norm() >= 0) d.norm = &g.node(r.folded_norm());
  d.x = d.norm ? d.norm->inputs[0] : d.mm->inputs[0];
  d.ta = &g.tensor(d.x);  // the norm's input has A's dims (a folded norm is over A's rows)
  d.tb = &g.tensor(d.mm->inputs[1]);
  const TensorInfo& ty = g.tensor(d.mm->outputs[0]);
  const TensorInfo &ta = *d.ta, &tb = *d.tb;
  const size_t ra = ta.dims.size(), rb = tb.dims.size();
  d.dtype = ta.dtype;
  d.dtype_b = tb.dtype;
  d.m = ta.dims[ra - 2];
  d.k = ta.dims[ra - 1];
  d.n = tb.dims[rb - 1];
  const Dims batch(ty.dims.begin(), ty.dims.end() - 2);
  const Dims a_batch = broadcast_strides(Dims(ta.dims.begin(), ta.dims.end() - 2),
                                         Dims(ta.strides.begin(), ta.strides.end() - 2), batch);
  const Dims b_batch = broadcast_strides(Dims(tb.dims.begin(), tb.dims.end() - 2),
                                         Dims(tb.strides.begin(), tb.strides.end() - 2), batch);
  d.batch = collapse(batch, {a_batch, b_batch});
  // W's mapping follows its contiguous dim (coalescing); 16-byte vectors where every other
  // stride keeps them aligned, else element loads (any strides, slower but correct)
  const OperandAccess wa = classify_operand(d.n, tb.strides[rb - 1], d.k, tb.strides[rb - 2], d.batch.strides[1], 8);
  d.k_major = wa.along_k;
  d.w_vec = wa.vec == 8 ? 8 : 1;
  const OperandAccess xa = classify_operand(d.m, ta.strides[ra - 2], d.k, ta.strides[ra - 1], d.batch.strides[0], 8);
  d.x_vec = xa.along_k && xa.vec == 8 ? 8 : 1;
  d.m_tile = d.m <= 8 ? 8 : 16;
  return d;
}

// The split of K over CTAs. The tile takes ~90-110 registers (two CTAs per SM), and every CTA
// streams the same bytes, so a second, partial wave would run at a fraction of the bandwidth:
// split as far as one wave of two CTAs per SM allows (a few SMs with one CTA cost nothing while
// DRAM, not the SM, is the limit), in chunks of whole CTA iterations that fit the x stage and
// hold at least four iterations (the partials cost a round trip through L2).
struct Split {
  int64_t tiles = 0, splits = 1, chunk = kDecodeKIterHost;
};

Split plan_split(const Decode& d, const cuda::DeviceProperties& dev) {
  Split s;
  s.tiles = d.batch.numel * ((d.n + kDecodeBNHost - 1) / kDecodeBNHost);
  const int64_t chunk_max = kDecodeXElemsHost / d.m_tile;
  const int64_t k = std::max<int64_t>(d.k, 1);
  const int64_t min_splits = (k + chunk_max - 1) / chunk_max;
  const int64_t max_splits = std::max(min_splits, (k + 4 * kDecodeKIterHost - 1) / (4 * kDecodeKIterHost));
  const int64_t target = 2 * int64_t{dev.sm_count > 0 ? dev.sm_count : 132};
  const int64_t want = target / std::max<int64_t>(s.tiles, 1);
  const int64_t splits = std::clamp(want, min_splits, max_splits);
  const int64_t per = (k + splits - 1) / splits;
  s.chunk = (per + kDecodeKIterHost - 1) / kDecodeKIterHost * kDecodeKIterHost;
  s.splits = (k + s.chunk - 1) / s.chunk;
  return s;
}

// The ffma tile's split of K. Its CTAs are short and many, so the choice is about the last
// wave: with `slots` CTAs resident (two per SM: __launch_bounds__(256, 2)), the time goes as
// waves x steps per CTA; take the chunk (in whole steps -- 256 k for [N, K], 32 for [K, N] --
// one or more, within the x stage) with the fewest, the longer chunk on a tie (fewer partials).
// 4096 x 14336 [N, K]: 448 column tiles x 4 chunks of 1024 = 7 waves of 4 steps (all of K per
// CTA: 2 waves of 16 steps, 14% more); [K, N]: 56 tiles x 32 chunks of 128. Small weights split
// down to one step per CTA, so that 2-8 MB still reach most SMs.
Split plan_split_ffma(const Decode& d, const cuda::DeviceProperties& dev) {
  Split s;
  const int64_t bn = ffma_bn(d.k_major), kiter = ffma_kiter(d.k_major);
  s.tiles = d.batch.numel * ((d.n + bn - 1) / bn);
  const int64_t steps = (std::max<int64_t>(d.k, 1) + kiter - 1) / kiter;
  const int64_t max_steps = kFfmaXElemsHost / ffma_m_tile(d.m) / kiter;
  const int64_t slots = 2 * int64_t{dev.sm_count > 0 ? dev.sm_count : 132};
  int64_t best_cost = -1, best_steps = std::min(steps, max_steps);
  for (int64_t c = std::min(steps, max_steps); c >= 1; --c) {
    const int64_t splits = (steps + c - 1) / c;
    const int64_t waves = (s.tiles * splits + slots - 1) / slots;
    const int64_t cost = waves * c;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_steps = c;
    }
  }
  s.chunk = best_steps * kiter;
  s.splits = (steps + best_steps - 1) / best_steps;
  return s;
}

// The parts of the two tiles that differ, for one region.
struct TileKind {
  bool ffma = false;
  int m_tile = 16, bn = 128, smem = 0;
  Split split;
};

TileKind tile_kind(const Decode& d, const cuda::DeviceProperties& dev, bool ffma) {
  TileKind t;
  t.ffma = ffma;
  if (ffma) {
    t.m_tile = ffma_m_tile(d.m);
    t.bn = ffma_bn(d.k_major);
    t.smem = ffma_smem_bytes(d.k_major, t.m_tile);
    t.split = plan_split_ffma(d, dev);
  } else {
    t.m_tile = d.m_tile;
    t.bn = kDecodeBNHost;
    t.smem = smem_bytes(d.k_major, d.m_tile);
    t.split = plan_split(d, dev);
  }
  return t;
}

std::string decode_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, bool ffma) {
  if (dev.cc_major < 8) return "needs mma.sync with bf16 (sm_80 or newer)";
  // a folded norm is the rmsnorm of A with A's dtype throughout (verify_partition checks it)
  if (ffma && r.folded_norm() >= 0) return "a folded norm runs on the mma tile";
  const Decode d = describe_operands(g, r);
  if (d.m > kDecodeMaxM) return "M = " + std::to_string(d.m) + " is more than 16 rows";
  if (ffma && d.m > kFfmaMaxM) return "M = " + std::to_string(d.m) + " is more than 4 rows (the ffma tile)";
  if (d.m < 1 || d.n < 1 || d.k < 1 || d.batch.numel < 1) return "an empty dim (M, N, K or batch is 0)";
  if (d.dtype != d.dtype_b || (d.dtype != DType::bf16 && d.dtype != DType::f16)) {
    return std::string("operands are ") + std::string(to_string(d.dtype)) + " x " +
           std::string(to_string(d.dtype_b)) + ", not both bf16 or both f16";
  }
  for (int64_t v : {d.n, d.k, d.batch.numel}) {
    if (v >= (int64_t{1} << 31)) return "a size of 2^31 or more";
  }
  const TileKind t = tile_kind(d, dev, ffma);
  if (t.split.tiles * t.split.splits >= (int64_t{1} << 31)) return "2^31 or more CTAs";
  if (dev.max_shared_memory_per_block_optin < static_cast<size_t>(t.smem)) {
    return "needs " + std::to_string(t.smem) + " bytes of shared memory per block";
  }
  return "";
}

// The generated source: the tile's Cfg, the args, the epilogue functor and the instantiation of
// decode_gemv_kernel.
std::string decode_source(const Graph& g, const fuse::Region& r, const Decode& d, const TileKind& tk,
                          const AnchorEpilogue& epi, const std::string& args) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  GemmTileScope scope;
  scope.threads = "Tile::kThreads";
  scope.bn = "Tile::kBN";
  scope.ldc = "Tile::kLdC";
  std::ostringstream src;
  src << "// matmul region " << r.id << " of graph '" << g.name() << "' (decode gemv " << (tk.ffma ? "ffma" : "mma")
      << ", M <= " << (tk.ffma ? kFfmaMaxM : kDecodeMaxM) << ")\n"
      << kernel_includes({"gemm/gemm_abi.h", tk.ffma ? "gemm/decode_gemv_ffma.cuh" : "gemm/decode_gemv.cuh"})
      << "struct Cfg {\n"
      << "  static constexpr bool kBf16 = " << b(d.dtype == DType::bf16) << ", kKMajor = " << b(d.k_major) << ";\n"
      << "  static constexpr int kMTile = " << tk.m_tile << (tk.ffma ? ", kDepth = " + std::to_string(ffma_depth(tk.m_tile)) : "")
      << ", kWVec = " << d.w_vec << ", kXVec = " << d.x_vec << ";\n"
      << (tk.ffma ? "" : std::string("  static constexpr bool kNorm = ") + b(d.norm != nullptr) +
                             ", kNormBias = " + b(d.norm && std::get<NormAttrs>(d.norm->attrs).has_bias) + ";\n")
      << "};\n"
      << "using Tile = " << (tk.ffma ? "DecodeFfma<Cfg>" : "DecodeGemv<Cfg>") << ";\n";
  if (tk.ffma) {
    src << "static_assert(kFfmaBN == " << kFfmaBNHost << " && kFfmaKIter == " << kFfmaKIterHost
        << " && kFfmaKnBN == " << kFfmaKnBNHost << " && kFfmaKnKIter == " << kFfmaKnKIterHost
        << " && kFfmaXElems == " << kFfmaXElemsHost << " && Tile::kBytes == " << tk.smem
        << ", \"the host's decode ffma constants are stale\");\n\n";
  } else {
    src << "static_assert(kDecodeThreads == " << kDecodeThreadsHost << " && kDecodeBN == " << kDecodeBNHost
        << " && kDecodeKIter == " << kDecodeKIterHost << " && kDecodeXElems == " << kDecodeXElemsHost
        << " && Tile::kBytes == " << tk.smem << ", \"the host's decode GEMM constants are stale\");\n\n";
  }
  // the ffma tile holds a ring of W in registers: two CTAs per SM keep enough in flight
  src << args << "\n"
      << gemm_tile_epilogue(epi, scope) << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(Tile::kThreads" << (tk.ffma ? ", 2" : "") << ")\n"
      << "sinter_region(const __grid_constant__ Args a) {\n"
      << "  decode_gemv_kernel<Tile, Epilogue>(a);\n"
      << "}\n";
  return src.str();
}

std::string decode_description(const Decode& d, const TileKind& tk, const AnchorEpilogue& epi) {
  const std::string dt = d.dtype == DType::bf16 ? "bf16" : "f16", m_tile = std::to_string(tk.m_tile);
  return std::string("matmul decode gemv ") +
         (tk.ffma ? "ffma." + dt + " m" + m_tile + "x" + std::to_string(tk.bn) + " ring" + std::to_string(ffma_depth(tk.m_tile))
                  : "mma." + dt + " m" + m_tile + "x128") +
         " w:" + (d.k_major ? "[N,K]" : "[K,N]") + (d.w_vec == 8 ? "-vec8" : "-scalar") +
         " x:" + (d.x_vec == 8 ? "vec8" : "scalar") + (d.norm ? " rmsnorm(x)" : "") + " splitk" + std::to_string(tk.split.splits) + "x" +
         std::to_string(tk.split.chunk) + (epi.index64() ? " idx64" : "") + epi.describe();
}

// What CTA `item` = (column tile, k chunk), chunk-minor, reads and writes: W's k chunk of its
// column tile, x's k chunk, and the column tile of every output and epilogue operand of the GEMM's
// shape (any chunk of a tile may be the one that runs the epilogue). One batch only; W and x with
// a unit stride.
std::vector<TaskBox> decode_task_boxes(const Graph& g, const fuse::Region& r, const Decode& d, const TileKind& tk) {
  std::vector<TaskBox> boxes;
  if (d.batch.numel != 1) return boxes;
  const TensorInfo &ta = *d.ta, &tb = *d.tb;
  const size_t ra = ta.dims.size(), rb = tb.dims.size();
  const int64_t tiles = (d.n + tk.bn - 1) / tk.bn, splits = tk.split.splits, chunk = tk.split.chunk;
  const int64_t w_stride_k = tb.strides[rb - 2], w_stride_n = tb.strides[rb - 1];
  TaskBox w;
  w.slot = region_input_index(r, d.mm->inputs[1]);
  w.elem_bytes = 2;
  if (w_stride_k == 1) {  // [N, K]: a tile is bn rows of a chunk
    w.rows = d.n, w.cols = d.k, w.pitch = w_stride_n;
    w.digits = {{splits, 0, chunk}, {tiles, tk.bn, 0}};
    w.box_rows = tk.bn, w.box_cols = chunk;
  } else if (w_stride_n == 1) {  // [K, N]: a tile is a chunk of rows, bn wide
    w.rows = d.k, w.cols = d.n, w.pitch = w_stride_k;
    w.digits = {{splits, chunk, 0}, {tiles, 0, tk.bn}};
    w.box_rows = chunk, w.box_cols = tk.bn;
  }
  if (!w.digits.empty() && w.slot >= 0) boxes.push_back(w);
  // x by k chunk; a folded norm's statistics read whole rows of x, so then it gets no box (whole)
  std::vector<TensorId> operands{d.x, d.mm->inputs[1]};
  if (d.norm) operands.insert(operands.end(), d.norm->inputs.begin() + 1, d.norm->inputs.end());
  if (!d.norm && ta.strides[ra - 1] == 1 && region_input_index(r, d.x) >= 0) {
    TaskBox x;
    x.slot = region_input_index(r, d.x);
    x.elem_bytes = 2;
    x.rows = d.m, x.cols = d.k, x.pitch = ta.strides[ra - 2];
    x.digits = {{splits, 0, chunk}, {tiles, 0, 0}};
    x.box_rows = d.m, x.box_cols = chunk;
    boxes.push_back(x);
  }
  for (TaskBox& b : result_tile_boxes(g, r, d.m, d.n, {{splits, 0, 0}, {tiles, 0, tk.bn}}, tk.bn, operands)) {
    boxes.push_back(std::move(b));
  }
  return boxes;
}

RegionKernels build_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, bool ffma) {
  const std::string why_not = decode_unsupported(g, r, dev, ffma);
  if (!why_not.empty()) {
    throw Error(ErrorCode::internal, std::string(ffma ? "build_matmul_decode_ffma" : "build_matmul_decode") +
                                         ": region " + std::to_string(r.id) + ": " + why_not);
  }
  using Src = PointerSlot::Source;
  const Decode d = describe_operands(g, r);
  const TileKind tk = tile_kind(d, dev, ffma);
  const Split& split = tk.split;
  const TensorInfo &ta = *d.ta, &tb = *d.tb;
  const size_t ra = ta.dims.size(), rb = tb.dims.size();

  SinterGemmShape shape{};
  shape.m = d.m;
  shape.n = d.n;
  shape.k = d.k;
  shape.batches = d.batch.numel;
  shape.a_stride_m = ta.strides[ra - 2];
  shape.a_stride_k = ta.strides[ra - 1];
  shape.b_stride_k = tb.strides[rb - 2];
  shape.b_stride_n = tb.strides[rb - 1];
  shape.batch = make_iter_shape(d.batch);
  shape.a_batch = make_view(d.batch.strides[0]);
  shape.b_batch = make_view(d.batch.strides[1]);

  AnchorEpilogue epi(g, r, d.mm->outputs[0]);
  const SplitKWorkspace ws = splitk_workspace(
      epi.workspace_bytes(),
      split.splits > 1 ? static_cast<size_t>(split.tiles * split.splits) * tk.m_tile * tk.bn * 4 : 0, split.tiles);

  RegionKernels rk;
  KernelSpec spec;
  ArgsWriter w(spec);
  w.field("SinterGemmShape", "shape", shape);
  w.field("int", "splits", static_cast<int>(split.splits));
  w.field("int", "chunk", static_cast<int>(split.chunk));
  w.pointer("const u16*", "x", Src::input, region_input_index(r, d.x), d.x_vec * 2);
  w.pointer("const u16*", "w", Src::input, region_input_index(r, d.mm->inputs[1]), d.w_vec * 2);
  if (d.norm) {  // DecodeANorm's fields (kernels/gemm/decode_gemv.cuh)
    const auto& at = std::get<NormAttrs>(d.norm->attrs);
    const TensorInfo& nw = g.tensor(d.norm->inputs[1]);
    w.pointer("const u16*", "norm_w", Src::input, region_input_index(r, d.norm->inputs[1]), 2);
    w.field("i64", "norm_w_stride", nw.strides.back());
    w.field("float", "norm_eps", static_cast<float>(at.epsilon));
    if (at.has_bias) {
      w.pointer("const u16*", "norm_b", Src::input, region_input_index(r, d.norm->inputs[2]), 2);
      w.field("i64", "norm_b_stride", g.tensor(d.norm->inputs[2]).strides.back());
    }
  }
  w.workspace_pointer("float*", "part", ws.part_offset, 4);
  w.workspace_pointer("unsigned int*", "counts", ws.count_offset, 4);
  epi.declare(w);

  spec.task_boxes = decode_task_boxes(g, r, d, tk);
  spec.source = decode_source(g, r, d, tk, epi, w.finish());
  spec.description = decode_description(d, tk, epi);
  spec.launch.grid = dim3(static_cast<unsigned>(split.tiles * split.splits));
  spec.launch.block = dim3(kDecodeThreadsHost);
  spec.launch.dynamic_shared_memory = tk.smem;
  rk.workspace_bytes = ws.bytes;
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace

std::string decode_gemv_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  return decode_unsupported(g, r, dev, false);
}
std::string decode_ffma_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  return decode_unsupported(g, r, dev, true);
}
RegionKernels build_matmul_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  return build_decode(g, r, dev, false);
}
RegionKernels build_matmul_decode_ffma(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  return build_decode(g, r, dev, true);
}

}  // namespace sinter::jit
