#include "gui/models/plan_summary.hpp"

#include <fmt/format.h>

#include "common/units.hpp"
#include "planner/program_builder.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {

PlanSummary summarize_plan(const planner::ResolvedScenario& resolved) {
  const scenarios::Scenario& scenario = resolved.scenario();
  const planner::Plan plan = planner::plan_scenario(resolved);
  const planner::Program program = planner::build_program(planner::program_inputs(resolved, plan));
  PlanSummary s;
  s.strategy = plan.strategy;
  s.model = resolved.model.name;
  s.gpus = scenarios::total_gpus(scenario);
  s.shard_ranks = plan.ranks;
  s.params = plan.params();
  s.padded_params = plan.padded_params();
  s.padding_ratio = plan.padding_ratio();
  s.lower_bound_padding_ratio = plan.lower_bound_padding_ratio();
  s.max_shard_elements = plan.max_shard_size();
  for (const planner::UnitPlan& unit : plan.units) {
    const planner::CopyElements& c = unit.layout.copies;
    s.copy_elements_per_step += c.all_gather_in + c.all_gather_out + c.reduce_scatter_in + c.reduce_scatter_out;
  }
  s.memory = planner::memory_breakdown(program);
  s.hbm_bytes = scenarios::hbm_capacity_bytes(scenario.cluster().gpu());
  s.allocator_bytes = scenarios::allocator_capacity_bytes(scenario);
  s.plan_seconds = plan.plan_seconds;
  return s;
}

std::string padding_percent(double ratio) { return fmt::format("{:.3f}%", 100 * ratio); }

std::string plan_summary_line(const PlanSummary& s) {
  return fmt::format("{} on {} GPUs (shard group {}), {}: padding {} of the parameters (bound {}), S {}, copies {}/step, "
                     "static memory {} of the allocator's {} (HBM {}){}",
                     s.model, s.gpus, s.shard_ranks, s.strategy, padding_percent(s.padding_ratio),
                     padding_percent(s.lower_bound_padding_ratio),
                     format_count(static_cast<double>(s.max_shard_elements)),
                     format_count(static_cast<double>(s.copy_elements_per_step)),
                     format_bytes(static_cast<double>(s.memory.peak_total())),
                     format_bytes(static_cast<double>(s.allocator_bytes)), format_bytes(static_cast<double>(s.hbm_bytes)),
                     s.fits() ? "" : " (does not fit)");
}

}  // namespace ragged::gui
