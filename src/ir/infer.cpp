// Shape and dtype inference, one function per op family. Each check that fails says which node,
// which input tensor, what was expected and what was found.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "ir/node_checker.hpp"
#include "sinter/error.hpp"
#include "sinter/graph.hpp"

namespace sinter {
namespace {

std::vector<TensorType> infer_matmul(const NodeChecker& c) {
  const auto& at = c.attrs<MatmulAttrs>();
  c.expect_min_rank(0, 2);
  c.expect_min_rank(1, 2);
  c.expect_float(0);
  c.expect_float(1);
  c.expect_same_dtype(0, 1);
  const Dims& a = c.in(0).dims;
  const Dims& b = c.in(1).dims;
  const int64_t m = a[a.size() - 2], k = a.back(), kb = b[b.size() - 2], n = b.back();
  if (k != kb) {
    c.fail("contraction sizes differ: " + c.in_name(0) + " is [..., M=" + std::to_string(m) +
           ", K=" + std::to_string(k) + "] but " + c.in_name(1) + " is [..., K=" +
           std::to_string(kb) + ", N=" + std::to_string(n) + "]");
  }
  Dims batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  auto batch = broadcast_dims(batch_a, batch_b);
  if (!batch) {
    c.fail("batch dimensions " + dims_to_string(batch_a) + " of " + c.in_name(0) + " and " +
           dims_to_string(batch_b) + " of " + c.in_name(1) + " do not broadcast");
  }
  if (at.compute == ComputeType::tf32 && c.in(0).dtype != DType::f32) {
    c.fail("compute type tf32 needs f32 inputs; found " + std::string(to_string(c.in(0).dtype)));
  }
  Dims out = *batch;
  out.push_back(m);
  out.push_back(n);
  DType od = at.out_dtype.value_or(c.in(0).dtype);
  if (!is_float(od)) c.fail("out_dtype must be a float dtype; found " + std::string(to_string(od)));
  return {{od, out}};
}

std::vector<TensorType> infer_conv2d(const NodeChecker& c) {
  const auto& at = c.attrs<Conv2dAttrs>();
  c.expect_rank(0, 4, "NHWC activations");
  c.expect_rank(1, 4, "KRSC weights");
  c.expect_float(0);
  c.expect_float(1);
  c.expect_same_dtype(0, 1);
  const Dims& x = c.in(0).dims;
  const Dims& w = c.in(1).dims;
  for (int i = 0; i < 2; ++i) {
    if (at.stride[i] < 1) c.fail("stride must be >= 1; found " + std::to_string(at.stride[i]));
    if (at.dilation[i] < 1) {
      c.fail("dilation must be >= 1; found " + std::to_string(at.dilation[i]));
    }
    if (at.pad_begin[i] < 0 || at.pad_end[i] < 0) c.fail("padding must be >= 0");
  }
  if (at.groups < 1) c.fail("groups must be >= 1; found " + std::to_string(at.groups));
  const int64_t n = x[0], h = x[1], wd = x[2], cin = x[3];
  const int64_t k = w[0], r = w[1], s = w[2], cg = w[3];
  if (cin % at.groups != 0) {
    c.fail("input channels C=" + std::to_string(cin) + " of " + c.in_name(0) +
           " are not divisible by groups=" + std::to_string(at.groups));
  }
  if (k % at.groups != 0) {
    c.fail("output channels K=" + std::to_string(k) + " of " + c.in_name(1) +
           " are not divisible by groups=" + std::to_string(at.groups));
  }
  if (cg != cin / at.groups) {
    c.fail(c.in_name(1) + " has C/groups=" + std::to_string(cg) + " channels but " +
           c.in_name(0) + " has C=" + std::to_string(cin) + " with groups=" +
           std::to_string(at.groups) + ", so " + std::to_string(cin / at.groups) +
           " were expected");
  }
  auto out_extent = [&](int i, int64_t in, int64_t filt) {
    // dilation * (filt - 1) can pass int64 for absurd (e.g. file-supplied) attributes.
    int64_t span = 0;
    const bool huge = __builtin_mul_overflow(at.dilation[i], filt - 1, &span) ||
                      __builtin_add_overflow(span, 1, &span);
    const int64_t padded = in + at.pad_begin[i] + at.pad_end[i];
    if (huge || padded < span) {
      c.fail(std::string(i == 0 ? "height" : "width") + ": the dilated filter spans " +
             (huge ? "more than 2^63" : std::to_string(span)) +
             " but the padded input is only " + std::to_string(padded) +
             " (input " + std::to_string(in) + ", padding " + std::to_string(at.pad_begin[i]) +
             "+" + std::to_string(at.pad_end[i]) + ")");
    }
    return (padded - span) / at.stride[i] + 1;
  };
  const int64_t p = out_extent(0, h, r), q = out_extent(1, wd, s);
  DType od = at.out_dtype.value_or(c.in(0).dtype);
  if (!is_float(od)) c.fail("out_dtype must be a float dtype; found " + std::string(to_string(od)));
  return {{od, {n, p, q, k}}};
}

std::vector<TensorType> infer_sdpa(const NodeChecker& c) {
  const auto& at = c.attrs<SdpaAttrs>();
  const size_t want = at.has_bias ? 4 : 3;
  if (c.arity() != want) {
    c.fail("expects " + std::to_string(want) + " inputs (q, k, v" +
           (at.has_bias ? ", bias" : "") + ") because has_bias is " +
           (at.has_bias ? "true" : "false") + "; found " + std::to_string(c.arity()));
  }
  c.expect_rank(0, 4, "[B, H, Sq, D]");
  c.expect_rank(1, 4, "[B, Hkv, Skv, D]");
  c.expect_rank(2, 4, "[B, Hkv, Skv, Dv]");
  for (size_t i = 0; i < 3; ++i) c.expect_float(i);
  c.expect_same_dtype(0, 1);
  c.expect_same_dtype(0, 2);
  const Dims& q = c.in(0).dims;
  const Dims& k = c.in(1).dims;
  const Dims& v = c.in(2).dims;
  const int64_t b = q[0], h = q[1], sq = q[2], d = q[3];
  if (k[0] != b || v[0] != b) {
    c.fail("batch sizes differ: q has B=" + std::to_string(b) + ", k has " +
           std::to_string(k[0]) + ", v has " + std::to_string(v[0]));
  }
  if (k[1] != v[1]) {
    c.fail("k has Hkv=" + std::to_string(k[1]) + " heads but v has " + std::to_string(v[1]));
  }
  if (h % k[1] != 0) {
    c.fail("query heads H=" + std::to_string(h) + " are not a multiple of key/value heads Hkv=" +
           std::to_string(k[1]) + " (GQA needs H % Hkv == 0)");
  }
  if (k[2] != v[2]) {
    c.fail("k has Skv=" + std::to_string(k[2]) + " but v has " + std::to_string(v[2]));
  }
  if (k[3] != d) {
    c.fail("q has head dim D=" + std::to_string(d) + " but k has " + std::to_string(k[3]));
  }
  if (at.scale && !std::isfinite(*at.scale)) c.fail("scale must be finite");
  const int64_t skv = k[2], dv = v[3];
  if (at.has_bias) {
    const Dims scores{b, h, sq, skv};
    const Dims got = c.broadcast(3, scores, "the scores [B, H, Sq, Skv]");
    if (got != scores) {
      c.fail("bias " + c.in_name(3) + " with dims " + dims_to_string(c.in(3).dims) +
             " would enlarge the scores " + dims_to_string(scores));
    }
    if (!is_float(c.in(3).dtype) && c.in(3).dtype != DType::boolean) {
      c.fail("bias must be a float (additive) or bool (keep-mask) tensor; found " +
             std::string(to_string(c.in(3).dtype)));
    }
  }
  std::vector<TensorType> out{{c.in(0).dtype, {b, h, sq, dv}}};
  if (at.emit_stats) out.push_back({DType::f32, {b, h, sq, 1}});
  return out;
}

bool unary_allows_integers(OpKind op) {
  return op == OpKind::identity || op == OpKind::relu || op == OpKind::abs ||
         op == OpKind::neg || op == OpKind::square;
}

std::vector<TensorType> infer_unary(const NodeChecker& c, OpKind op) {
  const DType t = c.in(0).dtype;
  if (t == DType::boolean && op != OpKind::identity) c.fail("does not take bool input");
  if (is_integer(t) && !unary_allows_integers(op)) {
    c.fail(c.in_name(0) + " has integer dtype " + std::string(to_string(t)) +
           "; this op needs a float (insert a cast)");
  }
  return {{t, c.in(0).dims}};
}

std::vector<TensorType> infer_binary(const NodeChecker& c, OpKind op) {
  c.expect_same_dtype(0, 1);
  const DType t = c.in(0).dtype;
  const bool int_ok = op == OpKind::add || op == OpKind::sub || op == OpKind::mul ||
                      op == OpKind::max || op == OpKind::min;
  if (t == DType::boolean || (is_integer(t) && !int_ok)) {
    c.fail("does not take " + std::string(to_string(t)) + " operands");
  }
  return {{t, c.broadcast(0, c.in(1).dims, "input 1 '" + c.in(1).name + "'")}};
}

std::vector<TensorType> infer_compare(const NodeChecker& c) {
  c.expect_same_dtype(0, 1);
  return {{DType::boolean, c.broadcast(0, c.in(1).dims, "input 1 '" + c.in(1).name + "'")}};
}

std::vector<TensorType> infer_select(const NodeChecker& c) {
  if (c.in(0).dtype != DType::boolean) {
    c.fail("the condition " + c.in_name(0) + " must be bool; found " +
           std::string(to_string(c.in(0).dtype)));
  }
  c.expect_same_dtype(1, 2);
  Dims d = c.broadcast(1, c.in(2).dims, "input 2 '" + c.in(2).name + "'");
  d = c.broadcast(0, d, "the values");
  return {{c.in(1).dtype, d}};
}

std::vector<TensorType> infer_constant(const NodeChecker& c) {
  const auto& at = c.attrs<ConstantAttrs>();
  if (std::isnan(at.value) && !is_float(at.dtype)) c.fail("a NaN constant needs a float dtype");
  return {{at.dtype, {}}};
}

std::vector<TensorType> infer_cast(const NodeChecker& c) {
  const auto& at = c.attrs<CastAttrs>();
  if (c.arity() == 2) {
    if (!is_float(c.in(1).dtype)) {
      c.fail("the scale " + c.in_name(1) + " must be a float tensor; found " +
             std::string(to_string(c.in(1).dtype)));
    }
    const auto d = broadcast_dims(c.in(1).dims, c.in(0).dims);
    if (!d || *d != c.in(0).dims) {
      c.fail("the scale " + c.in_name(1) + " with dims " + dims_to_string(c.in(1).dims) +
             " would enlarge the input " + dims_to_string(c.in(0).dims));
    }
  }
  return {{at.dtype, c.in(0).dims}};
}

std::vector<TensorType> infer_reduce(const NodeChecker& c, OpKind op) {
  const auto& at = c.attrs<ReduceAttrs>();
  const Dims& x = c.in(0).dims;
  const auto rank = static_cast<int64_t>(x.size());
  if (c.in(0).dtype == DType::boolean) c.fail("does not take bool input");
  if (op == OpKind::reduce_mean && !is_float(c.in(0).dtype)) c.fail("mean needs a float input");
  for (size_t i = 0; i < at.axes.size(); ++i) {
    if (at.axes[i] < 0 || at.axes[i] >= rank) {
      c.fail("axis " + std::to_string(at.axes[i]) + " is out of range for " + c.in_name(0) +
             " of rank " + std::to_string(rank));
    }
    if (i > 0 && at.axes[i] <= at.axes[i - 1]) c.fail("axes must be sorted and unique");
  }
  std::vector<bool> reduced(x.size(), at.axes.empty());
  for (int64_t a : at.axes) reduced[a] = true;
  Dims out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(x[i]);
    } else if (at.keepdim) {
      out.push_back(1);
    }
  }
  return {{at.out_dtype.value_or(c.in(0).dtype), out}};
}

std::vector<TensorType> infer_gather(const NodeChecker& c) {
  const auto& at = c.attrs<GatherAttrs>();
  const Dims& x = c.in(0).dims;
  const Dims& idx = c.in(1).dims;
  const auto rank = static_cast<int64_t>(x.size());
  if (rank == 0) c.fail(c.in_name(0) + " is a scalar; gather picks slices along one of its axes");
  const DType it = c.in(1).dtype;
  if (it != DType::i32 && it != DType::i64) {
    c.fail("indices " + c.in_name(1) + " are " + std::string(to_string(it)) + "; they must be i32 or i64");
  }
  if (at.axis < 0 || at.axis >= rank) {
    c.fail("axis " + std::to_string(at.axis) + " is out of range for " + c.in_name(0) + " of rank " +
           std::to_string(rank));
  }
  Dims out(x.begin(), x.begin() + at.axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), x.begin() + at.axis + 1, x.end());
  if (static_cast<int>(out.size()) > kMaxRank) {
    c.fail("gives rank " + std::to_string(out.size()) + " (" + c.in_name(0) + "'s rank - 1 + the indices' rank); at most " +
           std::to_string(kMaxRank) + " is supported");
  }
  return {{c.in(0).dtype, out}};
}

// The index is i64 as in torch.argmax; the slice length is bounded so an index fits 32 bits
// (the jit kernel packs (value, index) pairs into 64-bit words).
std::vector<TensorType> infer_arg_reduce(const NodeChecker& c) {
  const auto& at = c.attrs<ArgReduceAttrs>();
  const Dims& x = c.in(0).dims;
  const auto rank = static_cast<int64_t>(x.size());
  if (rank == 0) c.fail(c.in_name(0) + " is a scalar; it needs an axis to reduce along");
  c.expect_float(0);
  if (at.axis < 0 || at.axis >= rank) {
    c.fail("axis " + std::to_string(at.axis) + " is out of range for " + c.in_name(0) +
           " of rank " + std::to_string(rank));
  }
  if (x[static_cast<size_t>(at.axis)] > int64_t{0xffffffff}) {
    c.fail("reduces " + std::to_string(x[static_cast<size_t>(at.axis)]) + " elements along axis " +
           std::to_string(at.axis) + "; at most 2^32 - 1 are supported");
  }
  Dims out;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != at.axis) {
      out.push_back(x[static_cast<size_t>(i)]);
    } else if (at.keepdim) {
      out.push_back(1);
    }
  }
  return {{DType::i64, out}};
}

std::vector<TensorType> infer_softmax(const NodeChecker& c) {
  c.expect_min_rank(0, 1);
  c.expect_float(0);
  return {{c.in(0).dtype, c.in(0).dims}};
}

std::vector<TensorType> infer_norm(const NodeChecker& c) {
  const auto& at = c.attrs<NormAttrs>();
  const size_t want = at.has_bias ? 3 : 2;
  if (c.arity() != want) {
    c.fail("expects " + std::to_string(want) + " inputs (x, weight" +
           (at.has_bias ? ", bias" : "") + ") because has_bias is " +
           (at.has_bias ? "true" : "false") + "; found " + std::to_string(c.arity()));
  }
  c.expect_min_rank(0, 1);
  c.expect_float(0);
  if (!(at.epsilon >= 0) || !std::isfinite(at.epsilon)) c.fail("epsilon must be finite and >= 0");
  const int64_t ch = c.in(0).dims.back();
  for (size_t i = 1; i < want; ++i) {
    c.expect_float(i);
    if (c.in(i).dims != Dims{ch}) {
      c.fail(c.in_name(i) + " must have dims [" + std::to_string(ch) +
             "] (the last dimension of the input); found " + dims_to_string(c.in(i).dims));
    }
  }
  return {{c.in(0).dtype, c.in(0).dims}};
}

std::vector<TensorType> infer_rope(const NodeChecker& c) {
  c.expect_min_rank(0, 1);
  for (size_t i = 0; i < 3; ++i) c.expect_float(i);
  const Dims& x = c.in(0).dims;
  const int64_t d = x.back();
  if (c.in(1).dims != c.in(2).dims) {
    c.fail("cos " + dims_to_string(c.in(1).dims) + " and sin " + dims_to_string(c.in(2).dims) +
           " must have the same dims");
  }
  c.expect_min_rank(1, 1);
  const int64_t half = c.in(1).dims.back();
  if (2 * half > d) {
    c.fail("cos/sin have " + std::to_string(half) + " frequencies, so they rotate " +
           std::to_string(2 * half) + " channels, more than the " + std::to_string(d) +
           " channels of " + c.in_name(0));
  }
  Dims lead_x(x.begin(), x.end() - 1);
  Dims lead_cs(c.in(1).dims.begin(), c.in(1).dims.end() - 1);
  auto b = broadcast_dims(lead_x, lead_cs);
  if (!b || *b != lead_x) {
    c.fail("the leading dims " + dims_to_string(lead_cs) + " of cos/sin must broadcast to " +
           dims_to_string(lead_x) + ", the leading dims of " + c.in_name(0));
  }
  return {{c.in(0).dtype, x}};
}

std::vector<TensorType> infer_layout(const NodeChecker& c, OpKind op, const Graph& g,
                                     const Node& n) {
  const Dims& x = c.in(0).dims;
  const auto rank = static_cast<int64_t>(x.size());
  switch (op) {
    case OpKind::reshape: {
      const auto& at = c.attrs<ReshapeAttrs>();
      for (int64_t d : at.dims) {
        if (d < 1) c.fail("target dims " + dims_to_string(at.dims) + " must all be >= 1");
      }
      if (num_elements(at.dims) != num_elements(x)) {
        c.fail("cannot reshape " + c.in_name(0) + " with dims " + dims_to_string(x) + " (" +
               std::to_string(num_elements(x)) + " elements) to " + dims_to_string(at.dims) +
               " (" + std::to_string(num_elements(at.dims)) + " elements)");
      }
      return {{c.in(0).dtype, at.dims}};
    }
    case OpKind::permute: {
      const auto& at = c.attrs<PermuteAttrs>();
      if (static_cast<int64_t>(at.perm.size()) != rank) {
        c.fail("perm has " + std::to_string(at.perm.size()) + " entries but " + c.in_name(0) +
               " has rank " + std::to_string(rank));
      }
      std::vector<bool> seen(x.size(), false);
      Dims out;
      for (int64_t p : at.perm) {
        if (p < 0 || p >= rank || seen[p]) {
          c.fail("perm " + dims_to_string(at.perm) + " is not a permutation of 0.." +
                 std::to_string(rank - 1));
        }
        seen[p] = true;
        out.push_back(x[p]);
      }
      return {{c.in(0).dtype, out}};
    }
    case OpKind::slice: {
      const auto& at = c.attrs<SliceAttrs>();
      if (static_cast<int64_t>(at.starts.size()) != rank ||
          static_cast<int64_t>(at.ends.size()) != rank ||
          static_cast<int64_t>(at.steps.size()) != rank) {
        c.fail("starts, ends and steps need one entry per axis of " + c.in_name(0) + " (rank " +
               std::to_string(rank) + ")");
      }
      Dims out;
      for (int64_t i = 0; i < rank; ++i) {
        if (at.steps[i] < 1) c.fail("step on axis " + std::to_string(i) + " must be >= 1");
        if (at.starts[i] < 0 || at.ends[i] > x[i] || at.starts[i] >= at.ends[i]) {
          c.fail("axis " + std::to_string(i) + ": range [" + std::to_string(at.starts[i]) +
                 ", " + std::to_string(at.ends[i]) + ") is empty or outside [0, " +
                 std::to_string(x[i]) + ")");
        }
        out.push_back((at.ends[i] - at.starts[i] + at.steps[i] - 1) / at.steps[i]);
      }
      return {{c.in(0).dtype, out}};
    }
    case OpKind::concat: {
      const auto& at = c.attrs<ConcatAttrs>();
      if (at.axis < 0 || at.axis >= rank) {
        c.fail("axis " + std::to_string(at.axis) + " is out of range for rank " +
               std::to_string(rank));
      }
      Dims out = x;
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        c.expect_same_dtype(0, i);
        const Dims& y = g.tensor(n.inputs[i]).dims;
        bool ok = y.size() == x.size();
        for (size_t d = 0; ok && d < x.size(); ++d) {
          if (static_cast<int64_t>(d) != at.axis && y[d] != x[d]) ok = false;
        }
        if (!ok) {
          c.fail(c.in_name(i) + " has dims " + dims_to_string(y) + " but " + c.in_name(0) +
                 " has " + dims_to_string(x) + "; all dims but axis " +
                 std::to_string(at.axis) + " must match");
        }
        out[at.axis] += y[at.axis];
      }
      return {{c.in(0).dtype, out}};
    }
    default: break;
  }
  c.fail("is not a layout op");
}

}  // namespace

std::vector<TensorType> infer_node(const Graph& g, const Node& n) {
  NodeChecker c(g, n);
  const OpInfo& info = op_info(n.op);
  const auto arity = static_cast<int>(n.inputs.size());
  if (arity < info.min_inputs || (info.max_inputs >= 0 && arity > info.max_inputs)) {
    std::string want = info.min_inputs == info.max_inputs
                           ? std::to_string(info.min_inputs)
                           : info.max_inputs < 0
                                 ? "at least " + std::to_string(info.min_inputs)
                                 : std::to_string(info.min_inputs) + " to " +
                                       std::to_string(info.max_inputs);
    c.fail("expects " + want + " inputs; found " + std::to_string(arity));
  }
  if (n.attrs.index() != default_attrs(n.op).index()) c.fail("has attributes of the wrong kind");
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!c.in(i).known) c.fail(c.in_name(i) + " has no known type yet (it is never produced)");
  }
  switch (info.cls) {
    case OpClass::matmul: return infer_matmul(c);
    case OpClass::conv: return infer_conv2d(c);
    case OpClass::sdpa: return infer_sdpa(c);
    case OpClass::unary: return infer_unary(c, n.op);
    case OpClass::binary: return infer_binary(c, n.op);
    case OpClass::compare: return infer_compare(c);
    case OpClass::select: return infer_select(c);
    case OpClass::constant: return infer_constant(c);
    case OpClass::cast: return infer_cast(c);
    case OpClass::reduce: return infer_reduce(c, n.op);
    case OpClass::arg_reduce: return infer_arg_reduce(c);
    case OpClass::softmax: return infer_softmax(c);
    case OpClass::norm: return infer_norm(c);
    case OpClass::rope: return infer_rope(c);
    case OpClass::layout: return infer_layout(c, n.op, g, n);
    case OpClass::collective: return infer_collective(c, n.op);
    case OpClass::gather: return infer_gather(c);
  }
  c.fail("has no inference rule");
}

}  // namespace sinter
