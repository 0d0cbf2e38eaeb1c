// Building a Plan from what a StreamExecutor prepared (DESIGN.md key idea 5): for each step, the
// engine and candidate it runs; jit steps as kernel records (launch shape, argument bytes with
// pointer slots, cubin), cuBLASLt steps as their algo config; the arena and workspace layout.
// It lives in exec/ because it reads an executor; plan/ knows nothing of executors.
#pragma once

#include "exec/stream_executor.hpp"
#include "plan/plan.hpp"

namespace sinter {

// `producer` is informational ("sinter 0.1.0"). Throws Error(unsupported) naming the step when a
// prepared step comes from an engine that plans cannot store.
plan::Plan build_plan(const StreamExecutor& executor, const std::string& producer);

}  // namespace sinter
