// A mega-mode runner's trace (Runner::mega_trace, MegaOptions::trace) made readable: a
// Chrome / Perfetto trace file (chrome://tracing, ui.perfetto.dev) with one row per CTA of each
// megakernel, and a per-step summary of where the CTAs' time went. Both read host data only.
//
//   sinter::RunnerOptions o{sinter::ExecMode::mega};
//   o.mega.trace = true;
//   sinter::Runner runner(plan, o);
//   ... bind, enqueue, synchronize, runner.check() ...
//   std::string json = sinter::mega_trace_json(runner.mega_description(), runner.mega_trace());
#pragma once

#include <string>
#include <vector>

#include "sinter/runner.hpp"

namespace sinter {

// The trace as one Chrome trace-event JSON object: {"traceEvents": [...], "displayTimeUnit": "ns"}.
// Each task is an "X" (complete) event named "step S kernel K", pid = its segment, tid = the CTA
// that ran it, ts and dur in microseconds from the earliest task start in `events`, and args
// {step, kernel, block, cta, sm, waited_ns}. Metadata events name each segment ("segment N: steps
// A-B") and each CTA ("CTA C on SM S"). Events that never ran (no start or an end before the
// start) are left out. Error(invalid_argument) when an event names a segment that `d` lacks.
std::string mega_trace_json(const MegaDescription& d, const std::vector<MegaTaskEvent>& events);

// One plan step of a segment over a trace.
struct MegaStepTime {
  int step = 0;
  int tasks = 0;             // tasks of the step in the trace
  double busy_us = 0;        // the sum of its tasks' run times (end - start)
  double waited_us = 0;      // the sum of its tasks' waits for their producers
  double busy_percent = 0;   // busy_us as a share of the segment's span times its CTAs
  // Its window: the first of its tasks' starts and the last of their ends, from the segment's
  // earliest task start (0 and 0 when none ran).
  double first_start_us = 0, last_end_us = 0;
};

// One segment over a trace.
struct MegaSegmentTime {
  int segment = 0;
  int ctas = 0;              // MegaSegmentDescription::ctas
  int tasks = 0;
  double span_us = 0;        // the earliest task start to the latest task end
  double busy_us = 0, waited_us = 0, busy_percent = 0;  // over all its steps
  std::vector<MegaStepTime> steps;  // the steps with task kernels, in plan order
};

// Per segment of `d` (in order), per step: tasks, busy and waited time, and busy share. Events
// left out of mega_trace_json are left out here too. Error(invalid_argument) when an event names
// a segment that `d` lacks or a step outside its segment.
std::vector<MegaSegmentTime> summarize_mega_trace(const MegaDescription& d, const std::vector<MegaTaskEvent>& events);

}  // namespace sinter
