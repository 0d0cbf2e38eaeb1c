// matmul regions for the cuDNN engine: batched, broadcast and transposed operands with an
// epilogue chain, the reasons for the rest, and that cuDNN finalizes every descriptor of the
// lowered graph (no GPU needed).
#include <gtest/gtest.h>

#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/cudnn/matmul_lowering.hpp"

using namespace sinter;

namespace {

cudnn::MatmulLoweringMatch match_first(Graph& g) {
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  for (const fuse::Region& r : p.regions) {
    if (r.kind == fuse::RegionKind::matmul) return cudnn::match_matmul_lowering(g, r);
  }
  return {};
}

Graph batched_bias_relu() {
  Graph g("mm");
  auto a = g.input("a", DType::bf16, {3, 77, 304});
  auto bt = g.input("bt", DType::bf16, {304, 136}, {1, 304});  // column-major, broadcast over batch
  auto bias = g.input("bias", DType::bf16, {136});
  g.output(g.relu(g.add(g.matmul(a, bt), bias)), "y");
  return g;
}

}  // namespace

TEST(CudnnMatmul, BatchedBroadcastTransposedWithEpilogue) {
  Graph g = batched_bias_relu();
  const auto m = match_first(g);
  ASSERT_TRUE(m.pattern) << m.reason;
  const auto& p = *m.pattern;
  EXPECT_EQ(p.a_dims, (std::vector<int64_t>{3, 77, 304}));
  EXPECT_EQ(p.b_dims, (std::vector<int64_t>{1, 304, 136}));
  EXPECT_EQ(p.b_strides, (std::vector<int64_t>{304 * 136, 1, 304}));
  EXPECT_EQ(p.y_dims, (std::vector<int64_t>{3, 77, 136}));
  ASSERT_EQ(p.epilogue.size(), 2u);
  EXPECT_EQ(p.epilogue[0].kind, cudnn::EpilogueStep::bias);
  EXPECT_EQ(p.epilogue[1].kind, cudnn::EpilogueStep::relu);
}

TEST(CudnnMatmul, ReasonsForRefusal) {
  {
    Graph g;
    g.output(g.matmul(g.input("a", DType::f32, {8, 8}), g.input("b", DType::f32, {8, 8})), "y");
    EXPECT_NE(match_first(g).reason.find("f16 or bf16"), std::string::npos);
  }
  {
    Graph g;
    g.output(g.matmul(g.input("a", DType::bf16, {8, 12}), g.input("b", DType::bf16, {12, 8})), "y");
    EXPECT_NE(match_first(g).reason.find("not a multiple of 8"), std::string::npos);
  }
  {
    Graph g;
    g.output(g.matmul(g.input("a", DType::bf16, {2, 2, 8, 8}), g.input("b", DType::bf16, {8, 8})), "y");
    EXPECT_NE(match_first(g).reason.find("rank > 3"), std::string::npos);
  }
  {
    Graph g;
    g.output(g.gelu_tanh(g.matmul(g.input("a", DType::bf16, {8, 8}), g.input("b", DType::bf16, {8, 8}))), "y");
    EXPECT_NE(match_first(g).reason.find("is not lowered"), std::string::npos);
  }
  {  // an rmsnorm folded into A (a decode matmul)
    Graph g;
    auto h = g.rmsnorm(g.input("x", DType::bf16, {1, 64}), g.input("g", DType::bf16, {64}));
    g.output(g.matmul(h, g.input("b", DType::bf16, {64, 32})), "y");
    EXPECT_NE(match_first(g).reason.find("prologue"), std::string::npos) << match_first(g).reason;
  }
  {
    if (!cudnn::library().loaded) GTEST_SKIP() << cudnn::library().reason;
    Graph g = batched_bias_relu();
    g.validate();
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region* mm = nullptr;
    for (const fuse::Region& r : p.regions) {
      if (r.kind == fuse::RegionKind::matmul) mm = &r;
    }
    ASSERT_NE(mm, nullptr);
    cuda::KernelCache cache("");
    const EngineContext unnamed{cache, cuda::assumed_h200()};  // auto: cuDNN not named
    const Support s = cudnn::CudnnEngine().supports(g, *mm, unnamed);
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.reason.find("only when it is named"), std::string::npos) << s.reason;
  }
}

TEST(CudnnMatmul, OperationsFinalizeWithoutAGpu) {
  if (!cudnn::library().loaded) GTEST_SKIP() << "no cuDNN here: " << cudnn::library().reason;
  Graph g = batched_bias_relu();
  const auto m = match_first(g);
  ASSERT_TRUE(m.pattern) << m.reason;
  std::unique_ptr<cudnn::OperationGraph> ops;
  ASSERT_NO_THROW(ops = cudnn::build_matmul_operations(*m.pattern));
  EXPECT_EQ(ops->ops.size(), 3u);
}
