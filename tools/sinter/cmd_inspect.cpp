// sinter inspect PLAN: what a bundle holds, without a GPU: target, steps with their engines and
// candidate configs, the memory plan, every kernel with its launch shape, cubin and cache key.
// With --mega (on a GPU): the megakernel segments a mega-mode runner makes of it.
#include <cstdio>

#include "commands.hpp"
#include "mega_explain.hpp"
#include "session.hpp"
#include "sinter/plan.hpp"

namespace sinter::cli {

int cmd_inspect(const Common& c, const InspectOptions& o) {
  if (o.mega) require_gpu("inspect --mega");
  const Plan plan = Plan::load(o.file);  // fully checked
  if (o.mega) return explain_mega(c, plan, {o.json, o.dot_file});
  const PlanDescription d = plan.describe();
  if (o.json) {
    std::printf("%s\n", to_json(d).c_str());
  } else {
    std::printf("plan bundle %s\n%s", o.file.c_str(), to_text(d).c_str());
  }
  return kOk;
}

}  // namespace sinter::cli
