// Tune's speed-ups must not move a prediction: on a small pipeline search
// (the tuner's test scenario with 2 stages, 1F1B and interleaved, tp 1 and
// 2), every candidate simulated from the Programs that evaluate() built for
// its memory floor gives the same summary, byte for byte, as a simulation
// that builds them itself (what tune did before), and the search's ranking
// is the one those summaries give.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/task_pool.hpp"
#include "planner/program_builder.hpp"
#include "planner/scenario_plan.hpp"
#include "sim/simulation_child.hpp"
#include "tests/tune/tune_test_util.hpp"
#include "tune/candidate_scenario.hpp"
#include "tune/evaluate.hpp"
#include "tune/tuner.hpp"

namespace ragged::tune {
namespace {

TuneOptions pipeline_options() {
  TuneOptions options;
  options.constraints.strategies = {scenarios::RAGGED};
  options.constraints.tps = {1, 2};
  options.constraints.pps = {2};
  options.constraints.schedules = {scenarios::ONE_F_ONE_B, scenarios::INTERLEAVED_1F1B};
  options.constraints.checkpointing = {scenarios::FULL, scenarios::SELECTIVE};
  options.constraints.global_batch_tokens = 8 * 1024;  // 8 sequences of 1,024 tokens on 8 GPUs
  return options;
}

TEST(PipelineEvaluate, PrebuiltProgramsSimulateExactlyAsRebuiltOnes) {
  const Tuner tuner(testing::small_scenario(), pipeline_options());
  const std::vector<Candidate> candidates = enumerate_candidates(tuner.base_at(8), tuner.options().constraints);
  size_t compared = 0;
  for (const Candidate& c : candidates) {
    if (c.pp < 2) continue;
    const planner::ResolvedScenario resolved = planner::resolve_scenario(tuner.scenario_of(8, c));
    const planner::ScenarioPrograms built = planner::build_scenario_programs(resolved);
    sim::SimulationOptions prebuilt;
    prebuilt.programs = &built;
    const sim::SimulationSummary before = sim::simulate_summary_in_child(resolved);
    const sim::SimulationSummary after = sim::simulate_summary_in_child(resolved, prebuilt);
    EXPECT_EQ(before.summary.SerializeAsString(), after.summary.SerializeAsString()) << describe(c, 8);
    EXPECT_EQ(before.stats.flows, after.stats.flows) << describe(c, 8);
    ++compared;
  }
  std::printf("%zu pipeline candidates of %zu simulated both ways\n", compared, candidates.size());
  EXPECT_GE(compared, 4u);
}

TEST(PipelineEvaluate, TheSearchRanksWhatTheSimulationsPredict) {
  const Tuner tuner(testing::small_scenario(), pipeline_options());
  const SearchResult r = testing::search_locally(tuner, 8);
  ASSERT_TRUE(r.any_fits());
  // The winner and the next ones, simulated afresh (Programs built by the simulation).
  for (size_t k = 0; k < std::min<size_t>(3, r.ranking.ranked.size()); ++k) {
    const size_t i = r.ranking.ranked[k];
    const sim::SimulationSummary fresh =
        sim::simulate_summary_in_child(planner::resolve_scenario(tuner.scenario_of(8, r.candidates[i])));
    EXPECT_EQ(r.evaluations[i].step_time_s, fresh.summary.step_time_s()) << describe(r.candidates[i], 8);
    EXPECT_EQ(r.evaluations[i].peak_reserved_bytes, fresh.summary.peak_reserved_bytes())
        << describe(r.candidates[i], 8);
    std::printf("#%zu %s: %.3f ms, %lld bytes\n", k + 1, describe(r.candidates[i], 8).c_str(),
                r.evaluations[i].step_time_s * 1e3, static_cast<long long>(r.evaluations[i].peak_reserved_bytes));
  }
}

}  // namespace
}  // namespace ragged::tune
