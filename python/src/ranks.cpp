// Several ranks on the CPU reference (run_reference_ranks) and tensor-parallel sharding
// (shard_tensor_parallel, shard_inputs, gather_outputs) on float64 arrays; python/sinter/ranks.py
// checks and converts the caller's numpy arrays as reference.py does for one graph.
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "float64_arrays.hpp"
#include "sinter/error.hpp"
#include "sinter/reference.hpp"
#include "sinter/shard.hpp"

namespace sinter::python {
namespace {

std::vector<Graph> graphs_of(const nb::list& graphs) {
  std::vector<Graph> out;
  for (nb::handle h : graphs) out.push_back(nb::cast<const Graph&>(h));
  return out;
}

// `values` as a host tensor of tensor `name` of `g` (an input, or an output for gather_outputs);
// a name `g` lacks is an error naming the graph.
HostTensor named_host_tensor(const Graph& g, const std::string& name, const Float64In& values, const char* what) {
  std::optional<Tensor> t = g.find_tensor(name);
  if (!t) {
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": graph '" + g.name() + "' has no tensor '" + name + "'");
  }
  return host_tensor(g.tensor(*t).dtype, values);
}

TensorMap host_map(const Graph& g, const nb::dict& values, const char* what) {
  TensorMap m;
  for (auto [key, value] : values) {
    const std::string name = nb::cast<std::string>(key);
    m.emplace(name, named_host_tensor(g, name, nb::cast<Float64In>(value), what));
  }
  return m;
}

// One map per rank graph, rank r's values as tensors of graph r.
std::vector<TensorMap> host_maps(const std::vector<Graph>& gs, const nb::list& maps, const char* what) {
  if (nb::len(maps) != gs.size()) {
    throw Error(ErrorCode::invalid_argument, std::string(what) + ": " + std::to_string(gs.size()) +
                                                 " rank graphs but " + std::to_string(nb::len(maps)) + " maps");
  }
  std::vector<TensorMap> out;
  size_t r = 0;
  for (nb::handle h : maps) out.push_back(host_map(gs[r++], nb::cast<nb::dict>(h), what));
  return out;
}

nb::list run_ranks(const nb::list& graphs, const nb::list& inputs) {
  const std::vector<Graph> gs = graphs_of(graphs);
  const std::vector<TensorMap> in = host_maps(gs, inputs, "run_reference_ranks");
  std::vector<TensorMap> out;
  {
    nb::gil_scoped_release released;
    out = run_reference_ranks(gs, in);
  }
  nb::list result;
  for (const TensorMap& m : out) result.append(to_arrays(m));
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
    result.append(to_arrays(m));
  }
  return result;
}

nb::dict gather_values(const Graph& full, const nb::list& ranks, const nb::list& outputs) {
  const std::vector<Graph> gs = graphs_of(ranks);
  return to_arrays(gather_outputs(full, gs, host_maps(gs, outputs, "gather_outputs")));
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
