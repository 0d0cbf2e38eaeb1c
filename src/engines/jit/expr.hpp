// C++ source for one pointwise node: what every generated kernel's epilogue is made of. Values
// live in registers in their compute type (float for float dtypes, int, i64 or bool). Stored
// tensors are rounded to their dtype when stored, and casts always round. Intermediates that stay
// in registers keep float precision, as torch.compile and XLA do; with
// ExprOptions::round_intermediates they are rounded at every tensor boundary too, so a fused
// kernel computes bit for bit what the unfused graph computes (slower: a conversion per op).
#pragma once

#include <string>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter::jit {

std::string storage_type(DType t);  // bf16, f16, float, fp8e4m3, fp8e5m2, int, i64, bool
std::string compute_type(DType t);  // float, int, i64, bool
std::string float_literal(double v);  // exact hex-float literal; inf and NaN spelled out

// The numerics of a fused expression: an option of the whole compile (every kernel of a plan
// computes the same way), not a kernel variant the tuner may choose.
struct ExprOptions {
  // In-register float intermediates rounded to their tensor's dtype, as the unfused graph
  // computes them (ReferenceOptions::round_intermediates' counterpart).
  bool round_intermediates = false;
};

// `expr` rounded to dtype `t` when intermediates are rounded (a float value of a tensor that
// stays in registers), else `expr`.
std::string intermediate(const std::string& expr, DType t, const ExprOptions& options = {});

// "const <ctype> <out> = <expr>;" for a unary, binary, compare, select, cast or constant node,
// whose inputs hold their values in the variables `in`.
std::string emit_pointwise(const Graph& g, const Node& n, const std::vector<std::string>& in,
                           const std::string& out, const ExprOptions& options = {});

// Converts a value of compute type of `from` to the compute type of `to` (no rounding).
std::string convert_compute(const std::string& expr, DType from, DType to);

}  // namespace sinter::jit
