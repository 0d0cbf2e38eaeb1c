// Which sdpa regions the cuDNN engine takes, and the reasons it gives for the others (no GPU
// needed: the matching is pure graph analysis); and the loader's answer when cuDNN is absent.
#include <gtest/gtest.h>

#include <cmath>

#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/cudnn/cudnn_library.hpp"
#include "engines/cudnn/engine_configs.hpp"
#include "engines/cudnn/sdpa_graph.hpp"
#include "engines/cudnn/sdpa_pattern.hpp"

using namespace sinter;

namespace {

constexpr size_t kVersion = 91400;  // the H200 machine's cuDNN

struct SdpaCase {
  DType dtype = DType::bf16;
  int64_t b = 2, h = 4, hkv = 2, sq = 33, skv = 70, d = 64, dv = 64;
  CausalMask causal = CausalMask::none;
  std::optional<DType> bias;
  bool stats = false;
  Dims q_strides;  // empty: contiguous
};

cudnn::SdpaMatch match(const SdpaCase& c, size_t version = kVersion) {
  Graph g("sdpa");
  auto q = g.input("q", c.dtype, {c.b, c.h, c.sq, c.d}, c.q_strides);
  auto k = g.input("k", c.dtype, {c.b, c.hkv, c.skv, c.d});
  auto v = g.input("v", c.dtype, {c.b, c.hkv, c.skv, c.dv});
  std::optional<Tensor> bias;
  if (c.bias) bias = g.input("bias", *c.bias, {1, c.h, c.sq, c.skv});
  auto r = g.sdpa(q, k, v, SdpaAttrs{.causal = c.causal, .emit_stats = c.stats}, bias);
  g.output(r.o, "o");
  if (c.stats) g.output(r.stats, "stats");
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  for (const fuse::Region& region : p.regions) {
    if (region.kind == fuse::RegionKind::sdpa) return cudnn::match_sdpa(g, region, version);
  }
  return {};
}

}  // namespace

TEST(CudnnSdpaPattern, GqaCausalStatsAndStrides) {
  SdpaCase c;
  c.causal = CausalMask::top_left;
  c.stats = true;
  // q as a view of a [B, Sq, H, D] buffer (the BSHD layout models use)
  c.q_strides = {c.sq * c.h * c.d, c.d, c.h * c.d, 1};
  const auto m = match(c);
  ASSERT_TRUE(m.pattern) << m.reason;
  const cudnn::SdpaPattern& p = *m.pattern;
  EXPECT_EQ(p.h, 4);
  EXPECT_EQ(p.h_kv, 2);
  EXPECT_EQ(p.s_q, 33);
  EXPECT_EQ(p.s_kv, 70);
  // Every operand names a region input or output: launch binds cuDNN's uids through these.
  EXPECT_EQ(p.q.input, 0);
  EXPECT_EQ(p.k.input, 1);
  EXPECT_EQ(p.v.input, 2);
  EXPECT_EQ(p.o_output, 0);
  EXPECT_EQ(p.stats_output, 1);
  EXPECT_EQ(p.q.strides, (std::vector<int64_t>{33 * 4 * 64, 64, 4 * 64, 1}));
  EXPECT_GE(p.stats_output, 0);
  EXPECT_FLOAT_EQ(p.scale, static_cast<float>(1.0 / std::sqrt(64.0)));
  EXPECT_NE(p.summary.find("gqa 4/2"), std::string::npos) << p.summary;
  EXPECT_NE(p.summary.find("causal(top_left)"), std::string::npos) << p.summary;
}

TEST(CudnnSdpaPattern, BiasOfQsDtype) {
  SdpaCase c;
  c.skv = 72;
  c.bias = DType::bf16;
  const auto m = match(c);
  ASSERT_TRUE(m.pattern) << m.reason;
  ASSERT_TRUE(m.pattern->bias);
  EXPECT_EQ(m.pattern->bias->dims, (std::vector<int64_t>{1, 4, 33, 72}));
}

TEST(CudnnSdpaPattern, ReasonsForRefusal) {
  auto reason = [](const SdpaCase& c, size_t version = kVersion) {
    const auto m = match(c, version);
    EXPECT_FALSE(m.pattern) << "expected a refusal";
    return m.reason;
  };
  SdpaCase f32;
  f32.dtype = DType::f32;
  EXPECT_NE(reason(f32).find("f16 or bf16"), std::string::npos);
  SdpaCase odd_d;
  odd_d.d = odd_d.dv = 36;
  EXPECT_NE(reason(odd_d).find("multiples of 8"), std::string::npos);
  SdpaCase big_d;
  big_d.d = big_d.dv = 512;
  EXPECT_NE(reason(big_d).find("at most 256"), std::string::npos);
  SdpaCase mask;
  mask.bias = DType::boolean;
  EXPECT_NE(reason(mask).find("bool keep-mask"), std::string::npos);
  SdpaCase odd_bias;
  odd_bias.bias = DType::bf16;  // Skv 70: the bias rows are not 16-byte aligned
  EXPECT_NE(reason(odd_bias).find("not a multiple of 8 elements"), std::string::npos);
  SdpaCase f32_bias;
  f32_bias.bias = DType::f32;
  EXPECT_NE(reason(f32_bias).find("q's dtype"), std::string::npos);
  SdpaCase br_bias;
  br_bias.causal = CausalMask::bottom_right;
  br_bias.bias = DType::bf16;
  br_bias.skv = 72;
  EXPECT_NE(reason(br_bias).find("bottom-right causal mask together with a bias"), std::string::npos);
  SdpaCase br_long_q;
  br_long_q.causal = CausalMask::bottom_right;
  br_long_q.sq = 100;
  br_long_q.skv = 70;
  EXPECT_NE(reason(br_long_q).find("Sq > Skv"), std::string::npos);
  SdpaCase br_old;
  br_old.causal = CausalMask::bottom_right;
  EXPECT_NE(reason(br_old, 90500).find("multiples of 64 before cuDNN 9.6"), std::string::npos);
  SdpaCase strided_d;
  strided_d.q_strides = {4 * 33 * 64 * 2, 33 * 64 * 2, 64 * 2, 2};
  EXPECT_NE(reason(strided_d).find("unit stride along the head dim"), std::string::npos);
  SdpaCase misaligned;
  misaligned.q_strides = {4 * 33 * 66, 33 * 66, 66, 1};
  EXPECT_NE(reason(misaligned).find("not a multiple of 8"), std::string::npos);
}

TEST(CudnnSdpaPattern, NotSdpa) {
  Graph g;
  auto a = g.input("a", DType::bf16, {8, 8});
  g.output(g.relu(a), "y");
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  const auto m = cudnn::match_sdpa(g, p.regions.at(0), kVersion);
  EXPECT_FALSE(m.pattern);
  EXPECT_NE(m.reason.find("not an sdpa region"), std::string::npos);
}

TEST(CudnnLibrary, MissingLibraryIsAReasonNotACrash) {
  const cudnn::Library lib = cudnn::load_library("/nonexistent/libcudnn.so.9");
  EXPECT_FALSE(lib.loaded);
  EXPECT_NE(lib.reason.find("/nonexistent/libcudnn.so.9"), std::string::npos) << lib.reason;
}

TEST(CudnnLibrary, LoadsTheInstalledLibraryWithoutAGpu) {
  // The build machine has cuDNN 9.19; cudnnGetVersion needs no GPU.
  const cudnn::Library lib = cudnn::load_library("libcudnn.so.9");
  if (!lib.loaded) GTEST_SKIP() << "no cuDNN here: " << lib.reason;
  EXPECT_GE(lib.version, 90000u);
  EXPECT_LT(lib.version, 100000u);
}

// Every descriptor of the lowered graph (tensors, pointwise, reduction and matmul operations)
// is finalized by the real library: attribute types, uids, dims and strides are checked by
// cuDNN itself. Only the operation graph needs a handle, hence a GPU.
TEST(CudnnSdpaGraph, OperationsFinalizeWithoutAGpu) {
  if (!cudnn::library().loaded) GTEST_SKIP() << "no cuDNN here: " << cudnn::library().reason;
  SdpaCase plain;
  SdpaCase causal_stats;
  causal_stats.causal = CausalMask::top_left;
  causal_stats.stats = true;
  SdpaCase bottom_right;
  bottom_right.causal = CausalMask::bottom_right;
  SdpaCase bias;
  bias.bias = DType::bf16;
  bias.skv = 72;
  SdpaCase f16_bshd;
  f16_bshd.dtype = DType::f16;
  f16_bshd.q_strides = {f16_bshd.sq * f16_bshd.h * f16_bshd.d, f16_bshd.d, f16_bshd.h * f16_bshd.d, 1};
  size_t expected_ops[] = {10, 14, 16, 11, 10};
  int i = 0;
  for (const SdpaCase& c : {plain, causal_stats, bottom_right, bias, f16_bshd}) {
    const auto m = match(c, cudnn::library().version);
    ASSERT_TRUE(m.pattern) << m.reason;
    std::unique_ptr<cudnn::OperationGraph> g;
    ASSERT_NO_THROW(g = cudnn::build_sdpa_operations(*m.pattern)) << m.pattern->summary;
    EXPECT_EQ(g->ops.size(), expected_ops[i++]) << m.pattern->summary;
  }
}

namespace {

// The data type of the tensor an operation holds under `attr`, read back from cuDNN itself.
cudnnDataType_t operand_type(cudnnBackendDescriptor_t op, cudnnBackendAttributeName_t attr) {
  const cudnn::Library& lib = cudnn::library();
  cudnn::Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = t.get();
  int64_t n = 0;
  SINTER_CUDNN_CHECK(lib.BackendGetAttribute(op, attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw));
  cudnnDataType_t type{};
  SINTER_CUDNN_CHECK(lib.BackendGetAttribute(raw, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &n, &type));
  return type;
}

}  // namespace

// cuDNN's fused attention takes the second matmul's A operand (P) only in q's dtype; a float P
// is why cuDNN 9.14 found no engine for any sdpa graph. Checked on the finalized descriptors:
// the first matmul writes float scores, the second reads P in the io type and writes O in it.
TEST(CudnnSdpaGraph, SecondMatmulReadsPInTheIoType) {
  if (!cudnn::library().loaded) GTEST_SKIP() << "no cuDNN here: " << cudnn::library().reason;
  SdpaCase bf16_causal;
  bf16_causal.causal = CausalMask::top_left;
  SdpaCase f16_stats;
  f16_stats.dtype = DType::f16;
  f16_stats.stats = true;
  for (const SdpaCase& c : {bf16_causal, f16_stats}) {
    const auto m = match(c, cudnn::library().version);
    ASSERT_TRUE(m.pattern) << m.reason;
    const auto g = cudnn::build_sdpa_operations(*m.pattern);
    const cudnnDataType_t io = c.dtype == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
    const cudnnBackendDescriptor_t bmm1 = g->ops.front(), bmm2 = g->ops.back();
    EXPECT_EQ(operand_type(bmm1, CUDNN_ATTR_OPERATION_MATMUL_ADESC), io);
    EXPECT_EQ(operand_type(bmm1, CUDNN_ATTR_OPERATION_MATMUL_CDESC), CUDNN_DATA_FLOAT);
    EXPECT_EQ(operand_type(bmm2, CUDNN_ATTR_OPERATION_MATMUL_ADESC), io) << m.pattern->summary;
    EXPECT_EQ(operand_type(bmm2, CUDNN_ATTR_OPERATION_MATMUL_BDESC), io);
    EXPECT_EQ(operand_type(bmm2, CUDNN_ATTR_OPERATION_MATMUL_CDESC), io);
  }
}

// The recipe (shown when cuDNN finds no engine) has one line per operation, in order, naming
// each tensor's type and dims.
TEST(CudnnSdpaGraph, RecipeDescribesEveryOperation) {
  if (!cudnn::library().loaded) GTEST_SKIP() << "no cuDNN here: " << cudnn::library().reason;
  SdpaCase c;
  c.causal = CausalMask::bottom_right;
  const auto m = match(c, cudnn::library().version);
  ASSERT_TRUE(m.pattern) << m.reason;
  const auto g = cudnn::build_sdpa_operations(*m.pattern);
  ASSERT_EQ(g->recipe.size(), g->ops.size());
  EXPECT_EQ(g->recipe.front(), "MATMUL(f32) Q[bf16 2x4x33x64], K^T[bf16 2x2x64x70] -> S[f32 2x4x33x70 virtual]");
  EXPECT_EQ(g->recipe.back(), "MATMUL(f32) P[bf16 2x4x33x70 virtual], V[bf16 2x2x70x64] -> O[bf16 2x4x33x64]");
  EXPECT_EQ(g->recipe[4], "ADD(i32) row[i32 2x4x33x70 virtual], Skv[i32 1x1x1x1 by-value 70] -> "
                          "row+Skv[i32 2x4x33x70 virtual]");
}

// The refusal printed when the heuristics find nothing names every mode asked and its answer,
// numbers the operations, and ends with the command line for cuDNN's own log.
TEST(CudnnRefusal, NamesModesOperationsAndTheLogCommand) {
  cudnn::ConfigList none;
  none.tried = "A: 0 config(s) (cuDNN: no engine); B: 0 config(s); fallback: 0 config(s)";
  const std::string why = cudnn::no_config_reason("sdpa [bf16 d128]", {"MATMUL(f32) a -> b", "DIV(f32) c -> d"}, none);
  EXPECT_EQ(why.rfind("the heuristics returned no engine config [cuDNN ", 0), 0u) << why;
  EXPECT_NE(why.find("sdpa [bf16 d128]; heuristic modes tried: A: 0 config(s) (cuDNN: no engine); B: 0 "
                     "config(s); fallback: 0 config(s)]"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("\n    0. MATMUL(f32) a -> b\n    1. DIV(f32) c -> d\n"), std::string::npos) << why;
  EXPECT_NE(why.find("CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG="), std::string::npos) << why;

  cudnn::ConfigList dropped;
  dropped.dropped = "heur A: 2 config(s) did not build, last eng 8: CUDNN_STATUS_NOT_SUPPORTED";
  const std::string why2 = cudnn::no_config_reason("conv [x]", {}, dropped);
  EXPECT_EQ(why2.rfind(dropped.dropped, 0), 0u) << why2;
  EXPECT_NE(why2.find("heuristic modes tried: none]"), std::string::npos) << why2;
  EXPECT_EQ(why2.find("operation graph given"), std::string::npos) << why2;
}

// Auto leaves a decode sdpa (one query row) of fewer (batch x kv heads) units than SMs to the jit
// engine's flash-decode, with the reason; named, or with as many units as SMs, cuDNN takes it.
TEST(CudnnSdpa, AutoLeavesSmallDecodeToFlashDecode) {
  if (!cudnn::library().loaded) GTEST_SKIP() << cudnn::library().reason;
  auto decode = [](int64_t batch) {
    Graph g("decode_sdpa");
    auto q = g.input("q", DType::bf16, {batch, 32, 1, 64});
    auto k = g.input("k", DType::bf16, {batch, 8, 1025, 64});
    auto v = g.input("v", DType::bf16, {batch, 8, 1025, 64});
    g.output(g.sdpa(q, k, v, SdpaAttrs{}).o, "o");
    g.validate();
    return g;
  };
  cuda::KernelCache cache("");
  const EngineContext unnamed{cache, cuda::assumed_h200()};
  EngineContext named{cache, cuda::assumed_h200()};
  named.named_engines = {"cudnn"};
  const cudnn::CudnnEngine engine;
  {
    const Graph g = decode(1);
    const fuse::Partition p = fuse::partition_graph(g);
    const Support s = engine.supports(g, p.regions.at(0), unnamed);
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.reason.find("8 (batch x kv heads) units"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find("flash-decode"), std::string::npos) << s.reason;
    EXPECT_TRUE(engine.supports(g, p.regions.at(0), named).ok);
  }
  const Graph wide = decode(17);  // 136 units
  EXPECT_TRUE(engine.supports(wide, fuse::partition_graph(wide).regions.at(0), unnamed).ok);
}
