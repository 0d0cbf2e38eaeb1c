// The memory-bound kernel templates (kernels/rowwise, pointwise, reduce, layout) instantiated by
// hand, without their generators: each compiles with NVRTC for sm_90a over a minimal Cfg, Args and
// Fused, and its tile function can be called from a kernel of one's own (the way a persistent
// megakernel will run tiles).
#include <gtest/gtest.h>

#include <string>

#include "cuda/nvrtc.hpp"
#include "engines/jit/codegen_common.hpp"
#include "engines/jit/expr.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

void expect_compiles(const std::string& name, const std::string& source) {
  cuda::CompileOptions opts;
  opts.arch = "sm_90a";
  try {
    const cuda::CompileResult r = cuda::compile_cuda(name + ".cu", source, opts);
    EXPECT_FALSE(r.cubin.empty()) << name;
  } catch (const Error& e) {
    ADD_FAILURE() << name << " does not compile:\n" << e.message() << "\n---- source ----\n" << source;
  }
}

// A row-wise Fused of one input x and one output y = op(x) (* w for norms): the members every
// configuration calls. Staging copies x's rows.
const char* kRowFused = R"(
struct Args {
  i64 rows, cols;
  float inv_cols;
  SinterIterShape lead;
  const bf16* x;
  const bf16* w;
  bf16* y;
  i64 rope_half;
};
struct Fused {
  i64 ro;
  const bf16* staged;
  __device__ __forceinline__ void begin_cta(const Args&) {}
  __device__ __forceinline__ void begin_row(const Args& a, i64 row, const char* stage) {
    ro = row * a.cols;
    staged = reinterpret_cast<const bf16*>(stage);
  }
  template <bool kStore>
  __device__ __forceinline__ void prologue(const Args& a, i64 row, int k, i64 c0, float (&x)[8]) {
    if (staged != nullptr) {
      load_vec_shared(staged + c0, x);
    } else {
      load_vec(a.x + ro + c0, x);
    }
  }
  __device__ __forceinline__ void epilogue(const Args& a, i64 row, int k, i64 c0, const float (&x)[8],
                                           const RowStats& stats) {
    float w[8], y[8];
    load_vec(a.w + c0, w);
    for (int j = 0; j < 8; ++j) y[j] = row_value<CFG>(x[j], stats) * w[j];
    store_vec(a.y + ro + c0, y);
  }
  __device__ __forceinline__ void end_row(const Args&, i64, float*) {}
  __device__ __forceinline__ void end_cta(const Args&, float*) {}
  __device__ __forceinline__ void rope_factors(const Args&, i64, float& cs, float& sn) const { cs = 1.0f; sn = 0.0f; }
  static __device__ __forceinline__ i64 stage_bytes(const Args& a) { return row_buffer_bytes<bf16>(a); }
  static __device__ __forceinline__ void stage_row_bulk(const Args& a, i64 row, char* buffer, u64* bar) {
    mbarrier_arrive_expect_tx(bar, static_cast<u32>(a.cols * 2));
    bulk_copy_g2s(buffer, a.x + row * a.cols, static_cast<u32>(a.cols * 2), bar);
  }
  static __device__ __forceinline__ void stage_row_async(const Args& a, i64 row, char* buffer) {
    for (int k = 0; k < CFG::kItems; ++k) {
      const i64 c0 = row_vector_column<CFG>(k);
      if (row_vector_in_row<CFG>(a, k)) cp_async_vec<bf16, 8>(reinterpret_cast<bf16*>(buffer) + c0, a.x + row * a.cols + c0);
    }
  }
};
)";

std::string row_cfg(const std::string& op, bool registers, const std::string& staging, int stages) {
  return "struct CFG {\n  static constexpr RowOp kOp = RowOp::" + op +
         ";\n  static constexpr int kThreads = 256, kVec = 8, kItems = 2;\n"
         "  static constexpr bool kIndex64 = false, kInRegisters = " + (registers ? "true" : "false") +
         ", kRopeInterleaved = false;\n  static constexpr int kLeadRank = 1, kStages = " + std::to_string(stages) +
         ";\n  static constexpr RowStaging kStaging = RowStaging::" + staging +
         ";\n  static constexpr float kEps = 1e-5f;\n};\n";
}

TEST(JitKernelTemplates, RowwiseCompilesForEveryOpAndStaging) {
  struct Case {
    const char* op;
    bool registers;
    const char* staging;
    int stages;
  };
  for (const Case& c : {Case{"layernorm", true, "bulk", 2}, Case{"layernorm", true, "cp_async", 2},
                        Case{"rmsnorm", true, "none", 0}, Case{"softmax", true, "bulk", 4},
                        Case{"layernorm", false, "none", 0}, Case{"softmax", false, "none", 0},
                        Case{"none", true, "none", 0}}) {
    const std::string name = std::string("rowwise_") + c.op + (c.registers ? "_registers_" : "_streamed_") + c.staging;
    expect_compiles(name, "#include \"rowwise/rowwise.cuh\"\n" + row_cfg(c.op, c.registers, c.staging, c.stages) +
                              kRowFused +
                              "extern \"C\" __global__ void __launch_bounds__(CFG::kThreads) k(const __grid_constant__ "
                              "Args a) {\n  sinter_kernel_begin();\n  rowwise_rows<CFG, Fused>(a);\n}\n");
  }
}

// The tile function alone: one row per call, from a loop of one's own.
TEST(JitKernelTemplates, RowwiseTileFunctionRunsOneRow) {
  expect_compiles("rowwise_tile", "#include \"rowwise/rowwise.cuh\"\n" + row_cfg("rmsnorm", true, "none", 0) + kRowFused +
                                      "extern \"C\" __global__ void k(const __grid_constant__ Args a, const i64* rows, int n) {\n"
                                      "  __shared__ float scratch[33];\n  Fused f;\n  f.begin_cta(a);\n"
                                      "  for (int i = blockIdx.x; i < n; i += gridDim.x) rowwise_row<CFG>(a, rows[i], f, nullptr, scratch);\n"
                                      "  f.end_cta(a, scratch);\n}\n");
}

// A pointwise Fused: y = 2 x over a full operand, with an amax exit.
const char* kPointwise = R"(#include "pointwise/pointwise.cuh"
struct Cfg {
  static constexpr int kVec = 8, kUnroll = 4, kBlock = 256, kRank = 1;
  static constexpr bool kIndex64 = false, kPipelined = PIPELINED;
};
typedef IndexType<Cfg::kIndex64>::type Index;
struct Args {
  SinterIterShape shape;
  const bf16* x;
  bf16* y;
  SinterReduceSlot red;
};
struct Fused {
  static constexpr int kExits = 1;
  struct Loaded { bf16 x[Cfg::kUnroll][Cfg::kVec]; };
  struct Scalars {};
  struct Acc { float amax; };
  static __device__ __forceinline__ Scalars scalars(const Args&) { return Scalars{}; }
  static __device__ __forceinline__ void init(Acc& acc) { acc.amax = reduce_identity<kReduceAmax>(); }
  static __device__ __forceinline__ void load(const Args& a, int u, Index base, Loaded& L) { load_raw(a.x + base, L.x[u]); }
  static __device__ __forceinline__ void compute(const Args& a, int u, Index base, const Loaded& L, const Scalars&, Acc& acc) {
    float x[Cfg::kVec], y[Cfg::kVec];
    convert_vec(L.x[u], x);
    for (int j = 0; j < Cfg::kVec; ++j) {
      y[j] = 2.0f * x[j];
      acc.amax = reduce_combine<kReduceAmax>(acc.amax, reduce_input<kReduceAmax>(y[j]));
    }
    store_vec(a.y + base, y);
  }
  static __device__ __noinline__ void element(const Args& a, i64 i, Acc& acc) {
    const float y = 2.0f * load_one(a.x + i);
    store_one(a.y + i, y);
    acc.amax = reduce_combine<kReduceAmax>(acc.amax, reduce_input<kReduceAmax>(y));
  }
  static __device__ __forceinline__ void finish(const Args& a, Acc& acc, float* scratch) {
    const float v = block_reduce<kReduceAmax>(acc.amax, scratch);
    if (threadIdx.x == 0) accumulate_atomic<kReduceAmax>(a.red.acc, v);
    finalize_exit_reduction<kReduceAmax, bf16>(a.red);
  }
};
extern "C" __global__ void __launch_bounds__(Cfg::kBlock) k(const __grid_constant__ Args a) {
  sinter_kernel_begin();
  pointwise_tiles<Cfg, Fused>(a);
}
extern "C" __global__ void one_tile(const __grid_constant__ Args a, i64 tile, float* amax) {
  Fused::Acc acc;
  Fused::init(acc);
  pointwise_tile<Cfg, Fused>(a, tile, acc);
  if (threadIdx.x == 0) *amax = acc.amax;
}
)";

TEST(JitKernelTemplates, PointwiseCompilesPersistentAndPipelined) {
  for (const char* pipelined : {"false", "true"}) {
    std::string source = kPointwise;
    source.replace(source.find("PIPELINED"), 9, pipelined);
    expect_compiles(std::string("pointwise_pipelined_") + pipelined, source);
  }
}

TEST(JitKernelTemplates, ReductionTileCompilesForRowAndColumnTiles) {
  for (const char* row_tile : {"true", "false"}) {
    const std::string source = std::string("#include \"reduce/reduction.cuh\"\nstruct Cfg {\n"
                                           "  typedef bf16 In;\n  typedef float Out;\n  typedef float Acc;\n"
                                           "  static constexpr bool kRowTile = ") +
                               row_tile +
                               ";\n  static constexpr int kKind = kReduceSum, kVec = 8, kGroup = 32, kOutLanes = 8, kSubs = 2;\n"
                               "  static constexpr int kBlock = 256, kUnroll = 4;\n"
                               "  static constexpr bool kIndex64 = false, kOuter = true;\n};\n"
                               "struct Args {\n  const bf16* x;\n  float* out;\n  float* acc;\n  u32* counters;\n"
                               "  SinterIterShape kept;\n  SinterStridedView kept_x;\n  SinterIterShape outer;\n"
                               "  SinterStridedView outer_x;\n  i64 n_out, count, r0, s0, nv, vpr_n, chunk, tiles_x;\n"
                               "  SinterFastDivmod vpr;\n  int splits;\n  float scale;\n};\n"
                               "extern \"C\" __global__ void k(const __grid_constant__ Args a) {\n"
                               "  sinter_kernel_begin();\n  reduce_tile<Cfg>(a, static_cast<i64>(blockIdx.y) * a.tiles_x + blockIdx.x);\n}\n";
    expect_compiles(std::string("reduction_row_tile_") + row_tile, source);
  }
}

TEST(JitKernelTemplates, LayoutCopyCompilesForSeveralParts) {
  expect_compiles("layout_parts",
                  "#include \"layout/layout.cuh\"\n"
                  "using Copy = CopyKernel<uint4, CopyPart<false, 2>, CopyPart<true, 3>, CopyPart<false, 1>>;\n"
                  "extern \"C\" __global__ void __launch_bounds__(kCopyBlock) k(const __grid_constant__ Copy::Args a) {\n"
                  "  sinter_kernel_begin();\n  Copy::run(a);\n}\n"
                  "extern \"C\" __global__ void one_tile(const __grid_constant__ Copy::Args a, i64 t) { Copy::tile(a, t); }\n");
}

// ExprOptions::round_intermediates rounds every in-register float intermediate to its tensor's
// dtype; by default only casts and stores round.
TEST(JitKernelTemplates, ExprRoundsIntermediatesOnlyWhenAsked) {
  Graph g("round");
  auto x = g.input("x", DType::bf16, {4, 8});
  g.output(g.cast(g.relu(g.add(x, x)), DType::f32), "y");
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  ASSERT_EQ(p.regions.size(), 1u);
  const fuse::Region& r = p.regions[0];
  auto body = [&](ExprOptions options) {
    BodyEmitter b(g, r, options);
    for (TensorId in : r.inputs) b.bind(in, "x");
    return b.emit(r.epilogue);
  };
  const std::string plain = body({}), rounded = body({.round_intermediates = true});
  EXPECT_EQ(plain.find("round_to<bf16>((x + x))"), std::string::npos) << plain;
  EXPECT_NE(rounded.find("round_to<bf16>((x + x))"), std::string::npos) << rounded;
  EXPECT_NE(rounded.find("round_to<bf16>(op_relu("), std::string::npos) << rounded;
}

}  // namespace
}  // namespace sinter::jit
