// Which conv regions the cuDNN engine lowers (conv + a bias/relu/residual chain), the reasons it
// gives for the others, and that cuDNN itself finalizes every descriptor of the lowered graph
// (no GPU needed; only the operation graph needs a handle).
#include <gtest/gtest.h>

#include <functional>

#include "engines/cudnn/conv_graph.hpp"
#include "engines/cudnn/conv_pattern.hpp"

using namespace sinter;

namespace {

cudnn::ConvMatch match_first_conv(Graph& g) {
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  for (const fuse::Region& r : p.regions) {
    if (r.kind == fuse::RegionKind::conv) return cudnn::match_conv(g, r);
  }
  return {};
}

Graph conv_bias_relu_residual(int64_t c, int64_t k, DType t = DType::bf16, bool residual = true) {
  Graph g("conv");
  auto x = g.input("x", t, {2, 9, 11, c});
  auto w = g.input("w", t, {k, 3, 3, c});
  auto bias = g.input("bias", t, {k});
  auto y = g.relu(g.add(g.conv2d(x, w, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}}), bias));
  if (residual) y = g.add(y, g.input("res", t, {2, 9, 11, k}));
  g.output(y, "y");
  return g;
}

}  // namespace

TEST(CudnnConvPattern, BiasReluResidual) {
  Graph g = conv_bias_relu_residual(16, 24);
  const auto m = match_first_conv(g);
  ASSERT_TRUE(m.pattern) << m.reason;
  const cudnn::ConvPattern& p = *m.pattern;
  ASSERT_EQ(p.epilogue.size(), 3u);
  EXPECT_EQ(p.epilogue[0].kind, cudnn::ConvEpilogueOp::bias);
  EXPECT_EQ(p.epilogue[1].kind, cudnn::ConvEpilogueOp::relu);
  EXPECT_EQ(p.epilogue[2].kind, cudnn::ConvEpilogueOp::residual);
  EXPECT_EQ(p.x_dims, (std::vector<int64_t>{2, 16, 9, 11}));         // N C H W
  EXPECT_EQ(p.x_strides, (std::vector<int64_t>{9 * 11 * 16, 1, 11 * 16, 16}));  // NHWC memory
  EXPECT_EQ(p.w_dims, (std::vector<int64_t>{24, 16, 3, 3}));         // K C R S
  EXPECT_EQ(p.summary, "bf16 3x3 s1+bias+relu+residual");
}

TEST(CudnnConvPattern, ReasonsForRefusal) {
  {
    Graph g = conv_bias_relu_residual(12, 24);
    EXPECT_NE(match_first_conv(g).reason.find("not a multiple of 8"), std::string::npos);
  }
  {
    Graph g = conv_bias_relu_residual(16, 24, DType::f32);
    EXPECT_NE(match_first_conv(g).reason.find("f16 or bf16"), std::string::npos);
  }
  {
    Graph g("grouped");
    auto x = g.input("x", DType::bf16, {1, 8, 8, 32});
    auto w = g.input("w", DType::bf16, {32, 3, 3, 16});
    g.output(g.conv2d(x, w, Conv2dAttrs{.groups = 2}), "y");
    EXPECT_NE(match_first_conv(g).reason.find("grouped conv"), std::string::npos);
  }
  {
    Graph g("sigmoid");
    auto x = g.input("x", DType::bf16, {1, 8, 8, 16});
    auto w = g.input("w", DType::bf16, {16, 1, 1, 16});
    g.output(g.sigmoid(g.conv2d(x, w)), "y");
    EXPECT_NE(match_first_conv(g).reason.find("is not lowered"), std::string::npos);
  }
  {
    Graph g("stored_mid");
    auto x = g.input("x", DType::bf16, {1, 8, 8, 16});
    auto w = g.input("w", DType::bf16, {16, 1, 1, 16});
    auto b = g.input("b", DType::bf16, {16});
    auto pre = g.add(g.conv2d(x, w), b);
    g.output(pre, "pre");
    g.output(g.relu(pre), "y");
    EXPECT_NE(match_first_conv(g).reason.find("intermediate epilogue value is stored"), std::string::npos);
  }
}

TEST(CudnnConvGraph, OperationsFinalizeWithoutAGpu) {
  if (!cudnn::library().loaded) GTEST_SKIP() << "no cuDNN here: " << cudnn::library().reason;
  for (bool residual : {false, true}) {
    Graph g = conv_bias_relu_residual(16, 24, DType::bf16, residual);
    const auto m = match_first_conv(g);
    ASSERT_TRUE(m.pattern) << m.reason;
    std::unique_ptr<cudnn::OperationGraph> ops;
    ASSERT_NO_THROW(ops = cudnn::build_conv_operations(*m.pattern));
    EXPECT_EQ(ops->ops.size(), residual ? 4u : 3u);
  }
}

namespace {
// conv + bias + relu, y stored, with `reductions` of y appended by the caller
Graph conv_with_reductions(const std::function<void(Graph&, Tensor)>& reductions) {
  Graph g("conv_reduce");
  auto x = g.input("x", DType::bf16, {2, 9, 7, 16});
  auto w = g.input("w", DType::bf16, {24, 3, 3, 16});
  auto y = g.relu(g.add(g.conv2d(x, w, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}}),
                        g.input("b", DType::bf16, {24})));
  g.output(y, "y");
  reductions(g, y);
  return g;
}
}  // namespace

// Exit reductions of the stored output: a global amax and per-channel sums in f32 are lowered;
// per-pixel (row) reductions, max, and non-f32 outputs are refused with their reason.
TEST(CudnnConvPattern, ExitReductions) {
  {
    Graph g = conv_with_reductions([](Graph& g, Tensor y) {
      g.output(g.reduce(OpKind::reduce_amax, y, {}, false, DType::f32), "amax");
      g.output(g.reduce(OpKind::reduce_sum, y, {0, 1, 2}, false, DType::f32), "channel_sum");
    });
    const auto m = match_first_conv(g);
    ASSERT_TRUE(m.pattern) << m.reason;
    ASSERT_EQ(m.pattern->reductions.size(), 2u);
    EXPECT_TRUE(m.pattern->reductions[0].amax);
    EXPECT_FALSE(m.pattern->reductions[0].per_channel);
    EXPECT_FALSE(m.pattern->reductions[1].amax);
    EXPECT_TRUE(m.pattern->reductions[1].per_channel);
    EXPECT_NE(m.pattern->summary.find("+amax+sum/ch"), std::string::npos) << m.pattern->summary;
    if (cudnn::library().loaded) {  // the REDUCTION nodes finalize (no GPU needed)
      std::unique_ptr<cudnn::OperationGraph> ops;
      ASSERT_NO_THROW(ops = cudnn::build_conv_operations(*m.pattern));
      EXPECT_EQ(ops->ops.size(), 5u);  // conv, bias add, relu, two reductions
    }
  }
  {
    Graph g = conv_with_reductions([](Graph& g, Tensor y) {
      g.output(g.reduce(OpKind::reduce_sum, y, {3}, false, DType::f32), "pixel_sum");
    });
    EXPECT_NE(match_first_conv(g).reason.find("per pixel"), std::string::npos) << match_first_conv(g).reason;
  }
  {
    Graph g = conv_with_reductions([](Graph& g, Tensor y) { g.output(g.reduce_max(y), "max"); });
    EXPECT_NE(match_first_conv(g).reason.find("sum and amax are"), std::string::npos) << match_first_conv(g).reason;
  }
  {
    Graph g = conv_with_reductions([](Graph& g, Tensor y) { g.output(g.amax(y), "amax_bf16"); });
    EXPECT_NE(match_first_conv(g).reason.find("writes f32"), std::string::npos) << match_first_conv(g).reason;
  }
}
