// Several ranks on the CPU reference (run_reference_ranks) and tensor-parallel sharding
// (shard_tensor_parallel, shard_inputs, gather_outputs) on float64 arrays; python/sinter/ranks.py
// checks and converts the caller's numpy arrays as reference.py does for one graph.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "sinter/error.hpp"
#include "sinter/reference.hpp"
#include "sinter/shard.hpp"

namespace sinter::python {
namespace {

using ValuesIn = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using ValuesOut = nb::ndarray<nb::numpy, double>;

std::vector<Graph> graphs_of(const nb::list& graphs) {
  std::vector<Graph> out;
  for (nb::handle h : graphs) out.push_back(nb::cast<const Graph&>(h));
  return out;
}

// `values` as a host tensor of tensor `name` of `g` (an input, or an output for gather_outputs),
// with the array's shape; a name `g` lacks is an error listing what it has.
HostTensor host_tensor(const Graph& g, const std::string& name, const ValuesIn& values, const char* what) {
  std::optional<Tensor> t = g.find_tensor(name);
  if (!t) {
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": graph '" + g.name() + "' has no tensor '" + name + "'");
  }
  Dims dims(values.ndim());
  for (size_t i = 0; i < values.ndim(); ++i) dims[i] = static_cast<int64_t>(values.shape(i));
  HostTensor h(g.tensor(*t).dtype, dims);
  const double* data = values.data();
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, data[i]);
  return h;
}

TensorMap host_map(const Graph& g, const nb::dict& values, const char* what) {
  TensorMap m;
  for (auto [key, value] : values) {
    const std::string name = nb::cast<std::string>(key);
    m.emplace(name, host_tensor(g, name, nb::cast<ValuesIn>(value), what));
  }
  return m;
}

ValuesOut to_array(const HostTensor& t) {
  std::vector<double>* values = new std::vector<double>(t.values());
  nb::capsule owner(values, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  std::vector<size_t> shape(t.dims().begin(), t.dims().end());
  return ValuesOut(values->data(), shape.size(), shape.data(), owner);
}

nb::dict array_map(const TensorMap& m) {
  nb::dict d;
  for (const auto& [name, t] : m) d[name.c_str()] = to_array(t);
  return d;
}

nb::list run_ranks(const nb::list& graphs, const nb::list& inputs) {
  const std::vector<Graph> gs = graphs_of(graphs);
  std::vector<TensorMap> in;
  size_t r = 0;
  for (nb::handle h : inputs) {
    if (r >= gs.size()) break;  // a count mismatch is reported by run_reference_ranks
    in.push_back(host_map(gs[r++], nb::cast<nb::dict>(h), "run_reference_ranks"));
  }
  std::vector<TensorMap> out;
  {
    nb::gil_scoped_release released;
    out = run_reference_ranks(gs, in);
  }
  nb::list result;
  for (const TensorMap& m : out) result.append(array_map(m));
  return result;
}

nb::list shard(const Graph& g, int world, const std::string& group, const std::vector<std::string>& column_parallel,
               bool detect) {
  ShardOptions o;
  o.group = group;
  o.column_parallel = column_parallel;
  o.detect = detect;
  nb::list result;
  for (Graph& rank : shard_tensor_parallel(g, world, o)) result.append(nb::cast(std::move(rank)));
  return result;
}

nb::list shard_values(const Graph& full, const nb::list& ranks, const nb::dict& values) {
  nb::list result;
  for (const TensorMap& m : shard_inputs(full, graphs_of(ranks), host_map(full, values, "shard_inputs"))) {
    result.append(array_map(m));
  }
  return result;
}

nb::dict gather_values(const Graph& full, const nb::list& ranks, const nb::list& outputs) {
  const std::vector<Graph> gs = graphs_of(ranks);
  std::vector<TensorMap> out;
  size_t r = 0;
  for (nb::handle h : outputs) {
    if (r >= gs.size()) break;  // a count mismatch is reported by gather_outputs
    out.push_back(host_map(gs[r++], nb::cast<nb::dict>(h), "gather_outputs"));
  }
  return array_map(gather_outputs(full, gs, out));
}

}  // namespace

void bind_ranks(nb::module_& m) {
  m.def("_run_reference_ranks", &run_ranks, nb::arg("graphs"), nb::arg("inputs"),
        "Rank graphs on the CPU reference, collectives among them, on float64 arrays (use "
        "sinter.run_reference_ranks)");
  m.def("_shard_tensor_parallel", &shard, nb::arg("graph"), nb::arg("world"), nb::arg("group"),
        nb::arg("column_parallel"), nb::arg("detect"), "(use sinter.shard_tensor_parallel)");
  m.def("_shard_inputs", &shard_values, nb::arg("full"), nb::arg("ranks"), nb::arg("values"),
        "(use sinter.shard_inputs)");
  m.def("_gather_outputs", &gather_values, nb::arg("full"), nb::arg("ranks"), nb::arg("outputs"),
        "(use sinter.gather_outputs)");
}

}  // namespace sinter::python
