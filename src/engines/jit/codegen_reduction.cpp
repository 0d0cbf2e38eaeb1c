// Standalone reduction regions: reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_amax over
// any axes of a tensor of rank 0..8, with any input strides (argmax and argmin regions go on to
// codegen_arg_reduction.cpp). The device code is
// kernels/reduce/reduction.cuh; this file collapses the shapes, picks a strategy and emits the
// Cfg, the Args struct (field by field in the order the host packs it) and the kernel that runs
// the template's tile function once per CTA.
//
// The input is split into kept dims (one output each; collapsed with the output's row-major
// strides so outputs stay in order) and reduced dims. The reduced dims are a set, so they are
// sorted by stride first: a transposed view then still reads its contiguous memory as one run.
// The innermost reduced dim is a run of r0 elements at stride s0. Strategies (structure, chosen by
// the shape class; sizes stay run-time arguments):
//   global  every axis reduced: CTAs take contiguous vector slices, block_reduce, one atomic per
//           CTA, the last CTA converts and zeroes the accumulator (the exit-reduction pattern).
//   row     the run is contiguous (s0 == 1) and at least 32 bytes: kGroup threads (1..32 lanes or
//           the whole CTA) per output, vector loads; few long rows split over grid.y.
//   column  kept dim 0 is contiguous: lanes along the outputs (kVec of them per 16-byte load), so
//           each warp step is one coalesced access; narrow columns put the spare lanes on further
//           rows; the CTA's warps split the reduced range; few outputs over many elements split
//           over grid.y with atomics.
//   general anything else (short strided runs, strided kept dims): the column kernel with scalar
//           loads, whose index math is exact for every layout but whose loads are not coalesced.
// Integer inputs accumulate exactly in i64 (sum wraps like int64, max/min stay integers); floats
// accumulate in f32. Split reductions keep one accumulator per output and a counter per output
// tile in the workspace; the last CTA of a tile leaves them zeroed.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_common.hpp"
#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

using Src = PointerSlot::Source;

constexpr int kBlock = 256;
constexpr int kUnroll = 4;
constexpr int kWarps = kBlock / 32;

enum class Strategy { global, row, column, general };

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::global: return "global";
    case Strategy::row: return "row";
    case Strategy::column: return "column";
    case Strategy::general: return "general";
  }
  return "?";
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Writes the generated struct's declaration and packs the host value in one step, so the two
// cannot drift apart; sizeof(Args) is asserted in the source as well.
class ArgsWriter {
 public:
  explicit ArgsWriter(KernelSpec& spec) : spec_(spec) {}
  template <typename T>
  size_t field(const std::string& decl, const T& value, const std::string& comment = "") {
    decl_ << "  " << decl << ";" << (comment.empty() ? "" : "  // " + comment) << "\n";
    return spec_.args.add(value);
  }
  size_t pointer(const std::string& decl, const std::string& comment) {
    return field(decl, static_cast<const void*>(nullptr), comment);
  }
  std::string finish() {
    spec_.args.finish();
    return "struct Args {\n" + decl_.str() +
           "};\nstatic_assert(sizeof(Args) == " + std::to_string(spec_.args.size()) +
           ", \"Args must match the host's ArgPacker\");\n";
  }

 private:
  KernelSpec& spec_;
  std::ostringstream decl_;
};

struct Plan {
  Strategy strategy = Strategy::general;
  CollapsedShape kept;   // strides[0]: x, strides[1]: the output (row-major)
  CollapsedShape red;    // strides[0]: x; sorted by stride, innermost first
  CollapsedShape outer;  // red without its innermost dim
  int64_t n_out = 1, count = 1, r0 = 1, s0 = 0;
  int vec = 1, group = 32;       // group: threads per output (row kernels)
  int out_lanes = 32, subs = 1;  // column kernels: lanes along the outputs, warps per output group
  bool has_outer = false, index64 = false;
  int64_t nv = 1, vpr = 1;  // vectors per output, per run (row kernels)
  int64_t tiles_x = 1, splits = 1, chunk = 1;
};

Plan make_plan(const TensorInfo& x, const ReduceAttrs& at, const cuda::DeviceProperties& dev) {
  Plan p;
  const size_t rank = x.dims.size();
  std::vector<bool> reduced(rank, at.axes.empty());
  for (int64_t a : at.axes) reduced[static_cast<size_t>(a)] = true;
  Dims kept_dims, kept_x;
  std::vector<std::pair<int64_t, int64_t>> red;  // (stride, size)
  for (size_t i = 0; i < rank; ++i) {
    if (reduced[i]) {
      red.push_back({x.strides[i], x.dims[i]});
    } else {
      kept_dims.push_back(x.dims[i]);
      kept_x.push_back(x.strides[i]);
    }
  }
  p.kept = collapse(kept_dims, {kept_x, contiguous_strides(kept_dims)});
  // Largest stride outermost: the summation order is free, and this makes runs contiguous.
  std::stable_sort(red.begin(), red.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  Dims red_dims, red_x;
  for (const auto& [stride, size] : red) {
    red_dims.push_back(size);
    red_x.push_back(stride);
  }
  p.red = collapse(red_dims, {red_x});
  p.n_out = p.kept.numel;
  p.count = p.red.numel;
  p.r0 = p.red.sizes[0];
  p.s0 = p.red.strides[0][0];
  p.has_outer = p.red.sizes.size() > 1;
  p.outer.sizes.assign(p.red.sizes.begin() + 1, p.red.sizes.end());
  p.outer.strides = {Dims(p.red.strides[0].begin() + 1, p.red.strides[0].end())};
  if (p.outer.sizes.empty()) {
    p.outer.sizes = {1};
    p.outer.strides = {{0}};
  }
  p.outer.numel = num_elements(p.outer.sizes);
  p.index64 = num_elements(x.dims) >= (int64_t{1} << 31);

  const int64_t es = dtype_size(x.dtype);
  if (p.n_out == 1) {
    p.strategy = Strategy::global;
  } else if (p.s0 == 1 && p.r0 * es >= 32) {
    p.strategy = Strategy::row;
  } else if (p.kept.strides[0][0] == 1) {
    p.strategy = Strategy::column;
  } else {
    p.strategy = Strategy::general;
  }

  const int64_t target_ctas = int64_t{dev.sm_count > 0 ? dev.sm_count : 132} * (2048 / kBlock);
  if (p.strategy == Strategy::global || p.strategy == Strategy::row) {
    // Widest vector whose starts are all aligned: the run length and every other stride must be
    // multiples of it (the base pointer is bound with that alignment).
    if (p.s0 == 1) {
      p.vec = static_cast<int>(16 / es);
      auto misaligned = [&](int64_t v) {
        if (p.r0 % v != 0) return true;
        for (int64_t s : p.kept.strides[0])
          if (s % v != 0) return true;
        for (int64_t s : p.outer.strides[0])
          if (s % v != 0) return true;
        return false;
      };
      while (p.vec > 1 && misaligned(p.vec)) p.vec /= 2;
    }
    p.nv = p.count / p.vec;
    p.vpr = p.r0 / p.vec;
    if (p.strategy == Strategy::global || p.nv > 512) {
      p.group = kBlock;
    } else {
      // Enough lanes for about kUnroll vectors each: short rows share a warp.
      p.group = 1;
      while (p.group < 32 && p.group * kUnroll < p.nv) p.group *= 2;
    }
    p.tiles_x = ceil_div(p.n_out, kBlock / p.group);
    if (p.group == kBlock && p.tiles_x < target_ctas) {
      p.splits = std::min({ceil_div(target_ctas, p.tiles_x),
                           ceil_div(p.nv, int64_t{kBlock} * kUnroll), int64_t{65535}});
    }
    p.chunk = ceil_div(p.nv, std::max<int64_t>(p.splits, 1));
    p.splits = ceil_div(p.nv, p.chunk);  // no empty slices
  } else {
    // Column: kVec consecutive outputs per lane when kept dim 0 is contiguous and every other
    // stride keeps the vectors aligned (the general fallback loads one element at a time).
    if (p.strategy == Strategy::column) {
      const int64_t k0 = p.kept.sizes[0];
      p.vec = static_cast<int>(16 / es);
      auto misaligned = [&](int64_t v) {
        if (k0 % v != 0) return true;
        for (size_t d = 1; d < p.kept.strides[0].size(); ++d)
          if (p.kept.strides[0][d] % v != 0) return true;
        for (int64_t s : p.red.strides[0])
          if (s % v != 0) return true;
        return false;
      };
      while (p.vec > 1 && misaligned(p.vec)) p.vec /= 2;
      // Narrow columns: the lanes a row does not need take further rows.
      const int64_t vector_cols = k0 / p.vec;
      p.out_lanes = 1;
      while (p.out_lanes < 32 && p.out_lanes < vector_cols) p.out_lanes *= 2;
    }
    // Warps per output group: as many as keep at least 16 elements per reducing lane.
    const int64_t red_lanes = 32 / p.out_lanes;
    p.subs = kWarps;
    while (p.subs > 1 && p.count < int64_t{16} * p.subs * red_lanes) p.subs /= 2;
    const int64_t cta_outs = int64_t{kWarps} / p.subs * p.out_lanes * p.vec;
    p.tiles_x = ceil_div(p.n_out, cta_outs);
    if (p.tiles_x < target_ctas) {
      // at least 64 elements per reducing lane before splitting further
      p.splits =
          std::min({ceil_div(target_ctas, p.tiles_x),
                    std::max<int64_t>(1, p.count / (p.subs * red_lanes * 64)), int64_t{65535}});
    }
    p.chunk = ceil_div(p.count, std::max<int64_t>(p.splits, 1));
    p.splits = ceil_div(p.count, p.chunk);
  }
  if (p.tiles_x > 0x7fffffff) {
    throw Error(ErrorCode::unsupported, "reduction with " + std::to_string(p.n_out) +
                                            " outputs needs more than 2^31 - 1 CTAs");
  }
  return p;
}

std::string config(const Node& n, DType in, DType out, const Plan& p) {
  std::ostringstream c;
  const bool row_tile = p.strategy == Strategy::global || p.strategy == Strategy::row;
  c << "struct Cfg {\n  typedef " << storage_type(in) << " In;\n  typedef " << storage_type(out)
    << " Out;\n  typedef " << (is_float(in) ? "float" : "i64") << " Acc;  // "
    << (is_float(in) ? "floats accumulate in f32" : "integers accumulate exactly") << "\n"
    << "  static constexpr bool kRowTile = " << (row_tile ? "true" : "false") << ";\n"
    << "  static constexpr int kKind = " << reduce_kind(n.op) << ", kVec = " << p.vec
    << ", kGroup = " << p.group << ", kOutLanes = " << p.out_lanes << ", kSubs = " << p.subs
    << ";\n  static constexpr int kBlock = " << kBlock << ", kUnroll = " << kUnroll << ";\n"
    << "  static constexpr bool kIndex64 = " << (p.index64 ? "true" : "false")
    << ", kOuter = " << (p.has_outer ? "true" : "false") << ";\n};\n";
  return c.str();
}

}  // namespace

RegionKernels build_reduction(const Graph& g, const fuse::Region& r,
                              const cuda::DeviceProperties& dev) {
  if (r.anchor >= 0 && op_info(g.node(r.anchor).op).cls == OpClass::arg_reduce) {
    return build_arg_reduction(g, r, dev);
  }
  if (r.anchor < 0 || op_info(g.node(r.anchor).op).cls != OpClass::reduce ||
      r.outputs.size() != 1) {
    throw Error(ErrorCode::internal,
                "build_reduction: region " + std::to_string(r.id) + " is not one stored reduction");
  }
  const Node& n = g.node(r.anchor);
  const TensorId x_id = n.inputs[0], y_id = n.outputs[0];
  const TensorInfo& x = g.tensor(x_id);
  const TensorInfo& y = g.tensor(y_id);
  const int in_index = region_input_index(r, x_id);
  if (in_index < 0) {  // the partitioner materializes a constant that a reduction reads
    throw Error(ErrorCode::internal, "build_reduction: '" + x.name +
                                         "' is not an input of region " + std::to_string(r.id));
  }
  const Plan p = make_plan(x, std::get<ReduceAttrs>(n.attrs), dev);
  const bool row_kernel = p.strategy == Strategy::global || p.strategy == Strategy::row;
  const int64_t es = dtype_size(x.dtype);
  const size_t acc_bytes = is_float(x.dtype) ? sizeof(float) : sizeof(int64_t);

  RegionKernels rk;
  KernelSpec spec;
  ArgsWriter args(spec);
  // Pointers first: their offsets are then plain multiples of 8, and sizeof(Args) checks the rest.
  spec.pointers.push_back(
      {Src::input, in_index, 0,
       args.pointer("const Cfg::In* x", "'" + x.name + "' " + dims_to_string(x.dims)),
       static_cast<int>(es * p.vec)});
  spec.pointers.push_back(
      {Src::output, region_output_index(r, y_id), 0,
       args.pointer("Cfg::Out* out", "'" + y.name + "' " + dims_to_string(y.dims)),
       static_cast<int>(dtype_size(y.dtype))});
  const size_t acc_at = args.pointer("Cfg::Acc* acc", "workspace: one per output, when split");
  const size_t counters_at =
      args.pointer("u32* counters", "workspace: one per output tile, when split");
  if (p.splits > 1) {
    const size_t counters_offset = (static_cast<size_t>(p.n_out) * acc_bytes + 255) / 256 * 256;
    spec.pointers.push_back({Src::workspace, 0, 0, acc_at, static_cast<int>(acc_bytes)});
    spec.pointers.push_back({Src::workspace, 0, counters_offset, counters_at, 4});
    rk.workspace_bytes = counters_offset + static_cast<size_t>(p.tiles_x) * sizeof(uint32_t);
  }
  args.field("SinterIterShape kept", make_iter_shape(p.kept), "kept dims, innermost first");
  args.field("SinterStridedView kept_x", make_view(p.kept.strides[0]), "x over them");
  args.field("SinterIterShape outer", make_iter_shape(p.outer), "reduced dims but the run");
  args.field("SinterStridedView outer_x", make_view(p.outer.strides[0]));
  args.field("i64 n_out", p.n_out, "outputs");
  args.field("i64 count", p.count, "elements per output");
  args.field("i64 r0", p.r0, "the run: length");
  args.field("i64 s0", p.s0, "the run: x stride");
  args.field("i64 nv", p.nv, "vectors per output (row kernels)");
  args.field("i64 vpr_n", p.vpr, "vectors per run");
  args.field("i64 chunk", p.chunk, "per split: vectors (row kernels) or elements (column)");
  args.field("i64 tiles_x", p.tiles_x, "grid.x");
  args.field("SinterFastDivmod vpr",
             make_fast_divmod(p.vpr < (int64_t{1} << 31) ? static_cast<uint32_t>(p.vpr) : 1u));
  args.field("int splits", static_cast<int32_t>(p.splits), "grid.y");
  args.field("float scale",
             n.op == OpKind::reduce_mean ? 1.0f / static_cast<float>(p.count) : 1.0f);

  std::ostringstream src;
  src << "// reduction region " << r.id << " of graph '" << g.name() << "': " << to_string(n.op)
      << " '" << n.name << "' of '" << x.name << "' " << dims_to_string(x.dims) << " "
      << to_string(x.dtype) << " -> " << dims_to_string(y.dims) << " " << to_string(y.dtype) << "\n"
      << "// strategy " << strategy_name(p.strategy) << "\n"
      << "#include \"reduce/reduction.cuh\"\n" << config(n, x.dtype, y.dtype, p) << args.finish() << "\n";
  // One tile (kernels/reduce/reduction.cuh's reduce_tile) per CTA.
  src << "// x: [n_out kept] x [" << (row_kernel ? "nv vectors of kVec" : "count, in runs of r0")
      << " reduced]; out: [n_out]; grid (tiles_x, splits)\n"
      << "extern \"C\" __global__ void __launch_bounds__(Cfg::kBlock)\n"
      << "sinter_region(const __grid_constant__ Args a) {\n  sinter_kernel_begin();\n"
      << "  reduce_tile<Cfg>(a, static_cast<i64>(blockIdx.y) * a.tiles_x + blockIdx.x);\n}\n";
  spec.source = src.str();
  spec.description =
      "reduction " + std::string(to_string(n.op)) + " " + strategy_name(p.strategy) + " vec" +
      std::to_string(p.vec) +
      (row_kernel ? " group" + std::to_string(p.group)
                  : " lanes" + std::to_string(p.out_lanes) + "x" +
                        std::to_string(32 / p.out_lanes) + " subs" + std::to_string(p.subs)) +
      " splits" + std::to_string(p.splits) + (p.index64 ? " idx64" : "");
  spec.launch.grid = dim3(static_cast<unsigned>(p.tiles_x), static_cast<unsigned>(p.splits));
  spec.launch.block = dim3(kBlock);
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
