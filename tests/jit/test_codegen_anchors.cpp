// The anchor generators (matmul, conv, sdpa): regions from real graphs go through the partitioner
// and the generator, and every generated source compiles with NVRTC for sm_90a (no GPU needed).
// The generated sources static_assert that their Args struct matches the host packer byte for
// byte, so a compile is also a layout check. Numerics are checked on the GPU against the CPU
// reference (tests/gpu).
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "cuda/nvrtc.hpp"
#include "engines/jit/codegen.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

cuda::DeviceProperties h200() { return cuda::assumed_h200(); }

const fuse::Region& only_region(const fuse::Partition& p, fuse::RegionKind kind) {
  const fuse::Region* found = nullptr;
  for (const fuse::Region& r : p.regions) {
    if (r.kind != kind) continue;
    EXPECT_EQ(found, nullptr) << "more than one region of kind " << to_string(kind);
    found = &r;
  }
  if (!found) throw Error(ErrorCode::internal, "no region of kind " + std::string(to_string(kind)));
  return *found;
}

RegionKernels build(const Graph& g, const fuse::Region& r) {
  switch (r.kind) {
    case fuse::RegionKind::matmul: return build_matmul_generic(g, r, h200());
    case fuse::RegionKind::conv: return build_conv(g, r, h200());
    case fuse::RegionKind::sdpa: return build_sdpa_simple(g, r, h200());
    default: break;
  }
  throw Error(ErrorCode::internal, "not an anchor region");
}

// Builds the one region of `kind`, checks the spec's bookkeeping and compiles its source.
RegionKernels build_and_compile(const Graph& g, fuse::RegionKind kind, const std::string& what) {
  const fuse::Partition p = fuse::partition_graph(g);
  fuse::verify_partition(g, p);
  const fuse::Region& r = only_region(p, kind);
  RegionKernels rk = build(g, r);
  EXPECT_EQ(rk.kernels.size(), 1u);
  for (const KernelSpec& k : rk.kernels) {
    EXPECT_EQ(k.entry, "sinter_region");
    EXPECT_EQ(k.args.size() % 8, 0u);
    EXPECT_GT(k.launch.grid.x, 0u);
    EXPECT_GT(k.launch.block.x, 0u);
    EXPECT_LE(k.launch.dynamic_shared_memory, 232448u);
    std::set<size_t> offsets;
    for (const PointerSlot& s : k.pointers) {
      EXPECT_LE(s.arg_offset + sizeof(void*), k.args.size());
      EXPECT_TRUE(offsets.insert(s.arg_offset).second) << "two pointers at offset " << s.arg_offset;
      if (s.source == PointerSlot::Source::input) {
        EXPECT_LT(s.index, static_cast<int>(r.inputs.size()));
      }
      if (s.source == PointerSlot::Source::output) {
        EXPECT_LT(s.index, static_cast<int>(r.outputs.size()));
      }
      if (s.source == PointerSlot::Source::workspace) {
        EXPECT_LT(s.workspace_offset, rk.workspace_bytes);
      }
    }
    // every stored tensor is written through some pointer
    std::set<int> written;
    for (const PointerSlot& s : k.pointers) {
      if (s.source == PointerSlot::Source::output) written.insert(s.index);
    }
    EXPECT_EQ(written.size(), r.outputs.size()) << k.description;
    cuda::CompileOptions opts;
    opts.arch = "sm_90a";
    try {
      const cuda::CompileResult res = cuda::compile_cuda(what + ".cu", k.source, opts);
      EXPECT_FALSE(res.cubin.empty());
    } catch (const Error& e) {
      ADD_FAILURE() << what << " (" << k.description << ") does not compile:\n"
                    << e.message() << "\n---- source ----\n" << k.source;
    }
  }
  return rk;
}

std::string description(const RegionKernels& rk) { return rk.kernels.at(0).description; }

TEST(JitAnchorMatmul, BiasGeluAmax) {
  Graph g("mlp");
  auto x = g.input("x", DType::bf16, {100, 72});
  auto w = g.input("w", DType::bf16, {72, 200});
  auto b = g.input("b", DType::bf16, {200});
  auto h = g.matmul(x, w);
  auto y = g.gelu(g.add(h, b));
  g.output(h, "pre");  // the anchor output stored too
  g.output(y, "y");
  g.output(g.amax(y), "y_amax");
  const RegionKernels rk = build_and_compile(g, fuse::RegionKind::matmul, "matmul_bias_gelu_amax");
  EXPECT_NE(description(rk).find("mma.bf16"), std::string::npos) << description(rk);
  EXPECT_NE(description(rk).find("reductions: global"), std::string::npos) << description(rk);
  EXPECT_GT(rk.workspace_bytes, 0u);
}

TEST(JitAnchorMatmul, BatchedBroadcastTransposedView) {
  Graph g("batched");
  // a: [2, 1, 37, 70]; b: a column-major weight [3, 70, 45] read through strides; batch -> [2, 3]
  auto a = g.input("a", DType::f16, {2, 1, 37, 70});
  auto b = g.input("b", DType::f16, {3, 70, 45}, {70 * 45, 1, 70});
  auto r = g.input("res", DType::f16, {3, 37, 45});
  auto y = g.add(g.mul(g.matmul(a, b), 0.5), r);
  g.output(y, "y");
  const RegionKernels rk = build_and_compile(g, fuse::RegionKind::matmul, "matmul_batched_view");
  EXPECT_NE(description(rk).find("b:k-"), std::string::npos) << description(rk);
}

TEST(JitAnchorMatmul, RowAndColumnReductionsF32) {
  Graph g("rowcol");
  auto a = g.input("a", DType::f32, {130, 33});
  auto b = g.input("b", DType::f32, {33, 257});
  auto y = g.relu(g.matmul(a, b));
  g.output(y, "y");
  g.output(g.sum(y, {1}), "row_sum");
  g.output(g.reduce_max(y, {0}, true), "col_max");
  g.output(g.mean(y, {1}, true), "row_mean");
  const RegionKernels rk = build_and_compile(g, fuse::RegionKind::matmul, "matmul_rows_columns");
  EXPECT_NE(description(rk).find("ffma"), std::string::npos) << description(rk);
  EXPECT_NE(description(rk).find("rows"), std::string::npos) << description(rk);
  EXPECT_NE(description(rk).find("columns"), std::string::npos) << description(rk);
}

TEST(JitAnchorMatmul, Fp8AndOddShapes) {
  Graph g("fp8");
  auto a = g.input("a", DType::fp8_e4m3, {1, 5});  // M = 1, K = 5: scalar edges everywhere
  auto b = g.input("b", DType::fp8_e4m3, {5, 3});
  auto y = g.matmul(a, b, MatmulAttrs{.out_dtype = DType::bf16});
  g.output(g.sum(y), "total");
  g.output(y, "y");
  build_and_compile(g, fuse::RegionKind::matmul, "matmul_fp8");

  Graph g2("e5m2");
  auto a2 = g2.input("a", DType::fp8_e5m2, {4, 64, 96}, {6144, 1, 64});  // transposed A: M contiguous
  auto b2 = g2.input("b", DType::fp8_e5m2, {96, 48});
  g2.output(g2.matmul(a2, b2, MatmulAttrs{.out_dtype = DType::f32}), "y");
  const RegionKernels rk = build_and_compile(g2, fuse::RegionKind::matmul, "matmul_e5m2_transposed_a");
  EXPECT_NE(description(rk).find("a:m-vec"), std::string::npos) << description(rk);
}

TEST(JitAnchorMatmul, EpilogueReadsAnOperand) {
  Graph g("residual");
  auto x = g.input("x", DType::bf16, {3, 40, 64});
  auto w = g.input("w", DType::bf16, {64, 64});
  auto y = g.add(g.matmul(x, w), x);  // x is both the A operand and an epilogue operand
  g.output(y, "y");
  g.output(g.mean(y, {0, 1}), "col_mean");
  build_and_compile(g, fuse::RegionKind::matmul, "matmul_operand_residual");
}

TEST(JitAnchorMatmul, SameStructureAtAnotherShapeReusesTheSource) {
  auto make = [](int64_t m, int64_t k, int64_t n) {
    Graph g("reuse");
    auto x = g.input("x", DType::bf16, {m, k});
    auto w = g.input("w", DType::bf16, {k, n});
    auto b = g.input("b", DType::bf16, {n});
    g.output(g.silu(g.add(g.matmul(x, w), b)), "y");
    return g;
  };
  auto source = [](const Graph& g) {
    const fuse::Partition p = fuse::partition_graph(g);
    return build_matmul_generic(g, only_region(p, fuse::RegionKind::matmul), h200()).kernels.at(0).source;
  };
  EXPECT_EQ(source(make(64, 128, 256)), source(make(1000, 4096, 24)));
}

TEST(JitAnchorConv, GroupsStrideDilationPaddingResidual) {
  Graph g("conv");
  auto x = g.input("x", DType::bf16, {2, 15, 17, 32});
  auto w = g.input("w", DType::bf16, {48, 3, 3, 8});
  auto res = g.input("res", DType::bf16, {2, 8, 15, 48});
  Conv2dAttrs at{.stride = {2, 1}, .pad_begin = {1, 0}, .pad_end = {2, 2}, .dilation = {1, 2}, .groups = 4};
  auto y = g.conv2d(x, w, at);
  ASSERT_EQ(g.tensor(y).dims, (Dims{2, 8, 15, 48}));
  auto z = g.relu(g.add(y, res));
  g.output(z, "z");
  g.output(g.sum(z, {0, 1, 2}), "channel_sum");  // columns: one value per output channel
  g.output(g.reduce_max(z, {3}), "pixel_max");    // rows: one value per output pixel
  const RegionKernels rk = build_and_compile(g, fuse::RegionKind::conv, "conv_groups_residual");
  EXPECT_NE(description(rk).find("x:c-vec8"), std::string::npos) << description(rk);
}

TEST(JitAnchorConv, RgbStemF32AndStridedFilter) {
  Graph g("stem");
  auto x = g.input("x", DType::f32, {1, 31, 29, 3});
  auto w = g.input("w", DType::f32, {16, 7, 7, 3});
  auto b = g.input("b", DType::f32, {16});
  Conv2dAttrs at{.stride = {2, 2}, .pad_begin = {3, 3}, .pad_end = {3, 3}};
  g.output(g.add(g.conv2d(x, w, at), b), "y");
  const RegionKernels rk = build_and_compile(g, fuse::RegionKind::conv, "conv_stem_f32");
  EXPECT_NE(description(rk).find("ffma"), std::string::npos) << description(rk);

  Graph g2("strided_filter");
  auto x2 = g2.input("x", DType::f16, {2, 9, 9, 16});
  // KRSC logical dims stored as KCRS in memory: not contiguous over (r, s, c)
  auto w2 = g2.input("w", DType::f16, {24, 3, 3, 16}, {144, 3, 1, 9});
  g2.output(g2.conv2d(x2, w2, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}}), "y");
  const RegionKernels rk2 = build_and_compile(g2, fuse::RegionKind::conv, "conv_strided_filter");
  EXPECT_NE(description(rk2).find("w:strided"), std::string::npos) << description(rk2);
}

TEST(JitAnchorConv, DepthwiseFp8) {
  Graph g("depthwise");
  auto x = g.input("x", DType::fp8_e4m3, {2, 10, 10, 24});
  auto w = g.input("w", DType::fp8_e4m3, {24, 3, 3, 1});
  auto y = g.conv2d(x, w, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}, .groups = 24,
                                      .out_dtype = DType::bf16});
  g.output(g.gelu_tanh(y), "y");
  const RegionKernels rk = build_and_compile(g, fuse::RegionKind::conv, "conv_depthwise_fp8");
  // each group's filter starts 9 elements after the previous one: no 8-byte vectors
  EXPECT_NE(description(rk).find("w:k-scalar"), std::string::npos) << description(rk);
}

Graph attention(DType dt, CausalMask causal, int64_t d, int64_t dv, std::optional<DType> bias,
                Dims bias_dims, bool stats, bool epilogue) {
  Graph g("attention");
  const int64_t b = 2, h = 8, hkv = 2, sq = 50, skv = 70;
  auto q = g.input("q", dt, {b, h, sq, d});
  auto k = g.input("k", dt, {b, hkv, skv, d});
  auto v = g.input("v", dt, {b, hkv, skv, dv});
  std::optional<Tensor> bt;
  if (bias) bt = g.input("bias", *bias, bias_dims);
  SdpaAttrs at{.causal = causal, .has_bias = bias.has_value(), .emit_stats = stats};
  auto res = g.sdpa(q, k, v, at, bt);
  Tensor o = res.o;
  if (epilogue) {
    auto skip = g.input("skip", dt, {b, h, sq, dv});
    o = g.add(g.mul(o, 2.0), skip);
  }
  g.output(o, "o");
  if (stats) g.output(res.stats, "lse");
  return g;
}

TEST(JitAnchorSdpa, GqaCausalBothAlignments) {
  build_and_compile(attention(DType::bf16, CausalMask::top_left, 64, 64, std::nullopt, {}, false, false),
                    fuse::RegionKind::sdpa, "sdpa_causal_tl");
  const RegionKernels rk = build_and_compile(
      attention(DType::bf16, CausalMask::bottom_right, 64, 64, std::nullopt, {}, true, false),
      fuse::RegionKind::sdpa, "sdpa_causal_br_stats");
  EXPECT_NE(description(rk).find("causal-br"), std::string::npos) << description(rk);
  EXPECT_NE(description(rk).find("stats"), std::string::npos) << description(rk);
}

TEST(JitAnchorSdpa, BoolMaskFloatBiasStatsEpilogue) {
  build_and_compile(attention(DType::f16, CausalMask::none, 64, 64, DType::boolean, {2, 1, 50, 70}, true, true),
                    fuse::RegionKind::sdpa, "sdpa_mask_stats_epilogue");
  const RegionKernels rk = build_and_compile(
      attention(DType::f32, CausalMask::top_left, 128, 128, DType::f32, {8, 50, 70}, false, true),
      fuse::RegionKind::sdpa, "sdpa_bias_f32");
  EXPECT_NE(description(rk).find("bias"), std::string::npos) << description(rk);
}

TEST(JitAnchorSdpa, OddAndLargeHeadDims) {
  build_and_compile(attention(DType::bf16, CausalMask::none, 80, 200, std::nullopt, {}, true, false),
                    fuse::RegionKind::sdpa, "sdpa_d80_dv200");
  build_and_compile(attention(DType::bf16, CausalMask::bottom_right, 256, 256, DType::bf16, {50, 70}, false, true),
                    fuse::RegionKind::sdpa, "sdpa_d256");
  build_and_compile(attention(DType::fp8_e4m3, CausalMask::none, 8, 3, std::nullopt, {}, false, false),
                    fuse::RegionKind::sdpa, "sdpa_tiny_fp8");
}

}  // namespace
}  // namespace sinter::jit
