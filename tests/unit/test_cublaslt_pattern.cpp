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
    EXPECT_NE(m.reason.find("exit reductions"), std::string::npos) << m.reason;
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
