// GEMM benchmarks of the JIT engine's Hopper kernel against cuBLASLt, both measured in this
// process on the same inputs (bench_plan_timing.hpp: a compiled plan's enqueues timed with CUDA
// events after a warm-up, the median):
//   gemm_4096, gemm_8192           bf16 [M, K] x [K, N] with B k-contiguous (an [N, K] weight)
//   gemm_bias_gelu_amax_4096       our fused epilogue vs bare cuBLASLt (target <= 1.05x)
//   (these three also print one line per Hopper candidate, forced: "candidate": its config text)
//   gemm_4096_kn, gemm_bias_gelu_amax_4096_kn   the same with a row-major [K, N] weight (B read
//                                  n-contiguous), vs cuBLASLt on that layout; the bare one per
//                                  Hopper candidate too
//   decode_m{1,8,16}               x [M, 4096] x a 4096x14336 weight: weight bytes per second
//   decode_m{1,8,16}[_kn]_{tma_rows,tma,ffma,mma}  the same on each jit decode tile offered
//                                  (forced: the TMA tiles, the ffma tile for M <= 4, the mma
//                                  tile), with the [N, K] weight and with a row-major [K, N] one,
//                                  vs cuBLASLt on the [N, K] weight; `of_peak` is the weight
//                                  bandwidth over 4.27 TB/s (the target is >= 0.85)
//   llama_{qo,kv,gate_silu,down_residual}[_kn]   the Llama decode stack's M = 1 matmuls
//                                  (weights 2048x2048, 512x2048, 8192x2048 with silu (gate; up's
//                                  mul epilogue reads one more vector),
//                                  2048x8192 with a residual add; [N, K], and [K, N] as the
//                                  example graphs store them): the jit default, then each decode
//                                  candidate, vs bare cuBLASLt on [N, K] (2-8 MB: latency-bound)
// Each case's line also has "alternated": ours and cuBLASLt timed in 9 alternating rounds, the
// median of the rounds' ratios with its min and max (drift-proof under the power cap).
// One JSON object per line; each names the kernels that ran (a fallback would show here) and
// the relative L2 difference between our output and cuBLASLt's (meaningful for bare cases only:
// a fused epilogue computes a different function than the bare cuBLASLt matmul).
//
//   gemm_bias_gelu_amax_{2048,8192}  the fused case at other sizes, vs bare cuBLASLt of that size
//   gemm_fp8_e4m3_{4096,8192}      fp8 e4m3 operands (an [N, K] weight), bf16 out, M = N = 4096 or
//                                  8192 and K = 4096, vs cuBLASLt's fp8 GEMM (promoted accumulation;
//                                  ours accumulates in the tensor cores) (4096: per Hopper candidate too)
//   sinter_bench_gemm [--quick] [--decode] [--cold-l2] [--cases NAME,...] [--no-candidates] [--soak S]
//                     [--soak-engine jit|cublaslt] [--soak-candidate CONFIG]
//     --decode: only the decode cases; --cold-l2: L2 overwritten before each timed launch, both
//     sides; --cases: only the cases whose name is listed (for profiling one kernel under Nsight
//     Compute); --no-candidates: skip the per-candidate lines; --soak S: our default of each case
//     then runs back to back for S seconds (for a clock / power sampler beside it).
//   --shapes MxNxK[:EPILOGUE],...: only these GEMMs, bare or with an epilogue (fused: bias + GELU
//     + amax; or a part of it: bias, bias_gelu, bias_amax) against bare cuBLASLt, or (residual: a
//     residual [M, N] added) against cuBLASLt's own residual (C with beta 1), named
//     gemm_MxNxK[_EPILOGUE], each Hopper candidate forced too: how the ratio moves with the tiles
//     per SM (the last wave's fill), with K (per-tile costs), and with each part of the epilogue
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_plan_timing.hpp"
#include "cuda/device.hpp"
#include "engines/jit/codegen.hpp"
#include "fuse/region.hpp"
#include "sinter/sinter.hpp"

using namespace sinter;
using bench::BenchPlan;

namespace {

// bf16 (or `in`) [M, K] x an [N, K] weight seen as [K, N], or a row-major [K, N] one, with the
// bias + GELU + amax epilogue if asked. fp8 operands give a bf16 result,
// against cuBLASLt's fp8 GEMM on the [N, K] layout (TN, the one it takes for fp8).
// `epilogue`: none (""), or the fused case's parts for --shapes: "bias", "bias_gelu", "bias_amax", and
// "fused" (bias + GELU + amax, the headline case); or "residual" (+ a [M, N] tensor, which
// cuBLASLt fuses too); kEpilogues lists them.
constexpr const char* kEpilogues[] = {"", "bias", "bias_gelu", "bias_amax", "fused", "residual"};
bool known_epilogue(const std::string& e) {
  return std::find(std::begin(kEpilogues), std::end(kEpilogues), e) != std::end(kEpilogues);
}
Graph gemm(const std::string& name, int64_t m, int64_t n, int64_t k, const std::string& epilogue,
           bool k_major = true, DType in = DType::bf16) {
  Graph g(name);
  auto a = g.input("a", in, {m, k});
  auto b = k_major ? g.input("b", in, {k, n}, {1, k}) : g.input("b", in, {k, n});
  MatmulAttrs at;
  if (is_fp8(in)) at.out_dtype = DType::bf16;
  auto y = g.matmul(a, b, at);
  if (epilogue.empty()) {
    g.output(y, "y");
    return g;
  }
  if (!known_epilogue(epilogue)) throw std::invalid_argument("gemm: unknown epilogue '" + epilogue + "'");
  if (epilogue == "residual") {
    g.output(g.add(y, g.input("res", DType::bf16, {m, n})), "y");
    return g;
  }
  const bool gelu = epilogue == "fused" || epilogue == "bias_gelu";
  const bool amax = epilogue == "fused" || epilogue == "bias_amax";
  auto h = g.add(y, g.input("bias", DType::bf16, {n}));
  if (gelu) h = g.gelu(h);
  g.output(h, "y");
  if (amax) g.output(g.amax(h), "amax");
  return g;
}

std::string steps_of(const BenchPlan& p) {
  std::string s;
  for (const StepDescription& i : p.steps()) {
    std::string d = bench::step_text(i);
    for (char& c : d) c = c == '"' ? '\'' : c;
    s += (s.empty() ? "" : " | ") + d;
  }
  return s;
}

struct Timed {
  double ms;
  std::string kernels;
  TensorMap out;
};

// --cold-l2: every timed launch starts with the L2 overwritten (bench::L2Flush), as in a model
// that streams each weight once per step; without it, weights under ~60 MB stay in L2.
bool g_cold_l2 = false;
// --cases: the case names to run (empty: all); --no-candidates: no forced-candidate lines.
std::vector<std::string> g_cases;
bool g_candidates = true;
// --soak SECONDS: after a case's timing, our default plan runs back to back for that long (a
// clock and power sampler beside the process sees the steady state: bench/final_device.sh)
double g_soak_s = 0.0;
// --soak-engine NAME: which side soaks, "jit" (ours, the default) or "cublaslt" (the comparison
// graph through cuBLASLt): the clock each holds under the power cap, in separate runs
std::string g_soak_engine = "jit";
// --soak-candidate CONFIG: ours soaks the jit candidate of that config text (see the candidate
// lines) instead of the default
std::string g_soak_candidate;  // a jit config text
bool wanted(const std::string& name) {
  return g_cases.empty() || std::find(g_cases.begin(), g_cases.end(), name) != g_cases.end();
}

// The kernel cache folder of this run (made fresh, removed at exit).
std::string g_kernel_cache;

// Heuristic compile on `engine` (the regions it refuses fall back to jit, and the step says so),
// with the jit candidate whose config text is `config` forced where given.
CompileOptions options(const std::string& engine, const std::string& config = "") {
  CompileOptions o;
  o.engines = {engine};
  o.candidate_config = config;
  o.kernel_cache_dir = g_kernel_cache;
  return o;
}

// p run once on `in` (its output kept), then timed
Timed timed(BenchPlan& p, int iters, const TensorMap& in) {
  Timed t;
  t.out = p.run(in);
  t.ms = p.time_ms(iters, 10, g_cold_l2);
  t.kernels = steps_of(p);
  return t;
}
Timed timed(const Graph& g, const std::string& engine, int iters, const TensorMap& in, const std::string& config = "") {
  BenchPlan p(g, options(engine, config));
  return timed(p, iters, in);
}

// Ours and cuBLASLt alternated: `rounds` rounds of 10 timed calls each (after 3 warm-up calls),
// ours then theirs in every round. Under a power cap the clock drifts by several percent over
// seconds, so one measurement of each side apart can land on different clocks; the ratio within
// a round cannot.
struct Alternated {
  double sinter_ms, cublaslt_ms;         // medians of the rounds' times
  double ratio, ratio_min, ratio_max;    // median, min, max of the rounds' ratios
  int rounds;
};
// s and c: plans that have run once
Alternated alternated(BenchPlan& s, BenchPlan& c, int rounds) {
  std::vector<double> st, ct, r;
  for (int i = 0; i < rounds; ++i) {
    st.push_back(s.time_ms(10, 3, g_cold_l2));
    ct.push_back(c.time_ms(10, 3, g_cold_l2));
    r.push_back(st.back() / ct.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(st), median(ct), median(r), *std::min_element(r.begin(), r.end()),
          *std::max_element(r.begin(), r.end()), rounds};
}

// The jit candidate configs of g's matmul region that run a Hopper GEMM (sm90 wgmma).
std::vector<std::string> hopper_candidates(const Graph& g, const cuda::DeviceProperties& dev) {
  std::vector<std::string> out;
  const fuse::Partition p = fuse::partition_graph(g);
  for (const fuse::Region& r : p.regions) {
    if (r.kind != fuse::RegionKind::matmul) continue;
    for (const auto& [config, rk] : jit::distinct_configs(g, r, dev)) {
      if (rk.kernels.at(0).description.find("sm90 wgmma") != std::string::npos) out.push_back(jit::config_text(config));
    }
  }
  return out;
}

void run_case(const std::string& name, const Graph& ours, const Graph& theirs, double flops, double bytes,
              int iters, bool each_candidate = false) {
  if (!wanted(name)) return;
  const TensorMap in = random_inputs(ours, 7);
  TensorMap in_theirs;
  for (TensorId id : theirs.inputs()) {
    const std::string& n = theirs.tensor(id).name;
    in_theirs.emplace(n, in.at(n));
  }
  // one plan a side for the single measurement, the alternated rounds and a soak
  BenchPlan s_ex(ours, options("jit")), c_ex(theirs, options("cublaslt"));
  const Timed s = timed(s_ex, iters, in);
  const Timed c = timed(c_ex, iters, in_theirs);
  const double diff = relative_l2_error(s.out.at("y"), c.out.at("y"));
  const Alternated ab = alternated(s_ex, c_ex, 9);
  std::printf("{\"case\": \"%s\", \"sinter_ms\": %.5f, \"cublaslt_ms\": %.5f, \"ratio\": %.3f, "
              "\"alternated\": {\"rounds\": %d, \"sinter_ms\": %.5f, \"cublaslt_ms\": %.5f, \"ratio\": %.3f, "
              "\"ratio_min\": %.3f, \"ratio_max\": %.3f}, "
              "\"sinter_tflops\": %.1f, \"cublaslt_tflops\": %.1f, \"sinter_weight_tbps\": %.3f, "
              "\"rel_l2_vs_cublaslt\": %.3g, \"sinter_kernels\": \"%s\", \"cublaslt_kernels\": \"%s\"}\n",
              name.c_str(), s.ms, c.ms, s.ms / c.ms, ab.rounds, ab.sinter_ms, ab.cublaslt_ms, ab.ratio, ab.ratio_min,
              ab.ratio_max, flops / (s.ms * 1e9), flops / (c.ms * 1e9), bytes / (s.ms * 1e9), diff,
              s.kernels.c_str(), c.kernels.c_str());
  std::fflush(stdout);
  if (g_soak_s > 0.0) {
    // cuBLASLt's or our default plan from above, or one for a forced candidate
    std::optional<BenchPlan> forced;
    if (g_soak_engine == "jit" && !g_soak_candidate.empty()) {
      forced.emplace(ours, options("jit", g_soak_candidate));
      forced->run(in);
    }
    BenchPlan& ex = forced ? *forced : g_soak_engine == "cublaslt" ? c_ex : s_ex;
    std::vector<double> chunks;
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < g_soak_s) {
      chunks.push_back(ex.time_ms(iters, 0, false));
    }
    std::sort(chunks.begin(), chunks.end());
    std::printf("{\"case\": \"%s\", \"soak_engine\": \"%s\", \"soak_candidate\": \"%s\", \"soak_s\": %.1f, "
                "\"soak_chunks\": %zu, \"soak_median_ms\": %.5f, \"soak_min_ms\": %.5f, \"soak_max_ms\": %.5f, "
                "\"soak_kernels\": \"%s\"}\n",
                name.c_str(), g_soak_engine.c_str(), g_soak_candidate.c_str(), g_soak_s, chunks.size(), chunks[chunks.size() / 2],
                chunks.front(), chunks.back(), steps_of(ex).c_str());
    std::fflush(stdout);
  }
  if (!each_candidate || !g_candidates) return;
  // every Hopper config forced, against the cuBLASLt time above: which one should be the default
  for (const std::string& v : hopper_candidates(ours, cuda::device_properties(0))) {
    const Timed f = timed(ours, "jit", iters, in, v);
    std::printf("{\"case\": \"%s\", \"candidate\": \"%s\", \"sinter_ms\": %.5f, \"cublaslt_ms\": %.5f, "
                "\"ratio\": %.3f, \"sinter_tflops\": %.1f, \"rel_l2_vs_cublaslt\": %.3g, \"sinter_kernels\": \"%s\"}\n",
                name.c_str(), v.c_str(), f.ms, c.ms, f.ms / c.ms, flops / (f.ms * 1e9),
                relative_l2_error(f.out.at("y"), c.out.at("y")), f.kernels.c_str());
    std::fflush(stdout);
  }
}

// The decode tiles offered for g's matmul region, as (name, jit config text).
std::vector<std::pair<std::string, std::string>> decode_candidates(const Graph& g, const cuda::DeviceProperties& dev) {
  std::vector<std::pair<std::string, std::string>> out;
  const fuse::Partition p = fuse::partition_graph(g);
  for (const fuse::Region& r : p.regions) {
    if (r.kind != fuse::RegionKind::matmul) continue;
    const std::string why = jit::decode_gemv_unsupported(g, r, dev);
    if (!why.empty()) {
      std::fprintf(stderr, "sinter_bench_gemm: %s: decode tile not offered: %s\n", g.name().c_str(), why.c_str());
      return out;
    }
    const std::vector<jit::MatmulConfig> configs = jit::matmul_configs(g, r, dev);
    for (const auto& [tile, label] : {std::pair{jit::MatmulTile::decode_tma_rows, "tma_rows"}, {jit::MatmulTile::decode_tma, "tma"},
                                      {jit::MatmulTile::decode_ffma, "ffma"}, {jit::MatmulTile::decode_gemv, "mma"}}) {
      const int i = jit::matmul_config_index(g, r, dev, tile);
      if (i >= 0) out.emplace_back(label, jit::config_text(configs.at(i)));
    }
    return out;
  }
  return out;
}

// Each decode tile on `ours` (either weight layout, maybe with an epilogue) against cuBLASLt on
// the bare [N, K]-weight matmul `theirs`, on the same logical values (a row-major [K, N] weight is
// copied from the [N, K] view). One line per candidate: `<name>_<tile>`.
void run_decode_gemv(const std::string& name, const Graph& ours, const Graph& theirs, double bytes, int iters) {
  if (!wanted(name)) return;
  const TensorMap in = random_inputs(ours, 7);
  TensorMap in_theirs;
  for (TensorId id : theirs.inputs()) {
    const TensorInfo& t = theirs.tensor(id);
    const HostTensor& src = in.at(t.name);
    if (t.strides == src.strides()) {
      in_theirs.emplace(t.name, src);
      continue;
    }
    // the same logical [K, N] values in theirs's storage order (element access is logical)
    HostTensor dst(t.dtype, t.dims, t.strides);
    for (int64_t i = 0; i < src.numel(); ++i) dst.set(i, src.get(i));
    in_theirs.emplace(t.name, std::move(dst));
  }
  const Timed c = timed(theirs, "cublaslt", iters, in_theirs);
  for (const auto& [tile, candidate] : decode_candidates(ours, cuda::device_properties(0))) {
    const Timed s = timed(ours, "jit", iters, in, candidate);
    const double diff = relative_l2_error(s.out.at("y"), c.out.at("y"));
    const double tbps = bytes / (s.ms * 1e9);
    std::printf("{\"case\": \"%s_%s\", \"sinter_ms\": %.5f, \"cublaslt_ms\": %.5f, \"ratio\": %.3f, "
                "\"sinter_weight_tbps\": %.3f, \"cublaslt_weight_tbps\": %.3f, \"of_peak\": %.3f, "
                "\"rel_l2_vs_cublaslt\": %.3g, \"sinter_kernels\": \"%s\", \"cublaslt_kernels\": \"%s\"}\n",
                name.c_str(), tile.c_str(), s.ms, c.ms, s.ms / c.ms, tbps, bytes / (c.ms * 1e9), tbps / 4.27, diff,
                s.kernels.c_str(), c.kernels.c_str());
    std::fflush(stdout);
  }
}

// The Llama decode stack's matmuls at M = 1 (examples/example_graphs.cpp llama_decode_stack):
// x [1, K] times an [N, K] (or [K, N]) weight, with the epilogue the stack fuses into it
// ("silu": the gate projection; "residual": + a [1, N] input, as the down projection). One
// region each, so that forcing a jit candidate applies to the matmul alone.
Graph decode_stack_matmul(const std::string& name, int64_t n, int64_t k, const std::string& epilogue,
                          bool k_major = true) {
  Graph g(name);
  auto a = g.input("a", DType::bf16, {1, k});
  auto y = g.matmul(a, k_major ? g.input("b", DType::bf16, {k, n}, {1, k}) : g.input("b", DType::bf16, {k, n}));
  if (epilogue == "silu") y = g.silu(y);
  if (epilogue == "residual") y = g.add(y, g.input("res", DType::bf16, {1, n}));
  g.output(y, "y");
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  // line-buffered even into a file: a run cut short by a timeout keeps every finished line
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool quick = false, decode_only = false;
  struct Shape {
    long m = 0, n = 0, k = 0;
    std::string epilogue;  // gemm()'s: "" (bare), bias, bias_gelu, bias_amax, fused, residual
  };
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--decode") == 0) {
      decode_only = true;
    } else if (std::strcmp(argv[i], "--cold-l2") == 0) {
      g_cold_l2 = true;
    } else if (std::strcmp(argv[i], "--no-candidates") == 0) {
      g_candidates = false;
    } else if (std::strcmp(argv[i], "--soak") == 0 && i + 1 < argc) {
      g_soak_s = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--soak-candidate") == 0 && i + 1 < argc) {
      g_soak_candidate = argv[++i];
    } else if (std::strcmp(argv[i], "--soak-engine") == 0 && i + 1 < argc) {
      g_soak_engine = argv[++i];
      if (g_soak_engine != "jit" && g_soak_engine != "cublaslt") {
        std::fprintf(stderr, "--soak-engine takes jit or cublaslt, not '%s'\n", g_soak_engine.c_str());
        return 2;
      }
    } else if (std::strcmp(argv[i], "--shapes") == 0 && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string c; std::getline(list, c, ',');) {
        Shape sh;
        const size_t colon = c.find(':');
        if (colon != std::string::npos) sh.epilogue = c.substr(colon + 1);
        int used = 0;  // the dims must fill everything before the ':' (no trailing characters)
        const size_t dims_end = colon == std::string::npos ? c.size() : colon;
        if (std::sscanf(c.c_str(), "%ldx%ldx%ld%n", &sh.m, &sh.n, &sh.k, &used) != 3 ||
            static_cast<size_t>(used) != dims_end || sh.m < 1 || sh.n < 1 || sh.k < 1 || !known_epilogue(sh.epilogue) ||
            (colon != std::string::npos && sh.epilogue.empty())) {
          std::fprintf(stderr, "--shapes takes MxNxK[:fused|:bias|:bias_gelu|:bias_amax|:residual] entries (positive sizes), not '%s'\n", c.c_str());
          return 2;
        }
        shapes.push_back(sh);
      }
    } else if (std::strcmp(argv[i], "--cases") == 0 && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string c; std::getline(list, c, ',');) g_cases.push_back(c);
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: sinter_bench_gemm [--quick] [--decode] [--cold-l2] [--cases NAME,...] [--no-candidates]\n"
                  "                         [--shapes MxNxK[:EPILOGUE],...] [--soak SECONDS] [--soak-engine jit|cublaslt]\n"
                  "                         [--soak-candidate CONFIG]   (needs a GPU)\n"
                  "  EPILOGUE: bias, bias_gelu, bias_amax, fused, residual; CONFIG: a jit config text, as the\n"
                  "  candidate lines print it. One JSON object per line on stdout.\n");
      return 0;
    } else {
      std::fprintf(stderr, "sinter_bench_gemm: unknown argument '%s' (expected --quick, --decode, --cold-l2, "
                           "--cases LIST, --shapes MxNxK[:EPILOGUE],..., --no-candidates, --soak SECONDS, --soak-engine jit|cublaslt, --soak-candidate CONFIG, --help)\n", argv[i]);
      return 2;
    }
  }
  if (!bench::have_gpu("sinter_bench_gemm")) return 1;
  try {
    // 30 even when quick: at 10 the same kernel's median moves by up to 10% within one call, and a
    // 4096^3 launch costs 0.2 ms
    const int iters = quick ? 30 : 100;
    std::printf("{\"case\": \"settings\", \"l2\": \"%s\", \"iters\": %d}\n", g_cold_l2 ? "cold" : "hot", iters);
    const bench::ScratchDir cache_dir("sinter_bench_gemm_cache_");
    g_kernel_cache = cache_dir.str();
    for (const Shape& sh : shapes) {
      const std::string dims = std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k);
      const Graph bare = gemm("gemm_" + dims, sh.m, sh.n, sh.k, "");
      const std::string name = bare.name() + (sh.epilogue.empty() ? "" : "_" + sh.epilogue);
      // every Hopper candidate too, fused or not: ping-pong and coop trade places with the epilogue;
      // a residual against cuBLASLt's fused one, the rest against its bare GEMM
      const Graph ours = sh.epilogue.empty() ? bare : gemm(name, sh.m, sh.n, sh.k, sh.epilogue);
      run_case(name, ours, sh.epilogue == "residual" ? ours : bare, 2.0 * sh.m * sh.n * sh.k, 2.0 * sh.n * sh.k,
               iters, true);
    }
    if (!shapes.empty()) return 0;
    for (int64_t s : {int64_t{4096}, int64_t{8192}}) {
      if (decode_only) break;
      const Graph g = gemm("gemm_" + std::to_string(s), s, s, s, "");
      run_case(g.name(), g, g, 2.0 * s * s * s, 2.0 * s * s, iters, true);
    }
    if (!decode_only) {
      const int64_t s = 4096;
      run_case("gemm_bias_gelu_amax_4096", gemm("gemm_bias_gelu_amax_4096", s, s, s, "fused"),
               gemm("gemm_4096", s, s, s, ""), 2.0 * s * s * s, 2.0 * s * s, iters, true);
      // the same epilogue at half and twice the size: what the fused kernel pays over bare cuBLASLt
      // as a function of the tiles per SM (~2, ~8, ~31 of 64x256) separates a per-kernel cost (the
      // last epilogue, which nothing hides) from a per-tile one
      for (int64_t e : {int64_t{2048}, int64_t{8192}}) {
        const std::string n = "gemm_bias_gelu_amax_" + std::to_string(e);
        run_case(n, gemm(n, e, e, e, "fused"), gemm("gemm_" + std::to_string(e), e, e, e, ""), 2.0 * e * e * e,
                 2.0 * e * e, iters);
      }
      // (K stays at 4096: past it the fp8 wgmma path declines, its accumulation being below f32)
      for (int64_t e : {int64_t{4096}, int64_t{8192}}) {
        const Graph f8 = gemm("gemm_fp8_e4m3_" + std::to_string(e), e, e, 4096, "", true, DType::fp8_e4m3);
        try {
          run_case(f8.name(), f8, f8, 2.0 * e * e * 4096, 1.0 * e * 4096, iters, e == 4096);
        } catch (const std::exception& ex) {
          std::printf("{\"case\": \"%s\", \"error\": \"%s\"}\n", f8.name().c_str(), bench::json_escape(ex.what()).c_str());
        }
      }
      // a row-major [K, N] weight (read MN-major, wgmma transposing B), against cuBLASLt on the same
      const Graph kn = gemm("gemm_4096_kn", s, s, s, "", false);
      run_case(kn.name(), kn, kn, 2.0 * s * s * s, 2.0 * s * s, iters, true);
      run_case("gemm_bias_gelu_amax_4096_kn", gemm("gemm_bias_gelu_amax_4096_kn", s, s, s, "fused", false), kn,
               2.0 * s * s * s, 2.0 * s * s, iters);
    }
    for (int64_t m : {int64_t{1}, int64_t{8}, int64_t{16}}) {
      const int64_t k = 4096, n = 14336;
      const Graph g = gemm("decode_m" + std::to_string(m), m, n, k, "");
      run_case(g.name(), g, g, 2.0 * m * n * k, 2.0 * n * k, iters);
      run_decode_gemv(g.name(), g, g, 2.0 * n * k, iters);
      run_decode_gemv(g.name() + "_kn", gemm(g.name() + "_kn", m, n, k, "", false), g, 2.0 * n * k, iters);
    }
    struct Stack {
      const char* name;
      int64_t n, k;
      const char* epilogue;
    };
    for (const Stack& c : {Stack{"llama_qo", 2048, 2048, ""}, Stack{"llama_kv", 512, 2048, ""},
                           Stack{"llama_gate_silu", 8192, 2048, "silu"},
                           Stack{"llama_down_residual", 2048, 8192, "residual"}}) {
      const Graph bare = decode_stack_matmul(std::string(c.name) + "_bare", c.n, c.k, "");
      const double bytes = 2.0 * c.n * c.k;
      for (bool k_major : {true, false}) {
        const std::string name = std::string(c.name) + (k_major ? "" : "_kn");
        const Graph ours = decode_stack_matmul(name, c.n, c.k, c.epilogue, k_major);
        if (k_major) run_case(name + "_default", ours, bare, 2.0 * c.n * c.k, bytes, iters);
        run_decode_gemv(name, ours, bare, bytes, iters);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinter_bench_gemm: %s\n", e.what());
    return 1;
  }
}
