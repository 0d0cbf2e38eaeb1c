// Host-side choices shared by the matmul and conv generators, which both run on the main loops of
// kernels/gemm/simt_gemm.cuh: which main loop, and how each operand is read.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include "cuda/device.hpp"
#include "sinter/graph.hpp"

namespace sinter::jit {

// Mirrors kGemmThreads and kGemmSmemBytes of kernels/gemm/simt_gemm.cuh; the generated source
// static_asserts that they agree.
inline constexpr int kGemmThreadsHost = 256;
inline constexpr int kGemmSmemBytesHost = 128 * (128 + 4) * 4;

enum class GemmPath { mma_f16, mma_bf16, ffma };

inline GemmPath gemm_path(DType t) {
  if (t == DType::f32) return GemmPath::ffma;  // keeps f32 accuracy
  if (t == DType::bf16) return GemmPath::mma_bf16;
  return GemmPath::mma_f16;  // f16, and fp8 converted exactly to f16
}
inline std::string gemm_path_name(GemmPath p) {
  return p == GemmPath::ffma ? "ffma" : p == GemmPath::mma_bf16 ? "mma.bf16" : "mma.f16";
}
inline int gemm_bk(GemmPath p) { return p == GemmPath::ffma ? 8 : 32; }
// 16 bytes of input per vector; the tile shapes of both loops allow these widths.
inline int gemm_max_vec(GemmPath p, DType t) {
  return p == GemmPath::ffma ? 4 : static_cast<int>(16 / dtype_size(t));
}
inline std::string gemm_mainloop_call(GemmPath p, const std::string& kdim) {
  if (p == GemmPath::ffma) return "gemm_ffma_mainloop(la, lb, " + kdim + ", smem);";
  return std::string("gemm_mma_mainloop<") + (p == GemmPath::mma_bf16 ? "true" : "false") +
         ">(la, lb, " + kdim + ", smem);";
}
// Two CTAs per SM: the C tile takes 66 KiB of shared memory, and the main loops ~128 registers.
inline int64_t gemm_max_grid(const cuda::DeviceProperties& dev) {
  return int64_t{dev.sm_count > 0 ? dev.sm_count : 132} * 2;
}
inline std::string gemm_constant_checks() {
  return "static_assert(kGemmThreads == " + std::to_string(kGemmThreadsHost) +
         " && kGemmSmemBytes == " + std::to_string(kGemmSmemBytesHost) +
         ", \"the host's GEMM launch constants are stale\");\n";
}

// How a loader reads an operand tile: along k or along rows (M for A, N for B), kVec elements at
// a time. A vector needs stride 1 along it, and every other stride (over dims of size > 1, batch
// dims included) a multiple of kVec so that vector starts stay aligned to the (checked) base.
struct OperandAccess {
  bool along_k = true;
  int vec = 1;
};

inline OperandAccess classify_operand(int64_t rows, int64_t row_stride, int64_t kdim,
                                      int64_t k_stride, const Dims& batch_strides, int max_vec) {
  OperandAccess acc;
  const bool k_contiguous = k_stride == 1 && kdim > 1;
  const bool rows_contiguous = row_stride == 1 && rows > 1;
  if (k_contiguous) {
    acc.along_k = true;
  } else if (rows_contiguous) {
    acc.along_k = false;
  } else {
    // nothing contiguous: scalar loads along the smaller stride
    acc.along_k = kdim > 1 && (rows == 1 || std::llabs(k_stride) <= std::llabs(row_stride));
    return acc;
  }
  const int64_t extent = acc.along_k ? kdim : rows;
  const int64_t other_size = acc.along_k ? rows : kdim;
  const int64_t other_stride = acc.along_k ? row_stride : k_stride;
  int vec = max_vec;
  while (vec > 1) {
    bool ok = vec <= extent && (other_size == 1 || other_stride % vec == 0);
    for (int64_t s : batch_strides) ok = ok && s % vec == 0;
    if (ok) break;
    vec /= 2;
  }
  acc.vec = vec;
  return acc;
}

inline std::string access_name(const OperandAccess& a, const std::string& rows) {
  return (a.along_k ? std::string("k") : rows) + (a.vec > 1 ? "-vec" + std::to_string(a.vec) : "-scalar");
}

// The workspace of a decode tile that meets its split-K partials through decode_splitk_combine
// (kernels/gemm/decode_splitk.cuh): the epilogue's exit accumulators, then `partial_bytes` of
// partials, then one counter per slot (zeroed once; the last CTA of a slot resets its own),
// each part 256-byte aligned.
struct SplitKWorkspace {
  size_t part_offset = 0, count_offset = 0, bytes = 0;
};
inline SplitKWorkspace splitk_workspace(size_t epilogue_bytes, size_t partial_bytes, int64_t slots) {
  auto align256 = [](size_t v) { return (v + 255) / 256 * 256; };
  SplitKWorkspace w;
  w.part_offset = align256(epilogue_bytes);
  w.count_offset = align256(w.part_offset + partial_bytes);
  w.bytes = w.count_offset + static_cast<size_t>(slots) * 4;
  return w;
}

}  // namespace sinter::jit
