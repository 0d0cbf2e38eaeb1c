// The decode GEMV tiles (kernels/gemm/decode_tma.cuh: TMA, whole tiles or stream-K, M <= 16,
// [N, K] or [K, N] weights on sm_90a; decode_gemv.cuh: mma, M <= 16; decode_gemv_ffma.cuh: ffma, M <= 4),
// each forced as the jit engine's matmul config, against the CPU reference: M in
// {1, 3, 8, 16}, both weight layouts ([N, K] and [K, N]), N and K odd and no tile multiples
// (element loads) or multiples of 8 only (16-byte loads with tails),
// split-K with a short last chunk and without split-K, bias + GELU + amax, row and column sums,
// batches with a broadcast weight, an rmsnorm folded into A (the mma tile), and a second run of
// the same executor on fresh inputs (the split-K counters and exit accumulators must have been
// reset). Every case checks that the step
// really ran the forced decode tile, so a silent fallback fails.
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engines/jit/codegen.hpp"
#include "fuse/region.hpp"
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

// One mode of the TMA tile's per-step settings (jit::DecodeTmaConfig); bn applies to stream-K.
struct TmaStepMode {
  int chains;
  bool producer;
  int warp_boxes;
  int bn = 128;
};

Graph decode_graph(const std::string& name, DType t, int64_t m, int64_t n, int64_t k, bool k_major, bool epilogue);

class GpuDecodeGemm : public GpuRegions {
 protected:
  // The jit candidate numbers of every decode tile offered for `g`'s matmul region (tma, ffma,
  // mma). Each as (candidate, the words its step's description must hold after "decode ").
  std::vector<std::pair<std::string, std::string>> decode_candidates(const Graph& g) {
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region* r = matmul_region(p);
    if (r == nullptr) {
      ADD_FAILURE() << "no matmul region in " << g.name();
      return {};
    }
    EXPECT_EQ(jit::decode_gemv_unsupported(g, *r, properties_), "") << g.name();
    std::vector<std::pair<std::string, std::string>> out;
    for (jit::MatmulTile t : {jit::MatmulTile::decode_tma_rows, jit::MatmulTile::decode_tma,
                              jit::MatmulTile::decode_ffma, jit::MatmulTile::decode_gemv}) {
      const int v = jit::matmul_config_index(g, *r, properties_, t);
      if (v < 0) continue;
      out.emplace_back(jit::config_text(jit::matmul_configs(g, *r, properties_).at(v)), t == jit::MatmulTile::decode_tma_rows || t == jit::MatmulTile::decode_tma ? "tma"
                          : t == jit::MatmulTile::decode_ffma                                       ? "gemv ffma"
                                                                                                    : "gemv mma");
    }
    return out;
  }

  CompileOptions forced(const std::string& config) {
    CompileOptions opts;
    opts.engines = {"jit"};
    opts.candidate_config = config;
    return opts;
  }

  // words: more that the matmul step's description must hold (the settings a test forces)
  void expect_decode_step(const TestPlan& ex, const std::string& name, const std::string& tile,
                          const std::vector<std::string>& words = {}) {
    bool found = false;
    for (const StepDescription& s : ex.steps()) {
      if (s.kind != "matmul") continue;
      found = true;
      std::printf("  %s: %s\n", name.c_str(), s.description.c_str());
      EXPECT_NE(s.description.find("decode " + tile), std::string::npos) << s.description;
      for (const std::string& w : words) EXPECT_NE(s.description.find(w), std::string::npos) << w << ": " << s.description;
    }
    EXPECT_TRUE(found) << "no matmul step in " << name;
  }

  // For every decode candidate: check(), then the same executor twice on fresh inputs.
  void check_decode(const Graph& copy, double bound_scale = 1.0) {
    for (const auto& [candidate, tile] : decode_candidates(copy)) {
      SCOPED_TRACE("candidate " + candidate + " (" + tile + ")");
      check_candidate(copy, candidate, tile, bound_scale);
    }
  }

  void check_candidate(const Graph& copy, const std::string& candidate, const std::string& tile, double bound_scale,
                       const std::vector<std::string>& words = {}) {
    const CompileOptions opts = forced(candidate);
    check(Graph(copy), bound_scale, opts);
    TestPlan ex(copy, opts);
    expect_decode_step(ex, copy.name(), tile, words);
    check_reruns(ex, copy, bound_scale);
  }

  // g's matmul region (the first), or nullptr.
  static const fuse::Region* matmul_region(const fuse::Partition& p) {
    for (const fuse::Region& r : p.regions) {
      if (r.kind == fuse::RegionKind::matmul) return &r;
    }
    return nullptr;
  }

  // check_candidate on the TMA tile's `cut` (decode_tma or decode_tma_rows) with `config` (its
  // first offered config when none), or a failure naming g where that cut is not offered;
  // `words` must be in the kernel's description.
  void check_tma_cut(const Graph& g, jit::MatmulTile cut, const std::vector<std::string>& words = {},
                     std::optional<jit::DecodeTmaConfig> config = std::nullopt) {
    const fuse::Partition p = fuse::partition_graph(g);
    const fuse::Region* r = matmul_region(p);
    const int index = r ? jit::matmul_config_index(g, *r, properties_, cut) : -1;
    if (index < 0) {
      ADD_FAILURE() << g.name() << ": the TMA decode tile ("
                    << (cut == jit::MatmulTile::decode_tma_rows ? "whole tiles" : "stream-K") << ") was not offered";
      return;
    }
    jit::MatmulConfig c = jit::matmul_configs(g, *r, properties_).at(index);
    if (config) {
      c.tma = *config;
      const bool whole = cut == jit::MatmulTile::decode_tma_rows;
      const std::string why = jit::decode_tma_unsupported(g, *r, properties_, whole, c.tma);
      if (!why.empty()) {
        ADD_FAILURE() << g.name() << ": " << jit::config_text(c) << " declined: " << why;
        return;
      }
    }
    check_candidate(g, jit::config_text(c), "tma", 1.0, words);
  }

  // check_tma_cut on both cuts (whole tiles: only the modes with bn 128) under each mode.
  void check_tma_step_modes(std::initializer_list<TmaStepMode> modes) {
    for (const TmaStepMode& m : modes) {
      jit::DecodeTmaConfig c;
      c.bn = m.bn;
      c.warp_boxes = m.warp_boxes;
      c.acc_chains = m.chains;
      c.producer_warp = m.producer;
      SCOPED_TRACE("bn " + std::to_string(m.bn) + " warp_boxes " + std::to_string(m.warp_boxes) + " chains " +
                   std::to_string(m.chains) + " producer " + std::to_string(m.producer));
      std::vector<std::string> words;
      if (m.chains != 1) words.push_back(" chains" + std::to_string(m.chains));
      if (m.producer) words.push_back(" producer-warp");
      if (m.warp_boxes != 1) words.push_back(" warp-boxes" + std::to_string(m.warp_boxes));
      struct Case {
        int64_t m, n, k;
      };
      if (m.bn == 128) {  // the whole-tile cut's box is at most 128 rows
        for (Case s : {Case{3, 40000, 264}, Case{16, 9001, 2048}}) {
          check_tma_cut(decode_graph("decode_tma_step", DType::bf16, s.m, s.n, s.k, true, true),
                        jit::MatmulTile::decode_tma_rows, words, c);
        }
      }
      words.push_back("x" + std::to_string(m.bn) + " k");
      for (Case s : {Case{3, 40000, 264}, Case{16, 9001, 2048}, Case{5, 3000, 1088}}) {
        check_tma_cut(decode_graph("decode_tma_step", DType::bf16, s.m, s.n, s.k, true, true),
                      jit::MatmulTile::decode_tma, words, c);
      }
    }
  }
};

Graph decode_graph(const std::string& name, DType t, int64_t m, int64_t n, int64_t k, bool k_major,
                   bool epilogue) {
  Graph g(name + (k_major ? "_nk_" : "_kn_") + std::to_string(m) + "x" + std::to_string(n) + "x" +
          std::to_string(k));
  auto a = g.input("a", t, {m, k});
  auto b = k_major ? g.input("b", t, {k, n}, {1, k}) : g.input("b", t, {k, n});
  auto y = g.matmul(a, b);
  if (epilogue) {
    auto pre = g.add(y, g.input("bias", t, {n}));
    g.output(pre, "pre");
    y = g.gelu(pre);
    g.output(g.amax(y), "amax");
  }
  g.output(y, "y");
  return g;
}

TEST_F(GpuDecodeGemm, OddShapesBothLayoutsBiasGeluAmax) {
  struct Case { int64_t n, k; };
  // 1001 x 777: element loads, 4 chunks (the last 9 long); 1000 x 1064: 16-byte loads, N and K
  // tails inside a vector tile; 300 x 200: one chunk (no split-K)
  for (bool k_major : {true, false}) {
    for (int64_t m : {1, 3, 8, 16}) {
      for (Case c : {Case{1001, 777}, Case{1000, 1064}, Case{300, 200}}) {
        check_decode(decode_graph("decode", DType::bf16, m, c.n, c.k, k_major, true));
      }
    }
  }
}

TEST_F(GpuDecodeGemm, BareLongKSplitAndTinyShapes) {
  for (bool k_major : {true, false}) {
    check_decode(decode_graph("decode_longk", DType::bf16, 5, 1000, 4104, k_major, false));
    check_decode(decode_graph("decode_tiny", DType::bf16, 1, 1, 1, k_major, false));
    check_decode(decode_graph("decode_f16", DType::f16, 16, 129, 65, k_major, true));
  }
}

TEST_F(GpuDecodeGemm, RealDecodeShape) {
  // the benchmark's weight: 4096 x 14336, split-K over 2 chunks
  for (bool k_major : {true, false}) {
    check_decode(decode_graph("decode_llm", DType::bf16, 8, 14336, 4096, k_major, true));
  }
}

TEST_F(GpuDecodeGemm, DecodeStackShapesResidualAndManySplits) {
  // the Llama decode stack's M = 1 weights: q/o 2048x2048 + a residual add, k/v 512x2048 (on the
  // ffma tile with an [N, K] weight: 8 chunks of one 256-wide step), down 2048x8192 + a
  // residual, in both layouts (the example graphs store [K, N]); and M = 3 over K = 40000 (the
  // ffma tile: 157 chunks of one step, the last 64 long)
  struct Case {
    int64_t m, n, k;
    bool residual, k_major;
  };
  for (Case c : {Case{1, 2048, 2048, true, true}, Case{1, 512, 2048, false, true}, Case{1, 2048, 8192, true, true},
                 Case{3, 100, 40000, false, true}, Case{1, 2048, 2048, true, false}, Case{1, 512, 2048, false, false},
                 Case{2, 2048, 8192, true, false}}) {
    Graph g(std::string("decode_stack_") + (c.k_major ? "nk_" : "kn_") + std::to_string(c.m) + "x" +
            std::to_string(c.n) + "x" + std::to_string(c.k));
    auto a = g.input("a", DType::bf16, {c.m, c.k});
    auto y = g.matmul(a, c.k_major ? g.input("b", DType::bf16, {c.k, c.n}, {1, c.k})
                                   : g.input("b", DType::bf16, {c.k, c.n}));
    if (c.residual) y = g.add(y, g.input("res", DType::bf16, {c.m, c.n}));
    g.output(y, "y");
    check_decode(g);
  }
}

// An rmsnorm folded into A (fuse/partition.cpp): the mma tile, the only one offered, computes
// each row's statistics over all of K and stages the normalized rows; M 1, 3, 5 and 16, both
// weight layouts, with and without the norm's bias, K odd (element loads), a multiple of 8 with
// split-K, and a column-major x (element loads); a residual in the epilogue.
TEST_F(GpuDecodeGemm, AFoldedRmsnorm) {
  struct Case {
    int64_t m, n, k;
    bool k_major, bias, strided;
  };
  for (Case c : {Case{1, 2048, 2048, false, false, false}, Case{1, 512, 2048, true, false, false},
                 Case{5, 1001, 777, true, true, false}, Case{16, 300, 4104, false, true, false},
                 Case{3, 129, 200, true, false, true}}) {
    Graph g(std::string("decode_norm_") + (c.k_major ? "nk_" : "kn_") + std::to_string(c.m) + "x" + std::to_string(c.n) +
            "x" + std::to_string(c.k) + (c.bias ? "_bias" : "") + (c.strided ? "_strided" : ""));
    auto x = c.strided ? g.input("x", DType::bf16, {c.m, c.k}, {1, c.m}) : g.input("x", DType::bf16, {c.m, c.k});
    std::optional<Tensor> bias;
    if (c.bias) bias = g.input("norm_b", DType::bf16, {c.k});
    auto h = g.rmsnorm(x, g.input("norm_w", DType::bf16, {c.k}), bias, 1e-5);
    auto w = c.k_major ? g.input("w", DType::bf16, {c.k, c.n}, {1, c.k}) : g.input("w", DType::bf16, {c.k, c.n});
    g.output(g.add(g.matmul(h, w), g.input("res", DType::bf16, {c.m, c.n})), "y");
    g.validate();
    const fuse::Partition p = fuse::partition_graph(g);
    ASSERT_EQ(p.regions.size(), 1u) << g.name() << ": the norm did not fold";
    const auto candidates = decode_candidates(g);
    ASSERT_EQ(candidates.size(), 1u) << g.name();
    check_candidate(g, candidates[0].first, candidates[0].second, 1.0, {"rmsnorm(x)"});
  }
}

// The TMA tile's stream-K shapes (DecodeTmaConfig::bn): 32 rows x 4 boxes and 64 x 2 a step --
// M tails inside a fragment, K tails inside and past a box pair, a folded batch. bn < 128 with
// K % 64 == 0 and one batch runs the chunked boxes (one TMA box a step), the rest the separate
// boxes; split tiles combine with float4 reads, all issued before the sums.
TEST_F(GpuDecodeGemm, TmaShapesChunkedBoxes) {
  for (int bn : {32, 64, 128}) {
    SCOPED_TRACE("bn " + std::to_string(bn));
    jit::DecodeTmaConfig c;
    c.bn = bn;
    c.warp_boxes = 1;
    c.acc_chains = 1;
    c.producer_warp = false;
    struct Case {
      DType t;
      int64_t m, n, k;
    };
    for (Case s : {Case{DType::bf16, 1, 1000, 1064}, Case{DType::bf16, 3, 300, 200}, Case{DType::f16, 16, 129, 72},
                   Case{DType::bf16, 9, 2048, 4104}, Case{DType::bf16, 5, 777, 1024}, Case{DType::f16, 16, 130, 64},
                   Case{DType::bf16, 1, 3000, 4096}}) {
      check_tma_cut(decode_graph("decode_tma", s.t, s.m, s.n, s.k, true, true), jit::MatmulTile::decode_tma, {}, c);
    }
    Graph b("decode_tma_batched");
    auto y = b.matmul(b.input("a", DType::f16, {3, 4, 200}), b.input("w", DType::f16, {200, 150}, {1, 200}));
    b.output(b.add(y, b.input("res", DType::f16, {3, 4, 150})), "y");
    check_tma_cut(b, jit::MatmulTile::decode_tma, {}, c);
  }
}

// The TMA tile's whole-tile cut (MatmulTile::decode_tma_rows, offered from 64 weight rows per
// SM): tiles of an odd number of rows (the box's rows past them stale in shared memory, their
// warps idle), several tiles per CTA, a last tile past N, K past the last 64-k box, a folded
// batch whose tiles never cross a batch, and the region's epilogue on each tile.
TEST_F(GpuDecodeGemm, TmaWholeTilesOddRowsManyTilesBatches) {
  // offered, with no reason against it, then checked
  auto check_whole_tiles = [&](const Graph& g) {
    const fuse::Partition p = fuse::partition_graph(g);
    if (const fuse::Region* r = matmul_region(p)) {
      EXPECT_EQ(jit::decode_tma_unsupported(g, *r, properties_, true), "") << g.name();
    }
    check_tma_cut(g, jit::MatmulTile::decode_tma_rows);
  };
  struct Case {
    DType t;
    int64_t m, n, k;
  };
  // 9001 rows: 69-row tiles on 132 SMs, the last one 31 rows; 40000: 3 tiles of 102 rows per
  // SM; 8448 x 1000: 64 rows each, K 1000 = 15 boxes + 40
  for (Case c : {Case{DType::bf16, 1, 9001, 512}, Case{DType::bf16, 16, 9001, 520}, Case{DType::f16, 5, 40000, 264},
                 Case{DType::bf16, 8, 8448, 1000}}) {
    check_whole_tiles(decode_graph("decode_tma_rows", c.t, c.m, c.n, c.k, true, true));
  }
  // 3 batches x 3000 rows: 69-row tiles, 44 per batch, the last of each 36 rows
  Graph b("decode_tma_rows_batched");
  auto y = b.matmul(b.input("a", DType::bf16, {3, 4, 136}), b.input("w", DType::bf16, {3, 136, 3000}, {136 * 3000, 1, 136}));
  b.output(b.add(y, b.input("res", DType::bf16, {3, 4, 3000})), "y");
  check_whole_tiles(b);
}

// The per-step settings of the TMA tile (DecodeTmaConfig: accumulator chains; a producer warp,
// the consumers on named barrier 1; 2 boxes of 64 k per warp a step on a 3-stage ring; narrower
// stream-K tiles) on both cuts, each checked in the kernel's description:
//  - 40000 x 264 (3 whole tiles of 102 rows per CTA; K past the last step's boxes), 9001 x 2048
//    (one 69-row tile per CTA, the last 31 rows; stream-K tiles split), bias + GELU + amax; with
//    16 KiB steps on 6 stages most CTAs run more than twice the ring's steps, so the producer
//    waits on both parities of a stage's `empty` barrier;
//  - stream-K with narrower tiles (bn 64 / 32): two or four groups of warps on their own k boxes
//    a step, summed at a tile's end, with one chunked box of 2 to 8 k boxes a step; and 3000 x
//    1088, whose last step's chunks run past K (zero-filled).
// Two tests, not one: the modes compile ~50 kernels, more than one shard's time limit.
TEST_F(GpuDecodeGemm, TmaAccChainsAndProducerWarp) {
  check_tma_step_modes({{2, false, 1}, {4, false, 1}, {1, true, 1}, {4, true, 1}, {1, false, 2}, {2, true, 2}});
}

TEST_F(GpuDecodeGemm, TmaWarpBoxesAndNarrowTiles) {
  check_tma_step_modes({{4, false, 2}, {1, true, 2, 64}, {1, false, 2, 64}, {2, true, 2, 32}, {1, false, 1, 32}});
}

// The TMA tile's [K, N] form (row-major, n-contiguous weights: boxes of 64 k x 64 n read with
// ldmatrix.trans): stream-K tiles of 128 and 64 columns with each per-step setting, N a multiple
// of 8 but not of 64 (the last box past N), K past the last box (1000) or inside one (72), M 1, 5
// and 16, f16 and bf16, a folded batch; whole tiles of 64 and 128 columns (8448 and 16896
// columns), several per CTA (40000: five of 64), all through bias + GELU + amax.
TEST_F(GpuDecodeGemm, TmaKnWeightsBothCuts) {
  struct Case {
    DType t;
    int64_t m, n, k;
  };
  for (const TmaStepMode& mode : {TmaStepMode{1, false, 1, 128}, TmaStepMode{2, true, 2, 128}, TmaStepMode{1, false, 1, 64},
                                  TmaStepMode{4, true, 2, 64}}) {
    jit::DecodeTmaConfig c;
    c.bn = mode.bn;
    c.warp_boxes = mode.warp_boxes;
    c.acc_chains = mode.chains;
    c.producer_warp = mode.producer;
    SCOPED_TRACE("bn " + std::to_string(mode.bn) + " warp_boxes " + std::to_string(mode.warp_boxes));
    for (Case s : {Case{DType::bf16, 1, 1000, 1064}, Case{DType::bf16, 5, 3000, 1000}, Case{DType::f16, 16, 136, 72},
                   Case{DType::bf16, 1, 2048, 2048}}) {
      check_tma_cut(decode_graph("decode_tma_kn", s.t, s.m, s.n, s.k, false, true), jit::MatmulTile::decode_tma,
                    {"w:[K,N]"}, c);
    }
  }
  for (Case s : {Case{DType::bf16, 1, 8448, 512}, Case{DType::bf16, 16, 16896, 1000}, Case{DType::f16, 5, 40000, 264}}) {
    check_tma_cut(decode_graph("decode_tma_kn_rows", s.t, s.m, s.n, s.k, false, true), jit::MatmulTile::decode_tma_rows,
                  {"w:[K,N] whole tiles"});
  }
  Graph b("decode_tma_kn_batched");
  auto y = b.matmul(b.input("a", DType::bf16, {3, 4, 136}), b.input("w", DType::bf16, {3, 136, 3000}));
  b.output(b.add(y, b.input("res", DType::bf16, {3, 4, 3000})), "y");
  check_tma_cut(b, jit::MatmulTile::decode_tma, {"w:[K,N]"});
}

TEST_F(GpuDecodeGemm, BatchedBroadcastWeightRowAndColumnSums) {
  for (bool k_major : {true, false}) {
    Graph g(std::string("decode_batched_") + (k_major ? "nk" : "kn"));
    auto a = g.input("a", DType::f16, {3, 4, 200});
    auto b = k_major ? g.input("b", DType::f16, {200, 150}, {1, 200}) : g.input("b", DType::f16, {200, 150});
    auto res = g.input("res", DType::f16, {3, 4, 150});
    auto y = g.add(g.mul(g.matmul(a, b), 0.5), res);
    g.output(y, "y");
    g.output(g.sum(y, {-1}), "rows");
    g.output(g.sum(y, {0, 1}), "cols");
    check_decode(g, 2.0);
  }
}

}  // namespace
}  // namespace sinter::testing
