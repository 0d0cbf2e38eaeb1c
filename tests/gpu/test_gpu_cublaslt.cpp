// The cuBLASLt engine on the GPU against the CPU reference: every epilogue it offers, batched,
// broadcast and transposed operands; the step must really run on cuBLASLt.
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

class GpuCublasLt : public GpuRegions {
 protected:
  void check_on_cublaslt(Graph g, double scale = 1.0) {
    CompileOptions opts;
    opts.engines = {"cublaslt"};
    g.validate();
    {
      TestPlan ex(g, opts);
      bool used = false;
      for (const StepDescription& s : ex.steps()) {
        if (s.engine == "cublaslt") used = true;
        std::printf("  step %d %s [%s] %s\n", s.index, s.kind.c_str(), s.engine.c_str(), s.description.c_str());
      }
      EXPECT_TRUE(used) << "no step ran on cuBLASLt";
    }
    check(std::move(g), scale, opts);
  }
};

TEST_F(GpuCublasLt, Epilogues) {
  for (int variant = 0; variant < 5; ++variant) {
    Graph g("lt" + std::to_string(variant));
    auto a = g.input("a", DType::bf16, {77, 300});
    auto b = g.input("b", DType::bf16, {300, 136});
    auto bias = g.input("bias", DType::bf16, {136});
    auto mm = g.matmul(a, b);
    switch (variant) {
      case 0:
        g.output(mm, "y");
        g.output(g.relu(bias), "bias_reader");  // every input must be read
        break;
      case 1: g.output(g.add(mm, bias), "y"); break;
      case 2: g.output(g.relu(g.add(mm, bias)), "y"); break;
      case 3: {
        auto pre = g.add(mm, bias);
        g.output(pre, "pre");
        g.output(g.gelu_tanh(pre), "y");
        break;
      }
      default: {
        auto res = g.input("res", DType::bf16, {77, 136});
        g.output(g.add(mm, res), "y");
        g.output(g.relu(bias), "bias_reader");
        break;
      }
    }
    check_on_cublaslt(std::move(g));
  }
}

TEST_F(GpuCublasLt, BatchedTransposedF16AndTf32) {
  Graph g("lt_batched");
  auto a = g.input("a", DType::f16, {3, 1, 33, 70});
  auto bt = g.input("bt", DType::f16, {70, 45}, {1, 70});  // column-major, broadcast over batch
  g.output(g.matmul(a, bt), "y");
  check_on_cublaslt(std::move(g));
  Graph f("lt_tf32");
  auto fa = f.input("a", DType::f32, {64, 96});
  auto fb = f.input("b", DType::f32, {96, 40});
  f.output(f.matmul(fa, fb, MatmulAttrs{ComputeType::tf32, {}}), "y");
  check_on_cublaslt(std::move(f), 50.0);  // tf32 rounds the inputs to 10 mantissa bits: ~5e-4
}

TEST_F(GpuCublasLt, PlainF32BatchedWithBiasRelu) {
  // f32 without tf32 (CUBLAS_COMPUTE_32F): held to the f32 bound, which tf32 would miss by ~50x;
  // batched, odd sizes, a row bias and relu through the BIAS/RELU epilogues
  Graph g("lt_f32");
  auto a = g.input("a", DType::f32, {2, 67, 131});
  auto b = g.input("b", DType::f32, {2, 131, 45});
  g.output(g.relu(g.add(g.matmul(a, b), g.input("bias", DType::f32, {45}))), "y");
  check_on_cublaslt(std::move(g));
}

// alpha and beta from scalar constants on the chain: alone, before a residual (beta 1), after it
// (alpha = beta), and before a bias + relu; odd M and N.
TEST_F(GpuCublasLt, AlphaBetaScaling) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    Graph g("lt_scale" + std::to_string(variant));
    auto a = g.input("a", DType::bf16, {45, 200});
    auto b = g.input("b", DType::bf16, {200, 72}, {1, 200});
    auto res = g.input("res", DType::bf16, {45, 72});
    auto bias = g.input("bias", DType::bf16, {72});
    auto mm = g.matmul(a, b);
    switch (variant) {
      case 0: g.output(g.mul(mm, 0.5), "y"); break;
      case 1: g.output(g.add(g.mul(mm, 0.5), res), "y"); break;
      case 2: g.output(g.mul(g.add(mm, res), 0.25), "y"); break;
      default: g.output(g.relu(g.add(g.mul(mm, 2.0), bias)), "y"); break;
    }
    if (variant != 1 && variant != 2) g.output(g.relu(res), "res_reader");  // every input must be read
    if (variant != 3) g.output(g.relu(bias), "bias_reader");
    check_on_cublaslt(std::move(g));
  }
}

// A bias and a residual on one matmul, in both orders (D = A B + C + bias): the transformer
// block's projections, [batch, M, K] x a 2D [K, N] weight broadcast over the batch; odd sizes.
TEST_F(GpuCublasLt, BiasAndResidualEitherOrder) {
  for (int bias_first = 0; bias_first < 2; ++bias_first) {
    SCOPED_TRACE(bias_first ? "bias first" : "residual first");
    Graph g(bias_first ? "lt_bias_res" : "lt_res_bias");
    auto a = g.input("a", DType::bf16, {2, 75, 136});
    auto b = g.input("b", DType::bf16, {136, 88});
    auto bias = g.input("bias", DType::bf16, {88});
    auto res = g.input("res", DType::bf16, {2, 75, 88});
    auto mm = g.matmul(a, b);
    g.output(bias_first ? g.add(g.add(mm, bias), res) : g.add(g.add(mm, res), bias), "y");
    check_on_cublaslt(std::move(g));
  }
}

// fp8 e4m3 inputs (TN: A row-major, B an [N, K] weight): into an fp8 D with cuBLASLt's amax of
// D (f32) as the region's exit reduction, and into a bf16 D with a bias.
TEST_F(GpuCublasLt, Fp8InputsAmaxOfDAndBias) {
  {
    Graph g("lt_fp8_amax");
    auto a = g.input("a", DType::fp8_e4m3, {96, 128});
    auto b = g.input("b", DType::fp8_e4m3, {128, 80}, {1, 128});
    auto y = g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::fp8_e4m3});
    g.output(y, "y");
    g.output(g.reduce(OpKind::reduce_amax, y, {}, false, DType::f32), "amax");
    check_on_cublaslt(std::move(g));
  }
  {
    Graph g("lt_fp8_bias");
    auto a = g.input("a", DType::fp8_e4m3, {96, 128});
    auto b = g.input("b", DType::fp8_e4m3, {128, 80}, {1, 128});
    auto bias = g.input("bias", DType::bf16, {80});
    g.output(g.add(g.matmul(a, b, MatmulAttrs{ComputeType::f32, DType::bf16}), bias), "y");
    check_on_cublaslt(std::move(g));
  }
}

}  // namespace
}  // namespace sinter::testing
