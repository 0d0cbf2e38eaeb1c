// Host values to and from the ranks of a sharded program. How a tensor is split is read off the
// graphs themselves: a tensor whose dims on a rank differ from its full dims along one axis, by a
// factor of the world, is split along that axis in rank order; one with the same dims is
// replicated. So no side table has to travel with the rank graphs.
#include "sinter/error.hpp"
#include "sinter/shard.hpp"

namespace sinter {
namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

// The split axis of tensor `name`, or -1 when replicated.
int64_t split_axis(const std::string& what, const std::string& name, const Dims& full, const Dims& part,
                   size_t world) {
  int64_t axis = -1;
  bool ok = full.size() == part.size();
  for (size_t i = 0; ok && i < full.size(); ++i) {
    if (full[i] == part[i]) continue;
    ok = axis < 0 && part[i] * static_cast<int64_t>(world) == full[i];
    axis = static_cast<int64_t>(i);
  }
  if (!ok) {
    fail(what + ": '" + name + "' has dims " + dims_to_string(full) + " in the full graph and " +
         dims_to_string(part) + " on a rank; a rank holds all of it or 1/" + std::to_string(world) +
         " of one axis");
  }
  return axis;
}

void check_ranks(const std::string& what, const std::vector<Graph>& rank_graphs) {
  if (rank_graphs.empty()) fail(what + ": no rank graphs");
}

// Rank r's part of `values` ([outer, n, inner] around the split axis): rows [r n/W, (r+1) n/W).
HostTensor part_of(const HostTensor& full, int64_t axis, size_t r, size_t world, const Dims& part_dims) {
  const std::vector<double> v = full.values();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= full.dims()[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < full.dims().size(); ++i) inner *= full.dims()[i];
  const int64_t n = full.dims()[static_cast<size_t>(axis)], share = n / static_cast<int64_t>(world);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(outer * share * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const auto begin = v.begin() + (o * n + static_cast<int64_t>(r) * share) * inner;
    out.insert(out.end(), begin, begin + share * inner);
  }
  return HostTensor::from_values(full.dtype(), part_dims, out);
}

}  // namespace

std::vector<TensorMap> shard_inputs(const Graph& full, const std::vector<Graph>& rank_graphs, const TensorMap& values) {
  const std::string what = "shard_inputs";
  check_ranks(what, rank_graphs);
  const size_t world = rank_graphs.size();
  std::vector<TensorMap> out(world);
  for (size_t r = 0; r < world; ++r) {
    const Graph& rg = rank_graphs[r];
    for (TensorId id : rg.inputs()) {
      const TensorInfo& t = rg.tensor(id);
      const auto f = full.find_tensor(t.name);
      if (!f || !full.tensor(*f).is_input) fail(what + ": rank " + std::to_string(r) + " reads '" + t.name +
                                                "', which is no input of graph '" + full.name() + "'");
      const auto v = values.find(t.name);
      if (v == values.end()) fail(what + ": no value for input '" + t.name + "'");
      if (v->second.dims() != full.tensor(*f).dims || v->second.dtype() != full.tensor(*f).dtype) {
        fail(what + ": the value of '" + t.name + "' is " + std::string(to_string(v->second.dtype())) + " " +
             dims_to_string(v->second.dims()) + "; graph '" + full.name() + "' declares " +
             std::string(to_string(full.tensor(*f).dtype)) + " " + dims_to_string(full.tensor(*f).dims));
      }
      const int64_t axis = split_axis(what, t.name, full.tensor(*f).dims, t.dims, world);
      out[r].insert_or_assign(t.name, axis < 0 ? v->second : part_of(v->second, axis, r, world, t.dims));
    }
  }
  return out;
}

TensorMap gather_outputs(const Graph& full, const std::vector<Graph>& rank_graphs,
                         const std::vector<TensorMap>& rank_outputs) {
  const std::string what = "gather_outputs";
  check_ranks(what, rank_graphs);
  const size_t world = rank_graphs.size();
  if (rank_outputs.size() != world) {
    fail(what + ": " + std::to_string(world) + " rank graphs but " + std::to_string(rank_outputs.size()) +
         " output maps");
  }
  TensorMap out;
  for (TensorId id : full.outputs()) {
    const TensorInfo& t = full.tensor(id);
    std::vector<const HostTensor*> parts;
    for (size_t r = 0; r < world; ++r) {
      const auto it = rank_outputs[r].find(t.name);
      if (it == rank_outputs[r].end()) fail(what + ": rank " + std::to_string(r) + " has no output '" + t.name + "'");
      parts.push_back(&it->second);
    }
    const int64_t axis = split_axis(what, t.name, t.dims, parts[0]->dims(), world);
    if (axis < 0) {
      out.insert_or_assign(t.name, *parts[0]);
      continue;
    }
    // Joined as [outer, world * share, inner]: rank r's rows go to [r share, (r+1) share).
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= t.dims[static_cast<size_t>(i)];
    for (size_t i = static_cast<size_t>(axis) + 1; i < t.dims.size(); ++i) inner *= t.dims[i];
    const int64_t share = t.dims[static_cast<size_t>(axis)] / static_cast<int64_t>(world);
    std::vector<std::vector<double>> vals;
    for (const HostTensor* p : parts) {
      if (p->dims() != parts[0]->dims()) {
        fail(what + ": output '" + t.name + "' has dims " + dims_to_string(p->dims()) + " on one rank and " +
             dims_to_string(parts[0]->dims()) + " on rank 0");
      }
      vals.push_back(p->values());
    }
    std::vector<double> joined;
    joined.reserve(static_cast<size_t>(num_elements(t.dims)));
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t r = 0; r < world; ++r) {
        const auto begin = vals[r].begin() + o * share * inner;
        joined.insert(joined.end(), begin, begin + share * inner);
      }
    }
    out.insert_or_assign(t.name, HostTensor::from_values(t.dtype, t.dims, joined));
  }
  return out;
}

}  // namespace sinter
