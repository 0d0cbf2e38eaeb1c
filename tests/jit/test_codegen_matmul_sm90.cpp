// The Hopper GEMM variant of matmul regions (codegen_matmul_sm90.cpp): which regions it takes and
// why it declines the others (the reason shows in the fallback's description), the TMA tensor
// maps it asks for, and that its generated sources compile for sm_90a with no register spills
// (ptxas's report through NVRTC). Numerics are checked on the GPU (tests/gpu, GpuHopperGemm).
// With SINTER_DUMP_CUBIN_DIR set, the kernels' cubins (for nvdisasm) and sources are written there.
#include <cuda.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cuda/nvrtc.hpp"
#include "engines/jit/codegen.hpp"
#include "jit/config_helpers.hpp"
#include "fuse/region.hpp"
#include "gemm/gemm_abi.h"
#include "gemm/stream_k.h"
#include "jit/fp8_matmul_graph.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// ptxas (-v) says when it serializes a kernel's wgmma (C75xx: each one waited for before
// the next issues, e.g. for want of registers to keep accumulators in flight, or a wgmma in a
// data-dependent branch). Such a kernel still compiles, runs and passes every correctness test,
// but its main loop runs far slower (a last k-block split in two wgmma groups, serialized so,
// ran 4096^3 8% and 8192^3 11% slower), so it fails here.
void expect_wgmma_pipelined(const std::string& log, const std::string& what) {
  EXPECT_EQ(log.find("are serialized"), std::string::npos) << what << ":\n" << log;
}

cuda::DeviceProperties h200() { return cuda::assumed_h200(); }

const fuse::Region& matmul_region(const Graph& g, const fuse::Partition& p) {
  for (const fuse::Region& r : p.regions) {
    if (r.kind == fuse::RegionKind::matmul) return r;
  }
  throw std::runtime_error("no matmul region in " + g.name());
}

// A kernel compiled for sm_90a with ptxas's resource report in the log (spills, registers,
// static shared memory).
cuda::CompileResult compile_reported(const std::string& name, const std::string& source) {
  cuda::CompileOptions opts;
  opts.arch = "sm_90a";
  opts.extra_options = {"--ptxas-options=-v"};
  return cuda::compile_cuda(name, source, opts);
}

// a [m, k] x b, with b [k, n] either k-contiguous (an [N, K] weight) or row-major
Graph mm(DType t, int64_t m, int64_t n, int64_t k, bool b_k_contiguous, bool epilogue) {
  Graph g("mm");
  auto a = g.input("a", t, {m, k});
  auto b = b_k_contiguous ? g.input("b", t, {k, n}, {1, k}) : g.input("b", t, {k, n});
  auto y = g.matmul(a, b);
  if (epilogue) {
    auto bias = g.input("bias", t, {n});
    y = g.gelu(g.add(y, bias));
    g.output(g.amax(y), "amax");
    g.output(g.sum(y, {-1}), "rows");
    g.output(g.sum(y, {0}), "cols");
  }
  g.output(y, "y");
  return g;
}

std::string why_not(const Graph& g, const cuda::DeviceProperties& dev = h200()) {
  const fuse::Partition p = fuse::partition_graph(g);
  return sm90_gemm_unsupported(g, matmul_region(g, p), dev);
}

TEST(JitMatmulSm90, TakesKContiguousBf16AndF16) {
  EXPECT_EQ(why_not(mm(DType::bf16, 4096, 4096, 4096, true, false)), "");
  EXPECT_EQ(why_not(mm(DType::f16, 333, 257, 136, true, true)), "");
  EXPECT_EQ(why_not(mm(DType::bf16, 1, 1, 1, true, false)), "");  // size-1 dims need no strides
}

// b [64, 64] with neither dim contiguous (every other element of a [64, 128] row-major buffer)
Graph mm_strided_b() {
  Graph g("strided_b");
  auto a = g.input("a", DType::bf16, {64, 64});
  auto b = g.input("b", DType::bf16, {64, 64}, {128, 2});
  g.output(g.matmul(a, b), "y");
  return g;
}

TEST(JitMatmulSm90, DeclinesWithAReason) {
  EXPECT_NE(why_not(mm_strided_b()).find("b is neither k- nor n-contiguous"), std::string::npos);
  EXPECT_NE(why_not(mm(DType::bf16, 64, 100, 64, false, false)).find("b's row stride of 200 bytes"), std::string::npos);
  EXPECT_NE(why_not(mm(DType::bf16, 64, 64, 100, true, false)).find("not a positive multiple of 16"), std::string::npos);
  EXPECT_NE(why_not(mm(DType::f32, 64, 64, 64, true, false)).find("not both bf16 or both f16"), std::string::npos);
  cuda::DeviceProperties a100 = h200();
  a100.arch = "sm_80";
  EXPECT_NE(why_not(mm(DType::bf16, 64, 64, 64, true, false), a100).find("needs sm_90a"), std::string::npos);
  // a weight broadcast over a batch whose rows are not evenly spaced (a sliced batch) cannot fold
  Graph g("broadcast_b");
  auto a = g.input("a", DType::bf16, {4, 64, 64}, {80 * 64, 64, 1});
  auto b = g.input("b", DType::bf16, {64, 64}, {1, 64});
  g.output(g.matmul(a, b), "y");
  EXPECT_NE(why_not(g).find("b is broadcast over the batch"), std::string::npos);

  // the fallback variant is the generic tile and its description carries the reason
  const Graph f = mm_strided_b();
  const fuse::Partition p = fuse::partition_graph(f);
  const fuse::Region& r = matmul_region(f, p);
  EXPECT_EQ(matmul_config_count(f, r, h200()), 1);
  const RegionKernels rk = build_matmul_nth(f, r, h200(), 0);
  EXPECT_NE(rk.kernels.at(0).description.find("[sm90 gemm not used: b is neither k- nor n-contiguous"), std::string::npos)
      << rk.kernels.at(0).description;
}

TEST(JitMatmulSm90, BatchedTensorMaps) {
  Graph g("batched");
  auto a = g.input("a", DType::bf16, {3, 150, 72});
  auto b = g.input("b", DType::bf16, {3, 72, 130}, {130 * 72, 1, 72});
  g.output(g.matmul(a, b), "y");
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  // 5 direct-epilogue configs (128x128 first: 6 tiles of 128x256 do not fill the GPU), the
  // C-tile kernel, the generic tile
  ASSERT_EQ(matmul_config_count(g, r, h200()), 7);
  const int direct = matmul_config_index(g, r, h200(), MatmulTile::sm90_direct);
  ASSERT_EQ(direct, 0);
  EXPECT_EQ(matmul_config_index(g, r, h200(), MatmulTile::sm90_ctile), 5);
  const RegionKernels rk = build_matmul_nth(g, r, h200(), direct);
  const KernelSpec& k = rk.kernels.at(0);
  ASSERT_EQ(k.tensor_maps.size(), 2u);
  const TensorMapSlot& ta = k.tensor_maps[0];
  const TensorMapSlot& tb = k.tensor_maps[1];
  EXPECT_EQ(ta.dims[0], 72u);
  EXPECT_EQ(ta.dims[1], 150u);
  EXPECT_EQ(ta.dims[2], 3u);
  EXPECT_EQ(ta.strides[0], 72u * 2);
  EXPECT_EQ(ta.strides[1], 150u * 72 * 2);
  EXPECT_EQ(tb.dims[1], 130u);
  EXPECT_EQ(tb.strides[0], 72u * 2);
  EXPECT_EQ(tb.strides[1], 130u * 72 * 2);
  EXPECT_EQ(ta.arg_offset % 64, 0u);
  EXPECT_EQ(tb.arg_offset % 64, 0u);
  EXPECT_EQ(k.args.size() % 64, 0u);
  EXPECT_EQ(k.launch.block.x, 384u);
  EXPECT_NE(k.description.find("128x128x64 stages6 coop"), std::string::npos) << k.description;
  EXPECT_EQ(tb.box[1], 128u);
  EXPECT_NE(build_matmul_nth(g, r, h200(), 5).kernels.at(0).description.find("stages4 tma warpspec"), std::string::npos);
  // variant 6 is the generic tile, for the tuner to time against
  EXPECT_EQ(build_matmul_nth(g, r, h200(), 6).kernels.at(0).description.find("sm90"), std::string::npos);
}

TEST(JitMatmulSm90, RowMajorBIsReadNContiguous) {
  // b a row-major [K, N] batch of weights: the tensor map runs over {N, K, batch} with {64, 64}
  // boxes (the kernel loads a tile's 64-column atoms one box each), for every Hopper variant
  Graph g("batched_row_major_b");
  auto a = g.input("a", DType::bf16, {3, 150, 72});
  auto b = g.input("b", DType::bf16, {3, 72, 136});
  g.output(g.matmul(a, b), "y");
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  EXPECT_EQ(sm90_gemm_unsupported(g, r, h200()), "");
  ASSERT_EQ(matmul_config_count(g, r, h200()), 7);
  for (int v = 0; v < 6; ++v) {
    const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
    ASSERT_NE(k.description.find("b-mn-major"), std::string::npos) << k.description;
    const TensorMapSlot& tb = k.tensor_maps.at(1);
    EXPECT_EQ(tb.dims[0], 136u);
    EXPECT_EQ(tb.dims[1], 72u);
    EXPECT_EQ(tb.dims[2], 3u);
    EXPECT_EQ(tb.strides[0], 136u * 2);
    EXPECT_EQ(tb.strides[1], 72u * 136 * 2);
    EXPECT_EQ(tb.box[0], 64u);
    EXPECT_EQ(tb.box[1], 64u);
    EXPECT_EQ(k.tensor_maps.at(0).dims[0], 72u);  // A unchanged: {K, M, batch}
  }
  // the k-contiguous layout wins where both hold, and K-major kernels do not say mn-major
  const Graph kn = mm(DType::bf16, 256, 1, 64, false, false);
  const fuse::Partition pk = fuse::partition_graph(kn);
  EXPECT_EQ(build_matmul_nth(kn, matmul_region(kn, pk), h200(), 0).kernels.at(0).description.find("mn-major"),
            std::string::npos);
}

TEST(JitMatmulSm90, BroadcastWeightFoldsTheBatchIntoM) {
  // x [2, 128, 512] (rows evenly spaced across the batch) @ w [512, 1536] broadcast over it: with
  // one [256, 512] x [512, 1536] GEMM
  Graph g("folded");
  auto x = g.input("x", DType::bf16, {2, 128, 512});
  auto w = g.input("w", DType::bf16, {512, 1536});
  g.output(g.add(g.matmul(x, w), g.input("bias", DType::bf16, {1536})), "y");
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  EXPECT_EQ(sm90_gemm_unsupported(g, r, h200()), "");
  const KernelSpec k = build_matmul_nth(g, r, h200(), 0).kernels.at(0);
  EXPECT_NE(k.description.find("batch-folded"), std::string::npos) << k.description;
  const TensorMapSlot& ta = k.tensor_maps.at(0);
  EXPECT_EQ(ta.dims[0], 512u);
  EXPECT_EQ(ta.dims[1], 256u);  // 2 x 128 rows
  EXPECT_EQ(ta.dims[2], 1u);
  EXPECT_EQ(ta.strides[0], 512u * 2);
  // a sliced batch (rows not evenly spaced across batches) does not fold
  Graph h("not_folded");
  auto xs = h.input("x", DType::bf16, {2, 128, 512}, {2 * 130 * 512, 512, 1});
  h.output(h.matmul(xs, h.input("w", DType::bf16, {512, 1536})), "y");
  const fuse::Partition q = fuse::partition_graph(h);
  EXPECT_NE(sm90_gemm_unsupported(h, matmul_region(h, q), h200()).find("b is broadcast over the batch"),
            std::string::npos);
}

TEST(JitMatmulSm90, LargeShapesTake128x256First) {
  const Graph g = mm(DType::bf16, 4096, 4096, 4096, true, false);
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  ASSERT_EQ(matmul_config_count(g, r, h200()), 8);
  // measured on the H200: the direct-epilogue configs (CTA pairs first; the tall pair, measured
  // slower on the H100, last of them), then the C-tile kernel
  const std::string want[] = {"128x256x64 stages4 coop(1p+2c, 64 rows each) cluster2x1 multicast-b",
                              "128x256x64 stages4 coop(1p+2c, 64 rows each) tma",
                              "64x256x64 stages5 pingpong(1p+2c, a tile each) tma",
                              "64x256x64 stages5 pingpong(1p+2c, a tile each) cluster2x1 multicast-b",
                              "128x128x64 stages6 coop",
                              "256x128x64 stages4 coop(1p+2c, 128 rows each) cluster1x2 multicast-a",
                              "128x128x64 stages4 tma"};
  for (int v = 0; v < 7; ++v) {
    const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
    EXPECT_NE(k.description.find(want[v]), std::string::npos) << v << ": " << k.description;
  }
  const KernelSpec k = build_matmul_nth(g, r, h200(), 2).kernels.at(0);
  EXPECT_EQ(k.tensor_maps.at(0).box[1], 64u);   // ping-pong: 64-row A tiles
  EXPECT_EQ(k.tensor_maps.at(1).box[1], 256u);
  EXPECT_EQ(k.launch.grid.x, 132u);  // 1024 tiles, two per CTA at a time
  EXPECT_FALSE(k.launch.cluster.has_value());
  const KernelSpec pair = build_matmul_nth(g, r, h200(), 0).kernels.at(0);
  EXPECT_EQ(pair.tensor_maps.at(1).box[1], 128u);  // each CTA of the pair loads half of B
  ASSERT_TRUE(pair.launch.cluster.has_value());
  EXPECT_EQ(pair.launch.cluster->x, 2u);
  EXPECT_EQ(pair.launch.grid.x % 2, 0u);
  EXPECT_EQ(pair.persistent_work, 16 * 16);  // tile pairs
  const KernelSpec ping_pair = build_matmul_nth(g, r, h200(), 3).kernels.at(0);
  EXPECT_EQ(ping_pair.persistent_work, 32 * 16 / 2);  // 64-row tile pairs, two per CTA pair at a time
  EXPECT_EQ(ping_pair.tensor_maps.at(0).box[1], 64u);
  EXPECT_EQ(ping_pair.tensor_maps.at(1).box[1], 128u);
}

TEST(JitMatmulSm90, TranscendentalEpilogueTakesTheCoopPairFirst) {
  // a GELU in the epilogue: the coop CTA pair first as for a bare GEMM (measured ahead of
  // ping-pong since the TMA stores and the rational GELU), ping-pong third
  const Graph g = mm(DType::bf16, 4096, 4096, 4096, true, true);
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  EXPECT_NE(build_matmul_nth(g, r, h200(), 0).kernels.at(0).description.find("128x256x64 stages4 coop(1p+2c, 64 rows each) cluster2x1"),
            std::string::npos);
  EXPECT_NE(build_matmul_nth(g, r, h200(), 2).kernels.at(0).description.find("64x256x64 stages5 pingpong"),
            std::string::npos);
}

void dump_cubin(const std::string& name, const KernelSpec& k, const cuda::CompileResult& res) {
  const char* dir = std::getenv("SINTER_DUMP_CUBIN_DIR");
  if (dir == nullptr) return;
  std::ofstream(std::filesystem::path(dir) / (name + ".cubin"), std::ios::binary)
      .write(res.cubin.data(), static_cast<std::streamsize>(res.cubin.size()));
  std::ofstream(std::filesystem::path(dir) / (name + ".cubin.cu")) << "// " << k.description << "\n" << k.source;
}

TEST(JitMatmulSm90, TallPairSharesAAndComputesTwoRowBlocks) {
  // The tall tile (256 x 128, cuBLASLt's 4096^3 shape on the H100): each CTA of the 1x2 cluster
  // loads half of the shared A tile (multicast) and all of its own B tile; each consumer runs two
  // m64n128 wgmma a k step, one per 64-row block; items are tile pairs along N. Bare and fused,
  // it compiles without spills, with its wgmma pipelined and both row blocks' held stores.
  for (bool epilogue : {false, true}) {
    const Graph g = mm(DType::bf16, 4096, 4096, 4096, true, epilogue);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    const KernelSpec k = build_matmul_nth(g, r, h200(), 5).kernels.at(0);
    SCOPED_TRACE(k.description);
    ASSERT_NE(k.description.find("256x128x64 stages4 coop(1p+2c, 128 rows each) cluster1x2 multicast-a"), std::string::npos);
    EXPECT_NE(k.description.find("held-stores"), std::string::npos);
    EXPECT_EQ(k.description.find("offloaded-epilogue"), std::string::npos);  // not for row blocks
    EXPECT_EQ(k.tensor_maps.at(0).box[1], 128u);  // half of A's 256 rows
    EXPECT_EQ(k.tensor_maps.at(1).box[1], 128u);  // all of B's 128
    ASSERT_TRUE(k.launch.cluster.has_value());
    EXPECT_EQ(k.launch.cluster->x, 2u);
    EXPECT_EQ(k.persistent_work, 16 * 16);  // 16 row tiles x 16 pairs of column tiles
    EXPECT_NE(k.source.find("kBM = 256, kBN = 128, kStages = 4, kCluster = 2;"), std::string::npos);
    EXPECT_NE(k.source.find("kStore = Sm90Store::held;"), std::string::npos);
    const cuda::CompileResult res = compile_reported("sm90_tall.cu", k.source);
    EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << res.log;
    expect_wgmma_pipelined(res.log, k.description);
    dump_cubin(std::string("sm90_tall_") + (epilogue ? "fused" : "bare"), k, res);  // for bench/sass_report.sh
  }
  // below a wave of its tiles it is not offered, but a config names it at any size
  const Graph g = mm(DType::bf16, 300, 1000, 512, true, false);
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  for (const MatmulConfig& c : matmul_configs(g, r, h200())) EXPECT_NE(c.direct.bm, 256) << config_text(c);
  const MatmulConfig tall{MatmulTile::sm90_direct, {256, 128, 4, false, 2}};
  EXPECT_NE(build_matmul(g, r, h200(), tall).kernels.at(0).description.find("256x128x64"), std::string::npos);
}

TEST(JitMatmulSm90, FullTilesStoreSixteenByteRows) {
  // 16-bit outputs of full tiles leave through stmatrix as 16-byte rows (a scratch and 16-byte
  // stores, or TMA stores); an f32 output as pairs.
  // Either way the tile-edge form stays in the kernel (shapes are run-time arguments).
  for (DType out : {DType::bf16, DType::f32}) {
    Graph g("full_tiles");
    auto a = g.input("a", DType::bf16, {4096, 4096});
    auto y = g.matmul(a, g.input("b", DType::bf16, {4096, 4096}, {1, 4096}));
    g.output(out == DType::bf16 ? y : g.cast(y, DType::f32), "y");
    const fuse::Partition p = fuse::partition_graph(g);
    const KernelSpec k = build_matmul_nth(g, matmul_region(g, p), h200(), 0).kernels.at(0);
    // (the coop configs hold the rows for TMA stores under the next tile's main loop or stage
    // them in line, ping-pong stores them from a scratch)
    const bool wide = k.source.find("store_fragment_rows_wide(scratch_") != std::string::npos ||
                      k.source.find("stage_fragment_rows_sw128(") != std::string::npos ||
                      k.source.find("kStore = Sm90Store::held;") != std::string::npos;
    EXPECT_EQ(wide, out == DType::bf16) << to_string(out);
    EXPECT_NE(k.source.find(out == DType::bf16 ? "(a.ecols % 8 == 0)" : "(a.ecols % 2 == 0)"), std::string::npos);
    // the functor's fragment epilogue, which the kernel template instantiates for full tiles and
    // partial ones (sm90_gemm_direct.cuh's Sm90DirectEpilogue::block)
    EXPECT_NE(k.source.find("template <bool kFull>\n  __device__ __forceinline__ void fragment("), std::string::npos);
    EXPECT_NE(k.source.find("static bool if_full(const Args& a, bool rows_in, bool cols_in"), std::string::npos);
  }
}

TEST(JitMatmulSm90, FullTilesAdmitAScalarAndABias) {
  // the graph of GpuHopperGemm.EveryCandidateFullTileEpilogueForms: a scale broadcast over rows
  // and columns (column stride 0) and a bias (stride 1) both keep full tiles; bf16 and f32 outputs
  Graph g("full_tiles_scalar");
  auto a = g.input("a", DType::bf16, {256, 64});
  auto y = g.matmul(a, g.input("b", DType::bf16, {64, 512}, {1, 64}));
  y = g.add(g.mul(y, g.input("scale", DType::bf16, {1})), g.input("bias", DType::bf16, {512}));
  g.output(y, "y");
  g.output(g.cast(y, DType::f32), "y32");
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  // the first direct-epilogue config (at this size the C-tile kernel comes first)
  KernelSpec k;
  for (int v = 0; v < matmul_config_count(g, r, h200()) && k.source.empty(); ++v) {
    KernelSpec c = build_matmul_nth(g, r, h200(), v).kernels.at(0);
    if (c.description.find("direct-epilogue") != std::string::npos) k = std::move(c);
  }
  ASSERT_FALSE(k.source.empty());
  EXPECT_NE(k.source.find("(a.ecs0 == 0 || (a.ecs0 == 1 && pair_aligned(a.ein0)))"), std::string::npos);
  EXPECT_NE(k.source.find("(a.ecs1 == 0 || (a.ecs1 == 1 && pair_aligned(a.ein1)))"), std::string::npos);
  EXPECT_TRUE(k.source.find("store_fragment_rows_wide(scratch_") != std::string::npos ||
              k.source.find("stage_fragment_rows_sw128(") != std::string::npos);  // y (bf16)
  EXPECT_NE(k.source.find("pair_aligned(a.out1)"), std::string::npos);               // y32 (f32)
  const cuda::CompileResult res = compile_reported("full_tiles_scalar.cu", k.source);
  EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << res.log;
  expect_wgmma_pipelined(res.log, k.description);
}

// With SINTER_DUMP_CUBIN_DIR set: `name`.cubin and its source, `name`.cubin.cu.

TEST(JitMatmulSm90, BenchmarkEpilogueCompilesWithoutSpills) {
  // the shape and epilogue of sinter_bench_gemm's fused case (bias + GELU + global amax) on every
  // Hopper variant: the 128x256 configs keep 128 accumulators per thread under the 168-register
  // launch budget
  Graph g("bench_fused");
  auto a = g.input("a", DType::bf16, {4096, 4096});
  auto b = g.input("b", DType::bf16, {4096, 4096}, {1, 4096});
  auto y = g.gelu(g.add(g.matmul(a, b), g.input("bias", DType::bf16, {4096})));
  g.output(y, "y");
  g.output(g.amax(y), "amax");
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  for (int v = 0; v < 7; ++v) {
    const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
    ASSERT_NE(k.description.find("sm90 wgmma"), std::string::npos) << k.description;
    // the amax of the bf16 output from its packed words (one HMNMX2 for two elements), the GELU
    // in its bf16 form
    if (k.description.find("direct-epilogue") != std::string::npos) {
      EXPECT_NE(k.source.find("amax_pair<bf16>(gpk0, "), std::string::npos) << k.description;
    }
    // the held coop kernels hand the epilogue to the producer warpgroup's helper warps (K is 64
    // k-blocks) unless stream-K cuts them (the 128x128 config) or they hold two row blocks (the
    // tall tile); held in-line kernels read the bias pairs loaded under the tile's last k-block
    if (k.description.find("held-stores") != std::string::npos && k.description.find("stream-k(") == std::string::npos &&
        k.description.find("256x128") == std::string::npos) {
      EXPECT_NE(k.description.find("offloaded-epilogue"), std::string::npos) << k.description;
      EXPECT_NE(k.source.find("kOffload = true"), std::string::npos) << k.description;
      EXPECT_NE(k.source.find("void chunk(const Args& a, i64 grow, i64 gcol0, u32 (&held_)[8])"), std::string::npos);
      EXPECT_NE(k.source.find("held_map(const Args& a) { return &a.tmo0; }"), std::string::npos) << k.description;
    }
    if (k.description.find("held-stores") != std::string::npos &&
        k.description.find("offloaded-epilogue") == std::string::npos) {
      EXPECT_NE(k.description.find("preloaded-bias"), std::string::npos) << k.description;
      EXPECT_NE(k.source.find("kPreloadBias = true"), std::string::npos) << k.description;
      EXPECT_NE(k.source.find("static void preload(const Args& a, i64 gcol0, int cols_valid, Preload& pw0)"),
                std::string::npos)
          << k.description;
      EXPECT_NE(k.source.find("unpack_pair_word<bf16>(pw0[q], "), std::string::npos) << k.description;
    }
    EXPECT_NE(k.source.find("op_gelu_bf16("), std::string::npos) << k.description;
    const cuda::CompileResult res = compile_reported("sm90_bench_fused.cu", k.source);
    std::printf("  %s\n%s", k.description.c_str(), res.log.c_str());
    EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << k.description;
    expect_wgmma_pipelined(res.log, k.description);
    dump_cubin("sm90_bench_fused_v" + std::to_string(v), k, res);  // for bench/sass_report.sh
  }
}

// Which coop kernels hand their epilogue to the producer warpgroup's helper warps (the offloaded
// epilogue, gemm/sm90_epilogue_offload.cuh): those with held stores, an epilogue, a 16-bit matmul
// result (the helpers read it rounded), only global max-like reductions, no operand read per row,
// one output (AnchorEpilogue::runs_on_rounded_words) and K of 32 k-blocks or more.
TEST(JitMatmulSm90, OffloadedEpilogueNeedsA16BitAnchorAndGlobalMaxReductions) {
  auto first_coop = [](const Graph& g) {
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    for (int v = 0; v < matmul_config_count(g, r, h200()); ++v) {
      const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
      if (k.description.find("coop(") != std::string::npos && k.description.find("128x256") != std::string::npos) {
        return k.description;
      }
    }
    return std::string("no 128x256 coop candidate");
  };
  auto graph = [](int64_t k, bool epilogue, bool row_sums, DType out) {
    Graph g("offload_rule");
    MatmulAttrs at;
    at.out_dtype = out;
    auto y = g.matmul(g.input("a", DType::bf16, {4096, k}), g.input("b", DType::bf16, {k, 4096}, {1, k}), at);
    if (epilogue) y = g.cast(g.gelu(g.add(y, g.input("bias", out, {4096}))), DType::bf16);
    g.output(y, "y");
    if (row_sums) g.output(g.sum(y, {1}), "rows");
    return g;
  };
  EXPECT_NE(first_coop(graph(4096, true, false, DType::bf16)).find("offloaded-epilogue"), std::string::npos);
  EXPECT_NE(first_coop(graph(2048, true, false, DType::bf16)).find("offloaded-epilogue"), std::string::npos);
  // held, in line: K of 16 k-blocks, a bare GEMM, row sums, an f32 matmul result
  for (const Graph& g : {graph(1024, true, false, DType::bf16), graph(4096, false, false, DType::bf16),
                         graph(4096, true, true, DType::bf16), graph(4096, true, false, DType::f32)}) {
    const std::string d = first_coop(g);
    EXPECT_NE(d.find("held-stores"), std::string::npos) << d;
    EXPECT_EQ(d.find("offloaded-epilogue"), std::string::npos) << d;
  }
  // f16 operand forms on every coop config: a scalar, a bias and a global amax offload (and
  // compile with 0 spills); a residual, a global sum, a second (f32) output or a column vector
  // keep the epilogue in line
  for (int form : {0, 1, 2, 3, 4}) {
    Graph g("offload_operands_f16");
    auto y = g.matmul(g.input("a", DType::f16, {700, 2048}), g.input("b", DType::f16, {2048, 1536}, {1, 2048}));
    y = g.add(g.mul(y, g.input("s", DType::f16, {1})), g.input("bias", DType::f16, {1536}));
    if (form == 1) y = g.add(y, g.input("res", DType::f16, {700, 1536}));
    if (form == 4) y = g.sub(y, g.input("col", DType::f16, {700, 1}));
    g.output(g.relu(y), "y");
    g.output(form == 2 ? g.sum(g.relu(y)) : g.amax(g.relu(y)), "m");
    if (form == 3) g.output(g.cast(y, DType::f32), "pre");
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    int coop = 0;
    for (int v = 0; v < matmul_config_count(g, r, h200()); ++v) {
      const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
      if (k.description.find("coop(") == std::string::npos) continue;
      ++coop;
      SCOPED_TRACE(k.description);
      EXPECT_EQ(k.description.find("offloaded-epilogue") != std::string::npos, form == 0);
      if (form != 0) continue;
      const cuda::CompileResult res = compile_reported("sm90_offload_operands.cu", k.source);
      dump_cubin("sm90_offload_operands_v" + std::to_string(v), k, res);
      EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << res.log;
      expect_wgmma_pipelined(res.log, k.description);
    }
    EXPECT_GE(coop, 3);
  }
}

// The epilogue kinds a user asks of a GEMM, on every direct-epilogue config at 4096^3: a
// residual, a column vector (one value a row), a stored pre-activation (f32), an fp8 output
// with a scale, a SiLU gated by a residual, bias + GELU + residual + amax, tanh GELU. All compile
// with 0 spills and pipelined wgmma (the 128x256 coop kernels spilled 12 to 380 bytes on five of
// them when residuals were read element by element and a partial tile's epilogue kept the
// previous tile's 64 held words alive). Full tiles read a residual as column pairs and a column
// vector once a row (AnchorEpilogue::row_read), in this source.
TEST(JitMatmulSm90, EveryEpilogueKindCompilesWithoutSpills) {
  const int64_t m = 4096, n = 4096, k = 4096;
  struct Form {
    const char* name;
    const char* full_tile_load;  // what full tiles' source reads a per-row operand with, or ""
  };
  const Form forms[] = {{"residual", "load_pair(a.ein0 + ro0_0 + gcol0 + cc0"},
                        {"column_vector", "prs0_0 = kFull ? load_one(a.ein0 + ro0_0)"},
                        {"pre_f32", ""},
                        {"fp8_scaled_amax", ""},
                        {"silu_times_residual", "load_pair(a.ein1 + ro1_0 + gcol0 + cc0"},
                        {"bias_gelu_residual_amax", "load_pair(a.ein1 + ro1_0 + gcol0 + cc0"},
                        {"gelu_tanh", ""}};
  for (const Form& f : forms) {
    const std::string name = f.name;
    Graph g("epilogue_" + name);
    auto y = g.matmul(g.input("a", DType::bf16, {m, k}), g.input("b", DType::bf16, {k, n}, {1, k}));
    auto bias = [&] { return g.input("bias", DType::bf16, {n}); };
    auto res = [&] { return g.input("res", DType::bf16, {m, n}); };
    if (name == "residual") {
      y = g.add(y, res());
    } else if (name == "column_vector") {
      y = g.mul(y, g.input("row_scale", DType::bf16, {m, 1}));
    } else if (name == "pre_f32") {
      auto pre = g.add(y, bias());
      g.output(g.cast(pre, DType::f32), "pre");
      y = g.gelu(pre);
    } else if (name == "fp8_scaled_amax") {
      auto z = g.relu(g.add(y, bias()));
      g.output(g.amax(z), "amax");
      y = g.cast(z, DType::fp8_e4m3, g.input("scale", DType::f32, {1}));
    } else if (name == "silu_times_residual") {
      y = g.mul(g.silu(g.add(y, bias())), res());
    } else if (name == "bias_gelu_residual_amax") {
      y = g.add(g.gelu(g.add(y, bias())), res());
      g.output(g.amax(y), "amax");
    } else {
      y = g.gelu_tanh(g.add(y, bias()));
    }
    g.output(y, "y");
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    for (int v = 0; v < 6; ++v) {  // the 6 direct-epilogue configs
      const KernelSpec ks = build_matmul_nth(g, r, h200(), v).kernels.at(0);
      SCOPED_TRACE(name + ": " + ks.description);
      ASSERT_NE(ks.description.find("direct-epilogue"), std::string::npos);
      if (*f.full_tile_load != '\0') {
        EXPECT_NE(ks.source.find(f.full_tile_load), std::string::npos);
      }
      const cuda::CompileResult res = compile_reported("sm90_epilogue_kind.cu", ks.source);
      EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << res.log;
      expect_wgmma_pipelined(res.log, ks.description);
      dump_cubin("sm90_epilogue_" + name + "_v" + std::to_string(v), ks, res);  // for bench/sass_report.sh
    }
  }
}

TEST(JitMatmulSm90, TmaStoresCompileWithoutSpillsAndFit) {
  // The coop configs write full tiles' 16-bit outputs with TMA stores from two 2 KB slots per
  // consumer warp (32 KB of dynamic shared memory after the ring); ping-pong keeps the shared-load / global-store
  // chains. On the benchmark's fused case, a bare GEMM and an epilogue with two 16-bit outputs
  // (both staged, one slot each): every config keeps 0 spills and its static + dynamic shared
  // memory fits the H200's 227 KB a block.
  for (int outputs : {0, 1, 2}) {
    Graph g("tma_store_" + std::to_string(outputs));
    auto a = g.input("a", DType::bf16, {4096, 4096});
    auto y = g.matmul(a, g.input("b", DType::bf16, {4096, 4096}, {1, 4096}));
    if (outputs > 0) {
      auto pre = g.add(y, g.input("bias", DType::bf16, {4096}));
      y = g.gelu(pre);
      g.output(g.amax(y), "amax");
      if (outputs == 2) g.output(pre, "pre");
    }
    g.output(y, "y");
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    for (int v = 0; v < 6; ++v) {  // the 6 direct-epilogue configs (variant 6: the C-tile kernel)
      const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
      const bool coop = k.description.find("coop(") != std::string::npos;
      EXPECT_EQ(k.description.find("tma-store") != std::string::npos, coop) << k.description;
      // one 16-bit output waits in registers for the next tile's main loop; two are staged in line
      EXPECT_EQ(k.description.find("held-stores") != std::string::npos, coop && outputs < 2) << k.description;
      // (held kernels branch on a warp-uniform role: sm90_gemm_direct)
      EXPECT_EQ(k.source.find("kStore = Sm90Store::held;") != std::string::npos, coop && outputs < 2) << k.description;
      EXPECT_EQ(k.tensor_maps.size(), coop ? 2u + static_cast<size_t>(std::max(outputs, 1)) : 2u) << k.description;
      const cuda::CompileResult res = compile_reported("sm90_tma_store.cu", k.source);
      dump_cubin("sm90_tma_store_" + std::to_string(outputs) + "_v" + std::to_string(v), k, res);
      EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << k.description << "\n" << res.log;
      expect_wgmma_pipelined(res.log, k.description);
      // ptxas reports static shared memory only where there is some
      const size_t at = res.log.find(" bytes smem");
      const long static_smem =
          at == std::string::npos ? 0L : std::stol(res.log.substr(res.log.rfind(' ', at - 1) + 1));
      EXPECT_LE(static_smem + static_cast<long>(k.launch.dynamic_shared_memory), 227L * 1024) << k.description;
      if (coop) {
        EXPECT_GE(k.launch.dynamic_shared_memory, 32u * 1024 + 192u * 1024) << k.description;
      }
    }
  }
}

// The stream-K kernels (sinter_sk_plan cuts the last wave at 8192^3: 34 of 1024 CTA-pair items,
// 68 of 2048 single-CTA tiles) compile without spills and with pipelined wgmma: bare (held
// stores), fused bias + GELU + amax (held, the bias preloaded), and two outputs (one f32 beside the
// held one). The 4096^3 128x256 kernels are not cut (measured slower).
TEST(JitMatmulSm90, StreamKKernelsCompileWithoutSpills) {
  for (const char* form : {"bare", "fused", "two_outputs"}) {
    for (int64_t size : {int64_t{8192}, int64_t{4096}}) {
      Graph g(std::string("stream_k_") + form);
      auto y = g.matmul(g.input("a", DType::bf16, {size, size}), g.input("b", DType::bf16, {size, size}, {1, size}));
      const std::string f = form;
      if (f == "fused") {
        y = g.gelu(g.add(y, g.input("bias", DType::bf16, {size})));
        g.output(g.amax(y), "amax");
      } else if (f == "two_outputs") {
        auto pre = g.add(y, g.input("bias", DType::bf16, {size}));
        g.output(g.cast(pre, DType::f32), "pre");
        y = g.gelu(pre);
      }
      g.output(y, "y");
      const fuse::Partition p = fuse::partition_graph(g);
      const fuse::Region& r = matmul_region(g, p);
      int cut = 0;
      for (int v = 0; v < 6; ++v) {  // the 6 direct-epilogue configs
        const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
        const bool coop = k.description.find("coop(") != std::string::npos;
        const bool sk = k.description.find("stream-k(") != std::string::npos;
        // (the 128x128 coop config cuts at 4096^3, 48 of 64 k-blocks a unit, just within the rule,
        // and not at 8192^3, 3.9 k-blocks a unit)
        const bool wide = k.description.find("128x256") != std::string::npos;
        if (k.description.find("256x128") != std::string::npos) {
          EXPECT_FALSE(sk) << k.description;  // the tall tile walks whole items
        }
        if (wide) {
          EXPECT_EQ(sk, coop && size == 8192) << k.description;
        }
        EXPECT_EQ(k.persistent_fill, sk) << k.description;
        if (!sk) continue;
        ++cut;
        const cuda::CompileResult res = compile_reported("sm90_stream_k.cu", k.source);
        std::printf("  %s\n", k.description.c_str());
        EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos)
            << k.description << "\n" << res.log;
        expect_wgmma_pipelined(res.log, k.description);
        dump_cubin(std::string("sm90_stream_k_") + form + "_v" + std::to_string(v), k, res);
      }
      EXPECT_EQ(cut, size == 8192 ? 2 : 1) << form;
    }
  }
}

// The stream-K plan (kernels/gemm/stream_k.h), walked as the kernels walk it: every k-block of
// the cut items lies in exactly one unit's range, no piece is shorter than min_piece, a range
// touches at most two items (HopperSkPieces holds two), and each cut item's owner (the range
// holding its k-block 0) finds the later pieces where the kernel looks for them (the ranges after
// its own that start inside the item). Over the plans sinter_sk_fits admits.
TEST(JitMatmulSm90, StreamKPlanCoversEveryKBlockOnce) {
  int plans = 0;
  for (int units : {3, 5, 10, 66, 132}) {
    for (int k_blocks : {2, 7, 16, 32, 64, 65, 128}) {
      for (int sk_items = 1; sk_items < units; ++sk_items) {
        for (int min_piece : {1, 2, 4}) {
          const SinterStreamK sk{units, sk_items, k_blocks, min_piece};
          if (!sinter_sk_fits(&sk, 10 * units)) continue;
          ++plans;
          SCOPED_TRACE(std::to_string(units) + " units, " + std::to_string(sk_items) + " items of " +
                       std::to_string(k_blocks) + " k-blocks, min piece " + std::to_string(min_piece));
          std::vector<int> owner_of(static_cast<size_t>(sk_items * k_blocks), -1);
          ASSERT_EQ(sinter_sk_boundary(&sk, 0), 0);
          ASSERT_EQ(sinter_sk_boundary(&sk, units), sk_items * k_blocks);
          for (int r = 0; r < units; ++r) {
            const int b = sinter_sk_boundary(&sk, r), e = sinter_sk_boundary(&sk, r + 1);
            ASSERT_LE(b, e);
            int pieces = 0;
            for (int pos = b; pos < e;) {
              const int item = pos / k_blocks, kb0 = pos - item * k_blocks;
              const int kb1 = std::min(k_blocks, kb0 + (e - pos));
              ASSERT_GE(kb1 - kb0, min_piece) << "range " << r << " piece at " << pos;
              if (kb0 != 0) {
                ASSERT_EQ(pos, b) << "only a range's first piece starts inside an item";
              }
              for (int i = pos; i < pos + kb1 - kb0; ++i) {
                ASSERT_EQ(owner_of[static_cast<size_t>(i)], -1) << "k-block " << i << " in two ranges";
                owner_of[static_cast<size_t>(i)] = r;
              }
              pos += kb1 - kb0;
              ++pieces;
            }
            ASSERT_LE(pieces, 2) << "range " << r;
          }
          // every k-block covered; the owner's search finds exactly the other ranges of each item
          for (int item = 0; item < sk_items; ++item) {
            const int owner = owner_of[static_cast<size_t>(item * k_blocks)];
            std::vector<int> expected;
            for (int kb = 0; kb < k_blocks; ++kb) {
              const int r = owner_of[static_cast<size_t>(item * k_blocks + kb)];
              ASSERT_GE(r, 0);
              if (r != owner && (expected.empty() || expected.back() != r)) expected.push_back(r);
            }
            std::vector<int> found;
            for (int r = owner + 1; r < units && sinter_sk_boundary(&sk, r) < (item + 1) * k_blocks; ++r) {
              found.push_back(r);
            }
            ASSERT_EQ(found, expected) << "item " << item;
          }
        }
      }
    }
  }
  EXPECT_GT(plans, 100);
}

TEST(JitMatmulSm90, HeldStoresNeedAKBlockPerChunk) {
  // held stores leave one 16 x 64 chunk a warp under each of the next tile's first k-blocks (4
  // for a 256-column tile, 2 for 128): K of 4 k-blocks holds on every coop config, K of 3 only on
  // the 128-column one
  for (int64_t k_size : {256, 192}) {
    const Graph g = mm(DType::bf16, 4096, 4096, k_size, true, true);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    for (int v = 0; v < 6; ++v) {
      const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
      const bool coop = k.description.find("coop(") != std::string::npos;
      // four chunks a warp: the 128x256 tiles' and the tall tile's (two row blocks of two)
      const bool wide = k.description.find("128x256") != std::string::npos || k.description.find("256x128") != std::string::npos;
      EXPECT_EQ(k.description.find("held-stores") != std::string::npos, coop && (k_size == 256 || !wide))
          << k.description;
    }
  }
}

TEST(JitMatmulSm90, OnlyStreamKAsksForEveryResidentUnit) {
  // whole tiles go on the engine's balanced grid; stream-K's cut kernels (8192^3) ask for every
  // unit, since their plan is made for it
  for (int64_t size : {int64_t{4096}, int64_t{8192}}) {
    const Graph g = mm(DType::bf16, size, size, size, true, false);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    const KernelSpec k = build_matmul_nth(g, r, h200(), 0).kernels.at(0);
    const bool cut = k.description.find("stream-k(") != std::string::npos;
    EXPECT_EQ(cut, size == 8192) << k.description;
    EXPECT_EQ(k.persistent_fill, cut) << k.description;
  }
}

TEST(JitMatmulSm90, CoopKernelsTakeAGpcOrder) {
  // The GPC order (engines/jit/gpc_order.hpp): coop kernels whose plain operand is A leave the
  // engine a SinterUnitOrder to fill, with their raster group's item rows. Whole-item kernels
  // start their walk there (hopper_direct_order); stream-K kernels (8192^3) keep index order for
  // their cut ranges and start only their whole items there (hopper_sk_plan_pieces). The tall
  // pair (A multicast) and ping-pong take none.
  for (int64_t size : {int64_t{4096}, int64_t{8192}}) {
    const Graph g = mm(DType::bf16, size, size, size, true, false);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    int whole_ordered = 0, cut_ordered = 0, unordered = 0;
    for (const auto& [v, rk] : distinct_configs(g, r, h200())) {
      const KernelSpec& k = rk.kernels.at(0);
      if (k.description.find("sm90 wgmma") == std::string::npos || k.description.find("direct-epilogue") == std::string::npos) continue;
      const bool cut = k.description.find("stream-k(") != std::string::npos;
      const bool want = k.description.find("coop(") != std::string::npos && k.description.find("multicast-a") == std::string::npos;
      SCOPED_TRACE(k.description);
      ASSERT_EQ(k.unit_order.has_value(), want);
      ++(!want ? unordered : cut ? cut_ordered : whole_ordered);
      EXPECT_EQ(k.source.find("kUnitOrder = true") != std::string::npos, want);
      EXPECT_EQ(k.source.find("kStreamK = true") != std::string::npos, cut);
      if (want) {
        EXPECT_EQ(k.unit_order->group_m, 8);  // item rows a raster group (sm90_direct_group_m)
        SinterUnitOrder packed{};
        std::memcpy(&packed, static_cast<const char*>(k.args.data()) + k.unit_order->arg_offset, sizeof packed);
        EXPECT_EQ(packed.units, 0) << "index order until the engine has the grid and the placement";
      }
    }
    // 4096^3: the default pair and 128x128 walk whole items; 8192^3: stream-K cuts the default
    // pair; the tall pair and ping-pong take none at either size
    EXPECT_GE(whole_ordered, size == 4096 ? 2 : 1) << size;
    EXPECT_GE(cut_ordered, size == 4096 ? 0 : 1) << size;
    EXPECT_GE(unordered, 2) << size;
    EXPECT_TRUE(build_matmul_nth(g, r, h200(), 0).kernels.at(0).unit_order.has_value()) << size;
  }
}

TEST(JitMatmulSm90, TraceConfigStampsHeldKernels) {
  // A config with trace=1 (never offered by matmul_configs): the held kernels stamp each CTA's
  // entry, PDL wait, consumer 0's start and end, and exit into the module's sinter_trace
  // (common/trace.cuh).
  // The benchmark's bare and offloaded fused 4096^3 kernels compile with it, with 0 spills and
  // pipelined wgmma (a printf made ptxas serialize them: C7510). (In-line fused epilogues may
  // spill a few bytes under it: a diagnostic build, not timed against others.)
  for (bool fused : {false, true}) {
    Graph g(fused ? "trace_fused" : "trace_bare");
    auto y = g.matmul(g.input("a", DType::bf16, {4096, 4096}), g.input("b", DType::bf16, {4096, 4096}, {1, 4096}));
    if (fused) {
      y = g.gelu(g.add(y, g.input("bias", DType::bf16, {4096})));
      g.output(g.amax(y), "amax");
    }
    g.output(y, "y");
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    for (const MatmulConfig& offered : matmul_configs(g, r, h200())) {
      EXPECT_FALSE(offered.direct.trace) << config_text(offered);  // never a candidate
      EXPECT_EQ(config_text(offered).find("trace"), std::string::npos) << config_text(offered);
    }
    MatmulConfig c = matmul_configs(g, r, h200()).at(0);
    ASSERT_EQ(c.tile, MatmulTile::sm90_direct);
    const KernelSpec plain = build_matmul(g, r, h200(), c).kernels.at(0);
    EXPECT_EQ(plain.description.find(" trace"), std::string::npos) << plain.description;
    EXPECT_EQ(plain.source.find("SinterCtaTrace"), std::string::npos);
    c.direct.trace = true;
    EXPECT_NE(config_text(c).find(" trace=1"), std::string::npos) << config_text(c);
    EXPECT_EQ(parse_kernel_config(config_text(c)), KernelConfig(c));
    const KernelSpec k = build_matmul(g, r, h200(), c).kernels.at(0);
    EXPECT_NE(k.description.find(fused ? "offloaded-epilogue" : "held-stores"), std::string::npos) << k.description;
    EXPECT_NE(k.description.find(" trace"), std::string::npos) << k.description;
    EXPECT_NE(k.source.find("using Trace = SinterCtaTrace;"), std::string::npos);
    EXPECT_NE(k.source.find("#include \"common/trace.cuh\""), std::string::npos);
    const cuda::CompileResult res = compile_reported("sm90_trace.cu", k.source);
    EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << k.description << res.log;
    expect_wgmma_pipelined(res.log, k.description);
  }
}

Graph mm_fp8(DType t, int64_t m, int64_t n, int64_t k, DType out, bool epilogue, bool b_row_major = false) {
  return testing::fp8_matmul_graph("mm_fp8", t, m, n, k, out, epilogue, b_row_major);
}

TEST(JitMatmulSm90, Fp8OperandsRunOnTheDirectKernelsOnly) {
  // two fp8 operands of one type, both k-contiguous: the direct-epilogue configs (wgmma k32 on
  // 128-element k-blocks, the same bytes a stage as 16-bit), no C-tile kernel (16-bit only);
  // every config compiles for sm_90a without spills
  for (DType t : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    const Graph g = mm_fp8(t, 4096, 4096, 4096, DType::bf16, t == DType::fp8_e4m3);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    EXPECT_NE(sm90_gemm_unsupported(g, r, h200()).find("not both bf16 or both f16"), std::string::npos);
    EXPECT_EQ(sm90_gemm_unsupported(g, r, h200(), true), "");
    const std::string word = t == DType::fp8_e4m3 ? "wgmma.e4m3" : "wgmma.e5m2";
    int direct = 0;
    for (int v = 0; v < matmul_config_count(g, r, h200()); ++v) {
      const KernelSpec k = build_matmul_nth(g, r, h200(), v).kernels.at(0);
      EXPECT_EQ(k.description.find("warpspec"), std::string::npos) << k.description;  // the C-tile kernel
      if (k.description.find("direct-epilogue") == std::string::npos) continue;
      ++direct;
      EXPECT_NE(k.description.find(word), std::string::npos) << k.description;
      EXPECT_NE(k.description.find("fp8-fast-accum"), std::string::npos) << k.description;
      EXPECT_NE(k.description.find("x128 stages"), std::string::npos) << k.description;  // 128-element k-blocks
      ASSERT_EQ(k.tensor_maps.size() >= 2, true);
      EXPECT_EQ(k.tensor_maps[0].data_type, CU_TENSOR_MAP_DATA_TYPE_UINT8);
      EXPECT_EQ(k.tensor_maps[0].box[0], 128u);
      const cuda::CompileResult res = compile_reported("sm90_fp8.cu", k.source);
      EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << k.description;
      expect_wgmma_pipelined(res.log, k.description);
      dump_cubin(std::string("sm90_fp8_") + std::string(to_string(t)) + "_v" + std::to_string(v), k, res);
    }
    EXPECT_EQ(direct, 6);
  }
  // what the direct kernels decline for fp8, with the reason
  auto why = [](const Graph& g) {
    const fuse::Partition p = fuse::partition_graph(g);
    return sm90_gemm_unsupported(g, matmul_region(g, p), h200(), true);
  };
  EXPECT_NE(why(mm_fp8(DType::fp8_e4m3, 256, 256, 256, DType::bf16, false, true)).find("fp8 wgmma reads b k-contiguous only"),
            std::string::npos);
  EXPECT_NE(why(mm_fp8(DType::fp8_e4m3, 64, 64, 100, DType::bf16, false)).find("not a positive multiple of 16"),
            std::string::npos);
  // the tensor cores' fp8 accumulation is below f32 precision: no f32 results, K up to 4096
  EXPECT_NE(why(mm_fp8(DType::fp8_e4m3, 256, 256, 256, DType::f32, false)).find("16-bit or fp8 results only"),
            std::string::npos);
  EXPECT_NE(why(mm_fp8(DType::fp8_e5m2, 256, 256, 4224, DType::bf16, false)).find("K = 4224 > 4096"),
            std::string::npos);
  EXPECT_EQ(why(mm_fp8(DType::fp8_e5m2, 256, 256, 4096, DType::f16, false)), "");
}

TEST(JitMatmulSm90, CompilesWithoutSpills) {
  // every Hopper variant (5 direct-epilogue configs, the C-tile kernel)
  for (int v = 0; v < 6; ++v) {
  for (bool epilogue : {false, true}) {
    for (DType t : {DType::bf16, DType::f16}) {
      // bf16 with a k-contiguous B, f16 with a row-major (n-contiguous) one
      const Graph g = mm(t, 333, t == DType::bf16 ? 257 : 264, 136, t == DType::bf16, epilogue);
      const fuse::Partition p = fuse::partition_graph(g);
      const RegionKernels rk = build_matmul_nth(g, matmul_region(g, p), h200(), v);
      const KernelSpec& k = rk.kernels.at(0);
      ASSERT_NE(k.description.find("sm90 wgmma"), std::string::npos) << k.description;
      cuda::CompileOptions opts;
      opts.arch = "sm_90a";
      opts.extra_options = {"--ptxas-options=-v"};
      cuda::CompileResult res;
      try {
        res = cuda::compile_cuda("sm90_gemm.cu", k.source, opts);
      } catch (const Error& e) {
        FAIL() << k.description << " does not compile:\n" << e.message() << "\n---- source ----\n" << k.source;
      }
      EXPECT_FALSE(res.cubin.empty());
      std::printf("  %s\n%s", k.description.c_str(), res.log.c_str());
      EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << res.log;
      expect_wgmma_pipelined(res.log, k.description);
      if (const char* dir = std::getenv("SINTER_DUMP_CUBIN_DIR")) {
        const std::string name = "sm90_gemm_v" + std::to_string(v) + "_" + (t == DType::bf16 ? "bf16" : "f16") +
                                 (epilogue ? "_epilogue" : "") + ".cubin";
        std::ofstream(std::filesystem::path(dir) / name, std::ios::binary)
            .write(res.cubin.data(), static_cast<std::streamsize>(res.cubin.size()));
        std::ofstream(std::filesystem::path(dir) / (name + ".cu")) << "// " << k.description << "\n" << k.source;
      }
    }
  }
}
}

}  // namespace
}  // namespace sinter::jit
