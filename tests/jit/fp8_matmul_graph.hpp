// The fp8 matmul graph of the Hopper GEMM's JIT tests (what it takes, what it declines) and its
// GPU tests (numerics against the CPU reference): one builder, so both check the same graph.
#pragma once

#include <cstdint>
#include <string>

#include "sinter/graph.hpp"

namespace sinter::testing {

// An fp8 `t` [m, k] x an fp8 [N, K] weight seen as [K, N] (or a row-major [K, N] one with
// `b_row_major`), the result in `out`, with a bias (`out`) + GELU + amax epilogue if asked.
inline Graph fp8_matmul_graph(const std::string& name, DType t, int64_t m, int64_t n, int64_t k, DType out,
                              bool epilogue, bool b_row_major = false) {
  Graph g(name);
  auto a = g.input("a", t, {m, k});
  auto b = b_row_major ? g.input("b", t, {k, n}) : g.input("b", t, {k, n}, {1, k});
  MatmulAttrs at;
  at.out_dtype = out;
  auto y = g.matmul(a, b, at);
  if (epilogue) {
    y = g.gelu(g.add(y, g.input("bias", out, {n})));
    g.output(g.amax(y), "amax");
  }
  g.output(y, "y");
  return g;
}

}  // namespace sinter::testing
