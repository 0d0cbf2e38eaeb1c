// Matmul regions on the C-tile Hopper GEMM (kernels/gemm/sm90_gemm.cuh): a [..., M, K] x b [..., K, N]
// with bf16 or f16 operands that TMA can read, then the region's epilogue (AnchorEpilogue::gemm_tile,
// the generic tile's) run by the two consumer warpgroups from the f32 C tile in shared memory.
// The kernel is a device template; this file writes its config, the Args struct and the epilogue
// functor. sm90_gemm_unsupported says which regions the Hopper kernels (this one and the direct-
// epilogue kernels, codegen_sm90_gemm_direct.cpp) take.
//
// TMA reads the operands as 3D tensors: A row-major [M, K] as {K, M, batch}; B either
// k-contiguous ([N, K] in memory, PyTorch's nn.Linear weight) as {K, N, batch}, or n-contiguous
// (row-major [K, N], how the examples and many checkpoints store it) as {N, K, batch}, read by
// wgmma with its transpose-B bit (gemm/sm90_operand_b.cuh). Every other stride must be a positive
// multiple of 16 bytes and the batch dims must collapse into one non-broadcast dim. Anything else
// is reported by sm90_gemm_unsupported and runs on the generic tile (codegen_simt_matmul.cpp), which
// reads any strides.
#include <algorithm>
#include <sstream>
#include <string>

#include "engines/jit/codegen.hpp"
#include "engines/jit/codegen_anchor.hpp"
#include "engines/jit/sm90_operands.hpp"
#include "gemm/gemm_abi.h"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// Mirrors kernels/gemm/sm90_gemm.cuh; the generated source static_asserts that they agree.
constexpr int kHopperBMHost = 128, kHopperBNHost = 128, kHopperBKHost = 64, kHopperStagesHost = 4;
constexpr int kHopperThreadsHost = 384;
constexpr int kHopperSmemBytesHost =
    1024 + kHopperStagesHost * (kHopperBMHost + kHopperBNHost) * kHopperBKHost * 2 +
    kHopperBMHost * (kHopperBNHost + 4) * 4 + 2 * kHopperStagesHost * 8;

using Operands = Sm90Operands;
Operands operands(const Graph& g, const fuse::Region& r) { return sm90_operands(g, r); }
std::pair<int64_t, int64_t> operand_strides(const Operands& o, bool is_a) { return sm90_operand_strides(o, is_a); }

// The functor sm90_gemm_ctile runs: out: [batches, M, N]; the consumers' epilogue of one
// 128x128 tile from the C tile in `smem`.
std::string ctile_functor(const AnchorEpilogue& epi) {
  GemmTileScope scope;
  scope.threads = "kHopperConsumerThreads";
  scope.tid = "(static_cast<int>(threadIdx.x) - 128)";
  scope.sync = "named_barrier_sync(1, kHopperConsumerThreads);";
  scope.bn = "kHopperBN";
  scope.ldc = "kHopperLdC";
  std::ostringstream s;
  s << "// the region's epilogue on the C tile (sm90_gemm.cuh's Epi)\n"
    << "struct Epilogue {\n"
    << epi.kernel_begin("  ") << "\n"
    << "  __device__ __forceinline__ void tile(const Args& a, const HopperTile& tile, char* smem) {\n"
    << "    const SinterGemmShape& s = a.shape;\n"
    << "    const int m0 = tile.mt * kHopperBM, n0 = tile.nt * kHopperBN;\n"
    << epi.gemm_tile("static_cast<i64>(tile.batch) * s.m + m0", "min(kHopperBM, static_cast<int>(s.m - m0))",
                     "static_cast<i64>(n0)", "min(kHopperBN, static_cast<int>(s.n - n0))", scope)
    << "  }\n\n"
    << "  // exit reductions: per CTA, then the last CTA finalizes\n"
    << "  __device__ __forceinline__ void finish(const Args& a) {\n"
    << "    (void)a;\n"
    << epi.kernel_end("    ") << "  }\n"
    << "};\n";
  return s.str();
}

}  // namespace

std::string sm90_gemm_unsupported(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                  bool allow_fp8) {
  if (dev.arch != "sm_90a") return "needs sm_90a (device compiles for " + dev.arch + ")";
  if (!r.prologue.empty()) return "the region has a prologue";
  const Operands o = operands(g, r);
  const bool fp8 = allow_fp8 && o.dtype == o.dtype_b && is_fp8(o.dtype);
  if (!fp8 && (o.dtype != o.dtype_b || (o.dtype != DType::bf16 && o.dtype != DType::f16))) {
    return std::string("operands are ") + std::string(to_string(o.dtype)) + " x " +
           std::string(to_string(o.dtype_b)) + ", not both bf16 or both f16" +
           (allow_fp8 ? " (or both fp8_e4m3 or both fp8_e5m2)" : "");
  }
  // 8-bit wgmma has no transpose: both operands k-contiguous
  if (fp8 && o.b_mn_major) return "b is n-contiguous, and fp8 wgmma reads b k-contiguous only";
  // 8-bit wgmma accumulates in the tensor cores below f32 precision (cuBLASLt's "fast
  // accumulation": relative L2 error 6.6e-5 at K = 96 against the f64 reference, 1.6e-3 at
  // K = 4096 against cuBLASLt's promoted accumulation, both with 16-bit outputs rounding at
  // 2^-9 .. 2^-11; docs/benchmarks.md). So only 16-bit or fp8 results, and K up to 4096; an f32
  // result or a longer K takes the generic tile (f16 mma, f32 accumulation). Promoting each
  // k-block into a second f32 accumulator (DeepGEMM's way) would lift both limits but needs
  // twice the accumulator registers.
  if (fp8) {
    const DType out = g.tensor(o.mm->outputs[0]).dtype;
    if (out == DType::f32) {
      return "an fp8 matmul with an f32 result: fp8 wgmma accumulates below f32 precision (16-bit or fp8 "
             "results only)";
    }
    if (o.k > 4096) {
      return "an fp8 matmul with K = " + std::to_string(o.k) +
             " > 4096: fp8 wgmma accumulates below f32 precision, measured to K = 4096";
    }
  }
  if (o.a_stride_k != 1 && o.k > 1) return "a is not k-contiguous (stride " + std::to_string(o.a_stride_k) + ")";
  if (o.b_stride_k != 1 && o.k > 1 && !o.b_mn_major) {
    return "b is neither k- nor n-contiguous (b[..., K, N] has strides " + std::to_string(o.b_stride_k) + ", " +
           std::to_string(o.b_stride_n) + ")";
  }
  if (o.batch.sizes.size() != 1) return "the batch dims do not collapse into one";
  for (int i = 0; i < 2; ++i) {
    if (o.batch.numel > 1 && o.batch.strides[i][0] == 0) {
      return std::string(i == 0 ? "a" : "b") + " is broadcast over the batch";
    }
  }
  for (bool is_a : {true, false}) {
    const auto [row, batch] = operand_strides(o, is_a);
    const char* name = is_a ? "a" : "b";
    if (row <= 0 || row % 16 != 0) {
      return std::string(name) + "'s row stride of " + std::to_string(row) + " bytes is not a positive multiple of 16";
    }
    if (batch <= 0 || batch % 16 != 0) {
      return std::string(name) + "'s batch stride of " + std::to_string(batch) +
             " bytes is not a positive multiple of 16";
    }
    if (row >= (int64_t{1} << 40) || batch >= (int64_t{1} << 40)) return std::string(name) + "'s strides reach 2^40 bytes";
  }
  for (int64_t v : {o.m, o.n, o.k, o.batch.numel}) {
    if (v >= (int64_t{1} << 31)) return "a size of 2^31 or more";
  }
  if (((o.m + 127) / 128) * ((o.n + 127) / 128) >= (int64_t{1} << 31)) {
    return "2^31 or more output tiles per batch";  // hopper_tile's int math
  }
  if (dev.max_shared_memory_per_block_optin < static_cast<size_t>(kHopperSmemBytesHost)) {
    return "needs " + std::to_string(kHopperSmemBytesHost) + " bytes of shared memory per block";
  }
  return "";
}

RegionKernels build_matmul_sm90(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  const std::string why_not = sm90_gemm_unsupported(g, r, dev);
  if (!why_not.empty()) {
    throw Error(ErrorCode::internal, "build_matmul_sm90: region " + std::to_string(r.id) + ": " + why_not);
  }
  const Operands o = operands(g, r);
  const bool bf16 = o.dtype == DType::bf16;

  RegionKernels rk;
  KernelSpec spec;
  AnchorEpilogue epi(g, r, o.mm->outputs[0]);
  ArgsWriter w(spec);
  for (bool is_a : {true, false}) {
    w.tensor_map(is_a ? "tma_a" : "tma_b",
                 sm90_tensor_map(r, o, is_a, static_cast<uint32_t>(is_a ? kHopperBMHost : kHopperBNHost)));
  }
  w.field("SinterGemmShape", "shape", sm90_gemm_shape(o));
  epi.declare(w);
  const std::string args = w.finish();

  std::ostringstream src;
  src << "// matmul region " << r.id << " of graph '" << g.name() << "' (Hopper TMA + wgmma)\n"
      << kernel_includes({"gemm/gemm_abi.h", "gemm/sm90_gemm.cuh"})
      << "static_assert(kHopperThreads == " << kHopperThreadsHost << " && kHopperSmemBytes == " << kHopperSmemBytesHost
      << " && kHopperBM == " << kHopperBMHost << " && kHopperBN == " << kHopperBNHost << " && kHopperBK == "
      << kHopperBKHost << ", \"the host's Hopper GEMM constants are stale\");\n"
      << "struct Cfg {\n"
      << "  static constexpr bool kBf16 = " << (bf16 ? "true" : "false") << ", kBMnMajor = "
      << (o.b_mn_major ? "true" : "false") << ";\n"
      << "};\n"
      << "[[maybe_unused]] constexpr bool kIndex64 = " << (epi.index64() ? "true" : "false") << ";\n\n"
      << args << "\n"
      << ctile_functor(epi) << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(kHopperThreads, 1) sinter_region(const __grid_constant__ Args a) {\n"
      << "  sm90_gemm_ctile<Cfg, Epilogue>(a);\n"
      << "}\n";

  spec.source = src.str();
  spec.description = std::string("matmul sm90 wgmma.") + (bf16 ? "bf16" : "f16") +
                     " 128x128x64 stages4 tma warpspec(1p+2c) persistent group8" +
                     (o.b_mn_major ? " b-mn-major" : "") + (o.batch_folded ? " batch-folded" : "") +
                     (epi.index64() ? " idx64" : "") + epi.describe();
  const int64_t tiles = o.batch.numel * ((o.m + 127) / 128) * ((o.n + 127) / 128);
  spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(tiles, 1, dev.sm_count > 0 ? dev.sm_count : 132)));
  spec.launch.block = dim3(kHopperThreadsHost);
  spec.launch.dynamic_shared_memory = kHopperSmemBytesHost;
  spec.persistent_work = tiles;
  rk.workspace_bytes = epi.workspace_bytes();
  rk.kernels.push_back(std::move(spec));
  return rk;
}

}  // namespace sinter::jit
