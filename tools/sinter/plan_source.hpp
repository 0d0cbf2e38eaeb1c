// Where the plan-level commands (build, run, inspect, bench) get a plan: a bundle file, loaded
// (no compilation), or a graph file, built on GPU 0 through the disk KernelCache and the tuner.
#pragma once

#include <string>

#include "plan/plan.hpp"

namespace sinter::cli {

struct BuildChoices {
  std::string tune = "heuristic";  // heuristic | fast | exhaustive
  std::string engine = "auto";     // auto | jit | cublaslt
  bool no_fusion = false;
};

struct PlanSource {
  plan::Plan plan;
  bool from_bundle = false;
  double load_ms = 0;   // reading and checking the bundle, or building the plan
  std::string report;   // lines saying how it was built: kernel cache, tuning (empty for a bundle)
};

// True when the file is a regular file that starts with the bundle magic "SINTERPL" (a pipe is
// never sniffed: it is read as a graph).
bool is_plan_bundle_file(const std::string& path);
PlanSource build_plan_for_graph(const Graph& g, const BuildChoices& choices);
PlanSource plan_from_file(const std::string& path, const BuildChoices& choices);

}  // namespace sinter::cli
