// Matmul regions with M <= 16 (decode) on the GEMV-style tile of kernels/gemm/decode_gemv.cuh:
// W streamed once with 16-byte loads, x staged in shared memory, mma.sync with x as the padded
// A operand, split-K through the workspace with a deterministic last-CTA sum, then the region's
// epilogue (AnchorEpilogue::gemm_tile over the 16 x 128 C tile).
//
// Compile-time: dtype, W's layout (k-major [N, K] or n-major [K, N] weight), whether W and x
// allow 16-byte vectors, the M tile (8 or 16 rows) and the epilogue. Run-time: every size and
// stride, and the split of K (chunk, splits), so one binary serves every decode shape of a class.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/codegen_gemm.hpp"
#include "gemm/gemm_abi.h"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// Mirrors kernels/gemm/decode_gemv.cuh; the generated source static_asserts that they agree.
constexpr int kDecodeThreadsHost = 256, kDecodeBNHost = 128, kDecodeKIterHost = 64, kDecodeXElemsHost = 32768;
constexpr int64_t kDecodeMaxM = 16;

int x_pad(bool k_major) { return k_major ? 32 : 16; }
int smem_bytes(bool k_major, int m_tile) {
  return m_tile * (kDecodeXElemsHost / m_tile + x_pad(k_major)) * 2 + 16 * kDecodeBNHost * 4;
}

struct Decode {
  const Node* mm = nullptr;
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
  d.ta = &g.tensor(d.mm->inputs[0]);
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

}  // namespace

std::string decode_gemv_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  if (dev.cc_major < 8) return "needs mma.sync with bf16 (sm_80 or newer)";
  if (!r.prologue.empty()) return "the region has a prologue";
  const Decode d = describe_operands(g, r);
  if (d.m > kDecodeMaxM) return "M = " + std::to_string(d.m) + " is more than 16 rows";
  if (d.m < 1 || d.n < 1 || d.k < 1 || d.batch.numel < 1) return "an empty dim (M, N, K or batch is 0)";
  if (d.dtype != d.dtype_b || (d.dtype != DType::bf16 && d.dtype != DType::f16)) {
    return std::string("operands are ") + std::string(to_string(d.dtype)) + " x " +
           std::string(to_string(d.dtype_b)) + ", not both bf16 or both f16";
  }
  for (int64_t v : {d.n, d.k, d.batch.numel}) {
    if (v >= (int64_t{1} << 31)) return "a size of 2^31 or more";
  }
  const Split s = plan_split(d, dev);
  if (s.tiles * s.splits >= (int64_t{1} << 31)) return "2^31 or more CTAs";
  if (dev.max_shared_memory_per_block_optin < static_cast<size_t>(smem_bytes(d.k_major, d.m_tile))) {
    return "needs " + std::to_string(smem_bytes(d.k_major, d.m_tile)) + " bytes of shared memory per block";
  }
  return "";
}

RegionKernels build_matmul_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  const std::string why_not = decode_gemv_unsupported(g, r, dev);
  if (!why_not.empty()) {
    throw Error(ErrorCode::internal, "build_matmul_decode: region " + std::to_string(r.id) + ": " + why_not);
  }
  using Src = PointerSlot::Source;
  const Decode d = describe_operands(g, r);
  const Split split = plan_split(d, dev);
  const TensorInfo &ta = *d.ta, &tb = *d.tb;
  const size_t ra = ta.dims.size(), rb = tb.dims.size();
  const bool bf16 = d.dtype == DType::bf16;

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

  // workspace: the epilogue's exit accumulators, then the split-K partials and tile counters
  // (the counters start zeroed and the last CTA of each tile resets its own)
  AnchorEpilogue epi(g, r, d.mm->outputs[0]);
  auto align256 = [](size_t v) { return (v + 255) / 256 * 256; };
  const size_t part_offset = align256(epi.workspace_bytes());
  const size_t part_bytes = split.splits > 1
                                ? static_cast<size_t>(split.tiles * split.splits) * d.m_tile * kDecodeBNHost * 4
                                : 0;
  const size_t count_offset = align256(part_offset + part_bytes);
  const size_t workspace = count_offset + static_cast<size_t>(split.tiles) * 4;

  RegionKernels rk;
  KernelSpec spec;
  ArgsWriter w(spec);
  w.field("SinterGemmShape", "shape", shape);
  w.field("int", "splits", static_cast<int>(split.splits));
  w.field("int", "chunk", static_cast<int>(split.chunk));
  w.pointer("const u16*", "x", Src::input, region_input_index(r, d.mm->inputs[0]), d.x_vec * 2);
  w.pointer("const u16*", "w", Src::input, region_input_index(r, d.mm->inputs[1]), d.w_vec * 2);
  w.workspace_pointer("float*", "part", part_offset, 4);
  w.workspace_pointer("unsigned int*", "counts", count_offset, 4);
  epi.declare(w);
  const std::string args = w.finish();

  GemmTileScope scope;
  scope.threads = "kDecodeThreads";
  scope.bn = "kDecodeBN";
  scope.ldc = "kDecodeLdC";

  const std::string tile_args = std::string(d.k_major ? "true" : "false") + ", " + std::to_string(d.m_tile) +
                                ", " + std::to_string(d.w_vec) + ", " + std::to_string(d.x_vec) + ", " +
                                (bf16 ? "true" : "false");
  std::ostringstream src;
  src << "// matmul region " << r.id << " of graph '" << g.name() << "' (decode gemv, M <= 16)\n"
      << kernel_includes({"gemm/gemm_abi.h", "gemm/decode_gemv.cuh"})
      << "static_assert(kDecodeThreads == " << kDecodeThreadsHost << " && kDecodeBN == " << kDecodeBNHost
      << " && kDecodeKIter == " << kDecodeKIterHost << " && kDecodeXElems == " << kDecodeXElemsHost
      << " && DecodeSmem<" << (d.k_major ? "true" : "false") << ", " << d.m_tile
      << ">::kBytes == " << smem_bytes(d.k_major, d.m_tile) << ", \"the host's decode GEMM constants are stale\");\n"
      << "constexpr bool kIndex64 = " << (epi.index64() ? "true" : "false") << ";\n\n"
      << args << "\n";
  // out: [batches, M, N]; CTA = (batch, column tile, k chunk); y tile [M, 128]
  src << "extern \"C\" __global__ void __launch_bounds__(kDecodeThreads) sinter_region(const __grid_constant__ Args a) {\n"
      << "  extern __shared__ float4 smem_[];  // float4: 16-byte aligned x rows\n"
      << epi.kernel_begin("  ")
      << "  const SinterGemmShape& s = a.shape;\n"
      << "  const i64 tiles_n = (s.n + kDecodeBN - 1) / kDecodeBN;\n"
      << "  const i64 cta = blockIdx.x, slot = cta / a.splits;\n"
      << "  const int split = static_cast<int>(cta - slot * a.splits);\n"
      << "  const i64 bi = slot / tiles_n;\n"
      << "  const int n0 = static_cast<int>(slot - bi * tiles_n) * kDecodeBN;\n"
      << "  const int k_lo = split * a.chunk;\n"
      << "  const int k_hi = min(static_cast<int>(s.k), k_lo + a.chunk);\n"
      << "  char* smem_x = reinterpret_cast<char*>(smem_);\n"
      << "  float* ctile = reinterpret_cast<float*>(smem_x + DecodeSmem<" << (d.k_major ? "true" : "false") << ", "
      << d.m_tile << ">::kXBytes);\n"
      << "  const bool full = decode_gemv_tile<" << tile_args << ">(\n"
      << "      a.x + offset_of<false>(s.batch, s.a_batch, bi), a.w + offset_of<false>(s.batch, s.b_batch, bi), s, n0,\n"
      << "      k_lo, k_hi, slot, split, a.splits, a.part, a.counts, smem_x, ctile);\n"
      << "  if (full) {\n"
      << "    const char* smem = reinterpret_cast<const char*>(ctile);\n"
      << epi.gemm_tile("bi * s.m", "static_cast<int>(s.m)", "static_cast<i64>(n0)",
                       "min(kDecodeBN, static_cast<int>(s.n - n0))", scope)
      << "  }\n"
      << epi.kernel_end("  ") << "}\n";

  spec.source = src.str();
  spec.description = std::string("matmul decode gemv mma.") + (bf16 ? "bf16" : "f16") + " m" +
                     std::to_string(d.m_tile) + "x128 w:" + (d.k_major ? "[N,K]" : "[K,N]") +
                     (d.w_vec == 8 ? "-vec8" : "-scalar") + " x:" + (d.x_vec == 8 ? "vec8" : "scalar") +
                     " splitk" + std::to_string(split.splits) + "x" + std::to_string(split.chunk) +
                     (epi.index64() ? " idx64" : "") + epi.describe();
  spec.launch.grid = dim3(static_cast<unsigned>(split.tiles * split.splits));
  spec.launch.block = dim3(kDecodeThreadsHost);
  spec.launch.dynamic_shared_memory = smem_bytes(d.k_major, d.m_tile);
  rk.workspace_bytes = workspace;
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
