// Matmul regions on the generic tile (kernels/gemm/simt_matmul.cuh): a [..., M, K] x b [..., K, N]
// with broadcast batch dims, then the region's epilogue, over the 128x128 tile main loops of
// kernels/gemm/simt_gemm.cuh (tensor cores for 16-bit and fp8 inputs, FFMA for f32). One CTA
// computes a tile at a time in a persistent loop. The kernel is a device template; this file
// writes its config (the operands' loaders), the Args struct and the epilogue functor.
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
namespace {

// What one CTA reads and writes when each 128x128 tile of [batches][tiles_m][tiles_n] (N fastest)
// has a CTA of its own: the tile of every contiguous [batches, M, N] output and input (a fused
// residual), and the tile's rows of A when A is contiguous [batches, M, K]. The megakernel's
// consumers of a tile (a collective's slice, a row block) then wait for the tiles they read only.
std::vector<TaskBox> simt_matmul_task_boxes(const Graph& g, const fuse::Region& r, TensorId a, TensorId b,
                                            int64_t batches, int64_t m, int64_t n, int64_t k) {
  const int64_t tiles_m = (m + 127) / 128, tiles_n = (n + 127) / 128;
  auto fits = [&](TensorId t, int64_t cols) {
    const TensorInfo& info = g.tensor(t);
    return info.dims.size() >= 2 && info.dims.back() == cols && info.dims[info.dims.size() - 2] == m &&
           num_elements(info.dims) == batches * m * cols && info.strides == contiguous_strides(info.dims);
  };
  auto box = [&](TensorId t, bool write, int slot, int64_t cols, int64_t box_cols, int64_t col_step) {
    TaskBox b;
    b.write = write;
    b.slot = slot;
    b.elem_bytes = static_cast<int>(dtype_size(g.tensor(t).dtype));
    b.rows = batches * m, b.cols = cols, b.pitch = cols;
    b.digits = {{tiles_n, 0, col_step}, {tiles_m, 128, 0}, {batches, m, 0}};
    b.box_rows = 128, b.box_cols = box_cols;
    return b;
  };
  std::vector<TaskBox> boxes;
  for (size_t o = 0; o < r.outputs.size(); ++o) {
    if (fits(r.outputs[o], n)) boxes.push_back(box(r.outputs[o], true, static_cast<int>(o), n, 128, 128));
  }
  // B is read whole by every tile (all K rows of its column block): no box, whatever its shape
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    if (r.inputs[i] == b) continue;
    if (r.inputs[i] == a && fits(a, k)) {
      boxes.push_back(box(a, false, static_cast<int>(i), k, k, 0));
    } else if (r.inputs[i] != a && fits(r.inputs[i], n)) {
      boxes.push_back(box(r.inputs[i], false, static_cast<int>(i), n, 128, 128));
    }
  }
  return boxes;
}

}  // namespace

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
      << kernel_includes({"gemm/gemm_abi.h", "gemm/simt_matmul.cuh"}) << gemm_constant_checks()
      << "constexpr bool kIndex64 = " << (epi.index64() ? "true" : "false") << ";\n"
      << "struct Cfg {\n"
      << "  static constexpr SimtPath kPath = SimtPath::"
      << (path == GemmPath::ffma ? "ffma" : path == GemmPath::mma_bf16 ? "mma_bf16" : "mma_f16") << ";\n"
      << "  static constexpr int kBK = " << gemm_bk(path) << ";\n"
      << "  using LoaderA = StridedLoader<" << sa << ", kGemmBM, kBK, kGemmThreads, " << (acc_a.along_k ? "true" : "false")
      << ", " << acc_a.vec << ">;\n"
      << "  using LoaderB = StridedLoader<" << sb << ", kGemmBN, kBK, kGemmThreads, " << (acc_b.along_k ? "true" : "false")
      << ", " << acc_b.vec << ">;\n"
      << "};\n\n"
      << args << "\n"
      << "// the region's epilogue on the C tile (simt_matmul.cuh's Epi)\n"
      << "struct Epilogue {\n"
      << epi.kernel_begin("  ") << "\n"
      << "  __device__ __forceinline__ void tile(const Args& a, i64 row0, int rows, i64 col0, int cols, char* smem) {\n"
      << epi.gemm_tile("row0", "rows", "col0", "cols") << "  }\n\n"
      << "  // exit reductions: per CTA, then the last CTA finalizes\n"
      << "  __device__ __forceinline__ void finish(const Args& a) {\n"
      << "    (void)a;\n"
      << epi.kernel_end("    ") << "  }\n"
      << "};\n\n"
      << "// out: [batches, M, N]\n"
      << "extern \"C\" __global__ void __launch_bounds__(kGemmThreads, 2) sinter_region(const __grid_constant__ Args a) {\n"
      << "  simt_matmul<Cfg, Epilogue>(a);\n"
      << "}\n";

  spec.source = src.str();
  spec.description = "matmul " + gemm_path_name(path) + " 128x128x" + std::to_string(gemm_bk(path)) +
                     " a:" + access_name(acc_a, "m") + " b:" + access_name(acc_b, "n") +
                     (epi.index64() ? " idx64" : "") + epi.describe();
  const int64_t tiles = bc.numel * ((m + 127) / 128) * ((n + 127) / 128);
  spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(tiles, 1, gemm_max_grid(dev))));
  // exit reductions finish on the last CTA: their outputs have no box and are waited for whole;
  // an epilogue of pointwise nodes keeps the tile's indices (a layout node might not)
  bool pointwise_epilogue = true;
  for (NodeId e : r.epilogue) pointwise_epilogue &= is_pointwise(g.node(e).op);
  if (spec.launch.grid.x == tiles && pointwise_epilogue) {
    spec.task_boxes = simt_matmul_task_boxes(g, r, mm.inputs[0], mm.inputs[1], bc.numel, m, n, k);
  }
  spec.launch.block = dim3(kGemmThreadsHost);
  spec.launch.dynamic_shared_memory = kGemmSmemBytesHost;
  rk.workspace_bytes = epi.workspace_bytes();
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
