// Sdpa regions: flash-attention style online softmax in f32 (kernels/attention/flash_simple.cuh),
// then the region's pointwise epilogue on o, seen as the matrix [B*H*Sq, Dv]; the statistics
// (log-sum-exp per query row) are stored when the region outputs them. A tile is 32 query rows of
// one (batch, head); query blocks are visited last-first so that, under a causal mask, the
// costliest blocks start first.
//
// The generated source is the kernel's Cfg, the region's epilogue functor (epilogue_functor.hpp)
// and the instantiation of flash_simple_kernel. Compile-time: dtypes, causal mode, bias kind (none, additive, keep-mask), an upper bound on Dv
// (a power of two >= 32, sizing the output registers), the epilogue. Run-time: every size and
// stride, the scale, and D (the score loop runs over it; shared memory is sized from it).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/epilogue_functor.hpp"
#include "engines/jit/expr.hpp"
#include "attention/sdpa_abi.h"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// Mirror kernels/attention/flash_simple.cuh (kSdpaWarps, kSdpaKeys, sdpa_smem_floats); the
// generated source static_asserts that they agree.
constexpr int kWarps = 4, kKeys = 32, kRowsPerWarp = 8;

int64_t smem_floats(int nv, int ld) {
  return int64_t{kWarps * kRowsPerWarp + kKeys} * ld + int64_t{kKeys} * nv * 32 + kWarps * kRowsPerWarp * kKeys;
}

// The generated source: the Cfg of flash_simple_tile, the args, the epilogue functor and the
// instantiation of flash_simple_kernel.
std::string simple_source(const Graph& g, const fuse::Region& r, const AnchorEpilogue& epi, const std::string& st,
                          const std::string& sbias, int bias_mode, int causal, int nv, bool stats,
                          const std::string& args) {
  std::ostringstream src;
  src << "// sdpa region " << r.id << " of graph '" << g.name() << "'\n"
      << kernel_includes({"attention/sdpa_abi.h", "attention/flash_simple.cuh"})
      << "struct Cfg {\n"
      << "  typedef " << st << " T;\n"
      << "  typedef " << sbias << " BiasT;\n"
      << "  static constexpr int kBias = " << bias_mode << ", kCausal = " << causal << ", kRW = " << kRowsPerWarp
      << ", kNV = " << nv << ";\n"
      << "  static constexpr bool kStats = " << (stats ? "true" : "false") << ";\n"
      << "};\n"
      << "static_assert(kSdpaWarps == " << kWarps << " && kSdpaKeys == " << kKeys
      << " && sdpa_smem_floats(Cfg::kRW, Cfg::kNV, 4) == " << smem_floats(nv, 4)
      << " && sdpa_smem_floats(Cfg::kRW, Cfg::kNV, 12) == " << smem_floats(nv, 12)
      << ", \"the host's sdpa constants are stale\");\n\n"
      << args << "\n"
      << row_epilogue(epi) << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(kSdpaThreads) sinter_region(const __grid_constant__ Args a) {\n"
      << "  flash_simple_kernel<Cfg, Epilogue>(a);\n"
      << "}\n";
  return src.str();
}

}  // namespace

RegionKernels build_sdpa_simple(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  using Src = PointerSlot::Source;
  const Node& sd = g.node(r.anchor);
  if (sd.op != OpKind::sdpa || !r.prologue.empty() || !r.reductions.empty()) {
    throw Error(ErrorCode::internal, "build_sdpa: region " + std::to_string(r.id) + " is not a plain sdpa region");
  }
  const auto& at = std::get<SdpaAttrs>(sd.attrs);
  const TensorInfo& tq = g.tensor(sd.inputs[0]);
  const TensorInfo& tk = g.tensor(sd.inputs[1]);
  const TensorInfo& tv = g.tensor(sd.inputs[2]);

  SinterSdpaShape s{};
  s.batch = tq.dims[0], s.heads = tq.dims[1], s.sq = tq.dims[2], s.d = tq.dims[3];
  s.kv_heads = tk.dims[1], s.skv = tk.dims[2], s.dv = tv.dims[3];
  s.group = s.heads / s.kv_heads;
  s.causal_offset = at.causal == CausalMask::bottom_right ? s.skv - s.sq : 0;
  for (int i = 0; i < 4; ++i) {
    s.q_stride[i] = tq.strides[i];
    s.k_stride[i] = tk.strides[i];
    s.v_stride[i] = tv.strides[i];
  }
  const DType bias_dtype = at.has_bias ? g.tensor(sd.inputs[3]).dtype : DType::f32;
  if (at.has_bias) {
    const TensorInfo& tb = g.tensor(sd.inputs[3]);
    const Dims bs = broadcast_strides(tb.dims, tb.strides, {s.batch, s.heads, s.sq, s.skv});
    for (int i = 0; i < 4; ++i) s.bias_stride[i] = bs[i];
  }
  s.scale = static_cast<float>(at.scale.value_or(1.0 / std::sqrt(static_cast<double>(s.d))));
  s.ld = static_cast<int>((s.d + 7) / 8 * 8 + 4);  // = 4 mod 8: conflict-free float4 rows

  const int64_t kdv = std::max<int64_t>(32, next_pow2(s.dv));
  const int nv = static_cast<int>(kdv / 32);
  const int64_t smem = smem_floats(nv, s.ld) * 4;
  const int64_t smem_limit = dev.max_shared_memory_per_block_optin > 0
                                 ? static_cast<int64_t>(dev.max_shared_memory_per_block_optin)
                                 : 227 * 1024;
  if (smem > smem_limit || nv > 16) {
    throw Error(ErrorCode::unsupported, "sdpa '" + sd.name + "': head dims D=" + std::to_string(s.d) +
                                            ", Dv=" + std::to_string(s.dv) + " need " + std::to_string(smem) +
                                            " bytes of shared memory (at most " + std::to_string(smem_limit) +
                                            ") or more than 512 output columns per row");
  }
  const int bias_mode = !at.has_bias ? 0 : bias_dtype == DType::boolean ? 2 : 1;
  const int causal = at.causal == CausalMask::none ? 0 : at.causal == CausalMask::top_left ? 1 : 2;
  const bool stats_stored = at.emit_stats && region_output_index(r, sd.outputs[1]) >= 0;

  RegionKernels rk;
  KernelSpec spec;
  AnchorEpilogue epi(g, r, sd.outputs[0]);
  if (epi.has_exits()) throw Error(ErrorCode::internal, "build_sdpa: exit reductions in an sdpa region");
  ArgsWriter w(spec);
  const std::string st = storage_type(tq.dtype), sbias = storage_type(bias_dtype);
  w.field("SinterSdpaShape", "shape", s);
  w.pointer("const " + st + "*", "q", Src::input, region_input_index(r, sd.inputs[0]), static_cast<int>(dtype_size(tq.dtype)));
  w.pointer("const " + st + "*", "k", Src::input, region_input_index(r, sd.inputs[1]), static_cast<int>(dtype_size(tk.dtype)));
  w.pointer("const " + st + "*", "v", Src::input, region_input_index(r, sd.inputs[2]), static_cast<int>(dtype_size(tv.dtype)));
  if (at.has_bias) {
    w.pointer("const " + sbias + "*", "bias", Src::input, region_input_index(r, sd.inputs[3]),
              static_cast<int>(dtype_size(bias_dtype)));
  }
  if (stats_stored) w.pointer("float*", "stats", Src::output, region_output_index(r, sd.outputs[1]), 4);
  epi.declare(w);
  spec.source = simple_source(g, r, epi, st, sbias, bias_mode, causal, nv, stats_stored, w.finish());
  spec.description = std::string("sdpa flash-simple ffma q32xk32 dv<=") + std::to_string(kdv) +
                     (causal == 1 ? " causal-tl" : causal == 2 ? " causal-br" : "") +
                     (bias_mode == 1 ? " bias" : bias_mode == 2 ? " mask" : "") +
                     (stats_stored ? " stats" : "") + (epi.index64() ? " idx64" : "") + epi.describe();
  const int64_t tiles = s.batch * s.heads * ((s.sq + kWarps * kRowsPerWarp - 1) / (kWarps * kRowsPerWarp));
  spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(tiles, 1, int64_t{1} << 30)));
  spec.launch.block = dim3(kWarps * 32);
  spec.launch.dynamic_shared_memory = static_cast<size_t>(smem);
  rk.workspace_bytes = epi.workspace_bytes();
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
