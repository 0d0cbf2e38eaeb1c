// Graph: making one, its inputs and outputs, inspection, validate(), and JSON files. The builder
// methods, one per op, are in graph_ops.cpp.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "sinter/json.hpp"
#include "tensor_handle.hpp"

namespace sinter::python {
namespace {

nb::list handles(Graph& g, const std::vector<TensorId>& ids) {
  nb::list l;
  for (TensorId id : ids) l.append(make_handle(g, Tensor{id}));
  return l;
}

nb::list tensor_names(const Graph& g, const std::vector<TensorId>& ids) {
  nb::list l;
  for (TensorId id : ids) l.append(g.tensor(id).name);
  return l;
}

// One node as a dict: {"name", "op" (an OpKind), "inputs", "outputs" (tensor names)}.
nb::dict node_dict(const Graph& g, const Node& n) {
  nb::dict d;
  d["name"] = n.name;
  d["op"] = n.op;
  d["inputs"] = tensor_names(g, n.inputs);
  d["outputs"] = tensor_names(g, n.outputs);
  return d;
}

}  // namespace

void bind_graph(nb::module_& m) {
  nb::class_<Graph> graph(m, "Graph", "A tensor computation graph and its builder (include/sinter/graph.hpp)");
  graph.def(nb::init<std::string>(), nb::arg("name") = "graph")
      .def_prop_rw("name", &Graph::name, &Graph::set_name)
      .def("input", [](Graph& g, const std::string& name, DType dtype, const Dims& dims,
                       const Dims& strides) { return make_handle(g, g.input(name, dtype, dims, strides)); },
           nb::arg("name"), nb::arg("dtype"), nb::arg("dims"), nb::arg("strides") = Dims{},
           "A graph input; strides (in elements) make it a view, e.g. a transposed weight")
      .def("output", [](Graph& g, const TensorHandle& t, const std::string& name) {
             g.output(tensor_of(g, t, "output"), name);
           },
           nb::arg("tensor"), nb::arg("name") = "",
           "Marks a tensor as a graph output, renaming it first when a name is given")
      .def("rename", [](Graph& g, const TensorHandle& t, const std::string& name) {
             g.rename(tensor_of(g, t, "rename"), name);
           },
           nb::arg("tensor"), nb::arg("name"))
      .def("validate", &Graph::validate,
           "Checks the whole graph (names, topology, every node's shapes and dtypes); raises "
           "InvalidGraphError naming the node and tensor")
      .def_prop_ro("inputs", [](Graph& g) { return handles(g, g.inputs()); })
      .def_prop_ro("outputs", [](Graph& g) { return handles(g, g.outputs()); })
      .def_prop_ro("tensors", [](Graph& g) {
        nb::list l;
        for (size_t i = 0; i < g.tensors().size(); ++i) l.append(make_handle(g, Tensor{TensorId(i)}));
        return l;
      })
      .def_prop_ro("nodes", [](const Graph& g) {
        nb::list l;
        for (const Node& n : g.nodes()) l.append(node_dict(g, n));
        return l;
      }, "Each node as {'name', 'op', 'inputs', 'outputs'}, in the order they were added")
      .def("find_tensor", [](Graph& g, std::string_view name) -> std::optional<TensorHandle> {
             if (auto t = g.find_tensor(name)) return make_handle(g, *t);
             return std::nullopt;
           },
           nb::arg("name"), "The tensor of this name, or None")
      .def("to_json", &save_graph_json,
           "The graph as a JSON graph file's text (docs/graph-format.md); deterministic")
      .def("save", &save_graph_file, nb::arg("path"))
      .def_static("from_json", &load_graph_json, nb::arg("text"), nb::arg("source") = "<string>",
                  "A graph from JSON text, validated; errors name the place in `source`")
      .def_static("load", &load_graph_file, nb::arg("path"), "A graph from a JSON graph file, validated")
      .def("__copy__", [](const Graph& g) { return Graph(g); })
      .def("__repr__", [](const Graph& g) {
        return "Graph('" + g.name() + "', " + std::to_string(g.nodes().size()) + " nodes, " +
               std::to_string(g.inputs().size()) + " inputs, " + std::to_string(g.outputs().size()) +
               " outputs)";
      });
  bind_graph_ops(graph);
}

}  // namespace sinter::python
