#include "tune/candidate_goodput.hpp"

#include "common/errors.hpp"

namespace ragged::tune {

planner::GoodputEstimate candidate_goodput(const scenarios::Scenario& scenario, const Evaluation& evaluation) {
  RAGGED_ASSERT(evaluation.outcome == Outcome::kSimulated, "goodput needs a simulated step");
  return planner::estimate_goodput(scenario, evaluation.checkpoint_bytes_per_gpu, evaluation.step_time_s,
                                   evaluation.tokens_per_s_per_gpu);
}

}  // namespace ragged::tune
