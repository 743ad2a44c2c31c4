// ragged simulate --goodput: the report, its JSON, the overrides and their
// errors (the model itself: tests/planner/goodput_test.cpp).

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "common/file_io.hpp"

namespace ragged::cli {
namespace {

using testing::CliResult;
using testing::expect_one_line_error;
using testing::run_cli;

nlohmann::json goodput_json(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"simulate", "tiny-llama-4xcpu", "--goodput", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult result = run_cli(args);
  EXPECT_EQ(result.code, 0) << result.err;
  return nlohmann::json::parse(result.out);
}

TEST(CliGoodput, ReportNamesEveryFigure) {
  const CliResult result = run_cli({"simulate", "llama3-405b-16384xh100", "--goodput"});
  ASSERT_EQ(result.code, 0) << result.err;
  for (const char* needle : {"step time", "goodput under interruptions", "of the wall time trains", "the job's MTBF",
                             "checkpoint ", "per GPU), written in", "storage cap binds", "synchronous: training pauses",
                             "Daly's optimum", "relaunch", "checkpoint load", "tokens/s per GPU", "effective",
                             "days for 15.60T tokens"}) {
    EXPECT_NE(result.out.find(needle), std::string::npos) << needle << "\n" << result.out;
  }
  EXPECT_EQ(result.out.find("warning"), std::string::npos) << result.out;
}

// The JSON figures hang together: MTBF from the rate, effective tokens from
// the goodput, the interval in whole steps.
TEST(CliGoodput, JsonIsConsistentWithTheSimulation) {
  const nlohmann::json run = goodput_json({"--interruptions-per-gpu-hour", "0.01"});
  const nlohmann::json& g = run["goodput"];
  EXPECT_DOUBLE_EQ(g["job_mtbf_s"].get<double>(), 3600 / (0.01 * 4));
  EXPECT_NEAR(g["effective_tokens_per_s_per_gpu"].get<double>(),
              g["goodput"].get<double>() * run["tokens_per_s_per_gpu"].get<double>(), 1e-9);
  EXPECT_NEAR(g["interval_s"].get<double>(), g["interval_steps"].get<double>() * run["step_time_s"].get<double>(), 1e-9);
  EXPECT_GT(g["goodput"].get<double>(), 0);
  EXPECT_LT(g["goodput"].get<double>(), 1);
  EXPECT_TRUE(g["days_to_train"].is_null()) << "not asked";
}

TEST(CliGoodput, OverridesReachTheModel) {
  const nlohmann::json none = goodput_json({"--interruptions-per-gpu-hour", "0"})["goodput"];
  EXPECT_DOUBLE_EQ(none["goodput"].get<double>(), 1.0);
  EXPECT_TRUE(none["job_mtbf_s"].is_null());
  EXPECT_EQ(none["interval_steps"].get<int>(), 0);

  const double sync = goodput_json({})["goodput"]["checkpoint_pause_s"].get<double>();
  const nlohmann::json async = goodput_json({"--async-checkpoint"})["goodput"];
  EXPECT_TRUE(async["async_checkpoint"].get<bool>());
  EXPECT_LT(async["checkpoint_pause_s"].get<double>(), sync);

  const nlohmann::json slow = goodput_json({"--storage-gbytes-per-s-per-node", "0.001", "--storage-aggregate-tbytes-per-s",
                                            "1000", "--restart-minutes", "1", "--train-tokens", "1e9"})["goodput"];
  EXPECT_FALSE(slow["storage_aggregate_bound"].get<bool>());
  EXPECT_NEAR(slow["restart_s"].get<double>(), 60 + slow["checkpoint_load_s"].get<double>(), 1e-9);
  EXPECT_GT(slow["days_to_train"].get<double>(), 0);
}

TEST(CliGoodput, AnOverrideImpliesGoodput) {
  const CliResult result = run_cli({"simulate", "tiny-llama-4xcpu", "--train-tokens", "1e9"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("goodput under interruptions"), std::string::npos) << result.out;
}

TEST(CliGoodput, WithoutInterruptionsNothingIsCheckpointed) {
  const CliResult result = run_cli({"simulate", "tiny-llama-4xcpu", "--interruptions-per-gpu-hour", "0"});
  ASSERT_EQ(result.code, 0) << result.err;
  for (const char* needle : {"100.0% of the wall time trains", "none expected", "no checkpoint needed"}) {
    EXPECT_NE(result.out.find(needle), std::string::npos) << needle << "\n" << result.out;
  }
  EXPECT_EQ(result.out.find("per interruption"), std::string::npos) << result.out;
}

TEST(CliGoodput, BadValuesAreOneLineErrors) {
  expect_one_line_error(run_cli({"simulate", "tiny-llama-4xcpu", "--restart-minutes", "-1"}), "--restart-minutes");
  expect_one_line_error(run_cli({"simulate", "tiny-llama-4xcpu", "--interruptions-per-gpu-hour", "nan"}),
                        "--interruptions-per-gpu-hour");
  expect_one_line_error(run_cli({"simulate", "tiny-llama-4xcpu", "--storage-aggregate-tbytes-per-s", "0"}),
                        "--storage-aggregate-tbytes-per-s");
}

TEST(CliGoodput, ScenarioFieldsOutsideTheirRangeAreLocated) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ragged_goodput_" + std::to_string(::getpid()) + ".textproto");
  write_file_atomically(path, "model { catalog: \"llama3-8b\" }\n"
                              "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n"
                              "goodput { restart_minutes: -5 }\n");
  expect_one_line_error(run_cli({"simulate", path.string(), "--goodput"}), ":3:");
  expect_one_line_error(run_cli({"simulate", path.string(), "--goodput"}), "goodput.restart_minutes: restart_minutes is -5");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ragged::cli
