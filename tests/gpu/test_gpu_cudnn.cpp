// The cuDNN engine on the GPU against the CPU reference: fused flash attention at odd lengths
// (not multiples of any tile), GQA, decode (Sq = 1), both causal alignments, a bias, stored
// statistics, strided (BSHD) views, f16 and bf16; conv with bias/relu/residual epilogues at odd
// shapes, strides, padding and dilation; matmul with that chain; layernorm and rmsnorm. Every step must really run on
// cuDNN.
#include "engines/cudnn/cudnn_engine.hpp"
#include "cuda/buffer.hpp"
#include "engines/cudnn/cudnn_library.hpp"
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

// The command that reruns the current test with cuDNN's own debug log in a file: printed
// whenever cuDNN refused something, since its log says which pattern or limit it tripped on.
std::string log_command() {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string("for cuDNN's own log run: CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=cudnn_log.txt "
                     "./sinter_gpu_tests --gtest_filter=") +
         t->test_suite_name() + "." + t->name() + "  (then read cudnn_log.txt)";
}

class GpuCudnn : public GpuRegions {
 protected:
  void SetUp() override {
    GpuRegions::SetUp();
    if (IsSkipped()) return;
    const cudnn::Library& lib = cudnn::library();
    if (!lib.loaded) GTEST_SKIP() << "cuDNN not found (" << lib.reason << ")";
    std::printf("  cuDNN %s from %s\n", cudnn::version_string().c_str(), lib.path.c_str());
  }

  void check_on_cudnn(Graph g, double scale = 1.0) {
    CompileOptions opts;
    opts.engines = {"cudnn"};
    g.validate();
    {
      TestPlan ex(g, opts);
      bool used = false;
      for (const StepDescription& s : ex.steps()) {
        if (s.engine == "cudnn") used = true;
        std::printf("  step %d %s [%s] %s\n", s.index, s.kind.c_str(), s.engine.c_str(), s.description.c_str());
      }
      EXPECT_TRUE(used) << "no step ran on cuDNN (the reason is on stderr above); " << log_command();
    }
    check(std::move(g), scale, opts);
  }
};

struct Case {
  DType dtype;
  int64_t b, h, hkv, sq, skv, d, dv;
  CausalMask causal;
  bool bias, stats, bshd;
  std::optional<double> scale;
};

Graph sdpa_graph(const Case& c) {
  Graph g("cudnn_sdpa_b" + std::to_string(c.b) + "h" + std::to_string(c.h) + "/" +
          std::to_string(c.hkv) + "_sq" + std::to_string(c.sq) + "_skv" + std::to_string(c.skv) +
          "_d" + std::to_string(c.d) + "_" + std::string(to_string(c.causal)));
  // bshd: q, k, v are views of [B, S, H, D] buffers, as models store them
  auto view = [&](const char* name, int64_t heads, int64_t s, int64_t d) {
    if (!c.bshd) return g.input(name, c.dtype, {c.b, heads, s, d});
    return g.input(name, c.dtype, {c.b, heads, s, d}, {s * heads * d, d, heads * d, 1});
  };
  auto q = view("q", c.h, c.sq, c.d);
  auto k = view("k", c.hkv, c.skv, c.d);
  auto v = view("v", c.hkv, c.skv, c.dv);
  std::optional<Tensor> bias;
  if (c.bias) bias = g.input("bias", c.dtype, {1, c.h, c.sq, c.skv});
  auto r = g.sdpa(q, k, v, SdpaAttrs{.scale = c.scale, .causal = c.causal, .emit_stats = c.stats}, bias);
  g.output(r.o, "o");
  if (c.stats) g.output(r.stats, "stats");
  return g;
}

TEST_F(GpuCudnn, SdpaOddShapes) {
  const DType bf = DType::bf16, hf = DType::f16;
  const Case cases[] = {
      {bf, 2, 4, 2, 33, 70, 64, 64, CausalMask::none, false, false, false, {}},
      {bf, 1, 2, 2, 129, 129, 128, 128, CausalMask::top_left, false, true, false, {}},
      {bf, 2, 8, 2, 17, 300, 64, 64, CausalMask::bottom_right, false, true, false, {}},
      {bf, 3, 8, 2, 1, 1000, 128, 128, CausalMask::bottom_right, false, false, false, {}},  // decode
      {bf, 2, 4, 4, 45, 80, 64, 64, CausalMask::none, true, false, false, {}},
      {bf, 1, 4, 4, 100, 72, 64, 64, CausalMask::top_left, true, true, false, 0.3},
      {hf, 2, 6, 3, 95, 95, 128, 128, CausalMask::top_left, false, false, true, {}},
      {hf, 1, 1, 1, 1, 1, 64, 64, CausalMask::none, false, true, false, {}},
  };
  for (const Case& c : cases) check_on_cudnn(sdpa_graph(c));
}

// cuDNN's Hopper attention supports a value head dim other than the query's; kept apart so a
// refusal by an older cuDNN shows as its own failure.
TEST_F(GpuCudnn, SdpaValueHeadDimDiffers) {
  check_on_cudnn(sdpa_graph({DType::bf16, 2, 4, 2, 50, 90, 128, 64, CausalMask::none, false, true, false, {}}));
}

// The shapes bench_vendor runs (too large for the CPU reference): cuDNN's heuristics must
// offer at least one engine config that builds for each, or the benchmark silently falls back
// to our kernel. Only the candidates are asked for; nothing is launched.
TEST_F(GpuCudnn, SdpaHeuristicsOfferConfigsAtModelShapes) {
  const DType bf = DType::bf16;
  const Case cases[] = {
      {bf, 4, 32, 32, 4096, 4096, 128, 128, CausalMask::none, false, false, false, {}},
      {bf, 4, 32, 32, 4096, 4096, 128, 128, CausalMask::top_left, false, false, false, {}},
      {bf, 4, 32, 32, 4096, 4096, 64, 64, CausalMask::none, false, false, false, {}},
      {bf, 4, 32, 32, 4096, 4096, 64, 64, CausalMask::top_left, false, false, false, {}},
      {bf, 4, 32, 32, 4096, 4096, 128, 128, CausalMask::top_left, false, true, false, {}},
      {bf, 32, 32, 8, 1, 4096, 128, 128, CausalMask::none, false, false, false, {}},  // decode, GQA 32/8
  };
  cudnn::CudnnEngine engine;
  EngineContext ctx{shared_cache(), properties_};
  for (const Case& c : cases) {
    Graph g = sdpa_graph(c);
    g.validate();
    const fuse::Partition p = fuse::partition_graph(g);
    for (const fuse::Region& r : p.regions) {
      if (r.kind != fuse::RegionKind::sdpa) continue;
      const auto cands = engine.candidates(g, r, ctx);
      std::printf("  %s: %zu candidate(s)%s%s\n", g.name().c_str(), cands.size(), cands.empty() ? "" : ", first ",
                  cands.empty() ? "" : cands.front().description.c_str());
      EXPECT_FALSE(cands.empty()) << g.name() << ": cuDNN offered no candidate (reason on stderr); "
                                  << log_command();
    }
  }
}

// The engine lists candidates from its heuristics, each with its knobs and notes, and every one
// of them (not only the favourite) computes the right answer: each is prepared and launched
// directly on poisoned outputs.
TEST_F(GpuCudnn, EveryCandidateIsCorrect) {
  Graph g = sdpa_graph({DType::bf16, 1, 4, 2, 70, 130, 64, 64, CausalMask::top_left, false, true, false, {}});
  g.validate();
  const fuse::Partition p = fuse::partition_graph(g);
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const TensorMap inputs = random_inputs(g, seed);
  const TensorMap want = run_reference(g, inputs);
  cudnn::CudnnEngine engine;
  EngineContext ctx{shared_cache(), properties_};
  for (const fuse::Region& r : p.regions) {
    if (r.kind != fuse::RegionKind::sdpa) continue;
    const auto cands = engine.candidates(g, r, ctx);
    ASSERT_FALSE(cands.empty()) << "cuDNN offered no candidate for a plain causal sdpa; " << log_command();
    std::vector<cuda::DeviceBuffer> in_bufs;
    Binding bind;
    for (TensorId t : r.inputs) {
      const HostTensor& h = inputs.at(g.tensor(t).name);
      in_bufs.emplace_back(h.storage_bytes());
      in_bufs.back().copy_from_host(h.data(), h.storage_bytes());
      bind.inputs.push_back(in_bufs.back().data());
    }
    for (const Candidate& c : cands) {
      std::printf("  [%d] %s\n", c.index, c.description.c_str());
      auto step = engine.prepare(g, r, c, ctx);
      cuda::DeviceBuffer ws(step->workspace_bytes());
      if (!ws.empty()) ws.memset(0);
      std::vector<cuda::DeviceBuffer> out_bufs;
      std::vector<HostTensor> got;
      bind.outputs.clear();
      for (TensorId t : r.outputs) {
        const TensorInfo& info = g.tensor(t);
        got.emplace_back(info.dtype, info.dims);
        out_bufs.emplace_back(got.back().storage_bytes());
        out_bufs.back().memset(0xff);  // poison: NaN in every float type
        bind.outputs.push_back(out_bufs.back().data());
      }
      bind.workspace = ws.data();
      step->launch(bind, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (size_t i = 0; i < r.outputs.size(); ++i) {
        out_bufs[i].copy_to_host(got[i].data(), got[i].storage_bytes());
        const TensorInfo& info = g.tensor(r.outputs[i]);
        const double err = relative_l2_error(got[i], want.at(info.name));
        std::printf("      %-6s rel L2 %.3g (bound %.3g)\n", info.name.c_str(), err, relative_l2_bound(info.dtype));
        EXPECT_LE(err, relative_l2_bound(info.dtype)) << "candidate " << c.index << " output " << info.name;
      }
    }
  }
}

// conv (NHWC, KRSC) with its epilogue chain: odd spatial sizes, strides, asymmetric padding,
// dilation, 1x1 without epilogue, bias + relu, + residual.
TEST_F(GpuCudnn, ConvEpilogueOddShapes) {
  struct ConvCase {
    int64_t n, h, w, c, k, r, s;
    Conv2dAttrs at;
    bool bias, relu, residual;
  };
  const ConvCase cases[] = {
      {3, 13, 13, 32, 40, 3, 3, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}}, true, true, false},
      {1, 7, 5, 64, 8, 1, 1, Conv2dAttrs{}, false, false, false},
      {2, 15, 9, 16, 24, 3, 3, Conv2dAttrs{.stride = {2, 2}, .pad_begin = {1, 0}, .pad_end = {0, 1}}, true, true, true},
      {2, 12, 12, 8, 16, 3, 3, Conv2dAttrs{.pad_begin = {2, 2}, .pad_end = {2, 2}, .dilation = {2, 2}}, true, false, true},
  };
  for (const ConvCase& c : cases) {
    Graph g("cudnn_conv_" + std::to_string(c.h) + "x" + std::to_string(c.w) + "c" + std::to_string(c.c) +
            "k" + std::to_string(c.k));
    auto x = g.input("x", DType::bf16, {c.n, c.h, c.w, c.c});
    auto w = g.input("w", DType::bf16, {c.k, c.r, c.s, c.c});
    auto y = g.conv2d(x, w, c.at);
    const Dims out_dims = g.tensor(y.id).dims;
    if (c.bias) y = g.add(y, g.input("bias", DType::bf16, {c.k}));
    if (c.relu) y = g.relu(y);
    if (c.residual) y = g.add(y, g.input("res", DType::bf16, out_dims));
    g.output(y, "y");
    check_on_cudnn(std::move(g));
  }
}

// conv + bias + relu with exit reductions of the stored y folded into the cuDNN graph: the global
// amax (what fp8 scaling needs) and per-channel sums (batch statistics), in f32; odd spatial
// sizes. Forced: auto keeps these regions on jit until this test has passed on the device.
TEST_F(GpuCudnn, ConvExitReductions) {
  for (bool per_channel_sum : {false, true}) {
    SCOPED_TRACE(per_channel_sum ? "amax + per-channel sum" : "amax");
    Graph g(per_channel_sum ? "cudnn_conv_amax_sum" : "cudnn_conv_amax");
    auto x = g.input("x", DType::bf16, {3, 13, 11, 32});
    auto w = g.input("w", DType::bf16, {40, 3, 3, 32});
    auto y = g.relu(g.add(g.conv2d(x, w, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}}),
                          g.input("bias", DType::bf16, {40})));
    g.output(y, "y");
    g.output(g.reduce(OpKind::reduce_amax, y, {}, false, DType::f32), "amax");
    if (per_channel_sum) g.output(g.reduce(OpKind::reduce_sum, y, {0, 1, 2}, false, DType::f32), "channel_sum");
    check_on_cudnn(std::move(g));
  }
}

// matmul with its epilogue chain (forced: auto leaves matmuls to cuBLASLt and jit): batched with
// a broadcast column-major B, a residual, a single row.
TEST_F(GpuCudnn, MatmulEpilogues) {
  {
    Graph g("cudnn_mm_batched_bias_relu");
    auto a = g.input("a", DType::bf16, {3, 77, 304});
    auto bt = g.input("bt", DType::bf16, {304, 136}, {1, 304});
    auto bias = g.input("bias", DType::bf16, {136});
    g.output(g.relu(g.add(g.matmul(a, bt), bias)), "y");
    check_on_cudnn(std::move(g));
  }
  {
    Graph g("cudnn_mm_residual");
    auto a = g.input("a", DType::f16, {65, 128});
    auto b = g.input("b", DType::f16, {128, 72});
    auto res = g.input("res", DType::f16, {65, 72});
    g.output(g.add(g.matmul(a, b), res), "y");
    check_on_cudnn(std::move(g));
  }
  {
    Graph g("cudnn_mm_row");
    g.output(g.matmul(g.input("a", DType::bf16, {1, 64}), g.input("b", DType::bf16, {64, 8})), "y");
    check_on_cudnn(std::move(g));
  }
}

// layernorm / rmsnorm forward through NORM_FORWARD (forced: auto keeps norms on our kernels).
TEST_F(GpuCudnn, NormsOddShapes) {
  struct NormCase {
    bool rms;
    DType dtype;
    Dims dims;
  };
  for (const NormCase& c : {NormCase{false, DType::bf16, {37, 1000}}, NormCase{true, DType::bf16, {3, 5, 4096}},
                            NormCase{false, DType::f32, {7, 777}}, NormCase{true, DType::f16, {1, 64}}}) {
    Graph g(std::string(c.rms ? "cudnn_rmsnorm_" : "cudnn_layernorm_") + dims_to_string(c.dims));
    auto x = g.input("x", c.dtype, c.dims);
    auto w = g.input("w", c.dtype, {c.dims.back()});
    if (c.rms) {
      g.output(g.rmsnorm(x, w), "y");
    } else {
      g.output(g.layernorm(x, w, g.input("b", c.dtype, {c.dims.back()})), "y");
    }
    check_on_cudnn(std::move(g));
  }
}

// An rmsnorm folded into a decode matmul that no named engine takes (cuDNN lowers the norm and
// the matmul, not a matmul with a norm on its A): compile plans the graph again with the norms
// unfolded and says so; two cuDNN steps, the reference's answer.
TEST_F(GpuCudnn, AFoldedNormNoEngineTakesIsPlannedUnfolded) {
  Graph g("cudnn_rmsnorm_then_matmul");
  auto h = g.rmsnorm(g.input("x", DType::bf16, {1, 64}), g.input("w", DType::bf16, {64}));
  g.output(g.matmul(h, g.input("b", DType::bf16, {64, 32})), "y");
  g.validate();
  CompileOptions opts;
  opts.engines = {"cudnn"};
  std::vector<std::string> said;
  opts.on_log = [&](LogSeverity, std::string_view m) { said.emplace_back(m); };
  const Plan plan = compile(g, with_test_cache(opts));
  const std::vector<StepDescription> steps = plan.describe().steps;
  ASSERT_EQ(steps.size(), 2u);
  for (const StepDescription& s : steps) EXPECT_EQ(s.engine, "cudnn") << s.description;
  EXPECT_TRUE(std::any_of(said.begin(), said.end(), [](const std::string& m) {
    return m.find("planning again with the norms unfolded") != std::string::npos;
  }));
  check_on_cudnn(g);
}

}  // namespace
}  // namespace sinter::testing
