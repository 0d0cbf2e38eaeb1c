// A set of plan steps (by index) as bits: ancestors in a step DAG, the steps that touch a buffer.
// Used by the arena plan (memory_plan.cpp) and graph mode's branches (exec/graph_branches.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sinter::plan {

struct StepSet {
  std::vector<uint64_t> words;
  explicit StepSet(size_t steps = 0) : words((steps + 63) / 64, 0) {}
  bool has(int i) const { return (words[static_cast<size_t>(i) / 64] >> (i % 64)) & 1u; }
  void add(int i) { words[static_cast<size_t>(i) / 64] |= uint64_t{1} << (i % 64); }
  void add_all(const StepSet& o) {
    for (size_t w = 0; w < words.size(); ++w) words[w] |= o.words[w];
  }
  // Every step of this set is in `o`.
  bool within(const StepSet& o) const {
    for (size_t w = 0; w < words.size(); ++w) {
      if (words[w] & ~o.words[w]) return false;
    }
    return true;
  }
};

}  // namespace sinter::plan
