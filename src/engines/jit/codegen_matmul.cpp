// Matmul regions: a [..., M, K] x b [..., K, N] with broadcast batch dims, then the region's
// epilogue, over the 128x128 tile main loops of kernels/gemm/simt_gemm.cuh (tensor cores for
// 16-bit and fp8 inputs, FFMA for f32). One CTA computes a tile at a time in a persistent loop.
//
// Compile-time: dtypes, the epilogue, each operand's access class (which direction is contiguous
// and the vector width its strides allow) and the 64-bit-index class. Run-time: every size and
// stride (SinterGemmShape), so one binary serves every shape of the same class.
#include <algorithm>
#include <sstream>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/codegen_gemm.hpp"
#include "engines/jit/expr.hpp"
#include "gemm/gemm_abi.h"
#include "sinter/error.hpp"

namespace sinter::jit {

RegionKernels build_matmul_generic(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  using Src = PointerSlot::Source;
  const Node& mm = g.node(r.anchor);
  if (mm.op != OpKind::matmul || !r.prologue.empty()) {
    throw Error(ErrorCode::internal, "build_matmul: region " + std::to_string(r.id) + " is not a plain matmul region");
  }
  const TensorInfo& ta = g.tensor(mm.inputs[0]);
  const TensorInfo& tb = g.tensor(mm.inputs[1]);
  const TensorInfo& ty = g.tensor(mm.outputs[0]);
  const size_t ra = ta.dims.size(), rb = tb.dims.size();
  const int64_t m = ta.dims[ra - 2], k = ta.dims[ra - 1], n = tb.dims[rb - 1];
  const Dims batch(ty.dims.begin(), ty.dims.end() - 2);
  const Dims a_batch = broadcast_strides(Dims(ta.dims.begin(), ta.dims.end() - 2),
                                         Dims(ta.strides.begin(), ta.strides.end() - 2), batch);
  const Dims b_batch = broadcast_strides(Dims(tb.dims.begin(), tb.dims.end() - 2),
                                         Dims(tb.strides.begin(), tb.strides.end() - 2), batch);
  const CollapsedShape bc = collapse(batch, {a_batch, b_batch});
  for (int64_t v : {m, n, k, bc.numel}) {
    if (v >= (int64_t{1} << 31)) {
      throw Error(ErrorCode::unsupported, "matmul '" + mm.name + "': a size of 2^31 or more (M=" +
                                              std::to_string(m) + ", N=" + std::to_string(n) + ", K=" +
                                              std::to_string(k) + ", batch=" + std::to_string(bc.numel) + ")");
    }
  }
  const GemmPath path = gemm_path(ta.dtype);
  const int max_vec = gemm_max_vec(path, ta.dtype);
  // a: rows are M (stride a[-2]), k stride a[-1]; b: rows are N (stride b[-1]), k stride b[-2]
  const OperandAccess acc_a = classify_operand(m, ta.strides[ra - 2], k, ta.strides[ra - 1], bc.strides[0], max_vec);
  const OperandAccess acc_b = classify_operand(n, tb.strides[rb - 1], k, tb.strides[rb - 2], bc.strides[1], max_vec);

  SinterGemmShape shape{};
  shape.m = m;
  shape.n = n;
  shape.k = k;
  shape.batches = bc.numel;
  shape.a_stride_m = ta.strides[ra - 2];
  shape.a_stride_k = ta.strides[ra - 1];
  shape.b_stride_k = tb.strides[rb - 2];
  shape.b_stride_n = tb.strides[rb - 1];
  shape.batch = make_iter_shape(bc);
  shape.a_batch = make_view(bc.strides[0]);
  shape.b_batch = make_view(bc.strides[1]);

  RegionKernels rk;
  KernelSpec spec;
  AnchorEpilogue epi(g, r, mm.outputs[0]);
  ArgsWriter w(spec);
  const std::string sa = storage_type(ta.dtype), sb = storage_type(tb.dtype);
  const int es = static_cast<int>(dtype_size(ta.dtype));
  w.field("SinterGemmShape", "shape", shape);
  w.pointer("const " + sa + "*", "a", Src::input, region_input_index(r, mm.inputs[0]), acc_a.vec * es);
  w.pointer("const " + sb + "*", "b", Src::input, region_input_index(r, mm.inputs[1]), acc_b.vec * es);
  epi.declare(w);
  const std::string args = w.finish();

  std::ostringstream src;
  src << "// matmul region " << r.id << " of graph '" << g.name() << "'\n"
      << kernel_includes({"gemm/gemm_abi.h", "gemm/simt_gemm.cuh"})
      << gemm_constant_checks()
      << "constexpr bool kIndex64 = " << (epi.index64() ? "true" : "false") << ";\n"
      << "constexpr int kBK = " << gemm_bk(path) << ";\n"
      << "typedef StridedLoader<" << sa << ", kGemmBM, kBK, kGemmThreads, " << (acc_a.along_k ? "true" : "false")
      << ", " << acc_a.vec << "> LoaderA;\n"
      << "typedef StridedLoader<" << sb << ", kGemmBN, kBK, kGemmThreads, " << (acc_b.along_k ? "true" : "false")
      << ", " << acc_b.vec << "> LoaderB;\n\n"
      << args << "\n";
  // out: [batches, M, N]; one tile = 128 rows of one batch x 128 columns
  src << "__device__ __forceinline__ void matmul_tile(const Args& a, i64 tile, char* smem" << epi.global_params() << ") {\n"
      << "  const SinterGemmShape& s = a.shape;\n"
      << "  const i64 tiles_n = (s.n + kGemmBN - 1) / kGemmBN, tiles_m = (s.m + kGemmBM - 1) / kGemmBM;\n"
      << "  const i64 nt = tile % tiles_n, rest = tile / tiles_n;\n"
      << "  const i64 mt = rest % tiles_m, bi = rest / tiles_m;\n"
      << "  const int m0 = static_cast<int>(mt * kGemmBM), n0 = static_cast<int>(nt * kGemmBN);\n"
      << "  LoaderA la(a.a + offset_of<false>(s.batch, s.a_batch, bi) + m0 * s.a_stride_m, s.a_stride_m,\n"
      << "             s.a_stride_k, static_cast<int>(s.m - m0), static_cast<int>(s.k));\n"
      << "  LoaderB lb(a.b + offset_of<false>(s.batch, s.b_batch, bi) + n0 * s.b_stride_n, s.b_stride_n,\n"
      << "             s.b_stride_k, static_cast<int>(s.n - n0), static_cast<int>(s.k));\n"
      << "  " << gemm_mainloop_call(path, "static_cast<int>(s.k)") << "\n"
      << epi.gemm_tile("bi * s.m + m0", "min(kGemmBM, static_cast<int>(s.m - m0))", "static_cast<i64>(n0)",
                       "min(kGemmBN, static_cast<int>(s.n - n0))")
      << "  __syncthreads();  // the next tile's operand stages overwrite the C tile\n}\n\n";
  src << "extern \"C\" __global__ void __launch_bounds__(kGemmThreads, 2) sinter_region(const __grid_constant__ Args a) {\n  sinter_kernel_begin();\n"
      << "  extern __shared__ float4 smem_[];  // float4: 16-byte aligned stages\n"
      << epi.kernel_begin("  ")
      << "  const i64 tiles = a.shape.batches * ((a.shape.m + kGemmBM - 1) / kGemmBM) * ((a.shape.n + kGemmBN - 1) / kGemmBN);\n"
      << "  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x)\n"
      << "    matmul_tile(a, t, reinterpret_cast<char*>(smem_)" << epi.global_args() << ");\n"
      << epi.kernel_end("  ") << "}\n";

  spec.source = src.str();
  spec.description = "matmul " + gemm_path_name(path) + " 128x128x" + std::to_string(gemm_bk(path)) +
                     " a:" + access_name(acc_a, "m") + " b:" + access_name(acc_b, "n") +
                     (epi.index64() ? " idx64" : "") + epi.describe();
  const int64_t tiles = bc.numel * ((m + 127) / 128) * ((n + 127) / 128);
  spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(tiles, 1, gemm_max_grid(dev))));
  spec.launch.block = dim3(kGemmThreadsHost);
  spec.launch.dynamic_shared_memory = kGemmSmemBytesHost;
  rk.workspace_bytes = epi.workspace_bytes();
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
