// build_reduction: standalone reductions over many axis patterns, ranks, layouts and dtypes. Every
// generated kernel must compile with NVRTC for sm_90a (no GPU needed); its static_assert on
// sizeof(Args) checks that the host packed the argument struct the kernel declares. The host's
// choice of strategy, split and workspace is checked where the shape class fixes it.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <optional>
#include <set>

#include "cuda/nvrtc.hpp"
#include "engines/jit/codegen.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

cuda::DeviceProperties h200() {
  cuda::DeviceProperties d;
  d.sm_count = 132;
  d.cc_major = 9;
  d.arch = "sm_90a";
  return d;
}

// One reduction x -> y; the setters read as the test's sentence:
//   Case("rank1", reduce_amax, f16, {777}, {0}).keep().expect("global")
struct Case {
  Case(std::string name, OpKind op, DType dtype, Dims dims, std::vector<int64_t> axes = {})
      : name(std::move(name)), op(op), dtype(dtype), dims(std::move(dims)), axes(std::move(axes)) {}
  Case& keep(bool k = true) {
    keepdim = k;
    return *this;
  }
  Case& out(DType t) {
    out_dtype = t;
    return *this;
  }
  Case& view(Dims s) {
    strides = std::move(s);
    return *this;
  }
  Case& expect(std::string s) {
    strategy = std::move(s);
    return *this;
  }

  std::string name;
  OpKind op;
  DType dtype;
  Dims dims;
  std::vector<int64_t> axes;  // as given to the builder (may be negative); empty: all
  bool keepdim = false;
  std::optional<DType> out_dtype;
  Dims strides;          // a view when set
  std::string strategy;  // expected, when the shape class fixes it
};

// x -> reduce -> graph output; the one reduction region's kernels.
RegionKernels build_case(const Case& c, std::string* strategy_out = nullptr) {
  Graph g("reduce_" + c.name);
  const Tensor x = g.input("x", c.dtype, c.dims, c.strides);
  g.output(g.reduce(c.op, x, c.axes, c.keepdim, c.out_dtype), "y");
  const fuse::Partition p = fuse::partition_graph(g);
  fuse::verify_partition(g, p);
  EXPECT_EQ(p.regions.size(), 1u) << c.name;
  const fuse::Region& r = p.regions.at(0);
  EXPECT_EQ(r.kind, fuse::RegionKind::reduction) << c.name;
  RegionKernels rk = build_reduction(g, r, h200());
  if (strategy_out && !rk.kernels.empty()) *strategy_out = rk.kernels[0].description;
  return rk;
}

void compile(const std::string& name, const KernelSpec& spec) {
  try {
    const cuda::CompileResult res = cuda::compile_cuda(name + ".cu", spec.source);
    EXPECT_FALSE(res.cubin.empty()) << name;
    EXPECT_TRUE(res.log.empty()) << name << " compiled with warnings:\n"
                                 << res.log << "\n"
                                 << spec.source;
  } catch (const Error& e) {
    ADD_FAILURE() << name << " does not compile:\n" << e.message() << "\n" << spec.source;
  }
}

// Checks the invariants every kernel must hold, then compiles it.
void check_and_compile(const Case& c) {
  SCOPED_TRACE(c.name);
  std::string desc;
  const RegionKernels rk = build_case(c, &desc);
  ASSERT_EQ(rk.kernels.size(), 1u);
  const KernelSpec& k = rk.kernels[0];
  EXPECT_EQ(k.entry, "sinter_region");
  if (!c.strategy.empty()) {
    EXPECT_NE(desc.find(" " + c.strategy + " "), std::string::npos) << desc;
  }
  EXPECT_NE(k.source.find("static_assert(sizeof(Args) == " + std::to_string(k.args.size())),
            std::string::npos);
  EXPECT_EQ(k.args.size() % 8, 0u);
  EXPECT_GE(k.launch.grid.x, 1u);
  EXPECT_GE(k.launch.grid.y, 1u);
  EXPECT_EQ(k.launch.block.x, 256u);
  // Splits meet in the workspace; an unsplit kernel needs none.
  const bool split = k.launch.grid.y > 1;
  EXPECT_EQ(split, rk.workspace_bytes > 0) << desc;
  std::set<size_t> offsets;
  int inputs = 0, outputs = 0, workspace = 0;
  for (const PointerSlot& s : k.pointers) {
    EXPECT_TRUE(offsets.insert(s.arg_offset).second) << "two pointers at one offset";
    EXPECT_EQ(s.arg_offset % 8, 0u);
    EXPECT_LT(s.arg_offset + 8, k.args.size() + 1);
    EXPECT_GE(s.alignment, 1);
    inputs += s.source == PointerSlot::Source::input;
    outputs += s.source == PointerSlot::Source::output;
    if (s.source == PointerSlot::Source::workspace) {
      ++workspace;
      EXPECT_LT(s.workspace_offset, rk.workspace_bytes);
    }
    if (s.source != PointerSlot::Source::workspace) {
      EXPECT_EQ(s.index, 0);
    }
  }
  EXPECT_EQ(inputs, 1);
  EXPECT_EQ(outputs, 1);
  EXPECT_EQ(workspace, split ? 2 : 0);
  compile(c.name, k);
}

const OpKind kOps[] = {OpKind::reduce_sum, OpKind::reduce_mean, OpKind::reduce_max,
                       OpKind::reduce_min, OpKind::reduce_amax};

std::string op_tag(OpKind op) { return std::string(to_string(op)).substr(7); }

constexpr OpKind kSum = OpKind::reduce_sum, kMean = OpKind::reduce_mean, kMax = OpKind::reduce_max,
                 kMin = OpKind::reduce_min, kAmax = OpKind::reduce_amax;

TEST(JitReduction, EveryOpOverEveryAxisPattern) {
  struct Pattern {
    std::string name;
    Dims dims;
    std::vector<int64_t> axes;
    std::string strategy;
  };
  const Pattern patterns[] = {
      {"all", {37, 129}, {}, "global"},
      {"last", {64, 1000}, {-1}, "row"},
      {"first", {1000, 129}, {0}, "column"},
      {"middle", {8, 100, 33}, {1}, "column"},
      {"outer_and_inner", {7, 50, 300}, {0, 2}, "row"},  // runs of 300 in 7 strided blocks
      {"outer_and_short_inner", {50, 40, 3}, {0, 2}, "general"},
  };
  for (OpKind op : kOps) {
    for (size_t i = 0; i < std::size(patterns); ++i) {
      const Pattern& p = patterns[i];
      // keepdim changes only the output dims
      check_and_compile(Case(op_tag(op) + "_" + p.name, op, DType::f32, p.dims, p.axes)
                            .keep(i % 2 == 1)
                            .expect(p.strategy));
    }
  }
}

TEST(JitReduction, RanksZeroOneAndEight) {
  check_and_compile(Case("rank0", kSum, DType::f32, {}).expect("global"));
  check_and_compile(Case("rank0_keep", kMax, DType::bf16, {}).keep().expect("global"));
  check_and_compile(Case("rank1", kMean, DType::f32, {12345}).expect("global"));
  check_and_compile(Case("rank1_axis", kAmax, DType::f16, {777}, {0}).keep().expect("global"));
  check_and_compile(
      Case("rank8_alternate", kSum, DType::f32, {2, 3, 2, 3, 2, 3, 2, 3}, {1, 3, 5, 7})
          .expect("general"));
  check_and_compile(Case("rank8_last4", kMin, DType::bf16, {2, 3, 2, 3, 2, 3, 4, 5}, {4, 5, 6, 7})
                        .keep()
                        .expect("row"));
}

TEST(JitReduction, KeepdimChangesOnlyTheOutputDims) {
  const RegionKernels a = build_case(Case("keep0", kSum, DType::f32, {6, 10, 70}, {1}));
  const RegionKernels b = build_case(Case("keep1", kSum, DType::f32, {6, 10, 70}, {1}).keep());
  EXPECT_EQ(a.kernels[0].description, b.kernels[0].description);
  EXPECT_EQ(a.kernels[0].args.size(), b.kernels[0].args.size());
  EXPECT_EQ(
      0, std::memcmp(a.kernels[0].args.data(), b.kernels[0].args.data(), a.kernels[0].args.size()));
  EXPECT_EQ(a.kernels[0].launch.grid.x, b.kernels[0].launch.grid.x);
  check_and_compile(Case("keep1", kSum, DType::f32, {6, 10, 70}, {1}).keep().expect("column"));
}

TEST(JitReduction, StridedViews) {
  // x is [64, 48] stored transposed: memory order is the other way round.
  const Dims t{1, 64};
  check_and_compile(
      Case("transposed_last", kSum, DType::f32, {64, 48}, {1}).view(t).expect("column"));
  check_and_compile(
      Case("transposed_first", kMax, DType::f32, {64, 48}, {0}).view(t).expect("row"));
  check_and_compile(Case("transposed_all", kAmax, DType::bf16, {64, 48}).view(t).expect("global"));
  // A slice-like view: rows of 100 in a buffer of pitch 128, reduced along the row.
  check_and_compile(
      Case("pitched_rows", kSum, DType::bf16, {30, 100}, {1}).view({128, 1}).expect("row"));
  // Every other element: no unit stride anywhere.
  check_and_compile(
      Case("gather", kMin, DType::f32, {40, 50}, {1}).view({200, 2}).expect("general"));
  // A transposed 3-d view reduced over its middle axis, keepdim.
  check_and_compile(
      Case("transposed_3d", kMean, DType::f32, {6, 7, 8}, {1}).keep().view({1, 48, 6}));
  // The sorted reduced dims of a transposed global view form one contiguous run: vectorized.
  std::string desc;
  build_case(Case("tg", kSum, DType::f32, {64, 48}).view(t), &desc);
  EXPECT_NE(desc.find(" vec4 "), std::string::npos) << desc;
}

TEST(JitReduction, DtypesAndOutDtypes) {
  check_and_compile(Case("bf16_to_f32", kSum, DType::bf16, {33, 515}, {1}).out(DType::f32));
  check_and_compile(Case("f16_mean_to_f32", kMean, DType::f16, {515, 33}, {0}).out(DType::f32));
  check_and_compile(Case("f32_to_bf16", kSum, DType::f32, {4, 4096}).out(DType::bf16));
  check_and_compile(Case("e4m3_amax", kAmax, DType::fp8_e4m3, {16, 4096}, {1}).out(DType::f32));
  check_and_compile(Case("e5m2_max", kMax, DType::fp8_e5m2, {4096, 16}, {0}).keep());
  check_and_compile(Case("f32_to_i32", kSum, DType::f32, {10, 20}, {1}).out(DType::i32));
  check_and_compile(Case("f32_to_bool", kMax, DType::f32, {10, 20}, {0}).out(DType::boolean));
  // Integers accumulate exactly in i64, in every strategy.
  for (OpKind op : {kSum, kMax, kMin, kAmax}) {
    const std::string o = op_tag(op);
    check_and_compile(Case("i32_row_" + o, op, DType::i32, {9, 1000}, {1}).expect("row"));
    check_and_compile(Case("i32_col_" + o, op, DType::i32, {1000, 9}, {0}).expect("column"));
    check_and_compile(Case("i64_all_" + o, op, DType::i64, {123, 45}).expect("global"));
    check_and_compile(
        Case("i32_general_" + o, op, DType::i32, {50, 40, 3}, {0, 2}).expect("general"));
    check_and_compile(Case("i32_split_" + o, op, DType::i32, {200000, 3}, {0}).out(DType::i64));
  }
  check_and_compile(Case("i64_to_f32", kSum, DType::i64, {100, 7}, {1}).out(DType::f32));
  check_and_compile(Case("i32_to_bf16", kSum, DType::i32, {100, 70}, {1}).out(DType::bf16));
  const RegionKernels rk = build_case(Case("i32", kSum, DType::i32, {9, 1000}, {1}));
  EXPECT_NE(rk.kernels[0].source.find("typedef i64 Acc"), std::string::npos);
}

TEST(JitReduction, FewLongReductionsSplitOverCtas) {
  // 4 rows of 1M: one CTA per row would leave the GPU idle.
  const Case rows = Case("split_rows", kSum, DType::f32, {4, 1 << 20}, {1}).expect("row");
  RegionKernels rk = build_case(rows);
  EXPECT_GT(rk.kernels[0].launch.grid.y, 1u);
  EXPECT_EQ(rk.kernels[0].launch.grid.x, 4u);
  EXPECT_GE(rk.workspace_bytes, 256u + 4 * sizeof(uint32_t));
  check_and_compile(rows);
  // 8 columns of 100000.
  const Case cols = Case("split_cols", kMax, DType::bf16, {100000, 8}, {0}).expect("column");
  rk = build_case(cols);
  EXPECT_GT(rk.kernels[0].launch.grid.y, 1u);
  check_and_compile(cols);
  // A global reduction spreads over the whole GPU.
  const Case all =
      Case("split_all", kMean, DType::bf16, {1 << 22}).out(DType::f32).expect("global");
  rk = build_case(all);
  EXPECT_GT(rk.kernels[0].launch.grid.y, 100u);
  check_and_compile(all);
  // Many outputs fill the GPU without splitting.
  rk = build_case(Case("many", kSum, DType::f32, {8192, 4096}, {1}));
  EXPECT_EQ(rk.kernels[0].launch.grid.y, 1u);
  EXPECT_EQ(rk.workspace_bytes, 0u);
}

TEST(JitReduction, ShortRowsShareAWarp) {
  std::string desc;
  const RegionKernels rk = build_case(Case("short", kSum, DType::f32, {100000, 64}, {1}), &desc);
  EXPECT_NE(desc.find(" row vec4 group4 "), std::string::npos) << desc;  // 16 vectors: 4 lanes
  EXPECT_EQ(rk.kernels[0].pointers[0].alignment, 16);  // the input, read in 16-byte vectors
  build_case(Case("long", kSum, DType::f32, {1000, 8192}, {1}), &desc);
  EXPECT_NE(desc.find(" group256 "), std::string::npos) << desc;
}

TEST(JitReduction, ColumnsLoadSeveralOutputsPerLane) {
  std::string desc;
  // 16 bf16 columns: one 16-byte load covers 8 of them, so 2 lanes span a row and the warp's
  // other lanes take the next 15 rows.
  build_case(Case("narrow", kSum, DType::bf16, {1 << 22, 16}, {0}), &desc);
  EXPECT_NE(desc.find(" column vec8 lanes2x16 "), std::string::npos) << desc;
  build_case(Case("wide", kSum, DType::f32, {8192, 8192}, {0}), &desc);
  EXPECT_NE(desc.find(" column vec4 lanes32x1 subs8 "), std::string::npos) << desc;
  // Odd column counts fall back to element loads.
  build_case(Case("odd", kSum, DType::bf16, {1000, 129}, {0}), &desc);
  EXPECT_NE(desc.find(" column vec1 lanes32x1 "), std::string::npos) << desc;
  // Three elements per output: every thread takes outputs, no warp waits on an empty range.
  build_case(Case("tiny", kSum, DType::f32, {1 << 23, 3}, {1}), &desc);
  EXPECT_NE(desc.find(" general vec1 lanes32x1 subs1 "), std::string::npos) << desc;
  check_and_compile(Case("narrow_i32", kMax, DType::i32, {5000, 12}, {0}));
  check_and_compile(Case("narrow_e4m3", kAmax, DType::fp8_e4m3, {5000, 48}, {0}).out(DType::f32));
  check_and_compile(Case("narrow_3d_i64", kMin, DType::i64, {7, 5000, 12}, {1}));
}

TEST(JitReduction, LargeTensorsUse64BitIndices) {
  std::string desc;
  const Case big("big", kSum, DType::bf16, {3, int64_t{1} << 30}, {1});
  build_case(big, &desc);
  EXPECT_NE(desc.find("idx64"), std::string::npos) << desc;
  check_and_compile(big);
}

TEST(JitReduction, ReductionOfAnotherRegionsOutput) {
  // relu then a middle-axis sum: the sum cannot fold into the pointwise region.
  Graph g("relu_then_sum");
  const Tensor x = g.input("x", DType::bf16, {5, 6, 7});
  g.output(g.sum(g.relu(x), {1}, false), "y");
  const fuse::Partition p = fuse::partition_graph(g);
  int found = 0;
  for (const fuse::Region& r : p.regions) {
    if (r.kind != fuse::RegionKind::reduction) continue;
    ++found;
    const RegionKernels rk = build_reduction(g, r, h200());
    compile("relu_then_sum", rk.kernels[0]);
  }
  EXPECT_EQ(found, 1);
}

TEST(JitReduction, RefusesRegionsThatAreNotReductions) {
  Graph g("not_reduce");
  const Tensor x = g.input("x", DType::f32, {4});
  g.output(g.relu(x), "y");
  const fuse::Partition p = fuse::partition_graph(g);
  try {
    build_reduction(g, p.regions.at(0), h200());
    FAIL() << "built a pointwise region";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
  }
}

}  // namespace
}  // namespace sinter::jit
