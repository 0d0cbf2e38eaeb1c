// `explain --mega` and `inspect --mega`: what a mega-mode runner of a plan makes of it (its
// megakernel segments, task kernels and the steps outside), printed as text or JSON, and
// optionally written as a Graphviz DOT file.
#pragma once

#include <string>

#include "commands.hpp"
#include "sinter/plan.hpp"

namespace sinter::cli {

struct MegaExplainOptions {
  bool json = false;
  std::string dot_file;  // "" none
};

// Builds a mega-mode runner of `plan` (which compiles or loads its megakernels: needs a GPU).
int explain_mega(const Common& c, const Plan& plan, const MegaExplainOptions& o);

}  // namespace sinter::cli
