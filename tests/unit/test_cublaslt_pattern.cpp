// Which matmul regions the cuBLASLt engine takes, and the reasons it gives for the others (no GPU
// needed: the matching is pure graph analysis).
#include <gtest/gtest.h>

#include "engines/cublaslt/matmul_pattern.hpp"

using namespace sinter;

namespace {
cublaslt::MatchResult match_first_matmul(Graph& g) {
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  for (const fuse::Region& r : p.regions) {
    if (r.kind == fuse::RegionKind::matmul) return cublaslt::match_matmul(g, r);
  }
  return {};
}
}  // namespace

TEST(CublasLtPattern, BiasGeluTanhWithAux) {
  Graph g;
  auto a = g.input("a", DType::bf16, {64, 32});
  auto b = g.input("b", DType::bf16, {32, 16}, {1, 32});
  auto bias = g.input("bias", DType::bf16, {16});
  auto pre = g.add(g.matmul(a, b), bias);
  g.output(pre, "pre");
  g.output(g.gelu_tanh(pre), "y");
  const auto m = match_first_matmul(g);
  ASSERT_TRUE(m.pattern) << m.reason;
  EXPECT_EQ(m.pattern->activation, cublaslt::Activation::gelu_tanh);
  EXPECT_GE(m.pattern->aux_output, 0);
  EXPECT_TRUE(m.pattern->a.transpose);   // our B is column-major
  EXPECT_FALSE(m.pattern->b.transpose);  // our A is row-major
  EXPECT_EQ(m.pattern->k, 32);
}

TEST(CublasLtPattern, ReasonsForRefusal) {
  {
    Graph g;
    auto a = g.input("a", DType::bf16, {8, 8});
    g.output(g.gelu(g.matmul(a, a)), "y");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("tanh approximation"), std::string::npos) << m.reason;
  }
  {
    Graph g;
    auto a = g.input("a", DType::bf16, {8, 8});
    auto y = g.matmul(a, a);
    g.output(y, "y");
    g.output(g.amax(y), "amax");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("only for fp8 inputs"), std::string::npos) << m.reason;
  }
  {
    Graph g;
    auto a = g.input("a", DType::bf16, {8, 8});
    auto c = g.input("c", DType::bf16, {8, 1});
    g.output(g.add(g.matmul(a, a), c), "y");  // a column vector is no bias
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("neither a bias"), std::string::npos) << m.reason;
  }
  {
    Graph g;
    auto a = g.input("a", DType::i32, {8, 8});
    g.output(g.add(g.cast(a, DType::f32), 1.0), "unused");
    auto f = g.input("f", DType::bf16, {8, 8});
    auto y = g.matmul(f, f);
    g.output(g.cast(y, DType::f32), "y");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("changes the dtype"), std::string::npos) << m.reason;
  }
}

// An rmsnorm folded into a decode matmul's A (fuse/partition.cpp) is not lowered to cuBLASLt.
TEST(CublasLtPattern, RefusesAFoldedNorm) {
  Graph g;
  auto x = g.input("x", DType::bf16, {1, 64});
  auto h = g.rmsnorm(x, g.input("g", DType::bf16, {64}));
  g.output(g.matmul(h, g.input("w", DType::bf16, {64, 32})), "y");
  const auto m = match_first_matmul(g);
  EXPECT_FALSE(m.pattern);
  EXPECT_NE(m.reason.find("folded norm"), std::string::npos) << m.reason;
}

// A scalar constant on the chain is alpha; after a residual it scales C too (beta).
TEST(CublasLtPattern, AlphaAndBetaFromScalarConstants) {
  {
    Graph g;
    auto a = g.input("a", DType::bf16, {16, 8});
    auto b = g.input("b", DType::bf16, {8, 4});
    auto res = g.input("res", DType::bf16, {16, 4});
    g.output(g.add(g.mul(g.matmul(a, b), 0.5), res), "y");
    const auto m = match_first_matmul(g);
    ASSERT_TRUE(m.pattern) << m.reason;
    EXPECT_FLOAT_EQ(m.pattern->alpha, 0.5f);
    EXPECT_FLOAT_EQ(m.pattern->beta, 1.0f);
    EXPECT_GE(m.pattern->residual_input, 0);
  }
  {
    Graph g;
    auto a = g.input("a", DType::bf16, {16, 8});
    auto b = g.input("b", DType::bf16, {8, 4});
    auto res = g.input("res", DType::bf16, {16, 4});
    g.output(g.mul(g.add(g.matmul(a, b), res), 0.25), "y");
    const auto m = match_first_matmul(g);
    ASSERT_TRUE(m.pattern) << m.reason;
    EXPECT_FLOAT_EQ(m.pattern->alpha, 0.25f);
    EXPECT_FLOAT_EQ(m.pattern->beta, 0.25f);
  }
  {
    Graph g;  // a scale after the bias would scale the bias too: not cuBLASLt's alpha
    auto a = g.input("a", DType::bf16, {16, 8});
    auto b = g.input("b", DType::bf16, {8, 4});
    auto bias = g.input("bias", DType::bf16, {4});
    g.output(g.mul(g.add(g.matmul(a, b), bias), 2.0), "y");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("after the bias"), std::string::npos) << m.reason;
  }
  {
    Graph g;  // a tensor, not a constant
    auto a = g.input("a", DType::bf16, {16, 8});
    auto b = g.input("b", DType::bf16, {8, 4});
    auto s = g.input("s", DType::bf16, {16, 4});
    g.output(g.mul(g.matmul(a, b), s), "y");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("scalar constant"), std::string::npos) << m.reason;
  }
}

// fp8: only the TN layout, and the amax of D (f32) as cuBLASLt computes it.
TEST(CublasLtPattern, Fp8LayoutAndAmaxOfD) {
  {
    Graph g;
    auto a = g.input("a", DType::fp8_e4m3, {32, 64});
    auto b = g.input("b", DType::fp8_e4m3, {64, 48}, {1, 64});  // an [N, K] weight
    auto y = g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::fp8_e4m3});
    g.output(y, "y");
    g.output(g.reduce(OpKind::reduce_amax, y, {}, false, DType::f32), "amax");
    const auto m = match_first_matmul(g);
    ASSERT_TRUE(m.pattern) << m.reason;
    EXPECT_GE(m.pattern->amax_output, 0);
    EXPECT_NE(m.pattern->epilogue_name.find("amax_d"), std::string::npos);
  }
  {
    Graph g;
    auto a = g.input("a", DType::fp8_e4m3, {32, 64});
    auto b = g.input("b", DType::fp8_e4m3, {64, 48});  // row-major [K, N]: NN, not TN
    g.output(g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::bf16}), "y");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("TN layout"), std::string::npos) << m.reason;
  }
  {
    Graph g;  // alpha is the constant as the graph computes with it: 0.3 rounded to e4m3 (0.3125)
    auto a = g.input("a", DType::fp8_e4m3, {32, 64});
    auto b = g.input("b", DType::fp8_e4m3, {64, 48}, {1, 64});
    g.output(g.mul(g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::fp8_e4m3}), 0.3), "y");
    const auto m = match_first_matmul(g);
    ASSERT_TRUE(m.pattern) << m.reason;
    EXPECT_FLOAT_EQ(m.pattern->alpha, 0.3125f);
    EXPECT_FLOAT_EQ(m.pattern->beta, 0.0f);  // no residual: C stays unread
  }
  {
    Graph g;  // a bias with an fp8 D: cuBLASLt's bias is 16-bit there
    auto a = g.input("a", DType::fp8_e4m3, {32, 64});
    auto b = g.input("b", DType::fp8_e4m3, {64, 48}, {1, 64});
    auto bias = g.input("bias", DType::fp8_e4m3, {48});
    g.output(g.add(g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::fp8_e4m3}), bias), "y");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("with an fp8 D"), std::string::npos) << m.reason;
  }
  {
    Graph g;  // a bf16 D: cuBLASLt has no amax of D for it
    auto a = g.input("a", DType::fp8_e4m3, {32, 64});
    auto b = g.input("b", DType::fp8_e4m3, {64, 48}, {1, 64});
    auto y = g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::bf16});
    g.output(y, "y");
    g.output(g.reduce(OpKind::reduce_amax, y, {}, false, DType::f32), "amax");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("an fp8 D"), std::string::npos) << m.reason;
  }
  {
    Graph g;  // the amax in fp8: cuBLASLt writes f32
    auto a = g.input("a", DType::fp8_e4m3, {32, 64});
    auto b = g.input("b", DType::fp8_e4m3, {64, 48}, {1, 64});
    auto y = g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::fp8_e4m3});
    g.output(y, "y");
    g.output(g.amax(y), "amax");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("writes the amax of D as f32"), std::string::npos) << m.reason;
  }
}

// A bias and a residual on one chain, in either order: D = A B + C + bias (the transformer
// block's projections: matmul + bias + x). Two biases or two residuals are refused.
TEST(CublasLtPattern, BiasAndResidualInEitherOrder) {
  for (bool bias_first : {true, false}) {
    Graph g;
    auto a = g.input("a", DType::bf16, {2, 16, 8});
    auto b = g.input("b", DType::bf16, {8, 4});
    auto bias = g.input("bias", DType::bf16, {4});
    auto res = g.input("res", DType::bf16, {2, 16, 4});
    auto mm = g.matmul(a, b);
    g.output(bias_first ? g.add(g.add(mm, bias), res) : g.add(g.add(mm, res), bias), "y");
    const auto m = match_first_matmul(g);
    ASSERT_TRUE(m.pattern) << m.reason;  // the 2D weight is broadcast over the batch (stride 0)
    EXPECT_GE(m.pattern->bias_input, 0);
    EXPECT_GE(m.pattern->residual_input, 0);
    EXPECT_FLOAT_EQ(m.pattern->beta, 1.0f);
    EXPECT_EQ(m.pattern->epilogue_name, "bias+residual");
  }
  for (bool bias_first : {true, false}) {
    Graph g;
    auto a = g.input("a", DType::bf16, {16, 8});
    auto b = g.input("b", DType::bf16, {8, 4});
    auto bias = g.input("bias", DType::bf16, {4});
    auto res = g.input("res", DType::bf16, {16, 4});
    auto mm = g.matmul(a, b);
    g.output(bias_first ? g.add(g.add(mm, bias), res) : g.add(g.add(mm, res), bias), "y");
    const auto m = match_first_matmul(g);
    ASSERT_TRUE(m.pattern) << m.reason;
    EXPECT_GE(m.pattern->bias_input, 0);
    EXPECT_GE(m.pattern->residual_input, 0);
    EXPECT_EQ(m.pattern->epilogue_name, "bias+residual");
  }
  {
    Graph g;
    auto a = g.input("a", DType::bf16, {16, 8});
    auto b = g.input("b", DType::bf16, {8, 4});
    auto b1 = g.input("b1", DType::bf16, {4});
    auto b2 = g.input("b2", DType::bf16, {4});
    g.output(g.add(g.add(g.matmul(a, b), b1), b2), "y");
    const auto m = match_first_matmul(g);
    EXPECT_FALSE(m.pattern);
    EXPECT_NE(m.reason.find("neither a bias"), std::string::npos) << m.reason;
  }
}
