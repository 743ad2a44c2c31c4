#include "planner/checkpointing_plan.hpp"

#include <algorithm>

namespace ragged::planner {

models::Checkpointing checkpointing_mode(scenarios::Checkpointing mode) {
  switch (mode) {
    case scenarios::FULL: return models::Checkpointing::kFull;
    case scenarios::SELECTIVE: return models::Checkpointing::kSelective;
    default: return models::Checkpointing::kNone;
  }
}

std::vector<models::Checkpointing> unit_checkpointing(const models::ModelSpec& model, const Plan& plan,
                                                      const scenarios::Training& training) {
  const models::Checkpointing mode = checkpointing_mode(training.activation_checkpointing());
  const int every = std::max(1, training.checkpoint_every());
  std::vector<models::Checkpointing> out(plan.units.size(), mode);
  if (mode != models::Checkpointing::kFull || every <= 1) return out;
  int blocks = 0;  // counted from 1, as the wrapper counts them
  for (size_t u = 0; u < plan.units.size(); ++u) {
    const models::UnitKind kind = model.units[plan.units[u].unit_index].kind;
    // A block's routed experts (a unit of their own under expert parallelism) are in its checkpointed region.
    if (kind == models::UnitKind::kExperts && u > 0) out[u] = out[u - 1];
    if (kind != models::UnitKind::kBlock) continue;
    if (++blocks % every != 0) out[u] = models::Checkpointing::kNone;
  }
  return out;
}

}  // namespace ragged::planner
