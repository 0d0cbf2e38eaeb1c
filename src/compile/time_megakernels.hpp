// The "time megakernels" compile pass (CompileOptions::megakernels with a timing tune mode): in a
// mega-mode Runner of the plan just assembled, on random inputs, every megakernel segment is timed
// as its megakernel and as its steps launched one by one (Runner::time_mega_segments); the times,
// each the mean over the segments that share a megakernel's source (the layers between vendor
// steps), go into the plan's MegakernelRecords, and a mega-mode runner launches the steps of a
// megakernel whose steps were faster (MegaOptions::segments). A previous compile's times of the
// same source on the same GPU and libraries come from the timing cache. The inputs hold a
// constant byte pattern (valid random indices for gathers): times do not depend on the values.
// Timing is skipped, with a warning in the log and the plan left untimed, when the GPU has too
// little free memory or a launch fails; the compile itself goes on.
#pragma once

#include "compile/compile_context.hpp"
#include "plan/plan_state.hpp"
#include "sinter/compile.hpp"

namespace sinter {

// `handle` shares `state`; no runner of it may be alive but this pass's own.
void time_megakernels(Plan::State& state, const Plan& handle, CompileContext& cc, const CompileOptions& options);

}  // namespace sinter
