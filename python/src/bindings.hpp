// The parts of the extension module sinter._core, one per concept; module.cpp calls each binder
// once, in this order (a later part uses the types an earlier one registered).
#pragma once

#include <nanobind/nanobind.h>

#include "sinter/graph.hpp"

namespace sinter::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);     // ErrorCode and the translation of sinter::Error
void bind_enums(nb::module_& m);      // DType, OpKind, ComputeType, CausalMask, TuneMode, ExecMode
void bind_tensor(nb::module_& m);     // Tensor handles and their operators
void bind_graph(nb::module_& m);      // Graph: inputs, outputs, inspection, validate, JSON
void bind_graph_ops(nb::class_<Graph>& graph);  // Graph: one builder method per op (from bind_graph)
void bind_reference(nb::module_& m);  // the CPU reference on float64 arrays
void bind_ranks(nb::module_& m);      // several ranks on the CPU reference; tensor-parallel sharding
void bind_plan(nb::module_& m);       // Plan, compile, explain, engines
void bind_runner(nb::module_& m);     // Runner

}  // namespace sinter::python
