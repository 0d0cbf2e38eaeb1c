#include "plan/memory_plan.hpp"

#include <algorithm>
#include <map>

#include "plan/step_set.hpp"
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
  // the steps each stored tensor's bytes are touched by (its writer, its readers), and each
  // step's ancestors through the data it reads
  std::vector<StepSet> touched_by(nt, StepSet(static_cast<size_t>(steps)));
  std::vector<StepSet> ancestors(static_cast<size_t>(steps), StepSet(static_cast<size_t>(steps)));
  std::vector<int> producer(nt, -1);
  for (const fuse::Region& r : p.regions) {
    for (TensorId t : r.inputs) {
      const TensorId b = root(t);
      last[b] = std::max(last[b], r.id);
      touched_by[b].add(r.id);
      if (const int q = producer[t]; q >= 0) {
        ancestors[r.id].add(q);
        ancestors[r.id].add_all(ancestors[q]);
      }
    }
    for (TensorId t : r.outputs) {
      const TensorId b = root(t);
      if (first[b] < 0) first[b] = r.id;
      last[b] = std::max(last[b], r.id);
      touched_by[b].add(r.id);
      producer[t] = r.id;
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
  // Two tensors may share bytes only when every step that touches one is an ancestor of the step
  // that writes the other: then every order of the steps that keeps their data dependencies
  // finishes with the first before it starts the second, so the graph executor may run steps
  // with no data dependency side by side (runner.cpp) without the arena ordering them. Lifetimes
  // that merely do not overlap in step order are not enough: two independent branches (a layer's
  // k and v projections) would then be ordered by the bytes they share.
  auto before = [&](const BufferAssignment& a, const BufferAssignment& b) {
    return a.last_step < b.first_step && touched_by[a.tensor].within(ancestors[b.first_step]);
  };
  // Greedy by size (largest first): each buffer takes the lowest offset where it fits beside the
  // already placed buffers that it may not share bytes with.
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
      if (!before(o, b) && !before(b, o)) busy.push_back({o.offset, o.offset + o.bytes});
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
