#include "planner/scenario_plan.hpp"

namespace ragged::planner {

PlanOptions plan_options_for(const scenarios::Training& training) {
  PlanOptions options;
  options.param_dtype = training.precision().param() == scenarios::FP32 ? models::DType::kF32 : models::DType::kBF16;
  return options;
}

Plan plan_scenario(const ResolvedScenario& resolved) {
  const scenarios::Training& training = resolved.scenario().training();
  auto strategy = make_strategy(training.strategy());
  return plan_model(resolved.model, resolved.granularity, training.shard_group_size(), *strategy,
                    plan_options_for(training));
}

}  // namespace ragged::planner
