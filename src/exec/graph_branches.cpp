#include "exec/graph_branches.hpp"

#include <algorithm>
#include <cstddef>

#include "plan/memory_plan.hpp"
#include "plan/step_set.hpp"

namespace sinter::exec {
namespace {

bool overlap(const ByteRange& a, const ByteRange& b) { return a.begin < b.end && b.begin < a.end; }

bool any_overlap(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a) {
    if (x.begin == x.end) continue;
    for (const ByteRange& y : b) {
      if (y.begin != y.end && overlap(x, y)) return true;
    }
  }
  return false;
}

bool conflict(const StepAccess& earlier, const StepAccess& later) {
  return any_overlap(earlier.writes, later.reads) || any_overlap(earlier.writes, later.writes) ||
         any_overlap(earlier.reads, later.writes);
}

using plan::StepSet;

// Each step's dependencies (transitively reduced, increasing) and its ancestors.
struct Dependencies {
  std::vector<std::vector<int>> deps;
  std::vector<StepSet> ancestors;
};

Dependencies dependencies(const std::vector<StepAccess>& steps) {
  const size_t n = steps.size();
  Dependencies out{std::vector<std::vector<int>>(n), std::vector<StepSet>(n, StepSet(n))};
  int last_barrier = -1;
  for (size_t j = 0; j < n; ++j) {
    if (!steps[j].launches) continue;  // orders nothing and is ordered by nothing
    // the steps it conflicts with, latest first
    std::vector<int> direct;
    for (size_t i = j; i-- > 0;) {
      if (!steps[i].launches) continue;
      const bool before_barrier = static_cast<int>(i) < last_barrier;
      if (steps[j].barrier || static_cast<int>(i) == last_barrier ||
          (!before_barrier && conflict(steps[i], steps[j]))) {
        direct.push_back(static_cast<int>(i));
      }
      // everything before the last barrier is its ancestor: nothing there is needed directly
      if (!steps[j].barrier && before_barrier) break;
    }
    StepSet& covered = out.ancestors[j];
    for (int d : direct) {
      if (covered.has(d)) continue;  // already an ancestor of a later dependency
      out.deps[j].push_back(d);
      covered.add(d);
      covered.add_all(out.ancestors[static_cast<size_t>(d)]);
    }
    std::sort(out.deps[j].begin(), out.deps[j].end());
    if (steps[j].barrier) last_barrier = static_cast<int>(j);
  }
  return out;
}

}  // namespace

std::vector<std::pair<int, int>> overlapping_pairs(const std::vector<ByteRange>& ranges, const std::vector<int>& owner) {
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a].begin < ranges[b].begin; });
  std::vector<std::pair<int, int>> out;
  std::vector<size_t> open;  // ranges begun and not yet ended, as the sweep passes each begin
  for (size_t i : order) {
    const ByteRange& r = ranges[i];
    if (r.begin == r.end) continue;
    std::erase_if(open, [&](size_t o) { return ranges[o].end <= r.begin; });
    for (size_t o : open) out.emplace_back(std::min(owner[o], owner[i]), std::max(owner[o], owner[i]));
    open.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

StepAccess step_access(const Graph& g, const fuse::Region& r, const Binding& b, uint64_t workspace_bytes,
                       bool launches_nothing, const std::vector<TensorId>& alias_of) {
  auto range = [&](TensorId t, const void* p) {
    TensorId root = t;
    while (alias_of[static_cast<size_t>(root)] >= 0) root = alias_of[static_cast<size_t>(root)];
    const size_t bytes = std::max(plan::storage_bytes(g.tensor(t)), plan::storage_bytes(g.tensor(root)));
    const auto begin = reinterpret_cast<uintptr_t>(p);
    return ByteRange{begin, begin + bytes};
  };
  StepAccess a;
  if (launches_nothing) {
    a.launches = false;
    return a;
  }
  for (size_t k = 0; k < r.inputs.size(); ++k) a.reads.push_back(range(r.inputs[k], b.inputs[k]));
  for (size_t k = 0; k < r.outputs.size(); ++k) a.writes.push_back(range(r.outputs[k], b.outputs[k]));
  if (workspace_bytes > 0) {
    const auto w = reinterpret_cast<uintptr_t>(b.workspace);
    a.writes.push_back({w, w + workspace_bytes});
  }
  a.barrier = r.kind == fuse::RegionKind::collective;
  return a;
}

std::vector<std::vector<int>> step_dependencies(const std::vector<StepAccess>& steps) {
  return dependencies(steps).deps;
}

GraphBranches place_branches(const std::vector<StepAccess>& steps, int max_streams) {
  const size_t n = steps.size();
  const auto [deps, anc] = dependencies(steps);
  GraphBranches out;
  out.stream_of.assign(n, 0);
  out.waits.assign(n, {});
  out.record.assign(n, 0);
  max_streams = std::max(max_streams, 1);
  std::vector<int> tail{-1};  // by stream: its last step (-1: none yet)
  std::vector<int> depth(n, 0);  // by step: the most launching steps on a path of dependencies ending there
  for (size_t j = 0; j < n; ++j) {
    if (!steps[j].launches) continue;  // stream 0, no waits, no tail
    for (int p : deps[j]) depth[j] = std::max(depth[j], depth[static_cast<size_t>(p)]);
    depth[j] += 1;
    out.launches += 1;
    out.chain = std::max(out.chain, depth[j]);
    const std::vector<int>& d = deps[j];
    auto follows = [&](int step) { return step < 0 || anc[j].has(step); };
    int s = -1;
    // the stream of a dependency that is still that stream's last step: the one at the end of the
    // longest chain (likely the last to finish), then the latest; in stream order the launch may
    // overlap that dependency's end (programmatic launch), where a wait on another stream's event
    // may not
    std::vector<int> by_chain(d.begin(), d.end());
    std::stable_sort(by_chain.begin(), by_chain.end(), [&](int a, int b) {
      return depth[static_cast<size_t>(a)] != depth[static_cast<size_t>(b)] ? depth[static_cast<size_t>(a)] > depth[static_cast<size_t>(b)]
                                                                            : a > b;
    });
    for (int p : by_chain) {
      const int ds = out.stream_of[static_cast<size_t>(p)];
      if (tail[static_cast<size_t>(ds)] == p) {
        s = ds;
        break;
      }
    }
    // a stream whose last step it follows anyway
    for (size_t c = 0; c < tail.size() && s < 0; ++c) {
      if (follows(tail[c])) s = static_cast<int>(c);
    }
    if (s < 0 && static_cast<int>(tail.size()) < max_streams) {
      s = static_cast<int>(tail.size());
      tail.push_back(-1);
    }
    if (s < 0) {  // every stream is busy with unrelated work: the one idle longest
      s = static_cast<int>(std::min_element(tail.begin(), tail.end()) - tail.begin());
    }
    const int before = tail[static_cast<size_t>(s)];
    for (int p : d) {
      if (out.stream_of[static_cast<size_t>(p)] == s) continue;  // stream order holds it
      if (before >= 0 && (before == p || anc[static_cast<size_t>(before)].has(p))) continue;
      out.waits[j].push_back(p);
      out.record[static_cast<size_t>(p)] = 1;
    }
    out.stream_of[j] = s;
    tail[static_cast<size_t>(s)] = static_cast<int>(j);
  }
  out.streams = static_cast<int>(tail.size());
  return out;
}

}  // namespace sinter::exec
