// Pointwise regions (no anchor): kernels/pointwise/pointwise.cuh over the collapsed iteration
// shape, by default one tile per CTA with a grid covering the tensor (PointwiseConfig::flat;
// regions with exit reductions and some candidates use a persistent grid looping over tiles).
// This file classifies each operand by its strides and emits the Cfg, the Args and the Fused
// functor (the operands' loads, the expression, the stores, the exit accumulators). Access
// classes: full (same layout as the outputs: one 16-byte load per vector), scalar (loaded once),
// strided (offset computed once per vector; a vector load when its innermost stride is 1, else a
// gather), splat (broadcast along the innermost dim: one load per vector). Global exit
// reductions are reduced per CTA and finished by the last CTA.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"  // ArgsWriter
#include "engines/jit/codegen_common.hpp"
#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

using Src = PointerSlot::Source;

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

class PointwiseGen {
 public:
  PointwiseGen(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev, PointwiseConfig variant)
      : g_(g), r_(r), dev_(dev), variant_(variant), body_(g, r) {}

  RegionKernels build();

 private:
  DType in_type(size_t i) const { return g_.tensor(r_.inputs[i]).dtype; }
  void plan();
  std::string offset_targs(size_t i) const;
  std::string load_source(size_t i, const std::string& x, const std::string& base) const;
  std::string config_source() const;
  std::string args_source(KernelSpec& spec) const;
  std::string fused_source() const;
  std::string state_source() const;
  std::string load_fn() const;
  std::string compute_fn() const;
  std::string element_fn() const;
  std::string exits_source() const;
  std::string accumulate(const std::string& indent) const;

  const Graph& g_;
  const fuse::Region& r_;
  const cuda::DeviceProperties& dev_;
  PointwiseConfig variant_;
  BodyEmitter body_;       // inputs bound to x<i>v
  std::string body_code_;  // the expression's statements, once
  std::vector<TensorId> outs_;  // stored values of the iteration shape (exit reductions apart)
  CollapsedShape cs_;
  std::vector<Access> access_;
  // Broadcast operands (a zero stride: smaller than the iteration, re-read from L1/L2) are loaded
  // late, in the compute step, so registers hold only the streamed operands' loads in flight.
  // Memory-level parallelism per SM is what a streaming kernel needs: more CTAs resident beats
  // holding cache-resident values early.
  std::vector<bool> late_;
  int vec_ = 1;
  bool index64_ = false;
};

void PointwiseGen::plan() {
  for (const fuse::ExitReduce& e : r_.reductions) {
    if (e.pattern != fuse::ExitReduction::global) {
      throw Error(ErrorCode::internal, "build_pointwise: only global exit reductions");
    }
  }
  const Dims& shape = r_.iteration_shape;
  for (TensorId t : r_.outputs) {
    const NodeId p = g_.tensor(t).producer;
    const bool is_exit = std::any_of(r_.reductions.begin(), r_.reductions.end(),
                                     [&](const fuse::ExitReduce& e) { return e.node == p; });
    if (!is_exit) outs_.push_back(t);
  }
  std::vector<Dims> operand_strides;
  for (TensorId t : r_.inputs) {
    const TensorInfo& info = g_.tensor(t);
    operand_strides.push_back(broadcast_strides(info.dims, info.strides, shape));
  }
  const Dims contiguous = contiguous_strides(shape);
  for (size_t i = 0; i < outs_.size(); ++i) operand_strides.push_back(contiguous);
  cs_ = collapse(shape, operand_strides);
  // Outputs are row-major over the iteration shape: innermost first, 1, size0, size0*size1, ...
  Dims out_strides(cs_.sizes.size());
  for (size_t d = 0, acc = 1; d < cs_.sizes.size(); acc *= cs_.sizes[d], ++d) out_strides[d] = acc;

  const size_t ni = r_.inputs.size();
  access_.assign(ni, Access::full);
  int64_t min_size = 16;
  for (size_t i = 0; i < ni; ++i) {
    const Dims& s = cs_.strides[i];
    if (std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 0; })) {
      access_[i] = Access::scalar;
    } else if (s == out_strides) {
      access_[i] = Access::full;
    } else {
      access_[i] = s[0] == 1 ? Access::strided_vector : s[0] == 0 ? Access::splat : Access::strided_gather;
    }
    if (access_[i] != Access::scalar) min_size = std::min(min_size, dtype_size(in_type(i)));
  }
  for (TensorId t : outs_) min_size = std::min(min_size, dtype_size(g_.tensor(t).dtype));
  // 16 bytes of the narrowest operand, at most 8 elements (code size and registers)
  vec_ = static_cast<int>(std::min<int64_t>(8, 16 / min_size));
  const bool strided = std::any_of(access_.begin(), access_.end(), [](Access a) {
    return a == Access::strided_vector || a == Access::strided_gather || a == Access::splat;
  });
  if (strided && cs_.sizes[0] % vec_ != 0) vec_ = 1;  // a vector must stay in one innermost row
  for (size_t i = 0; i < ni && vec_ > 1; ++i) {
    if (access_[i] != Access::strided_vector) continue;
    // vector loads need every vector start aligned: all outer strides multiples of the width
    const Dims& s = cs_.strides[i];
    for (size_t d = 1; d < s.size(); ++d) {
      if (s[d] % vec_ != 0) access_[i] = Access::strided_gather;
    }
  }
  index64_ = cs_.numel >= (int64_t{1} << 31);
  late_.assign(ni, false);
  for (size_t i = 0; i < ni; ++i) {
    const Dims& s = cs_.strides[i];
    late_[i] = access_[i] != Access::full && access_[i] != Access::scalar &&
               std::any_of(s.begin(), s.end(), [](int64_t v) { return v == 0; });
  }
  for (size_t i = 0; i < ni; ++i) body_.bind(r_.inputs[i], "x" + std::to_string(i) + "v");
  body_code_ = body_.emit(r_.epilogue);
}

// offset_of's template arguments for operand i: the dims with a nonzero stride, known here
// (broadcast structure is part of the region's structure), so broadcast dims cost no multiply.
std::string PointwiseGen::offset_targs(size_t i) const {
  unsigned mask = 0;
  for (size_t d = 0; d < cs_.strides[i].size() && d < 32; ++d) {
    if (cs_.strides[i][d] != 0) mask |= 1u << d;
  }
  return "<Cfg::kIndex64, Cfg::kRank, " + std::to_string(mask) + "u>";
}

// The load of operand i's vector at element `base` into `x` (an array of kVec, or one value for
// a splat).
std::string PointwiseGen::load_source(size_t i, const std::string& x, const std::string& base) const {
  const std::string in = "a.in" + std::to_string(i), view = "a.view" + std::to_string(i);
  const std::string offset = "offset_of" + offset_targs(i) + "(a.shape, " + view + ", " + base + ")";
  switch (access_[i]) {
    case Access::full:
      return std::string(variant_.stream ? "load_raw_stream(" : "load_raw(") + in + " + " + base + ", " + x + ");";
    case Access::strided_vector: return "load_raw(" + in + " + " + offset + ", " + x + ");";
    case Access::strided_gather:
      return "{ const i64 o = " + offset + ";\n#pragma unroll\n      for (int j = 0; j < Cfg::kVec; ++j) " + x + "[j] = " +
             in + "[o + j * " + view + ".stride[0]]; }";
    case Access::splat: return x + " = load_one(" + in + " + " + offset + ");";
    case Access::scalar: break;
  }
  return "";
}

std::string PointwiseGen::config_source() const {
  std::ostringstream s;
  s << "struct Cfg {\n"
    << "  static constexpr int kVec = " << vec_ << ", kUnroll = " << variant_.unroll << ", kBlock = " << kBlock << ";\n"
    << "  static constexpr int kRank = " << cs_.sizes.size() << ";  // of the collapsed iteration shape\n"
    << "  static constexpr bool kIndex64 = " << (index64_ ? "true" : "false")
    << ", kPipelined = " << (variant_.pipelined ? "true" : "false") << ";\n};\n"
    << "typedef IndexType<Cfg::kIndex64>::type Index;\n";
  return s.str();
}

std::string PointwiseGen::args_source(KernelSpec& spec) const {
  std::ostringstream names;
  ArgsWriter args(spec);
  args.field("SinterIterShape", "shape", make_iter_shape(cs_));
  for (size_t i = 0; i < r_.inputs.size(); ++i) {
    const TensorInfo& t = g_.tensor(r_.inputs[i]);
    const int64_t es = dtype_size(t.dtype);
    const bool vector = access_[i] == Access::full || access_[i] == Access::strided_vector;
    const std::string n = std::to_string(i);
    args.pointer("const " + storage_type(t.dtype) + "*", "in" + n, Src::input, static_cast<int>(i),
                 static_cast<int>(vector ? std::min<int64_t>(16, vec_ * es) : es));
    if (access_[i] != Access::full && access_[i] != Access::scalar) {
      args.field("SinterStridedView", "view" + n, make_view(cs_.strides[i]));
    }
    names << "//   in" << n << ": '" << t.name << "' " << dims_to_string(t.dims) << " " << to_string(t.dtype) << ", "
          << access_name(access_[i]) << "\n";
  }
  for (size_t k = 0; k < outs_.size(); ++k) {
    const TensorInfo& t = g_.tensor(outs_[k]);
    args.pointer(storage_type(t.dtype) + "*", "out" + std::to_string(k), Src::output, region_output_index(r_, outs_[k]),
                 static_cast<int>(std::min<int64_t>(16, vec_ * dtype_size(t.dtype))));
    names << "//   out" << k << ": '" << t.name << "' " << dims_to_string(t.dims) << " " << to_string(t.dtype) << "\n";
  }
  size_t workspace = 0;
  const std::vector<ExitSlot> exits = plan_exit_slots(g_, r_, workspace);
  for (size_t m = 0; m < exits.size(); ++m) {
    args.reduce_slot(exits[m], "red" + std::to_string(m));
    names << "//   red" << m << ": '" << g_.tensor(exits[m].output).name << "'\n";
  }
  return "// Arguments (over the collapsed iteration shape):\n" + names.str() + args.finish();
}

// Loaded (the streamed operands' vectors, in their storage type: a bf16 vector of 8 holds 4
// registers instead of 8, which keeps the unrolled tile's loads in flight at a reasonable
// register count), Scalars, Acc.
std::string PointwiseGen::state_source() const {
  std::ostringstream loaded, scalars, acc, init;
  for (size_t i = 0; i < r_.inputs.size(); ++i) {
    const std::string n = std::to_string(i);
    if (access_[i] == Access::scalar) {
      scalars << "    s.s" << n << " = load_one(a.in" << n << ");\n";
      continue;
    }
    if (late_[i]) continue;
    if (access_[i] == Access::splat) {
      loaded << "    " << compute_type(in_type(i)) << " x" << n << "[Cfg::kUnroll];\n";
    } else {
      loaded << "    " << storage_type(in_type(i)) << " x" << n << "[Cfg::kUnroll][Cfg::kVec];\n";
    }
  }
  std::string scalar_members;
  for (size_t i = 0; i < r_.inputs.size(); ++i) {
    if (access_[i] == Access::scalar) {
      scalar_members += "    " + compute_type(in_type(i)) + " s" + std::to_string(i) + ";\n";
    }
  }
  for (size_t m = 0; m < r_.reductions.size(); ++m) {
    acc << "    float acc" << m << ";\n";
    init << "    acc.acc" << m << " = reduce_identity<" << reduce_kind(g_.node(r_.reductions[m].node).op) << ">();\n";
  }
  return "  static constexpr int kExits = " + std::to_string(r_.reductions.size()) + ";\n" +
         "  struct Loaded {\n" + loaded.str() + "  };\n  struct Scalars {\n" + scalar_members + "  };\n" +
         "  struct Acc {\n" + acc.str() + "  };\n" +
         "  static __device__ __forceinline__ Scalars scalars(const Args& a) {\n    Scalars s;\n" + scalars.str() +
         "    return s;\n  }\n" +
         "  static __device__ __forceinline__ void init(Acc& acc) {\n" + init.str() + "  }\n";
}

std::string PointwiseGen::load_fn() const {
  std::string s = "  static __device__ __forceinline__ void load(const Args& a, int u, Index base, Loaded& L) {\n";
  for (size_t i = 0; i < r_.inputs.size(); ++i) {
    if (!late_[i] && access_[i] != Access::scalar) s += "    " + load_source(i, "L.x" + std::to_string(i) + "[u]", "base") + "\n";
  }
  return s + "  }\n";
}

// The exit accumulators' update for one element (inside the element loop).
std::string PointwiseGen::accumulate(const std::string& indent) const {
  std::string s;
  for (size_t m = 0; m < r_.reductions.size(); ++m) {
    const Node& rn = g_.node(r_.reductions[m].node);
    const std::string kind = reduce_kind(rn.op), acc = "acc.acc" + std::to_string(m);
    s += indent + acc + " = reduce_combine<" + kind + ">(" + acc + ", reduce_input<" + kind + ">(static_cast<float>(" +
         body_.name_of(rn.inputs[0]) + ")));\n";
  }
  return s;
}

// compute: vector u's late loads, conversions (whole vectors at once: convert_vec takes bf16
// pairs from their 32-bit word), the expression per element, the stores.
std::string PointwiseGen::compute_fn() const {
  std::ostringstream s;
  s << "  static __device__ __forceinline__ void compute(const Args& a, int u, Index base, const Loaded& L,\n"
    << "                                                const Scalars& s, Acc& acc) {\n";
  for (size_t i = 0; i < r_.inputs.size(); ++i) {
    if (!late_[i]) continue;
    const std::string x = "x" + std::to_string(i) + "l";
    s << "    " << (access_[i] == Access::splat ? compute_type(in_type(i)) + " " + x
                                                 : storage_type(in_type(i)) + " " + x + "[Cfg::kVec]")
      << ";\n    " << load_source(i, x, "base") << "\n";
  }
  for (size_t k = 0; k < outs_.size(); ++k) {
    s << "    " << compute_type(g_.tensor(outs_[k]).dtype) << " y" << k << "[Cfg::kVec];\n";
  }
  for (size_t i = 0; i < r_.inputs.size(); ++i) {
    if (access_[i] == Access::scalar || access_[i] == Access::splat) continue;
    const std::string x = "x" + std::to_string(i);
    s << "    " << compute_type(in_type(i)) << " " << x << "f[Cfg::kVec];\n"
      << "    convert_vec(" << (late_[i] ? x + "l" : "L." + x + "[u]") << ", " << x << "f);\n";
  }
  s << "#pragma unroll\n    for (int j = 0; j < Cfg::kVec; ++j) {\n";
  for (size_t i = 0; i < r_.inputs.size(); ++i) {
    const std::string n = std::to_string(i), x = "x" + n;
    s << "      const " << compute_type(in_type(i)) << " " << x << "v = "
      << (access_[i] == Access::scalar ? "s.s" + n
          : access_[i] == Access::splat ? (late_[i] ? x + "l" : "L." + x + "[u]")
                                        : x + "f[j]")
      << ";\n";
  }
  s << body_.constants() << body_code_;
  for (size_t k = 0; k < outs_.size(); ++k) s << "      y" << k << "[j] = " << body_.name_of(outs_[k]) << ";\n";
  s << accumulate("      ") << "    }\n";
  for (size_t k = 0; k < outs_.size(); ++k) {
    s << "    " << (variant_.stream ? "store_vec_stream" : "store_vec") << "(a.out" << k << " + base, y" << k << ");\n";
  }
  return s.str() + "  }\n";
}

// element: the scalar path for the partial last vector, one element at a time.
std::string PointwiseGen::element_fn() const {
  std::ostringstream s;
  s << "  static __device__ __noinline__ void element(const Args& a, i64 i" << (r_.reductions.empty() ? "" : ", Acc& acc")
    << ") {\n";
  for (size_t i = 0; i < r_.inputs.size(); ++i) {
    const std::string n = std::to_string(i), in = "a.in" + n;
    s << "    const " << compute_type(in_type(i)) << " x" << n << "v = ";
    switch (access_[i]) {
      case Access::full: s << "load_one(" << in << " + i);\n"; break;
      case Access::scalar: s << "load_one(" << in << ");\n"; break;
      default: s << "load_one(" << in << " + offset_of" << offset_targs(i) << "(a.shape, a.view" << n << ", i));\n"; break;
    }
  }
  s << body_.constants() << body_code_;
  for (size_t k = 0; k < outs_.size(); ++k) s << "    store_one(a.out" << k << " + i, " << body_.name_of(outs_[k]) << ");\n";
  return s.str() + accumulate("    ") + "  }\n";
}

std::string PointwiseGen::exits_source() const {
  std::ostringstream s;
  s << "  static __device__ __forceinline__ void finish(const Args& a, Acc& acc, float* scratch) {\n";
  for (size_t m = 0; m < r_.reductions.size(); ++m) {
    const Node& rn = g_.node(r_.reductions[m].node);
    const std::string kind = reduce_kind(rn.op), n = std::to_string(m);
    s << "    { const float v = block_reduce<" << kind << ">(acc.acc" << n << ", scratch);\n"
      << "      if (threadIdx.x == 0) accumulate_atomic<" << kind << ">(a.red" << n << ".acc, v);\n"
      << "      finalize_exit_reduction<" << kind << ", " << storage_type(g_.tensor(rn.outputs[0]).dtype) << ">(a.red" << n
      << "); }\n";
  }
  return s.str() + "  }\n";
}

std::string PointwiseGen::fused_source() const {
  return "// The region's fused expression (kernels/pointwise/pointwise.cuh says what each member does).\n"
         "struct Fused {\n" +
         state_source() + load_fn() + compute_fn() + element_fn() + exits_source() + "};\n";
}

RegionKernels PointwiseGen::build() {
  plan();
  RegionKernels rk;
  size_t workspace = 0;
  plan_exit_slots(g_, r_, workspace);
  rk.workspace_bytes = workspace;
  KernelSpec spec;
  spec.source = "// pointwise region " + std::to_string(r_.id) + " of graph '" + g_.name() + "'\n" +
                "#include \"pointwise/pointwise.cuh\"\n" + config_source() + args_source(spec) + "\n" + fused_source() +
                "\nextern \"C\" __global__ void __launch_bounds__(Cfg::kBlock) sinter_region(const __grid_constant__ Args a) "
                "{\n  sinter_kernel_begin();\n  pointwise_tiles<Cfg, Fused>(a);\n}\n";
  std::string desc = "pointwise vec" + std::to_string(vec_) + " unroll" + std::to_string(variant_.unroll) +
                     (variant_.stream ? " stream-hints" : "") + (variant_.pipelined ? " pipelined" : "") + " block" +
                     std::to_string(kBlock) + (index64_ ? " idx64" : "");
  for (size_t i = 0; i < access_.size(); ++i) desc += std::string(i ? "," : " [") + access_name(access_[i]);
  if (!access_.empty()) desc += "]";
  spec.description = desc;
  const int64_t tile_elems = int64_t{kBlock} * variant_.unroll * vec_;
  const int64_t tiles = (cs_.numel + tile_elems - 1) / tile_elems;
  spec.launch.block = dim3(kBlock);
  // Flat only without exit reductions: each CTA ends its part of a reduction with atomics on one
  // address, which a grid of 10^5 CTAs would serialize; a persistent grid has a few hundred.
  if (set_work_grid(spec, tiles, variant_.flat && r_.reductions.empty(), dev_)) spec.description += " flat";
  // a tile a CTA (a persistent grid of as many CTAs as tiles too; the engine drops the boxes
  // where it sizes the grid smaller)
  if (r_.reductions.empty() && spec.launch.grid.x == tiles) spec.task_boxes = flat_task_boxes(g_, r_, r_.iteration_shape, 1, cs_.numel, 1, tile_elems, tiles);
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace

RegionKernels build_pointwise(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                              PointwiseConfig variant) {
  return PointwiseGen(g, r, dev, variant).build();
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
