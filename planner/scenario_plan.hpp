#pragma once
// The plan a resolved scenario asks for: its strategy over its shard group,
// with the alignment of its parameter dtype. What plan, simulate and the
// dashboard start from.

#include <vector>

#include "planner/pipeline_schedule.hpp"
#include "planner/pipeline_stages.hpp"
#include "planner/plan.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::planner {

// The options the scenario's training settings imply (the gathered dtype).
PlanOptions plan_options_for(const scenarios::Training& training);

Plan plan_scenario(const ResolvedScenario& resolved);

// A pipeline's stages (training.mesh.pp > 1): which units each runs, the
// schedule, and each stage's plan (its units alone over the shard group).
struct PipelinePlan {
  PipelineStages stages;
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
  std::vector<Plan> plans;  // per stage
};

PipelineScheduleKind pipeline_schedule_of(const scenarios::Training& training);
PipelinePlan plan_pipeline(const ResolvedScenario& resolved);

}  // namespace ragged::planner
