#include "plan/memory_plan.hpp"

#include <algorithm>
#include <map>

#include "sinter/error.hpp"

namespace sinter::plan {

size_t storage_bytes(const TensorInfo& t) {
  int64_t last = 0;
  for (size_t i = 0; i < t.dims.size(); ++i) last += (t.dims[i] - 1) * t.strides[i];
  return static_cast<size_t>((last + 1) * dtype_size(t.dtype));
}

namespace {
size_t align(size_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }
}  // namespace

MemoryPlan plan_memory(const Graph& g, const fuse::Partition& p, const std::vector<TensorId>& aliases) {
  const int steps = static_cast<int>(p.regions.size());
  const size_t nt = g.tensors().size();
  auto root = [&](TensorId t) {
    while (t >= 0 && static_cast<size_t>(t) < aliases.size() && aliases[t] >= 0) t = aliases[t];
    return t;
  };
  std::vector<int> first(nt, -1), last(nt, -1);
  for (const fuse::Region& r : p.regions) {
    for (TensorId t : r.outputs) {
      const TensorId b = root(t);
      if (first[b] < 0) first[b] = r.id;
      last[b] = std::max(last[b], r.id);
    }
    for (TensorId t : r.inputs) {
      const TensorId b = root(t);
      last[b] = std::max(last[b], r.id);
    }
  }
  for (TensorId t : g.outputs()) last[root(t)] = steps;  // read after the last step

  std::vector<bool> bound(nt, false);  // graph inputs and outputs: memory the caller binds
  for (TensorId t : g.inputs()) bound[t] = true;
  for (TensorId t : g.outputs()) bound[t] = true;
  MemoryPlan plan;
  for (size_t t = 0; t < nt; ++t) {
    if (first[t] < 0 || bound[t]) continue;
    if (t < aliases.size() && aliases[t] >= 0) continue;
    BufferAssignment b;
    b.tensor = static_cast<TensorId>(t);
    b.bytes = align(storage_bytes(g.tensor(static_cast<TensorId>(t))));
    b.first_step = first[t];
    b.last_step = last[t];
    plan.naive_bytes += b.bytes;
    plan.buffers.push_back(b);
  }
  // Greedy by size (largest first): each buffer takes the lowest offset where it fits beside the
  // already placed buffers whose lifetimes overlap its own.
  std::vector<size_t> order(plan.buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.buffers[a].bytes > plan.buffers[b].bytes;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    BufferAssignment& b = plan.buffers[i];
    std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of live neighbours
    for (size_t j : placed) {
      const BufferAssignment& o = plan.buffers[j];
      if (o.first_step <= b.last_step && b.first_step <= o.last_step) {
        busy.push_back({o.offset, o.offset + o.bytes});
      }
    }
    std::sort(busy.begin(), busy.end());
    size_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (at + b.bytes <= lo) break;
      at = std::max(at, hi);
    }
    b.offset = at;
    plan.arena_bytes = std::max(plan.arena_bytes, at + b.bytes);
    placed.push_back(i);
  }
  return plan;
}

void verify_memory_plan(const Graph& g, const MemoryPlan& plan) {
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const BufferAssignment& a = plan.buffers[i];
    if (a.offset % kArenaAlignment != 0 || a.offset + a.bytes > plan.arena_bytes) {
      throw Error(ErrorCode::internal, "memory plan: '" + g.tensor(a.tensor).name + "' is misplaced");
    }
    for (size_t j = i + 1; j < plan.buffers.size(); ++j) {
      const BufferAssignment& b = plan.buffers[j];
      const bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (live_together && overlap) {
        throw Error(ErrorCode::internal, "memory plan: '" + g.tensor(a.tensor).name + "' and '" +
                                             g.tensor(b.tensor).name +
                                             "' are live together but share memory");
      }
    }
  }
}

}  // namespace sinter::plan
