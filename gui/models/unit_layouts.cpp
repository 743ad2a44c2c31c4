#include "gui/models/unit_layouts.hpp"

#include "common/errors.hpp"
#include "planner/layout_strategy.hpp"
#include "planner/plan.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {

std::vector<std::string> unit_names(const models::ModelSpec& model) {
  std::vector<std::string> names;
  for (const auto& unit : model.units) names.push_back(unit.name);
  return names;
}

int most_interesting_unit(const models::ModelSpec& model) {
  int best = 0;
  for (size_t i = 0; i < model.units.size(); ++i) {
    if (model.units[i].tensors.size() > model.units[static_cast<size_t>(best)].tensors.size()) best = static_cast<int>(i);
  }
  return best;
}

std::vector<LayoutBars> unit_layouts(const planner::ResolvedScenario& resolved, int unit_index,
                                     const std::vector<scenarios::Strategy>& strategies, int max_ranks) {
  RAGGED_ASSERT(unit_index >= 0 && static_cast<size_t>(unit_index) < resolved.model.units.size(), "unit index in range");
  const models::UnitSpec& unit = resolved.model.units[static_cast<size_t>(unit_index)];
  const scenarios::Training& training = resolved.scenario().training();
  const planner::UnitProblem problem = planner::unit_problem(unit, resolved.granularity, training.shard_group_size(),
                                                             planner::plan_options_for(training));
  std::vector<std::string> names;
  for (const auto& t : unit.tensors) names.push_back(t.name);
  std::vector<LayoutBars> out;
  for (scenarios::Strategy s : strategies) {
    const planner::UnitLayout layout = planner::make_strategy(s)->plan_unit(problem);
    out.push_back(layout_bars(scenarios::strategy_name(s), problem, layout, names, max_ranks));
  }
  return out;
}

}  // namespace ragged::gui
