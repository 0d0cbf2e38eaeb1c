// layernorm/rmsnorm regions for the cuDNN engine: what is lowered, the reasons for the rest, and
// that cuDNN finalizes the NORM_FORWARD operation (no GPU needed).
#include <gtest/gtest.h>

#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/cudnn/norm_lowering.hpp"

using namespace sinter;

namespace {

struct Found {
  Graph g;
  fuse::Partition p;
  const fuse::Region* rowwise = nullptr;
};

std::unique_ptr<Found> partitioned(Graph g) {
  auto f = std::make_unique<Found>();
  f->g = std::move(g);
  f->g.validate();
  f->p = fuse::partition_graph(f->g);
  for (const fuse::Region& r : f->p.regions) {
    if (r.kind == fuse::RegionKind::rowwise) f->rowwise = &r;
  }
  return f;
}

Graph norm_graph(bool rms, bool bias, DType t = DType::bf16) {
  Graph g("norm");
  auto x = g.input("x", t, {3, 5, 96});
  auto w = g.input("w", t, {96});
  std::optional<Tensor> b;
  if (bias) b = g.input("b", t, {96});
  g.output(rms ? g.rmsnorm(x, w, b) : g.layernorm(x, w, b), "y");
  return g;
}

}  // namespace

TEST(CudnnNorm, LayernormAndRmsnorm) {
  for (bool rms : {false, true}) {
    auto f = partitioned(norm_graph(rms, !rms));
    ASSERT_NE(f->rowwise, nullptr);
    const auto m = cudnn::match_norm(f->g, *f->rowwise);
    ASSERT_TRUE(m.pattern) << m.reason;
    EXPECT_EQ(m.pattern->rows, 15);
    EXPECT_EQ(m.pattern->cols, 96);
    EXPECT_EQ(m.pattern->rms, rms);
    EXPECT_EQ(m.pattern->bias_input >= 0, !rms);
  }
}

TEST(CudnnNorm, ReasonsForRefusal) {
  {
    auto f = partitioned(norm_graph(true, true));
    EXPECT_NE(cudnn::match_norm(f->g, *f->rowwise).reason.find("rmsnorm with a bias"), std::string::npos);
  }
  {
    Graph g("softmax");
    g.output(g.softmax(g.input("x", DType::bf16, {4, 64})), "y");
    auto f = partitioned(std::move(g));
    EXPECT_NE(cudnn::match_norm(f->g, *f->rowwise).reason.find("only layernorm and rmsnorm"), std::string::npos);
  }
  {
    Graph g("prologue");
    auto x = g.input("x", DType::bf16, {4, 64});
    auto res = g.input("res", DType::bf16, {4, 64});
    g.output(g.layernorm(g.add(x, res), g.input("w", DType::bf16, {64})), "y");
    auto f = partitioned(std::move(g));
    EXPECT_NE(cudnn::match_norm(f->g, *f->rowwise).reason.find("prologue"), std::string::npos);
  }
  {
    // auto keeps norms on our kernels: the engine built that way says so
    auto f = partitioned(norm_graph(false, true));
    if (!cudnn::library().loaded) GTEST_SKIP() << cudnn::library().reason;
    cuda::KernelCache cache("");
    const EngineContext unnamed{cache, cuda::assumed_h200()};
    const EngineContext named{cache, cuda::assumed_h200(), {"cudnn"}};
    const Support s = cudnn::CudnnEngine().supports(f->g, *f->rowwise, unnamed);
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.reason.find("only when it is named"), std::string::npos) << s.reason;
    EXPECT_TRUE(cudnn::CudnnEngine().supports(f->g, *f->rowwise, named).ok);
  }
}

TEST(CudnnNorm, OperationFinalizesWithoutAGpu) {
  if (!cudnn::library().loaded) GTEST_SKIP() << "no cuDNN here: " << cudnn::library().reason;
  for (bool rms : {false, true}) {
    for (DType t : {DType::bf16, DType::f32}) {
      auto f = partitioned(norm_graph(rms, !rms, t));
      const auto m = cudnn::match_norm(f->g, *f->rowwise);
      ASSERT_TRUE(m.pattern) << m.reason;
      std::unique_ptr<cudnn::OperationGraph> ops;
      ASSERT_NO_THROW(ops = cudnn::build_norm_operations(*m.pattern)) << m.pattern->summary;
      EXPECT_EQ(ops->ops.size(), 1u);
    }
  }
}
