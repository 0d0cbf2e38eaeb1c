// The compiler's report on every Hopper GEMM config (and the C-tile and generic tiles) of a set of
// representative matmul regions, for comparing two builds of the generators without a GPU: with
// SINTER_DUMP_CUBIN_DIR set, each kernel's cubin and source go there as <region>_<config>.cubin
// and .cubin.cu (bench/sass_loops.py and cuobjdump -res-usage read them); without it the test
// skips (it compiles about a hundred kernels).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "cuda/nvrtc.hpp"
#include "engines/jit/codegen.hpp"
#include "fuse/region.hpp"
#include "jit/fp8_matmul_graph.hpp"

namespace sinter::jit {
namespace {

struct NamedConfig {
  const char* name;
  MatmulConfig config;
};

std::vector<NamedConfig> all_configs() {
  return {{"coop256", {MatmulTile::sm90_direct, {128, 256, 4, false, 1}}},
          {"ping256", {MatmulTile::sm90_direct, {64, 256, 5, true, 1}}},
          {"coop128", {MatmulTile::sm90_direct, {128, 128, 6, false, 1}}},
          {"coop256_pair", {MatmulTile::sm90_direct, {128, 256, 4, false, 2}}},
          {"ping256_pair", {MatmulTile::sm90_direct, {64, 256, 5, true, 2}}},
          {"tall_pair", {MatmulTile::sm90_direct, {256, 128, 4, false, 2}}},
          {"ctile", {MatmulTile::sm90_ctile, {}}},
          {"generic", {MatmulTile::generic, {}}}};
}

Graph mm(const std::string& name, DType t, int64_t m, int64_t n, int64_t k, bool b_k_contiguous,
         const std::function<Tensor(Graph&, Tensor)>& epilogue) {
  Graph g(name);
  auto a = g.input("a", t, {m, k});
  auto b = b_k_contiguous ? g.input("b", t, {k, n}, {1, k}) : g.input("b", t, {k, n});
  g.output(epilogue(g, g.matmul(a, b)), "y");
  return g;
}

std::vector<Graph> regions() {
  auto bare = [](Graph&, Tensor y) { return y; };
  auto fused = [](Graph& g, Tensor y) {  // bias + GELU + amax, the benchmark's fused case
    y = g.gelu(g.add(y, g.input("bias", g.tensor(y.id).dtype, {g.tensor(y.id).dims.back()})));
    g.output(g.amax(y), "amax");
    return y;
  };
  auto sums = [&](Graph& g, Tensor y) {  // bias + GELU + amax, row and column sums
    y = fused(g, y);
    g.output(g.sum(y, {-1}), "rows");
    g.output(g.sum(y, {0}), "cols");
    return y;
  };
  auto two_outputs = [](Graph& g, Tensor y) {  // a stored f32 pre-activation beside the GELU
    auto pre = g.add(y, g.input("bias", DType::bf16, {g.tensor(y.id).dims.back()}));
    g.output(g.cast(pre, DType::f32), "pre");
    return g.gelu(pre);
  };
  auto residual = [](Graph& g, Tensor y) {
    return g.add(y, g.input("res", DType::bf16, g.tensor(y.id).dims));
  };
  auto column_vector = [](Graph& g, Tensor y) {
    return g.mul(y, g.input("row_scale", DType::bf16, {g.tensor(y.id).dims[0], 1}));
  };
  auto f32_out = [](Graph& g, Tensor y) { return g.cast(y, DType::f32); };
  std::vector<Graph> out;
  out.push_back(mm("bare4096", DType::bf16, 4096, 4096, 4096, true, bare));
  out.push_back(mm("fused4096", DType::bf16, 4096, 4096, 4096, true, fused));
  out.push_back(mm("bias4096", DType::bf16, 4096, 4096, 4096, true, [](Graph& g, Tensor y) {
    return g.add(y, g.input("bias", DType::bf16, {4096}));
  }));
  out.push_back(mm("bare8192", DType::bf16, 8192, 8192, 8192, true, bare));
  out.push_back(mm("fused8192", DType::bf16, 8192, 8192, 8192, true, fused));
  out.push_back(mm("two_outputs4096", DType::bf16, 4096, 4096, 4096, true, two_outputs));
  out.push_back(mm("two_outputs8192", DType::bf16, 8192, 8192, 8192, true, two_outputs));
  out.push_back(mm("residual4096", DType::bf16, 4096, 4096, 4096, true, residual));
  out.push_back(mm("column_vector4096", DType::bf16, 4096, 4096, 4096, true, column_vector));
  out.push_back(mm("f32_out4096", DType::bf16, 4096, 4096, 4096, true, f32_out));
  out.push_back(mm("short_k4096", DType::bf16, 4096, 4096, 192, true, fused));
  out.push_back(mm("fused2048", DType::bf16, 2048, 2048, 2048, true, fused));
  out.push_back(mm("odd_bf16", DType::bf16, 333, 264, 208, true, sums));
  out.push_back(mm("odd_f16_row_major_b", DType::f16, 333, 264, 136, false, sums));
  out.push_back(mm("row_major_b4096", DType::bf16, 4096, 4096, 4096, false, fused));
  out.push_back(testing::fp8_matmul_graph("fp8_e4m3_fused", DType::fp8_e4m3, 4096, 4096, 4096, DType::bf16, true));
  out.push_back(testing::fp8_matmul_graph("fp8_e5m2_odd", DType::fp8_e5m2, 333, 264, 208, DType::f16, false));
  {
    Graph g("batched");
    auto a = g.input("a", DType::bf16, {3, 150, 72});
    auto b = g.input("b", DType::bf16, {3, 72, 136}, {136 * 72, 1, 72});
    g.output(g.matmul(a, b), "y");
    out.push_back(std::move(g));
  }
  {
    Graph g("batched_f16_residual_sums");
    auto a = g.input("a", DType::f16, {2, 300, 512});
    auto b = g.input("b", DType::f16, {2, 512, 264}, {264 * 512, 1, 512});
    auto y = g.add(g.matmul(a, b), g.input("res", DType::f16, {2, 300, 264}));
    g.output(y, "y");
    g.output(g.sum(y, {-1}), "rows");
    g.output(g.sum(y, {1}), "cols");
    out.push_back(std::move(g));
  }
  {
    Graph g("folded_broadcast");
    auto x = g.input("x", DType::bf16, {2, 128, 512});
    auto w = g.input("w", DType::bf16, {512, 1536});
    g.output(g.add(g.matmul(x, w), g.input("bias", DType::bf16, {1536})), "y");
    out.push_back(std::move(g));
  }
  return out;
}

TEST(JitMatmulSm90Resources, DumpEveryConfig) {
  const char* dir = std::getenv("SINTER_DUMP_CUBIN_DIR");
  if (dir == nullptr) GTEST_SKIP() << "SINTER_DUMP_CUBIN_DIR not set";
  const cuda::DeviceProperties dev = cuda::assumed_h200();
  int index = 0;
  for (const Graph& g : regions()) {
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region* mm = nullptr;
    for (const fuse::Region& r : p.regions) {
      if (r.kind == fuse::RegionKind::matmul) mm = &r;
    }
    ASSERT_NE(mm, nullptr) << g.name();
    for (const NamedConfig& c : all_configs()) {
      // sharded by hand: GTEST_SHARD_INDEX of GTEST_TOTAL_SHARDS compiles every n-th kernel
      const char* shards = std::getenv("SINTER_DUMP_SHARDS");
      const char* shard = std::getenv("SINTER_DUMP_SHARD");
      if (shards && shard && index++ % std::atoi(shards) != std::atoi(shard)) continue;
      if (c.config.tile != MatmulTile::generic &&
          !sm90_gemm_unsupported(g, *mm, dev, c.config.tile == MatmulTile::sm90_direct).empty()) {
        continue;
      }
      const std::string name = g.name() + "_" + c.name;
      // SINTER_DUMP_ONLY=text: only the kernels whose name holds it
      if (const char* only = std::getenv("SINTER_DUMP_ONLY"); only && name.find(only) == std::string::npos) continue;
      const KernelSpec k = build_matmul(g, *mm, dev, c.config).kernels.at(0);
      if (std::getenv("SINTER_DUMP_SOURCE_ONLY") != nullptr) {  // the generated sources alone, to diff two builds
        std::ofstream(std::filesystem::path(dir) / (name + ".cu")) << "// " << k.description << "\n" << k.source;
        continue;
      }
      cuda::CompileOptions opts;
      opts.arch = "sm_90a";
      opts.extra_options = {"--ptxas-options=-v"};
      const cuda::CompileResult res = cuda::compile_cuda(name + ".cu", k.source, opts);
      std::ofstream(std::filesystem::path(dir) / (name + ".cubin"), std::ios::binary)
          .write(res.cubin.data(), static_cast<std::streamsize>(res.cubin.size()));
      std::ofstream(std::filesystem::path(dir) / (name + ".cubin.cu")) << "// " << k.description << "\n" << k.source;
      std::ofstream(std::filesystem::path(dir) / (name + ".log")) << k.description << "\n"
                                                                   << "grid " << k.launch.grid.x << " smem "
                                                                   << k.launch.dynamic_shared_memory << " workspace "
                                                                   << build_matmul(g, *mm, dev, c.config).workspace_bytes
                                                                   << " work " << k.persistent_work << " fill "
                                                                   << k.persistent_fill << "\n"
                                                                   << res.log;
    }
  }
}

}  // namespace
}  // namespace sinter::jit
