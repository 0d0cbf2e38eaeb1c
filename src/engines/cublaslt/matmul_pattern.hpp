// Which matmul regions cuBLASLt can run, and how: the region's epilogue matched against the
// epilogues cuBLASLt has (bias, relu, gelu (tanh form), gelu with the pre-activation as an aux
// output, a residual as beta*C, a scalar constant scale as alpha (and beta), the amax of D for
// fp8 matmuls with an fp8 D), and the operands' strides turned into column-major layouts.
// Pure analysis of the graph: it needs no GPU, so `sinter engines` can say why not anywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fuse/region.hpp"

namespace sinter::cublaslt {

enum class Activation { none, relu, gelu_tanh };

// One operand as cuBLASLt sees it: a column-major matrix of rows x cols with leading dimension
// ld, read transposed or not, with a batch stride (0: broadcast across the batch).
struct OperandLayout {
  int input = -1;  // index among the region's inputs
  DType dtype = DType::f32;
  int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;
  bool transpose = false;
};

struct MatmulPattern {
  // cuBLAS computes D' = op(A') op(B') in column major; for row-major D = A B we pass
  // A' = B and B' = A (D^T = B^T A^T), so `a` describes our B and `b` our A.
  OperandLayout a, b;
  int64_t m = 0, n = 0, k = 0;  // of the graph's matmul: out [batch, m, n]
  int64_t batch = 1;
  DType out_dtype = DType::f32;
  bool tf32 = false;
  int bias_input = -1;      // a length-n vector added to every row
  int residual_input = -1;  // C, scaled by beta
  float alpha = 1.0f;       // scales A B (a constant multiplier on the chain before any bias)
  float beta = 0.0f;        // scales C: 1 with a residual, times a scale applied after it
  int amax_output = -1;     // the region output that receives max |D| (f32; fp8 inputs and D only)
  Activation activation = Activation::none;
  int output = -1;          // the region output that is D
  int aux_output = -1;      // the stored pre-activation (gelu only)
  std::string epilogue_name;  // "bias+gelu_tanh (aux)", for candidates' descriptions
};

// The pattern, or the reason cuBLASLt cannot run the region.
struct MatchResult {
  std::optional<MatmulPattern> pattern;
  std::string reason;
};
MatchResult match_matmul(const Graph& g, const fuse::Region& r);

}  // namespace sinter::cublaslt
