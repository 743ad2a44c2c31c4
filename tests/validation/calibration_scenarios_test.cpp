// The four calibration points are computed in two places: `ragged validate`
// (validation/runs.textproto: the shipped eager scenarios and two compiled
// scenario files) and the calibration report (bench/calibration_report.cpp:
// the shipped scenarios with torch.compile set on them). They must describe
// the same runs, or the two reports disagree (as they once did, +1.7% against
// +0.4%, when only the scenario files compiled the blocks alone).

#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include <map>
#include <string>

#include "scenarios/scenario_loader.hpp"
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

}  // namespace
}  // namespace ragged::validation
