// The direct-epilogue Hopper GEMM template (kernels/gemm/sm90_gemm_direct.cuh) on its own: a
// hand-written Args, config and epilogue functor (a bare store of the accumulators, no generator
// involved) instantiate it in every form the configs allow, and each compiles with NVRTC for
// sm_90a with no spills and pipelined wgmma; a config that breaks a constraint fails with the
// static_assert's words.
#include <gtest/gtest.h>

#include <string>

#include "cuda/nvrtc.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

struct Form {
  const char* name;
  int bm, bn, stages, cluster;
  bool ping_pong;
  const char* wgmma;
  const char* store;  // Sm90Store
  bool offload, preload, stream_k, unit_order, trace;
};

// Args with every field some form reads; an epilogue that stores the accumulators as bf16 (full
// tiles pack them into the held words where the kernel holds them).
std::string source(const Form& f) {
  std::string s = "#include \"common/types.cuh\"\n#include \"gemm/sm90_gemm_direct.cuh\"\n";
  if (f.trace) s += "#include \"common/trace.cuh\"\n";
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  s += "struct Sm90Config {\n  static constexpr int kBM = " + std::to_string(f.bm) + ", kBN = " + std::to_string(f.bn) +
       ", kStages = " + std::to_string(f.stages) + ", kCluster = " + std::to_string(f.cluster) + ";\n" +
       "  static constexpr bool kPingPong = " + b(f.ping_pong) + ", kBMnMajor = false;\n" +
       "  static constexpr int kWgmma = " + f.wgmma + ";\n" + "  static constexpr Sm90Store kStore = Sm90Store::" + f.store +
       ";\n" + "  static constexpr bool kOffload = " + b(f.offload) + ", kPreloadBias = " + b(f.preload) +
       ", kStreamK = " + b(f.stream_k) + ", kUnitOrder = " + b(f.unit_order) + ";\n" +
       "  using Trace = " + (f.trace ? "SinterCtaTrace" : "Sm90NoTrace") + ";\n};\n" +
       "using Cfg = HopperDirectConfig<Sm90Config>;\n";
  s += R"(
struct Args {
  SinterTensorMap tma_a, tma_b;
  SinterGemmShape shape;
  SinterUnitOrder order;
  bf16* out;
  long long ld;
  SinterTensorMap tmo;
  SinterStreamK sk;
  u32* sk_flags;
  float* sk_partials;
};

struct Epilogue {
  using Held = bf16;
  using Preload = PairWord<bf16>[Cfg::kBN / 8];
  static constexpr bool kEmpty = true;

  template <class Full, class Partial>
  __device__ __forceinline__ static bool if_full(const Args& a, bool rows_in, bool cols_in, Full&& full,
                                                 Partial&& partial) {
    if (rows_in && cols_in && (a.ld % 8 == 0)) {
      full();
      return true;
    }
    partial();
    return false;
  }

  template <bool kFull>
  __device__ __forceinline__ void fragment(const Args& a, i64 grow0, i64 gcol0, int rows_valid, int cols_valid,
                                           char*, const float (&d)[Cfg::kBlockAcc], u32 (&held)[Cfg::kBN / 4],
                                           const Preload&) {
    const int lane = threadIdx.x & 31, r0 = ((threadIdx.x & 127) >> 5) * 16 + (lane >> 2), c0 = 2 * (lane & 3);
#pragma unroll
    for (int q = 0; q < Cfg::kBN / 8; ++q) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (kFull && Cfg::kStore == Sm90Store::held) {
          held[8 * (q / 4) + 4 * h + q % 4] = pack_pair<bf16>(d[4 * q + 2 * h], d[4 * q + 2 * h + 1]);
        } else {
          const int r = r0 + 8 * h, c = 8 * q + c0;
          store_pair<false>(a.out + (grow0 + r) * a.ld + gcol0 + c, d[4 * q + 2 * h], d[4 * q + 2 * h + 1],
                            r < rows_valid && c < cols_valid, r < rows_valid && c + 1 < cols_valid);
        }
      }
    }
  }

  __device__ __forceinline__ static void preload(const Args& a, i64 gcol0, int, Preload& pw) {
#pragma unroll
    for (int q = 0; q < Cfg::kBN / 8; ++q) pw[q] = load_pair_word(a.out + gcol0 + 8 * q);
  }

  __device__ __forceinline__ void chunk(const Args&, i64, i64, u32 (&)[8]) {}

  __device__ __forceinline__ static const SinterTensorMap* held_map(const Args& a) { return &a.tmo; }

  __device__ __forceinline__ void finish(const Args&) {}
};

extern "C" __global__ void __launch_bounds__(Cfg::kThreads, 1) sinter_region(const __grid_constant__ Args a) {
  sm90_gemm_direct<Cfg, Epilogue>(a);
}
)";
  return s;
}

cuda::CompileResult compile(const std::string& name, const std::string& src) {
  cuda::CompileOptions opts;
  opts.arch = "sm_90a";
  opts.extra_options = {"--ptxas-options=-v"};
  return cuda::compile_cuda(name, src, opts);
}

TEST(Sm90GemmDirectTemplate, EveryFormCompilesOnItsOwn) {
  const Form forms[] = {
      // name, bm, bn, stages, cluster, ping-pong, wgmma, store, offload, preload, stream-K, order, trace
      {"coop_pair_held", 128, 256, 4, 2, false, "kWgmmaBf16", "held", false, false, false, true, false},
      {"coop_held_preload_stream_k", 128, 256, 4, 1, false, "kWgmmaF16", "held", false, true, true, true, false},
      {"coop_offload", 128, 256, 4, 2, false, "kWgmmaBf16", "held", true, false, false, true, false},
      {"coop_tma_in_line_stream_k", 128, 128, 6, 1, false, "kWgmmaBf16", "tma", false, false, true, true, false},
      {"coop_chains", 128, 256, 4, 1, false, "kWgmmaE4m3", "chains", false, false, false, false, false},
      {"ping_pong_pair", 64, 256, 5, 2, true, "kWgmmaBf16", "chains", false, false, false, false, false},
      {"tall_pair_held", 256, 128, 4, 2, false, "kWgmmaBf16", "held", false, false, false, false, false},
      {"coop_pair_held_traced", 128, 256, 4, 2, false, "kWgmmaBf16", "held", false, false, false, true, true},
  };
  for (const Form& f : forms) {
    SCOPED_TRACE(f.name);
    cuda::CompileResult res;
    try {
      res = compile(std::string("sm90_template_") + f.name + ".cu", source(f));
    } catch (const Error& e) {
      FAIL() << e.message() << "\n---- source ----\n" << source(f);
    }
    EXPECT_FALSE(res.cubin.empty());
    EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << res.log;
    EXPECT_EQ(res.log.find("are serialized"), std::string::npos) << res.log;
  }
}

TEST(Sm90GemmDirectTemplate, ConfigConstraintsFailToCompile) {
  struct Bad {
    Form form;
    const char* words;  // of the static_assert that refuses it
  };
  const Bad bad[] = {
      {{"offload_stream_k", 128, 256, 4, 1, false, "kWgmmaBf16", "held", true, false, true, true, false},
       "the offloaded epilogue: held stores of one row block a consumer, whole items"},
      {{"ping_pong_held", 64, 256, 5, 1, true, "kWgmmaBf16", "held", false, false, false, false, false},
       "held stores are the coop kernels'"},
      {{"tall_256", 256, 256, 4, 1, false, "kWgmmaBf16", "chains", false, false, false, false, false},
       "the tall tile is 256 x 128"},
      {{"stream_k_tall", 256, 128, 4, 2, false, "kWgmmaBf16", "held", false, false, true, false, false},
       "stream-K: coop kernels of one row block a consumer"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.form.name);
    try {
      compile(std::string("sm90_template_bad_") + b.form.name + ".cu", source(b.form));
      ADD_FAILURE() << "compiled";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(b.words), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace sinter::jit
