// Graphs the plan tests and bench_plan share.
#pragma once

#include "sinter/compile.hpp"
#include "sinter/graph.hpp"

namespace sinter::testing {

// `ops` dependent pointwise ops over `elements` f32 values (sigmoid, tanh, neg in turn: bounded,
// so the chain stays finite at any length). Run with pointwise fusion off, every op is a launch.
inline Graph pointwise_chain(int ops, int64_t elements) {
  Graph g("pointwise_chain_" + std::to_string(ops));
  Tensor h = g.input("x", DType::f32, {elements});
  for (int i = 0; i < ops; ++i) h = i % 3 == 0 ? g.sigmoid(h) : i % 3 == 1 ? g.tanh(h) : g.neg(h);
  g.output(h, "y");
  g.validate();
  return g;
}

inline FusionOptions no_fusion() { return FusionOptions::none(); }

}  // namespace sinter::testing
