// The Hopper GEMM (TMA + wgmma, warp-specialized, persistent) on the GPU against the CPU
// reference: odd M/N/K that are no tile multiples, batched, f16 and bf16, B k- or n-contiguous
// (an [N, K] or a row-major [K, N] weight), the fused epilogue
// (bias, GELU, stored pre-activation, global amax, row and column sums), and the fallback to the
// generic tile when TMA cannot read an operand. Every case also checks which kernel ran, so a
// silent fallback fails the test.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <set>

#include "cuda/buffer.hpp"
#include "cuda/gpc_placement.hpp"
#include "engines/jit/codegen.hpp"
#include "engines/jit/jit_engine.hpp"
#include "fuse/region.hpp"
#include "gpu/region_check.hpp"
#include "jit/fp8_matmul_graph.hpp"

namespace sinter::testing {
namespace {

// b as a [K, N] view of an [N, K] weight: k contiguous, what TMA reads.
Tensor weight_nk(Graph& g, const std::string& name, DType t, int64_t k, int64_t n) {
  return g.input(name, t, {k, n}, {1, k});
}

// a [batches, M, K] times b [batches, K, N], each batch of b an [N, K] weight
Tensor batched_matmul_nk(Graph& g, DType t, int64_t batches, int64_t m, int64_t k, int64_t n,
                         const MatmulAttrs& attrs = {}) {
  auto a = g.input("a", t, {batches, m, k});
  auto b = g.input("b", t, {batches, k, n}, {n * k, 1, k});
  return g.matmul(a, b, attrs);
}

// y + a bias "bias" [n] of type t, then GELU: the outputs "y" and its amax "amax" (the fused case)
void output_bias_gelu_amax(Graph& g, Tensor y, DType t, int64_t n) {
  y = g.gelu(g.add(y, g.input("bias", t, {n})));
  g.output(y, "y");
  g.output(g.amax(y), "amax");
}

class GpuHopperGemm : public GpuRegions {
 protected:
  // see FoldedBroadcastBatch* below
  void check_folded(bool row_major_w) {
    Graph g(row_major_w ? "folded_kn" : "folded_nk");
    auto x = g.input("x", DType::bf16, {3, 77, 136});
    auto w = row_major_w ? g.input("w", DType::bf16, {136, 200}) : weight_nk(g, "w", DType::bf16, 136, 200);
    auto y = g.add(g.mul(g.matmul(x, w), g.input("row_scale", DType::bf16, {3, 77, 1})),
                   g.input("res", DType::bf16, {3, 77, 200}));
    g.output(y, "y");
    g.output(g.amax(y), "amax");
    check_every_candidate(g, 2.0);
    TestPlan ex(g);
    for (const StepDescription& s : ex.steps()) {
      if (s.kind == "matmul" && s.engine == "jit") {
        EXPECT_NE(s.description.find("batch-folded"), std::string::npos) << s.description;
      }
    }
  }

  // Checks `g` on the jit engine and that its matmul step ran on the Hopper kernel (or, with
  // `expect_sm90` false, on the generic tile with the fallback reported).
  void check_on(Graph g, bool expect_sm90, double bound_scale = 1.0) {
    CompileOptions opts;
    opts.engines = {"jit"};
    // Force the tile under test: for M <= 16 the decode tile would be the default.
    const fuse::Partition p = fuse::partition_graph(g);
    for (const fuse::Region& r : p.regions) {
      if (r.kind != fuse::RegionKind::matmul) continue;
      const jit::MatmulTile tile = expect_sm90 ? jit::MatmulTile::sm90_ctile : jit::MatmulTile::generic;
      const int index = jit::matmul_config_index(g, r, properties_, tile);
      ASSERT_GE(index, 0) << g.name();
      opts.candidate_config = jit::config_text(jit::matmul_configs(g, r, properties_).at(index));
    }
    const Graph copy = g;
    check(std::move(g), bound_scale, opts);
    TestPlan ex(copy, opts);
    bool found = false;
    for (const StepDescription& s : ex.steps()) {
      if (s.kind != "matmul") continue;
      found = true;
      std::printf("  %s: %s\n", copy.name().c_str(), s.description.c_str());
      if (expect_sm90) {
        EXPECT_NE(s.description.find("sm90 wgmma"), std::string::npos) << s.description;
      } else {
        EXPECT_NE(s.description.find("sm90 gemm not used"), std::string::npos) << s.description;
      }
    }
    EXPECT_TRUE(found) << "no matmul step in " << copy.name();
  }

  // Every distinct jit candidate of g's matmul region, forced one at a time (the Hopper configs,
  // the C-tile kernel, the generic tile, the decode tile where it applies): against the CPU
  // reference, then the same executor again on fresh inputs (exit accumulators and counters must
  // have been reset, the persistent ring must start clean). Each step must run the kernel its
  // candidate names, so a silent fallback fails.
  // direct_word: a word each direct-epilogue candidate's description must hold (a forced setting)
  // `coop_word`, if given: a word every cooperative direct-epilogue candidate's description holds
  void check_every_candidate(const Graph& g, double bound_scale = 1.0, const std::string& coop_word = "") {
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region* mm = nullptr;
    for (const fuse::Region& r : p.regions) {
      if (r.kind == fuse::RegionKind::matmul) mm = &r;
    }
    ASSERT_NE(mm, nullptr) << "no matmul region in " << g.name();
    for (const auto& [v, rk] : jit::distinct_configs(g, *mm, properties_)) {
      const std::string want = rk.kernels.at(0).description;
      SCOPED_TRACE("candidate " + jit::config_text(v) + ": " + want);
      expect_coop_word(want, coop_word);
      CompileOptions opts;
      opts.engines = {"jit"};
      opts.candidate_config = jit::config_text(v);
      check(g, bound_scale, opts);
      TestPlan ex(g, opts);
      for (const StepDescription& s : ex.steps()) {
        if (s.kind != "matmul") continue;
        std::printf("  %s candidate %s: %s\n", g.name().c_str(), jit::config_text(v).c_str(), s.description.c_str());
        EXPECT_EQ(s.description.rfind(want, 0), 0u) << s.description;
      }
      const uint64_t seed = fresh_seed();
      SCOPED_TRACE("rerun, seed " + std::to_string(seed));
      const TensorMap inputs = random_inputs(g, seed);
      const TensorMap want_out = run_reference(g, inputs);
      ex.run(inputs);
      const TensorMap got = ex.run(inputs);  // twice: the second launch starts from the first's state
      std::optional<TensorMap> fused_want;
      for (TensorId id : g.outputs()) {
        const double bound = relative_l2_bound(g, id) * bound_scale;
        EXPECT_LE(output_error(g, id, inputs, got, want_out, fused_want, bound).err, bound)
            << "rerun, output '" << g.tensor(id).name << "'";
      }
    }
  }

  // `coop_word`, if given: a word every cooperative direct-epilogue candidate's description holds
  // (the tall tile's two row blocks a consumer run their epilogue in line: never offloaded)
  static void expect_coop_word(const std::string& description, const std::string& coop_word) {
    const bool tall = description.find("128 rows each") != std::string::npos;
    if (coop_word.empty() || description.find("direct-epilogue") == std::string::npos ||
        description.find("coop(") == std::string::npos || (tall && coop_word.rfind("offloaded-epilogue", 0) == 0)) {
      return;
    }
    EXPECT_NE(description.find(coop_word), std::string::npos) << description;
  }

  // This GPU as one with `sms` SMs: the generators plan their persistent grids (and stream-K
  // cuts) for that many, and the engine sizes the grid from it, so that small matrices reach the
  // cuts or walk several tiles a CTA.
  cuda::DeviceProperties with_sms(int sms) const {
    cuda::DeviceProperties d = properties_;
    d.sm_count = sms;
    return d;
  }

  // Every direct-epilogue config matmul_configs offers for `g`'s one region on `dev`, prepared
  // by the jit engine for `dev` and launched alone (an executor would plan for this GPU): against
  // the CPU reference, then again on fresh inputs with the same workspace (stream-K's flags and
  // the exit accumulators must be back to zero after each launch). Returns how many configs'
  // descriptions hold `count_word`.
  int check_direct_configs_on(const Graph& g, const cuda::DeviceProperties& dev, double bound_scale = 1.0,
                              const std::string& coop_word = "", const std::string& count_word = "") {
    const fuse::Partition p = fuse::partition_graph(g);
    EXPECT_EQ(p.regions.size(), 1u) << g.name() << ": a graph of one region, launched alone";
    if (p.regions.size() != 1) return 0;
    const fuse::Region& r = p.regions[0];
    jit::JitEngine engine;
    EngineContext ctx{shared_cache(), dev};
    std::set<std::string> seen;
    int counted = 0;
    for (const jit::MatmulConfig& c : jit::matmul_configs(g, r, dev)) {
      if (c.tile != jit::MatmulTile::sm90_direct) continue;
      const std::string text = jit::config_text(c);
      const std::unique_ptr<PreparedStep> step = engine.prepare(g, r, Candidate{"jit", 0, text, ""}, ctx);
      const std::string description = step->describe();
      if (!seen.insert(description).second) continue;
      SCOPED_TRACE("config " + text + ": " + description);
      std::printf("  %s config %s: %s\n", g.name().c_str(), text.c_str(), description.c_str());
      expect_coop_word(description, coop_word);
      counted += !count_word.empty() && description.find(count_word) != std::string::npos;
      cuda::DeviceBuffer ws(std::max<size_t>(step->workspace_bytes(), 256));
      ws.memset(0);
      for (int run = 0; run < 2; ++run) {
        const uint64_t seed = fresh_seed();
        SCOPED_TRACE("run " + std::to_string(run) + ", seed " + std::to_string(seed));
        const TensorMap inputs = random_inputs(g, seed);
        const TensorMap want = run_reference(g, inputs);
        std::vector<cuda::DeviceBuffer> in_bufs, out_bufs;
        Binding bind;
        for (TensorId t : r.inputs) {
          const HostTensor& h = inputs.at(g.tensor(t).name);
          in_bufs.emplace_back(h.storage_bytes());
          in_bufs.back().copy_from_host(h.data(), h.storage_bytes());
          bind.inputs.push_back(in_bufs.back().data());
        }
        TensorMap got;
        for (TensorId t : r.outputs) {
          const TensorInfo& info = g.tensor(t);
          const HostTensor& h = got.emplace(info.name, HostTensor(info.dtype, info.dims)).first->second;
          out_bufs.emplace_back(h.storage_bytes());
          out_bufs.back().memset(0xff);  // poison: NaN in every float type
          bind.outputs.push_back(out_bufs.back().data());
        }
        bind.workspace = ws.data();
        step->launch(bind, nullptr);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        for (size_t i = 0; i < r.outputs.size(); ++i) {
          HostTensor& h = got.at(g.tensor(r.outputs[i]).name);
          out_bufs[i].copy_to_host(h.data(), h.storage_bytes());
        }
        std::optional<TensorMap> fused_want;
        for (TensorId id : g.outputs()) {
          const double bound = relative_l2_bound(g, id) * bound_scale;
          EXPECT_LE(output_error(g, id, inputs, got, want, fused_want, bound).err, bound)
              << "output '" << g.tensor(id).name << "'";
        }
      }
    }
    return counted;
  }
};



TEST_F(GpuHopperGemm, OddShapesBiasGeluAmax) {
  struct Case { int64_t m, n, k; };
  for (Case c : {Case{1, 1, 1}, Case{7, 13, 8}, Case{129, 67, 200}, Case{333, 257, 136}, Case{256, 512, 1024},
                 Case{1, 4096, 776}, Case{1000, 1000, 1000}}) {
    Graph g("sm90_" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    auto a = g.input("a", DType::bf16, {c.m, c.k});
    auto b = weight_nk(g, "b", DType::bf16, c.k, c.n);
    auto bias = g.input("bias", DType::bf16, {c.n});
    auto pre = g.add(g.matmul(a, b), bias);
    g.output(pre, "pre");
    auto y = g.gelu(pre);
    g.output(y, "y");
    g.output(g.amax(y), "amax");
    // A scalar amax averages nothing: the fused kernel keeps pre-activations in f32 where the
    // reference rounds three bf16 boundaries (matmul, pre, y), which can move it by 2 bf16 ulps
    // (up to 0.0156 relative; 0.0105 was seen at 7x13x8).
    check_on(std::move(g), true, 2.0);
  }
}

TEST_F(GpuHopperGemm, BareGemmManyTilesPerCta) {
  // more tiles than CTAs: the persistent loop and the ring's phases carry over tiles
  Graph g("sm90_bare_2048x1536x512");
  auto a = g.input("a", DType::bf16, {2048, 512});
  g.output(g.matmul(a, weight_nk(g, "b", DType::bf16, 512, 1536)), "y");
  check_on(std::move(g), true);
}

// The GPC order (engines/jit/gpc_order.hpp): the engine measures where this GPU places a
// persistent grid's clusters (cuda/gpc_placement.hpp) and starts the units one GPC holds on items
// of one raster row. The default (pair) kernel, bare and fused, on 11 x 12 pair items (two waves
// of 66 clusters on a 132-SM GPU, whole items: no stream-K), partial tiles at both edges and a
// partial raster group: every item computed once.
TEST_F(GpuHopperGemm, GpcOrderCoversEveryItemOnce) {
  const std::vector<int>& singles = cuda::cluster_gpcs(properties_.ordinal, 1);
  const std::vector<int>& pairs = cuda::cluster_gpcs(properties_.ordinal, 2);
  EXPECT_EQ(singles.size(), static_cast<size_t>(properties_.sm_count));
  ASSERT_GE(pairs.size(), 32u);
  std::printf("  GPC of each 2-CTA cluster:");
  for (int g : pairs) std::printf(" %d", g);
  std::printf("\n");
  EXPECT_GE(std::set<int>(pairs.begin(), pairs.end()).size(), 4u) << "a Hopper GPU has 7-8 GPCs";
  for (const bool fused_epilogue : {false, true}) {
    Graph g(fused_epilogue ? "gpc_order_fused" : "gpc_order_bare");
    auto y = g.matmul(g.input("a", DType::bf16, {2800, 256}), weight_nk(g, "b", DType::bf16, 256, 3000));
    if (fused_epilogue) {
      output_bias_gelu_amax(g, y, DType::bf16, 3000);
    } else {
      g.output(y, "y");
    }
    CompileOptions opts;
    opts.engines = {"jit"};
    check(g, fused_epilogue ? 2.0 : 1.0, opts);
    TestPlan ex(g, opts);
    int matmuls = 0;
    for (const StepDescription& s : ex.steps()) {
      if (s.kind != "matmul") continue;
      ++matmuls;
      std::printf("  %s: %s\n", g.name().c_str(), s.description.c_str());
      EXPECT_NE(s.description.find("gpc-order"), std::string::npos) << s.description;
    }
    EXPECT_EQ(matmuls, 1) << g.name();
  }
}

TEST_F(GpuHopperGemm, BatchedF16WithResidualAndRowColumnSums) {
  Graph g("sm90_batched_f16");
  auto a = g.input("a", DType::f16, {3, 150, 72});
  auto b = g.input("b", DType::f16, {3, 72, 130}, {130 * 72, 1, 72});  // each batch [N, K]
  auto res = g.input("res", DType::f16, {3, 150, 130});
  auto y = g.add(g.mul(g.matmul(a, b), 0.5), res);
  g.output(y, "y");
  g.output(g.sum(y, {-1}), "rows");
  g.output(g.sum(y, {0, 1}), "cols");
  check_on(std::move(g), true, 2.0);
}

// bias + GELU (pre-activation stored too) + global amax, times a per-row scale [M, 1], on shapes
// that are no tile multiples in any dim, with K below one k-block, M of 1 and 3, and odd N (rows
// start at odd element offsets, so pair stores fall back to single ones).
// With `b_row_major`, b is a row-major [K, N] weight (n contiguous), read MN-major.
Graph fused(const std::string& name, DType t, int64_t m, int64_t n, int64_t k, bool b_row_major = false) {
  Graph g(name);
  auto a = g.input("a", t, {m, k});
  auto b = b_row_major ? g.input("b", t, {k, n}) : weight_nk(g, "b", t, k, n);
  auto pre = g.add(g.matmul(a, b), g.input("bias", t, {n}));
  g.output(pre, "pre");
  auto y = g.mul(g.gelu(pre), g.input("row_scale", t, {m, 1}));
  g.output(y, "y");
  g.output(g.amax(y), "amax");
  return g;
}

TEST_F(GpuHopperGemm, EveryCandidateOddShapesFusedEpilogue) {
  struct Case { int64_t m, n, k; };
  for (Case c : {Case{1, 1, 8}, Case{3, 520, 40}, Case{7, 13, 8}, Case{129, 67, 200}, Case{333, 257, 136},
                 Case{1, 1000, 776}, Case{200, 300, 24}, Case{517, 1031, 328}}) {
    // bound x2: the scalar amax, as in OddShapesBiasGeluAmax
    check_every_candidate(fused("fused_" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k),
                                DType::bf16, c.m, c.n, c.k), 2.0);
  }
}

TEST_F(GpuHopperGemm, EveryCandidateManyTilesPerCta) {
  // 2048 x 2304: 144 tiles of 128x256 (that config first; 72 tile pairs for the 2-CTA clusters),
  // 288 of 64x256 (each ping-pong consumer takes two or more), 288 of 128x128. K = 72 is two
  // k-blocks, fewer than any ring's stages, so ring positions wrap inside and across tiles.
  check_every_candidate(fused("fused_many_tiles_f16", DType::f16, 2048, 2304, 72), 2.0);
  Graph g("bare_many_tiles_bf16");
  auto a = g.input("a", DType::bf16, {2048, 136});  // 3 k-blocks, the last one partial
  g.output(g.matmul(a, weight_nk(g, "b", DType::bf16, 136, 2304)), "y");
  check_every_candidate(g);
}

// a [256, 64] x an [N, 64] weight, times a scale broadcast over rows and columns, plus a bias;
// stored as bf16 and as f32
Graph scale_bias_two_outputs(const std::string& name, int64_t n) {
  Graph g(name);
  auto a = g.input("a", DType::bf16, {256, 64});
  auto y = g.matmul(a, weight_nk(g, "b", DType::bf16, 64, n));
  y = g.add(g.mul(y, g.input("scale", DType::bf16, {1})), g.input("bias", DType::bf16, {n}));
  g.output(y, "y");
  g.output(g.cast(y, DType::f32), "y32");
  return g;
}

TEST_F(GpuHopperGemm, EveryCandidateFullTileEpilogueForms) {
  // Full tiles (fragment_full_condition) run the epilogue without bounds tests and store 16-bit
  // outputs as 16-byte rows, f32 ones as pairs; a scale broadcast over rows and columns (column
  // stride 0) and a bias (stride 1) are both admitted. N = 512: every tile full in every config;
  // N = 520: 16-byte rows with a partial last column tile; N = 516: rows not 16-byte aligned, so
  // every tile takes the bounds-tested form.
  for (int64_t n : {int64_t{512}, int64_t{520}, int64_t{516}}) {
    check_every_candidate(scale_bias_two_outputs("full_tiles_n" + std::to_string(n), n), 2.0);
  }
}

// The coop kernels write full tiles' 16-bit outputs with TMA stores (per consumer warp, 16 x 64
// chunks through two swizzled 2 KB slots). Every chunk must land where it belongs: 16-bit
// outputs beside an f32 one (N = 512), a partial last column tile stored by the bounds-tested
// form beside TMA-stored full ones (N = 520), many tiles per CTA with the slots alternating
// across tiles (2048 x 2304, K = 72), two 16-bit outputs (one slot each), a row tile whose
// consumers store one by TMA and one bounds-tested, a bare GEMM with a partial last row tile, and
// batches (each batch's rows a whole number of tiles, so full tiles
// of the second batch start mid-map).
TEST_F(GpuHopperGemm, EveryCandidateTmaStores) {
  for (int64_t n : {int64_t{512}, int64_t{520}}) {
    check_every_candidate(scale_bias_two_outputs("tma_store_n" + std::to_string(n), n), 2.0, "tma-store");
  }
  check_every_candidate(fused("tma_store_many_tiles_f16", DType::f16, 2048, 2304, 72), 2.0, "tma-store");
  {
    Graph g("tma_store_two_outputs");
    auto y = g.matmul(g.input("a", DType::bf16, {384, 200}), weight_nk(g, "b", DType::bf16, 200, 768));
    auto pre = g.add(y, g.input("bias", DType::bf16, {768}));
    g.output(pre, "pre");
    g.output(g.gelu(pre), "y");
    check_every_candidate(g, 2.0, "tma-store");
  }
  {
    Graph g("tma_store_bare_bf16");
    g.output(g.matmul(g.input("a", DType::bf16, {1000, 136}), weight_nk(g, "b", DType::bf16, 136, 2304)), "y");
    check_every_candidate(g, 1.0, "tma-store");
  }
  {
    // M = 200: the second row tile's first consumer has all 64 rows (TMA stores), its second
    // only 8 (the bounds-tested stores), in one tile
    Graph g("tma_store_split_row_tile");
    auto y = g.matmul(g.input("a", DType::bf16, {200, 136}), weight_nk(g, "b", DType::bf16, 136, 512));
    g.output(g.gelu(g.add(y, g.input("bias", DType::bf16, {512}))), "y");
    check_every_candidate(g, 2.0, "tma-store");
  }
  {
    Graph g("tma_store_batched_f16");
    g.output(g.relu(batched_matmul_nk(g, DType::f16, 3, 256, 96, 512)), "y");
    check_every_candidate(g, 1.0, "tma-store");
  }
}

// Held stores: the coop kernels keep a full tile's one 16-bit output in registers and store it
// under the next tile's first k-blocks (a chunk a k-block), and the last tile's after the loop.
// Every chunk must reach its place across tiles of one CTA: 1100 x 4112 (153 tiles of 128x256,
// 85 tile pairs: CTAs take two; the last row tile's second consumer and the last column tile
// store bounds-tested between held ones), K = 256 (as many k-blocks as a 256-column tile's
// chunks) with bias + GELU + amax; K = 200 (the last of 4 k-blocks partial); batches, whose rows
// of the second batch start mid-map, once with one tile a CTA and once with more tiles than CTAs.
TEST_F(GpuHopperGemm, EveryCandidateHeldStores) {
  {
    Graph g("held_many_tiles_bf16");
    output_bias_gelu_amax(
        g, g.matmul(g.input("a", DType::bf16, {1100, 256}), weight_nk(g, "b", DType::bf16, 256, 4112)), DType::bf16,
        4112);
    check_every_candidate(g, 2.0, "held-stores");
  }
  {
    Graph g("held_k200_bf16");
    g.output(g.matmul(g.input("a", DType::bf16, {300, 200}), weight_nk(g, "b", DType::bf16, 200, 1024)), "y");
    check_every_candidate(g, 1.0, "held-stores");
  }
  {
    Graph g("held_batched_f16");
    g.output(g.relu(batched_matmul_nk(g, DType::f16, 3, 256, 256, 512)), "y");
    check_every_candidate(g, 1.0, "held-stores");
  }
  {
    // batches with more tiles than CTAs (3 x 8 x 9 tiles of 128x256, the last column tile
    // partial): a CTA's held tile and the next can sit in different batches
    Graph g("held_batched_many_tiles_bf16");
    g.output(batched_matmul_nk(g, DType::bf16, 3, 1024, 256, 2112), "y");
    check_every_candidate(g, 1.0, "held-stores");
  }
}

// Stream-K (kernels/gemm/stream_k.h): where the tiles end on a partial wave, the first
// items % units are cut along K over every unit; a piece that starts inside its item leaves f32
// partial sums and a flag, the item's owner adds them before the epilogue. The kernels are planned
// for a GPU of 10 SMs (check_direct_configs_on) so that small matrices reach the cuts (a unit's
// range must be at most 3/4 of an item): 136 x 1304 with K = 2504 (40 k-blocks, the last partial;
// K = 2500 would make rows of 5000 bytes, which TMA cannot read, and the matmul would leave the
// Hopper kernels) is 12 tiles of 128x256 (2 cut over 10 CTAs, 8 k-blocks each: an item over 5
// units), 6 tile pairs (1 cut over 5 clusters) and 22 tiles of 128x128 (2 cut), with partial row
// and column tiles. Held kernels (one 16-bit output, bias + GELU + amax), the in-line stores of
// two outputs (one f32), and a batched f16 GEMM whose items cross batches (2 x 68 x 1304: the
// same cuts, 2 pairs). At 12 tiles on 10 SMs the tall 256x128 pair is a candidate too; it walks
// whole items (6 pair items along N, the last pair's second tile past the matrix, over 5
// clusters; 12 in the batched case). The second launch of each config checks that the flags were
// lowered for the next launch.
TEST_F(GpuHopperGemm, EveryCandidateStreamK) {
  const cuda::DeviceProperties ten = with_sms(10);
  const int64_t m = 136, k = 2504, n = 1304;
  {
    Graph g("stream_k_bias_gelu_amax");
    output_bias_gelu_amax(g, g.matmul(g.input("a", DType::bf16, {m, k}), weight_nk(g, "b", DType::bf16, k, n)),
                          DType::bf16, n);
    EXPECT_EQ(check_direct_configs_on(g, ten, 2.0, "", "stream-k("), 3) << "coop configs that cut items";
  }
  {
    Graph g("stream_k_two_outputs");
    auto pre = g.add(g.matmul(g.input("a", DType::bf16, {m, k}), weight_nk(g, "b", DType::bf16, k, n)),
                     g.input("bias", DType::bf16, {n}));
    g.output(g.cast(pre, DType::f32), "pre");
    g.output(g.gelu(pre), "y");
    EXPECT_EQ(check_direct_configs_on(g, ten, 2.0, "", "stream-k("), 3) << "coop configs that cut items";
  }
  {
    Graph g("stream_k_batched_f16");
    g.output(batched_matmul_nk(g, DType::f16, 2, 68, k, n), "y");
    EXPECT_EQ(check_direct_configs_on(g, ten, 1.0, "", "stream-k("), 3) << "coop configs that cut items";
  }
}

// The offloaded epilogue (kernels/gemm/sm90_epilogue_offload.cuh): the coop held kernels with an
// epilogue and K of 32 k-blocks or more hand each full tile's rounded accumulator, chunk by
// chunk, to the producer warpgroup's helper warps, which run the epilogue and store it; the CTA's
// last tile runs in line. Planned for a GPU of 2 SMs so that each CTA walks several tiles (whole
// waves: no stream-K cut, which would turn the offload off). 200 x 528 (a multiple of 8 columns:
// TMA stores), K = 2048: the last row tile's first consumer is full and its second partial (one
// consumer warpgroup's chunks go to the helpers and the other's do not: empty messages keep their
// counts equal), the last column tile partial. Bias + GELU + amax, and a batched f16 ReLU whose
// tiles cross batches.
TEST_F(GpuHopperGemm, EveryCandidateOffloadedEpilogue) {
  const cuda::DeviceProperties two = with_sms(2);
  const int64_t m = 200, k = 2048, n = 528;
  {
    Graph g("offload_bias_gelu_amax");
    output_bias_gelu_amax(g, g.matmul(g.input("a", DType::bf16, {m, k}), weight_nk(g, "b", DType::bf16, k, n)),
                          DType::bf16, n);
    EXPECT_GE(check_direct_configs_on(g, two, 2.0, "offloaded-epilogue", "offloaded-epilogue"), 3);
  }
  {
    Graph g("offload_batched_f16");
    g.output(g.relu(batched_matmul_nk(g, DType::f16, 2, 100, k, n)), "y");
    EXPECT_GE(check_direct_configs_on(g, two, 1.0, "offloaded-epilogue", "offloaded-epilogue"), 3);
  }
}

// Operands read per row on full tiles (AnchorEpilogue::row_read): a residual as column
// pairs, a column vector once a row, beside held stores over many tiles a CTA, with partial
// tiles (bounds-tested; they end the previous tile's held words, hopper_direct_clear_words)
// between full ones. A residual whose rows start at odd offsets (a view with an odd row stride)
// sends every tile to the bounds-tested form; a transposed one (column stride M) is read element
// by element in both forms.
TEST_F(GpuHopperGemm, EveryCandidatePerRowOperands) {
  const int64_t m = 1100, k = 256, n = 4112;
  {
    Graph g("per_row_residual_gelu_amax");
    auto y = g.matmul(g.input("a", DType::bf16, {m, k}), weight_nk(g, "b", DType::bf16, k, n));
    y = g.add(g.gelu(g.add(y, g.input("bias", DType::bf16, {n}))), g.input("res", DType::bf16, {m, n}));
    g.output(y, "y");
    g.output(g.amax(y), "amax");
    check_every_candidate(g, 2.0, "held-stores");
  }
  {
    Graph g("per_row_column_vector_odd_row_stride_residual");
    auto y = g.matmul(g.input("a", DType::bf16, {m, k}), weight_nk(g, "b", DType::bf16, k, n));
    y = g.mul(y, g.input("row_scale", DType::bf16, {m, 1}));
    g.output(g.add(y, g.input("res", DType::bf16, {m, n}, {n + 1, 1})), "y");
    check_every_candidate(g, 2.0, "held-stores");
  }
  {
    Graph g("per_row_transposed_residual_f16");
    auto y = g.matmul(g.input("a", DType::f16, {m, k}), weight_nk(g, "b", DType::f16, k, n));
    g.output(g.relu(g.add(y, g.input("res", DType::f16, {m, n}, {1, m}))), "y");
    check_every_candidate(g, 2.0, "held-stores");
  }
}

// A global amax of a 16-bit output is reduced on full fragment tiles from the packed words (one
// HMNMX2 .xorsign.abs for two elements, amax_pair; AnchorEpilogue::packed_amax_output), on
// partial tiles element by element. 300 x 1024 (rows 256.. partial in every column tile), every
// candidate, with: outputs that are all negative (bias -1.5: GELU in [-0.17, 0), so a lost abs or
// a sign taken from the XOR would show), one large column inside the full tiles (bias 40 at column
// 700), and a NaN there (the amax must be NaN, as the reference's).
TEST_F(GpuHopperGemm, EveryCandidateAmaxOfPackedWords) {
  const int64_t m = 300, k = 256, n = 1024;
  Graph g("amax_packed_words_bf16");
  output_bias_gelu_amax(g, g.matmul(g.input("a", DType::bf16, {m, k}), weight_nk(g, "b", DType::bf16, k, n)),
                        DType::bf16, n);
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  const fuse::Region* mm = nullptr;
  for (const fuse::Region& r : p.regions) {
    if (r.kind == fuse::RegionKind::matmul) mm = &r;
  }
  ASSERT_NE(mm, nullptr);
  struct Case {
    const char* name;
    double bias_all;      // every bias element, or NaN: keep the random ones
    double bias_col_700;  // column 700's, or NaN: as bias_all
    bool expect_nan;
  };
  const double keep = std::numeric_limits<double>::quiet_NaN();
  const Case cases[] = {{"all negative", -1.5, keep, false},
                        {"one large column", keep, 40.0, false},
                        {"a NaN column", keep, std::numeric_limits<double>::quiet_NaN(), true}};
  int packed = 0;
  for (const auto& [v, rk] : jit::distinct_configs(g, *mm, properties_)) {
    const std::string& src = rk.kernels.at(0).source;
    packed += src.find("amax_pair<bf16>") != std::string::npos;
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(c.name) + ", candidate " + jit::config_text(v) + ": " + rk.kernels.at(0).description);
      const uint64_t seed = fresh_seed();
      TensorMap inputs = random_inputs(g, seed);
      HostTensor& bias = inputs.at("bias");
      for (int64_t j = 0; j < n; ++j) {
        if (!std::isnan(c.bias_all)) bias.set(j, c.bias_all);
      }
      if (c.expect_nan || !std::isnan(c.bias_col_700)) bias.set(700, c.bias_col_700);
      CompileOptions opts;
      opts.engines = {"jit"};
      opts.candidate_config = jit::config_text(v);
      TestPlan ex(g, opts);
      const TensorMap got = ex.run(inputs);
      const TensorMap want = run_reference(g, inputs);
      const double amax = got.at("amax").get(0), want_amax = want.at("amax").get(0);
      if (c.expect_nan) {
        EXPECT_TRUE(std::isnan(want_amax)) << "reference " << want_amax;
        EXPECT_TRUE(std::isnan(amax)) << "amax " << amax << ", seed " << seed;
        continue;
      }
      // the rounded outputs' amax, from the same values the reference rounds (2 bf16 ulps apart
      // at most where the fused kernel's unrounded intermediates move an output, as above)
      EXPECT_NEAR(amax, want_amax, 2 * 0.0079 * std::abs(want_amax)) << "seed " << seed;
      const double bound = relative_l2_bound(g, g.outputs()[0]);
      EXPECT_LE(relative_l2_error(got.at("y"), want.at("y")), 2 * bound) << "seed " << seed;
    }
  }
  EXPECT_GE(packed, 3) << "the direct-epilogue configs reduce the amax from packed words";
}

// fp8 operands (e4m3, e5m2) on the direct-epilogue kernels: wgmma k32 on 128-element k-blocks
// that TMA fills with bytes, accumulated in the tensor cores (16-bit results only: an f32 result
// runs on the generic tile, sm90_gemm_unsupported). Odd M and N, K not a multiple of 128 (the
// last k-block zero-filled), bf16 / f16 results, an f32 output cast from one, a fused bias +
// GELU + amax, batches, many tiles a CTA.
Graph fp8_gemm(const std::string& name, DType t, int64_t m, int64_t n, int64_t k, DType out, bool epilogue) {
  return testing::fp8_matmul_graph(name, t, m, n, k, out, epilogue);
}

TEST_F(GpuHopperGemm, EveryCandidateFp8) {
  {  // the 5 direct-epilogue configs are candidates (the checks below would pass on the generic tile alone)
    const Graph g = fp8_gemm("fp8_candidates", DType::fp8_e4m3, 333, 264, 208, DType::bf16, true);
    const fuse::Partition p = fuse::partition_graph(g);
    int fp8_direct = 0;
    for (const fuse::Region& r : p.regions) {
      if (r.kind != fuse::RegionKind::matmul) continue;
      for (const auto& [v, rk] : jit::distinct_configs(g, r, properties_)) {
        fp8_direct += rk.kernels.at(0).description.find("wgmma.e4m3") != std::string::npos ? 1 : 0;
      }
    }
    EXPECT_EQ(fp8_direct, 5);
  }
  check_every_candidate(fp8_gemm("fp8_e4m3_fused_odd", DType::fp8_e4m3, 333, 264, 208, DType::bf16, true), 2.0,
                        "wgmma.e4m3");
  check_every_candidate(fp8_gemm("fp8_e5m2_bare_f16", DType::fp8_e5m2, 1000, 2304, 144, DType::f16, false), 1.0,
                        "wgmma.e5m2");
  check_every_candidate(fp8_gemm("fp8_e4m3_many_tiles", DType::fp8_e4m3, 2048, 2304, 400, DType::bf16, false), 1.0,
                        "wgmma.e4m3");
  Graph g("fp8_e4m3_batched");
  MatmulAttrs at;
  at.out_dtype = DType::bf16;
  auto y = batched_matmul_nk(g, DType::fp8_e4m3, 3, 256, 96, 512, at);
  g.output(g.relu(y), "y");
  g.output(g.cast(y, DType::f32), "y32");  // an f32 output of the bf16 result: bounded by the bf16 rounding
  check_every_candidate(g, 1.0, "wgmma.e4m3");
}

TEST_F(GpuHopperGemm, EveryCandidateBatchedResidualRowColumnSums) {
  Graph g("every_batched_f16");
  auto a = g.input("a", DType::f16, {3, 150, 72});
  auto b = g.input("b", DType::f16, {3, 72, 130}, {130 * 72, 1, 72});  // each batch [N, K]
  auto res = g.input("res", DType::f16, {3, 150, 130});
  auto y = g.add(g.mul(g.matmul(a, b), 0.5), res);
  g.output(y, "y");
  g.output(g.sum(y, {-1}), "rows");
  g.output(g.sum(y, {0, 1}), "cols");
  g.output(g.amax(y), "amax");
  check_every_candidate(g, 2.0);
}

// b a row-major [K, N] weight (n contiguous, how the examples store it): TMA loads {64 n, 64 k}
// boxes, one per 64-column atom of the tile, and wgmma reads them transposed. N tails (zero-filled
// atoms), K below and between k-blocks, M of 1, f16, every config including the CTA pairs (each
// loads half the atoms of B).
TEST_F(GpuHopperGemm, EveryCandidateRowMajorB) {
  struct Case { int64_t m, n, k; DType t; };
  for (Case c : {Case{129, 200, 72, DType::bf16}, Case{1, 1000, 64, DType::bf16}, Case{333, 128, 136, DType::f16},
                 Case{7, 8, 8, DType::bf16}, Case{517, 1032, 328, DType::bf16}}) {
    check_every_candidate(fused("row_major_b_" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                                    std::to_string(c.k),
                                c.t, c.m, c.n, c.k, true),
                          2.0);
  }
  // many tiles per CTA (ring phases across tiles) and a long K
  check_every_candidate(fused("row_major_b_many_tiles", DType::bf16, 2048, 2304, 72, true), 2.0);
  Graph g("row_major_b_long_k");
  auto a = g.input("a", DType::bf16, {256, 4096});
  g.output(g.matmul(a, g.input("b", DType::bf16, {4096, 384})), "y");
  check_every_candidate(g);
}

TEST_F(GpuHopperGemm, EveryCandidateRowMajorBBatchedSliced) {
  // each batch a [72, 200] slice of a [72, 256] row-major buffer (row stride 256 > N), with a
  // residual and row/column sums
  Graph g("row_major_b_batched_sliced");
  auto a = g.input("a", DType::bf16, {3, 150, 72});
  auto b = g.input("b", DType::bf16, {3, 72, 200}, {72 * 256, 256, 1});
  auto res = g.input("res", DType::bf16, {3, 150, 200});
  auto y = g.add(g.matmul(a, b), res);
  g.output(y, "y");
  g.output(g.sum(y, {-1}), "rows");
  g.output(g.sum(y, {0, 1}), "cols");
  check_every_candidate(g, 2.0);
}

// Activations [B, M, K] times a 2D weight broadcast over B: one
// GEMM of B x M rows on every Hopper candidate (the transformer block's projections), with a
// residual [B, M, N] and a per-row scale [B, M, 1] that the epilogue indexes by the flattened row.
TEST_F(GpuHopperGemm, FoldedBroadcastBatchRowMajorWeight) { check_folded(true); }
TEST_F(GpuHopperGemm, FoldedBroadcastBatchNKWeight) { check_folded(false); }

TEST_F(GpuHopperGemm, FallbackWhenTmaCannotReadAnOperand) {
  {
    // b with neither dim contiguous (every other column of a row-major buffer): the generic
    // tile, which says why
    Graph g("sm90_fallback_b_strided");
    auto a = g.input("a", DType::bf16, {65, 64});
    auto b = g.input("b", DType::bf16, {64, 96}, {192, 2});
    g.output(g.relu(g.matmul(a, b)), "y");
    check_on(std::move(g), false);
  }
  {
    // K = 100: a row stride of 200 bytes is not a multiple of 16
    Graph g("sm90_fallback_odd_k");
    auto a = g.input("a", DType::bf16, {40, 100});
    g.output(g.matmul(a, weight_nk(g, "b", DType::bf16, 100, 50)), "y");
    check_on(std::move(g), false);
  }
}

}  // namespace
}  // namespace sinter::testing
