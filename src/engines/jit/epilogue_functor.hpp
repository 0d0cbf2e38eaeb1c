// A region's fused epilogue as a functor type, for the kernel templates of kernels/ that take one
// (gemm/decode_gemv.cuh, gemm/decode_tma.cuh, conv/implicit_gemm.cuh, attention/flash_*.cuh).
// The template computes an output tile or row and hands it to the functor; the functor carries
// what is particular to the region (its pointwise DAG, operands, stores and exit reductions, all
// from AnchorEpilogue), so a template's text is the same for every region and a generator emits
// only its config, this functor and the instantiation.
#pragma once

#include <string>

#include "engines/jit/codegen_anchor.hpp"

namespace sinter::jit {

// `struct <name>` over a C tile in shared memory (AnchorEpilogue::gemm_tile), for the generated
// `struct Args` declared before it:
//   explicit Epilogue(const Args& a);  the global exit partials start at their identity
//   void tile(const char* smem, i64 row0, int rows, i64 col0, int cols);
//       the f32 C tile at `smem` (row length scope.ldc), `rows` x `cols` of it valid, whose
//       first element is matrix element (row0, col0); run by the threads `scope` names
//   void finish();  global exits reduced per CTA, every exit finalized by the last CTA
//       (AnchorEpilogue::kernel_end): every thread of the CTA calls it once, at the kernel's end.
std::string gemm_tile_epilogue(const AnchorEpilogue& epi, const GemmTileScope& scope,
                               const std::string& name = "Epilogue");

// `struct <name>` over output rows held in registers, a warp a row (AnchorEpilogue::element),
// for regions without exit reductions:
//   explicit Epilogue(const Args& a);
//   template <int kN> void row(i64 grow, const float (&v)[kN], i64 cols);
//       matrix row `grow`: lane l holds columns l + 32 c in v[c], those below `cols` valid
std::string row_epilogue(const AnchorEpilogue& epi, const std::string& name = "Epilogue");

}  // namespace sinter::jit
