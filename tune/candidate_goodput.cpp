#include "tune/candidate_goodput.hpp"

#include "common/errors.hpp"

namespace ragged::tune {

planner::GoodputEstimate candidate_goodput(const scenarios::Scenario& scenario, const Evaluation& evaluation) {
  RAGGED_ASSERT(evaluation.outcome == Outcome::kSimulated, "goodput needs a simulated step");
  planner::GoodputInputs inputs;
  inputs.cluster = planner::cluster_shape(scenario);
  inputs.checkpoint_bytes_per_gpu = evaluation.checkpoint_bytes_per_gpu;
  inputs.step_time_s = evaluation.step_time_s;
  inputs.tokens_per_s_per_gpu = evaluation.tokens_per_s_per_gpu;
  inputs.settings = planner::goodput_settings(scenario.goodput());
  return planner::estimate_goodput(inputs);
}

}  // namespace ragged::tune
