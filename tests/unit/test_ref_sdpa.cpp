// Reference sdpa against hand-computed rows and a naive per-row softmax written here (no max
// subtraction, visible keys only): GQA, both causal alignments with Sq != Skv, float bias and bool
// mask with broadcasting, fully masked rows, log-sum-exp stats, and one case against a
// composition of reference ops (matmul, mul, add, softmax, matmul).
#include <cmath>

#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

struct Shape {
  int64_t b, h, hkv, sq, skv, d, dv;
};

struct Naive {
  std::vector<double> o, stats;
};

// o[b,h,i,:] = sum over visible j of exp(s_j) v[b,h/(H/Hkv),j,:] / sum exp(s_j), with
// s_j = scale * q.k + bias. Unrounded. A row with no visible key gives zeros and -inf.
Naive naive_attention(const Shape& s, double scale, CausalMask causal,
                      const std::vector<double>& q, const std::vector<double>& k,
                      const std::vector<double>& v, const std::vector<double>* bias,
                      Dims bias_dims, bool bias_is_mask) {
  while (bias_dims.size() < 4) bias_dims.insert(bias_dims.begin(), 1);
  auto bias_at = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t c[4] = {b, h, i, j};
    int64_t off = 0;
    for (int a = 0; a < 4; ++a) off = off * bias_dims[a] + (bias_dims[a] == 1 ? 0 : c[a]);
    return (*bias)[off];
  };
  Naive out{std::vector<double>(s.b * s.h * s.sq * s.dv, 0.0),
            std::vector<double>(s.b * s.h * s.sq, 0.0)};
  for (int64_t b = 0; b < s.b; ++b) {
    for (int64_t h = 0; h < s.h; ++h) {
      const int64_t kvh = h / (s.h / s.hkv);
      for (int64_t i = 0; i < s.sq; ++i) {
        std::vector<int64_t> keys;
        std::vector<double> weights;
        for (int64_t j = 0; j < s.skv; ++j) {
          if (causal == CausalMask::top_left && j > i) continue;
          if (causal == CausalMask::bottom_right && j - i > s.skv - s.sq) continue;
          if (bias && bias_is_mask && bias_at(b, h, i, j) == 0) continue;
          double dot = 0;
          for (int64_t t = 0; t < s.d; ++t) {
            dot += q[((b * s.h + h) * s.sq + i) * s.d + t] *
                   k[((b * s.hkv + kvh) * s.skv + j) * s.d + t];
          }
          double score = dot * scale;
          if (bias && !bias_is_mask) score += bias_at(b, h, i, j);
          if (score == -kInf) continue;
          keys.push_back(j);
          weights.push_back(std::exp(score));
        }
        const int64_t row = (b * s.h + h) * s.sq + i;
        if (keys.empty()) {
          out.stats[row] = -kInf;
          continue;
        }
        double total = 0;
        for (double w : weights) total += w;
        out.stats[row] = std::log(total);
        for (size_t n = 0; n < keys.size(); ++n) {
          for (int64_t t = 0; t < s.dv; ++t) {
            out.o[row * s.dv + t] +=
                weights[n] / total * v[((b * s.hkv + kvh) * s.skv + keys[n]) * s.dv + t];
          }
        }
      }
    }
  }
  return out;
}

struct SdpaRun {
  TensorMap in, out;
};

// Builds sdpa(q, k, v[, bias]) with stats, runs it on random inputs and compares with the naive
// attention. Returns the inputs and the reference outputs for further checks.
SdpaRun check_sdpa(const Shape& s, SdpaAttrs at, DType dt, std::optional<DType> bias_dt,
                     const Dims& bias_dims, uint64_t seed) {
  Graph g;
  auto q = g.input("q", dt, {s.b, s.h, s.sq, s.d});
  auto k = g.input("k", dt, {s.b, s.hkv, s.skv, s.d});
  auto v = g.input("v", dt, {s.b, s.hkv, s.skv, s.dv});
  std::optional<Tensor> bias;
  if (bias_dt) bias = g.input("bias", *bias_dt, bias_dims);
  at.emit_stats = true;
  auto r = g.sdpa(q, k, v, at, bias);
  g.output(r.o, "o");
  g.output(r.stats, "stats");
  const TensorMap in = random_inputs(g, seed);
  std::vector<double> bias_values;
  if (bias_dt) bias_values = in.at("bias").values();
  const double scale = at.scale.value_or(1.0 / std::sqrt(static_cast<double>(s.d)));
  const Naive want = naive_attention(s, scale, at.causal, in.at("q").values(),
                                     in.at("k").values(), in.at("v").values(),
                                     bias_dt ? &bias_values : nullptr, bias_dims,
                                     bias_dt == DType::boolean);
  const TensorMap out = run_reference(g, in);
  EXPECT_EQ(out.at("o").dims(), (Dims{s.b, s.h, s.sq, s.dv}));
  EXPECT_EQ(out.at("stats").dims(), (Dims{s.b, s.h, s.sq, 1}));
  EXPECT_EQ(out.at("stats").dtype(), DType::f32);
  const double tol = dt == DType::f32 ? 1e-6 : 1e-2;
  expect_values(out.at("o").values(), rounded(want.o, dt), tol, 1e-6);
  expect_values(out.at("stats").values(), rounded(want.stats, DType::f32), 1e-6, 1e-6);
  return {in, out};
}

}  // namespace

TEST(RefSdpa, HandComputedRow) {
  // scale 1, q = [2], keys [0] and [1]: scores [0, 2], weights 1/(1+e^2) and e^2/(1+e^2);
  // values are the unit vectors, so o is the weights; stats = log(1 + e^2).
  Graph g;
  auto q = g.input("q", DType::f32, {1, 1, 1, 1});
  auto k = g.input("k", DType::f32, {1, 1, 2, 1});
  auto v = g.input("v", DType::f32, {1, 1, 2, 2});
  SdpaAttrs at;
  at.scale = 1.0;
  at.emit_stats = true;
  auto r = g.sdpa(q, k, v, at);
  g.output(r.o, "o");
  g.output(r.stats, "stats");
  TensorMap in;
  in["q"] = tensor(DType::f32, {1, 1, 1, 1}, {2});
  in["k"] = tensor(DType::f32, {1, 1, 2, 1}, {0, 1});
  in["v"] = tensor(DType::f32, {1, 1, 2, 2}, {1, 0, 0, 1});
  expect_values(run_values(g, in, "o"), {0.11920292202211755, 0.8807970779778824}, 1e-7);
  expect_values(run_values(g, in, "stats"), {2.1269280110429727}, 1e-7);
}

TEST(RefSdpa, DefaultScaleIsInverseSqrtHeadDim) {
  // D = 4, so scale = 1/2: q.k = [4, 0] -> scores [2, 0]; v = [1, 0] -> o = e^2 / (1 + e^2).
  Graph g;
  auto q = g.input("q", DType::f32, {1, 1, 1, 4});
  auto k = g.input("k", DType::f32, {1, 1, 2, 4});
  auto v = g.input("v", DType::f32, {1, 1, 2, 1});
  g.output(g.sdpa(q, k, v).o, "o");
  TensorMap in;
  in["q"] = tensor(DType::f32, {1, 1, 1, 4}, {1, 1, 1, 1});
  in["k"] = tensor(DType::f32, {1, 1, 2, 4}, {1, 1, 1, 1, 0, 0, 0, 0});
  in["v"] = tensor(DType::f32, {1, 1, 2, 1}, {1, 0});
  expect_values(run_values(g, in, "o"), {0.8807970779778824}, 1e-7);
}

TEST(RefSdpa, GroupedQueryAttentionMatchesNaiveAndRepeatedHeads) {
  const Shape s{2, 4, 2, 3, 5, 8, 6};
  const SdpaRun gqa = check_sdpa(s, {}, DType::f32, std::nullopt, {}, 41);

  // The same computation as plain multi-head attention with k and v repeated per query head:
  // query heads 0, 1 use kv head 0 and heads 2, 3 use kv head 1.
  Graph g;
  auto q = g.input("q", DType::f32, {2, 4, 3, 8});
  auto k = g.input("k", DType::f32, {2, 4, 5, 8});
  auto v = g.input("v", DType::f32, {2, 4, 5, 6});
  g.output(g.sdpa(q, k, v).o, "o");
  const TensorMap& gin = gqa.in;
  auto repeat = [](const HostTensor& t, int64_t skv, int64_t dd) {
    const auto vals = t.values();
    std::vector<double> r;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t h = 0; h < 4; ++h) {
        const int64_t off = (b * 2 + h / 2) * skv * dd;
        r.insert(r.end(), vals.begin() + off, vals.begin() + off + skv * dd);
      }
    }
    return tensor(DType::f32, {2, 4, skv, dd}, r);
  };
  TensorMap in{{"q", gin.at("q")}, {"k", repeat(gin.at("k"), 5, 8)},
               {"v", repeat(gin.at("v"), 5, 6)}};
  expect_values(run_values(g, in, "o"), gqa.out.at("o").values());
}

TEST(RefSdpa, CausalAlignmentsWithUnequalLengths) {
  struct Case {
    int64_t sq, skv;
    CausalMask causal;
  };
  const Case cases[] = {
      {3, 5, CausalMask::top_left},     {5, 3, CausalMask::top_left},
      {1, 7, CausalMask::top_left},     {7, 7, CausalMask::top_left},
      {3, 5, CausalMask::bottom_right}, {1, 7, CausalMask::bottom_right},
      {5, 3, CausalMask::bottom_right}, {33, 7, CausalMask::bottom_right},
  };
  uint64_t seed = 60;
  for (const Case& c : cases) {
    SCOPED_TRACE("Sq=" + std::to_string(c.sq) + " Skv=" + std::to_string(c.skv) + " " +
                 std::string(to_string(c.causal)));
    SdpaAttrs at;
    at.causal = c.causal;
    check_sdpa({1, 2, 1, c.sq, c.skv, 7, 5}, at, DType::f32, std::nullopt, {}, seed++);
  }
}

TEST(RefSdpa, DecodeBottomRightSeesEveryKey) {
  // Sq = 1 with bottom_right: the one query is the last, so nothing is masked.
  Graph g;
  auto q = g.input("q", DType::bf16, {2, 4, 1, 16});
  auto k = g.input("k", DType::bf16, {2, 1, 33, 16});
  auto v = g.input("v", DType::bf16, {2, 1, 33, 16});
  SdpaAttrs br;
  br.causal = CausalMask::bottom_right;
  g.output(g.sdpa(q, k, v, br).o, "causal");
  g.output(g.sdpa(q, k, v).o, "full");
  const TensorMap out = run_reference(g, random_inputs(g, 7));
  expect_values(out.at("causal").values(), out.at("full").values());
}

TEST(RefSdpa, MoreQueriesThanKeysBottomRightMasksLeadingRows) {
  // Sq = 5, Skv = 3, bottom_right: query i sees keys j <= i - 2, so rows 0 and 1 see none.
  SdpaAttrs at;
  at.causal = CausalMask::bottom_right;
  const SdpaRun r = check_sdpa({1, 1, 1, 5, 3, 4, 2}, at, DType::f32, std::nullopt, {}, 77);
  const auto o = r.out.at("o").values(), st = r.out.at("stats").values();
  expect_values({o[0], o[1], o[2], o[3]}, {0, 0, 0, 0});
  expect_values({st[0], st[1]}, {-kInf, -kInf});
  // Row 2 sees only key 0: its weight is exactly 1, so o = v[0] and stats = its scaled score.
  const auto q = r.in.at("q").values(), k = r.in.at("k").values(), v = r.in.at("v").values();
  double dot = 0;
  for (int t = 0; t < 4; ++t) dot += q[2 * 4 + t] * k[t];
  expect_values({o[4], o[5]}, {v[0], v[1]});
  expect_values({st[2]}, {round_to_dtype(0.5 * dot, DType::f32)});
}

TEST(RefSdpa, FloatBiasBroadcastShapes) {
  const Shape s{2, 3, 3, 7, 5, 4, 3};
  const Dims shapes[] = {{7, 5}, {1, 3, 1, 5}, {2, 1, 7, 1}, {2, 3, 7, 5}, {5}, {3, 1, 1}};
  uint64_t seed = 90;
  for (const Dims& bd : shapes) {
    SCOPED_TRACE("bias " + dims_to_string(bd));
    check_sdpa(s, {}, DType::f32, DType::f32, bd, seed++);
    check_sdpa(s, {}, DType::bf16, DType::bf16, bd, seed++);
  }
  SdpaAttrs at;
  at.scale = 0.3;
  at.causal = CausalMask::top_left;
  check_sdpa(s, at, DType::f32, DType::f32, {1, 3, 7, 5}, seed++);
}

TEST(RefSdpa, BoolMaskWithFullyMaskedRows) {
  // mask [B=1, 1, Sq=3, Skv=4]: row 0 keeps keys 0 and 2, row 1 keeps none, row 2 keeps all.
  Graph g;
  auto q = g.input("q", DType::f32, {1, 2, 3, 4});
  auto k = g.input("k", DType::f32, {1, 2, 4, 4});
  auto v = g.input("v", DType::f32, {1, 2, 4, 3});
  auto m = g.input("mask", DType::boolean, {1, 1, 3, 4});
  SdpaAttrs at;
  at.emit_stats = true;
  auto r = g.sdpa(q, k, v, at, m);
  g.output(r.o, "o");
  g.output(r.stats, "stats");
  TensorMap in = random_inputs(g, 5);
  const std::vector<double> mask = {1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  in["mask"] = tensor(DType::boolean, {1, 1, 3, 4}, mask);
  const Naive want = naive_attention({1, 2, 2, 3, 4, 4, 3}, 0.5, CausalMask::none,
                                     in.at("q").values(), in.at("k").values(),
                                     in.at("v").values(), &mask, {1, 1, 3, 4}, true);
  const auto o = run_values(g, in, "o"), st = run_values(g, in, "stats");
  expect_values(o, rounded(want.o, DType::f32), 1e-6, 1e-7);
  expect_values(st, rounded(want.stats, DType::f32), 1e-6, 1e-7);
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(st[h * 3 + 1], -kInf);
    for (int64_t t = 0; t < 3; ++t) EXPECT_EQ(o[(h * 3 + 1) * 3 + t], 0.0);
  }
  // random masks, together with a causal mask
  SdpaAttrs causal;
  causal.causal = CausalMask::top_left;
  check_sdpa({2, 2, 1, 7, 7, 4, 4}, causal, DType::f32, DType::boolean, {2, 1, 7, 7}, 123);
  check_sdpa({1, 1, 1, 33, 7, 4, 4}, {}, DType::f32, DType::boolean, {33, 7}, 124);
}

TEST(RefSdpa, MinusInfinityBiasMasksLikeBoolMask) {
  Graph g;
  auto q = g.input("q", DType::f32, {1, 1, 2, 4});
  auto k = g.input("k", DType::f32, {1, 1, 3, 4});
  auto v = g.input("v", DType::f32, {1, 1, 3, 2});
  auto fb = g.input("fbias", DType::f32, {2, 3});
  auto bm = g.input("mask", DType::boolean, {2, 3});
  SdpaAttrs at;
  at.emit_stats = true;
  auto rf = g.sdpa(q, k, v, at, fb);
  auto rm = g.sdpa(q, k, v, at, bm);
  g.output(rf.o, "o_float");
  g.output(rf.stats, "s_float");
  g.output(rm.o, "o_mask");
  g.output(rm.stats, "s_mask");
  TensorMap in = random_inputs(g, 8);
  in["fbias"] = tensor(DType::f32, {2, 3}, {0, -kInf, 0, -kInf, -kInf, -kInf});
  in["mask"] = tensor(DType::boolean, {2, 3}, {1, 0, 1, 0, 0, 0});
  const TensorMap out = run_reference(g, in);
  expect_values(out.at("o_float").values(), out.at("o_mask").values());
  expect_values(out.at("s_float").values(), out.at("s_mask").values());
  EXPECT_EQ(out.at("s_float").values()[1], -kInf);
}

TEST(RefSdpa, MatchesCompositionOfReferenceOps) {
  // o = softmax(q k^T * scale + bias) v, built from matmul, permute, mul, add, softmax, matmul
  // with f32 intermediates; the fused reference keeps float64 inside, so they agree to f32 level.
  const int64_t b = 2, h = 3, sq = 7, skv = 33, d = 8, dv = 5;
  Graph g;
  auto q = g.input("q", DType::f32, {b, h, sq, d});
  auto k = g.input("k", DType::f32, {b, h, skv, d});
  auto v = g.input("v", DType::f32, {b, h, skv, dv});
  auto bias = g.input("bias", DType::f32, {1, h, sq, skv});
  const double scale = 0.25;
  SdpaAttrs at;
  at.scale = scale;
  g.output(g.sdpa(q, k, v, at, bias).o, "fused");
  auto scores = g.matmul(q, g.permute(k, {0, 1, 3, 2}));
  auto p = g.softmax(g.add(g.mul(scores, scale), bias));
  g.output(g.matmul(p, v), "composed");
  const TensorMap out = run_reference(g, random_inputs(g, 31));
  const double err = relative_l2_error(out.at("fused"), out.at("composed"));
  EXPECT_LE(err, 1e-6);
  EXPECT_GT(tensor_stats(out.at("fused")).l2, 0.1);
}

TEST(RefSdpa, StatsAreF32ForNarrowInputs) {
  Graph g;
  auto q = g.input("q", DType::f16, {1, 1, 1, 2});
  auto k = g.input("k", DType::f16, {1, 1, 2, 2});
  auto v = g.input("v", DType::f16, {1, 1, 2, 1});
  SdpaAttrs at;
  at.scale = 1.0;
  at.emit_stats = true;
  auto r = g.sdpa(q, k, v, at);
  g.output(r.o, "o");
  g.output(r.stats, "stats");
  TensorMap in;
  in["q"] = tensor(DType::f16, {1, 1, 1, 2}, {1, 1});
  in["k"] = tensor(DType::f16, {1, 1, 2, 2}, {0.5, 0.5, 0, 0});  // scores [1, 0]
  in["v"] = tensor(DType::f16, {1, 1, 2, 1}, {1, 0});
  const TensorMap out = run_reference(g, in);
  EXPECT_EQ(out.at("o").dtype(), DType::f16);
  EXPECT_EQ(out.at("stats").dtype(), DType::f32);
  // stats = log(e + 1) = 1.3132616875182228 in f32; o = e / (e + 1) = 0.7310585786300049 in f16
  expect_values(out.at("stats").values(), {1.3132616875182228}, 1e-7);
  expect_values(out.at("o").values(), {round_to_dtype(0.7310585786300049, DType::f16)}, 1e-7);
}
