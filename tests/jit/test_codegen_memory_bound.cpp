// The memory-bound code generators (pointwise, row-wise, layout) produce sources that NVRTC
// compiles for sm_90a, for every access class; and the fast division they rely on is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>

#include "cuda/nvrtc.hpp"
#include "engines/jit/codegen.hpp"
#include "engines/jit/kernel_args.hpp"

using namespace sinter;

namespace {

cuda::DeviceProperties fake_h200() {
  cuda::DeviceProperties p;
  p.name = "NVIDIA H200 (assumed)";
  p.sm_count = 132;
  p.cc_major = 9;
  p.arch = "sm_90a";
  return p;
}

// Compiles every kernel of every region of `g`; returns the descriptions. With
// SINTER_DUMP_CUBIN_DIR set, each kernel's source and cubin are written there (for cuobjdump -sass).
std::vector<std::string> compile_all(Graph& g) {
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  std::vector<std::string> descs;
  for (const fuse::Region& r : p.regions) {
    int v = 0;
    for (const auto& [config, rk] : jit::distinct_configs(g, r, fake_h200())) {
    ++v;
    for (const jit::KernelSpec& k : rk.kernels) {
      SCOPED_TRACE(k.description + "\n" + k.source);
      cuda::CompileOptions opts;
      opts.arch = "sm_90a";
      cuda::CompileResult c;
      EXPECT_NO_THROW(c = cuda::compile_cuda("region.cu", k.source, opts));
      if (const char* dir = std::getenv("SINTER_DUMP_CUBIN_DIR")) {
        const std::string stem = std::string(dir) + "/" + g.name() + "_region" + std::to_string(r.id) + "_v" +
                                 std::to_string(v) + "_k" + std::to_string(descs.size());
        std::ofstream(stem + ".cu") << "// " << k.description << "\n" << k.source;
        std::ofstream(stem + ".cubin", std::ios::binary).write(c.cubin.data(), static_cast<std::streamsize>(c.cubin.size()));
      }
      EXPECT_EQ(k.args.size() % 8, 0u);
      descs.push_back(k.description);
    }
    }
  }
  return descs;
}

}  // namespace

TEST(JitCodegen, FastDivmodIsExact) {
  std::mt19937 rng(7);
  for (uint32_t d : {1u, 2u, 3u, 7u, 33u, 1000u, 4096u, 65535u, 1u << 20, (1u << 31) - 1}) {
    const SinterFastDivmod f = jit::make_fast_divmod(d);
    for (int i = 0; i < 20000; ++i) {
      const uint32_t n = i < 100 ? static_cast<uint32_t>(i) : rng() & 0x7fffffffu;
      const uint64_t hi = (static_cast<uint64_t>(n) * f.mul) >> 32;
      const uint32_t q = static_cast<uint32_t>((hi + n) >> f.shift);
      ASSERT_EQ(q, n / d) << "n " << n << " d " << d;
    }
  }
}

TEST(JitCodegen, CollapseMergesContiguousDims) {
  const jit::CollapsedShape c = jit::collapse({4, 5, 6}, {{30, 6, 1}, {0, 0, 1}});
  EXPECT_EQ(c.sizes, (Dims{6, 20}));  // innermost first; the bias breaks the merge at dim 2
  EXPECT_EQ(c.strides[0], (Dims{1, 6}));
  EXPECT_EQ(c.strides[1], (Dims{1, 0}));
  const jit::CollapsedShape s = jit::collapse({}, {{}});
  EXPECT_EQ(s.sizes, (Dims{1}));
}

TEST(JitCodegen, PointwiseAccessClassesCompile) {
  Graph g("pw");
  auto x = g.input("x", DType::bf16, {64, 96});
  auto bias = g.input("bias", DType::bf16, {96});
  auto col = g.input("col", DType::f32, {64, 1});
  auto xt = g.input("xt", DType::bf16, {64, 96}, {1, 64});
  auto s = g.input("s", DType::f32, {});
  auto h = g.mul(g.add(g.add(x, bias), xt), g.cast(col, DType::bf16));
  g.output(g.cast(g.mul(g.cast(h, DType::f32), s), DType::fp8_e4m3), "y8");
  g.output(g.amax(h), "amax");
  auto i = g.input("i", DType::i64, {64, 96});
  g.output(g.select(g.gt(i, g.scalar(3, DType::i64)), g.cast(i, DType::f32), g.cast(col, DType::f32)), "sel");
  const auto descs = compile_all(g);
  ASSERT_FALSE(descs.empty());
  EXPECT_NE(descs[0].find("full"), std::string::npos);
}

// A GELU's accuracy follows its tensor's dtype (expr.cpp): an f16 gelu runs op_gelu_lowp, a bf16
// or fp8 one op_gelu_bf16 (one FFMA fewer), each a small fraction of that dtype's rounding; an f32
// one op_gelu.
TEST(JitCodegen, GeluFormFollowsItsDtype) {
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::fp8_e4m3}) {
    Graph g("gelu_" + std::string(to_string(t)));
    auto x = g.input("x", t, {64, 96});
    g.output(g.cast(g.gelu(x), DType::f32), "y");
    g.validate();
    const fuse::Partition p = fuse::partition_graph(g);
    ASSERT_EQ(p.regions.size(), 1u);
    const std::string src = jit::build_region(g, p.regions[0], fake_h200()).kernels.at(0).source;
    EXPECT_EQ(src.find("op_gelu_lowp(") != std::string::npos, t == DType::f16) << to_string(t);
    EXPECT_EQ(src.find("op_gelu_bf16(") != std::string::npos, t == DType::bf16 || t == DType::fp8_e4m3)
        << to_string(t);
    EXPECT_EQ(src.find("op_gelu(") != std::string::npos, t == DType::f32) << to_string(t);
  }
  Graph g("gelu_bf16_compiles");
  g.output(g.gelu(g.input("x", DType::bf16, {7, 33})), "y");
  EXPECT_FALSE(compile_all(g).empty());
}

// The issue-3 benchmark's 10-op chain (sinter_bench_memory pointwise_chain10: a row bias and a
// column scale broadcast into a 16384 x 16384 bf16 tensor), every pointwise candidate.
TEST(JitCodegen, BenchmarkChainCompiles) {
  Graph g("pointwise_chain10");
  auto x = g.input("x", DType::bf16, {16384, 16384});
  auto h = g.mul(g.add(x, g.input("bias", DType::bf16, {16384})), g.input("scale", DType::bf16, {16384, 1}));
  h = g.max(g.abs(g.sub(g.min(g.square(g.relu(g.add(g.mul(h, 0.5), 1.0))), 4.0), 0.25)), 0.0625);
  g.output(h, "y");
  const auto descs = compile_all(g);
  ASSERT_FALSE(descs.empty());
  EXPECT_NE(descs[0].find("[full,strided,splat]"), std::string::npos) << descs[0];
}

// The same chain ending in an amax exit reduction (a persistent grid: every CTA ends with atomics).
TEST(JitCodegen, BenchmarkChainWithAmaxCompiles) {
  Graph g("pointwise_chain10_amax");
  auto x = g.input("x", DType::bf16, {16384, 16384});
  auto h = g.mul(g.add(x, g.input("bias", DType::bf16, {16384})), g.input("scale", DType::bf16, {16384, 1}));
  h = g.max(g.abs(g.sub(g.min(g.square(g.relu(g.add(g.mul(h, 0.5), 1.0))), 4.0), 0.25)), 0.0625);
  g.output(h, "y");
  g.output(g.amax(h), "amax");
  const auto descs = compile_all(g);
  ASSERT_FALSE(descs.empty());
  for (const std::string& d : descs) EXPECT_EQ(d.find(" flat"), std::string::npos) << d;
}

// Standalone reductions of each strategy: row sums, column sums, a global amax.
TEST(JitCodegen, StandaloneReductionsCompile) {
  Graph g("reductions");
  auto x = g.input("x", DType::bf16, {4096, 8192});
  g.output(g.sum(x, {-1}), "rows");
  g.output(g.sum(x, {0}), "cols");
  g.output(g.amax(x), "amax");
  const auto descs = compile_all(g);
  EXPECT_EQ(descs.size(), 3u);
}

// The issue-3 benchmark's row-wise regions (sinter_bench_memory add_layernorm, add_rmsnorm,
// softmax: 16384 x 8192 bf16), every candidate; with SINTER_DUMP_CUBIN_DIR, their SASS can be
// read without a GPU.
TEST(JitCodegen, BenchmarkRowsCompile) {
  for (OpKind op : {OpKind::layernorm, OpKind::rmsnorm, OpKind::softmax}) {
    Graph g("bench_" + std::string(to_string(op)));
    auto x = g.input("x", DType::bf16, {16384, 8192});
    if (op == OpKind::softmax) {
      g.output(g.softmax(x), "y");
    } else {
      auto sum = g.add(x, g.input("res", DType::bf16, {16384, 8192}));
      auto w = g.input("w", DType::bf16, {8192});
      g.output(op == OpKind::rmsnorm ? g.rmsnorm(sum, w, std::nullopt, 1e-6)
                                     : g.layernorm(sum, w, g.input("b", DType::bf16, {8192}), 1e-5),
               "y");
    }
    const auto descs = compile_all(g);
    ASSERT_FALSE(descs.empty());
    EXPECT_NE(descs[0].find("registers"), std::string::npos) << descs[0];
  }
}

TEST(JitCodegen, RowwiseVariantsCompile) {
  for (int64_t cols : {8192, 1000, 100000}) {
    Graph g("rows_" + std::to_string(cols));
    auto x = g.input("x", DType::bf16, {4, cols});
    auto r = g.input("r", DType::bf16, {4, cols});
    auto w = g.input("w", DType::bf16, {cols});
    auto sum = g.add(x, r);
    g.output(sum, "sum");
    auto y = g.layernorm(sum, w, w);
    g.output(g.cast(y, DType::fp8_e4m3), "y8");
    g.output(g.amax(y), "amax");
    g.output(g.softmax(x), "sm");
    g.output(g.rmsnorm(r, w), "rms");
    g.output(g.sum(g.mul(x, x), {-1}), "rowsum");
    const std::vector<std::string> descs = compile_all(g);
    auto any = [&](const std::string& what) {
      return std::any_of(descs.begin(), descs.end(),
                         [&](const std::string& d) { return d.find(what) != std::string::npos; });
    };
    // The bulk ring and the streaming hints are real candidates where rows fit shared memory;
    // a 200 KB row (100000 bf16) fits no ring, so no candidate may claim one.
    EXPECT_EQ(any("bulk-staged x2"), cols != 100000) << cols;
    EXPECT_EQ(any("bulk-staged x3"), cols != 100000) << cols;
    EXPECT_TRUE(any("stream-hints")) << cols;
  }
  for (bool inter : {false, true}) {
    Graph g(inter ? "rope_interleaved" : "rope");
    auto x = g.input("x", DType::bf16, {2, 3, 5, 64});
    auto c = g.input("c", DType::f32, {5, 16});
    auto sn = g.input("s", DType::f32, {5, 16});
    g.output(g.rope(g.mul(x, 2.0), c, sn, inter), "y");
    compile_all(g);
  }
}

// Gathers: an embedding lookup in 16-byte words (rows of 64 bf16), along a middle axis, along the
// last axis (K innermost: no words), of a strided table, with a scalar index.
TEST(JitCodegen, GathersCompile) {
  Graph g("gather");
  auto table = g.input("table", DType::bf16, {1000, 64});
  g.output(g.gather(table, g.input("ids", DType::i64, {2, 7})), "e");
  auto x = g.input("x", DType::f32, {3, 5, 7});
  g.output(g.gather(x, g.input("mid", DType::i32, {4}), 1), "m");
  g.output(g.gather(x, g.input("last", DType::i32, {2, 2}), -1), "l");
  auto t = g.input("t", DType::f16, {6, 4}, {1, 6});
  g.output(g.gather(t, g.input("rows", DType::i64, {3}), 0), "s");
  g.output(g.gather(x, g.input("one", DType::i64, {}), 0), "o");
  const auto descs = compile_all(g);
  ASSERT_EQ(descs.size(), 5u);
  EXPECT_NE(descs[0].find("16-byte words"), std::string::npos) << descs[0];
  for (const std::string& d : descs) EXPECT_NE(d.find("gather along axis"), std::string::npos) << d;
}

TEST(JitCodegen, LayoutCopiesCompile) {
  Graph g("layout");
  auto x = g.input("x", DType::bf16, {3, 5, 7});
  auto v = g.input("v", DType::f16, {6, 4}, {1, 6});
  g.output(g.permute(x, {2, 0, 1}), "p");
  g.output(g.slice(x, {0, 2}, {1, 1}, {3, 7}, {1, 3}), "s");
  g.output(g.concat({x, x}, 1), "c");
  g.output(g.reshape(v, {24}), "r");
  // a layout chain (slice -> reshape -> permute): one copy through the composed view
  auto qkv = g.input("qkv", DType::bf16, {2, 16, 3, 4, 8});
  g.output(g.permute(g.reshape(g.slice(qkv, {2}, {1}, {2}), {2, 16, 4, 8}), {0, 2, 1, 3}), "k");
  const auto descs = compile_all(g);
  EXPECT_GE(descs.size(), 5u);
  bool chain = false;
  for (const std::string& d : descs) chain = chain || d.find("layout chain slice+reshape+permute") != std::string::npos;
  EXPECT_TRUE(chain);
}
