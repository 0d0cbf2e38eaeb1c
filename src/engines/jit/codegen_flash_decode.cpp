// Sdpa regions with few query rows (Sq <= 16: decode, speculative decode) on the flash-decoding
// kernel of kernels/attention/flash_decode.cuh, one launch: each warp owns one kv head, up to four
// query rows of its GQA group and one range of keys, writing partial softmaxes to the workspace;
// the last CTA of each kv head (and row block) to finish merges them (one warp per output row),
// runs the region's pointwise epilogue on o, seen as the matrix [B*H*Sq, Dv], and stores the stats.
//
// The generated source is the kernel's Cfg, the epilogue functor (epilogue_functor.hpp) and the
// instantiation of flash_decode_kernel. Compile-time: dtypes, causal mode, bias kind, D and Dv
// rounded up to powers of two (they decide the lanes per K / V row), rows per warp, whether q, k, v
// allow 16-byte vectors, and whether the stats are stored. Run-time: every size and stride, the
// scale, and the split of the keys (chunk, splits), so one binary serves every decode step of a
// model as its KV cache grows.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "attention/sdpa_abi.h"
#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/epilogue_functor.hpp"
#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// Mirror kernels/attention/flash_decode.cuh; the generated source static_asserts that they agree.
constexpr int kWarps = 4;
constexpr int64_t kMaxSq = 16, kMaxHeadDim = 256;

struct DecodePlan {
  SinterSdpaShape s{};
  int kd = 32, kdv = 32;  // D, Dv rounded up to powers of two >= 32
  int rows_per_warp = 1;  // kR
  int tile_keys = 8;      // kTK
  int64_t row_blocks = 1, units = 1;
  int64_t nsplit = kWarps, cta_splits = 1, chunk = 1;  // warps per unit, CTAs per unit, keys per warp
  bool vec_q = false, vec_k = false, vec_v = false;
};

// 16-byte vectors need a contiguous head dim of whole vectors and 16-byte aligned rows (the base
// is checked at launch through the pointer's alignment); the kernel then never loads a partial
// vector, so a load is one predicated instruction.
bool vectorizable(const TensorInfo& t) {
  return t.dims[3] % 8 == 0 && t.strides[3] == 1 && t.strides[0] % 8 == 0 && t.strides[1] % 8 == 0 &&
         t.strides[2] % 8 == 0;
}

DecodePlan plan_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  const Node& sd = g.node(r.anchor);
  const auto& at = std::get<SdpaAttrs>(sd.attrs);
  const TensorInfo& tq = g.tensor(sd.inputs[0]);
  const TensorInfo& tk = g.tensor(sd.inputs[1]);
  const TensorInfo& tv = g.tensor(sd.inputs[2]);
  DecodePlan p;
  SinterSdpaShape& s = p.s;
  s.batch = tq.dims[0], s.heads = tq.dims[1], s.sq = tq.dims[2], s.d = tq.dims[3];
  s.kv_heads = tk.dims[1], s.skv = tk.dims[2], s.dv = tv.dims[3];
  s.group = s.heads / std::max<int64_t>(s.kv_heads, 1);
  s.causal_offset = at.causal == CausalMask::bottom_right ? s.skv - s.sq : 0;
  for (int i = 0; i < 4; ++i) {
    s.q_stride[i] = tq.strides[i];
    s.k_stride[i] = tk.strides[i];
    s.v_stride[i] = tv.strides[i];
  }
  if (at.has_bias) {
    const TensorInfo& tb = g.tensor(sd.inputs[3]);
    const Dims bs = broadcast_strides(tb.dims, tb.strides, {s.batch, s.heads, s.sq, s.skv});
    for (int i = 0; i < 4; ++i) s.bias_stride[i] = bs[i];
  }
  s.scale = static_cast<float>(at.scale.value_or(1.0 / std::sqrt(static_cast<double>(s.d))));
  s.ld = 0;  // no shared-memory q / k tiles here
  p.kd = static_cast<int>(std::max<int64_t>(32, next_pow2(std::max<int64_t>(s.d, 1))));
  p.kdv = static_cast<int>(std::max<int64_t>(32, next_pow2(std::max<int64_t>(s.dv, 1))));
  // Four rows per warp cover a GQA group of four at Sq = 1 (Llama-style decode) with q, scores
  // and o in registers; more rows are more row blocks, re-reading K / V mostly from L2.
  const int64_t rows = s.group * s.sq;
  p.rows_per_warp = rows >= 4 ? 4 : rows >= 2 ? 2 : 1;
  // Eight 16-byte loads of K or V per lane per tile: a tile is 8 loads of the wider row mapping
  // (256 / kD keys per K load), so neither K nor V needs more than 8 loads.
  const int kpi = 256 / p.kd, kpiv = 256 / p.kdv;
  p.tile_keys = 8 * std::min(kpi, kpiv);
  p.row_blocks = (rows + p.rows_per_warp - 1) / p.rows_per_warp;
  p.units = s.batch * s.kv_heads * p.row_blocks;
  // The split: about four CTAs of four warps per SM in all (K and V stream through registers,
  // so occupancy is what keeps loads in flight), each warp at least one tile of keys: at the
  // decode stack's 1025 keys a warp loads its one tile at once, and the merge reads the partials
  // in a few batches of loads (decode_merge_row).
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 132;
  const int64_t want_warps = 4 * sms * kWarps;
  const int64_t skv = std::max<int64_t>(s.skv, 1);
  const int64_t min_chunk = p.tile_keys;
  const int64_t max_splits = std::max<int64_t>(1, (skv + min_chunk - 1) / min_chunk);
  const int64_t splits = std::clamp<int64_t>((want_warps + p.units - 1) / p.units, 1, max_splits);
  const int64_t warp_splits = (splits + kWarps - 1) / kWarps * kWarps;  // whole CTAs
  const int64_t per = (skv + warp_splits - 1) / warp_splits;
  p.chunk = (per + p.tile_keys - 1) / p.tile_keys * p.tile_keys;
  // whole tiles a warp can leave the last splits without keys: the CTAs that would have none go
  p.cta_splits = ((skv + p.chunk - 1) / p.chunk + kWarps - 1) / kWarps;
  p.nsplit = p.cta_splits * kWarps;
  p.vec_q = vectorizable(tq);
  p.vec_k = vectorizable(tk);
  p.vec_v = vectorizable(tv);
  return p;
}

// The kernel's Cfg (kernels/attention/flash_decode.cuh).
std::string decode_kernel_config(const DecodePlan& p, const std::string& st, const std::string& sbias, int bias_mode,
                          int causal, bool stats) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  return "struct Cfg {\n  typedef " + st + " T;\n  typedef " + sbias + " BiasT;\n  static constexpr int kBias = " +
         std::to_string(bias_mode) + ", kCausal = " + std::to_string(causal) + ", kR = " +
         std::to_string(p.rows_per_warp) + ", kD = " + std::to_string(p.kd) + ", kDV = " + std::to_string(p.kdv) +
         ", kTK = " + std::to_string(p.tile_keys) + ";\n  static constexpr bool kVecQ = " + b(p.vec_q) +
         ", kVecK = " + b(p.vec_k) + ", kVecV = " + b(p.vec_v) + ", kStats = " + b(stats) + ";\n};\n";
}

std::string dims_text(int64_t d, int64_t dv) { return "D = " + std::to_string(d) + ", Dv = " + std::to_string(dv); }

}  // namespace

std::string sdpa_decode_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  const Node& sd = g.node(r.anchor);
  if (sd.op != OpKind::sdpa) return "not an sdpa region";
  if (!r.prologue.empty()) return "the region has a prologue";
  if (!r.reductions.empty()) return "the region has exit reductions";
  const TensorInfo& tq = g.tensor(sd.inputs[0]);
  const TensorInfo& tk = g.tensor(sd.inputs[1]);
  const TensorInfo& tv = g.tensor(sd.inputs[2]);
  if (tq.dims[2] > kMaxSq) return "Sq = " + std::to_string(tq.dims[2]) + " is more than 16 query rows";
  if (tq.dtype != tk.dtype || tq.dtype != tv.dtype || (tq.dtype != DType::bf16 && tq.dtype != DType::f16)) {
    return "q, k, v are " + std::string(to_string(tq.dtype)) + ", " + std::string(to_string(tk.dtype)) + ", " +
           std::string(to_string(tv.dtype)) + ", not all bf16 or all f16";
  }
  if (tq.dims[3] > kMaxHeadDim || tv.dims[3] > kMaxHeadDim) {
    return dims_text(tq.dims[3], tv.dims[3]) + ": head dims above 256";
  }
  for (const TensorInfo* t : {&tq, &tk, &tv}) {
    for (int64_t d : t->dims) {
      if (d < 1) return "an empty dim in q, k or v";
      if (d >= (int64_t{1} << 31)) return "a dim of 2^31 or more";
    }
  }
  if (tq.dims[1] % tk.dims[1] != 0) return "heads not a multiple of kv heads";
  const DecodePlan p = plan_decode(g, r, dev);
  if (p.units * p.cta_splits >= (int64_t{1} << 31)) return "2^31 or more CTAs";
  return "";
}

RegionKernels build_sdpa_decode(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  const std::string why_not = sdpa_decode_unsupported(g, r, dev);
  if (!why_not.empty()) {
    throw Error(ErrorCode::internal, "build_sdpa_decode: region " + std::to_string(r.id) + ": " + why_not);
  }
  using Src = PointerSlot::Source;
  const Node& sd = g.node(r.anchor);
  const auto& at = std::get<SdpaAttrs>(sd.attrs);
  const TensorInfo& tq = g.tensor(sd.inputs[0]);
  const DecodePlan p = plan_decode(g, r, dev);
  const SinterSdpaShape& s = p.s;
  const DType bias_dtype = at.has_bias ? g.tensor(sd.inputs[3]).dtype : DType::f32;
  const int bias_mode = !at.has_bias ? 0 : bias_dtype == DType::boolean ? 2 : 1;
  const int causal = at.causal == CausalMask::none ? 0 : at.causal == CausalMask::top_left ? 1 : 2;
  const bool stats_stored = at.emit_stats && region_output_index(r, sd.outputs[1]) >= 0;
  const std::string st = storage_type(tq.dtype), sbias = storage_type(bias_dtype);

  // workspace: the epilogue's own (none today: sdpa regions have no exits), then per output row
  // and split the (m, l) pair and kDV floats of unnormalized o, then a counter per unit
  AnchorEpilogue epi(g, r, sd.outputs[0]);
  if (epi.has_exits()) throw Error(ErrorCode::internal, "build_sdpa_decode: exit reductions in an sdpa region");
  auto align256 = [](size_t v) { return (v + 255) / 256 * 256; };
  const size_t partials = static_cast<size_t>(s.batch * s.heads * s.sq * p.nsplit);
  const size_t ml_offset = align256(epi.workspace_bytes());
  const size_t o_offset = align256(ml_offset + partials * 2 * 4);
  const size_t count_offset = align256(o_offset + partials * static_cast<size_t>(p.kdv) * 4);
  const size_t workspace = count_offset + static_cast<size_t>(p.units) * 4;

  RegionKernels rk;
  KernelSpec spec;
  ArgsWriter w(spec);
  w.field("SinterSdpaShape", "shape", s);
  w.field("long long", "chunk", static_cast<long long>(p.chunk));
  w.field("int", "row_blocks", static_cast<int>(p.row_blocks));
  w.field("int", "cta_splits", static_cast<int>(p.cta_splits));
  w.field("int", "nsplit", static_cast<int>(p.nsplit));
  w.pointer("const " + st + "*", "q", Src::input, region_input_index(r, sd.inputs[0]), p.vec_q ? 16 : 2);
  w.pointer("const " + st + "*", "k", Src::input, region_input_index(r, sd.inputs[1]), p.vec_k ? 16 : 2);
  w.pointer("const " + st + "*", "v", Src::input, region_input_index(r, sd.inputs[2]), p.vec_v ? 16 : 2);
  if (at.has_bias) {
    w.pointer("const " + sbias + "*", "bias", Src::input, region_input_index(r, sd.inputs[3]),
              static_cast<int>(dtype_size(bias_dtype)));
  }
  if (stats_stored) w.pointer("float*", "stats", Src::output, region_output_index(r, sd.outputs[1]), 4);
  w.workspace_pointer("float*", "part_ml", ml_offset, 16);
  w.workspace_pointer("float*", "part_o", o_offset, 16);
  w.workspace_pointer("unsigned int*", "count", count_offset, 4);
  epi.declare(w);
  std::ostringstream src;
  src << "// sdpa region " << r.id << " of graph '" << g.name() << "': flash-decode (splits, then the merge + epilogue)\n"
      << kernel_includes({"attention/sdpa_abi.h", "attention/flash_decode.cuh"})
      << decode_kernel_config(p, st, sbias, bias_mode, causal, stats_stored)
      << "static_assert(kDecodeAttnWarps == " << kWarps << ", \"the host's decode attention constants are stale\");\n\n"
      << w.finish() << "\n"
      << row_epilogue(epi) << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(kDecodeAttnThreads) sinter_region(const __grid_constant__ Args a) {\n"
      << "  flash_decode_kernel<Cfg, Epilogue>(a);\n"
      << "}\n";
  spec.source = src.str();
  spec.description = "sdpa flash-decode r" + std::to_string(p.rows_per_warp) + " d" + std::to_string(p.kd) + " dv" +
                     std::to_string(p.kdv) + " splits" + std::to_string(p.nsplit) + "x" + std::to_string(p.chunk) +
                     (p.vec_k && p.vec_v ? " kv:vec8" : " kv:scalar") + (p.vec_q ? "" : " q:scalar") +
                     (causal == 1 ? " causal-tl" : causal == 2 ? " causal-br" : "") +
                     (bias_mode == 1 ? " bias" : bias_mode == 2 ? " mask" : "") + (stats_stored ? " stats" : "") +
                     (epi.index64() ? " idx64" : "") + epi.describe();
  spec.launch.grid = dim3(static_cast<unsigned>(p.units * p.cta_splits));
  spec.launch.block = dim3(kWarps * 32);
  rk.kernels.push_back(std::move(spec));
  rk.workspace_bytes = workspace;
  return rk;
}

}  // namespace sinter::jit

namespace sinter::jit {

std::vector<SdpaConfig> sdpa_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  if (sdpa_decode_unsupported(g, r, dev).empty()) return {{SdpaKernel::decode}, {SdpaKernel::simple}};
  return {{SdpaKernel::simple}};
}

RegionKernels build_sdpa(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                         const SdpaConfig& config) {
  const std::string why_not = sdpa_decode_unsupported(g, r, dev);
  if (config.kernel == SdpaKernel::decode) {
    if (!why_not.empty()) {
      throw Error(ErrorCode::invalid_argument, "jit engine, region " + std::to_string(r.id) +
                                                   ": the flash-decode kernels cannot run it: " + why_not);
    }
    return build_sdpa_decode(g, r, dev);
  }
  RegionKernels rk = build_sdpa_simple(g, r, dev);
  // a decode-sized region on the slow kernel says why (no silent fallback)
  const Node& sd = g.node(r.anchor);
  if (!why_not.empty() && g.tensor(sd.inputs[0]).dims[2] <= kMaxSq) {
    rk.kernels.at(0).description += " (no flash-decode: " + why_not + ")";
  }
  return rk;
}

}  // namespace sinter::jit
