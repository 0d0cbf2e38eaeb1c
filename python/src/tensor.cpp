// Tensor handles (tensor_handle.hpp) and their Python operators: t + u, t * 2.0, -t, a @ b, ...
// call the builder methods of the tensor's graph, so `g.gelu(x @ w + b)` builds three nodes.
#include <nanobind/operators.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <functional>

#include "bindings.hpp"
#include "sinter/error.hpp"
#include "tensor_handle.hpp"

namespace sinter::python {

TensorHandle make_handle(Graph& g, Tensor t) {
  nb::object owner = nb::find(&g);
  if (!owner.is_valid()) {
    throw Error(ErrorCode::internal, "a tensor handle of graph '" + g.name() +
                                         "', which has no Python object");
  }
  return TensorHandle{&g, std::move(owner), t};
}

Tensor tensor_of(const Graph& g, const TensorHandle& h, std::string_view what) {
  if (h.graph != &g) {
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": tensor '" + h.info().name + "' belongs to graph '" +
                    h.graph->name() + "', not to graph '" + g.name() + "'");
  }
  return h.tensor;
}

namespace {

using BinaryBuilder = Tensor (Graph::*)(Tensor, Tensor);

// a (op) b for two handles of one graph.
TensorHandle apply(BinaryBuilder op, const TensorHandle& a, const TensorHandle& b) {
  Graph& g = *a.graph;
  return make_handle(g, (g.*op)(a.tensor, tensor_of(g, b, "operand")));
}

// a (op) value, value a scalar constant of a's dtype; `reflected`: value (op) a.
TensorHandle apply(BinaryBuilder op, const TensorHandle& a, double value, bool reflected) {
  Graph& g = *a.graph;
  Tensor s = g.scalar(value, a.info().dtype);
  return make_handle(g, reflected ? (g.*op)(s, a.tensor) : (g.*op)(a.tensor, s));
}

nb::tuple to_tuple(const Dims& d) {
  nb::list l;
  for (int64_t v : d) l.append(v);
  return nb::tuple(l);
}

// Binds `name` (t op u, t op 2.0) and its reflected form `rname` (2.0 op t).
void bind_binary(nb::class_<TensorHandle>& cls, const char* name, const char* rname,
                 BinaryBuilder op) {
  cls.def(name, [op](const TensorHandle& a, const TensorHandle& b) { return apply(op, a, b); });
  cls.def(name, [op](const TensorHandle& a, double v) { return apply(op, a, v, false); });
  cls.def(rname, [op](const TensorHandle& a, double v) { return apply(op, a, v, true); });
}

}  // namespace

void bind_tensor(nb::module_& m) {
  nb::class_<TensorHandle> cls(m, "Tensor",
                               "A tensor of a Graph: made by Graph.input and the builder methods");
  cls.def_prop_ro("name", [](const TensorHandle& h) { return h.info().name; })
      .def_prop_ro("dtype", [](const TensorHandle& h) { return h.info().dtype; })
      .def_prop_ro("shape", [](const TensorHandle& h) { return to_tuple(h.info().dims); },
                   "The logical row-major shape (a tuple; () for a scalar)")
      .def_prop_ro("strides", [](const TensorHandle& h) { return to_tuple(h.info().strides); },
                   "In elements; row-major unless the tensor is an input declared as a view")
      .def_prop_ro("ndim", [](const TensorHandle& h) { return h.info().dims.size(); })
      .def_prop_ro("is_input", [](const TensorHandle& h) { return h.info().is_input; })
      .def_prop_ro("id", [](const TensorHandle& h) { return h.tensor.id; })
      .def_prop_ro("graph", [](const TensorHandle& h) { return h.owner; })
      .def("__eq__", [](const TensorHandle& a, const TensorHandle& b) {
        return a.graph == b.graph && a.tensor == b.tensor;
      })
      .def("__hash__", [](const TensorHandle& h) {
        return std::hash<const void*>()(h.graph) ^ std::hash<int32_t>()(h.tensor.id);
      })
      .def("__repr__", [](const TensorHandle& h) {
        const TensorInfo& i = h.info();
        return "Tensor('" + i.name + "', " + std::string(to_string(i.dtype)) + ", " +
               dims_to_string(i.dims) + ")";
      });

  bind_binary(cls, "__add__", "__radd__", &Graph::add);
  bind_binary(cls, "__sub__", "__rsub__", &Graph::sub);
  bind_binary(cls, "__mul__", "__rmul__", &Graph::mul);
  bind_binary(cls, "__truediv__", "__rtruediv__", &Graph::div);
  bind_binary(cls, "__pow__", "__rpow__", &Graph::pow);
  cls.def("__matmul__", [](const TensorHandle& a, const TensorHandle& b) {
    Graph& g = *a.graph;
    return make_handle(g, g.matmul(a.tensor, tensor_of(g, b, "matmul operand")));
  });
  cls.def("__neg__", [](const TensorHandle& a) { return make_handle(*a.graph, a.graph->neg(a.tensor)); });
}

}  // namespace sinter::python
