// A Python Tensor: a sinter::Tensor (a tensor id) and the Graph it belongs to. The handle keeps
// its graph's Python object alive, reads its name, dtype and shape from it, and lets a builder
// call refuse a tensor of another graph with a message instead of reading the wrong tensor.
#pragma once

#include <nanobind/nanobind.h>

#include <string_view>

#include "sinter/graph.hpp"

namespace sinter::python {

namespace nb = nanobind;

struct TensorHandle {
  Graph* graph = nullptr;
  nb::object owner;  // the Python object of *graph
  Tensor tensor;

  const TensorInfo& info() const { return graph->tensor(tensor); }
};

// A handle to `t` of `g`; `g` must be a Graph owned by a Python object.
TensorHandle make_handle(Graph& g, Tensor t);
// `h`'s tensor, after checking that it belongs to `g`; `what` names the argument in the error.
Tensor tensor_of(const Graph& g, const TensorHandle& h, std::string_view what);

}  // namespace sinter::python
