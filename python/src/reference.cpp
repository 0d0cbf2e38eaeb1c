// The CPU reference on arrays of float64 values. python/sinter/reference.py turns the caller's
// numpy arrays into these (checking their kinds against the graph's dtypes) and the results back
// into arrays of each output's numpy type; here every value is rounded to its tensor's dtype by
// the library's own rule (HostTensor::set), exactly as the C++ API does.
#include <cstring>
#include <string>
#include <vector>

#include "float64_arrays.hpp"
#include "sinter/error.hpp"
#include "sinter/reference.hpp"

namespace sinter::python {
namespace {

// `values` as a host tensor of graph input `name`'s dtype, with the array's shape (a shape the
// graph does not declare is reported by run_reference, naming the input).
HostTensor host_input(const Graph& g, const std::string& name, const Float64In& values) {
  std::optional<Tensor> t = g.find_tensor(name);
  if (!t || !g.tensor(*t).is_input) {
    std::string inputs;
    for (TensorId id : g.inputs()) inputs += (inputs.empty() ? "'" : ", '") + g.tensor(id).name + "'";
    throw Error(ErrorCode::invalid_argument, "run_reference: '" + name + "' is not an input of graph '" +
                                                 g.name() + "'; its inputs are " +
                                                 (inputs.empty() ? "none" : inputs));
  }
  return host_tensor(g.tensor(*t).dtype, values);
}

nb::dict run(const Graph& g, const nb::dict& inputs, bool keep_intermediates, bool round_intermediates) {
  TensorMap host;
  for (auto [key, value] : inputs) {
    const std::string name = nb::cast<std::string>(key);
    host.emplace(name, host_input(g, name, nb::cast<Float64In>(value)));
  }
  TensorMap outputs;
  {
    nb::gil_scoped_release released;
    outputs = run_reference(g, host, ReferenceOptions{keep_intermediates, round_intermediates});
  }
  return to_arrays(outputs);
}

}  // namespace

void bind_reference(nb::module_& m) {
  m.def("_run_reference", &run, nb::arg("graph"), nb::arg("inputs"), nb::arg("keep_intermediates") = false,
        nb::arg("round_intermediates") = true,
        "The CPU reference on {name: float64 C-contiguous array}; returns {name: float64 array} "
        "(use sinter.run_reference)");
}

}  // namespace sinter::python
