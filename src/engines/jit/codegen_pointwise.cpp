// Pointwise regions (no anchor): one vectorized kernel over the collapsed iteration shape, by
// default one tile per CTA with a grid covering the tensor (PointwiseConfig::flat; regions with
// exit reductions and some candidates use a persistent grid looping over tiles). Each operand gets an access class from its strides: full (same layout as the
// outputs: one 16-byte load per vector), scalar (loaded once), strided (offset computed once per
// vector; a vector load when its innermost stride is 1, else a gather). Global exit reductions
// are reduced per CTA and finished by the last CTA.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_common.hpp"
#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// splat: broadcast along the innermost dim (a column vector): one load per vector.
enum class Access { full, scalar, strided_vector, strided_gather, splat };

const char* access_name(Access a) {
  switch (a) {
    case Access::full: return "full";
    case Access::scalar: return "scalar";
    case Access::strided_vector: return "strided";
    case Access::strided_gather: return "gather";
    case Access::splat: return "splat";
  }
  return "?";
}

constexpr int kBlock = 256;

}  // namespace

RegionKernels build_pointwise(const Graph& g, const fuse::Region& r,
                              const cuda::DeviceProperties& dev, PointwiseConfig variant) {
  using Src = PointerSlot::Source;
  const int kUnroll = variant.unroll;
  for (const fuse::ExitReduce& e : r.reductions) {
    if (e.pattern != fuse::ExitReduction::global) {
      throw Error(ErrorCode::internal, "build_pointwise: only global exit reductions");
    }
  }
  const Dims& shape = r.iteration_shape;
  // Element outputs: stored values of the iteration shape (exit reductions are written apart).
  std::vector<TensorId> outs;
  for (TensorId t : r.outputs) {
    const NodeId p = g.tensor(t).producer;
    const bool is_exit = std::any_of(r.reductions.begin(), r.reductions.end(),
                                     [&](const fuse::ExitReduce& e) { return e.node == p; });
    if (!is_exit) outs.push_back(t);
  }
  std::vector<Dims> operand_strides;
  for (TensorId t : r.inputs) {
    const TensorInfo& info = g.tensor(t);
    operand_strides.push_back(broadcast_strides(info.dims, info.strides, shape));
  }
  const Dims contiguous = contiguous_strides(shape);
  for (size_t i = 0; i < outs.size(); ++i) operand_strides.push_back(contiguous);
  const CollapsedShape cs = collapse(shape, operand_strides);
  // Outputs are row-major over the iteration shape: innermost first, 1, size0, size0*size1, ...
  Dims out_strides(cs.sizes.size());
  for (size_t d = 0, acc = 1; d < cs.sizes.size(); acc *= cs.sizes[d], ++d) out_strides[d] = acc;

  // Classify inputs and choose the vector width.
  const size_t ni = r.inputs.size();
  std::vector<Access> access(ni);
  int64_t min_size = 16;
  for (size_t i = 0; i < ni; ++i) {
    const Dims& s = cs.strides[i];
    const bool all_zero = std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 0; });
    if (all_zero) {
      access[i] = Access::scalar;
    } else if (s == out_strides) {
      access[i] = Access::full;
    } else {
      access[i] = s[0] == 1 ? Access::strided_vector
                  : s[0] == 0 ? Access::splat
                              : Access::strided_gather;
    }
    if (access[i] != Access::scalar) min_size = std::min(min_size, dtype_size(g.tensor(r.inputs[i]).dtype));
  }
  for (TensorId t : outs) min_size = std::min(min_size, dtype_size(g.tensor(t).dtype));
  // 16 bytes of the narrowest operand, at most 8 elements (code size and registers)
  int vec = static_cast<int>(std::min<int64_t>(8, 16 / min_size));
  bool strided_present = false;
  for (size_t i = 0; i < ni; ++i) {
    if (access[i] == Access::strided_vector || access[i] == Access::strided_gather ||
        access[i] == Access::splat) {
      strided_present = true;
    }
  }
  if (strided_present && cs.sizes[0] % vec != 0) vec = 1;  // a vector must stay in one innermost row
  for (size_t i = 0; i < ni && vec > 1; ++i) {
    if (access[i] != Access::strided_vector) continue;
    const Dims& s = cs.strides[i];
    // vector loads need every vector start aligned: all outer strides multiples of the width
    for (size_t d = 1; d < s.size(); ++d) {
      if (s[d] % vec != 0) access[i] = Access::strided_gather;
    }
  }
  const bool index64 = cs.numel >= (int64_t{1} << 31);
  // Broadcast operands (a zero stride: smaller than the iteration, re-read from L1/L2) are loaded
  // late, in the compute loop, so registers hold only the streamed operands' loads in flight.
  // Memory-level parallelism per SM is what a streaming kernel needs: more CTAs resident beats
  // holding cache-resident values early.
  std::vector<bool> late(ni, false);
  for (size_t i = 0; i < ni; ++i) {
    const Dims& s = cs.strides[i];
    late[i] = access[i] != Access::full && access[i] != Access::scalar &&
              std::any_of(s.begin(), s.end(), [](int64_t v) { return v == 0; });
  }

  // offset_of's template arguments for operand i: the dims with a nonzero stride, known here
  // (broadcast structure is part of the region's structure), so broadcast dims cost no multiply.
  auto offset_targs = [&](size_t i) {
    unsigned mask = 0;
    for (size_t d = 0; d < cs.strides[i].size() && d < 32; ++d) {
      if (cs.strides[i][d] != 0) mask |= 1u << d;
    }
    return "<kIndex64, kRank, " + std::to_string(mask) + "u>";
  };

  // ---- source -------------------------------------------------------------------------------
  std::ostringstream src;
  src << "// pointwise region " << r.id << " of graph '" << g.name() << "'\n";
  src << (variant.stream ? kernel_includes({"common/stream_memory.cuh"}) : kernel_includes());
  src << "constexpr int kVec = " << vec << ", kUnroll = " << kUnroll << ", kBlock = " << kBlock
      << ";\nconstexpr bool kIndex64 = " << (index64 ? "true" : "false") << ";\n"
      << "typedef IndexType<kIndex64>::type Index;\n"
      << "constexpr int kRank = " << cs.sizes.size() << ";  // of the collapsed iteration shape\n";
  src << "struct Args {\n  SinterIterShape shape;\n";
  for (size_t i = 0; i < ni; ++i) {
    const TensorInfo& t = g.tensor(r.inputs[i]);
    src << "  const " << storage_type(t.dtype) << "* in" << i << ";  // '" << t.name << "' "
        << access_name(access[i]) << "\n";
    if (access[i] != Access::full && access[i] != Access::scalar) {
      src << "  SinterStridedView view" << i << ";\n";
    }
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    src << "  " << storage_type(g.tensor(outs[k]).dtype) << "* out" << k << ";  // '"
        << g.tensor(outs[k]).name << "'\n";
  }
  for (size_t m = 0; m < r.reductions.size(); ++m) src << "  SinterReduceSlot red" << m << ";\n";
  src << "};\n\n";

  BodyEmitter body(g, r);
  for (size_t i = 0; i < ni; ++i) body.bind(r.inputs[i], "x" + std::to_string(i) + "v");
  const std::string body_code = body.emit(r.epilogue);

  // The scalar path for the last, partial vector: one element at a time, not unrolled.
  src << "__device__ __noinline__ void region_element(const Args& a, i64 i";
  for (size_t m = 0; m < r.reductions.size(); ++m) src << ", float& acc" << m;
  src << ") {\n";
  for (size_t i = 0; i < ni; ++i) {
    const std::string ct = compute_type(g.tensor(r.inputs[i]).dtype);
    const std::string in = "a.in" + std::to_string(i);
    src << "  const " << ct << " x" << i << "v = ";
    switch (access[i]) {
      case Access::full: src << "load_one(" << in << " + i);\n"; break;
      case Access::scalar: src << "load_one(" << in << ");\n"; break;
      default:
        src << "load_one(" << in << " + offset_of" << offset_targs(i) << "(a.shape, a.view" << i << ", i));\n";
        break;
    }
  }
  src << body.constants() << body_code;
  for (size_t k = 0; k < outs.size(); ++k) {
    src << "  store_one(a.out" << k << " + i, " << body.name_of(outs[k]) << ");\n";
  }
  for (size_t m = 0; m < r.reductions.size(); ++m) {
    const Node& rn = g.node(r.reductions[m].node);
    const std::string kind = reduce_kind(rn.op);
    src << "  acc" << m << " = reduce_combine<" << kind << ">(acc" << m << ", reduce_input<" << kind
        << ">(static_cast<float>(" << body.name_of(rn.inputs[0]) << ")));\n";
  }
  src << "}\n\n";

  // A tile's loaded state: element indices and the streamed operands' vectors. Loading and
  // computing are separate functions so a pipelined kernel can load the next tile into a second
  // Tile while it computes this one; the Tile lives in registers (all indices are static after
  // unrolling).
  // 32-bit element indices while they fit (kIndex64 false): fewer registers per unrolled vector.
  src << "struct Tile {\n  Index base[kUnroll];\n";
  for (size_t i = 0; i < ni; ++i) {
    const std::string ct = compute_type(g.tensor(r.inputs[i]).dtype);
    // Vectors stay in their storage type until the compute loop converts them: a bf16 vector
    // of 8 holds 4 registers instead of 8, which keeps the unrolled tile's loads in flight at
    // a reasonable register count (127 -> ~60 for a chain with two broadcast operands).
    if (late[i] || access[i] == Access::scalar) continue;
    if (access[i] == Access::splat) {
      src << "  " << ct << " x" << i << "[kUnroll];\n";
    } else {
      src << "  " << storage_type(g.tensor(r.inputs[i]).dtype) << " x" << i << "[kUnroll][kVec];\n";
    }
  }
  src << "};\n\n";
  // Names inside tile_load / tile_compute: base and x<i> refer to the Tile's members.
  auto tile_refs = [&](bool mut) {
    std::string out = std::string("  ") + (mut ? "" : "const ") + "Index (&base)[kUnroll] = T.base;\n";
    for (size_t i = 0; i < ni; ++i) {
      if (late[i] || access[i] == Access::scalar) continue;
      out += std::string("  ") + (mut ? "auto& x" : "const auto& x") + std::to_string(i) + " = T.x" +
             std::to_string(i) + ";\n";
    }
    return out;
  };
  src << "__device__ __forceinline__ void tile_load(const Args& a, i64 tile, Tile& T) {\n"
      << "  const Index n = static_cast<Index>(a.shape.numel);\n" << tile_refs(true);
  // All loads of the tile first, so they are in flight together; then compute and store.
  src << "#pragma unroll\n  for (int u = 0; u < kUnroll; ++u) {\n"
         "    base[u] = static_cast<Index>(((tile * kUnroll + u) * kBlock + threadIdx.x) * static_cast<i64>(kVec));\n"
         "    if (base[u] + kVec <= n) {\n";
  // Emits the load of operand i's vector at base[u] into `x` (an array of kVec, or one value
  // for a splat).
  auto emit_load = [&](size_t i, const std::string& x) {
    const std::string in = "a.in" + std::to_string(i);
    const std::string view = "a.view" + std::to_string(i);
    switch (access[i]) {
      case Access::full:
        src << (variant.stream ? "      load_raw_stream(" : "      load_raw(") << in << " + base[u], " << x << ");\n";
        break;
      case Access::strided_vector:
        src << "      load_raw(" << in << " + offset_of" << offset_targs(i) << "(a.shape, " << view
            << ", base[u]), " << x << ");\n";
        break;
      case Access::strided_gather:
        src << "      { const i64 o = offset_of" << offset_targs(i) << "(a.shape, " << view << ", base[u]);\n"
            << "#pragma unroll\n        for (int j = 0; j < kVec; ++j) " << x << "[j] = "
            << in << "[o + j * " << view << ".stride[0]]; }\n";
        break;
      case Access::splat:
        src << "      " << x << " = load_one(" << in << " + offset_of" << offset_targs(i) << "(a.shape, " << view
            << ", base[u]));\n";
        break;
      case Access::scalar: break;
    }
  };
  for (size_t i = 0; i < ni; ++i) {
    if (!late[i]) emit_load(i, "x" + std::to_string(i) + "[u]");
  }
  src << "    }\n  }\n}\n\n";
  src << "__device__ __forceinline__ void tile_compute(const Args& a, const Tile& T";
  for (size_t m = 0; m < r.reductions.size(); ++m) src << ", float& acc" << m;
  src << ") {\n  const Index n = static_cast<Index>(a.shape.numel);\n" << tile_refs(false);
  for (size_t i = 0; i < ni; ++i) {
    if (access[i] != Access::scalar) continue;
    src << "  const " << compute_type(g.tensor(r.inputs[i]).dtype) << " s" << i << " = load_one(a.in" << i << ");\n";
  }
  src << "#pragma unroll\n  for (int u = 0; u < kUnroll; ++u) {\n"
         "    if (base[u] + kVec > n) {\n"
         "#pragma unroll 1\n      for (i64 i = base[u]; i < static_cast<i64>(n); ++i) region_element(a, i";
  for (size_t m = 0; m < r.reductions.size(); ++m) src << ", acc" << m;
  src << ");\n      continue;\n    }\n";
  for (size_t i = 0; i < ni; ++i) {
    if (!late[i]) continue;
    const std::string x = "x" + std::to_string(i) + "l";
    if (access[i] == Access::splat) {
      src << "    " << compute_type(g.tensor(r.inputs[i]).dtype) << " " << x << ";\n";
    } else {
      src << "    " << storage_type(g.tensor(r.inputs[i]).dtype) << " " << x << "[kVec];\n";
    }
    src << "  ";
    emit_load(i, x);
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    src << "    " << compute_type(g.tensor(outs[k]).dtype) << " y" << k << "[kVec];\n";
  }
  // Whole vectors convert at once (convert_vec: bf16 pairs from their 32-bit word).
  for (size_t i = 0; i < ni; ++i) {
    if (access[i] == Access::scalar || access[i] == Access::splat) continue;
    const std::string x = "x" + std::to_string(i);
    src << "    " << compute_type(g.tensor(r.inputs[i]).dtype) << " " << x << "f[kVec];\n"
        << "    convert_vec(" << x << (late[i] ? "l" : "[u]") << ", " << x << "f);\n";
  }
  src << "#pragma unroll\n    for (int j = 0; j < kVec; ++j) {\n";
  for (size_t i = 0; i < ni; ++i) {
    const std::string ct = compute_type(g.tensor(r.inputs[i]).dtype);
    const std::string x = "x" + std::to_string(i);
    src << "      const " << ct << " " << x << "v = ";
    switch (access[i]) {
      case Access::scalar: src << "s" << i << ";\n"; break;
      case Access::splat: src << x << (late[i] ? "l" : "[u]") << ";\n"; break;
      default: src << x << "f[j];\n"; break;
    }
  }
  src << body.constants() << body_code;
  for (size_t k = 0; k < outs.size(); ++k) {
    src << "      y" << k << "[j] = " << body.name_of(outs[k]) << ";\n";
  }
  for (size_t m = 0; m < r.reductions.size(); ++m) {
    const Node& rn = g.node(r.reductions[m].node);
    const std::string kind = reduce_kind(rn.op);
    src << "      acc" << m << " = reduce_combine<" << kind << ">(acc" << m << ", reduce_input<"
        << kind << ">(static_cast<float>(" << body.name_of(rn.inputs[0]) << ")));\n";
  }
  src << "    }\n";
  for (size_t k = 0; k < outs.size(); ++k) {
    src << (variant.stream ? "    store_vec_stream(a.out" : "    store_vec(a.out") << k << " + base[u], y" << k << ");\n";
  }
  src << "  }\n}\n\n";

  src << "extern \"C\" __global__ void __launch_bounds__(kBlock) sinter_region(const __grid_constant__ Args a) {\n  sinter_kernel_begin();\n";
  for (size_t m = 0; m < r.reductions.size(); ++m) {
    src << "  float acc" << m << " = reduce_identity<" << reduce_kind(g.node(r.reductions[m].node).op)
        << ">();\n";
  }
  std::string accs;
  for (size_t m = 0; m < r.reductions.size(); ++m) accs += ", acc" + std::to_string(m);
  src << "  const i64 tile_elems = static_cast<i64>(kBlock) * kUnroll * kVec;\n"
         "  const i64 tiles = (a.shape.numel + tile_elems - 1) / tile_elems;\n";
  if (variant.pipelined) {
    // Two Tiles: the next tile's loads are issued before this tile computes and stores, so a
    // warp never sits with no loads in flight between tiles.
    src << "  Tile A, B;\n  const i64 step = gridDim.x;\n  i64 t = blockIdx.x;\n"
           "  if (t < tiles) tile_load(a, t, A);\n"
           "  for (; t < tiles; t += 2 * step) {\n"
           "    if (t + step < tiles) tile_load(a, t + step, B);\n"
           "    tile_compute(a, A" << accs << ");\n"
           "    if (t + step >= tiles) break;\n"
           "    if (t + 2 * step < tiles) tile_load(a, t + 2 * step, A);\n"
           "    tile_compute(a, B" << accs << ");\n"
           "  }\n";
  } else {
    src << "  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {\n"
           "    Tile T;\n    tile_load(a, t, T);\n    tile_compute(a, T" << accs << ");\n  }\n";
  }
  if (!r.reductions.empty()) src << "  __shared__ float scratch[33];\n";
  for (size_t m = 0; m < r.reductions.size(); ++m) {
    const Node& rn = g.node(r.reductions[m].node);
    const std::string kind = reduce_kind(rn.op);
    src << "  { const float v = block_reduce<" << kind << ">(acc" << m << ", scratch);\n"
        << "    if (threadIdx.x == 0) accumulate_atomic<" << kind << ">(a.red" << m << ".acc, v);\n"
        << "    finalize_exit_reduction<" << kind << ", " << storage_type(g.tensor(rn.outputs[0]).dtype)
        << ">(a.red" << m << "); }\n";
  }
  src << "}\n";

  // ---- arguments ----------------------------------------------------------------------------
  RegionKernels rk;
  const std::vector<ExitSlot> exits = plan_exit_slots(g, r, rk.workspace_bytes);
  KernelSpec spec;
  spec.source = src.str();
  std::string desc = "pointwise vec" + std::to_string(vec) + " unroll" + std::to_string(kUnroll) +
                     (variant.stream ? " stream-hints" : "") + (variant.pipelined ? " pipelined" : "") +
                     " block" + std::to_string(kBlock) + (index64 ? " idx64" : "");
  for (size_t i = 0; i < ni; ++i) desc += std::string(i ? "," : " [") + access_name(access[i]);
  if (ni) desc += "]";
  spec.description = desc;
  spec.args.add(make_iter_shape(cs));
  for (size_t i = 0; i < ni; ++i) {
    const int64_t es = dtype_size(g.tensor(r.inputs[i]).dtype);
    const int align = (access[i] == Access::full || access[i] == Access::strided_vector)
                          ? static_cast<int>(std::min<int64_t>(16, vec * es))
                          : static_cast<int>(es);
    spec.pointers.push_back({Src::input, static_cast<int>(i), 0, spec.args.add_pointer(nullptr), align});
    if (access[i] != Access::full && access[i] != Access::scalar) {
      spec.args.add(make_view(cs.strides[i]));
    }
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    const int64_t es = dtype_size(g.tensor(outs[k]).dtype);
    spec.pointers.push_back({Src::output, region_output_index(r, outs[k]), 0,
                             spec.args.add_pointer(nullptr),
                             static_cast<int>(std::min<int64_t>(16, vec * es))});
  }
  pack_exit_slots(spec, exits);
  spec.args.finish();
  const int64_t tile_elems = int64_t{kBlock} * kUnroll * vec;
  const int64_t tiles = (cs.numel + tile_elems - 1) / tile_elems;
  spec.launch.block = dim3(kBlock);
  // Flat only without exit reductions: each CTA ends its part of a reduction with atomics on one
  // address, which a grid of 10^5 CTAs would serialize; a persistent grid has a few hundred.
  if (set_work_grid(spec, tiles, variant.flat && r.reductions.empty(), dev)) spec.description += " flat";
  rk.kernels.push_back(std::move(spec));
  return rk;
}

std::span<const PointwiseConfig> all_pointwise_configs() {
  // flat tiles first (one tile per CTA; a region with exit reductions keeps the persistent grid,
  // see build_pointwise, so there the first and the plain unroll-4 config are one kernel)
  static const PointwiseConfig configs[] = {{4, false, false, true}, {8}, {2}, {4, true}, {8, true}, {2, false, true},
                                            {4, false, true}, {4}, {2, false, false, true}, {1, false, false, true}};
  return configs;
}

std::vector<PointwiseConfig> pointwise_configs(const Graph&, const fuse::Region&, const cuda::DeviceProperties&) {
  const std::span<const PointwiseConfig> all = all_pointwise_configs();
  return {all.begin(), all.end()};
}

}  // namespace sinter::jit
