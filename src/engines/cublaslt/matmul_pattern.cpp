#include "engines/cublaslt/matmul_pattern.hpp"

#include <algorithm>
#include <cmath>

#include "sinter/error.hpp"

namespace sinter::cublaslt {
namespace {

int input_index(const fuse::Region& r, TensorId t) {
  auto it = std::find(r.inputs.begin(), r.inputs.end(), t);
  return it == r.inputs.end() ? -1 : static_cast<int>(it - r.inputs.begin());
}

int output_index(const fuse::Region& r, TensorId t) {
  auto it = std::find(r.outputs.begin(), r.outputs.end(), t);
  return it == r.outputs.end() ? -1 : static_cast<int>(it - r.outputs.begin());
}

// One stride per linear batch index over `batch` (the output's batch dims), or nullopt when the
// operand's broadcast strides cannot be walked with one stride.
std::optional<int64_t> batch_stride(const Dims& op_dims, const Dims& op_strides, const Dims& batch) {
  const size_t rank = op_dims.size() - 2;
  Dims bs(batch.size(), 0);
  for (size_t i = 0; i < rank; ++i) {
    const size_t at = batch.size() - rank + i;
    bs[at] = op_dims[i] == 1 ? 0 : op_strides[i];
  }
  int64_t stride = -1, span = 1;
  for (size_t i = batch.size(); i-- > 0;) {
    if (batch[i] == 1) continue;
    if (stride < 0) {
      stride = bs[i];
    } else if (bs[i] != stride * span) {
      return std::nullopt;
    }
    span *= batch[i];
  }
  return stride < 0 ? 0 : stride;
}

// The column-major layout of a row-major-logical [rows, cols] operand that cuBLAS should see as
// its transpose ([cols, rows]).
std::optional<OperandLayout> transposed_view(const TensorInfo& t, int input) {
  const size_t n = t.dims.size();
  const int64_t rows = t.dims[n - 2], cols = t.dims[n - 1];
  const int64_t sr = t.strides[n - 2], sc = t.strides[n - 1];
  OperandLayout l;
  l.input = input;
  l.dtype = t.dtype;
  if ((sc == 1 || cols == 1) && (sr >= cols || rows == 1)) {
    // row-major storage: as column major it already is the transpose, [cols, rows]
    l.rows = cols;
    l.cols = rows;
    l.ld = rows == 1 ? cols : sr;
    l.transpose = false;
    return l;
  }
  if ((sr == 1 || rows == 1) && (sc >= rows || cols == 1)) {
    // column-major storage [rows, cols]: cuBLAS transposes it
    l.rows = rows;
    l.cols = cols;
    l.ld = cols == 1 ? rows : sc;
    l.transpose = true;
    return l;
  }
  return std::nullopt;
}

bool supported_input(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || is_fp8(t);
}

// The region's outputs besides D: the global amax of D (which cuBLASLt computes, in f32 before
// D's conversion, for fp8 matmuls with an fp8 D; with a bf16 D its heuristic answers
// INVALID_VALUE) and GELU's pre-activation as the aux output. Sets p's output indices; "" or why not.
std::string match_outputs(const Graph& g, const fuse::Region& r, TensorId d, TensorId pre_activation, bool fp8,
                          MatmulPattern& p) {
  const TensorInfo& out = g.tensor(g.node(r.anchor).outputs[0]);
  for (const fuse::ExitReduce& x : r.reductions) {
    const Node& red = g.node(x.node);
    const TensorInfo& red_out = g.tensor(red.outputs[0]);
    if (red.op != OpKind::reduce_amax || x.pattern != fuse::ExitReduction::global || red.inputs[0] != d) {
      return "exit reduction '" + red.name + "' is not the global amax of D (the only one cuBLASLt computes)";
    }
    if (!fp8 || !is_fp8(out.dtype)) {
      return "cuBLASLt computes the amax of D ('" + red.name + "') only for fp8 inputs and an fp8 D";
    }
    if (red_out.dtype != DType::f32) {
      return "amax '" + red.name + "' is " + std::string(to_string(red_out.dtype)) + "; cuBLASLt writes the amax of D as f32";
    }
    p.amax_output = output_index(r, red.outputs[0]);
    if (p.amax_output < 0) return "amax '" + red.name + "' is not among the region's outputs";
  }
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    if (static_cast<int>(i) == p.output || static_cast<int>(i) == p.amax_output) continue;
    if (r.outputs[i] == pre_activation && p.activation == Activation::gelu_tanh) {
      p.aux_output = static_cast<int>(i);
      continue;
    }
    return "the region also stores '" + g.tensor(r.outputs[i]).name + "', which no cuBLASLt epilogue writes";
  }
  if (p.aux_output >= 0 && p.bias_input < 0) return "a GELU aux output needs a bias in cuBLASLt";
  return "";
}

// "bias+residual+gelu_tanh", "none", ...: what the pattern's epilogue does, for descriptions.
std::string epilogue_name(const MatmulPattern& p) {
  std::string name = p.residual_input >= 0 && p.bias_input >= 0 ? "bias+residual"
                     : p.residual_input >= 0                      ? "residual"
                     : p.bias_input >= 0                          ? "bias"
                                                                  : "";
  if (p.activation != Activation::none) {
    name += std::string(name.empty() ? "" : "+") + (p.activation == Activation::relu ? "relu" : "gelu_tanh");
  }
  if (p.alpha != 1.0f) name += std::string(name.empty() ? "" : "+") + "alpha";
  if (p.aux_output >= 0) name += " (aux)";
  if (p.amax_output >= 0) name += std::string(name.empty() ? "" : "+") + "amax_d";
  return name.empty() ? "none" : name;
}

}  // namespace

MatchResult match_matmul(const Graph& g, const fuse::Region& r) {
  auto no = [](std::string why) { return MatchResult{std::nullopt, std::move(why)}; };
  if (r.kind != fuse::RegionKind::matmul) return no("not a matmul region");
  if (!r.prologue.empty()) return no("a prologue on A (a folded norm) is not offered");
  const Node& mm = g.node(r.anchor);
  const auto& at = std::get<MatmulAttrs>(mm.attrs);
  const TensorInfo& a = g.tensor(mm.inputs[0]);
  const TensorInfo& b = g.tensor(mm.inputs[1]);
  const TensorInfo& out = g.tensor(mm.outputs[0]);
  if (!supported_input(a.dtype)) return no("input dtype " + std::string(to_string(a.dtype)) + " is not offered");
  if (at.compute == ComputeType::f16) return no("f16 accumulation is not offered");

  MatmulPattern p;
  const size_t rank = out.dims.size();
  p.m = out.dims[rank - 2];
  p.n = out.dims[rank - 1];
  p.k = a.dims.back();
  const Dims batch(out.dims.begin(), out.dims.end() - 2);
  p.batch = num_elements(batch);
  p.out_dtype = out.dtype;
  p.tf32 = at.compute == ComputeType::tf32;

  const auto la = transposed_view(b, input_index(r, mm.inputs[1]));  // A' = our B
  const auto lb = transposed_view(a, input_index(r, mm.inputs[0]));  // B' = our A
  if (!la || !lb) return no("an operand is neither row- nor column-major in its last two dims");
  const bool fp8 = is_fp8(a.dtype) || is_fp8(b.dtype);
  if (fp8 && !(la->transpose && !lb->transpose)) {
    return no("fp8 matmuls run only in cuBLASLt's TN layout: A row-major [M, K] and B k-contiguous (an [N, K] "
              "weight)");
  }
  p.a = *la;
  p.b = *lb;
  const auto sa = batch_stride(b.dims, b.strides, batch);
  const auto sb = batch_stride(a.dims, a.strides, batch);
  if (!sa || !sb) return no("the batch dims do not collapse to one strided batch");
  p.a.batch_stride = *sa;
  p.b.batch_stride = *sb;

  // The epilogue: [alpha] [bias and/or residual, either order] [activation, without a residual],
  // a chain from the matmul's output.
  TensorId cur = mm.outputs[0];
  TensorId pre_activation = cur;
  for (NodeId n : r.epilogue) {
    const Node& e = g.node(n);
    const bool reads_cur = std::find(e.inputs.begin(), e.inputs.end(), cur) != e.inputs.end();
    if (!reads_cur) return no("epilogue node '" + e.name + "' is not on the chain from the matmul");
    if (g.tensor(e.outputs[0]).dtype != out.dtype) {
      return no("epilogue node '" + e.name + "' changes the dtype (no fused cast)");
    }
    if (e.op == OpKind::mul) {
      // a scalar constant: alpha, applied to what the chain holds so far (A B, and C if added)
      const TensorId other = e.inputs[0] == cur ? e.inputs[1] : e.inputs[0];
      const NodeId producer = g.tensor(other).producer;
      const bool scalar_constant = producer >= 0 && g.node(producer).op == OpKind::constant &&
                                   num_elements(g.tensor(other).dims) == 1;
      if (!scalar_constant) return no("epilogue mul '" + e.name + "' is not by a scalar constant (cuBLASLt's alpha)");
      if (p.bias_input >= 0 || p.activation != Activation::none) {
        return no("epilogue mul '" + e.name + "' scales after the bias or activation; cuBLASLt's alpha scales "
                  "only A B and C");
      }
      // the value the graph multiplies by: the constant rounded to its dtype, as the reference
      // and the jit engine use it (0.3 in e4m3 is 0.3125)
      const auto& k = std::get<ConstantAttrs>(g.node(producer).attrs);
      const float c = static_cast<float>(round_to_dtype(k.value, k.dtype));
      if (!std::isfinite(c)) return no("epilogue mul '" + e.name + "' is by a non-finite constant");
      p.alpha *= c;
      if (p.residual_input >= 0) p.beta *= c;  // C is scaled only once it has been added
      pre_activation = e.outputs[0];
      cur = e.outputs[0];
      continue;
    }
    if (e.op == OpKind::add) {
      const TensorId other = e.inputs[0] == cur ? e.inputs[1] : e.inputs[0];
      const TensorInfo& o = g.tensor(other);
      const int idx = input_index(r, other);
      if (idx < 0 || p.activation != Activation::none) {
        return no("epilogue add '" + e.name + "' is not a bias or residual before the activation");
      }
      if (is_fp8(out.dtype)) {
        return no("epilogue add '" + e.name + "': a bias or residual with an fp8 D (cuBLASLt's bias and C are then "
                  "16-bit, not fp8)");
      }
      const bool row_vector = num_elements(o.dims) == p.n && o.dims.back() == p.n &&
                              (o.strides.back() == 1 || p.n == 1) && o.dtype == out.dtype;
      const bool full = o.dims == out.dims && o.strides == contiguous_strides(o.dims) &&
                        o.dtype == out.dtype;
      // D = act(alpha A B + beta C + bias): a bias and a residual (C) add in either order
      // (rounded once instead of after each add, within the dtype's bound).
      if (row_vector && p.bias_input < 0) {
        p.bias_input = idx;
      } else if (full && p.residual_input < 0) {
        p.residual_input = idx;
        p.beta = 1.0f;
      } else {
        return no("epilogue add '" + e.name + "' is neither a bias of length N nor a contiguous "
                  "residual of the output's shape and dtype");
      }
      pre_activation = e.outputs[0];
    } else if ((e.op == OpKind::relu || e.op == OpKind::gelu_tanh) && p.activation == Activation::none &&
               p.residual_input < 0) {
      p.activation = e.op == OpKind::relu ? Activation::relu : Activation::gelu_tanh;
    } else if (e.op == OpKind::gelu) {
      return no("cuBLASLt's GELU is the tanh approximation; '" + e.name + "' is the exact (erf) GELU");
    } else {
      return no("epilogue node '" + e.name + "' (" + std::string(to_string(e.op)) +
                ") has no cuBLASLt epilogue");
    }
    cur = e.outputs[0];
  }
  p.output = output_index(r, cur);
  if (p.output < 0) return no("the region's final value is not stored");
  if (std::string why = match_outputs(g, r, cur, pre_activation, fp8, p); !why.empty()) return no(why);
  p.epilogue_name = epilogue_name(p);
  return {p, ""};
}

}  // namespace sinter::cublaslt
