// Random graphs of pointwise, matmul, norm, softmax, reduction, reshape, transpose, select,
// cast and slice ops over small odd shapes (one seed, one graph): the partition tests check
// fusion on them, the megakernel tests run them on the GPU.
#pragma once

#include <random>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter::testing {

class RandomGraph {
 public:
  explicit RandomGraph(uint64_t seed) : rng_(seed), g_("random" + std::to_string(seed)) {
    dtype_ = pick(2) ? DType::f32 : DType::bf16;
    m_ = 1 + pick(9);
    n_ = 1 + pick(12);
    pool_.push_back(new_input({m_, n_}));
  }

  Graph build() {
    const int steps = 3 + static_cast<int>(pick(14));
    for (int i = 0; i < steps; ++i) step();
    // Every tensor nobody reads becomes an output; some read ones too.
    const auto cons = g_.consumers();
    for (Tensor t : pool_) {
      if (g_.tensor(t).is_input) continue;
      if (cons[t.id].empty() || pick(5) == 0) g_.output(t);
    }
    if (g_.outputs().empty()) g_.output(g_.relu(pool_.front()));
    g_.validate();
    return std::move(g_);
  }

 private:
  uint64_t pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  Tensor any() { return pool_[pick(pool_.size())]; }
  Tensor new_input(Dims d) { return g_.input("in" + std::to_string(inputs_++), dtype_, d); }
  const Dims& dims(Tensor t) { return g_.tensor(t).dims; }

  Tensor operand_for(Tensor a) {
    const Dims d = dims(a);
    switch (pick(5)) {
      case 0: return g_.scalar(0.5 + static_cast<double>(pick(4)), dtype_);
      case 1: return new_input({d.empty() ? 1 : d.back()});
      case 2: {
        Dims col = d;
        if (!col.empty()) col.back() = 1;
        return new_input(col);
      }
      case 3:
        for (Tensor t : pool_) {
          if (dims(t) == d && !(t == a)) return t;
        }
        return new_input(d);
      default: return new_input(d);
    }
  }

  void step() {
    const Tensor a = any();
    const Dims d = dims(a);
    Tensor out;
    switch (pick(12)) {
      case 0: {
        const OpKind ops[] = {OpKind::relu, OpKind::gelu, OpKind::silu, OpKind::tanh,
                              OpKind::sigmoid, OpKind::neg, OpKind::square, OpKind::abs};
        out = g_.unary(ops[pick(8)], a);
        break;
      }
      case 1:
      case 2: {
        const OpKind ops[] = {OpKind::add, OpKind::sub, OpKind::mul, OpKind::max, OpKind::min};
        const Tensor b = operand_for(a);
        out = pick(2) ? g_.binary(ops[pick(5)], a, b) : g_.binary(ops[pick(5)], b, a);
        break;
      }
      case 3:
        if (d.size() < 2) return;
        out = g_.matmul(a, new_input({d.back(), 1 + static_cast<int64_t>(pick(8))}));
        break;
      case 4:
        if (d.empty()) return;
        out = pick(2) ? g_.layernorm(a, new_input({d.back()}))
                      : g_.rmsnorm(a, new_input({d.back()}));
        break;
      case 5:
        if (d.empty()) return;
        out = g_.softmax(a);
        break;
      case 6: {
        std::vector<int64_t> axes;
        for (size_t i = 0; i < d.size(); ++i) {
          if (pick(2)) axes.push_back(static_cast<int64_t>(i));
        }
        const OpKind ops[] = {OpKind::reduce_sum, OpKind::reduce_max, OpKind::reduce_amax,
                              OpKind::reduce_mean, OpKind::reduce_min};
        out = g_.reduce(ops[pick(5)], a, axes, pick(2) == 0);
        break;
      }
      case 7: out = g_.reshape(a, {-1}); break;
      case 8:
        if (d.size() != 2) return;
        out = g_.transpose(a, 0, 1);
        break;
      case 9: {
        const Tensor b = operand_for(a);
        out = g_.select(g_.gt(a, b), a, b);
        break;
      }
      case 10: {
        const DType other = dtype_ == DType::f32 ? DType::bf16 : DType::f32;
        out = g_.cast(g_.cast(a, other), dtype_);
        break;
      }
      default:
        if (d.empty()) return;
        out = g_.slice(a, {static_cast<int64_t>(d.size()) - 1}, {0}, {(d.back() + 1) / 2});
        break;
    }
    pool_.push_back(out);
  }

  std::mt19937_64 rng_;
  Graph g_;
  DType dtype_;
  int64_t m_, n_;
  int inputs_ = 0;
  std::vector<Tensor> pool_;
};


}  // namespace sinter::testing
