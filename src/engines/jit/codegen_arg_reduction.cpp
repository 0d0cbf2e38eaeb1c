// Standalone argmax / argmin regions along one axis of a float tensor of any rank and strides.
// The device code is kernels/reduce/arg_reduction.cuh; this file collapses the kept dims, picks
// the threads per output and the split of the axis, and emits the Cfg, the Args struct and the
// kernel that runs the template's tile function once per CTA.
//
// Threads per output (kGroup, structure): a contiguous axis (or few outputs) is read by a group of
// lanes per output, the whole CTA for long rows (the LM head's [1, 128256] logits); a strided
// axis with many outputs takes one thread per output, so neighbouring threads read neighbouring
// kept elements. Few long rows are split over grid.y; the splits meet in a workspace key per
// output, combined by atomicMax, which is order-independent: the result is deterministic.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/codegen_common.hpp"
#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 4;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct ArgPlan {
  CollapsedShape kept;  // strides[0]: x, strides[1]: the output (row-major)
  int64_t n_out = 1, n = 1, s = 1;
  int group = 1;
  bool index64 = false;
  int64_t tiles_x = 1, splits = 1, chunk = 1;
};

ArgPlan make_arg_plan(const TensorInfo& x, int64_t axis, const cuda::DeviceProperties& dev) {
  ArgPlan p;
  Dims kept_dims, kept_x;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    if (static_cast<int64_t>(i) == axis) continue;
    kept_dims.push_back(x.dims[i]);
    kept_x.push_back(x.strides[i]);
  }
  p.kept = collapse(kept_dims, {kept_x, contiguous_strides(kept_dims)});
  p.n_out = p.kept.numel;
  p.n = x.dims[static_cast<size_t>(axis)];
  p.s = x.strides[static_cast<size_t>(axis)];
  p.index64 = num_elements(x.dims) >= (int64_t{1} << 31);

  const int64_t resident_threads = int64_t{dev.sm_count > 0 ? dev.sm_count : 132} * 2048;
  if (p.s != 1 && p.n != 1 && p.n_out >= resident_threads / 4) {
    p.group = 1;  // strided axis, many outputs: a thread per output
  } else if (p.n > int64_t{32} * kUnroll * 4) {
    p.group = kBlock;
  } else {
    p.group = 1;  // enough lanes for about kUnroll elements each
    while (p.group < 32 && p.group * kUnroll < p.n) p.group *= 2;
  }
  p.tiles_x = ceil_div(p.n_out, kBlock / p.group);
  const int64_t target_ctas = resident_threads / kBlock;
  if (p.group == kBlock && p.tiles_x < target_ctas) {
    p.splits = std::min({ceil_div(target_ctas, p.tiles_x), ceil_div(p.n, int64_t{kBlock} * kUnroll),
                         int64_t{65535}});
  }
  p.chunk = ceil_div(p.n, std::max<int64_t>(p.splits, 1));
  p.splits = ceil_div(p.n, p.chunk);  // no empty slices
  if (p.tiles_x > 0x7fffffff) {
    throw Error(ErrorCode::unsupported, std::string("argmax/argmin with ") + std::to_string(p.n_out) +
                                            " outputs needs more than 2^31 - 1 CTAs");
  }
  return p;
}

}  // namespace

RegionKernels build_arg_reduction(const Graph& g, const fuse::Region& r,
                                  const cuda::DeviceProperties& dev) {
  if (r.anchor < 0 || op_info(g.node(r.anchor).op).cls != OpClass::arg_reduce ||
      r.outputs.size() != 1) {
    throw Error(ErrorCode::internal, "build_arg_reduction: region " + std::to_string(r.id) +
                                         " is not one stored argmax or argmin");
  }
  const Node& n = g.node(r.anchor);
  const TensorInfo& x = g.tensor(n.inputs[0]);
  const TensorInfo& y = g.tensor(n.outputs[0]);
  if (!is_float(x.dtype)) {
    throw Error(ErrorCode::unsupported, std::string(to_string(n.op)) + " '" + n.name +
                                            "': the jit kernel compares float inputs; found " +
                                            std::string(to_string(x.dtype)));
  }
  const ArgPlan p = make_arg_plan(x, std::get<ArgReduceAttrs>(n.attrs).axis, dev);

  RegionKernels rk;
  KernelSpec spec;
  ArgsWriter args(spec);
  args.pointer("const Cfg::In*", "x", PointerSlot::Source::input, region_input_index(r, n.inputs[0]),
               static_cast<int>(dtype_size(x.dtype)));
  args.pointer("i64*", "out", PointerSlot::Source::output, region_output_index(r, n.outputs[0]), 8);
  if (p.splits > 1) {
    const size_t counters_offset = (static_cast<size_t>(p.n_out) * sizeof(uint64_t) + 255) / 256 * 256;
    args.workspace_pointer("u64*", "acc", 0, 8);
    args.workspace_pointer("u32*", "counters", counters_offset, 4);
    rk.workspace_bytes = counters_offset + static_cast<size_t>(p.tiles_x) * sizeof(uint32_t);
  } else {
    args.field("u64*", "acc", static_cast<const void*>(nullptr));  // unused without splits
    args.field("u32*", "counters", static_cast<const void*>(nullptr));
  }
  args.field("SinterIterShape", "kept", make_iter_shape(p.kept));
  args.field("SinterStridedView", "kept_x", make_view(p.kept.strides[0]));
  args.field("i64", "n_out", p.n_out);
  args.field("i64", "n", p.n);
  args.field("i64", "s", p.s);
  args.field("i64", "chunk", p.chunk);
  args.field("i64", "tiles_x", p.tiles_x);
  args.field("int", "splits", static_cast<int32_t>(p.splits));

  std::ostringstream src;
  src << "// reduction region " << r.id << " of graph '" << g.name() << "': " << to_string(n.op) << " '"
      << n.name << "' of '" << x.name << "' " << dims_to_string(x.dims) << " " << to_string(x.dtype)
      << " -> " << dims_to_string(y.dims) << " i64\n"
      << "#include \"reduce/arg_reduction.cuh\"\n"
      << "struct Cfg {\n  typedef " << storage_type(x.dtype) << " In;\n"
      << "  static constexpr int kKind = " << (n.op == OpKind::argmax ? "kArgMax" : "kArgMin")
      << ", kGroup = " << p.group << ", kBlock = " << kBlock << ", kUnroll = " << kUnroll << ";\n"
      << "  static constexpr bool kIndex64 = " << (p.index64 ? "true" : "false") << ";\n};\n"
      << args.finish() << "\n"
      << "// x: [n_out kept] x [n along the axis]; out: [n_out] i64; grid (tiles_x, splits)\n"
      << "extern \"C\" __global__ void __launch_bounds__(Cfg::kBlock)\n"
      << "sinter_region(const __grid_constant__ Args a) {\n  sinter_kernel_begin();\n"
      << "  arg_reduce_tile<Cfg>(a, static_cast<i64>(blockIdx.y) * a.tiles_x + blockIdx.x);\n}\n";
  spec.source = src.str();
  spec.description = std::string(to_string(n.op)) + " group" + std::to_string(p.group) + " splits" +
                     std::to_string(p.splits) + (p.index64 ? " idx64" : "");
  spec.launch.grid = dim3(static_cast<unsigned>(p.tiles_x), static_cast<unsigned>(p.splits));
  spec.launch.block = dim3(kBlock);
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
