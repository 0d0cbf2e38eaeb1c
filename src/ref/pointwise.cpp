// Elementwise ops: unary, binary and comparisons with numpy broadcasting, select, constant and
// cast. Domain errors follow IEEE (log(-1) = NaN, 1/0 = inf). Integer tensors are computed in
// double too; the executor's rounding to i32/i64 truncates and saturates.
#include <cmath>
#include <limits>
#include <numbers>

#include "ref/ops.hpp"
#include "sinter/error.hpp"

namespace sinter::ref {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void not_in_family(OpKind op, const char* family) {
  throw Error(ErrorCode::internal,
              "reference: op " + std::string(to_string(op)) + " is not a " + family + " op");
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double apply_unary(OpKind op, double x) {
  switch (op) {
    case OpKind::identity: return x;
    case OpKind::relu: return x < 0 ? 0.0 : x;  // NaN < 0 is false, so NaN stays NaN
    case OpKind::gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case OpKind::gelu_tanh: {
      const double c = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
    }
    case OpKind::silu: return x * sigmoid(x);
    case OpKind::sigmoid: return sigmoid(x);
    case OpKind::tanh: return std::tanh(x);
    case OpKind::exp: return std::exp(x);
    case OpKind::log: return std::log(x);
    case OpKind::sqrt: return std::sqrt(x);
    case OpKind::rsqrt: return 1.0 / std::sqrt(x);
    case OpKind::abs: return std::fabs(x);
    case OpKind::neg: return -x;
    case OpKind::reciprocal: return 1.0 / x;
    case OpKind::square: return x * x;
    default: not_in_family(op, "unary");
  }
}

double apply_binary(OpKind op, double a, double b) {
  switch (op) {
    case OpKind::add: return a + b;
    case OpKind::sub: return a - b;
    case OpKind::mul: return a * b;
    case OpKind::div: return a / b;
    // NaN-propagating like torch.maximum / torch.minimum (std::fmax would drop the NaN)
    case OpKind::max: return (std::isnan(a) || std::isnan(b)) ? kNaN : (a > b ? a : b);
    case OpKind::min: return (std::isnan(a) || std::isnan(b)) ? kNaN : (a < b ? a : b);
    case OpKind::pow: return std::pow(a, b);
    default: not_in_family(op, "binary");
  }
}

// IEEE comparisons already give "NaN compares false, except !=".
bool apply_compare(OpKind op, double a, double b) {
  switch (op) {
    case OpKind::eq: return a == b;
    case OpKind::ne: return a != b;
    case OpKind::lt: return a < b;
    case OpKind::le: return a <= b;
    case OpKind::gt: return a > b;
    case OpKind::ge: return a >= b;
    default: not_in_family(op, "compare");
  }
}

// out[i] = f(a[bcast(i)], b[bcast(i)]) over the broadcast shape of a and b.
template <typename F>
RefTensor broadcast_binary(const RefTensor& a, const RefTensor& b, F f) {
  RefTensor out(*broadcast_dims(a.dims, b.dims));
  BroadcastCursor ca(a.dims, out.dims), cb(b.dims, out.dims);
  for (int64_t i = 0; i < out.numel(); ++i) out[i] = f(a[ca.next()], b[cb.next()]);
  return out;
}

}  // namespace

// x: [...]
// out: [...]
RefTensor unary(OpKind op, const RefTensor& x) {
  RefTensor out(x.dims);
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = apply_unary(op, x[i]);
  return out;
}

// a: [...a], b: [...b]
// out: broadcast([...a], [...b])
RefTensor binary(OpKind op, const RefTensor& a, const RefTensor& b) {
  return broadcast_binary(a, b, [op](double x, double y) { return apply_binary(op, x, y); });
}

// a: [...a], b: [...b]
// out: broadcast([...a], [...b]), 1 or 0
RefTensor compare(OpKind op, const RefTensor& a, const RefTensor& b) {
  return broadcast_binary(a, b,
                          [op](double x, double y) { return apply_compare(op, x, y) ? 1.0 : 0.0; });
}

// cond: [...c], a: [...a], b: [...b]
// out: broadcast([...c], broadcast([...a], [...b]))
RefTensor select(const RefTensor& cond, const RefTensor& a, const RefTensor& b) {
  RefTensor out(*broadcast_dims(cond.dims, *broadcast_dims(a.dims, b.dims)));
  BroadcastCursor cc(cond.dims, out.dims), ca(a.dims, out.dims), cb(b.dims, out.dims);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double c = cond[cc.next()], va = a[ca.next()], vb = b[cb.next()];
    out[i] = c != 0 ? va : vb;  // every cursor advances on every element
  }
  return out;
}

// out: []
RefTensor constant(const ConstantAttrs& at) { return RefTensor(Dims{}, {at.value}); }

// x: [...], scale: broadcastable to [...] (or null)
// out: [...]
RefTensor cast(const RefTensor& x, const RefTensor* scale) {
  if (!scale) return x;
  return broadcast_binary(x, *scale, [](double v, double s) { return v * s; });
}

}  // namespace sinter::ref
