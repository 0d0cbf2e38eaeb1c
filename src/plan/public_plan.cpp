// sinter::Plan: the public face of plan::Plan (sinter/plan.hpp).
#include "plan/bundle.hpp"
#include "plan/plan_state.hpp"

namespace sinter {

Plan::Plan(std::shared_ptr<const State> state) : state_(std::move(state)) {}

Plan Plan::load(const std::string& path) {
  auto state = std::make_shared<State>();
  state->data = plan::load_plan_bundle(path);
  return Plan(std::move(state));
}

Plan Plan::from_bytes(std::span<const char> bytes, std::string_view source) {
  auto state = std::make_shared<State>();
  state->data = plan::load_plan_bundle(bytes, source);
  return Plan(std::move(state));
}

void Plan::save(const std::string& path) const { plan::save_plan_bundle(state_->data, path); }

std::vector<char> Plan::to_bytes() const { return plan::plan_bundle_bytes(state_->data); }

const Graph& Plan::graph() const { return state_->data.graph; }

}  // namespace sinter
