// sinter inspect PLAN: what a bundle holds, without a GPU: target, steps with their engines and
// candidate configs, the memory plan, every kernel with its launch shape, cubin and cache key.
#include <cstdio>

#include "commands.hpp"
#include "sinter/plan.hpp"

namespace sinter::cli {

int cmd_inspect(const Common&, const InspectOptions& o) {
  const Plan plan = Plan::load(o.file);  // fully checked
  const PlanDescription d = plan.describe();
  if (o.json) {
    std::printf("%s\n", to_json(d).c_str());
  } else {
    std::printf("plan bundle %s\n%s", o.file.c_str(), to_text(d).c_str());
  }
  return kOk;
}

}  // namespace sinter::cli
