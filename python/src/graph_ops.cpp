// The Graph builder methods, one per op of include/sinter/graph.hpp, with the C++ parameters as
// keyword arguments of the same names and defaults. Each returns the new Tensor (sdpa with
// emit_stats=True returns (o, stats)); each infers its output at once and raises
// InvalidGraphError naming the node and tensor on an inconsistency.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "tensor_handle.hpp"

namespace sinter::python {
namespace {

using Handle = const TensorHandle&;
using OptionalHandle = const std::optional<TensorHandle>&;
using Pair = std::array<int64_t, 2>;

std::optional<Tensor> optional_tensor(const Graph& g, OptionalHandle h, std::string_view what) {
  if (!h) return std::nullopt;
  return tensor_of(g, *h, what);
}

void bind_anchors(nb::class_<Graph>& cls) {
  cls.def("matmul", [](Graph& g, Handle a, Handle b, ComputeType compute, std::optional<DType> out_dtype) {
        return make_handle(g, g.matmul(tensor_of(g, a, "matmul a"), tensor_of(g, b, "matmul b"),
                                       MatmulAttrs{compute, out_dtype}));
      },
      nb::arg("a"), nb::arg("b"), nb::arg("compute") = ComputeType::f32, nb::arg("out_dtype") = nb::none(),
      "a @ b over the last two axes, batch axes broadcast; out_dtype defaults to the inputs'");

  cls.def("conv2d", [](Graph& g, Handle x, Handle w, Pair stride, Pair pad_begin, Pair pad_end,
                       Pair dilation, int64_t groups, std::optional<DType> out_dtype) {
        Conv2dAttrs attrs{stride, pad_begin, pad_end, dilation, groups, out_dtype};
        return make_handle(g, g.conv2d(tensor_of(g, x, "conv2d x"), tensor_of(g, w, "conv2d w"), attrs));
      },
      nb::arg("x"), nb::arg("w"), nb::arg("stride") = Pair{1, 1}, nb::arg("pad_begin") = Pair{0, 0},
      nb::arg("pad_end") = Pair{0, 0}, nb::arg("dilation") = Pair{1, 1}, nb::arg("groups") = 1,
      nb::arg("out_dtype") = nb::none(),
      "2-D convolution, NHWC activations and KRSC filters (pad_begin: top, left; pad_end: bottom, right)");

  cls.def("sdpa", [](Graph& g, Handle q, Handle k, Handle v, std::optional<double> scale,
                     CausalMask causal, bool emit_stats, OptionalHandle bias) -> nb::object {
        SdpaAttrs attrs{scale, causal, bias.has_value(), emit_stats};
        Graph::SdpaResult r = g.sdpa(tensor_of(g, q, "sdpa q"), tensor_of(g, k, "sdpa k"),
                                     tensor_of(g, v, "sdpa v"), attrs, optional_tensor(g, bias, "sdpa bias"));
        if (!emit_stats) return nb::cast(make_handle(g, r.o));
        return nb::make_tuple(make_handle(g, r.o), make_handle(g, r.stats));
      },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("scale") = nb::none(),
      nb::arg("causal") = CausalMask::none, nb::arg("emit_stats") = false, nb::arg("bias") = nb::none(),
      "Attention: q [B,H,Sq,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv] -> o [B,H,Sq,Dv], or (o, stats) "
      "with emit_stats; scale defaults to 1/sqrt(D); a float bias is added to the scores, a bool "
      "one keeps keys where true");
}

void bind_pointwise(nb::class_<Graph>& cls) {
  // unary(op, x) and one method per unary op
  cls.def("unary", [](Graph& g, OpKind op, Handle x) { return make_handle(g, g.unary(op, tensor_of(g, x, "x"))); },
          nb::arg("op"), nb::arg("x"));
  for (OpKind op : all_ops()) {
    if (op_info(op).cls != OpClass::unary) continue;
    cls.def(std::string(to_string(op)).c_str(),
            [op](Graph& g, Handle x) { return make_handle(g, g.unary(op, tensor_of(g, x, "x"))); }, nb::arg("x"));
  }

  // binary(op, a, b) and one method per binary op; b may be a number (a constant of a's dtype)
  cls.def("binary", [](Graph& g, OpKind op, Handle a, Handle b) {
        return make_handle(g, g.binary(op, tensor_of(g, a, "a"), tensor_of(g, b, "b")));
      },
      nb::arg("op"), nb::arg("a"), nb::arg("b"));
  for (OpKind op : all_ops()) {
    if (op_info(op).cls != OpClass::binary) continue;
    const std::string name(to_string(op));
    cls.def(name.c_str(), [op](Graph& g, Handle a, Handle b) {
          return make_handle(g, g.binary(op, tensor_of(g, a, "a"), tensor_of(g, b, "b")));
        },
        nb::arg("a"), nb::arg("b"));
    cls.def(name.c_str(), [op](Graph& g, Handle a, double b) {
          Tensor ta = tensor_of(g, a, "a");
          return make_handle(g, g.binary(op, ta, g.scalar(b, g.tensor(ta).dtype)));
        },
        nb::arg("a"), nb::arg("b"));
  }

  // compare(op, a, b) and one method per comparison (bool results)
  cls.def("compare", [](Graph& g, OpKind op, Handle a, Handle b) {
        return make_handle(g, g.compare(op, tensor_of(g, a, "a"), tensor_of(g, b, "b")));
      },
      nb::arg("op"), nb::arg("a"), nb::arg("b"));
  for (OpKind op : all_ops()) {
    if (op_info(op).cls != OpClass::compare) continue;
    cls.def(std::string(to_string(op)).c_str(), [op](Graph& g, Handle a, Handle b) {
          return make_handle(g, g.compare(op, tensor_of(g, a, "a"), tensor_of(g, b, "b")));
        },
        nb::arg("a"), nb::arg("b"));
  }

  cls.def("select", [](Graph& g, Handle cond, Handle a, Handle b) {
        return make_handle(g, g.select(tensor_of(g, cond, "select cond"), tensor_of(g, a, "select a"),
                                       tensor_of(g, b, "select b")));
      },
      nb::arg("cond"), nb::arg("a"), nb::arg("b"), "cond ? a : b, broadcast");
  cls.def("scalar", [](Graph& g, double value, DType dtype) { return make_handle(g, g.scalar(value, dtype)); },
          nb::arg("value"), nb::arg("dtype"), "A rank-0 constant");
  cls.def("cast", [](Graph& g, Handle x, DType dtype, OptionalHandle scale) {
        return make_handle(g, g.cast(tensor_of(g, x, "cast x"), dtype, optional_tensor(g, scale, "cast scale")));
      },
      nb::arg("x"), nb::arg("dtype"), nb::arg("scale") = nb::none(),
      "x rounded to dtype or, with a scale tensor, round(x * scale) (e.g. to fp8)");
}

void bind_reductions(nb::class_<Graph>& cls) {
  cls.def("reduce", [](Graph& g, OpKind op, Handle x, std::vector<int64_t> axes, bool keepdim,
                       std::optional<DType> out_dtype) {
        return make_handle(g, g.reduce(op, tensor_of(g, x, "x"), std::move(axes), keepdim, out_dtype));
      },
      nb::arg("op"), nb::arg("x"), nb::arg("axes") = std::vector<int64_t>{}, nb::arg("keepdim") = false,
      nb::arg("out_dtype") = nb::none(), "Negative axes count from the end; no axes: every axis");
  // sum, mean, reduce_max, reduce_min, amax: the C++ names
  const std::pair<const char*, OpKind> named[] = {{"sum", OpKind::reduce_sum},
                                                  {"mean", OpKind::reduce_mean},
                                                  {"reduce_max", OpKind::reduce_max},
                                                  {"reduce_min", OpKind::reduce_min},
                                                  {"amax", OpKind::reduce_amax}};
  for (const auto& [name, op] : named) {
    cls.def(name, [op](Graph& g, Handle x, std::vector<int64_t> axes, bool keepdim) {
          return make_handle(g, g.reduce(op, tensor_of(g, x, "x"), std::move(axes), keepdim));
        },
        nb::arg("x"), nb::arg("axes") = std::vector<int64_t>{}, nb::arg("keepdim") = false);
  }
  cls.def("argmax", [](Graph& g, Handle x, int64_t axis, bool keepdim) {
        return make_handle(g, g.argmax(tensor_of(g, x, "argmax x"), axis, keepdim));
      },
      nb::arg("x"), nb::arg("axis"), nb::arg("keepdim") = false,
      "i64 index of the first maximum along axis (as torch.argmax: ties give the lowest index, "
      "NaN counts as the maximum)");
  cls.def("argmin", [](Graph& g, Handle x, int64_t axis, bool keepdim) {
        return make_handle(g, g.argmin(tensor_of(g, x, "argmin x"), axis, keepdim));
      },
      nb::arg("x"), nb::arg("axis"), nb::arg("keepdim") = false,
      "i64 index of the first minimum along axis (ties: the lowest index; NaN counts as the minimum)");
}

void bind_rowwise(nb::class_<Graph>& cls) {
  cls.def("softmax", [](Graph& g, Handle x) { return make_handle(g, g.softmax(tensor_of(g, x, "softmax x"))); },
          nb::arg("x"), "Over the last axis");
  cls.def("layernorm", [](Graph& g, Handle x, Handle weight, OptionalHandle bias, double epsilon) {
        return make_handle(g, g.layernorm(tensor_of(g, x, "layernorm x"), tensor_of(g, weight, "layernorm weight"),
                                          optional_tensor(g, bias, "layernorm bias"), epsilon));
      },
      nb::arg("x"), nb::arg("weight"), nb::arg("bias") = nb::none(), nb::arg("epsilon") = 1e-5);
  cls.def("rmsnorm", [](Graph& g, Handle x, Handle weight, OptionalHandle bias, double epsilon) {
        return make_handle(g, g.rmsnorm(tensor_of(g, x, "rmsnorm x"), tensor_of(g, weight, "rmsnorm weight"),
                                        optional_tensor(g, bias, "rmsnorm bias"), epsilon));
      },
      nb::arg("x"), nb::arg("weight"), nb::arg("bias") = nb::none(), nb::arg("epsilon") = 1e-6);
  cls.def("rope", [](Graph& g, Handle x, Handle cos, Handle sin, bool interleaved) {
        return make_handle(g, g.rope(tensor_of(g, x, "rope x"), tensor_of(g, cos, "rope cos"),
                                     tensor_of(g, sin, "rope sin"), interleaved));
      },
      nb::arg("x"), nb::arg("cos"), nb::arg("sin"), nb::arg("interleaved") = false,
      "Rotary embedding of the first R channels, cos and sin [..., R/2]; half-split pairs "
      "(Llama) or interleaved ones (GPT-J)");
}

void bind_layout(nb::class_<Graph>& cls) {
  cls.def("reshape", [](Graph& g, Handle x, Dims dims) {
        return make_handle(g, g.reshape(tensor_of(g, x, "reshape x"), std::move(dims)));
      },
      nb::arg("x"), nb::arg("dims"), "One entry may be -1");
  cls.def("permute", [](Graph& g, Handle x, std::vector<int64_t> perm) {
        return make_handle(g, g.permute(tensor_of(g, x, "permute x"), std::move(perm)));
      },
      nb::arg("x"), nb::arg("perm"), "Output axis i is input axis perm[i]");
  cls.def("transpose", [](Graph& g, Handle x, int64_t axis0, int64_t axis1) {
        return make_handle(g, g.transpose(tensor_of(g, x, "transpose x"), axis0, axis1));
      },
      nb::arg("x"), nb::arg("axis0"), nb::arg("axis1"));
  cls.def("slice", [](Graph& g, Handle x, std::vector<int64_t> axes, std::vector<int64_t> starts,
                      std::vector<int64_t> ends, std::vector<int64_t> steps) {
        return make_handle(g, g.slice(tensor_of(g, x, "slice x"), std::move(axes), std::move(starts),
                                      std::move(ends), std::move(steps)));
      },
      nb::arg("x"), nb::arg("axes"), nb::arg("starts"), nb::arg("ends"),
      nb::arg("steps") = std::vector<int64_t>{},
      "Python-style ranges over axes (every axis when empty); bounds clamp as in numpy");
  cls.def("concat", [](Graph& g, const std::vector<TensorHandle>& xs, int64_t axis) {
        std::vector<Tensor> ts;
        for (const TensorHandle& h : xs) ts.push_back(tensor_of(g, h, "concat input"));
        return make_handle(g, g.concat(ts, axis));
      },
      nb::arg("xs"), nb::arg("axis"));
  cls.def("gather", [](Graph& g, const TensorHandle& x, const TensorHandle& indices, int64_t axis) {
        return make_handle(g, g.gather(tensor_of(g, x, "gather x"), tensor_of(g, indices, "gather indices"), axis));
      },
      nb::arg("x"), nb::arg("indices"), nb::arg("axis") = 0,
      "x's slices along axis picked by integer (i32 or i64) indices, as numpy.take; an embedding "
      "lookup is gather(table, token_ids, 0)");
}

void bind_collectives(nb::class_<Graph>& cls) {
  cls.def("all_reduce", [](Graph& g, Handle x, const std::string& group, int64_t world, CollectiveReduce reduce) {
        return make_handle(g, g.all_reduce(tensor_of(g, x, "all_reduce x"), group, world, reduce));
      },
      nb::arg("x"), nb::arg("group"), nb::arg("world"), nb::arg("reduce") = CollectiveReduce::sum,
      "Every rank of the group gets the sum (or max) of every rank's x");
  cls.def("all_gather", [](Graph& g, Handle x, int64_t axis, const std::string& group, int64_t world) {
        return make_handle(g, g.all_gather(tensor_of(g, x, "all_gather x"), axis, group, world));
      },
      nb::arg("x"), nb::arg("axis"), nb::arg("group"), nb::arg("world"),
      "Every rank of the group gets the ranks' x joined along axis, in rank order");
  cls.def("reduce_scatter", [](Graph& g, Handle x, int64_t axis, const std::string& group, int64_t world,
                               CollectiveReduce reduce) {
        return make_handle(g, g.reduce_scatter(tensor_of(g, x, "reduce_scatter x"), axis, group, world, reduce));
      },
      nb::arg("x"), nb::arg("axis"), nb::arg("group"), nb::arg("world"), nb::arg("reduce") = CollectiveReduce::sum,
      "Rank r of the group gets the r-th of world parts, along axis, of the sum (or max) of every rank's x");
}

}  // namespace

void bind_graph_ops(nb::class_<Graph>& cls) {
  bind_anchors(cls);
  bind_pointwise(cls);
  bind_reductions(cls);
  bind_rowwise(cls);
  bind_layout(cls);
  bind_collectives(cls);
}

}  // namespace sinter::python
