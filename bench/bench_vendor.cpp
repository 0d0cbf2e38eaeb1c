// Vendor-engine benchmarks: sdpa through cuDNN's fused flash attention (D128 causal and not,
// D64, decode with GQA 32/8), a conv3x3 + bias + relu, and a matmul with cuBLASLt's bias + GELU
// epilogue, each compiled with the vendor engine named (a region it refuses falls back to jit,
// and the step says why) and on our own kernels (jit), then timed as the median of
// CUDA-event-timed enqueues (bench_plan_timing.hpp). One JSON object per line, beside
// bench/torch_vendor_baselines.py measured in the same run.
//
//   sinter_bench_vendor [--quick] [--only=A,B]   (--only: the cases whose name contains A or B)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_plan_timing.hpp"
#include "engines/cudnn/cudnn_library.hpp"
#include "engines/jit/kernel_config.hpp"
#include "sinter/sinter.hpp"

using namespace sinter;

namespace {

struct SdpaCase {
  const char* name;
  int64_t b, h, hkv, sq, skv, d;
  CausalMask causal;
};

Graph sdpa_graph(const SdpaCase& c) {
  Graph g(c.name);
  auto q = g.input("q", DType::bf16, {c.b, c.h, c.sq, c.d});
  auto k = g.input("k", DType::bf16, {c.b, c.hkv, c.skv, c.d});
  auto v = g.input("v", DType::bf16, {c.b, c.hkv, c.skv, c.d});
  g.output(g.sdpa(q, k, v, SdpaAttrs{.causal = c.causal}).o, "o");
  return g;
}

// FLOPs as FlashAttention and PyTorch count them: two matmuls, halved under a causal mask.
double sdpa_flops(const SdpaCase& c) {
  const double f = 4.0 * c.b * c.h * c.sq * c.skv * c.d;
  return c.causal == CausalMask::none ? f : f / 2;
}

double sdpa_bytes(const SdpaCase& c) {
  return 2.0 * (2.0 * c.b * c.h * c.sq * c.d + 2.0 * c.b * c.hkv * c.skv * c.d);
}

// NHWC x [N,H,W,C], KRSC w, pad 1: y = relu(conv(x, w) + bias)
Graph conv_graph(int64_t n, int64_t c, int64_t hw, int64_t k) {
  Graph g("conv3x3_bias_relu");
  auto x = g.input("x", DType::bf16, {n, hw, hw, c});
  auto w = g.input("w", DType::bf16, {k, 3, 3, c});
  auto bias = g.input("bias", DType::bf16, {k});
  auto y = g.conv2d(x, w, Conv2dAttrs{.pad_begin = {1, 1}, .pad_end = {1, 1}});
  g.output(g.relu(g.add(y, bias)), "y");
  return g;
}

// y = gelu_tanh(a x b + bias), a [M, K], b an [N, K] weight seen as [K, N] (torch's Linear layout);
// the tanh GELU because that is the one cuBLASLt's epilogue computes. `fused` false: the bare
// matmul, the reference time for "what the fused epilogue costs".
Graph matmul_bias_gelu_graph(int64_t s, bool fused) {
  Graph g(fused ? "matmul_bias_gelu_4096" : "matmul_4096");
  auto a = g.input("a", DType::bf16, {s, s});
  auto b = g.input("b", DType::bf16, {s, s}, {1, s});
  auto y = g.matmul(a, b);
  if (!fused) {
    g.output(y, "y");
    return g;
  }
  auto bias = g.input("bias", DType::bf16, {s});
  g.output(g.gelu_tanh(g.add(y, bias)), "y");
  return g;
}

// The kernel cache folder of this run (made fresh, removed at exit).
std::string g_kernel_cache;

// Times `g` compiled with `engine` named; prints one line. Errors (an engine that refuses) become
// a line too. `config` (a jit config text) forces that candidate; `label` names the line's engine.
void run_case(const std::string& name, const Graph& g, const std::string& engine, double flops,
              double bytes, int iters, const std::string& config = "", const std::string& label = "") {
  const std::string shown = label.empty() ? engine : label;
  try {
    CompileOptions opts;
    opts.engines = {engine};
    opts.candidate_config = config;
    opts.kernel_cache_dir = g_kernel_cache;
    bench::BenchPlan p(g, opts);
    std::string desc;
    std::string used;
    for (const StepDescription& s : p.steps()) {
      desc += (desc.empty() ? "" : " | ") + bench::step_description(s);
      used += (used.empty() ? "" : "+") + s.engine;
    }
    p.upload(random_inputs(g, 7));
    const double ms = p.time_ms(iters, 5);
    std::printf("{\"case\": \"%s\", \"engine\": \"sinter-%s\", \"steps_on\": \"%s\", \"ms\": %.5f, "
                "\"tflops\": %.2f, \"tbps\": %.3f, \"step\": \"%s\"}\n",
                name.c_str(), shown.c_str(), used.c_str(), ms, flops / (ms * 1e-3) / 1e12,
                bytes / (ms * 1e-3) / 1e12, bench::json_escape(desc).c_str());
  } catch (const std::exception& e) {
    std::printf("{\"case\": \"%s\", \"engine\": \"sinter-%s\", \"error\": \"%s\"}\n", name.c_str(),
                shown.c_str(), bench::json_escape(e.what()).c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // line-buffered even into a file: a run cut short by a timeout keeps every finished line
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool quick = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strncmp(argv[i], "--only=", 7) == 0) {
      only = argv[i] + 7;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: sinter_bench_vendor [--quick] [--only=A,B,...]   (needs a GPU)\n"
                  "  --quick    fewer timed runs\n"
                  "  --only=    only the cases whose name contains one of the comma-separated parts\n"
                  "One JSON object per line on stdout.\n");
      return 0;
    } else {
      std::fprintf(stderr, "sinter_bench_vendor: unknown argument '%s' (want --quick, --only=SUBSTRING, --help)\n", argv[i]);
      return 2;
    }
  }
  // --only=A,B: the cases whose name contains one of the comma-separated parts
  auto wanted = [&](const std::string& name) {
    if (only.empty()) return true;
    for (size_t at = 0; at <= only.size();) {
      const size_t comma = std::min(only.find(',', at), only.size());
      const std::string part = only.substr(at, comma - at);
      if (!part.empty() && name.find(part) != std::string::npos) return true;
      at = comma + 1;
    }
    return false;
  };
  if (!bench::have_gpu("sinter_bench_vendor")) return 1;
  try {
    const cudnn::Library& lib = cudnn::library();
    std::printf("{\"case\": \"cudnn_library\", \"version\": \"%s\", \"path\": \"%s\", \"reason\": \"%s\"}\n",
                cudnn::version_string().c_str(), lib.path.c_str(), bench::json_escape(lib.reason).c_str());
    const int iters = quick ? 10 : 50;
    const bench::ScratchDir cache_dir("sinter_bench_vendor_cache_");
    g_kernel_cache = cache_dir.str();
    const SdpaCase sdpa_cases[] = {
        {"sdpa_d128", 4, 32, 32, 4096, 4096, 128, CausalMask::none},
        {"sdpa_d128_causal", 4, 32, 32, 4096, 4096, 128, CausalMask::top_left},
        {"sdpa_d64", 4, 32, 32, 4096, 4096, 64, CausalMask::none},
        {"sdpa_d64_causal", 4, 32, 32, 4096, 4096, 64, CausalMask::top_left},
        {"sdpa_decode_gqa", 32, 32, 8, 1, 4096, 128, CausalMask::none},
        // batch 1, KV cache 1024 + the new token; bottom-right causal at Sq = 1 sees every key: at
        // head dim 128 (Llama-3-8B's heads) and at 64 (one layer of the examples' decode stack,
        // Llama-3.2-1B's heads)
        {"sdpa_decode_b1_skv1025", 1, 32, 8, 1, 1025, 128, CausalMask::bottom_right},
        {"sdpa_decode_b1_skv1025_d64", 1, 32, 8, 1, 1025, 64, CausalMask::bottom_right},
    };
    for (const SdpaCase& c : sdpa_cases) {
      if (!wanted(c.name)) continue;
      const Graph g = sdpa_graph(c);
      run_case(c.name, g, "cudnn", sdpa_flops(c), sdpa_bytes(c), iters);
      if (c.sq > 16) {
        run_case(c.name, g, "jit", sdpa_flops(c), sdpa_bytes(c), quick ? 3 : 10);
        continue;
      }
      // decode: the flash-decode kernels and the flash-simple tile side by side, each forced
      const std::string decode = jit::config_text(jit::SdpaConfig{jit::SdpaKernel::decode});
      const std::string simple = jit::config_text(jit::SdpaConfig{jit::SdpaKernel::simple});
      run_case(c.name, g, "jit", sdpa_flops(c), sdpa_bytes(c), iters, decode, "jit-flash-decode");
      run_case(c.name, g, "jit", sdpa_flops(c), sdpa_bytes(c), quick ? 3 : 10, simple, "jit-flash-simple");
    }
    if (wanted("conv3x3_bias_relu")) {
      const int64_t n = 32, c = 256, hw = 56, k = 256;
      const Graph g = conv_graph(n, c, hw, k);
      const double flops = 2.0 * n * hw * hw * k * c * 9;
      const double bytes = 2.0 * (n * hw * hw * c + k * 9 * c + n * hw * hw * k);
      run_case("conv3x3_bias_relu", g, "cudnn", flops, bytes, iters);
      run_case("conv3x3_bias_relu", g, "jit", flops, bytes, iters);
    }
    if (wanted("matmul_bias_gelu_4096")) {
      // the cuBLASLt GELU_BIAS epilogue against our own fused kernel and the bare matmul
      const int64_t s = 4096;
      const double flops = 2.0 * s * s * s, bytes = 2.0 * 3 * s * s;
      run_case("matmul_bias_gelu_4096", matmul_bias_gelu_graph(s, true), "cublaslt", flops, bytes, iters);
      run_case("matmul_bias_gelu_4096", matmul_bias_gelu_graph(s, true), "jit", flops, bytes, iters);
      run_case("matmul_bias_gelu_4096", matmul_bias_gelu_graph(s, false), "cublaslt", flops, bytes, iters, "",
               "cublaslt-bare-matmul");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinter_bench_vendor: %s\n", e.what());
    return 1;
  }
}
