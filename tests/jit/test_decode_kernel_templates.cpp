// The decode, attention and conv kernel templates of kernels/ compile on their own: each is
// instantiated here with a hand-written Cfg, a minimal Args holding the fields its header names
// and a small epilogue functor (no generator involved), and compiled by NVRTC for sm_90a with no
// register spills (but for conv with filters that are not contiguous over (r, s, c), whose
// generated kernels spill too). The generated kernels instantiate the same templates (the generator tests
// compile those); this is the contract a persistent megakernel would build on.
#include <gtest/gtest.h>

#include <string>

#include "cuda/nvrtc.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

// A C-tile functor (epilogue_functor.hpp's gemm_tile_epilogue interface): row 0 of the tile to y.
constexpr const char* kTileEpilogue = R"(
struct Epilogue {
  const Args& a;
  __device__ explicit Epilogue(const Args& a_) : a(a_) {}
  __device__ void tile(const char* smem, i64 row0, int rows, i64 col0, int cols) {
    const float* cs = reinterpret_cast<const float*>(smem);
    for (int c = threadIdx.x; c < cols && rows > 0; c += 256) a.y[row0 * a.ldy + col0 + c] = cs[c];
  }
  __device__ void finish() {}
};
)";

// A row functor (row_epilogue's interface): the row's valid columns to y.
constexpr const char* kRowEpilogue = R"(
struct Epilogue {
  const Args& a;
  __device__ explicit Epilogue(const Args& a_) : a(a_) {}
  template <int kN>
  __device__ void row(i64 grow, const float (&v)[kN], i64 cols) {
#pragma unroll
    for (int c = 0; c < kN; ++c) {
      const int cc = (threadIdx.x & 31) + 32 * c;
      if (cc < cols) a.y[grow * cols + cc] = v[c];
    }
  }
};
)";

// Compiles `body` (after the kernel headers' includes) with `instantiation`; without spills
// unless `spills` (a form that spills in the generated kernels too).
void expect_compiles(const std::string& name, const std::string& includes, const std::string& body,
                     const std::string& instantiation, bool spills = false) {
  const std::string source = includes + body + "extern \"C\" __global__ void " + instantiation + "\n";
  CompileOptions opts;
  opts.arch = "sm_90a";
  opts.extra_options = {"--ptxas-options=-v"};
  try {
    const CompileResult res = compile_cuda(name + ".cu", source, opts);
    EXPECT_FALSE(res.cubin.empty());
    if (!spills) {
      EXPECT_NE(res.log.find("0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << name << "\n" << res.log;
    }
  } catch (const Error& e) {
    ADD_FAILURE() << name << " does not compile:\n" << e.message() << "\n---- source ----\n" << source;
  }
}

const std::string kCommon = "#include \"common/types.cuh\"\n#include \"common/index.cuh\"\n";

TEST(JitKernelTemplates, DecodeTmaBothCuts) {
  const std::string args = R"(
struct Args {
  SinterTensorMap tma_x, tma_w;
  SinterGemmShape shape;
  i64 total, steps_per_tile, ctas, tiles_n, whole_tiles;
  int tile_rows;
  i64 max_contributors;
  float* part;
  unsigned int* counts;
  float* y;
  i64 ldy;
};
)";
  // whole tiles; stream-K with chunked boxes of 32 rows; stream-K over a [K, N] weight
  for (const int form : {0, 1, 2}) {
    const bool whole = form == 0, kn = form == 2;
    const std::string cfg = std::string("struct Cfg {\n  static constexpr bool kBf16 = true, kChunked = ") +
                            (form == 1 ? "true" : "false") + ", kProducerWarp = " + (whole ? "true" : "false") +
                            ", kWholeTiles = " + (whole ? "true" : "false") + ", kKnWeight = " + (kn ? "true" : "false") +
                            ";\n  static constexpr int kBN = " + (form == 1 ? "32" : "128") +
                            ", kMTile = 16, kStages = 3, kWarpBoxes = 2, kAccChains = 2;\n};\n";
    expect_compiles(whole ? "decode_tma_whole" : kn ? "decode_tma_kn" : "decode_tma_streamk",
                    kCommon + "#include \"gemm/decode_tma.cuh\"\n", cfg + args + kTileEpilogue,
                    "__launch_bounds__(DecodeTmaLayout<Cfg>::kThreads, 1) k(const __grid_constant__ Args a) "
                    "{ decode_tma_kernel<Cfg, Epilogue>(a); }");
  }
}

TEST(JitKernelTemplates, DecodeGemvMmaAndFfma) {
  const std::string args = R"(
struct Args {
  SinterGemmShape shape;
  int splits, chunk;
  const u16* x;
  const u16* w;
  float* part;
  unsigned int* counts;
  float* y;
  i64 ldy;
};
)";
  for (const bool k_major : {true, false}) {
    const std::string km = k_major ? "true" : "false";
    for (const bool norm : {false, true}) {  // with an rmsnorm folded into x (and its bias)
      const std::string nb = norm ? "true" : "false";
      std::string a = args;
      if (norm) {
        a.insert(a.rfind("};"), "  const u16* norm_w;\n  i64 norm_w_stride;\n  float norm_eps;\n  const u16* norm_b;\n"
                                "  i64 norm_b_stride;\n");
      }
      expect_compiles("decode_gemv_mma", kCommon + "#include \"gemm/decode_gemv.cuh\"\n",
                      "struct Cfg {\n  static constexpr bool kBf16 = true, kKMajor = " + km +
                          ";\n  static constexpr int kMTile = 16, kWVec = 8, kXVec = 8;\n  static constexpr bool kNorm = " + nb +
                          ", kNormBias = " + nb + ";\n};\nusing Tile = DecodeGemv<Cfg>;\n" + a + kTileEpilogue,
                      "__launch_bounds__(Tile::kThreads) k(const __grid_constant__ Args a) "
                      "{ decode_gemv_kernel<Tile, Epilogue>(a); }");
    }
    expect_compiles("decode_gemv_ffma", kCommon + "#include \"gemm/decode_gemv_ffma.cuh\"\n",
                    "struct Cfg {\n  static constexpr bool kBf16 = false, kKMajor = " + km +
                        ";\n  static constexpr int kMTile = 2, kDepth = 4, kWVec = 1, kXVec = 8;\n};\n"
                        "using Tile = DecodeFfma<Cfg>;\n" +
                        args + kTileEpilogue,
                    "__launch_bounds__(Tile::kThreads, 2) k(const __grid_constant__ Args a) "
                    "{ decode_gemv_kernel<Tile, Epilogue>(a); }");
  }
}

TEST(JitKernelTemplates, FlashSimple) {
  expect_compiles("flash_simple", kCommon + "#include \"attention/flash_simple.cuh\"\n",
                  R"(
struct Cfg {
  typedef bf16 T;
  typedef float BiasT;
  static constexpr int kBias = 1, kCausal = 2, kRW = 8, kNV = 4;
  static constexpr bool kStats = true;
};
struct Args {
  SinterSdpaShape shape;
  const bf16* q;
  const bf16* k;
  const bf16* v;
  const float* bias;
  float* stats;
  float* y;
};
)" + std::string(kRowEpilogue),
                  "__launch_bounds__(kSdpaThreads) k(const __grid_constant__ Args a) "
                  "{ flash_simple_kernel<Cfg, Epilogue>(a); }");
}

TEST(JitKernelTemplates, FlashDecode) {
  expect_compiles("flash_decode", kCommon + "#include \"attention/flash_decode.cuh\"\n",
                  R"(
struct Cfg {
  typedef bf16 T;
  typedef bool BiasT;
  static constexpr int kBias = 2, kCausal = 2, kR = 4, kD = 128, kDV = 128, kTK = 16;
  static constexpr bool kVecQ = true, kVecK = true, kVecV = true, kStats = true;
};
struct Args {
  SinterSdpaShape shape;
  long long chunk;
  int row_blocks, cta_splits, nsplit;
  const bf16* q;
  const bf16* k;
  const bf16* v;
  const bool* bias;
  float* stats;
  float* part_ml;
  float* part_o;
  unsigned int* count;
  float* y;
};
)" + std::string(kRowEpilogue),
                  "__launch_bounds__(kDecodeAttnThreads) k(const __grid_constant__ Args a) "
                  "{ flash_decode_kernel<Cfg, Epilogue>(a); }");
}

TEST(JitKernelTemplates, ConvImplicitGemm) {
  const std::string args = R"(
struct Args {
  SinterConvShape shape;
  const bf16* x;
  const bf16* w;
  float* y;
  i64 ldy;
};
)";
  for (const bool plain : {true, false}) {
    expect_compiles(plain ? "conv_plain_filters" : "conv_strided_filters", kCommon + "#include \"conv/implicit_gemm.cuh\"\n",
                    std::string("struct Cfg {\n  typedef bf16 TX;\n  typedef bf16 TW;\n"
                                "  static constexpr bool kFfma = false, kBf16 = true, kWPlain = ") +
                        (plain ? "true" : "false") + ";\n  static constexpr int kXVec = 8, kWVec = 8;\n};\n" + args +
                        kTileEpilogue,
                    "__launch_bounds__(kGemmThreads, 2) k(const __grid_constant__ Args a) "
                    "{ conv_kernel<Cfg, Epilogue>(a); }",
                    !plain);  // FilterLoader's per-element index math spills under 128 registers
  }
}

}  // namespace
}  // namespace sinter::cuda
