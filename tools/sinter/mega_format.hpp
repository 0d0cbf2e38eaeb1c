// The megakernel as the commands show it: a mega-mode runner's segments (MegaDescription) as
// text, JSON and Graphviz DOT, and a trace's per-step summary (MegaSegmentTime) as text and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinter/mega_trace.hpp"
#include "sinter/runner.hpp"

namespace sinter::cli {

// One line: "2 segments: 14 steps as 3456 tasks on 264 CTAs; 1 step outside".
std::string mega_overview(const MegaDescription& d);
// Per segment its steps, totals and task kernels; then the steps outside with their reasons.
std::string mega_text(const MegaDescription& d);
nlohmann::ordered_json mega_json(const MegaDescription& d);
// A digraph with a cluster per segment: a node per task kernel (step, kernel, tasks), an edge
// from each producer to each task kernel that waits for it.
std::string mega_dot(const MegaDescription& d, const std::string& title);

// Per segment its span and busy share, then per step: tasks, busy, waited, busy share.
std::string mega_trace_summary_text(const std::vector<MegaSegmentTime>& segments);
nlohmann::ordered_json mega_trace_summary_json(const std::vector<MegaSegmentTime>& segments);

}  // namespace sinter::cli
