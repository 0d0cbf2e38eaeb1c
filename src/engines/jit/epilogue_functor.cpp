#include "engines/jit/epilogue_functor.hpp"

#include <sstream>

#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// The members every functor starts with: the index class of the epilogue's offsets and the
// kernel's arguments (a __grid_constant__ parameter, read in place).
std::string functor_head(const AnchorEpilogue& epi, const std::string& name) {
  return "struct " + name + " {\n  static constexpr bool kIndex64 = " + (epi.index64() ? "true" : "false") +
         ";\n  const Args& a;\n";
}

}  // namespace

std::string gemm_tile_epilogue(const AnchorEpilogue& epi, const GemmTileScope& scope, const std::string& name) {
  std::ostringstream s;
  s << functor_head(epi, name) << epi.kernel_begin("  ")
    << "  __device__ __forceinline__ explicit " << name << "(const Args& a_) : a(a_) {}\n"
    << "  __device__ __forceinline__ void tile(const char* smem, i64 row0, int rows, i64 col0, int cols) {\n"
    << epi.gemm_tile("row0", "rows", "col0", "cols", scope) << "  }\n"
    << "  __device__ __forceinline__ void finish() {\n"
    << epi.kernel_end("    ") << "  }\n"
    << "};\n";
  return s.str();
}

std::string row_epilogue(const AnchorEpilogue& epi, const std::string& name) {
  if (epi.has_exits()) throw Error(ErrorCode::internal, "row_epilogue: exit reductions need a tile epilogue");
  std::ostringstream s;
  s << functor_head(epi, name) << "  __device__ __forceinline__ explicit " << name << "(const Args& a_) : a(a_) {}\n"
    << "  template <int kN>\n"
    << "  __device__ __forceinline__ void row(i64 grow, const float (&v)[kN], i64 cols) {\n"
    << "    const int lane_ = threadIdx.x & 31;\n"
    << epi.row_offsets("    ") << "#pragma unroll\n"
    << "    for (int c = 0; c < kN; ++c) {\n"
    << "      const int cc = lane_ + 32 * c;\n"
    << "      const bool valid = cc < cols;\n"
    << "      const i64 col = cc;\n"
    << epi.element("v[c]", "      ") << "    }\n"
    << "  }\n"
    << "};\n";
  return s.str();
}

}  // namespace sinter::jit
