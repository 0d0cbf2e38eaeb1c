// Layout regions: permute, slice, concat (one copy per input) and reshapes that cannot alias
// (their input is a strided view) become strided copies (kernels/layout/copy.cuh).
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_common.hpp"
#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

constexpr int kBlock = 256;
constexpr int kTile = 4096;

KernelSpec copy_kernel(DType dtype, const Dims& shape, const Dims& in_strides, int in_index,
                       int64_t in_offset, const Dims& out_strides, int64_t out_offset,
                       const std::string& what) {
  using Src = PointerSlot::Source;
  const CollapsedShape cs = collapse(shape, {in_strides, out_strides});
  const bool index64 = cs.numel >= (int64_t{1} << 31);
  const std::string t = storage_type(dtype);
  std::ostringstream src;
  src << "// " << what << "\n" << kernel_includes({"layout/copy.cuh"});
  src << "extern \"C\" __global__ void __launch_bounds__(" << kBlock
      << ") sinter_region(const __grid_constant__ CopyArgs<" << t << "> a) {\n"
      << "  const i64 tiles = (a.shape.numel + " << kTile << " - 1) / " << kTile << ";\n"
      << "  for (i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x)\n"
      << "    copy_tile<" << t << ", " << (index64 ? "true" : "false") << ">(a, tile * " << kTile
      << ", " << kTile << ");\n}\n";
  KernelSpec spec;
  spec.source = src.str();
  spec.description = "copy (" + what + ")";
  const int64_t es = dtype_size(dtype);
  spec.args.add(make_iter_shape(cs));
  spec.pointers.push_back({Src::input, in_index, 0, spec.args.add_pointer(nullptr),
                           static_cast<int>(es), in_offset * es});
  spec.args.add(make_view(cs.strides[0]));
  spec.pointers.push_back({Src::output, 0, 0, spec.args.add_pointer(nullptr), static_cast<int>(es),
                           out_offset * es});
  spec.args.add(make_view(cs.strides[1]));
  spec.args.finish();
  const int64_t tiles = (cs.numel + kTile - 1) / kTile;
  spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(tiles, 1, 132 * 16)));
  spec.launch.block = dim3(kBlock);
  return spec;
}

}  // namespace

RegionKernels build_layout(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties&) {
  const Node& n = g.node(r.anchor);
  const TensorInfo& out = g.tensor(n.outputs[0]);
  const Dims out_contig = contiguous_strides(out.dims);
  RegionKernels rk;
  switch (n.op) {
    case OpKind::reshape: {
      const TensorInfo& in = g.tensor(n.inputs[0]);
      rk.kernels.push_back(copy_kernel(in.dtype, in.dims, in.strides, 0, 0,
                                       contiguous_strides(in.dims), 0, "reshape of a view"));
      break;
    }
    case OpKind::permute: {
      const TensorInfo& in = g.tensor(n.inputs[0]);
      const auto& perm = std::get<PermuteAttrs>(n.attrs).perm;
      Dims in_strides;
      for (int64_t p : perm) in_strides.push_back(in.strides[p]);
      rk.kernels.push_back(copy_kernel(in.dtype, out.dims, in_strides, 0, 0, out_contig, 0,
                                       "permute " + dims_to_string(perm)));
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
      rk.kernels.push_back(copy_kernel(in.dtype, out.dims, in_strides, 0, offset, out_contig, 0,
                                       "slice"));
      break;
    }
    case OpKind::concat: {
      const int64_t axis = std::get<ConcatAttrs>(n.attrs).axis;
      int64_t at = 0;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const TensorInfo& in = g.tensor(n.inputs[k]);
        const int idx = region_input_index(r, n.inputs[k]);
        rk.kernels.push_back(copy_kernel(in.dtype, in.dims, in.strides, idx, 0, out_contig,
                                         at * out_contig[axis],
                                         "concat part " + std::to_string(k)));
        at += in.dims[axis];
      }
      break;
    }
    default:
      throw Error(ErrorCode::internal, "build_layout: '" + n.name + "' is not a layout op");
  }
  return rk;
}

}  // namespace sinter::jit
