// The enumerations of the public API. Each member has the C++ name (DType.boolean is "bool" in
// files and messages: DType.parse("bool") finds it).
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include "bindings.hpp"
#include "sinter/compile.hpp"
#include "sinter/dtype.hpp"
#include "sinter/error.hpp"
#include "sinter/ops.hpp"
#include "sinter/runner.hpp"

namespace sinter::python {
namespace {

DType dtype_from_name(std::string_view name) {
  if (auto t = parse_dtype(name)) return *t;
  throw Error(ErrorCode::invalid_argument,
              "unknown dtype '" + std::string(name) +
                  "'; expected one of f32, f16, bf16, fp8_e4m3, fp8_e5m2, i32, i64, bool");
}

void bind_dtype(nb::module_& m) {
  nb::enum_<DType> dtype(m, "DType", "Element types; bf16 and fp8 round to nearest even (fp8 saturates)");
  // Members by their names in files, except bool, a Python builtin: DType.boolean.
  for (DType t : kAllDTypes) dtype.value(t == DType::boolean ? "boolean" : std::string(to_string(t)).c_str(), t);
  dtype
      .def_static("parse", &dtype_from_name, nb::arg("name"),
                  "The DType of a name as files write it: 'bf16', 'bool', ...")
      .def_prop_ro("label", [](DType t) { return std::string(to_string(t)); },
                   "The name files and messages use: 'bf16', 'bool', ...")
      .def_prop_ro("itemsize", [](DType t) { return dtype_size(t); }, "Bytes per element")
      .def_prop_ro("is_float", [](DType t) { return is_float(t); })
      .def_prop_ro("is_integer", [](DType t) { return is_integer(t); })
      .def("round", [](DType t, double x) { return round_to_dtype(x, t); }, nb::arg("x"),
           "x rounded to the nearest value of this dtype, by the rule every executor uses");
}

void bind_op_enums(nb::module_& m) {
  nb::enum_<OpKind> op(m, "OpKind", "The operations of a graph (Graph.nodes, Graph.unary, ...)");
  for (OpKind k : all_ops()) op.value(std::string(to_string(k)).c_str(), k);

  nb::enum_<ComputeType>(m, "ComputeType", "The precision a matmul or conv accumulates in")
      .value("f32", ComputeType::f32)
      .value("tf32", ComputeType::tf32)
      .value("f16", ComputeType::f16);

  nb::enum_<CausalMask>(m, "CausalMask", "sdpa's causal masks (see ops.hpp)")
      .value("none", CausalMask::none)
      .value("top_left", CausalMask::top_left)
      .value("bottom_right", CausalMask::bottom_right);

  nb::enum_<CollectiveReduce>(m, "CollectiveReduce", "How all_reduce and reduce_scatter combine the ranks' values")
      .value("sum", CollectiveReduce::sum)
      .value("max", CollectiveReduce::max);
}

void bind_run_enums(nb::module_& m) {
  nb::enum_<TuneMode>(m, "TuneMode", "How compile() chooses each region's candidate")
      .value("heuristic", TuneMode::heuristic)
      .value("fast", TuneMode::fast)
      .value("exhaustive", TuneMode::exhaustive);

  nb::enum_<ExecMode>(m, "ExecMode", "How a Runner runs a plan's steps")
      .value("stream", ExecMode::stream)
      .value("graph", ExecMode::graph)
      .value("mega", ExecMode::mega);
}

}  // namespace

void bind_enums(nb::module_& m) {
  bind_dtype(m);
  bind_op_enums(m);
  bind_run_enums(m);
}

}  // namespace sinter::python
