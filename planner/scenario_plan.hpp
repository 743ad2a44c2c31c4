#pragma once
// The plan a resolved scenario asks for: its strategy over its shard group,
// with the alignment of its parameter dtype. What plan, simulate and the
// dashboard start from.

#include "planner/plan.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::planner {

// The options the scenario's training settings imply (the gathered dtype).
PlanOptions plan_options_for(const scenarios::Training& training);

Plan plan_scenario(const ResolvedScenario& resolved);

}  // namespace ragged::planner
