// Layout regions: permute, slice, concat (one copy per input), reshapes that cannot alias (their
// input is a strided view) and layout chains (slice/reshape/permute runs ending in a copy, read
// through one composed view) become strided copies: kernels/layout/layout.cuh's CopyKernel over
// the parts' word type and structures; this file computes the parts, their word size and grid.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_common.hpp"
#include "engines/jit/expr.hpp"
#include "fuse/layout_view.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

constexpr int64_t kCopyTile = 1024;  // kernels/layout/layout.cuh's kCopyTile: elements (words) per tile
// Parts per copy kernel: each part's CopyArgs is ~320 bytes of kernel parameters; 8 stay well
// under the 4 KB classic parameter limit. Longer concats launch several kernels.
constexpr size_t kMaxCopyParts = 8;

// One strided copy of a layout kernel: `shape` row-major; strides in elements over it.
struct CopyPart {
  Dims shape;
  Dims in_strides;
  int in_index = 0;
  int64_t in_offset = 0;
  Dims out_strides;
  int64_t out_offset = 0;
};

// The widest word (16, 8 or 4 bytes, or the element itself) that every part can move whole:
// innermost rows contiguous on both sides, and every row start, outer stride and offset a
// multiple of the word (the bound pointers are then required to be aligned to it).
int64_t copy_word_elements(const std::vector<CollapsedShape>& parts, const std::vector<CopyPart>& raw,
                           int64_t elem_bytes) {
  for (int64_t word : {int64_t{16}, int64_t{8}, int64_t{4}}) {
    const int64_t n = word / elem_bytes;
    if (n <= 1) break;
    bool ok = true;
    for (size_t p = 0; p < parts.size() && ok; ++p) {
      const CollapsedShape& c = parts[p];
      ok = c.sizes[0] % n == 0 && raw[p].in_offset % n == 0 && raw[p].out_offset % n == 0;
      for (const Dims& st : c.strides) {
        if (!ok) break;
        ok = st[0] == 1;
        for (size_t d = 1; d < st.size() && ok; ++d) ok = st[d] % n == 0;
      }
    }
    if (ok) return n;
  }
  return 1;
}

// One kernel for all parts (a concat's inputs): tiles of the parts in order, grid-stride. With a
// CTA a tile, the tasks of each part read only that part's input (a task box per input stored in
// the part's order; the others read whole), so inside a megakernel a concat's copy of the cache it
// extends waits for nothing while the copy of the new rows waits for their producer.
KernelSpec copy_kernel(DType dtype, const std::vector<CopyPart>& raw, const std::string& what,
                       const cuda::DeviceProperties& dev) {
  using Src = PointerSlot::Source;
  const int64_t es = dtype_size(dtype);
  std::vector<CollapsedShape> parts;
  for (const CopyPart& p : raw) parts.push_back(collapse(p.shape, {p.in_strides, p.out_strides}));
  const int64_t n = copy_word_elements(parts, raw, es);
  const int64_t word_bytes = n * es;
  const std::string t = word_bytes == 16 ? "uint4" : word_bytes == 8 ? "uint2" : word_bytes == 4 ? "unsigned int"
                                                                                               : storage_type(dtype);
  int64_t total_tiles = 0;
  std::string part_types;
  std::vector<int64_t> first_tile;  // by part
  for (CollapsedShape& c : parts) {
    first_tile.push_back(total_tiles);
    c.sizes[0] /= n;
    c.numel /= n;
    for (Dims& st : c.strides) {
      for (size_t d = 1; d < st.size(); ++d) st[d] /= n;
    }
    const bool index64 = c.numel >= (int64_t{1} << 31);
    part_types += ", CopyPart<" + std::string(index64 ? "true" : "false") + ", " + std::to_string(c.sizes.size()) + ">";
    total_tiles += (c.numel + kCopyTile - 1) / kCopyTile;
  }
  std::ostringstream src;
  src << "// " << what << "\n#include \"layout/layout.cuh\"\n"
      << "using Copy = CopyKernel<" << t << part_types << ">;\n"
      << "extern \"C\" __global__ void __launch_bounds__(kCopyBlock) sinter_region(const __grid_constant__ Copy::Args a) {\n"
      << "  sinter_kernel_begin();\n  Copy::run(a);\n}\n";
  KernelSpec spec;
  spec.source = src.str();
  spec.description = "copy (" + what + ")" + (n > 1 ? " " + std::to_string(word_bytes) + "-byte words" : "");
  for (size_t k = 0; k < parts.size(); ++k) {
    spec.args.add(make_iter_shape(parts[k]));
    spec.pointers.push_back({Src::input, raw[k].in_index, 0, spec.args.add_pointer(nullptr),
                             static_cast<int>(word_bytes), raw[k].in_offset * es});
    spec.args.add(make_view(parts[k].strides[0]));
    spec.pointers.push_back({Src::output, 0, 0, spec.args.add_pointer(nullptr), static_cast<int>(word_bytes),
                             raw[k].out_offset * es});
    spec.args.add(make_view(parts[k].strides[1]));
  }
  spec.args.finish();
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 132;
  spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(total_tiles, 1, sms * 16)));
  spec.launch.block = dim3(256);
  if (total_tiles > 1 && static_cast<int64_t>(spec.launch.grid.x) == total_tiles) {
    // task t copies tile t: part k's tiles [first_tile[k], ...) each read kCopyTile words of its
    // input in the part's order, the input as a matrix of one row a tile
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k].in_offset != 0 || raw[k].in_strides != contiguous_strides(raw[k].shape)) continue;
      // an input copied by two parts (concat(x, x)) is read by both parts' tasks: no box
      const auto same_input = [&](const CopyPart& o) { return o.in_index == raw[k].in_index; };
      if (std::count_if(raw.begin(), raw.end(), same_input) > 1) continue;
      TaskBox b;
      b.slot = raw[k].in_index;
      b.elem_bytes = static_cast<int>(es);
      b.cols = kCopyTile * n;
      b.rows = (num_elements(raw[k].shape) + b.cols - 1) / b.cols;
      b.pitch = b.cols;
      b.digits = {{total_tiles, 1, 0}};
      b.box_rows = 1, b.box_cols = b.cols;
      b.row0 = -first_tile[k];
      spec.task_boxes.push_back(b);
    }
  }
  return spec;
}

// A gather: the output iterated as S = x's axes before the axis, the flattened indices (K), x's
// axes after it (kernels/layout/gather.cuh), in 16/8/4-byte words where rows allow.
KernelSpec gather_kernel(const Graph& g, const fuse::Region& r, const Node& n, const cuda::DeviceProperties& dev) {
  using Src = PointerSlot::Source;
  const TensorInfo& x = g.tensor(n.inputs[0]);
  const TensorInfo& idx = g.tensor(n.inputs[1]);
  const TensorInfo& out = g.tensor(n.outputs[0]);
  const auto axis = static_cast<size_t>(std::get<GatherAttrs>(n.attrs).axis);
  const size_t ri = idx.dims.size();
  const int64_t k = num_elements(idx.dims);
  // the output is row-major (every tensor a node makes is): its index axes read as one K axis
  if (out.strides != contiguous_strides(out.dims)) {
    throw Error(ErrorCode::internal, "gather '" + n.name + "': its output is not row-major");
  }
  Dims shape(x.dims.begin(), x.dims.begin() + static_cast<int64_t>(axis)), xs, ks, os;
  shape.push_back(k);
  shape.insert(shape.end(), x.dims.begin() + static_cast<int64_t>(axis) + 1, x.dims.end());
  for (size_t d = 0; d < x.dims.size(); ++d) {
    xs.push_back(d == axis ? 0 : x.strides[d]);
    ks.push_back(d == axis ? 1 : 0);
    const size_t od = d < axis ? d : d == axis ? axis + ri - 1 : d + ri - 1;  // the output axis it maps to
    os.push_back(ri == 0 && d == axis ? 0 : out.strides[od]);
  }
  CollapsedShape c = collapse(shape, {xs, ks, os});
  const int64_t es = dtype_size(x.dtype);
  int64_t axis_stride = x.strides[axis];
  // words: K is not innermost, x's and the output's rows contiguous, every stride a multiple
  int64_t word = 1;
  for (int64_t bytes : {int64_t{16}, int64_t{8}, int64_t{4}}) {
    const int64_t w = bytes / es;
    if (w <= 1) break;
    bool ok = c.strides[1][0] == 0 && c.strides[0][0] == 1 && c.strides[2][0] == 1 && c.sizes[0] % w == 0 &&
              axis_stride % w == 0;
    for (size_t d = 1; ok && d < c.sizes.size(); ++d) ok = c.strides[0][d] % w == 0 && c.strides[2][d] % w == 0;
    if (ok) {
      word = w;
      break;
    }
  }
  if (word > 1) {
    c.sizes[0] /= word;
    c.numel /= word;
    for (size_t d = 1; d < c.sizes.size(); ++d) c.strides[0][d] /= word, c.strides[2][d] /= word;
    axis_stride /= word;
  }
  const CollapsedShape ic = collapse(idx.dims, {idx.strides});
  const int64_t word_bytes = word * es;
  const std::string t = word_bytes == 16 ? "uint4" : word_bytes == 8 ? "uint2" : word_bytes == 4 ? "unsigned int"
                                                                                               : storage_type(x.dtype);
  const bool index64 = c.numel >= (int64_t{1} << 31) || k >= (int64_t{1} << 31);
  std::ostringstream src;
  src << "// gather along axis " << axis << "\n#include \"layout/gather.cuh\"\n"
      << "using Gather = GatherKernel<" << t << ", " << storage_type(idx.dtype) << ", " << (index64 ? "true" : "false")
      << ", " << c.sizes.size() << ", " << ic.sizes.size() << ">;\n"
      << "extern \"C\" __global__ void __launch_bounds__(kGatherBlock) sinter_region(const __grid_constant__ Gather::Args a) {\n"
      << "  sinter_kernel_begin();\n  Gather::run(a);\n}\n";
  KernelSpec spec;
  spec.source = src.str();
  spec.description = "gather along axis " + std::to_string(axis) + " of " + dims_to_string(x.dims) + ", " +
                     std::to_string(k) + " indices" + (word > 1 ? ", " + std::to_string(word_bytes) + "-byte words" : "");
  spec.args.add(make_iter_shape(c));
  spec.pointers.push_back({Src::input, region_input_index(r, n.inputs[0]), 0, spec.args.add_pointer(nullptr),
                           static_cast<int>(word_bytes), 0});
  spec.args.add(make_view(c.strides[0]));
  spec.args.add(make_view(c.strides[1]));
  spec.pointers.push_back({Src::output, 0, 0, spec.args.add_pointer(nullptr), static_cast<int>(word_bytes), 0});
  spec.args.add(make_view(c.strides[2]));
  spec.pointers.push_back({Src::input, region_input_index(r, n.inputs[1]), 0, spec.args.add_pointer(nullptr),
                           static_cast<int>(dtype_size(idx.dtype)), 0});
  spec.args.add(make_iter_shape(ic));
  spec.args.add(make_view(ic.strides[0]));
  spec.args.add(static_cast<long long>(x.dims[axis]));
  spec.args.add(static_cast<long long>(axis_stride));
  spec.args.finish();
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 132;
  constexpr int64_t kGatherTile = 256 * 4;  // kernels/layout/gather.cuh
  spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>((c.numel + kGatherTile - 1) / kGatherTile, 1, sms * 16)));
  spec.launch.block = dim3(256);
  return spec;
}

}  // namespace

RegionKernels build_layout(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  const Node& n = g.node(r.anchor);
  const TensorInfo& out = g.tensor(n.outputs[0]);
  const Dims out_contig = contiguous_strides(out.dims);
  RegionKernels rk;
  if (n.op == OpKind::gather) {
    rk.kernels.push_back(gather_kernel(g, r, n, dev));
    return rk;
  }
  if (!r.prologue.empty()) {
    // a layout chain (fuse/layout_view.hpp): one copy through the composed view of its first input
    std::vector<NodeId> chain = r.prologue;
    chain.push_back(r.anchor);
    const std::optional<fuse::StridedView> v = fuse::compose_layout_chain(g, chain);
    if (!v) throw Error(ErrorCode::internal, "build_layout: region " + std::to_string(r.id) + "'s chain is not a view");
    const TensorInfo& in = g.tensor(g.node(chain.front()).inputs[0]);
    std::string ops;
    for (NodeId c : chain) ops += (ops.empty() ? "" : "+") + std::string(to_string(g.node(c).op));
    rk.kernels.push_back(copy_kernel(in.dtype, {{out.dims, v->strides, 0, v->offset, out_contig, 0}},
                                     "layout chain " + ops, dev));
    return rk;
  }
  switch (n.op) {
    case OpKind::reshape: {
      const TensorInfo& in = g.tensor(n.inputs[0]);
      rk.kernels.push_back(
          copy_kernel(in.dtype, {{in.dims, in.strides, 0, 0, contiguous_strides(in.dims), 0}}, "reshape of a view", dev));
      break;
    }
    case OpKind::permute: {
      const TensorInfo& in = g.tensor(n.inputs[0]);
      const auto& perm = std::get<PermuteAttrs>(n.attrs).perm;
      Dims in_strides;
      for (int64_t p : perm) in_strides.push_back(in.strides[p]);
      rk.kernels.push_back(
          copy_kernel(in.dtype, {{out.dims, in_strides, 0, 0, out_contig, 0}}, "permute " + dims_to_string(perm), dev));
      break;
    }
    case OpKind::slice: {
      const TensorInfo& in = g.tensor(n.inputs[0]);
      const auto& at = std::get<SliceAttrs>(n.attrs);
      Dims in_strides;
      int64_t offset = 0;
      for (size_t i = 0; i < in.dims.size(); ++i) {
        in_strides.push_back(in.strides[i] * at.steps[i]);
        offset += at.starts[i] * in.strides[i];
      }
      rk.kernels.push_back(copy_kernel(in.dtype, {{out.dims, in_strides, 0, offset, out_contig, 0}}, "slice", dev));
      break;
    }
    case OpKind::concat: {
      const int64_t axis = std::get<ConcatAttrs>(n.attrs).axis;
      int64_t at = 0;
      std::vector<CopyPart> parts;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const TensorInfo& in = g.tensor(n.inputs[k]);
        parts.push_back({in.dims, in.strides, region_input_index(r, n.inputs[k]), 0, out_contig, at * out_contig[axis]});
        at += in.dims[axis];
      }
      for (size_t first = 0; first < parts.size(); first += kMaxCopyParts) {
        const size_t last = std::min(parts.size(), first + kMaxCopyParts);
        rk.kernels.push_back(copy_kernel(out.dtype, {parts.begin() + first, parts.begin() + last},
                                         "concat parts " + std::to_string(first) + ".." + std::to_string(last - 1), dev));
      }
      break;
    }
    default:
      throw Error(ErrorCode::internal, "build_layout: '" + n.name + "' is not a layout op");
  }
  return rk;
}

}  // namespace sinter::jit
