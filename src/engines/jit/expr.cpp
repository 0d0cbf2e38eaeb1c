#include "engines/jit/expr.hpp"

#include <cmath>
#include <cstdio>

#include "sinter/error.hpp"

namespace sinter::jit {

std::string storage_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8e4m3";
    case DType::fp8_e5m2: return "fp8e5m2";
    case DType::i32: return "int";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
  }
  return "float";
}

std::string compute_type(DType t) {
  if (is_float(t)) return "float";
  return storage_type(t);
}

std::string float_literal(double v) {
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(static_cast<float>(v)));
  return buf;
}

namespace {

std::string rounded(const std::string& expr, DType t) {
  if (!is_float(t) || t == DType::f32) return expr;
  return "round_to<" + storage_type(t) + ">(" + expr + ")";
}

}  // namespace

std::string intermediate(const std::string& expr, DType t, const ExprOptions& options) {
  return options.round_intermediates ? rounded(expr, t) : expr;
}

namespace {

std::string unary_expr(OpKind op, const std::string& x, DType t) {
  if (!is_float(t)) {
    switch (op) {
      case OpKind::identity: return x;
      case OpKind::relu: return "op_relu(" + x + ")";
      case OpKind::abs: return "(" + x + " < 0 ? -" + x + " : " + x + ")";
      case OpKind::neg: return "(-" + x + ")";
      case OpKind::square: return "(" + x + " * " + x + ")";
      default: break;
    }
    throw Error(ErrorCode::internal, "no integer form of " + std::string(to_string(op)));
  }
  switch (op) {
    case OpKind::identity: return x;
    case OpKind::relu: return "op_relu(" + x + ")";
    case OpKind::gelu: {
      // A 16-bit or 8-bit float GELU is rounded to 2^-9 (bf16) or 2^-11 (f16) right after, so an
      // f16 one runs op_gelu_lowp (5e-5 relative, one ex2 and 8 FFMA: kernels/common/math.cuh), a
      // bf16 or fp8 one op_gelu_bf16 (2.3e-4, 7 FFMA); an f32 one op_gelu (f32-accurate, 19
      // instructions). 4096^3 bf16 + bias + GELU + amax on the Hopper GEMM: op_gelu 1.10x
      // cuBLASLt's bare GEMM, op_gelu_lowp 1.078, op_gelu_bf16 1.073-1.076 (docs/benchmarks.md).
      if (t == DType::f16) return "op_gelu_lowp(" + x + ")";
      return (dtype_size(t) <= 2 ? "op_gelu_bf16(" : "op_gelu(") + x + ")";
    }
    case OpKind::gelu_tanh: return "op_gelu_tanh(" + x + ")";
    case OpKind::silu: return "op_silu(" + x + ")";
    case OpKind::sigmoid: return "op_sigmoid(" + x + ")";
    case OpKind::tanh: return "tanhf(" + x + ")";
    case OpKind::exp: return "expf(" + x + ")";
    case OpKind::log: return "logf(" + x + ")";
    case OpKind::sqrt: return "sqrtf(" + x + ")";
    case OpKind::rsqrt: return "op_rsqrt(" + x + ")";
    case OpKind::abs: return "fabsf(" + x + ")";
    case OpKind::neg: return "(-" + x + ")";
    case OpKind::reciprocal: return "(1.0f / " + x + ")";
    case OpKind::square: return "(" + x + " * " + x + ")";
    default: break;
  }
  throw Error(ErrorCode::internal, "not a unary op: " + std::string(to_string(op)));
}

std::string binary_expr(OpKind op, const std::string& a, const std::string& b) {
  switch (op) {
    case OpKind::add: return "(" + a + " + " + b + ")";
    case OpKind::sub: return "(" + a + " - " + b + ")";
    case OpKind::mul: return "(" + a + " * " + b + ")";
    case OpKind::div: return "(" + a + " / " + b + ")";
    case OpKind::max: return "op_max(" + a + ", " + b + ")";
    case OpKind::min: return "op_min(" + a + ", " + b + ")";
    case OpKind::pow: return "powf(" + a + ", " + b + ")";
    case OpKind::eq: return "(" + a + " == " + b + ")";
    case OpKind::ne: return "(" + a + " != " + b + ")";
    case OpKind::lt: return "(" + a + " < " + b + ")";
    case OpKind::le: return "(" + a + " <= " + b + ")";
    case OpKind::gt: return "(" + a + " > " + b + ")";
    case OpKind::ge: return "(" + a + " >= " + b + ")";
    default: break;
  }
  throw Error(ErrorCode::internal, "not a binary op: " + std::string(to_string(op)));
}

}  // namespace

std::string convert_compute(const std::string& expr, DType from, DType to) {
  if (compute_type(from) == compute_type(to)) return expr;
  if (to == DType::boolean) return "(" + expr + " != 0)";
  if (is_float(to)) return "static_cast<float>(" + expr + ")";
  // to an integer
  if (is_float(from)) return "from_float<" + storage_type(to) + ">(" + expr + ")";
  if (to == DType::i32 && from == DType::i64) {
    return "static_cast<int>(" + expr + " > 2147483647LL ? 2147483647LL : (" + expr +
           " < -2147483648LL ? -2147483648LL : " + expr + "))";
  }
  return "static_cast<" + storage_type(to) + ">(" + expr + ")";
}

std::string emit_pointwise(const Graph& g, const Node& n, const std::vector<std::string>& in,
                           const std::string& out, const ExprOptions& options) {
  const TensorInfo& o = g.tensor(n.outputs[0]);
  const std::string decl = "const " + compute_type(o.dtype) + " " + out + " = ";
  switch (op_info(n.op).cls) {
    case OpClass::constant: {
      const auto& at = std::get<ConstantAttrs>(n.attrs);
      const double v = round_to_dtype(at.value, at.dtype);
      if (is_float(at.dtype)) return decl + float_literal(v) + ";";
      if (at.dtype == DType::boolean) return decl + (v != 0 ? "true" : "false") + ";";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%lldLL", static_cast<long long>(v));
      return decl + "static_cast<" + compute_type(at.dtype) + ">(" + buf + ");";
    }
    case OpClass::unary:
      return decl + intermediate(unary_expr(n.op, in[0], o.dtype), o.dtype, options) + ";";
    case OpClass::binary:
      return decl + intermediate(binary_expr(n.op, in[0], in[1]), o.dtype, options) + ";";
    case OpClass::compare: return decl + binary_expr(n.op, in[0], in[1]) + ";";
    case OpClass::select:
      return decl + "(" + in[0] + " ? " + in[1] + " : " + in[2] + ");";
    case OpClass::cast: {
      const DType from = g.tensor(n.inputs[0]).dtype;
      // The input tensor has dtype `from`: a value kept in float registers is rounded to it
      // first, or a widening cast (bf16 -> f32) would expose digits the tensor never had.
      std::string v = options.round_intermediates ? in[0] : rounded(in[0], from);
      if (n.inputs.size() == 2) {
        v = "(" + convert_compute(v, from, DType::f32) + " * " + in[1] + ")";
        return decl + rounded(convert_compute(v, DType::f32, o.dtype), o.dtype) + ";";
      }
      return decl + rounded(convert_compute(v, from, o.dtype), o.dtype) + ";";
    }
    default: break;
  }
  throw Error(ErrorCode::internal, "emit_pointwise: '" + n.name + "' is not pointwise");
}

}  // namespace sinter::jit
