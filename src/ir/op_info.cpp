// The op table: one row per op, the single place that names ops and fixes their arity.
#include <array>

#include "sinter/error.hpp"
#include "sinter/ops.hpp"

namespace sinter {
namespace {

constexpr OpInfo kOps[] = {
    {OpKind::matmul, "matmul", OpClass::matmul, 2, 2},
    {OpKind::conv2d, "conv2d", OpClass::conv, 2, 2},
    {OpKind::sdpa, "sdpa", OpClass::sdpa, 3, 4},
    {OpKind::identity, "identity", OpClass::unary, 1, 1},
    {OpKind::relu, "relu", OpClass::unary, 1, 1},
    {OpKind::gelu, "gelu", OpClass::unary, 1, 1},
    {OpKind::gelu_tanh, "gelu_tanh", OpClass::unary, 1, 1},
    {OpKind::silu, "silu", OpClass::unary, 1, 1},
    {OpKind::sigmoid, "sigmoid", OpClass::unary, 1, 1},
    {OpKind::tanh, "tanh", OpClass::unary, 1, 1},
    {OpKind::exp, "exp", OpClass::unary, 1, 1},
    {OpKind::log, "log", OpClass::unary, 1, 1},
    {OpKind::sqrt, "sqrt", OpClass::unary, 1, 1},
    {OpKind::rsqrt, "rsqrt", OpClass::unary, 1, 1},
    {OpKind::abs, "abs", OpClass::unary, 1, 1},
    {OpKind::neg, "neg", OpClass::unary, 1, 1},
    {OpKind::reciprocal, "reciprocal", OpClass::unary, 1, 1},
    {OpKind::square, "square", OpClass::unary, 1, 1},
    {OpKind::add, "add", OpClass::binary, 2, 2},
    {OpKind::sub, "sub", OpClass::binary, 2, 2},
    {OpKind::mul, "mul", OpClass::binary, 2, 2},
    {OpKind::div, "div", OpClass::binary, 2, 2},
    {OpKind::max, "max", OpClass::binary, 2, 2},
    {OpKind::min, "min", OpClass::binary, 2, 2},
    {OpKind::pow, "pow", OpClass::binary, 2, 2},
    {OpKind::eq, "eq", OpClass::compare, 2, 2},
    {OpKind::ne, "ne", OpClass::compare, 2, 2},
    {OpKind::lt, "lt", OpClass::compare, 2, 2},
    {OpKind::le, "le", OpClass::compare, 2, 2},
    {OpKind::gt, "gt", OpClass::compare, 2, 2},
    {OpKind::ge, "ge", OpClass::compare, 2, 2},
    {OpKind::select, "select", OpClass::select, 3, 3},
    {OpKind::constant, "constant", OpClass::constant, 0, 0},
    {OpKind::cast, "cast", OpClass::cast, 1, 2},
    {OpKind::reduce_sum, "reduce_sum", OpClass::reduce, 1, 1},
    {OpKind::reduce_mean, "reduce_mean", OpClass::reduce, 1, 1},
    {OpKind::reduce_max, "reduce_max", OpClass::reduce, 1, 1},
    {OpKind::reduce_min, "reduce_min", OpClass::reduce, 1, 1},
    {OpKind::reduce_amax, "reduce_amax", OpClass::reduce, 1, 1},
    {OpKind::argmax, "argmax", OpClass::arg_reduce, 1, 1},
    {OpKind::argmin, "argmin", OpClass::arg_reduce, 1, 1},
    {OpKind::softmax, "softmax", OpClass::softmax, 1, 1},
    {OpKind::layernorm, "layernorm", OpClass::norm, 2, 3},
    {OpKind::rmsnorm, "rmsnorm", OpClass::norm, 2, 3},
    {OpKind::rope, "rope", OpClass::rope, 3, 3},
    {OpKind::reshape, "reshape", OpClass::layout, 1, 1},
    {OpKind::permute, "permute", OpClass::layout, 1, 1},
    {OpKind::slice, "slice", OpClass::layout, 1, 1},
    {OpKind::concat, "concat", OpClass::layout, 1, -1},
    {OpKind::gather, "gather", OpClass::gather, 2, 2},
    {OpKind::all_reduce, "all_reduce", OpClass::collective, 1, 1},
    {OpKind::all_gather, "all_gather", OpClass::collective, 1, 1},
    {OpKind::reduce_scatter, "reduce_scatter", OpClass::collective, 1, 1},
};

}  // namespace

const OpInfo& op_info(OpKind op) {
  for (const OpInfo& info : kOps) {
    if (info.kind == op) return info;
  }
  throw Error(ErrorCode::internal, "op_info: op " + std::to_string(static_cast<int>(op)) +
                                       " has no row in the op table");
}

std::string_view to_string(OpKind op) { return op_info(op).name; }

std::optional<OpKind> parse_op(std::string_view name) {
  for (const OpInfo& info : kOps) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

std::vector<OpKind> all_ops() {
  std::vector<OpKind> ops;
  for (const OpInfo& info : kOps) ops.push_back(info.kind);
  return ops;
}

bool is_pointwise(OpKind op) {
  switch (op_info(op).cls) {
    case OpClass::unary:
    case OpClass::binary:
    case OpClass::compare:
    case OpClass::select:
    case OpClass::cast: return true;
    default: return false;
  }
}

std::string_view to_string(ComputeType c) {
  switch (c) {
    case ComputeType::f32: return "f32";
    case ComputeType::tf32: return "tf32";
    case ComputeType::f16: return "f16";
  }
  return "?";
}

std::optional<ComputeType> parse_compute_type(std::string_view name) {
  for (ComputeType c : {ComputeType::f32, ComputeType::tf32, ComputeType::f16}) {
    if (to_string(c) == name) return c;
  }
  return std::nullopt;
}

std::string_view to_string(CausalMask c) {
  switch (c) {
    case CausalMask::none: return "none";
    case CausalMask::top_left: return "top_left";
    case CausalMask::bottom_right: return "bottom_right";
  }
  return "?";
}

std::optional<CausalMask> parse_causal(std::string_view name) {
  for (CausalMask c : {CausalMask::none, CausalMask::top_left, CausalMask::bottom_right}) {
    if (to_string(c) == name) return c;
  }
  return std::nullopt;
}

std::string_view to_string(CollectiveReduce r) {
  switch (r) {
    case CollectiveReduce::sum: return "sum";
    case CollectiveReduce::max: return "max";
  }
  return "?";
}

std::optional<CollectiveReduce> parse_collective_reduce(std::string_view name) {
  for (CollectiveReduce r : {CollectiveReduce::sum, CollectiveReduce::max}) {
    if (to_string(r) == name) return r;
  }
  return std::nullopt;
}

Attrs default_attrs(OpKind op) {
  switch (op_info(op).cls) {
    case OpClass::matmul: return MatmulAttrs{};
    case OpClass::conv: return Conv2dAttrs{};
    case OpClass::sdpa: return SdpaAttrs{};
    case OpClass::constant: return ConstantAttrs{};
    case OpClass::cast: return CastAttrs{};
    case OpClass::reduce: return ReduceAttrs{};
    case OpClass::arg_reduce: return ArgReduceAttrs{};
    case OpClass::norm: return NormAttrs{};
    case OpClass::rope: return RopeAttrs{};
    case OpClass::collective: return CollectiveAttrs{};
    case OpClass::gather: return GatherAttrs{};
    case OpClass::layout:
      switch (op) {
        case OpKind::reshape: return ReshapeAttrs{};
        case OpKind::permute: return PermuteAttrs{};
        case OpKind::slice: return SliceAttrs{};
        default: return ConcatAttrs{};
      }
    default: return std::monostate{};
  }
}

}  // namespace sinter
