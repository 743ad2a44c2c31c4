// The bound tune skips candidates by (sim::step_time_lower_bound) must never
// exceed the step the simulation predicts: checked on every candidate of a
// small search that the planner does not prune (the tuner's test scenario
// with FSDP alone, tp 2, and 2 and 4 pipeline stages under each schedule;
// full, selective and no checkpointing), with the tightness printed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/task_pool.hpp"
#include "planner/program_builder.hpp"
#include "planner/scenario_plan.hpp"
#include "sim/simulation_child.hpp"
#include "sim/step_time_bound.hpp"
#include "tests/tune/tune_test_util.hpp"
#include "tune/candidate_scenario.hpp"
#include "tune/evaluate.hpp"
#include "tune/tuner.hpp"

namespace ragged::tune {
namespace {

TuneOptions small_mesh_search() {
  TuneOptions options;
  options.constraints.strategies = {scenarios::RAGGED, scenarios::FSDP2};
  options.constraints.tps = {1, 2};
  options.constraints.pps = {1, 2, 4};
  options.constraints.schedules = {scenarios::GPIPE, scenarios::ONE_F_ONE_B, scenarios::INTERLEAVED_1F1B,
                                   scenarios::ZERO_BUBBLE_H1};
  options.constraints.prefetch_depths = {1};
  options.constraints.global_batch_tokens = 8 * 1024;  // 8 sequences of 1,024 tokens on 8 GPUs
  return options;
}

// {"bound": s, "step": s} for a candidate the planner does not prune, else {}.
std::string bound_and_step(const Tuner& tuner, const Candidate& c) {
  try {
    const scenarios::LoadedScenario scenario = tuner.scenario_of(8, c);
    if (plan_and_prune(scenario, tuner.options().constraints.headroom).outcome == Outcome::kPruned) return "{}";
    const planner::ResolvedScenario resolved = planner::resolve_scenario(scenario);
    const planner::ScenarioPrograms built = planner::build_scenario_programs(resolved);
    sim::SimulationOptions options;
    options.programs = &built;
    const double bound = sim::step_time_lower_bound(resolved, built);
    const double step = sim::simulate_summary_in_child(resolved, options).summary.step_time_s();
    return nlohmann::json{{"bound", bound}, {"step", step}}.dump();
  } catch (const InputError&) {
    return "{}";  // a combination the scenario rejects
  }
}

TEST(StepTimeBound, NeverExceedsTheSimulatedStep) {
  const Tuner tuner(testing::small_scenario(), small_mesh_search());
  const std::vector<Candidate> candidates = enumerate_candidates(tuner.base_at(8), tuner.options().constraints);
  std::vector<std::string> tasks;
  for (size_t i = 0; i < candidates.size(); ++i) tasks.push_back(std::to_string(i));
  LocalTaskPool pool([&](const std::string& task) { return bound_and_step(tuner, candidates[std::stoul(task)]); },
                     hardware_threads());
  const auto results = pool.map(tasks);
  size_t checked = 0, pipelined = 0;
  double sum = 0, lowest = 1, highest = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const nlohmann::json j = nlohmann::json::parse(*results[i]);
    if (j.empty()) continue;
    const double bound = j.at("bound"), step = j.at("step");
    EXPECT_GT(bound, 0) << describe(candidates[i], 8);
    EXPECT_LE(bound, step) << describe(candidates[i], 8)
                           << fmt::format(" {:.17g} {:.17g} {:.3g}", bound, step, (bound - step) / step);
    const double ratio = bound / step;
    sum += ratio;
    lowest = std::min(lowest, ratio);
    highest = std::max(highest, ratio);
    ++checked;
    pipelined += candidates[i].pp > 1 ? 1 : 0;
  }
  std::printf(
      "%zu of %zu candidates simulated (%zu with pipeline stages): bound / simulated step mean %.3f, "
      "min %.3f, max %.6f\n",
      checked, candidates.size(), pipelined, sum / static_cast<double>(checked), lowest, highest);
  EXPECT_GE(pipelined, 20u);
  EXPECT_GE(checked - pipelined, 10u);
}

}  // namespace
}  // namespace ragged::tune
