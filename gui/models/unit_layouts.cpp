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
  const planner::PlanOptions options = planner::plan_options_for(training);
  std::vector<std::string> names;
  for (const auto& t : unit.tensors) names.push_back(t.name);
  std::vector<LayoutBars> out;
  for (scenarios::Strategy s : strategies) {
    // Planned as planner::plan_scenario plans it (a routed experts' unit over its own ranks), so that the
    // unit's padding and the model's are the plan's own figures.
    const auto strategy = planner::make_strategy(s);
    const planner::Plan unit_plan = planner::plan_model(resolved.model, resolved.granularity, training.shard_group_size(),
                                                        *strategy, options, {unit_index});
    const planner::Plan model_plan =
        planner::plan_model(resolved.model, resolved.granularity, training.shard_group_size(), *strategy, options);
    const planner::UnitPlan& planned = unit_plan.units.front();
    LayoutBars bars = layout_bars(scenarios::strategy_name(s), planned.problem, planned.layout, names, max_ranks);
    bars.padding_ratio = unit_plan.padding_ratio();
    bars.model_padding_ratio = model_plan.padding_ratio();
    out.push_back(std::move(bars));
  }
  return out;
}

}  // namespace ragged::gui
