// Conv2d regions as an implicit GEMM (kernels/conv/implicit_gemm.cuh) over the GEMM main loops
// of kernels/gemm/simt_gemm.cuh, then the region's epilogue over the output seen as the matrix
// [N*P*Q, K]. Per group: M = N*P*Q, N = K/groups, reduction R*S*C/groups; a tile is 128 output
// pixels x 128 output channels of one group, one tile at a time per CTA in a persistent loop.
//
// The generated source is the kernel's Cfg, the region's epilogue functor (epilogue_functor.hpp)
// and the instantiation of conv_kernel. Compile-time: dtypes, the epilogue, the vector width of the x reads (channels contiguous, the
// group's channel count a multiple of it), whether the filters are contiguous over (r, s, c)
// (then they are a plain strided matrix). Run-time: every size, stride, padding and dilation.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/codegen_gemm.hpp"
#include "engines/jit/epilogue_functor.hpp"
#include "engines/jit/expr.hpp"
#include "conv/conv_abi.h"
#include "sinter/error.hpp"

namespace sinter::jit {

RegionKernels build_conv(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  using Src = PointerSlot::Source;
  const Node& cv = g.node(r.anchor);
  if (cv.op != OpKind::conv2d || !r.prologue.empty()) {
    throw Error(ErrorCode::internal, "build_conv: region " + std::to_string(r.id) + " is not a plain conv region");
  }
  const auto& at = std::get<Conv2dAttrs>(cv.attrs);
  const TensorInfo& tx = g.tensor(cv.inputs[0]);
  const TensorInfo& tw = g.tensor(cv.inputs[1]);
  const TensorInfo& ty = g.tensor(cv.outputs[0]);

  SinterConvShape s{};
  s.n = tx.dims[0], s.h = tx.dims[1], s.w = tx.dims[2], s.c = tx.dims[3];
  s.k = tw.dims[0], s.r = tw.dims[1], s.s = tw.dims[2];
  s.p = ty.dims[1], s.q = ty.dims[2];
  s.groups = at.groups;
  s.cg = s.c / at.groups;
  s.kg = s.k / at.groups;
  s.m = s.n * s.p * s.q;
  s.kdim = s.r * s.s * s.cg;
  for (int i = 0; i < 4; ++i) {
    s.x_stride[i] = tx.strides[i];
    s.w_stride[i] = tw.strides[i];
  }
  // Index math runs in 32 bits (fast division by P, Q, C/groups, S); the padded extents bound
  // every input coordinate the kernel forms.
  const int64_t limit = int64_t{1} << 30;
  const int64_t padded_h = s.h + at.pad_begin[0] + at.pad_end[0] + at.stride[0] + at.dilation[0];
  const int64_t padded_w = s.w + at.pad_begin[1] + at.pad_end[1] + at.stride[1] + at.dilation[1];
  if (s.m >= limit || s.kdim >= limit || padded_h >= limit || padded_w >= limit ||
      s.kg >= limit || s.groups >= limit) {
    throw Error(ErrorCode::unsupported, "conv2d '" + cv.name + "': sizes past 2^30 (N*P*Q=" +
                                            std::to_string(s.m) + ", R*S*C/groups=" + std::to_string(s.kdim) + ")");
  }
  s.stride_h = static_cast<int>(at.stride[0]), s.stride_w = static_cast<int>(at.stride[1]);
  s.pad_h = static_cast<int>(at.pad_begin[0]), s.pad_w = static_cast<int>(at.pad_begin[1]);
  s.dil_h = static_cast<int>(at.dilation[0]), s.dil_w = static_cast<int>(at.dilation[1]);
  s.div_q = make_fast_divmod(static_cast<uint32_t>(s.q));
  s.div_p = make_fast_divmod(static_cast<uint32_t>(s.p));
  s.div_cg = make_fast_divmod(static_cast<uint32_t>(s.cg));
  s.div_s = make_fast_divmod(static_cast<uint32_t>(s.s));

  const GemmPath path = gemm_path(tx.dtype);
  const int max_vec = gemm_max_vec(path, tx.dtype);
  // x: vectors along channels, inside one group and one filter tap, starting aligned.
  int xvec = 1;
  if (s.x_stride[3] == 1) {
    for (xvec = max_vec; xvec > 1; xvec /= 2) {
      bool ok = s.cg % xvec == 0;
      for (int i = 0; i < 3; ++i) ok = ok && (tx.dims[i] == 1 || s.x_stride[i] % xvec == 0);
      if (ok) break;
    }
  }
  // w: a plain matrix [K, R*S*C/groups] when (r, s, c) are contiguous (dims of size 1 aside).
  const bool w_plain = (s.cg == 1 || s.w_stride[3] == 1) && (s.s == 1 || s.w_stride[2] == s.cg) &&
                       (s.r == 1 || s.w_stride[1] == s.s * s.cg);
  OperandAccess wacc;
  // A group's filters start kg rows after the previous group's: like a batch stride, that offset
  // must keep vectors aligned even when each group has a single output channel (depthwise).
  const Dims group_offset = s.groups > 1 ? Dims{s.kg * s.w_stride[0]} : Dims{};
  if (w_plain) wacc = classify_operand(s.kg, s.w_stride[0], s.kdim, 1, group_offset, max_vec);
  if (!wacc.along_k) wacc = OperandAccess{};  // a reduction of one element: scalars along k

  RegionKernels rk;
  KernelSpec spec;
  AnchorEpilogue epi(g, r, cv.outputs[0]);
  ArgsWriter w(spec);
  const std::string sx = storage_type(tx.dtype), sw = storage_type(tw.dtype);
  const int es = static_cast<int>(dtype_size(tx.dtype));
  w.field("SinterConvShape", "shape", s);
  w.pointer("const " + sx + "*", "x", Src::input, region_input_index(r, cv.inputs[0]), xvec * es);
  w.pointer("const " + sw + "*", "w", Src::input, region_input_index(r, cv.inputs[1]), wacc.vec * es);
  epi.declare(w);
  std::ostringstream src;
  auto b = [](bool v) { return v ? "true" : "false"; };
  src << "// conv2d region " << r.id << " of graph '" << g.name() << "'\n"
      << kernel_includes({"conv/conv_abi.h", "conv/implicit_gemm.cuh"}) << gemm_constant_checks()
      << "struct Cfg {\n"
      << "  typedef " << sx << " TX;\n"
      << "  typedef " << sw << " TW;\n"
      << "  static constexpr bool kFfma = " << b(path == GemmPath::ffma) << ", kBf16 = " << b(path == GemmPath::mma_bf16)
      << ", kWPlain = " << b(w_plain) << ";\n"
      << "  static constexpr int kXVec = " << xvec << ", kWVec = " << wacc.vec << ";\n"
      << "};\n"
      << "static_assert((Cfg::kFfma ? kGemmBKFfma : kGemmBKMma) == " << gemm_bk(path)
      << ", \"the host's k tile is stale\");\n\n"
      << w.finish() << "\n"
      << gemm_tile_epilogue(epi, GemmTileScope{}) << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(kGemmThreads, 2) sinter_region(const __grid_constant__ Args a) {\n"
      << "  conv_kernel<Cfg, Epilogue>(a);\n"
      << "}\n";
  spec.source = src.str();
  spec.description = "conv2d implicit-gemm " + gemm_path_name(path) + " 128x128x" + std::to_string(gemm_bk(path)) +
                     " x:c-" + (xvec > 1 ? "vec" + std::to_string(xvec) : std::string("scalar")) + " w:" +
                     (w_plain ? access_name(wacc, "k") : std::string("strided")) +
                     (epi.index64() ? " idx64" : "") + epi.describe();
  const int64_t tiles = s.groups * ((s.m + 127) / 128) * ((s.kg + 127) / 128);
  spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(tiles, 1, gemm_max_grid(dev))));
  spec.launch.block = dim3(kGemmThreadsHost);
  spec.launch.dynamic_shared_memory = kGemmSmemBytesHost;
  rk.workspace_bytes = epi.workspace_bytes();
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
