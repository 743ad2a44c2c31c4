// ragged validate on the repository's validation/ folder: the summary is
// produced and every row that is not excluded simulates (no accuracy
// threshold here: the thresholds are the bar of docs/results/validation.md).

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "tests/common/expect_contains.hpp"
#include "validation/validation_set.hpp"

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

// The H200 measured on the first lease, fed back: the H200 row is simulated
// with it (and says so), an H100 row is not, and its prediction moves.
TEST(CliValidate, ACalibrationFileReachesTheRowsOfItsGpuClass) {
  const std::filesystem::path file =
      validation::default_validation_dir().parent_path() / "docs/results/gpu/calibration-h200.json";
  const std::string filter = "gpurecipes-maxtext-";  // one row on H200, one on H100
  CliResult measured = run_cli({"validate", "--filter", filter, "--calibration", file.string(), "--json"});
  ASSERT_EQ(measured.code, 0) << measured.err;
  CliResult defaults = run_cli({"validate", "--filter", filter, "--json"});
  ASSERT_EQ(defaults.code, 0) << defaults.err;
  const nlohmann::json m = nlohmann::json::parse(measured.out);
  const nlohmann::json d = nlohmann::json::parse(defaults.out);
  EXPECT_EQ(m.at("calibration").at("gpu"), "h200");
  EXPECT_EQ(m.at("calibration").at("rows"), 1);
  EXPECT_FALSE(d.contains("calibration"));
  ASSERT_EQ(m.at("rows").size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& row = m.at("rows")[i];
    const double with = row.at("predicted").at("tokens_per_s_per_gpu");
    const double without = d.at("rows")[i].at("predicted").at("tokens_per_s_per_gpu");
    if (row.at("gpu") == "h200") {
      EXPECT_TRUE(row.value("calibrated", false));
      EXPECT_NE(with, without);
    } else {
      EXPECT_FALSE(row.contains("calibrated")) << row.at("id");
      EXPECT_EQ(with, without) << row.at("id");
    }
  }
  CliResult text = run_cli({"validate", "--filter", "gpurecipes-maxtext-h200", "--calibration", file.string()});
  EXPECT_CONTAINS(text.out, "(1 rows on h200 simulated with it, marked *)");
  EXPECT_CONTAINS(text.out, "gpurecipes-maxtext-h200-llama3.1-70b-fsdp128-dp2-256g *");
}

// A file measured on a device no preset describes cannot say which rows it
// is for; nothing is simulated.
TEST(CliValidate, ACalibrationOfAnUnknownDeviceIsBadInput) {
  const std::filesystem::path source =
      validation::default_validation_dir().parent_path() / "docs/results/gpu/calibration-h200.json";
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(source));
  doc["device"] = "NVIDIA L40S";
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "ragged-cli-calibration-l40s.json";
  std::ofstream(file) << doc.dump();
  CliResult r = run_cli({"validate", "--filter", "gpurecipes", "--calibration", file.string()});
  std::filesystem::remove(file);
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "its device 'NVIDIA L40S' is the device of no GPU preset");
  CliResult both = run_cli({"validate", "--calibration", source.string(), "--write-residuals", "/tmp/x.tsv"});
  EXPECT_EQ(both.code, 2);
  EXPECT_CONTAINS(both.err, "drop --filter, --set and --calibration");
}

// --record-first-predictions records the default model's prediction, stamped
// with a commit: a hypothesis (--set), a calibration file or a name that is
// not a commit is refused before anything is simulated or written.
TEST(CliValidate, RecordingFirstPredictionsRefusesWhatIsNotTheDefaultModelsPrediction) {
  CliResult with_set = run_cli({"validate", "--filter", "no-such-run", "--set", "training.prefetch_depth=0",
                                "--record-first-predictions", "7334365"});
  EXPECT_EQ(with_set.code, 2);
  EXPECT_CONTAINS(with_set.err, "a first prediction is the default model's; drop --set and --calibration");
  CliResult not_a_commit = run_cli({"validate", "--filter", "no-such-run", "--record-first-predictions", "HEAD"});
  EXPECT_EQ(not_a_commit.code, 2);
  EXPECT_CONTAINS(not_a_commit.err, "7 to 40 lower-case hex digits");
}

TEST(CliValidate, AFolderWithoutRunsIsBadInput) {
  CliResult r = run_cli({"validate", "/nonexistent-ragged-folder"});
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "ragged: error: /nonexistent-ragged-folder: not a folder");
}

}  // namespace
}  // namespace ragged::cli
