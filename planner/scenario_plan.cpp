#include "planner/scenario_plan.hpp"

#include <algorithm>

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

PipelineScheduleKind pipeline_schedule_of(const scenarios::Training& training) {
  switch (training.pipeline().schedule()) {
    case scenarios::GPIPE: return PipelineScheduleKind::kGpipe;
    case scenarios::INTERLEAVED_1F1B: return PipelineScheduleKind::kInterleaved1F1B;
    case scenarios::ZERO_BUBBLE_H1: return PipelineScheduleKind::kZeroBubbleH1;
    default: return PipelineScheduleKind::kOneFOneB;
  }
}

PipelinePlan plan_pipeline(const ResolvedScenario& resolved) {
  const scenarios::Training& training = resolved.scenario().training();
  const scenarios::Pipeline& pipeline = training.pipeline();
  PipelinePlan out;
  out.schedule = pipeline_schedule_of(training);
  out.stages = plan_pipeline_stages(resolved.model, std::max(1, training.mesh().pp()),
                                    std::max(1, pipeline.virtual_stages()),
                                    {pipeline.layers_per_stage().begin(), pipeline.layers_per_stage().end()},
                                    training.sequence_length());
  auto strategy = make_strategy(training.strategy());
  for (int64_t s = 0; s < out.stages.stages; ++s) {
    out.plans.push_back(plan_model(resolved.model, resolved.granularity, training.shard_group_size(), *strategy,
                                   plan_options_for(training), out.stages.units_of(s)));
  }
  return out;
}

}  // namespace ragged::planner
