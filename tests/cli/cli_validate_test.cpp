// ragged validate on the repository's validation/ folder: the summary is
// produced and every row that is not excluded simulates (no accuracy
// threshold here: the thresholds are the bar of docs/results/validation.md).

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "tests/common/expect_contains.hpp"

namespace ragged::cli {
namespace {

using testing::CliResult;
using testing::run_binary;
using testing::run_cli;

TEST(CliValidate, EveryRowOfTheRepositorySetSimulatesAndBothSummariesArePrinted) {
  // The real binary, run from the build directory, with the default folder (the source tree's validation/).
  CliResult r = run_binary("validate --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  int simulated = 0, excluded = 0, remeasured = 0;
  for (const auto& row : j.at("rows")) {
    const std::string status = row.at("status");
    EXPECT_NE(status, "failed") << row.at("id") << ": " << row.value("failure", "");
    simulated += status == "simulated";
    excluded += status == "excluded";
    if (status == "simulated") {
      EXPECT_GT(row.at("predicted").at("tokens_per_s_per_gpu").get<double>(), 0) << row.at("id");
      EXPECT_FALSE(row.at("source").at("url").get<std::string>().empty());
    }
    // Another measurement the source published: its error against the same prediction.
    for (const auto& other : row.value("remeasured", nlohmann::json::array())) {
      ++remeasured;
      const double tokens = other.at("tokens_per_s_per_gpu");
      EXPECT_NEAR(other.at("error").get<double>(),
                  row.at("predicted").at("tokens_per_s_per_gpu").get<double>() / tokens - 1, 1e-12) << row.at("id");
      EXPECT_FALSE(other.at("source").at("url").get<std::string>().empty()) << row.at("id");
    }
  }
  EXPECT_GE(simulated, 32);
  EXPECT_GE(excluded, 1);
  EXPECT_GE(remeasured, 1);
  const auto& v = j.at("summary").at("validation");
  const auto& c = j.at("summary").at("calibration");
  EXPECT_GE(v.at("throughput_rows").get<int>(), 30);
  EXPECT_EQ(v.at("failed").get<int>(), 0);
  EXPECT_EQ(v.at("simulated").get<int>(), v.at("rows").get<int>());
  EXPECT_EQ(c.at("rows").get<int>(), 4);
  EXPECT_EQ(c.at("throughput_rows").get<int>(), 4);
  for (const char* key : {"mean_abs_error", "max_abs_error", "false_ooms", "missed_ooms", "memory_within_tolerance"}) {
    EXPECT_TRUE(v.contains(key)) << key;
    EXPECT_TRUE(c.contains(key)) << key;
  }
}

// `ragged validate --filter FILTER` succeeds and its text report holds every line of `expected`.
void expect_text_report(const std::string& filter, const std::vector<std::string>& expected) {
  CliResult r = run_cli({"validate", "--filter", filter});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& line : expected) EXPECT_CONTAINS(r.out, line);
}

TEST(CliValidate, TextReportHasTheRowsExclusionsAndSummary) {
  expect_text_report("torchtitan", {"calibration set:", "torchtitan-paper-llama3-8b-8xh100",
                                    "excluded from the summary:", "summary (error = predicted / published - 1",
                                    "agree (OOM)"});  // torchtitan's published out-of-memory runs
}

// A row whose source measured its configuration again, far from the figure
// the row takes: the text report lists the other measurement and its error.
TEST(CliValidate, RowsMeasuredAgainListTheOtherMeasurements) {
  expect_text_report("foundry-a100-80-760m-s512-8g",
                     {"measured again by their source", "foundry-a100-80-760m-s512-8g: published 29,446",
                      "also 36,719*", "1 rows measured more than once by their source"});
}

TEST(CliValidate, AFolderWithoutRunsIsBadInput) {
  CliResult r = run_cli({"validate", "/nonexistent-ragged-folder"});
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "ragged: error: /nonexistent-ragged-folder: not a folder");
}

}  // namespace
}  // namespace ragged::cli
