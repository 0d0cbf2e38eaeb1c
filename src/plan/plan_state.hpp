// What a public sinter::Plan holds: the plan's data, what compiling it did (for a plan compiled in
// this process), and the cubins its runners have loaded, shared by all of them.
#pragma once

#include <optional>
#include <vector>

#include "engines/library_cache.hpp"
#include "plan/plan.hpp"
#include "sinter/plan.hpp"
#include "tune/timing_cache.hpp"

namespace sinter {

struct StepTuning {
  bool from_timing_cache = false;
  std::vector<tune::CandidateTime> tried;
};

struct Plan::State {
  plan::Plan data;
  std::optional<CompileReport> compile;  // compiled plans only
  std::vector<StepTuning> tuning;        // by step; compiled plans only
  mutable LibraryCache libraries;
};

}  // namespace sinter
