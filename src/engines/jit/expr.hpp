// C++ source for one pointwise node: what every generated kernel's epilogue is made of. Values
// live in registers in their compute type (float for float dtypes, int, i64 or bool), and a float
// value is rounded to its tensor's dtype where the graph has a tensor boundary, so a fused kernel
// computes what the unfused graph computes.
#pragma once

#include <string>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter::jit {

std::string storage_type(DType t);  // bf16, f16, float, fp8e4m3, fp8e5m2, int, i64, bool
std::string compute_type(DType t);  // float, int, i64, bool
std::string float_literal(double v);  // exact hex-float literal; inf and NaN spelled out

// "const <ctype> <out> = <expr>;" for a unary, binary, compare, select, cast or constant node,
// whose inputs hold their values in the variables `in`.
std::string emit_pointwise(const Graph& g, const Node& n, const std::vector<std::string>& in,
                           const std::string& out);

// Converts a value of compute type of `from` to the compute type of `to` (no rounding).
std::string convert_compute(const std::string& expr, DType from, DType to);

}  // namespace sinter::jit
