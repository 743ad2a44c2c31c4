// The four calibration points are computed in two places: `ragged validate`
// (validation/runs.textproto: the shipped eager scenarios and two compiled
// scenario files) and the calibration report (bench/calibration_report.cpp:
// the shipped scenarios with torch.compile set on them). They must describe
// the same runs, or the two reports disagree (as they once did, +1.7% against
// +0.4%, when only the scenario files compiled the blocks alone).

#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/child_process.hpp"
#include "sim/compute_model.hpp"
#include "sim/simulation.hpp"
#include "validation/validation_set.hpp"

namespace ragged::validation {
namespace {

// The report's edit of a shipped scenario into its torch.compile variant.
scenarios::Scenario compiled_as_the_report_does(scenarios::Scenario s) {
  s.mutable_training()->set_compiled(true);
  s.mutable_training()->set_compile_scope(scenarios::TRANSFORMER_BLOCKS);
  return s;
}

TEST(CalibrationScenarios, EachCompiledPointIsItsShippedEagerScenarioWithTheReportsCompile) {
  const ValidationSet set = load_validation_set(std::filesystem::path(RAGGED_SOURCE_DIR) / "validation");
  std::map<std::string, std::string> eager_scenario;  // calibration run id -> shipped scenario
  std::map<std::string, std::filesystem::path> compiled_file;
  for (const validation::Run& run : set.runs) {
    if (run.set() != CALIBRATION) continue;
    if (!run.shipped_scenario().empty()) eager_scenario[run.id()] = run.shipped_scenario();
    if (!run.scenario().empty()) compiled_file[run.id()] = set.scenario_path(run);
  }
  ASSERT_EQ(eager_scenario.size(), 2u);
  ASSERT_EQ(compiled_file.size(), 2u);
  for (const auto& [id, shipped] : eager_scenario) {
    const std::string compiled_id = id + "-compile";
    ASSERT_TRUE(compiled_file.count(compiled_id)) << compiled_id << " is not a calibration run";
    scenarios::Scenario expected = compiled_as_the_report_does(scenarios::load_scenario(shipped).written);
    scenarios::Scenario actual = scenarios::load_scenario(compiled_file.at(compiled_id).string()).written;
    for (scenarios::Scenario* s : {&expected, &actual}) {
      s->clear_name();
      s->clear_description();
    }
    std::string differences;
    google::protobuf::util::MessageDifferencer differ;
    differ.ReportDifferencesToString(&differences);
    EXPECT_TRUE(differ.Compare(expected, actual)) << compiled_file.at(compiled_id) << " differs from " << shipped
                                                  << " with torch.compile:\n" << differences;
  }
}

// Hopper's sustained clock is the one constant fitted to the calibration
// points: the two-digit value that brings the 8-GPU torch.compile point
// (6,674 tokens/s per GPU, ../shared/reference/vescale.md) closest. A model
// change that moves that point by more than half a step of the clock fails
// here until sim/gpu_tables.cpp is refitted (docs/results/calibration.md).
TEST(CalibrationScenarios, HoppersSustainedClockIsTheClosestTwoDigitFit) {
  constexpr double kPublished = 6674;
  const std::filesystem::path file =
      std::filesystem::path(RAGGED_SOURCE_DIR) / "validation/scenarios/torchtitan-paper-llama3-8b-8xh100-compile.textproto";
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::load_scenario(file.string()));
  // One simulation a child process: SimGrid runs once in a process.
  const auto error_at = [&](double clock) {
    const std::string tokens = sim::run_in_child([&] {
      sim::SimulationOptions options;
      options.sustained_clock = clock;
      return std::to_string(sim::simulate(resolved, options).trace.summary().tokens_per_s_per_gpu());
    });
    return std::stod(tokens) / kPublished - 1;
  };
  const double clock = sim::hopper_sustained_clock();
  const double at = error_at(clock), below = error_at(clock - 0.01), above = error_at(clock + 0.01);
  std::printf("8-GPU compiled calibration point: %+.2f%% at %.2f, %+.2f%% at %.2f, %+.2f%% at %.2f\n", 100 * below,
              clock - 0.01, 100 * at, clock, 100 * above, clock + 0.01);
  EXPECT_LT(below, at);  // a faster clock, a faster step: the fit brackets the point
  EXPECT_LT(at, above);
  EXPECT_LE(std::fabs(at), std::fabs(below));
  EXPECT_LE(std::fabs(at), std::fabs(above));
}

}  // namespace
}  // namespace ragged::validation
