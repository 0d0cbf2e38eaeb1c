// The decode GEMV variants of matmul regions (codegen_decode_gemv.cpp, codegen_decode_tma.cpp):
// on sm_90a with an [N, K] weight of 64 MiB or more the TMA tile's cuts first, then the mma tile
// offered for M <= 16 only, the ffma tile for M <= 4 after it; the TMA tile's per-step settings
// are DecodeTmaConfig fields; all decline with a reason; picks the weight mapping and vector
// class from the strides; plans split-K and its workspace; and every class of its generated
// source compiles for sm_90a with no register spills (ptxas's report through NVRTC). Numerics
// are checked on the GPU (tests/gpu, GpuDecodeGemm). With SINTER_DUMP_CUBIN_DIR set, the cubins
// and sources are written there (for nvdisasm / cuobjdump).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cuda/nvrtc.hpp"
#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_common.hpp"
#include "jit/config_helpers.hpp"
#include "fuse/region.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

cuda::DeviceProperties h200() { return cuda::assumed_h200(); }

// The TMA tile's per-step settings: bn, 64-k boxes per warp a step, accumulator chains, producer warp.
DecodeTmaConfig tma(int bn, int warp_boxes, int chains, bool producer) {
  DecodeTmaConfig c;
  c.bn = bn;
  c.warp_boxes = warp_boxes;
  c.acc_chains = chains;
  c.producer_warp = producer;
  return c;
}
// The stream-K cut's first config: 16 KiB steps, one chain, thread 0 issuing.
const DecodeTmaConfig kStreamK16 = tma(128, 1, 1, false);

const fuse::Region& matmul_region(const Graph& g, const fuse::Partition& p) {
  for (const fuse::Region& r : p.regions) {
    if (r.kind == fuse::RegionKind::matmul) return r;
  }
  throw std::runtime_error("no matmul region in " + g.name());
}

// x [m, k] x W, W an [N, K] weight (k_major) or a row-major [K, N] one
Graph decode(DType t, int64_t m, int64_t n, int64_t k, bool k_major, bool epilogue) {
  Graph g("decode");
  auto a = g.input("a", t, {m, k});
  auto b = k_major ? g.input("b", t, {k, n}, {1, k}) : g.input("b", t, {k, n});
  auto y = g.matmul(a, b);
  if (epilogue) {
    y = g.gelu(g.add(y, g.input("bias", t, {n})));
    g.output(g.amax(y), "amax");
  }
  g.output(y, "y");
  return g;
}

struct Built {
  int variants = 0;
  std::string why_not;
  RegionKernels rk;  // variant 0: the decode tile wherever it applies
};

// The kernels of one decode tile (tma: the stream-K cut's first config, mma or ffma) for g's
// matmul region.
RegionKernels build_tile(const Graph& g, MatmulTile tile) {
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  if (tile == MatmulTile::decode_tma) return build_matmul_decode_tma(g, r, h200(), false, kStreamK16);
  return tile == MatmulTile::decode_ffma ? build_matmul_decode_ffma(g, r, h200()) : build_matmul_decode(g, r, h200());
}

Built build_first(const Graph& g, const cuda::DeviceProperties& dev = h200()) {
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  Built b;
  b.variants = matmul_config_count(g, r, dev);
  b.why_not = decode_gemv_unsupported(g, r, dev);
  b.rk = build_matmul_nth(g, r, dev, 0);
  return b;
}

// With SINTER_DUMP_CUBIN_DIR set, a compiled kernel's source and cubin are written there (to
// compare SASS across changes: cuobjdump -sass).
void dump_kernel(const KernelSpec& ks, const cuda::CompileResult& res) {
  const char* dir = std::getenv("SINTER_DUMP_CUBIN_DIR");
  if (!dir) return;
  std::string stem = ks.description;
  for (char& ch : stem) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  stem = std::string(dir) + "/" + stem.substr(0, 150);
  std::ofstream(stem + ".cu") << "// " << ks.description << "\n" << ks.source;
  std::ofstream(stem + ".cubin", std::ios::binary).write(res.cubin.data(), static_cast<std::streamsize>(res.cubin.size()));
}

// ks compiles for sm_90a with no spills (and is dumped with SINTER_DUMP_CUBIN_DIR).
void expect_compiles_without_spills(const KernelSpec& ks) {
  cuda::CompileOptions opts;
  opts.arch = "sm_90a";
  opts.extra_options = {"--ptxas-options=-v"};
  try {
    const cuda::CompileResult res = cuda::compile_cuda("decode_tma.cu", ks.source, opts);
    EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << res.log;
    dump_kernel(ks, res);
  } catch (const Error& e) {
    ADD_FAILURE() << ks.description << " does not compile:\n" << e.message();
  }
}

TEST(JitMatmulDecode, OfferedFirstForUpToSixteenRows) {
  // a 117 MB [N, K] weight: the TMA decode tile's whole-tile cut and its 3 stream-K configs, mma,
  // 5 direct-epilogue configs, the C-tile kernel, generic
  Built b = build_first(decode(DType::bf16, 16, 14336, 4096, true, false));
  EXPECT_EQ(b.why_not, "");
  EXPECT_EQ(b.variants, 12);
  EXPECT_NE(b.rk.kernels.at(0).description.find("decode tma"), std::string::npos) << b.rk.kernels.at(0).description;
  EXPECT_NE(b.rk.kernels.at(0).description.find("whole tiles"), std::string::npos) << b.rk.kernels.at(0).description;
  // an n-major (row-major [K, N]) weight: the register decode tiles first (mma, and ffma for
  // M <= 4), the TMA tile's [K, N] form after them (2 stream-K configs: not timed on its own yet;
  // its whole tiles would leave some SMs 128 columns against an even 109), then the Hopper GEMM
  // reading B transposed (5 direct-epilogue configs, the C-tile kernel), generic
  b = build_first(decode(DType::bf16, 1, 14336, 4096, false, false));
  EXPECT_EQ(b.variants, 2 + 2 + 5 + 1 + 1);
  EXPECT_NE(b.rk.kernels.at(0).description.find("decode gemv mma"), std::string::npos);
  b = build_first(decode(DType::bf16, 5, 14336, 4096, false, false));
  EXPECT_EQ(b.variants, 1 + 2 + 5 + 1 + 1);
  EXPECT_NE(b.rk.kernels.at(0).description.find("decode gemv mma"), std::string::npos);
  {
    // in a plan for megakernels the TMA tile goes first for [K, N] weights too (its task
    // prologue streams W while the task waits)
    const Graph kn = decode(DType::bf16, 1, 2048, 2048, false, false);
    const fuse::Partition p = fuse::partition_graph(kn);
    const fuse::Region& r = matmul_region(kn, p);
    const std::vector<MatmulConfig> mega = decode_configs(kn, r, h200(), true);
    ASSERT_FALSE(mega.empty());
    EXPECT_EQ(mega.front().tile, MatmulTile::decode_tma);
    EXPECT_EQ(decode_configs(kn, r, h200(), false).front().tile, MatmulTile::decode_gemv);
  }
  // M <= 4 with an [N, K] weight: tma rows, 3 tma stream-K, mma, ffma, the Hopper GEMMs, generic
  b = build_first(decode(DType::bf16, 4, 14336, 4096, true, false));
  EXPECT_EQ(b.variants, 13);
  EXPECT_NE(b.rk.kernels.at(0).description.find("decode tma"), std::string::npos)
      << b.rk.kernels.at(0).description;
  // a weight under 64 MiB: the register tiles first, the TMA tile after them; the other tiles
  // stay available to the tuner, in their order
  const Graph g = decode(DType::bf16, 8, 1000, 1000, true, false);
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  EXPECT_EQ(decode_weight_bytes(g, r), 2000000);
  EXPECT_EQ(matmul_config_index(g, r, h200(), MatmulTile::decode_gemv), 0);
  EXPECT_EQ(matmul_config_index(g, r, h200(), MatmulTile::decode_ffma), -1);
  EXPECT_EQ(matmul_config_index(g, r, h200(), MatmulTile::decode_tma), 1);
  EXPECT_EQ(matmul_config_index(g, r, h200(), MatmulTile::decode_tma_rows), -1);  // 8 rows per SM
  EXPECT_EQ(matmul_config_index(g, r, h200(), MatmulTile::sm90_direct), 4);  // after 3 stream-K configs
  EXPECT_EQ(matmul_config_index(g, r, h200(), MatmulTile::sm90_ctile), 9);  // after the 5 direct configs
  EXPECT_EQ(matmul_config_index(g, r, h200(), MatmulTile::generic), matmul_config_count(g, r, h200()) - 1);
  EXPECT_NE(build_matmul_nth(g, r, h200(), 1).kernels.at(0).description.find("decode tma"), std::string::npos);
  EXPECT_NE(build_matmul_nth(g, r, h200(), 4).kernels.at(0).description.find("sm90 wgmma"), std::string::npos);
}

// The TMA tile's configs in the candidate list: whole tiles with the defaults (32 KiB steps, 2
// chains, a producer warp); stream-K with 16 KiB steps first, then the defaults, then for M > 1
// 32-row tiles; each config's text names its fields and reads back to the same config.
TEST(JitMatmulDecode, TmaConfigsOfferedAndTheirText) {
  for (int64_t m : {1, 16}) {
    const Graph g = decode(DType::bf16, m, 14336, 4096, true, false);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    EXPECT_EQ(decode_tma_configs(g, r, h200(), true), std::vector<DecodeTmaConfig>{DecodeTmaConfig{}});
    std::vector<DecodeTmaConfig> sk = {kStreamK16, DecodeTmaConfig{}};
    if (m > 1) sk.push_back(tma(32, 1, 1, false));
    EXPECT_EQ(decode_tma_configs(g, r, h200(), false), sk);
    std::vector<std::string> texts;
    for (const MatmulConfig& c : matmul_configs(g, r, h200())) {
      if (c.tile != MatmulTile::decode_tma && c.tile != MatmulTile::decode_tma_rows) continue;
      texts.push_back(config_text(c));
      EXPECT_EQ(parse_kernel_config(texts.back()), KernelConfig(c)) << texts.back();
      EXPECT_EQ(build_region(g, r, h200(), parse_kernel_config(texts.back())).kernels.at(0).source,
                build_matmul(g, r, h200(), c).kernels.at(0).source);
    }
    std::vector<std::string> want = {"matmul tile=decode_tma_rows warp_boxes=2 chains=2 producer=1",
                                     "matmul tile=decode_tma bn=128 warp_boxes=1 chains=1 producer=0",
                                     "matmul tile=decode_tma bn=128 warp_boxes=2 chains=2 producer=1"};
    if (m > 1) want.push_back("matmul tile=decode_tma bn=32 warp_boxes=1 chains=1 producer=0");
    EXPECT_EQ(texts, want);
  }
  // left-out fields keep the defaults; settings the kernel has no form for are declined with the
  // reason (and not built)
  EXPECT_EQ(parse_kernel_config("matmul tile=decode_tma_rows"), KernelConfig(MatmulConfig{MatmulTile::decode_tma_rows, {}, {}}));
  const Graph g = decode(DType::bf16, 8, 14336, 4096, true, false);
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region& r = matmul_region(g, p);
  struct Bad {
    DecodeTmaConfig c;
    bool whole;
    const char* why;
  };
  for (const Bad& bad : {Bad{tma(128, 4, 2, true), false, "warp_boxes = 4 (1 or 2)"},
                         Bad{tma(128, 2, 3, true), true, "chains = 3 (1, 2 or 4)"},
                         Bad{tma(48, 1, 1, false), false, "bn = 48 (32, 64 or 128)"},
                         Bad{tma(64, 2, 2, true), true, "bn = 64 with whole tiles"}}) {
    EXPECT_NE(decode_tma_unsupported(g, r, h200(), bad.whole, bad.c).find(bad.why), std::string::npos) << bad.why;
    EXPECT_THROW(build_matmul_decode_tma(g, r, h200(), bad.whole, bad.c), Error);
  }
}

// The TMA tile's stream-K split: one CTA per SM, each with the same number of 16 KiB steps (to
// one), split tiles meeting through a workspace sized for the most CTAs that share a tile.
TEST(JitMatmulDecode, TmaStreamKSplit) {
  // 4096 x 14336, tiles of 128 rows x steps of 64 k: 112 tiles x 64 steps = 7168 steps over 132
  // CTAs (54 or 55 each)
  RegionKernels rk = build_tile(decode(DType::bf16, 1, 14336, 4096, true, false), MatmulTile::decode_tma);
  const KernelSpec& k = rk.kernels.at(0);
  EXPECT_NE(k.description.find("decode tma mma.bf16 m8x128 k64 stages6 w:[N,K] streamk132x55 steps"), std::string::npos)
      << k.description;
  EXPECT_EQ(k.launch.grid.x, 132u);
  EXPECT_EQ(k.launch.block.x, 256u);
  EXPECT_EQ(k.tensor_maps.size(), 2u);
  EXPECT_EQ(k.tensor_maps.at(1).box[0], 64u);  // W: 64 k x 128 rows, one box a step
  EXPECT_EQ(k.tensor_maps.at(1).box[1], 128u);
  // a tile of 64 steps spans 2 or 3 CTAs of 54-55: 112 tiles x 3 partials of 8 x 128 floats + counters
  EXPECT_GE(rk.workspace_bytes, size_t{112} * 3 * 8 * 128 * 4 + 112 * 4);
  // fewer steps than SMs: one CTA per step, every tile whole in one CTA (no partials)
  rk = build_tile(decode(DType::f16, 16, 300, 64, true, true), MatmulTile::decode_tma);
  EXPECT_EQ(rk.kernels.at(0).launch.grid.x, 3u) << rk.kernels.at(0).description;
  EXPECT_NE(rk.kernels.at(0).description.find("m16x128"), std::string::npos);
  // a weight read [K, N] (n contiguous): its tensor map is {N, K, batches} with boxes of 64 n x
  // 64 k; tiles of 32 columns are declined with the reason (a box is 64 n wide)
  const Graph kn = decode(DType::bf16, 1, 512, 512, false, false);
  const fuse::Partition p = fuse::partition_graph(kn);
  EXPECT_EQ(decode_tma_unsupported(kn, matmul_region(kn, p), h200()), "");
  rk = build_tile(kn, MatmulTile::decode_tma);
  const KernelSpec& kk = rk.kernels.at(0);
  EXPECT_NE(kk.description.find("m8x128 k64 stages6 w:[K,N] streamk32x1 steps"), std::string::npos) << kk.description;
  EXPECT_NE(kk.source.find("kKnWeight = true"), std::string::npos);
  const TensorMapSlot& w = kk.tensor_maps.at(1);
  EXPECT_EQ(w.dims[0], 512u);  // n
  EXPECT_EQ(w.dims[1], 512u);  // k
  EXPECT_EQ(w.strides[0], 1024u);
  EXPECT_EQ(w.box[0], 64u);
  EXPECT_EQ(w.box[1], 64u);
  const std::string why = decode_tma_unsupported(kn, matmul_region(kn, p), h200(), false, tma(32, 1, 1, false));
  EXPECT_NE(why.find("bn = 32 with an n-contiguous [K, N] weight"), std::string::npos) << why;
}

// The TMA tile's [K, N] form (n-contiguous weights, kKnWeight): stream-K tiles of 64 and 128
// columns with every per-step setting, and whole tiles of whole 64-column boxes (64 or 128
// columns, whichever leaves the busiest SM fewer; declined past 10% over the even share), never
// chunked; each compiles for sm_90a without spills.
TEST(JitMatmulDecode, TmaKnWeights) {
  for (int bn : {64, 128}) {
    for (int wb : {1, 2}) {
      SCOPED_TRACE("bn " + std::to_string(bn) + " warp_boxes " + std::to_string(wb));
      const Graph g = decode(DType::bf16, wb == 1 ? 1 : 16, 2048, 4096, false, true);
      const fuse::Partition p = fuse::partition_graph(g);
      const RegionKernels rk = build_matmul_decode_tma(g, matmul_region(g, p), h200(), false, tma(bn, wb, wb, wb == 2));
      const KernelSpec& ks = rk.kernels.at(0);
      EXPECT_EQ(ks.description.find(" chunked"), std::string::npos) << ks.description;
      EXPECT_NE(ks.description.find("w:[K,N] streamk"), std::string::npos) << ks.description;
      EXPECT_NE(ks.source.find("kKnWeight = true"), std::string::npos);
      EXPECT_NE(ks.source.find("kChunked = false"), std::string::npos);
      expect_compiles_without_spills(ks);
    }
  }
  struct Case {
    int64_t m, n, k;
    uint32_t ctas;
    const char* words;
  };
  // 40000 columns: 625 tiles of 64, at most 5 a CTA (320 columns against an even 304); 8448: one
  // tile of 64 a CTA; 16896: one of 128; 8192 (the decode stack's gate and up): 128 tiles of 64 on
  // 128 CTAs (64 columns against an even 63)
  for (Case c : {Case{16, 40000, 264, 132, "w:[K,N] whole tiles 5x64 rows"},
                 Case{1, 8448, 512, 132, "w:[K,N] whole tiles 1x64 rows"},
                 Case{5, 16896, 1000, 132, "w:[K,N] whole tiles 1x128 rows"},
                 Case{1, 8192, 2048, 128, "w:[K,N] whole tiles 1x64 rows"}}) {
    const Graph g = decode(DType::bf16, c.m, c.n, c.k, false, true);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    EXPECT_EQ(decode_tma_unsupported(g, r, h200(), true), "") << g.name();
    const RegionKernels rk = build_matmul_decode_tma(g, r, h200(), true);
    const KernelSpec& ks = rk.kernels.at(0);
    EXPECT_NE(ks.description.find(c.words), std::string::npos) << ks.description;
    EXPECT_EQ(ks.launch.grid.x, c.ctas) << ks.description;
    EXPECT_NE(ks.source.find("kKnWeight = true"), std::string::npos);
    expect_compiles_without_spills(ks);
  }
  // 14336 columns: 112 tiles of 128 (or 224 of 64, two a CTA) give an SM 128 columns against an
  // even 109: declined, stream-K takes it
  const Graph g = decode(DType::bf16, 1, 14336, 4096, false, true);
  const fuse::Partition p = fuse::partition_graph(g);
  const std::string why = decode_tma_unsupported(g, matmul_region(g, p), h200(), true);
  EXPECT_NE(why.find("give an SM up to 128 rows against an even share of 109"), std::string::npos) << why;
  EXPECT_EQ(matmul_config_index(g, matmul_region(g, p), h200(), MatmulTile::decode_tma_rows), -1);
  EXPECT_GE(matmul_config_index(g, matmul_region(g, p), h200(), MatmulTile::decode_tma), 0);
}

// The TMA tile's narrower stream-K tiles (bn 32, 64) read a step as ONE chunked box {64 k, bn
// rows, 128 / bn chunks} when K % 64 == 0 and there is one batch (separate boxes otherwise);
// every form compiles for sm_90a without spills.
TEST(JitMatmulDecode, TmaShapesChunkedBoxes) {
  for (int bn : {32, 64, 128}) {
    SCOPED_TRACE("bn " + std::to_string(bn));
    for (int64_t k : {int64_t{4096}, int64_t{1000}}) {
      const Graph g = decode(DType::bf16, 16, 14336, k, true, true);
      const fuse::Partition p = fuse::partition_graph(g);
      const RegionKernels rk = build_matmul_decode_tma(g, matmul_region(g, p), h200(), false, tma(bn, 1, 1, false));
      const KernelSpec& ks = rk.kernels.at(0);
      const bool chunked = bn < 128 && k % 64 == 0;
      EXPECT_EQ(ks.description.find(" chunked") != std::string::npos, chunked) << ks.description;
      EXPECT_NE(ks.source.find("kChunked = " + std::string(chunked ? "true" : "false")), std::string::npos);
      EXPECT_NE(ks.source.find("kWholeTiles = false"), std::string::npos);
      EXPECT_NE(ks.source.find("kBN = " + std::to_string(bn) + ","), std::string::npos);
      EXPECT_EQ(ks.launch.block.x, 256u);
      ASSERT_EQ(ks.tensor_maps.size(), 2u);
      const TensorMapSlot& w = ks.tensor_maps.back();
      if (chunked) {
        EXPECT_EQ(w.dims[0], 64u);
        EXPECT_EQ(w.dims[1], 14336u);
        EXPECT_EQ(w.dims[2], static_cast<uint64_t>(k / 64));
        EXPECT_EQ(w.strides[0], static_cast<uint64_t>(2 * k));
        EXPECT_EQ(w.strides[1], 128u);
        EXPECT_EQ(w.box[1], static_cast<uint32_t>(bn));
        EXPECT_EQ(w.box[2], static_cast<uint32_t>(128 / bn));
      } else {
        EXPECT_EQ(w.dims[0], static_cast<uint64_t>(k));
        EXPECT_EQ(w.box[2], 1u);
      }
      expect_compiles_without_spills(ks);
    }
  }
}

// The TMA tile's whole-tile cut: about N / SMs rows per tile, as many tiles as SMs (or whole
// multiples), the W box as high as a tile, no partials in the workspace, no combine in the
// kernel, by default 32 KiB steps, 2 chains and a producer warp; compiles for sm_90a without
// spills. Declined below 64 rows per SM.
TEST(JitMatmulDecode, TmaWholeTiles) {
  struct Case {
    int64_t m, n, k;
    uint32_t rows, ctas;
    const char* words;
  };
  for (Case c : {Case{1, 14336, 4096, 109, 132, "m8x128 k128 stages3 chains2 producer-warp warp-boxes2 w:[N,K] whole tiles 1x109 rows"},
                 Case{16, 14336, 1000, 109, 132, "m16x128 k128 stages3 chains2 producer-warp warp-boxes2 w:[N,K] whole tiles 1x109 rows"},
                 Case{8, 40000, 264, 102, 132, "m8x128 k128 stages3 chains2 producer-warp warp-boxes2 w:[N,K] whole tiles 3x102 rows"},
                 Case{1, 9001, 512, 69, 131, "m8x128 k128 stages3 chains2 producer-warp warp-boxes2 w:[N,K] whole tiles 1x69 rows"}}) {
    const Graph g = decode(DType::bf16, c.m, c.n, c.k, true, true);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    EXPECT_EQ(decode_tma_unsupported(g, r, h200(), true), "");
    const RegionKernels rk = build_matmul_decode_tma(g, r, h200(), true);
    const KernelSpec& ks = rk.kernels.at(0);
    EXPECT_NE(ks.description.find(c.words), std::string::npos) << ks.description;
    EXPECT_EQ(ks.launch.grid.x, c.ctas) << ks.description;
    EXPECT_EQ(ks.launch.block.x, 288u) << "8 consumer warps and the producer warp";
    ASSERT_EQ(ks.tensor_maps.size(), 2u);
    EXPECT_EQ(ks.tensor_maps.back().box[1], c.rows);
    EXPECT_NE(ks.source.find("kWholeTiles = true"), std::string::npos);
    EXPECT_LT(rk.workspace_bytes, size_t{64} << 10) << "no partials";
    expect_compiles_without_spills(ks);
  }
  const Graph small = decode(DType::bf16, 1, 4096, 4096, true, false);
  const fuse::Partition p = fuse::partition_graph(small);
  const std::string why = decode_tma_unsupported(small, matmul_region(small, p), h200(), true);
  EXPECT_NE(why.find("whole tiles of 32 weight rows (fewer than 64 per SM)"), std::string::npos) << why;
  EXPECT_EQ(matmul_config_index(small, matmul_region(small, p), h200(), MatmulTile::decode_tma_rows), -1);
}

// The per-step settings (DecodeTmaConfig: accumulator chains, producer warp, 64-k boxes per warp
// a step) on both cuts: they compile for sm_90a without spills; a producer warp adds 32 threads
// and its epilogue functor syncs the consumers on named barrier 1, not __syncthreads; 32 KiB
// steps take a 3-stage ring (stream-K's K % 64 == 0 steps as one chunked box of 2 k boxes).
TEST(JitMatmulDecode, TmaStepSettings) {
  for (int chains : {1, 2, 4})
  for (bool producer : {false, true})
  for (int boxes : {1, 2})
  for (bool whole : {true, false}) {
    SCOPED_TRACE("chains " + std::to_string(chains) + " producer " + std::to_string(producer) + " warp boxes " +
                 std::to_string(boxes) + (whole ? " whole" : " stream-K"));
    if (chains == 2 && boxes == 1 && !producer) continue;  // keep the count of kernels down
    // column sums: the epilogue functor's own barrier
    Graph g("decode_steps");
    auto y = g.add(g.matmul(g.input("a", DType::bf16, {16, 4096}), g.input("b", DType::bf16, {4096, 14336}, {1, 4096})),
                   g.input("bias", DType::bf16, {14336}));
    g.output(y, "y");
    g.output(g.sum(y, {0}), "cols");
    const fuse::Partition p = fuse::partition_graph(g);
    const DecodeTmaConfig c = tma(128, boxes, chains, producer);
    EXPECT_EQ(decode_tma_unsupported(g, matmul_region(g, p), h200(), whole, c), "");
    const KernelSpec ks = build_matmul_decode_tma(g, matmul_region(g, p), h200(), whole, c).kernels.at(0);
    EXPECT_EQ(ks.launch.block.x, producer ? 288u : 256u);
    EXPECT_EQ(ks.description.find(" chains4") != std::string::npos, chains == 4) << ks.description;
    EXPECT_EQ(ks.description.find(" producer-warp") != std::string::npos, producer) << ks.description;
    EXPECT_EQ(ks.description.find(" warp-boxes2") != std::string::npos, boxes == 2) << ks.description;
    EXPECT_NE(ks.description.find(boxes == 2 ? " k128 stages3" : " k64 stages6"), std::string::npos) << ks.description;
    EXPECT_EQ(ks.description.find(" chunked") != std::string::npos, !whole && boxes == 2) << ks.description;
    ASSERT_EQ(ks.tensor_maps.size(), 2u);
    EXPECT_EQ(ks.tensor_maps.back().box[2], !whole && boxes == 2 ? 2u : 1u);
    const size_t at = ks.source.find("struct Epilogue");
    ASSERT_NE(at, std::string::npos);
    const std::string functor = ks.source.substr(at, ks.source.find("\n};", at) - at);
    EXPECT_EQ(functor.find("__syncthreads") != std::string::npos, !producer) << functor;
    EXPECT_EQ(functor.find("named_barrier_sync(1, kDecodeTmaThreads)") != std::string::npos, producer) << functor;
    expect_compiles_without_spills(ks);
  }
}

// Each column-sum output of the epilogue declares its own static shared buffer (8 warps x bn
// floats): the TMA tile counts them against the shared-memory limit, so a region with more than
// fit is declined with a reason instead of failing to launch.
TEST(JitMatmulDecode, TmaCountsColumnSumBuffers) {
  for (int sums : {1, 28, 29}) {
    SCOPED_TRACE(std::to_string(sums) + " column-sum outputs");
    Graph g("decode_column_sums");
    auto y = g.matmul(g.input("a", DType::bf16, {4, 4096}), g.input("b", DType::bf16, {4096, 14336}, {1, 4096}));
    g.output(y, "y");
    for (int i = 0; i < sums; ++i) g.output(g.sum(g.mul(y, 1.0 + i), {0}), "s" + std::to_string(i));
    const fuse::Partition p = fuse::partition_graph(g);
    const std::string why = decode_tma_unsupported(g, matmul_region(g, p), h200(), true);
    // 3 stages of 34 KiB (M tile 8) and the C tile leave room for 28 4 KiB buffers, not 29
    if (sums <= 28) {
      EXPECT_EQ(why, "");
    } else {
      EXPECT_NE(why.find("bytes of shared memory per block"), std::string::npos) << why;
    }
  }
}

TEST(JitMatmulDecode, DeclinesWithAReason) {
  Built b = build_first(decode(DType::bf16, 17, 256, 256, true, false));
  EXPECT_NE(b.why_not.find("M = 17 is more than 16 rows"), std::string::npos) << b.why_not;
  EXPECT_EQ(b.variants, 7);
  EXPECT_EQ(b.rk.kernels.at(0).description.find("decode"), std::string::npos);
  b = build_first(decode(DType::f32, 4, 256, 256, true, false));
  EXPECT_NE(b.why_not.find("not both bf16 or both f16"), std::string::npos) << b.why_not;
  // the ffma tile: M <= 4
  for (bool k_major : {true, false}) {
    const Graph g = decode(DType::bf16, 5, 256, 256, k_major, false);
    const fuse::Partition p = fuse::partition_graph(g);
    const std::string why = decode_ffma_unsupported(g, matmul_region(g, p), h200());
    EXPECT_NE(why.find("M = 5 is more than 4 rows"), std::string::npos) << why;
    EXPECT_EQ(decode_gemv_unsupported(g, matmul_region(g, p), h200()), "");
    EXPECT_THROW(build_matmul_decode_ffma(g, matmul_region(g, p), h200()), Error);
  }
  cuda::DeviceProperties turing = h200();
  turing.cc_major = 7;
  turing.arch = "sm_75";
  b = build_first(decode(DType::bf16, 4, 256, 256, true, false), turing);
  EXPECT_NE(b.why_not.find("sm_80 or newer"), std::string::npos) << b.why_not;
  {
    const Graph g = decode(DType::bf16, 4, 256, 256, true, false);
    const fuse::Partition p = fuse::partition_graph(g);
    const std::string why = decode_tma_unsupported(g, matmul_region(g, p), turing);
    EXPECT_NE(why.find("needs sm_90a"), std::string::npos) << why;
  }
  // forcing it where it does not apply is a generator bug, reported as such
  const Graph g = decode(DType::bf16, 17, 256, 256, true, false);
  const fuse::Partition p = fuse::partition_graph(g);
  EXPECT_THROW(build_matmul_decode(g, matmul_region(g, p), h200()), Error);
}

TEST(JitMatmulDecode, MappingVectorsAndSplit) {
  struct Case {
    int64_t m, n, k;
    bool k_major;
    const char* expect;
  };
  for (const Case& c : {Case{1, 14336, 4096, true, "m8x128 w:[N,K]-vec8 x:vec8 splitk2x2048"},
                        Case{16, 14336, 4096, false, "m16x128 w:[K,N]-vec8 x:vec8 splitk2x2048"},
                        Case{3, 1001, 777, true, "m8x128 w:[N,K]-scalar x:scalar"},
                        Case{3, 1001, 777, false, "m8x128 w:[K,N]-scalar x:scalar"},
                        Case{9, 1000, 1064, false, "m16x128 w:[K,N]-vec8 x:vec8"}}) {
    Built b;
    b.rk = build_tile(decode(DType::bf16, c.m, c.n, c.k, c.k_major, false), MatmulTile::decode_gemv);
    const KernelSpec& k = b.rk.kernels.at(0);
    EXPECT_NE(k.description.find(c.expect), std::string::npos) << k.description << " (want " << c.expect << ")";
    // the grid is (column tiles) x (splits); the workspace holds the partials and counters
    const int64_t tiles = (c.n + 127) / 128;
    EXPECT_EQ(k.launch.grid.x % tiles, 0u) << k.description;
    EXPECT_GE(b.rk.workspace_bytes, static_cast<size_t>(tiles) * 4);
  }
  // split-K at 4096 x 14336: 112 column tiles x 2 chunks (one wave of two CTAs per SM);
  // partials of 8 rows x 128 floats
  const RegionKernels b = build_tile(decode(DType::bf16, 1, 14336, 4096, true, false), MatmulTile::decode_gemv);
  EXPECT_EQ(b.kernels.at(0).launch.grid.x, 112u * 2);
  EXPECT_GE(b.workspace_bytes, size_t{112} * 2 * 8 * 128 * 4);
  // no split when the column tiles alone fill the wave
  const RegionKernels wide = build_tile(decode(DType::bf16, 4, 40000, 512, true, false), MatmulTile::decode_gemv);
  EXPECT_NE(wide.kernels.at(0).description.find("splitk1x512"), std::string::npos) << wide.kernels.at(0).description;
}

TEST(JitMatmulDecode, FfmaMappingAndSplit) {
  struct Case {
    int64_t m, n, k;
    const char* expect;
    unsigned grid;  // column tiles (32 columns for [N, K], 256 for [K, N]) x splits
    bool k_major = true;
  };
  // 4096 x 14336: 448 tiles x 4 chunks = 7 waves of 264 CTAs (one chunk would take 2 waves of
  // 4096); the Llama decode stack's weights: q/o 2048x2048, k/v 512x2048, gate/up 8192x2048,
  // down 2048x8192 (M = 1); odd shapes take element loads and an M tile of 2 or 4
  for (const Case& c : {Case{1, 14336, 4096, "ffma.bf16 m1x32 ring4 w:[N,K]-vec8 x:vec8 splitk4x1024", 448 * 4},
                        Case{4, 14336, 4096, "m4x32 ring3 w:[N,K]-vec8 x:vec8 splitk4x1024", 448 * 4},
                        Case{1, 2048, 2048, "m1x32 ring4 w:[N,K]-vec8 x:vec8 splitk4x512", 64 * 4},
                        Case{1, 512, 2048, "splitk8x256", 16 * 8},
                        Case{1, 8192, 2048, "splitk1x2048", 256},
                        Case{1, 2048, 8192, "splitk4x2048", 64 * 4},
                        Case{2, 1001, 777, "m2x32 ring4 w:[N,K]-scalar x:scalar splitk4x256", 32 * 4},
                        Case{3, 100, 40000, "m4x32 ring3 w:[N,K]-vec8 x:vec8 splitk", 0},
                        // [K, N]: 56 tiles of 256 columns x 32 chunks of 128 k rows = 7 waves
                        Case{1, 14336, 4096, "ffma.bf16 m1x256 ring4 w:[K,N]-vec8 x:vec8 splitk32x128", 56 * 32, false},
                        Case{3, 1001, 777, "m4x256 ring3 w:[K,N]-scalar x:scalar", 0, false}}) {
    const RegionKernels rk = build_tile(decode(DType::bf16, c.m, c.n, c.k, c.k_major, false), MatmulTile::decode_ffma);
    const KernelSpec& k = rk.kernels.at(0);
    EXPECT_NE(k.description.find(c.expect), std::string::npos) << k.description << " (want " << c.expect << ")";
    const int64_t bn = c.k_major ? 32 : 256, tiles = (c.n + bn - 1) / bn;
    EXPECT_EQ(k.launch.grid.x % tiles, 0u) << k.description;
    if (c.grid != 0) {
      EXPECT_EQ(k.launch.grid.x, c.grid) << k.description;
    }
    // every chunk fits the x stage: 16384 elements over the M tile
    const int64_t m_tile = c.m <= 1 ? 1 : c.m <= 2 ? 2 : 4;
    const int64_t splits = k.launch.grid.x / tiles;
    EXPECT_LE((c.k + splits - 1) / splits, 16384 / m_tile) << k.description;
    if (splits > 1) {
      EXPECT_GE(rk.workspace_bytes, static_cast<size_t>(tiles * splits * m_tile * bn * 4));
    }
  }
}

TEST(JitMatmulDecode, BatchedAndBroadcastWeight) {
  Graph g("decode_batched");
  auto a = g.input("a", DType::f16, {4, 2, 96});
  auto b = g.input("b", DType::f16, {96, 200});  // one weight for every batch
  g.output(g.matmul(a, b), "y");
  const Built built = build_first(g);
  EXPECT_EQ(built.why_not, "");
  // batches x column tiles: 4 x 1 of 256 columns on the ffma tile, 4 x 2 of 128 on mma (first)
  const RegionKernels ffma_rk = build_tile(g, MatmulTile::decode_ffma);
  const KernelSpec& ffma = ffma_rk.kernels.at(0);
  EXPECT_NE(ffma.description.find("ffma.f16 m2x256"), std::string::npos) << ffma.description;
  EXPECT_EQ(ffma.launch.grid.x % 4, 0u);
  EXPECT_EQ(build_tile(g, MatmulTile::decode_gemv).kernels.at(0).launch.grid.x % 8, 0u);
  // the TMA tile (an [N, K] weight) folds the broadcast weight's batch into M (4 x 2 = 8 rows)
  Graph nk("decode_batched_nk");
  nk.output(nk.matmul(nk.input("a", DType::f16, {4, 2, 96}), nk.input("b", DType::f16, {96, 200}, {1, 96})), "y");
  const KernelSpec tma = build_tile(nk, MatmulTile::decode_tma).kernels.at(0);
  EXPECT_NE(tma.description.find("m8x128"), std::string::npos) << tma.description;
  EXPECT_NE(tma.description.find("batch-folded"), std::string::npos) << tma.description;
}

TEST(JitMatmulDecode, CompilesWithoutSpills) {
  struct Case {
    DType t;
    int64_t m, n, k;
    bool k_major, epilogue;
  };
  for (const Case& c : {Case{DType::bf16, 1, 14336, 4096, true, false}, Case{DType::bf16, 16, 14336, 4096, true, true},
                        Case{DType::bf16, 8, 14336, 4096, false, false}, Case{DType::f16, 16, 4096, 4096, false, true},
                        Case{DType::bf16, 3, 1001, 777, true, true}, Case{DType::f16, 13, 1001, 777, false, true},
                        Case{DType::f16, 2, 4096, 4096, true, true}, Case{DType::bf16, 4, 2048, 8192, true, false},
                        Case{DType::bf16, 1, 2048, 2048, false, true}, Case{DType::f16, 4, 1001, 777, false, true}}) {
   for (MatmulTile tile : {MatmulTile::decode_tma, MatmulTile::decode_ffma, MatmulTile::decode_gemv}) {
    const Graph g = decode(c.t, c.m, c.n, c.k, c.k_major, c.epilogue);
    const fuse::Partition p = fuse::partition_graph(g);
    if (matmul_config_index(g, matmul_region(g, p), h200(), tile) < 0) continue;
    const RegionKernels rk = build_tile(g, tile);
    const KernelSpec& k = rk.kernels.at(0);
    ASSERT_NE(k.description.find(tile == MatmulTile::decode_tma ? "decode tma" : "decode gemv"), std::string::npos)
        << k.description;
    cuda::CompileOptions opts;
    opts.arch = "sm_90a";
    opts.extra_options = {"--ptxas-options=-v"};
    cuda::CompileResult res;
    try {
      res = cuda::compile_cuda("decode_gemv.cu", k.source, opts);
    } catch (const Error& e) {
      FAIL() << k.description << " does not compile:\n" << e.message() << "\n---- source ----\n" << k.source;
    }
    EXPECT_FALSE(res.cubin.empty());
    std::printf("  %s\n%s", k.description.c_str(), res.log.c_str());
    EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << res.log;
    if (const char* dir = std::getenv("SINTER_DUMP_CUBIN_DIR")) {
      const std::string name = std::string("decode_") + (tile == MatmulTile::decode_ffma ? "ffma_" : tile == MatmulTile::decode_tma ? "tma_" : "mma_") +
                               (c.k_major ? "nk_" : "kn_") + "m" + std::to_string(c.m) +
                               "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k) +
                               (c.epilogue ? "_epilogue" : "") + ".cubin";
      std::ofstream(std::filesystem::path(dir) / name, std::ios::binary)
          .write(res.cubin.data(), static_cast<std::streamsize>(res.cubin.size()));
      std::ofstream(std::filesystem::path(dir) / (name + ".cu")) << "// " << k.description << "\n" << k.source;
    }
   }
  }
}

// Task boxes (engines/task_box.hpp) of the decode tiles, for the megakernel's tile-level waits:
// the TMA tile's whole-tile cut with one tile a CTA writes its tile's columns of the result and
// reads those of an epilogue operand of the result's shape (here the other half of a SwiGLU), but
// reads x whole (no box); its stream-K cut and several tiles a CTA declare none. The register
// tile boxes its epilogue operand by column tile too.
TEST(JitMatmulDecode, TaskBoxesOfTheResultAndItsEpilogueOperands) {
  auto swiglu = [](bool kn, int64_t n) {
    Graph g(std::string("decode_swiglu_") + (kn ? "kn" : "nk") + std::to_string(n));
    const int64_t k = 2048;
    auto x = g.input("x", DType::bf16, {1, k});
    auto w = kn ? g.input("w", DType::bf16, {k, n}) : g.input("w", DType::bf16, {k, n}, {1, k});
    auto up = g.input("up", DType::bf16, {1, n});
    g.output(g.mul(g.silu(g.matmul(x, w)), up), "y");
    return g;
  };
  {
    const Graph g = swiglu(true, 8192);
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region& r = matmul_region(g, p);
    const KernelSpec ks = build_matmul_decode_tma(g, r, h200(), true).kernels.at(0);
    ASSERT_EQ(ks.launch.grid.x, 128u) << ks.description;
    ASSERT_EQ(ks.task_boxes.size(), 2u);  // up (read), y (written); x and w none
    for (const TaskBox& b : ks.task_boxes) {
      EXPECT_EQ(b.rows, 1);
      EXPECT_EQ(b.cols, 8192);
      EXPECT_EQ(b.box_cols, 64);
      ASSERT_EQ(b.digits.size(), 1u);
      EXPECT_EQ(b.digits[0].radix, 128);
      EXPECT_EQ(b.digits[0].cols, 64);
      const PlacedBox at5 = place_box(b, 5);
      EXPECT_EQ(at5.col, 320);
      EXPECT_EQ(at5.cols, 64);
    }
    EXPECT_FALSE(ks.task_boxes[0].write);
    EXPECT_EQ(ks.task_boxes[0].slot, region_input_index(r, g.inputs()[2]));
    EXPECT_TRUE(ks.task_boxes[1].write);
    // stream-K: none
    EXPECT_TRUE(build_matmul_decode_tma(g, r, h200(), false).kernels.at(0).task_boxes.empty());
    // the register tile: the operand's column tile per (tile, split)
    bool up_boxed = false;
    for (const TaskBox& b : build_matmul_decode(g, r, h200()).kernels.at(0).task_boxes) {
      up_boxed = up_boxed || (!b.write && b.slot == region_input_index(r, g.inputs()[2]) && b.box_rows == 1);
    }
    EXPECT_TRUE(up_boxed);
  }
  {
    // 40000 columns: five tiles a CTA, no boxes
    const Graph g = swiglu(true, 40000);
    const fuse::Partition p = fuse::partition_graph(g);
    EXPECT_TRUE(build_matmul_decode_tma(g, matmul_region(g, p), h200(), true).kernels.at(0).task_boxes.empty());
  }
}

// An rmsnorm folded into A (fuse/partition.cpp, decode rows): only the mma tile takes the region
// (the TMA and ffma tiles decline with a reason); it reads the norm's input and weight instead of
// the normalized row, gives neither a box (its statistics read whole rows, and here K == N, so a
// box of the result's shape would be wrong), and compiles without spills with and without a bias,
// at 1 and 16 rows, both weight layouts, and a strided x (element loads).
TEST(JitMatmulDecode, AFoldedNormRunsOnTheMmaTile) {
  struct Case {
    int64_t m;
    bool k_major, bias, strided_x;
  };
  for (const Case& c : {Case{1, true, false, false}, Case{16, false, true, false}, Case{1, false, false, false},
                        Case{5, true, true, true}}) {
    const int64_t k = 2048, n = 2048;
    Graph g("decode_norm");
    auto x = c.strided_x ? g.input("x", DType::bf16, {c.m, k}, {1, c.m}) : g.input("x", DType::bf16, {c.m, k});
    std::optional<Tensor> bias;
    if (c.bias) bias = g.input("norm_b", DType::bf16, {k});
    auto h = g.rmsnorm(x, g.input("norm_w", DType::bf16, {k}), bias, 1e-6);
    auto w = c.k_major ? g.input("w", DType::bf16, {k, n}, {1, k}) : g.input("w", DType::bf16, {k, n});
    g.output(g.add(g.matmul(h, w), g.input("res", DType::bf16, {c.m, n})), "y");
    g.validate();
    const fuse::Partition p = fuse::partition_graph(g);
    ASSERT_EQ(p.regions.size(), 1u);
    const fuse::Region& r = p.regions[0];
    ASSERT_EQ(r.prologue.size(), 1u);
    EXPECT_EQ(matmul_config_count(g, r, h200()), 1);
    EXPECT_EQ(decode_gemv_unsupported(g, r, h200()), "");
    EXPECT_NE(decode_ffma_unsupported(g, r, h200()).find("mma tile"), std::string::npos);
    EXPECT_NE(decode_tma_unsupported(g, r, h200()).find("prologue"), std::string::npos);
    const KernelSpec ks = build_matmul_nth(g, r, h200(), 0).kernels.at(0);
    EXPECT_NE(ks.description.find("decode gemv mma"), std::string::npos) << ks.description;
    EXPECT_NE(ks.description.find("rmsnorm(x)"), std::string::npos) << ks.description;
    EXPECT_NE(ks.source.find("kNorm = true, kNormBias = " + std::string(c.bias ? "true" : "false")), std::string::npos);
    EXPECT_NE(ks.source.find("norm_eps"), std::string::npos);
    EXPECT_EQ(ks.source.find("norm_b;") != std::string::npos, c.bias);
    const int x_slot = region_input_index(r, g.inputs()[0]);
    const int w_slot = region_input_index(r, g.find_tensor("norm_w")->id);
    ASSERT_GE(x_slot, 0);
    ASSERT_GE(w_slot, 0);
    bool res_boxed = false;
    for (const TaskBox& b : ks.task_boxes) {
      EXPECT_TRUE(b.write || (b.slot != x_slot && b.slot != w_slot)) << "slot " << b.slot;
      res_boxed = res_boxed || (!b.write && b.slot == region_input_index(r, g.find_tensor("res")->id));
    }
    EXPECT_TRUE(res_boxed);  // the residual, of the result's shape, by column tile
    expect_compiles_without_spills(ks);
  }
}

}  // namespace
}  // namespace sinter::jit
