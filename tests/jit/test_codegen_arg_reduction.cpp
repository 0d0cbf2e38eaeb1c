// build_arg_reduction (through build_reduction): argmax / argmin regions for the LM head's logits
// and other shapes, axes, dtypes and views. Every generated kernel must compile with NVRTC for
// sm_90a (no GPU needed); its static_assert on sizeof(Args) checks the host's packing. The host's
// threads per output and splits are checked where the shape fixes them.
#include <gtest/gtest.h>

#include <set>

#include "cuda/device.hpp"
#include "cuda/nvrtc.hpp"
#include "engines/jit/codegen.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

struct ArgCase {
  std::string name;
  OpKind op;
  DType dtype;
  Dims dims;
  int64_t axis;
  Dims strides = {};      // a view when set
  std::string expect = "";  // a part of the kernel's description, when the shape fixes it
};

RegionKernels build_case(const ArgCase& c) {
  Graph g("arg_" + c.name);
  g.output(g.arg_reduce(c.op, g.input("x", c.dtype, c.dims, c.strides), c.axis), "i");
  const fuse::Partition p = fuse::partition_graph(g);
  fuse::verify_partition(g, p);
  EXPECT_EQ(p.regions.size(), 1u);
  const fuse::Region& r = p.regions.at(0);
  EXPECT_EQ(r.kind, fuse::RegionKind::reduction);
  return build_reduction(g, r, cuda::assumed_h200());
}

void check_and_compile(const ArgCase& c) {
  SCOPED_TRACE(c.name);
  const RegionKernels rk = build_case(c);
  ASSERT_EQ(rk.kernels.size(), 1u);
  const KernelSpec& k = rk.kernels[0];
  EXPECT_EQ(k.entry, "sinter_region");
  if (!c.expect.empty()) {
    EXPECT_NE(k.description.find(c.expect), std::string::npos) << k.description;
  }
  EXPECT_NE(k.source.find("static_assert(sizeof(Args) == " + std::to_string(k.args.size())),
            std::string::npos);
  const bool split = k.launch.grid.y > 1;
  EXPECT_EQ(split, rk.workspace_bytes > 0) << k.description;
  int inputs = 0, outputs = 0, workspace = 0;
  std::set<size_t> offsets;
  for (const PointerSlot& s : k.pointers) {
    EXPECT_TRUE(offsets.insert(s.arg_offset).second) << "two pointers at one offset";
    inputs += s.source == PointerSlot::Source::input;
    outputs += s.source == PointerSlot::Source::output;
    if (s.source == PointerSlot::Source::workspace) {
      ++workspace;
      EXPECT_LT(s.workspace_offset, rk.workspace_bytes);
    }
  }
  EXPECT_EQ(inputs, 1);
  EXPECT_EQ(outputs, 1);
  EXPECT_EQ(workspace, split ? 2 : 0);
  try {
    const cuda::CompileResult res = cuda::compile_cuda(c.name + ".cu", k.source);
    EXPECT_FALSE(res.cubin.empty());
    EXPECT_TRUE(res.log.empty()) << "compiled with warnings:\n" << res.log << "\n" << k.source;
  } catch (const Error& e) {
    ADD_FAILURE() << "does not compile:\n" << e.message() << "\n" << k.source;
  }
}

}  // namespace

TEST(CodegenArgReduction, LmHeadLogitsSplitOverTheGpu) {
  // one row of 128256 bf16 logits: the whole CTA per row, split over many CTAs
  const ArgCase c{"lm_head_1", OpKind::argmax, DType::bf16, {1, 128256}, -1, {}, "argmax group256"};
  check_and_compile(c);
  const KernelSpec k = build_case(c).kernels.at(0);
  EXPECT_GT(k.launch.grid.y, 32u);
  EXPECT_EQ(k.launch.grid.x, 1u);
  check_and_compile({"lm_head_4", OpKind::argmax, DType::bf16, {4, 128256}, 1, {}, "group256"});
}

TEST(CodegenArgReduction, ShapesAxesDtypesAndViewsCompile) {
  const ArgCase cases[] = {
      {"f32_rows", OpKind::argmax, DType::f32, {16, 1000}, -1, {}, "splits"},
      {"short_rows", OpKind::argmin, DType::f16, {4096, 7}, 1, {}, "group2 splits1"},
      {"middle_axis", OpKind::argmax, DType::f32, {3, 257, 5}, 1},
      {"first_axis_many", OpKind::argmin, DType::bf16, {1000, 131072}, 0, {}, "group1 splits1"},
      {"first_axis_few", OpKind::argmax, DType::f32, {100000, 16}, 0, {}, "group256"},
      {"transposed_view", OpKind::argmax, DType::f32, {64, 96}, 1, {1, 64}},
      {"fp8", OpKind::argmax, DType::fp8_e4m3, {2, 3, 4, 33}, 3},
      {"rank1", OpKind::argmin, DType::f32, {1}, 0, {}, "splits1"},
      {"rank4", OpKind::argmax, DType::f16, {2, 3, 4, 5}, 2},
  };
  for (const ArgCase& c : cases) check_and_compile(c);
}

TEST(CodegenArgReduction, SourceSaysWhichExtremeItKeeps) {
  EXPECT_NE(build_case({"max", OpKind::argmax, DType::f32, {8, 8}, 1}).kernels[0].source.find("kArgMax"),
            std::string::npos);
  EXPECT_NE(build_case({"min", OpKind::argmin, DType::f32, {8, 8}, 1}).kernels[0].source.find("kArgMin"),
            std::string::npos);
}

}  // namespace sinter::jit
