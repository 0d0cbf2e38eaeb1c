#include "mega/task_graph.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "cuda/source_text.hpp"
#include "sinter/error.hpp"

namespace sinter::mega {
namespace {

// A task's need of one producer kernel: its blocks [lo, hi).
struct Need {
  unsigned kernel = 0;
  unsigned lo = 0, hi = 0;
};

const TaskBox* find_box(const MegaTaskKernel& k, bool write, size_t slot) {
  for (const TaskBox& b : k.boxes) {
    if (b.write == write && b.slot == static_cast<int>(slot)) return &b;
  }
  return nullptr;
}

struct ByteRange {
  int64_t lo = 0, hi = 0;
  bool meets(const ByteRange& o) const { return lo < hi && o.lo < o.hi && lo < o.hi && o.lo < hi; }
};

ByteRange byte_range(const TaskBox& b, unsigned block) {
  const ElementRange e = element_range(b, place_box(b, block));
  return {e.lo * b.elem_bytes, e.hi * b.elem_bytes};
}

// Producer blocks whose written box meets each consumer block's read box, as one block range per
// consumer block (the hull of those blocks; empty when none meets it). Null boxes, or more pairs
// than is worth comparing: every consumer block needs the whole producer.
std::vector<std::pair<unsigned, unsigned>> needed_blocks(const TaskBox* read, unsigned consumers, const TaskBox* written,
                                                         unsigned producers) {
  std::vector<std::pair<unsigned, unsigned>> need(consumers, {0u, producers});
  constexpr uint64_t kMaxPairs = uint64_t{1} << 22;
  if (!read || !written || uint64_t{consumers} * producers > kMaxPairs) return need;
  std::vector<ByteRange> w(producers);
  for (unsigned b = 0; b < producers; ++b) w[b] = byte_range(*written, b);
  for (unsigned c = 0; c < consumers; ++c) {
    const ByteRange r = byte_range(*read, c);
    unsigned lo = producers, hi = 0;
    for (unsigned b = 0; b < producers; ++b) {
      if (w[b].meets(r)) {
        lo = std::min(lo, b);
        hi = b + 1;
      }
    }
    need[c] = lo < hi ? std::make_pair(lo, hi) : std::make_pair(0u, 0u);
  }
  return need;
}

}  // namespace

long TaskKernel::group_counter(unsigned block) const {
  if (group_bounds.size() < 2) return -1;
  const auto it = std::upper_bound(group_bounds.begin(), group_bounds.end(), block);
  return static_cast<long>(first_group) + static_cast<long>(it - group_bounds.begin()) - 1;
}

TaskGraph build_task_graph(std::vector<SegmentStep> steps) {
  TaskGraph g;
  g.steps = std::move(steps);
  struct Writer {
    unsigned kernel = 0;
    size_t slot = 0;  // output index in its step
  };
  std::map<TensorId, Writer> writer;  // tensor -> the task kernel that completes it
  std::map<std::string, unsigned> function_of;
  std::vector<std::vector<std::vector<Need>>> needs;  // [kernel][block]
  for (size_t s = 0; s < g.steps.size(); ++s) {
    const SegmentStep& step = g.steps[s];
    if (step.kernels.empty()) throw Error(ErrorCode::internal, "megakernel: step " + std::to_string(step.step) + " has no kernels");
    unsigned step_tasks = 0;
    for (const MegaTaskKernel& k : step.kernels) step_tasks += k.grid[0] * k.grid[1] * k.grid[2];
    for (size_t i = 0; i < step.kernels.size(); ++i) {
      const MegaTaskKernel& mk = step.kernels[i];
      TaskKernel k;
      k.segment_step = s;
      k.kernel = i;
      std::string source = cuda::without_line_comments(mk.source);
      auto [f, added] = function_of.emplace(source, static_cast<unsigned>(g.functions.size()));
      if (added) g.functions.push_back({std::move(source), mk.entry, mk.prologue_slot >= 0});
      k.function = f->second;
      k.prologue = g.functions[k.function].prologue && mk.prologue_slot >= 0 &&
                   static_cast<size_t>(mk.prologue_slot) < step.reads.size() &&
                   writer.find(step.reads[static_cast<size_t>(mk.prologue_slot)]) == writer.end();
      std::copy(std::begin(mk.grid), std::end(mk.grid), k.grid);
      k.threads = mk.threads;
      k.dynamic_shared_memory = mk.dynamic_shared_memory;
      k.arg_bytes = mk.arg_bytes;
      k.registers = mk.registers;
      k.rank_arrivals = static_cast<unsigned>(std::max(mk.arrivals.world, 0));
      if (k.tasks() == 0) throw Error(ErrorCode::internal, "megakernel: kernel '" + mk.description + "' has an empty grid");
      std::vector<std::vector<Need>> kn(k.tasks());
      if (i == 0) {
        // the first kernel waits for the step's inputs, tile by tile where boxes allow
        for (size_t slot = 0; slot < step.reads.size(); ++slot) {
          auto it = writer.find(step.reads[slot]);
          if (it == writer.end()) continue;  // written before the segment
          const unsigned p = it->second.kernel;
          const TaskKernel& pk = g.kernels[p];
          const MegaTaskKernel& pm = g.steps[pk.segment_step].kernels[pk.kernel];
          const auto need = needed_blocks(find_box(mk, false, slot), k.tasks(), find_box(pm, true, it->second.slot), pk.tasks());
          for (unsigned c = 0; c < k.tasks(); ++c) {
            if (need[c].first >= need[c].second) continue;
            auto same = std::find_if(kn[c].begin(), kn[c].end(), [&](const Need& n) { return n.kernel == p; });
            if (same == kn[c].end()) {
              kn[c].push_back({p, need[c].first, need[c].second});
            } else {
              same->lo = std::min(same->lo, need[c].first);
              same->hi = std::max(same->hi, need[c].second);
            }
          }
        }
      } else if (step.kernels[i - 1].arrivals.world > 0) {
        // a collective's combine task b waits for block b's arrivals from every rank
        const unsigned p = static_cast<unsigned>(g.kernels.size() - 1);
        if (g.kernels[p].tasks() != k.tasks()) {
          throw Error(ErrorCode::internal, "megakernel: collective kernel '" + mk.description + "' has " +
                                               std::to_string(k.tasks()) + " tasks; its push kernel " +
                                               std::to_string(g.kernels[p].tasks()));
        }
        for (unsigned b = 0; b < k.tasks(); ++b) kn[b].push_back({p, b, b + 1});
      } else {
        // each later kernel waits for the whole kernel before it (which waited for the inputs)
        const unsigned p = static_cast<unsigned>(g.kernels.size() - 1);
        for (auto& n : kn) n.push_back({p, 0, g.kernels[p].tasks()});
      }
      for (const auto& n : kn) {
        for (const Need& d : n) k.waits.push_back(d.kernel);
      }
      std::sort(k.waits.begin(), k.waits.end());
      k.waits.erase(std::unique(k.waits.begin(), k.waits.end()), k.waits.end());
      k.task_cost_us = kTaskOverheadUs + step.bytes / std::max(1u, step_tasks) / kBytesPerSmUs;
      g.tasks += k.tasks();
      g.max_threads = std::max(g.max_threads, k.threads);
      g.max_dynamic_shared_memory = std::max(g.max_dynamic_shared_memory, k.dynamic_shared_memory);
      g.max_arg_bytes = std::max(g.max_arg_bytes, k.arg_bytes);
      g.max_registers = std::max(g.max_registers, k.registers);
      g.kernels.push_back(std::move(k));
      needs.push_back(std::move(kn));
    }
    for (size_t o = 0; o < step.writes.size(); ++o) writer[step.writes[o]] = {static_cast<unsigned>(g.kernels.size() - 1), o};
  }
  // counters: each kernel's whole grid, then range counters cut where partial needs start and end
  for (unsigned k = 0; k < g.kernels.size(); ++k) g.counters.push_back({k, 0, g.kernels[k].tasks()});
  std::vector<std::vector<unsigned>> cuts(g.kernels.size());
  for (unsigned k = 0; k < g.kernels.size(); ++k) {
    // a collective's arrivals: one counter per block, whether or not a need cuts there
    for (unsigned b = 0; g.kernels[k].rank_arrivals > 0 && b < g.kernels[k].tasks(); ++b) cuts[k].push_back(b);
  }
  for (const auto& kn : needs) {
    for (const auto& n : kn) {
      for (const Need& d : n) {
        if (d.lo == 0 && d.hi == g.kernels[d.kernel].tasks()) continue;
        cuts[d.kernel].push_back(d.lo);
        cuts[d.kernel].push_back(d.hi);
      }
    }
  }
  for (unsigned k = 0; k < g.kernels.size(); ++k) {
    if (cuts[k].empty()) continue;
    TaskKernel& tk = g.kernels[k];
    std::vector<unsigned>& b = cuts[k];
    b.push_back(0);
    b.push_back(tk.tasks());
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    tk.group_bounds = b;
    tk.first_group = static_cast<unsigned>(g.counters.size());
    for (size_t i = 0; i + 1 < b.size(); ++i) g.counters.push_back({k, b[i], b[i + 1], tk.rank_arrivals});
  }
  // each task's waits: the counters that cover its needs
  for (size_t k = 0; k < g.kernels.size(); ++k) {
    TaskKernel& tk = g.kernels[k];
    tk.task_waits.resize(tk.tasks());
    for (unsigned c = 0; c < tk.tasks(); ++c) {
      std::vector<unsigned>& w = tk.task_waits[c];
      for (const Need& d : needs[k][c]) {
        const TaskKernel& pk = g.kernels[d.kernel];
        const bool arrivals = pk.rank_arrivals > 0;  // only the per-block counters count other ranks
        if (d.lo == 0 && d.hi == pk.tasks() && !arrivals) {
          w.push_back(d.kernel);
          continue;
        }
        const long first = pk.group_counter(d.lo), last = pk.group_counter(d.hi - 1);
        if (static_cast<size_t>(last - first + 1) > kMaxRangeWaits && !arrivals) {
          w.push_back(d.kernel);
        } else {
          for (long i = first; i <= last; ++i) w.push_back(static_cast<unsigned>(i));
        }
      }
    }
  }
  return g;
}

double critical_path_us(const TaskGraph& g, int sm_count) {
  std::vector<double> finish(g.kernels.size(), 0.0);
  double longest = 0;
  for (size_t i = 0; i < g.kernels.size(); ++i) {
    const TaskKernel& k = g.kernels[i];
    double start = 0;
    for (unsigned w : k.waits) start = std::max(start, finish[w]);
    const double waves = std::ceil(static_cast<double>(k.tasks()) / std::max(sm_count, 1));
    finish[i] = start + waves * k.task_cost_us;
    longest = std::max(longest, finish[i]);
  }
  return longest;
}

}  // namespace sinter::mega
